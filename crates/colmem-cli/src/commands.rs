//! Each command: parse its arguments into the facade's types, call the facade,
//! print the result. No memory logic lives here.

use std::io::{BufRead, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use colmem::{
    AgentId, AuditEntry, AuditEvent, AuditStatus, CONFIG_FILE, Config, Digest, Edge, Explanation,
    Forget, Fragment, FragmentId, Granted, GroupId, GroupKind, Member, Memory, Origin, Principal,
    PrivateFile, PurgeTarget, Recall, RecallOptions, Recalled, ResourceId, Scope, TaskContext,
    Timestamp, Trajectory, TurnInput, UserId, View, locomo,
};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::exit::{self, invalid, unavailable};
use crate::output::{self, Shown};
use crate::table::Table;
use crate::{
    AuditCommand, CardsCommand, Cli, Command, GrantCommand, GroupKindArg, ImportCommand,
    MemberEdge, Party, PrincipalCommand, PrincipalKind, RevokeCommand, ViewArgs,
};

/// `println!` through [`output::text`]: unsafe characters shown escaped; a closed
/// pipe ends the command, quietly.
macro_rules! say {
    ($($arg:tt)*) => {
        output::text(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

/// `print!` through [`output::text`].
macro_rules! say_raw {
    ($($arg:tt)*) => {
        output::text(format_args!($($arg)*))?
    };
}

/// `eprintln!` through [`output::note`]: unsafe characters shown escaped.
macro_rules! note {
    ($($arg:tt)*) => {
        output::note(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// The configuration file `init` writes: every section, commented out, at its default.
const DEFAULT_CONFIG: &str = include_str!("default-config.toml");

/// Runs one parsed command line.
pub fn dispatch(cli: Cli) -> Result<ExitCode> {
    match &cli.command {
        Command::Init => init(&cli),
        Command::Principal(PrincipalCommand::Add {
            kind,
            name,
            group_kind,
        }) => principal_add(&cli, *kind, name, *group_kind),
        Command::Grant(grant) => grant_edge(&cli, grant),
        Command::Revoke(revoke) => revoke_edge(&cli, revoke),
        Command::Remember(args) => remember(&cli, args),
        Command::Recall(args) => recall(&cli, args),
        Command::Answer(args) => answer(&cli, args),
        Command::History(args) => history(&cli, args),
        Command::Cards(CardsCommand::Compose(args)) => compose_cards(&cli, args),
        Command::Cards(CardsCommand::Learn(args)) => learn_cards(&cli, args),
        Command::Audit(audit) => audit_command(&cli, audit),
        Command::Import(ImportCommand::Locomo {
            path,
            agent,
            limit,
            grant,
        }) => import_locomo(&cli, path, agent, *limit, *grant),
        Command::Reindex => reindex(&cli),
        Command::Forget(args) => forget(&cli, args),
        Command::Retention(args) => retention(&cli, &args.party, args.json),
        Command::Explain(args) => explain(&cli, args),
        Command::Purge(args) => purge(&cli, args),
        Command::Export(args) => export(&cli, args.output.as_deref(), args.vectors),
        Command::Backup(args) => backup(&cli, &args.dest),
    }
}

fn config(cli: &Cli) -> Result<Config> {
    Ok(match &cli.config {
        Some(path) => Config::load_with_env(path, true)?,
        None => Config::load_with_env(&cli.dir.join(CONFIG_FILE), false)?,
    })
}

/// Opens the data directory for writing; it must have been initialised.
fn open(cli: &Cli) -> Result<Memory> {
    if !Memory::exists(&cli.dir) {
        return Err(colmem::Error::NotInitialised {
            dir: cli.dir.clone(),
        }
        .into());
    }
    Ok(noted(Memory::open(&cli.dir, config(cli)?)?))
}

/// Opens the data directory for recalling beside other recalls (the audit of each
/// read is written to the store; the index snapshot is left to writers).
fn open_shared(cli: &Cli) -> Result<Memory> {
    Ok(noted(Memory::open_shared(&cli.dir, config(cli)?)?))
}

/// Opens the data directory for reading, beside any writer.
fn open_read_only(cli: &Cli) -> Result<Memory> {
    Ok(noted(Memory::open_read_only(&cli.dir, config(cli)?)?))
}

/// Says on standard error what opening made private (a directory an older colmem
/// left open to others).
fn noted(memory: Memory) -> Memory {
    let tightened = memory.tightened();
    if !tightened.is_empty() {
        const SHOWN: usize = 5;
        let mut names: Vec<String> = tightened
            .iter()
            .take(SHOWN)
            .map(|p| p.display().to_string())
            .collect();
        if tightened.len() > SHOWN {
            names.push(format!("and {} more", tightened.len() - SHOWN));
        }
        note!(
            "note: made {} path(s) others could read private to their owner (files 0600, directories 0700): {}",
            tightened.len(),
            names.join(", ")
        );
    }
    memory
}

fn user(name: &str) -> Result<UserId> {
    Ok(UserId::new(name).map_err(colmem::Error::from)?)
}

fn agent(name: &str) -> Result<AgentId> {
    Ok(AgentId::new(name).map_err(colmem::Error::from)?)
}

fn resource(name: &str) -> Result<ResourceId> {
    Ok(ResourceId::new(name).map_err(colmem::Error::from)?)
}

fn group(name: &str) -> Result<GroupId> {
    Ok(GroupId::new(name).map_err(colmem::Error::from)?)
}

fn time(text: &str) -> Result<Timestamp> {
    Ok(Timestamp::parse(text).map_err(colmem::Error::from)?)
}

fn optional_time(text: Option<&String>) -> Result<Option<Timestamp>> {
    text.map(|t| time(t)).transpose()
}

fn fragment_id(text: &str) -> Result<FragmentId> {
    Ok(text.parse::<FragmentId>().map_err(colmem::Error::from)?)
}

fn session<'m>(memory: &'m Memory, party: &Party) -> Result<colmem::Session<'m>> {
    Ok(memory.session(user(&party.user)?, agent(&party.agent)?)?)
}

fn print_json(value: &serde_json::Value) -> Result<()> {
    output::json(value)
}

fn init(cli: &Cli) -> Result<ExitCode> {
    let existed = Memory::exists(&cli.dir);
    let memory = noted(Memory::open(&cli.dir, config(cli)?)?);
    memory.flush()?;
    let config_path = cli.dir.join(CONFIG_FILE);
    if !config_path.exists() {
        let file = PrivateFile::new(&config_path)?;
        file.create()?
            .write_all(DEFAULT_CONFIG.as_bytes())
            .map_err(|e| unavailable(format!("cannot write {}: {e}", config_path.display())))?;
        file.publish()?;
    }
    if existed {
        say!("{} is already a colmem data directory", cli.dir.display());
    } else {
        say!(
            "initialised {} (store {}, configuration {})",
            cli.dir.display(),
            cli.dir.join(colmem::STORE_FILE).display(),
            config_path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn principal_add(
    cli: &Cli,
    kind: PrincipalKind,
    name: &str,
    group_kind: Option<GroupKindArg>,
) -> Result<ExitCode> {
    if group_kind.is_some() && !matches!(kind, PrincipalKind::Group) {
        return Err(invalid("--group-kind is for groups only"));
    }
    let principal = match kind {
        PrincipalKind::User => Principal::User(user(name)?),
        PrincipalKind::Agent => Principal::Agent(agent(name)?),
        PrincipalKind::Resource => Principal::Resource(resource(name)?),
        PrincipalKind::Group => Principal::Group(
            group(name)?,
            match group_kind.unwrap_or(GroupKindArg::Crew) {
                GroupKindArg::Crew => GroupKind::Crew,
                GroupKindArg::Team => GroupKind::Team,
                GroupKindArg::Department => GroupKind::Department,
                GroupKindArg::Org => GroupKind::Org,
            },
        ),
    };
    let memory = open(cli)?;
    let event = memory.admin().register(principal)?;
    say!("registered {principal} at {}", event.at);
    Ok(ExitCode::SUCCESS)
}

fn member_edge(edge: &MemberEdge) -> Result<Edge> {
    let member = match (&edge.agent, &edge.member_group) {
        (Some(a), None) => Member::Agent(agent(a)?),
        (None, Some(g)) => Member::Group(group(g)?),
        _ => {
            return Err(invalid(
                "name exactly one member: --agent or --member-group",
            ));
        }
    };
    Ok(Edge::Member {
        member,
        group: group(&edge.group)?,
    })
}

fn grant_edge(cli: &Cli, command: &GrantCommand) -> Result<ExitCode> {
    let (edge, when) = match command {
        GrantCommand::Invoke { edge, when } => (
            Edge::Invoke {
                user: user(&edge.user)?,
                agent: agent(&edge.agent)?,
            },
            when,
        ),
        GrantCommand::Access { edge, when } => (
            Edge::Access {
                agent: agent(&edge.agent)?,
                resource: resource(&edge.resource)?,
            },
            when,
        ),
        GrantCommand::Member { edge, when } => (member_edge(edge)?, when),
    };
    let at = optional_time(when.at.as_ref())?;
    let until = optional_time(when.until.as_ref())?;
    let memory = open(cli)?;
    let since_until = |from: Timestamp, until: Option<Timestamp>| match until {
        Some(until) => format!("from {from} until {until}"),
        None => format!("from {from}"),
    };
    match memory.admin().grant(edge, at, until)? {
        Granted::Recorded(event) => say!("granted {edge} {}", since_until(event.at, until)),
        Granted::AlreadyHeld(held) => say!(
            "{edge} is already granted {}: nothing recorded",
            since_until(held.from(), held.until())
        ),
    }
    Ok(ExitCode::SUCCESS)
}

fn revoke_edge(cli: &Cli, command: &RevokeCommand) -> Result<ExitCode> {
    let (edge, when) = match command {
        RevokeCommand::Invoke { edge, when } => (
            Edge::Invoke {
                user: user(&edge.user)?,
                agent: agent(&edge.agent)?,
            },
            when,
        ),
        RevokeCommand::Access { edge, when } => (
            Edge::Access {
                agent: agent(&edge.agent)?,
                resource: resource(&edge.resource)?,
            },
            when,
        ),
        RevokeCommand::Member { edge, when } => (member_edge(edge)?, when),
    };
    let at = optional_time(when.at.as_ref())?;
    let memory = open(cli)?;
    let event = memory.admin().revoke(edge, at)?;
    if event.at > memory.now() {
        say!("scheduled: {edge} ends at {}", event.at);
    } else {
        say!("revoked {edge} at {}", event.at);
    }
    Ok(ExitCode::SUCCESS)
}

fn remember(cli: &Cli, args: &crate::RememberArgs) -> Result<ExitCode> {
    // No words, or a lone "-", read standard input.
    let texts: Vec<String> = if args.text.is_empty() || args.text == ["-"] {
        std::io::stdin()
            .lock()
            .lines()
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| invalid(format!("cannot read standard input as UTF-8 text: {e}")))?
            .into_iter()
            .map(|line| line.trim().to_owned())
            .filter(|line| !line.is_empty())
            .collect()
    } else {
        let text = args.text.join(" ");
        let text = text.trim();
        if text.is_empty() {
            Vec::new()
        } else {
            vec![text.to_owned()]
        }
    };
    if texts.is_empty() {
        return Err(invalid(
            "nothing to remember: give the words as arguments or on standard input",
        ));
    }
    let said_at = optional_time(args.said_at.as_ref())?;
    let scope = args
        .scope
        .as_deref()
        .map(str::parse::<Scope>)
        .transpose()
        .map_err(colmem::Error::from)?;
    let memory = open(cli)?;
    let session = session(&memory, &args.party)?;
    let session = match scope {
        Some(scope) => session.with_scope(scope),
        None => session,
    };
    let speaker = args
        .speaker
        .clone()
        .unwrap_or_else(|| args.party.user.clone());
    // Every line fits, or none is written.
    if let Some((i, why)) = texts
        .iter()
        .enumerate()
        .find_map(|(i, text)| Some((i, too_long(memory.config(), &speaker, text)?)))
    {
        return Err(invalid(format!(
            "turn {} of {} is {why}: nothing was remembered; split it or raise the limit",
            i + 1,
            texts.len(),
        )));
    }
    let listener = args
        .listener
        .clone()
        .unwrap_or_else(|| args.party.agent.clone());
    // Turn ids unique in this store: the change sequence before the first turn.
    let base = memory.store_head()?;
    let mut written = Vec::new();
    let mut superseded = Vec::new();
    let mut deleted = Vec::new();
    let mut refused = Vec::new();
    let mut replayed = !texts.is_empty();
    let mut replayed_turns = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        // A keyed run names its turns after the key, so a retry names them alike.
        let key = args
            .idempotency_key
            .as_ref()
            .map(|k| format!("{k}#{}", i + 1));
        let dialogue_id = match &key {
            Some(key) => format!("{}:{key}", args.session),
            None => format!("{}:{}", args.session, base + i as u64 + 1),
        };
        let turn = TurnInput {
            dialogue_id,
            session: args.session.clone(),
            speaker: speaker.clone(),
            listener: listener.clone(),
            text: text.clone(),
            time: said_at,
            // Only the session's user, speaking for themself, can instruct the memory:
            // another speaker's words (`--speaker`) are the other party's.
            origin: if args.not_user || !speaker.eq_ignore_ascii_case(&args.party.user) {
                Origin::Other
            } else {
                Origin::User
            },
        };
        // The key as the user gave it, and which of the run's turns differs.
        let done = session
            .remember_keyed(&turn, key.as_deref())
            .map_err(|e| {
                use colmem::parts::store::Error::IdempotencyConflict;
                let reused = matches!(
                    &e,
                    colmem::Error::Store(IdempotencyConflict { .. })
                        | colmem::Error::Pipeline(colmem::parts::ama::Error::Store(
                            IdempotencyConflict { .. }
                        ))
                );
                let e = anyhow::Error::from(e);
                match &args.idempotency_key {
                    Some(k) if reused => anyhow::Error::new(exit::Coded {
                        code: exit::CONFLICT,
                        message: format!(
                            "idempotency key {k:?} was already used for other words: turn {} of {} differs from that run's; use a fresh key",
                            i + 1,
                            texts.len()
                        ),
                    }),
                    _ => e,
                }
            })?;
        replayed &= done.replayed;
        written.extend(done.written);
        superseded.extend(done.superseded);
        deleted.extend(done.deleted);
        refused.extend(done.refused);
        if done.replayed {
            replayed_turns.push(turn);
        }
    }
    // A command is one stretch of conversation: close its episode now, with the
    // turns an earlier run under the key stored but did not summarise (it stopped
    // part-way). A finished run's turns are summarised: its replay writes nothing.
    session.resume_episode(&args.session, &replayed_turns)?;
    if let Some(episode) = session.close_episode(&args.session)? {
        written.push(episode);
        replayed = false;
    }
    memory.flush()?;
    if args.json {
        print_json(&json!({
            "turns": texts.len(),
            "replayed": replayed,
            "written": written,
            "superseded": superseded.iter().map(|(old, new)| json!({"old": old, "new": new})).collect::<Vec<_>>(),
            "deleted": deleted,
            "refused": refused,
        }))?;
    } else if replayed {
        // A retry of a finished run: nothing new, only what that run wrote.
        let ids: Vec<String> = written.iter().map(|id| id.to_string()).collect();
        say!(
            "replayed {} turn(s) under the idempotency key: nothing written; the first run wrote {} under the key (versions that replaced others, and the episode summary, aside)",
            texts.len(),
            ids.join(" ")
        );
    } else {
        say!(
            "remembered {} turn(s): {} fragment(s) written, {} superseded, {} deleted, {} kept by the delete rule",
            texts.len(),
            written.len(),
            superseded.len(),
            deleted.len(),
            refused.len()
        );
        if !written.is_empty() {
            let ids: Vec<String> = written.iter().map(|id| id.to_string()).collect();
            say!("written: {}", ids.join(" "));
        }
        print_refused(&refused)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The bytes of a turn as the store keeps it: "speaker: words".
fn stored_len(speaker: &str, text: &str) -> usize {
    speaker.len() + ": ".len() + text.len()
}

/// Why a turn is too long to remember, if it is: over `[pipeline] max_turn_bytes`
/// (its words) or `[store] max_value_bytes` (the turn as stored), the smaller limit
/// named first.
fn too_long(config: &Config, speaker: &str, text: &str) -> Option<String> {
    let mut limits = [
        (
            text.len(),
            config.pipeline.max_turn_bytes,
            "[pipeline] max_turn_bytes",
            "",
        ),
        (
            stored_len(speaker, text),
            config.store.max_value_bytes,
            "[store] max_value_bytes",
            " as stored",
        ),
    ];
    limits.sort_by_key(|&(_, limit, ..)| limit);
    limits
        .iter()
        .find(|(len, limit, ..)| len > limit)
        .map(|(len, limit, key, how)| format!("{len} bytes{how}, over {key} = {limit}"))
}

fn view(args: &ViewArgs) -> Result<View> {
    Ok(if let Some(t) = &args.as_of {
        View::RecordAsOf(time(t)?)
    } else if let Some(t) = &args.world_as_of {
        View::WorldAsOf(time(t)?)
    } else if args.all_versions {
        View::AllVersions
    } else {
        View::Current
    })
}

/// At most `n` characters of `text`, with an ellipsis when cut.
fn clip(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        text.to_owned()
    } else {
        let mut out: String = text.chars().take(n.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// The recall options of `recall` and `answer`.
fn recall_options(args: &crate::RecallArgs) -> Result<RecallOptions> {
    Ok(RecallOptions {
        k: args.k,
        view: view(&args.view)?,
        ..RecallOptions::default()
    })
}

/// One recalled fragment as JSON: its scores per signal, route, round and provenance.
fn hit_json(hit: &Recalled) -> serde_json::Value {
    let f = &hit.fragment;
    json!({
        "id": f.id,
        "score": hit.score,
        "fused": hit.fused,
        "vector": hit.vector.map(|s| json!({"rank": s.rank, "score": s.score})),
        "lexical": hit.lexical.map(|s| json!({"rank": s.rank, "score": s.score})),
        "relevance": hit.relevance,
        "round": hit.round,
        "route": hit.route,
        "granularity": f.granularity,
        "key": f.key,
        "kind": f.kind,
        "scope": f.scope.to_string(),
        "user": f.provenance.user,
        "agents": f.provenance.agents,
        "resources": f.provenance.resources,
        "created_at": f.provenance.created_at.to_string(),
        "superseded_at": f.superseded_at.map(|t| t.to_string()),
        "content": f.content,
    })
}

/// A recall as JSON: the query, its rewriting, route, k and hits.
fn recall_json(query: &str, recall: &Recall) -> serde_json::Value {
    json!({
        "query": query,
        "rewritten": recall.plan.rewritten,
        "route": format!("{:?}", recall.plan.route).to_lowercase(),
        "k": recall.plan.k,
        "hits": recall.hits.iter().map(hit_json).collect::<Vec<_>>(),
    })
}

/// Recalled fragments as a table.
fn hits_table(hits: &[Recalled]) -> String {
    let mut table = Table::new(&["ID", "SCORE", "GRANULARITY", "SCOPE", "CONTENT"]);
    for hit in hits {
        let f = &hit.fragment;
        table.row(vec![
            f.id.to_string(),
            format!("{:.4}", hit.score),
            f.granularity.as_str().to_owned(),
            f.scope.to_string(),
            clip(&f.content, 100),
        ]);
    }
    table.render()
}

fn recall(cli: &Cli, args: &crate::RecallArgs) -> Result<ExitCode> {
    let options = recall_options(args)?;
    let query = args.query.join(" ");
    let memory = open_shared(cli)?;
    let session = session(&memory, &args.party)?;
    let recall = session.recall(&query, &options)?;
    if args.json {
        print_json(&recall_json(&query, &recall))?;
    } else if recall.hits.is_empty() {
        say!("nothing this session may see matches {query:?}");
    } else {
        say_raw!("{}", hits_table(&recall.hits));
    }
    memory.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Full mode: the answer, then the fragment it was drawn from and the evidence read.
fn answer(cli: &Cli, args: &crate::RecallArgs) -> Result<ExitCode> {
    let options = recall_options(args)?;
    let question = args.query.join(" ");
    let memory = open_shared(cli)?;
    let session = session(&memory, &args.party)?;
    let answered = session.answer(&question, &options)?;
    let answer = &answered.answer;
    if args.json {
        let mut value = recall_json(&question, &answered.recall);
        value["answer"] = json!(answer.text);
        value["drawn_from"] = json!(answer.evidence);
        print_json(&value)?;
    } else if answer.text.is_empty() {
        say!(
            "no answer: nothing this session may see answers {:?}",
            clip(&question, 100)
        );
        if !answered.recall.hits.is_empty() {
            say!("\nevidence read:");
            say_raw!("{}", hits_table(&answered.recall.hits));
        }
    } else {
        say!("{}", Shown(&answer.text));
        let drawn: Vec<String> = answer.evidence.iter().map(ToString::to_string).collect();
        say!("\ndrawn from: {}", drawn.join(" "));
        say!("evidence read:");
        say_raw!("{}", hits_table(&answered.recall.hits));
    }
    memory.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Every version under a subject key, oldest first, with when each held.
fn history(cli: &Cli, args: &crate::HistoryArgs) -> Result<ExitCode> {
    let memory = open_shared(cli)?;
    let session = session(&memory, &args.party)?;
    let versions = session.history(&args.key)?;
    let held = |f: &Fragment| match f.validity.until() {
        Some(until) => format!("{} until {until}", f.validity.from()),
        None => format!("{} on", f.validity.from()),
    };
    if args.json {
        let versions: Vec<serde_json::Value> = versions
            .iter()
            .map(|f| {
                json!({
                    "id": f.id,
                    "granularity": f.granularity,
                    "content": f.content,
                    "valid_from": f.validity.from().to_string(),
                    "valid_until": f.validity.until().map(|t| t.to_string()),
                    "recorded_at": f.provenance.created_at.to_string(),
                    "superseded_at": f.superseded_at.map(|t| t.to_string()),
                    "superseded_by": f.superseded_by,
                    "replaced": f.provenance.source.parents,
                })
            })
            .collect();
        print_json(&json!({ "key": args.key, "versions": versions }))?;
    } else if versions.is_empty() {
        say!(
            "nothing this session may see is kept under {:?} (recall --json shows each fragment's key)",
            args.key
        );
    } else {
        let mut table = Table::new(&[
            "ID",
            "GRANULARITY",
            "HELD (WORLD TIME)",
            "REPLACED BY",
            "CONTENT",
        ]);
        for f in &versions {
            table.row(vec![
                f.id.to_string(),
                f.granularity.as_str().to_owned(),
                held(f),
                f.superseded_by
                    .map_or_else(|| "-".to_owned(), |id| id.to_string()),
                clip(&f.content, 80),
            ]);
        }
        say_raw!("{}", table.render());
    }
    memory.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn compose_cards(cli: &Cli, args: &crate::ComposeArgs) -> Result<ExitCode> {
    let task = args.task.join(" ");
    if !task.chars().any(char::is_alphanumeric) {
        return Err(invalid("a task needs words to compose cards for"));
    }
    if args.budget == 0 {
        return Err(invalid(
            "a budget of 0 tokens holds no card: give --budget 1 or more",
        ));
    }
    let budget = args.budget;
    let memory = open_shared(cli)?;
    let session = session(&memory, &args.party)?;
    let context = TaskContext {
        live: args.condition.iter().cloned().collect(),
        ..TaskContext::new(task.as_str())
    };
    let composition = session.compose_cards(&context, budget)?;
    if args.json {
        print_json(&json!({
            "task": task,
            "text": composition.text,
            "cards": composition.cards,
            "tokens_used": composition.report.tokens_used,
            "budget": composition.report.budget,
            "retrieved": composition.report.retrieved,
            "pruned": composition.report.pruned,
            "skipped": composition.report.skipped,
        }))?;
    } else if composition.cards.is_empty() {
        let report = &composition.report;
        let shown = clip(&task, 100);
        let deferred = report
            .pruned
            .iter()
            .filter(|p| matches!(p.reason, colmem::parts::cards::PruneReason::Deferred { .. }))
            .count();
        if !report.skipped.is_empty() {
            say!(
                "{} card(s) apply to {:?}, but none fits the budget of {budget} tokens: raise --budget",
                report.skipped.len(),
                shown
            );
        } else if deferred > 0 {
            say!(
                "{deferred} card(s) apply to {:?} only under conditions the task does not name: name them with --condition",
                shown
            );
        } else {
            say!(
                "no strategy card this session may see applies to {:?}",
                shown
            );
        }
    } else {
        say!("{}", composition.text.trim_end());
        note!(
            "{} card(s), {} of {} tokens",
            composition.cards.len(),
            composition.report.tokens_used,
            composition.report.budget
        );
    }
    memory.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// What to call an input path in messages: `-` is standard input.
fn input_name(path: &Path) -> String {
    if path == Path::new("-") {
        "standard input".to_owned()
    } else {
        path.display().to_string()
    }
}

/// Reads scored trajectories, one JSON object per non-blank line, from a file or
/// (`-`) standard input. Every line is parsed before anything is learned.
fn trajectories(path: &Path) -> Result<Vec<Trajectory>> {
    let text = if path == Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut text)
            .map_err(|e| unavailable(format!("cannot read standard input: {e}")))?;
        text
    } else {
        std::fs::read_to_string(path)
            .map_err(|e| unavailable(format!("cannot read {}: {e}", path.display())))?
    };
    colmem::parts::cards::parse_trajectories(&text).map_err(|e| {
        invalid(format!(
            "line {} of {} is not a trajectory: {}; nothing was learned (docs/cli.md shows the fields)",
            e.line,
            input_name(path),
            e.reason,
        ))
    })
}

fn learn_cards(cli: &Cli, args: &crate::LearnArgs) -> Result<ExitCode> {
    let scope = args
        .scope
        .as_deref()
        .map(str::parse::<Scope>)
        .transpose()
        .map_err(colmem::Error::from)?;
    let trajectories = trajectories(&args.file)?;
    let memory = open(cli)?;
    let session = session(&memory, &args.party)?;
    if trajectories.is_empty() {
        say!(
            "{} holds no trajectory: nothing learned",
            input_name(&args.file)
        );
        return Ok(ExitCode::SUCCESS);
    }
    let report = session.learn_cards(&trajectories, scope)?;
    if args.json {
        print_json(&json!({
            "trajectories": trajectories.len(),
            "written": report.written,
            "candidates": report.candidates,
            "merged": report.merged,
            "refused": report.refused,
            "withheld": report.withheld,
            "rejected": report.rejected,
            "edges": report.edges,
        }))?;
    } else {
        say!(
            "learned from {} trajectory(ies): {} candidate card(s), {} written ({} merged into a card this session sees), {} below the admission threshold, {} kept out by the write policy, {} failure(s) too uninformative to reflect on",
            trajectories.len(),
            report.candidates,
            report.written.len(),
            report.merged,
            report.refused,
            report.withheld,
            report.rejected,
        );
        if !report.written.is_empty() {
            let ids: Vec<String> = report.written.iter().map(ToString::to_string).collect();
            say!("written: {}", ids.join(" "));
        }
    }
    memory.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// One line saying what an audit entry records (ids only, never text).
fn describe(event: &AuditEvent) -> (String, String) {
    let ids = |ids: &mut dyn Iterator<Item = FragmentId>| {
        ids.map(|id| id.to_string()).collect::<Vec<_>>().join(" ")
    };
    match event {
        AuditEvent::Access { event } => (
            "access".to_owned(),
            match event.change {
                colmem::AccessChange::Register { principal } => format!("register {principal}"),
                colmem::AccessChange::Grant {
                    edge,
                    until: Some(until),
                } => {
                    format!("grant {edge} from {} until {until}", event.at)
                }
                colmem::AccessChange::Grant { edge, until: None } => {
                    format!("grant {edge} from {}", event.at)
                }
                colmem::AccessChange::Revoke { edge } => format!("revoke {edge} at {}", event.at),
            },
        ),
        AuditEvent::Write {
            user,
            agent,
            fragments,
            ..
        } => (
            "write".to_owned(),
            format!(
                "{user} via {agent}: {}",
                ids(&mut fragments.iter().map(|(id, _)| *id))
            ),
        ),
        AuditEvent::Read {
            user,
            agent,
            returned,
        } => (
            "read".to_owned(),
            format!("{user} via {agent}: {}", ids(&mut returned.iter().copied())),
        ),
        AuditEvent::Update {
            user,
            agent,
            old,
            new,
        } => (
            "update".to_owned(),
            format!("{user} via {agent}: {old} -> {new}"),
        ),
        AuditEvent::Delete {
            user,
            agent,
            fragment,
        } => (
            "delete".to_owned(),
            format!("{user} via {agent}: {fragment}"),
        ),
        AuditEvent::Purge { admin, fragment } => {
            ("purge".to_owned(), format!("by {admin}: {fragment}"))
        }
        AuditEvent::Narrow { fragments } => (
            "narrow".to_owned(),
            format!("to user scope: {}", ids(&mut fragments.iter().copied())),
        ),
        AuditEvent::Denied { user, agent } => (
            "denied".to_owned(),
            format!("{user} via {agent}: may not invoke"),
        ),
        AuditEvent::Explain {
            user,
            agent,
            fragment,
            admin,
        } => (
            "explain".to_owned(),
            format!(
                "{user} via {agent}: {fragment}{}",
                if *admin { " (administrator)" } else { "" }
            ),
        ),
        AuditEvent::Erase { fragments } => {
            ("erase".to_owned(), ids(&mut fragments.iter().copied()))
        }
        other => ("other".to_owned(), format!("{other:?}")),
    }
}

fn audit_command(cli: &Cli, command: &AuditCommand) -> Result<ExitCode> {
    let memory = open_read_only(cli)?;
    let admin = memory.admin();
    match command {
        AuditCommand::Tail { n, json } => {
            let entries: Vec<AuditEntry> = admin.audit_tail(*n)?;
            if *json {
                for entry in &entries {
                    output::json(&serde_json::to_value(entry)?)?;
                }
            } else {
                let mut table = Table::new(&["SEQ", "AT", "EVENT", "DETAIL"]);
                for entry in &entries {
                    let (event, detail) = describe(&entry.event);
                    table.row(vec![
                        entry.seq.to_string(),
                        entry.at.to_string(),
                        event,
                        detail,
                    ]);
                }
                say_raw!("{}", table.render());
            }
            Ok(ExitCode::SUCCESS)
        }
        AuditCommand::Verify { head, json } => {
            let status = match head {
                Some(hex) => admin.audit_verify_against(published_head(hex)?)?,
                None => admin.audit_verify()?,
            };
            print_verdict(status, *json)
        }
        AuditCommand::Head { json } => {
            let (seq, hash) = admin.audit_head()?;
            if *json {
                print_json(&json!({"seq": seq, "hash": hash}))?;
            } else {
                say!("seq {seq} hash {hash}");
            }
            Ok(ExitCode::SUCCESS)
        }
        AuditCommand::Matrix { json } => {
            let matrix = admin.access_matrix()?;
            if *json {
                print_json(&serde_json::to_value(&matrix)?)?;
            } else {
                let mut table = Table::new(&[
                    "USER",
                    "AGENT",
                    "RESOURCE",
                    "READS",
                    "FRAGMENTS_READ",
                    "FRAGMENTS_WRITTEN",
                ]);
                for cell in &matrix.cells {
                    table.row(vec![
                        cell.user.to_string(),
                        cell.agent.to_string(),
                        cell.resource
                            .map_or_else(|| "(all)".to_owned(), |r| r.to_string()),
                        cell.reads.to_string(),
                        cell.fragments_read.to_string(),
                        cell.fragments_written.to_string(),
                    ]);
                }
                say_raw!("{}", table.render());
            }
            Ok(ExitCode::SUCCESS)
        }
        AuditCommand::WhoCouldSee { fragment, at, json } => {
            let id = fragment_id(fragment)?;
            let at = optional_time(at.as_ref())?.unwrap_or_else(|| memory.now());
            let pairs = admin.who_could_see(id, at)?;
            if *json {
                print_json(&json!({
                    "fragment": id,
                    "at": at.to_string(),
                    "readers": pairs.iter().map(|(u, a)| json!({"user": u, "agent": a})).collect::<Vec<_>>(),
                }))?;
            } else if pairs.is_empty() {
                say!("nobody could read fragment {id} at {at}");
            } else {
                let mut table = Table::new(&["USER", "AGENT"]);
                for (u, a) in pairs {
                    table.row(vec![u.to_string(), a.to_string()]);
                }
                say_raw!("{}", table.render());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A head published by `audit head`: its hash, 64 hex digits.
fn published_head(hex: &str) -> Result<Digest> {
    Digest::from_hex(hex.trim()).ok_or_else(|| {
        invalid(format!(
            "--head {hex:?} is not a hash: give the 64 hex digits `colmem audit head` printed"
        ))
    })
}

/// Prints what `audit verify` found; exit code 9 unless the audit holds.
fn print_verdict(status: AuditStatus, json: bool) -> Result<ExitCode> {
    match status {
        AuditStatus::Intact {
            entries,
            head,
            store,
        } => {
            if json {
                print_json(&json!({
                    "intact": true,
                    "entries": entries,
                    "head_seq": head.0,
                    "head_hash": head.1,
                    "fragments_checked": store.fragments,
                    "provenance_checked": store.provenance,
                    "events_checked": store.events,
                    "archived_unchecked": store.archived,
                    "published_seq": store.published,
                }))?;
            } else {
                let mut line = format!(
                    "intact: {entries} entries, head seq {} hash {}; {} fragments ({} with provenance) and {} access events agree with it",
                    head.0, head.1, store.fragments, store.provenance, store.events
                );
                if store.archived > 0 {
                    line.push_str(&format!(
                        "; {} recorded by archived entries, not checked here",
                        store.archived
                    ));
                }
                if let Some(seq) = store.published {
                    line.push_str(&format!("; the published head is entry {seq}"));
                }
                say!("{line}");
            }
            Ok(ExitCode::SUCCESS)
        }
        AuditStatus::Broken { seq, problem } => {
            if json {
                print_json(
                    &json!({"intact": false, "seq": seq, "problem": format!("{problem:?}")}),
                )?;
            } else {
                say!(
                    "broken at seq {seq}: {problem:?}; restore the store from a backup and compare"
                );
            }
            Ok(ExitCode::from(exit::CORRUPT))
        }
        AuditStatus::Disagrees(disagreement) => {
            if json {
                let mut verdict = serde_json::to_value(disagreement)?;
                if let Some(fields) = verdict.as_object_mut() {
                    fields.insert("intact".to_owned(), json!(false));
                    fields.insert("message".to_owned(), json!(disagreement.to_string()));
                }
                print_json(&verdict)?;
            } else {
                say!("broken: {disagreement}; restore the store from a backup and compare");
            }
            Ok(ExitCode::from(exit::CORRUPT))
        }
    }
}

/// The user a conversation is imported as, named after its sample id: letters,
/// digits and `- . : @` as they are, any other character (`_` too) as `_hex_`, so
/// that two sample ids never name one user ("conv 1" is `conv_20_1`, "conv-1" is
/// itself, in this file or the next).
fn user_name(sample_id: &str) -> Result<String> {
    let mut name = String::with_capacity(sample_id.len());
    for c in sample_id.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | ':' | '@') {
            name.push(c);
        } else {
            name.push_str(&format!("_{:x}_", u32::from(c)));
        }
    }
    if name.is_empty() {
        return Err(invalid(
            "a conversation has an empty sample_id: give it one",
        ));
    }
    Ok(name)
}

fn progress_bar(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) =
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({per_sec}, eta {eta})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_owned());
    bar
}

/// The users the import acts as, each once, in file order.
fn import_users(conversations: &[locomo::Conversation]) -> Result<Vec<UserId>> {
    let mut users = Vec::new();
    for conversation in conversations {
        let user = user(&user_name(&conversation.sample_id)?)?;
        if !users.contains(&user) {
            users.push(user);
        }
    }
    Ok(users)
}

/// Without `--grant`, an import widens no access: every user must be registered
/// and may invoke the agent now (not granted, or revoked, is refused), naming what
/// is missing before anything is written.
fn refuse_missing_access(memory: &Memory, users: &[UserId], assistant: AgentId) -> Result<()> {
    let unknown: Vec<String> = std::iter::once(Principal::Agent(assistant))
        .chain(users.iter().map(|u| Principal::User(*u)))
        .filter(|p| !memory.is_registered(*p))
        .map(|p| p.to_string())
        .collect();
    if !unknown.is_empty() {
        return Err(anyhow::Error::new(exit::Coded {
            code: exit::NOT_FOUND,
            message: format!(
                "not registered: {}; nothing was imported: register them (colmem principal add …) and grant each user the agent, or run the import with --grant to do both",
                unknown.join(", ")
            ),
        }));
    }
    let mut ungranted = Vec::new();
    for &user in users {
        if !memory.invocable(user)?.contains(&assistant) {
            ungranted.push(
                Edge::Invoke {
                    user,
                    agent: assistant,
                }
                .to_string(),
            );
        }
    }
    if !ungranted.is_empty() {
        return Err(anyhow::Error::new(exit::Coded {
            code: exit::FORBIDDEN,
            message: format!(
                "not granted now (never granted, or revoked): {}; nothing was imported: grant them (colmem grant invoke --user U --agent {assistant}), or run the import with --grant to grant them",
                ungranted.join(", ")
            ),
        }));
    }
    Ok(())
}

/// With `--grant`: registers what is missing and grants each user the agent, saying
/// what it did (each change audited as any registration or grant).
fn grant_missing_access(memory: &Memory, users: &[UserId], assistant: AgentId) -> Result<()> {
    let admin = memory.admin();
    for principal in std::iter::once(Principal::Agent(assistant))
        .chain(users.iter().map(|u| Principal::User(*u)))
    {
        if !memory.is_registered(principal) {
            admin.register(principal)?;
            say!("registered {principal}");
        }
    }
    for &user in users {
        // An edge that holds now is left as it is, a scheduled end included.
        if !memory.invocable(user)?.contains(&assistant) {
            let edge = Edge::Invoke {
                user,
                agent: assistant,
            };
            if let Granted::Recorded(event) = admin.grant(edge, None, None)? {
                say!("granted {edge} from {}", event.at);
            }
        }
    }
    Ok(())
}

fn import_locomo(
    cli: &Cli,
    path: &Path,
    agent_name: &str,
    limit: Option<usize>,
    grant: bool,
) -> Result<ExitCode> {
    let mut conversations = locomo::load(path).map_err(colmem::Error::from)?;
    if let Some(limit) = limit {
        conversations.truncate(limit);
    }
    let assistant = agent(agent_name)?;
    let memory = open(cli)?;
    // All that can be refused is refused before anything is written: a sample id
    // that names no user, a turn over the turn or value limit.
    for conversation in &conversations {
        user(&user_name(&conversation.sample_id)?)?;
        for (_, turn) in conversation.dialogue.turns() {
            if let Some(why) = too_long(memory.config(), &turn.speaker, &turn.full_text()) {
                return Err(invalid(format!(
                    "turn {} of conversation {} is {why}: nothing was imported; raise the limit",
                    turn.id, conversation.sample_id
                )));
            }
        }
    }
    if conversations.is_empty() {
        say!("the file holds no conversation: nothing imported");
        return Ok(ExitCode::SUCCESS);
    }
    let users = import_users(&conversations)?;
    if grant {
        grant_missing_access(&memory, &users, assistant)?;
    } else {
        refuse_missing_access(&memory, &users, assistant)?;
    }
    let total: u64 = conversations
        .iter()
        .map(|c| c.dialogue.turns().count() as u64)
        .sum();
    let bar = progress_bar(total, "importing turns");
    let (mut turns, mut fragments) = (0u64, 0u64);
    for conversation in &conversations {
        let user = user(&user_name(&conversation.sample_id)?)?;
        let session = memory.session(user, assistant)?;
        let dialogue = &conversation.dialogue;
        let mut open_session: Option<String> = None;
        // Turns an earlier run stored (replayed now by their keys): the session's
        // episode takes those no episode summarises yet, as after a run killed
        // part-way through the session.
        let mut replayed: Vec<TurnInput> = Vec::new();
        let close = |name: &str, replayed: &mut Vec<TurnInput>| -> Result<u64> {
            session.resume_episode(name, replayed)?;
            replayed.clear();
            Ok(u64::from(session.close_episode(name)?.is_some()))
        };
        for (s, turn) in dialogue.turns() {
            let session_name = format!("{}:S{}", conversation.sample_id, s.number);
            if let Some(previous) = open_session.replace(session_name.clone())
                && previous != session_name
            {
                fragments += close(&previous, &mut replayed)?;
            }
            let listener = if turn.speaker == dialogue.speaker_a {
                dialogue.speaker_b.clone()
            } else {
                dialogue.speaker_a.clone()
            };
            let input = TurnInput {
                dialogue_id: format!("{}:{}", conversation.sample_id, turn.id),
                session: session_name,
                speaker: turn.speaker.clone(),
                listener,
                text: turn.full_text(),
                time: s.date,
                // Each speaker is one of the people this memory serves, speaking for
                // themself, but to the other speaker: by the addressee rule their words
                // instruct the memory of nothing ("don't forget the pictures").
                origin: Origin::User,
            };
            // Keyed by the turn, so an import run again after a failure skips the turns
            // it stored before instead of storing them twice.
            let key = format!("import:{}", input.dialogue_id);
            let remembered = session.remember_keyed(&input, Some(&key)).with_context(|| {
                format!(
                    "importing turn {} of conversation {} (earlier turns are stored; running the import again skips them)",
                    turn.id, conversation.sample_id
                )
            })?;
            if remembered.replayed {
                replayed.push(input);
            } else {
                fragments += remembered.written.len() as u64;
            }
            turns += 1;
            bar.inc(1);
        }
        if let Some(last) = open_session {
            fragments += close(&last, &mut replayed)?;
        }
    }
    bar.finish_and_clear();
    memory.flush()?;
    say!(
        "imported {} conversation(s), {turns} turn(s), {fragments} fragment(s) written",
        conversations.len()
    );
    Ok(ExitCode::SUCCESS)
}

fn reindex(cli: &Cli) -> Result<ExitCode> {
    let memory = open(cli)?;
    let bar = progress_bar(0, "re-embedding");
    let report = memory.reindex(|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })?;
    bar.finish_and_clear();
    say!(
        "reindexed with {}: {} fragment(s) examined, {} re-embedded, {} indexed",
        report.embedder,
        report.examined,
        report.reembedded,
        report.catch_up.indexed
    );
    Ok(ExitCode::SUCCESS)
}

fn retention(cli: &Cli, party: &Party, as_json: bool) -> Result<ExitCode> {
    let memory = open(cli)?;
    let Some(limit) = memory.config().pipeline.retention_ms else {
        return Err(invalid(
            "no retention is configured: set [pipeline] retention_ms (see docs/config.md)",
        ));
    };
    let session = session(&memory, party)?;
    let done = session.enforce_retention()?;
    memory.flush()?;
    if as_json {
        print_json(&json!({
            "retention_ms": limit,
            "deleted": done.deleted,
            "refused": done.refused,
        }))?;
    } else {
        say!(
            "retention of {limit} ms: {} fragment(s) deleted, {} kept by the delete rule",
            done.deleted.len(),
            done.refused.len()
        );
        print_refused(&done.refused)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn forget(cli: &Cli, args: &crate::ForgetArgs) -> Result<ExitCode> {
    let what = if let Some(key) = &args.key {
        Forget::Key(key.clone())
    } else if let Some(query) = &args.query {
        Forget::Query(query.clone())
    } else if args.all {
        Forget::All
    } else {
        Forget::Ids(
            args.id
                .iter()
                .map(|id| fragment_id(id))
                .collect::<Result<Vec<_>>>()?,
        )
    };
    let memory = open(cli)?;
    let session = session(&memory, &args.party)?;
    let done = session.forget(&what, args.dry_run)?;
    memory.flush()?;
    let plan = &done.plan;
    if args.json {
        print_json(&json!({
            "dry_run": done.dry_run,
            "delete": plan.delete.iter().map(|f| f.id).collect::<Vec<_>>(),
            "redact": plan.redact.iter().map(|(f, rest)| json!({"id": f.id, "kept": rest})).collect::<Vec<_>>(),
            "deleted": done.deletion.deleted,
            "redacted": done.deletion.redacted.iter().map(|(old, new)| json!({"old": old, "new": new})).collect::<Vec<_>>(),
            "refused": done.deletion.refused,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = Table::new(&["ID", "GRANULARITY", "GOES", "CONTENT"]);
    for f in &plan.delete {
        table.row(vec![
            f.id.to_string(),
            f.granularity.as_str().to_owned(),
            "whole".to_owned(),
            clip(&f.content, 100),
        ]);
    }
    for (f, rest) in &plan.redact {
        table.row(vec![
            f.id.to_string(),
            f.granularity.as_str().to_owned(),
            "redacted".to_owned(),
            format!("keeps: {}", clip(rest, 90)),
        ]);
    }
    if plan.delete.is_empty() && plan.redact.is_empty() {
        say!("nothing of this user's memory that this session may see matches");
    } else if done.dry_run {
        say!(
            "dry run: {} fragment(s) would be deleted and {} redacted; nothing was changed",
            plan.delete.len(),
            plan.redact.len()
        );
        say_raw!("{}", table.render());
    } else {
        say!(
            "forgot {} fragment(s) ({} redacted to what else they told), {} kept by the delete rule",
            done.deletion.deleted.len(),
            done.deletion.redacted.len(),
            done.deletion.refused.len()
        );
        say_raw!("{}", table.render());
        print_refused(&done.deletion.refused)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Lists the fragments the delete rule kept, if any.
fn print_refused(refused: &[FragmentId]) -> Result<()> {
    if !refused.is_empty() {
        let ids: Vec<String> = refused.iter().map(|id| id.to_string()).collect();
        say!(
            "kept by the delete rule (this agent may not delete them): {}",
            ids.join(" ")
        );
    }
    Ok(())
}

/// `explain`: the session's view (whether it may read the fragment, and why only
/// if it may) or, with `--admin`, the administrator's. Audited, so it opens the
/// directory as a recall does.
fn explain(cli: &Cli, args: &crate::ExplainArgs) -> Result<ExitCode> {
    let id = fragment_id(&args.fragment)?;
    let (user, agent) = (user(&args.party.user)?, agent(&args.party.agent)?);
    let memory = open_shared(cli)?;
    let explanation = if args.admin {
        memory.admin().explain(user, agent, id)?
    } else {
        match memory.session(user, agent)?.explain(id)? {
            Some(explanation) => explanation,
            None => {
                // Hidden and missing alike: neither the id nor the time is repeated.
                if args.json {
                    print_json(&json!({"user": user, "agent": agent, "visible": false}))?;
                } else {
                    say!(
                        "{user} via {agent} may read no fragment of that id now (an administrator's explain --admin tells why)"
                    );
                }
                return Ok(ExitCode::SUCCESS);
            }
        }
    };
    print_explanation(id, &explanation, args.json)
}

/// The read rule condition by condition, naming the one that decides.
fn print_explanation(id: FragmentId, explanation: &Explanation, as_json: bool) -> Result<ExitCode> {
    let (user, agent) = (explanation.context.user(), explanation.context.agent());
    let at = explanation.context.now();
    if as_json {
        print_json(&json!({
            "fragment": id,
            "user": user,
            "agent": agent,
            "at": at.to_string(),
            "visible": explanation.visible(),
            "deciding": explanation.deciding().map(|c| c.condition.as_str()),
            "checks": explanation.checks.iter().map(|c| json!({
                "condition": c.condition.as_str(),
                "holds": c.holds,
                "detail": c.detail,
            })).collect::<Vec<_>>(),
        }))?;
    } else {
        match explanation.deciding() {
            None => say!(
                "fragment {id} is visible to {user} via {agent} at {at}: every condition holds"
            ),
            Some(check) => say!(
                "fragment {id} is not visible to {user} via {agent} at {at}: the {} condition decides: {}",
                check.condition,
                check.detail
            ),
        }
        for check in &explanation.checks {
            let mark = if check.holds { "holds " } else { "FAILS " };
            say!("  {mark} {:<9} {}", check.condition.as_str(), check.detail);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The administrator a purge from the command line is audited as: whoever may run
/// the program on the data directory.
const OPERATOR: &str = "operator";

fn purge(cli: &Cli, args: &crate::PurgeArgs) -> Result<ExitCode> {
    let target = &args.target;
    let target = match (&target.user, &target.deleted_before) {
        (Some(name), _) => PurgeTarget::User(user(name)?),
        (None, Some(at)) => PurgeTarget::DeletedBefore(time(at)?),
        (None, None) => PurgeTarget::Fragments(
            target
                .ids
                .iter()
                .map(|id| fragment_id(id))
                .collect::<Result<_>>()?,
        ),
    };
    // A dry run only reads: it runs beside a writer.
    let memory = if args.dry_run {
        open_read_only(cli)?
    } else {
        open(cli)?
    };
    let admin = memory.admin();
    let ids = if args.dry_run {
        admin.purgeable(&target)?
    } else {
        admin.purge(&target, OPERATOR)?
    };
    if args.json {
        print_json(&json!({"dry_run": args.dry_run, "fragments": ids}))?;
    } else {
        let done = if args.dry_run {
            "would purge"
        } else {
            "purged"
        };
        let listed: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
        say!("{done} {} fragment(s): {}", ids.len(), listed.join(" "));
    }
    Ok(ExitCode::SUCCESS)
}

fn export(cli: &Cli, output: Option<&Path>, vectors: bool) -> Result<ExitCode> {
    let memory = open_read_only(cli)?;
    // A file is written beside its target and moved onto it once complete, private:
    // a failure part-way leaves no truncated export under the name, and nothing is
    // overwritten or written through a link.
    let file = output.map(PrivateFile::new).transpose()?;
    let sink: Box<dyn Write> = match &file {
        Some(file) => Box::new(file.create()?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::new(sink);
    let mut failure: Option<anyhow::Error> = None;
    let count = memory.for_each_fragment(|stored| {
        let mut value = match serde_json::to_value(&stored.fragment) {
            Ok(value) => value,
            Err(e) => {
                failure.get_or_insert(e.into());
                return Ok(());
            }
        };
        if let (true, Some(embedding), Some(object)) =
            (vectors, &stored.embedding, value.as_object_mut())
        {
            object.insert(
                "embedding".to_owned(),
                json!({"embedder": embedding.embedder, "vector": embedding.vector}),
            );
        }
        if let Err(e) = serde_json::to_writer(&mut out, &value)
            .map_err(anyhow::Error::from)
            .and_then(|()| out.write_all(b"\n").map_err(anyhow::Error::from))
        {
            failure.get_or_insert(e);
        }
        Ok(())
    })?;
    let failure = failure.or_else(|| out.flush().err().map(anyhow::Error::from));
    if let Some(e) = failure {
        // The reader went away (`colmem export | head`): nothing failed.
        if exit::closed_pipe(&e) {
            return Ok(ExitCode::SUCCESS);
        }
        return Err(unavailable(format!("cannot write the export: {e:#}")));
    }
    drop(out);
    if let Some(file) = file {
        let path = file.dest().to_path_buf();
        file.publish()?;
        note!("exported {count} fragment(s) to {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn backup(cli: &Cli, dest: &Path) -> Result<ExitCode> {
    let memory = open_read_only(cli)?;
    let report = memory.backup(dest)?;
    say!(
        "backed up {} to {} ({} pages, {} bytes); open it with --dir after renaming it to colmem.db in a new directory",
        cli.dir.join(colmem::STORE_FILE).display(),
        dest.display(),
        report.pages,
        report.bytes
    );
    Ok(ExitCode::SUCCESS)
}
