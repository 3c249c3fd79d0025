//! The `colmem` command-line program: a thin layer of commands over the `colmem`
//! facade. `docs/cli.md` documents every command and the exit codes.
//!
//! The program is a library (its clap tree is [`Cli`], walked by tests through
//! `clap::CommandFactory`) whose [`main`] the `colmem` binary calls. It prints
//! only through [`output`]: no `print!`, so no stored text reaches a terminal unescaped.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod commands;
mod exit;
pub mod output;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// colmem: memory for teams of LLM agents serving many users, with access control
/// decided by code at read time.
#[derive(Debug, Parser)]
#[command(name = "colmem", version, about, long_about = None)]
pub struct Cli {
    /// The data directory.
    #[arg(long, global = true, env = "COLMEM_DIR", default_value = ".colmem")]
    pub dir: PathBuf,
    /// The configuration file [default: DIR/colmem.toml, used if it exists].
    #[arg(long, global = true, env = "COLMEM_CONFIG")]
    pub config: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create the data directory with its store, indexes and a commented colmem.toml.
    Init,
    /// Register users, agents, resources and groups.
    #[command(subcommand)]
    Principal(PrincipalCommand),
    /// Grant an edge of the access graph.
    #[command(subcommand)]
    Grant(GrantCommand),
    /// Revoke an edge of the access graph; it takes effect on the next read.
    #[command(subcommand)]
    Revoke(RevokeCommand),
    /// Remember what was said: the words given, or one turn per line of standard input.
    Remember(RememberArgs),
    /// Recall what a user served by an agent may see about a query.
    Recall(RecallArgs),
    /// Answer a question from what a user served by an agent may see (offline: the best evidence span; with a [chat] model, the model's answer).
    Answer(RecallArgs),
    /// Every version a user served by an agent may read of what is kept under a subject key (alice/home): what was held, and when.
    History(HistoryArgs),
    /// Strategy cards.
    #[command(subcommand)]
    Cards(CardsCommand),
    /// Audit queries.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Import conversations.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Re-embed stored text with the configured embedder (after it changed) and rebuild the indexes.
    Reindex,
    /// Forget part of a user's own memory, or all of it: by id, by subject key, by what a query names, or everything (--dry-run lists what would go).
    Forget(ForgetArgs),
    /// Delete what a user served by an agent recorded longer ago than `[pipeline] retention_ms`.
    Retention(RetentionArgs),
    /// Say whether a user served by an agent may read a fragment now, and why only when they may; with --admin, the administrator's full explanation.
    Explain(ExplainArgs),
    /// Remove fragments for good, as the administrator: by id, by user, or every fragment deleted before a time.
    Purge(PurgeArgs),
    /// Write every stored fragment as JSON lines.
    Export(ExportArgs),
    /// Copy the store into a new file through SQLite's backup API.
    Backup(BackupArgs),
}

/// `principal …`
#[derive(Debug, Subcommand)]
pub enum PrincipalCommand {
    /// Register a principal.
    Add {
        /// What it is.
        kind: PrincipalKind,
        /// Its name: ASCII letters, digits and _ - . : @.
        name: String,
        /// For a group only: crew (the default), team, department or org.
        #[arg(long, value_enum)]
        group_kind: Option<GroupKindArg>,
    },
}

/// The kinds of principal.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PrincipalKind {
    /// A human user.
    User,
    /// An agent that serves users.
    Agent,
    /// A tool, knowledge base or API.
    Resource,
    /// A group of agents and groups.
    Group,
}

/// Group kinds.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum GroupKindArg {
    /// A crew.
    Crew,
    /// A team.
    Team,
    /// A department.
    Department,
    /// An organisation.
    Org,
}

/// `grant …`
#[derive(Debug, Subcommand)]
pub enum GrantCommand {
    /// Let a user invoke an agent.
    Invoke {
        #[command(flatten)]
        edge: InvokeEdge,
        #[command(flatten)]
        when: GrantWhen,
    },
    /// Let an agent use a resource.
    Access {
        #[command(flatten)]
        edge: AccessEdge,
        #[command(flatten)]
        when: GrantWhen,
    },
    /// Make an agent or a group a member of a group.
    Member {
        #[command(flatten)]
        edge: MemberEdge,
        #[command(flatten)]
        when: GrantWhen,
    },
}

/// `revoke …`
#[derive(Debug, Subcommand)]
pub enum RevokeCommand {
    /// Stop a user invoking an agent.
    Invoke {
        #[command(flatten)]
        edge: InvokeEdge,
        #[command(flatten)]
        when: RevokeWhen,
    },
    /// Stop an agent using a resource.
    Access {
        #[command(flatten)]
        edge: AccessEdge,
        #[command(flatten)]
        when: RevokeWhen,
    },
    /// End a membership.
    Member {
        #[command(flatten)]
        edge: MemberEdge,
        #[command(flatten)]
        when: RevokeWhen,
    },
}

/// An invoke edge.
#[derive(Debug, Args)]
pub struct InvokeEdge {
    /// The user.
    #[arg(long)]
    pub user: String,
    /// The agent.
    #[arg(long)]
    pub agent: String,
}

/// An access edge.
#[derive(Debug, Args)]
pub struct AccessEdge {
    /// The agent.
    #[arg(long)]
    pub agent: String,
    /// The resource.
    #[arg(long)]
    pub resource: String,
}

/// A membership edge.
#[derive(Debug, Args)]
pub struct MemberEdge {
    /// The containing group.
    #[arg(long)]
    pub group: String,
    /// The member agent (or give --member-group).
    #[arg(
        long,
        conflicts_with = "member_group",
        required_unless_present = "member_group"
    )]
    pub agent: Option<String>,
    /// The member group (or give --agent).
    #[arg(long)]
    pub member_group: Option<String>,
}

/// When a grant holds.
#[derive(Debug, Args)]
pub struct GrantWhen {
    /// From when: RFC 3339, a date, or ms since the epoch [default: now]. A future date takes effect then; a past one is refused.
    #[arg(long)]
    pub at: Option<String>,
    /// Until when (exclusive) [default: until revoked].
    #[arg(long)]
    pub until: Option<String>,
}

/// When a revocation happens.
#[derive(Debug, Args)]
pub struct RevokeWhen {
    /// When: RFC 3339, a date, or ms since the epoch [default: now]. A future date schedules the end (and cancels a grant scheduled after it); a past one is refused.
    #[arg(long)]
    pub at: Option<String>,
}

/// Who is asking: a user served by an agent.
#[derive(Debug, Args)]
pub struct Party {
    /// The user.
    #[arg(long)]
    pub user: String,
    /// The agent serving the user.
    #[arg(long)]
    pub agent: String,
}

/// `remember`
#[derive(Debug, Args)]
pub struct RememberArgs {
    #[command(flatten)]
    pub party: Party,
    /// The conversation session the turns belong to.
    #[arg(long, default_value = "cli")]
    pub session: String,
    /// Who spoke [default: the user].
    #[arg(long)]
    pub speaker: Option<String>,
    /// Who was spoken to [default: the agent].
    #[arg(long)]
    pub listener: Option<String>,
    /// When it was said (world time): RFC 3339, a date, or ms since the epoch [default: now].
    #[arg(long)]
    pub said_at: Option<String>,
    /// The words were the agent's (or a document's), not the user's own: they can never instruct the memory to forget.
    #[arg(long)]
    pub not_user: bool,
    /// Make the command safe to retry: running it again with the same key (and
    /// user) and the same words writes nothing and reports what the first run wrote;
    /// other words under the key are refused (exit 6).
    #[arg(long, value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub idempotency_key: Option<String>,
    /// Share what is remembered in this scope (agent, user, global or group:NAME) instead of keeping it with the user; refused if the write rule does not allow it [default: user].
    #[arg(long)]
    pub scope: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// What was said; read from standard input (one turn per line) when absent.
    pub text: Vec<String>,
}

/// `forget`
#[derive(Debug, Args)]
#[group(id = "selection", required = true, multiple = false)]
pub struct ForgetArgs {
    #[command(flatten)]
    pub party: Party,
    /// These fragments (repeatable).
    #[arg(long, group = "selection")]
    pub id: Vec<String>,
    /// Every version kept under this subject key (alice/home; `recall --json` shows keys).
    #[arg(long, group = "selection")]
    pub key: Option<String>,
    /// What the words name ("my budget", "where I live"): the fragments whose subject or attribute they name, never merely the top hits of a recall.
    #[arg(long, group = "selection")]
    pub query: Option<String>,
    /// Everything drawn from the user's conversation that this agent may delete.
    #[arg(long, group = "selection")]
    pub all: bool,
    /// List what would go, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Which versions a recall reads.
#[derive(Debug, Args)]
#[group(id = "view", multiple = false)]
pub struct ViewArgs {
    /// Versions current at this record time (what colmem knew then); permissions are still those of now.
    #[arg(long)]
    pub as_of: Option<String>,
    /// Versions valid at this world time (what held in the world then).
    #[arg(long)]
    pub world_as_of: Option<String>,
    /// Every version, superseded ones included.
    #[arg(long)]
    pub all_versions: bool,
}

/// `recall` and `answer`
#[derive(Debug, Args)]
pub struct RecallArgs {
    #[command(flatten)]
    pub party: Party,
    /// How many results [default: the retriever's dynamic k].
    #[arg(long, short)]
    pub k: Option<usize>,
    #[command(flatten)]
    pub view: ViewArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The query (for `answer`, the question).
    #[arg(required = true)]
    pub query: Vec<String>,
}

/// `history`
#[derive(Debug, Args)]
pub struct HistoryArgs {
    #[command(flatten)]
    pub party: Party,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// The subject key, as `recall --json` shows it (`alice/home`, `alice/sister/work`).
    pub key: String,
}

/// `cards …`
#[derive(Debug, Subcommand)]
pub enum CardsCommand {
    /// Compose the strategy cards this session may see for a task into a token budget.
    Compose(ComposeArgs),
    /// Learn strategy cards from scored task trajectories (ConMem's write path): warnings from failures, strategies from successes, each card admitted, merged and written as this session.
    Learn(LearnArgs),
}

/// `cards compose`
#[derive(Debug, Args)]
pub struct ComposeArgs {
    #[command(flatten)]
    pub party: Party,
    /// The token budget.
    #[arg(long, default_value_t = 512)]
    pub budget: usize,
    /// A condition that holds in this task (repeat for more): cards learned under a condition apply only where it is named.
    #[arg(long)]
    pub condition: Vec<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// The task.
    #[arg(required = true)]
    pub task: Vec<String>,
}

/// `cards learn`
#[derive(Debug, Args)]
pub struct LearnArgs {
    #[command(flatten)]
    pub party: Party,
    /// The scope of the cards: agent, user, global or group:NAME [default: the write policy's default for an observation].
    #[arg(long)]
    pub scope: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// The trajectories, one JSON object per line (`-` reads standard input); docs/cli.md shows the fields.
    pub file: PathBuf,
}

/// `audit …`
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// The last entries of the audit log.
    Tail {
        /// How many.
        #[arg(short, long, default_value_t = 20)]
        n: usize,
        /// Print JSON lines instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Check the audit log's hash chain, and the store against it; exit code 9 if it is broken.
    Verify {
        /// The hash of a head published elsewhere (`audit head`): it must still be an entry of the chain.
        #[arg(long, value_name = "DIGEST")]
        head: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The head of the audit chain (sequence number and hash), to publish elsewhere.
    Head {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// User × agent × resource counts of reads and writes.
    Matrix {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Who could read a fragment at a moment, with the permissions of that moment.
    WhoCouldSee {
        /// The fragment id.
        fragment: String,
        /// The moment [default: now].
        #[arg(long)]
        at: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `import …`
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// A LoCoMo JSON file: each conversation becomes a user served by one assistant agent; only dialogue turns are read.
    Locomo {
        /// The file.
        path: PathBuf,
        /// The assistant agent's name.
        #[arg(long, default_value = "assistant")]
        agent: String,
        /// Import at most this many conversations.
        #[arg(long)]
        limit: Option<usize>,
        /// Register each conversation's user and the agent, and grant the user the agent, where missing (a revoked edge is granted again). Without it, a missing principal or edge refuses the import.
        #[arg(long)]
        grant: bool,
    },
}

/// `retention`
#[derive(Debug, Args)]
pub struct RetentionArgs {
    #[command(flatten)]
    pub party: Party,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `explain`
#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub party: Party,
    /// The administrator's explanation: every condition with what it was decided on, for any fragment, naming the one that decides (an id that does not exist is exit 4). Without it, the session's own: what it may not read and what does not exist look alike.
    #[arg(long)]
    pub admin: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// The fragment id.
    pub fragment: String,
}

/// `purge`
#[derive(Debug, Args)]
pub struct PurgeArgs {
    #[command(flatten)]
    pub target: PurgeTargetArgs,
    /// List what would be purged, and purge nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// What a purge removes: one of these.
#[derive(Debug, Args)]
#[group(id = "target", required = true, multiple = false)]
pub struct PurgeTargetArgs {
    /// A fragment to purge, live or deleted (repeat for more).
    #[arg(long = "id", value_name = "FRAGMENT")]
    pub ids: Vec<String>,
    /// Purge every fragment of this user, live or deleted.
    #[arg(long)]
    pub user: Option<String>,
    /// Purge every fragment deleted before this time: RFC 3339, a date, or ms since the epoch.
    #[arg(long)]
    pub deleted_before: Option<String>,
}

/// `export`
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Write to this file instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Include each fragment's embedding.
    #[arg(long)]
    pub vectors: bool,
}

/// `backup`
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The new file (it must not exist).
    pub dest: PathBuf,
}

/// The program: parses the command line, runs the command, and says how it went.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return output::usage(&error),
    };
    match run(cli) {
        Ok(code) => code,
        // The reader of standard output went away (`| head`): nothing failed.
        Err(error) if exit::closed_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            output::note(format_args!("error: {}\n", exit::message(&error)));
            exit::for_error(&error)
        }
    }
}

/// Runs the command; the exit code says how it went.
fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    commands::dispatch(cli)
}
