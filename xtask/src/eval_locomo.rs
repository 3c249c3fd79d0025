//! `cargo xtask eval locomo --data PATH`: evidence recall of the AMA pipeline on LoCoMo.
//!
//! Each conversation is ingested as its own user served by one assistant agent, from the
//! dialogue turns only (text, speaker, session date, image caption): the file's
//! `observation`, `session_summary`, `event_summary` and `qa` fields are never read into
//! memory. Session dates are world time; record time is the logical clock's now.
//!
//! Every question of categories 1–4 is asked in retrieval-only mode. Evidence recall@k is
//! the share of a question's evidence turns among the first k *distinct source turns* of
//! the ranking: a fact counts its source turns, an episode all of its turns. The same run
//! reports a plain BM25-over-turns baseline and an ablation by granularity, all with the
//! same metric, plus context tokens, latencies and a leak check (no hit may belong to
//! another conversation's user).

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result, bail, ensure};
use colmem_ama::{
    Caller, Origin, Pipeline, PipelineConfig, RecallOptions, Roles, Stored, TurnInput,
};
use colmem_core::{Fragment, Granularity, Timestamp, UserId};
use colmem_eval::locomo::{self, Conversation};
use colmem_eval::locomo_score::locomo_f1;
use colmem_eval::metrics::{bleu1, recall_at_k};
use colmem_index::{FusionConfig, Query};
use colmem_llm::{ApproxTokenCounter, Embedder, OfflineConfig, OfflineEmbedder, TokenCounter};
use serde::Serialize;

use crate::ama_harness::Harness;

/// Arguments of `eval locomo`.
#[derive(clap::Args, Debug)]
pub struct EvalLocomoArgs {
    /// The LoCoMo JSON file (e.g. ../shared/data/locomo/locomo-dev.json).
    #[arg(long)]
    pub data: PathBuf,
    /// The embedder: `offline` (default) or `local` (MiniLM from --model-dir; needs
    /// xtask's `local-model` feature and `cargo xtask fetch-model minilm`).
    #[arg(long, default_value = "offline")]
    pub embedder: String,
    /// The local model's directory [default: models/minilm].
    #[arg(long)]
    pub model_dir: Option<PathBuf>,
    /// Only the first N conversations.
    #[arg(long)]
    pub conversations: Option<usize>,
    /// Skip the baseline and the ablation rows.
    #[arg(long)]
    pub no_ablation: bool,
    /// Print each question whose evidence the pipeline misses in its first 10 source
    /// turns: the missed turns' text and the turns ranked above them.
    #[arg(long)]
    pub verbose: bool,
    /// Also answer each question and score the answers against the gold ones by LoCoMo's
    /// F1 (its evaluation.py) and BLEU-1: answered through the OpenAI-compatible model
    /// given by --chat-url and --chat-model, or
    /// offline (the best evidence span) when none is given.
    #[arg(long)]
    pub answer: bool,
    /// Base URL of an OpenAI-compatible chat server, up to and including `/v1`
    /// [default: $COLMEM_CHAT__BASE_URL, the variable that sets `[chat] base_url` for colmem].
    #[arg(long)]
    pub chat_url: Option<String>,
    /// The chat model's name [default: $COLMEM_CHAT__MODEL, as for colmem's `[chat] model`].
    #[arg(long)]
    pub chat_model: Option<String>,
    /// The name of the environment variable that holds the API key (never the key).
    #[arg(long, default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,
    /// Weight of the vector signal in rank fusion.
    /// [default: 0.3: the offline hash embedder is a weaker signal than BM25; use 1.0 with MiniLM]
    #[arg(long)]
    pub vector_weight: Option<f64>,
    /// Weight of the BM25 signal in rank fusion.
    #[arg(long, default_value_t = FusionConfig::default().lexical_weight)]
    pub lexical_weight: f64,
    /// Print one JSON object as the last line.
    #[arg(long)]
    pub json: bool,
}

const KS: [usize; 3] = [5, 10, 25];
/// Fragments fetched per question: enough for 25 distinct turns in nearly every case.
pub(crate) const FETCH: usize = 40;
/// Fragments that make the context of a question.
pub(crate) const CONTEXT_FRAGMENTS: usize = 10;

/// One ranking method in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum System {
    /// The AMA pipeline with its defaults: every granularity, the route preferred, judge rounds.
    Ama,
    /// The AMA paper's exclusive routing: the route's granularity first, others in later rounds.
    AmaExclusive,
    /// Plain BM25 over raw turns.
    Bm25Turns,
    /// Searching the given granularities together, one round.
    Only(&'static [Granularity], &'static str),
}

impl System {
    fn name(self) -> &'static str {
        match self {
            System::Ama => "ama (defaults)",
            System::AmaExclusive => "ama exclusive routing",
            System::Bm25Turns => "bm25 over turns",
            System::Only(_, name) => name,
        }
    }
}

const ABLATION: [System; 6] = [
    System::AmaExclusive,
    System::Bm25Turns,
    System::Only(&[Granularity::RawTurn], "raw only"),
    System::Only(&[Granularity::Fact], "facts only"),
    System::Only(&[Granularity::RawTurn, Granularity::Fact], "raw + facts"),
    System::Only(
        &[
            Granularity::RawTurn,
            Granularity::Fact,
            Granularity::Episode,
            Granularity::Profile,
        ],
        "all granularities",
    ),
];

#[derive(Default)]
struct Tally {
    /// category → k → recall fractions.
    recall: BTreeMap<u8, BTreeMap<usize, Vec<f64>>>,
    context_ratio: Vec<f64>,
    query_ms: Vec<f64>,
    /// LoCoMo's F1 of each answer, by category.
    f1: BTreeMap<u8, Vec<f64>>,
    bleu: Vec<f64>,
}

impl Tally {
    fn add(&mut self, category: u8, turns: &[String], evidence: &[String]) {
        for k in KS {
            if let Some(r) = recall_at_k(turns, evidence, k) {
                self.recall
                    .entry(category)
                    .or_default()
                    .entry(k)
                    .or_default()
                    .push(r.fraction);
            }
        }
    }

    fn mean(&self, category: Option<u8>, k: usize) -> f64 {
        let values: Vec<f64> = self
            .recall
            .iter()
            .filter(|(c, _)| category.is_none_or(|want| **c == want))
            .flat_map(|(_, by_k)| by_k.get(&k).into_iter().flatten().copied())
            .collect();
        mean(&values)
    }

    /// The mean LoCoMo F1 of the answers of `category`, or of all.
    fn f1(&self, category: Option<u8>) -> f64 {
        let values: Vec<f64> = self
            .f1
            .iter()
            .filter(|(c, _)| category.is_none_or(|want| **c == want))
            .flat_map(|(_, f1)| f1.iter().copied())
            .collect();
        mean(&values)
    }

    fn questions(&self) -> usize {
        self.recall
            .values()
            .map(|by_k| by_k.get(&KS[0]).map_or(0, Vec::len))
            .sum()
    }
}

pub(crate) fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

#[derive(Serialize)]
struct ByCategory {
    overall: f64,
    #[serde(rename = "1")]
    c1: f64,
    #[serde(rename = "2")]
    c2: f64,
    #[serde(rename = "3")]
    c3: f64,
    #[serde(rename = "4")]
    c4: f64,
}

impl ByCategory {
    fn of(score: impl Fn(Option<u8>) -> f64) -> Self {
        ByCategory {
            overall: score(None),
            c1: score(Some(1)),
            c2: score(Some(2)),
            c3: score(Some(3)),
            c4: score(Some(4)),
        }
    }
}

#[derive(Serialize)]
struct Summary {
    recall_at_5: ByCategory,
    recall_at_10: ByCategory,
    recall_at_25: ByCategory,
    context_token_ratio: f64,
    questions: usize,
    leaks: usize,
    /// Fragments deleted while the dialogue was remembered: two people talking to
    /// each other give this memory no instruction to forget, so this should be 0.
    ingest_deletions: usize,
    /// Facts (and the profile entries drawn from them) closed as stale while the dialogue was remembered.
    ingest_supersedes: usize,
    embedder: String,
    ingest_turns_per_s: f64,
    query_p50_ms: f64,
    query_p99_ms: f64,
    baseline_bm25_recall_at_10: Option<f64>,
    /// With `--answer`: LoCoMo's F1 of the answers, overall and by category.
    #[serde(skip_serializing_if = "Option::is_none")]
    answer_f1: Option<ByCategory>,
    /// With `--answer`: the mean BLEU-1 of the answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    answer_bleu1: Option<f64>,
}

fn embedder(args: &EvalLocomoArgs) -> Result<Arc<dyn Embedder>> {
    match args.embedder.as_str() {
        "offline" => Ok(Arc::new(OfflineEmbedder::new(OfflineConfig::default())?)),
        "local" => local_embedder(args),
        other => bail!("unknown embedder {other:?}: use `offline` or `local`"),
    }
}

#[cfg(feature = "local-model")]
fn local_embedder(args: &EvalLocomoArgs) -> Result<Arc<dyn Embedder>> {
    use colmem_llm::{LocalEmbedder, LocalModelConfig};
    let dir = args
        .model_dir
        .clone()
        .unwrap_or_else(|| crate::repo_root().join("models/minilm"));
    ensure!(
        dir.join("model.safetensors").is_file(),
        "{} holds no model: run `cargo xtask fetch-model minilm`",
        dir.display()
    );
    Ok(Arc::new(LocalEmbedder::load(&LocalModelConfig::new(&dir))?))
}

#[cfg(not(feature = "local-model"))]
fn local_embedder(_args: &EvalLocomoArgs) -> Result<Arc<dyn Embedder>> {
    bail!(
        "xtask was built without its local-model feature: run `cargo xtask --features local-model eval locomo …` (see README)"
    )
}

/// The offline roles, with a model-backed answerer when a chat server is configured.
fn answer_roles(args: &EvalLocomoArgs) -> Result<Roles> {
    let mut roles = Roles::offline();
    let from_env =
        |given: &Option<String>, name: &str| given.clone().or_else(|| std::env::var(name).ok());
    // The variables that configure colmem's own chat model, so one pair serves both: a
    // `COLMEM_…` name that is no configuration key would make every colmem command fail.
    let url = from_env(&args.chat_url, "COLMEM_CHAT__BASE_URL");
    let model = from_env(&args.chat_model, "COLMEM_CHAT__MODEL");
    if let (true, Some(url), Some(model)) = (args.answer, url, model) {
        let mut endpoint = colmem_llm::EndpointConfig::new(url.clone());
        endpoint.api_key_env = Some(args.api_key_env.clone());
        let chat = colmem_llm::OpenAiChat::new(colmem_llm::ChatServerConfig {
            endpoint,
            model: model.clone(),
            json_schema: false,
        })?;
        roles.answerer = Arc::new(colmem_ama::LlmAnswerer::new(
            Arc::new(chat),
            colmem_ama::LlmRoleConfig::default(),
        )?);
        println!("answering through {model} at {url}");
    } else if args.answer {
        println!(
            "answering offline (best evidence span): give --chat-url and --chat-model for a model"
        );
    }
    Ok(roles)
}

/// The turns of a conversation as the constructor sees them.
pub(crate) fn turns(conversation: &Conversation) -> Vec<TurnInput> {
    let dialogue = &conversation.dialogue;
    dialogue
        .turns()
        .map(|(session, turn)| {
            let listener = if turn.speaker == dialogue.speaker_a {
                dialogue.speaker_b.clone()
            } else {
                dialogue.speaker_a.clone()
            };
            TurnInput {
                dialogue_id: turn.id.to_string(),
                session: format!("session_{}", session.number),
                speaker: turn.speaker.clone(),
                listener,
                text: turn.full_text(),
                time: session.date,
                // Both speakers are the people this memory serves.
                origin: Origin::User,
            }
        })
        .collect()
}

/// Prints the evidence turns missing from the first 10 ranked turns, and those 10.
fn print_misses(
    conversation: &Conversation,
    question: &locomo::Question,
    turns: &[String],
    evidence: &[String],
) {
    let top: Vec<&String> = turns.iter().take(10).collect();
    let missed: Vec<&String> = evidence.iter().filter(|e| !top.contains(e)).collect();
    if missed.is_empty() {
        return;
    }
    let text = |id: &str| {
        conversation
            .dialogue
            .turns()
            .find(|(_, t)| t.id.to_string() == id)
            .map_or_else(String::new, |(_, t)| {
                format!("{}: {}", t.speaker, t.full_text())
            })
    };
    println!("MISS c{} {:?}", question.category, question.question);
    for id in missed {
        let rank = turns
            .iter()
            .position(|t| t == id)
            .map_or("-".to_owned(), |r| (r + 1).to_string());
        println!("    want {id} (rank {rank}) {}", text(id));
    }
    for id in top.iter().take(5) {
        println!("    got  {id} {}", text(id));
    }
}

/// The distinct source turns of a ranking, in order.
pub(crate) fn ranked_turns<'f>(fragments: impl Iterator<Item = &'f Fragment>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for fragment in fragments {
        for turn in &fragment.provenance.source.turns {
            if seen.insert(turn.clone()) {
                out.push(turn.clone());
            }
        }
    }
    out
}

/// Runs the evaluation and prints the table (and JSON).
pub fn run(args: &EvalLocomoArgs) -> Result<()> {
    let mut conversations =
        locomo::load(&args.data).with_context(|| format!("loading {}", args.data.display()))?;
    if let Some(n) = args.conversations {
        conversations.truncate(n);
    }
    ensure!(!conversations.is_empty(), "the file holds no conversations");
    let embedder = embedder(args)?;
    let start = Timestamp::parse("2026-01-01T00:00:00Z")?;
    let fusion = FusionConfig {
        vector_weight: args.vector_weight.unwrap_or(match args.embedder.as_str() {
            "offline" => OfflineEmbedder::FUSION_WEIGHT,
            _ => FusionConfig::default().vector_weight,
        }),
        lexical_weight: args.lexical_weight,
        ..FusionConfig::default()
    };
    let mut harness = Harness::new(embedder.clone(), start, fusion)?;
    // A semantic embedder reads the whole question; the offline one its content words.
    let base = PipelineConfig {
        embed_content_words: args.embedder == "offline",
        ..PipelineConfig::default()
    };
    let main = harness.pipeline(answer_roles(args)?, base);
    let counter = ApproxTokenCounter;

    // Ingest every conversation as its own user.
    let mut users: Vec<UserId> = Vec::new();
    let mut whole_tokens: Vec<usize> = Vec::new();
    let mut ingested = 0usize;
    let mut ingest_deletions = 0usize;
    let mut ingest_supersedes = 0usize;
    let ingest_start = Instant::now();
    for conversation in &conversations {
        let user = harness.add_user(&conversation.sample_id)?;
        users.push(user);
        let inputs = turns(conversation);
        whole_tokens.push(
            inputs
                .iter()
                .map(|t| counter.count(&format!("{}: {}", t.speaker, t.text)))
                .sum(),
        );
        let mut session: Option<String> = None;
        for turn in &inputs {
            harness.clock.advance(1_000);
            let caller = harness.caller(user)?;
            if let Some(previous) = session.as_deref().filter(|s| *s != turn.session) {
                main.close_episode(&caller, previous)?;
            }
            session = Some(turn.session.clone());
            let done = main.remember(&caller, turn)?;
            if args.verbose && !done.deleted.is_empty() {
                println!(
                    "DELETED {} fragments on {}: {}",
                    done.deleted.len(),
                    turn.dialogue_id,
                    turn.text
                );
            }
            if args.verbose {
                for (old, new) in &done.superseded {
                    println!(
                        "SUPERSEDED on {}: {:?} → {:?}",
                        turn.dialogue_id,
                        harness.store.get(*old)?.content,
                        harness.store.get(*new)?.content
                    );
                }
            }
            ingest_deletions += done.deleted.len();
            ingest_supersedes += done.superseded.len();
            ingested += 1;
        }
        if let Some(last) = &session {
            main.close_episode(&harness.caller(user)?, last)?;
        }
    }
    let ingest_s = ingest_start.elapsed().as_secs_f64();
    harness.clock.advance(1_000);
    main.index().catch_up(harness.store.as_ref())?;
    let fragments = main.index().len();

    let mut systems = vec![System::Ama];
    if !args.no_ablation {
        systems.extend(ABLATION);
    }
    let exclusive = harness.pipeline(
        Roles::offline(),
        PipelineConfig {
            exclusive_routing: true,
            ..base
        },
    );
    let single_round = harness.pipeline(
        Roles::offline(),
        PipelineConfig {
            rounds: 0,
            store: Stored::default(),
            ..base
        },
    );
    let pipelines = Pipelines {
        main: &main,
        exclusive: &exclusive,
        single_round: &single_round,
        harness: &harness,
    };
    let mut tallies: Vec<Tally> = systems.iter().map(|_| Tally::default()).collect();
    let mut leaks = 0usize;
    for (conversation, user) in conversations.iter().zip(&users) {
        let caller = harness.caller(*user)?;
        let whole = whole_tokens[users.iter().position(|u| u == user).unwrap_or(0)];
        for question in conversation
            .questions
            .iter()
            .filter(|q| (1..=4).contains(&q.category) && !q.evidence.is_empty())
        {
            let evidence: Vec<String> = question.evidence.iter().map(|d| d.to_string()).collect();
            for (system, tally) in systems.iter().zip(tallies.iter_mut()) {
                let began = Instant::now();
                let ranked = pipelines.rank(*system, &caller, &question.question, args.answer)?;
                tally.query_ms.push(began.elapsed().as_secs_f64() * 1e3);
                leaks += ranked
                    .fragments
                    .iter()
                    .filter(|f| f.provenance.user != *user)
                    .count();
                let turns = ranked_turns(ranked.fragments.iter());
                tally.add(question.category, &turns, &evidence);
                if args.verbose && *system == System::Ama {
                    print_misses(conversation, question, &turns, &evidence);
                }
                if *system == System::Ama {
                    let context: usize = ranked
                        .fragments
                        .iter()
                        .take(CONTEXT_FRAGMENTS)
                        .map(|f| counter.count(&f.content))
                        .sum();
                    tally
                        .context_ratio
                        .push(context as f64 / whole.max(1) as f64);
                    if let (Some(answer), Some(gold)) = (&ranked.answer, &question.answer) {
                        if let Some(f1) = locomo_f1(question.category, answer, gold) {
                            tally.f1.entry(question.category).or_default().push(f1);
                        }
                        tally.bleu.push(bleu1(answer, gold));
                    }
                }
            }
        }
    }

    println!(
        "LoCoMo evidence recall: {} conversations, {} turns ingested in {:.1} s ({:.0} turns/s), {} fragments, embedder {}",
        conversations.len(),
        ingested,
        ingest_s,
        ingested as f64 / ingest_s.max(1e-9),
        fragments,
        embedder.id()
    );
    println!(
        "{:<22} {:>6} {:>6} {:>6}   {:>6} {:>6} {:>6} {:>6}   {:>8} {:>8}",
        "system", "R@5", "R@10", "R@25", "c1@10", "c2@10", "c3@10", "c4@10", "p50 ms", "p99 ms"
    );
    for (system, tally) in systems.iter().zip(&tallies) {
        println!(
            "{:<22} {:>6.3} {:>6.3} {:>6.3}   {:>6.3} {:>6.3} {:>6.3} {:>6.3}   {:>8.2} {:>8.2}",
            system.name(),
            tally.mean(None, 5),
            tally.mean(None, 10),
            tally.mean(None, 25),
            tally.mean(Some(1), 10),
            tally.mean(Some(2), 10),
            tally.mean(Some(3), 10),
            tally.mean(Some(4), 10),
            percentile(&tally.query_ms, 0.5),
            percentile(&tally.query_ms, 0.99),
        );
    }
    let ama = &tallies[0];
    // What the file's gold data lacks, said rather than hidden: questions of categories
    // 1–4 with no evidence turn cannot be scored on recall, and evidence entries that
    // are not turns of the dialogue are left out of it.
    let asked = conversations
        .iter()
        .flat_map(|c| &c.questions)
        .filter(|q| (1..=4).contains(&q.category));
    let unscored = asked.clone().filter(|q| q.evidence.is_empty()).count();
    let dropped: Vec<&String> = asked.flat_map(|q| &q.malformed_evidence).collect();
    if unscored > 0 || !dropped.is_empty() {
        println!(
            "gold data: {unscored} questions of categories 1-4 have no evidence turn and are not scored; {} evidence entries are not turns of their dialogue and are left out: {dropped:?}",
            dropped.len()
        );
    }
    println!(
        "questions {}, context tokens per question {:.2}% of the conversation, leaks {}, fragments deleted while ingesting {}, facts and profile entries closed as stale {}",
        ama.questions(),
        mean(&ama.context_ratio) * 100.0,
        leaks,
        ingest_deletions,
        ingest_supersedes
    );
    if args.answer {
        println!(
            "answers ({} answered), scored by LoCoMo's evaluation.py (Porter stems; multi-hop by sub-answer): F1 {:.3} (c1 {:.3}, c2 {:.3}, c3 {:.3}, c4 {:.3}); BLEU-1 {:.3}",
            ama.bleu.len(),
            ama.f1(None),
            ama.f1(Some(1)),
            ama.f1(Some(2)),
            ama.f1(Some(3)),
            ama.f1(Some(4)),
            mean(&ama.bleu),
        );
    }
    if args.json {
        let baseline = systems
            .iter()
            .position(|s| *s == System::Bm25Turns)
            .map(|i| tallies[i].mean(None, 10));
        let summary = Summary {
            recall_at_5: ByCategory::of(|c| ama.mean(c, 5)),
            recall_at_10: ByCategory::of(|c| ama.mean(c, 10)),
            recall_at_25: ByCategory::of(|c| ama.mean(c, 25)),
            answer_f1: args.answer.then(|| ByCategory::of(|c| ama.f1(c))),
            answer_bleu1: args.answer.then(|| mean(&ama.bleu)),
            context_token_ratio: mean(&ama.context_ratio),
            questions: ama.questions(),
            leaks,
            ingest_deletions,
            ingest_supersedes,
            embedder: embedder.id().to_owned(),
            ingest_turns_per_s: ingested as f64 / ingest_s.max(1e-9),
            query_p50_ms: percentile(&ama.query_ms, 0.5),
            query_p99_ms: percentile(&ama.query_ms, 0.99),
            baseline_bm25_recall_at_10: baseline,
        };
        println!("{}", serde_json::to_string(&summary)?);
    }
    ensure!(
        leaks == 0,
        "{leaks} fragments of another conversation were returned"
    );
    // Two people talking to each other instruct the memory of nothing.
    ensure!(
        ingest_deletions == 0,
        "{ingest_deletions} fragments were deleted while the dialogue was remembered: words said between the speakers were taken for an instruction to the memory"
    );
    Ok(())
}

struct Ranked {
    fragments: Vec<Fragment>,
    answer: Option<String>,
}

/// The pipelines the systems of the table run on, over one memory.
struct Pipelines<'h> {
    main: &'h Pipeline,
    exclusive: &'h Pipeline,
    single_round: &'h Pipeline,
    harness: &'h Harness,
}

impl Pipelines<'_> {
    fn rank(
        &self,
        system: System,
        caller: &Caller<'_>,
        question: &str,
        answer: bool,
    ) -> Result<Ranked> {
        let Pipelines {
            main,
            exclusive,
            single_round,
            harness,
        } = *self;
        let options = RecallOptions {
            k: Some(FETCH),
            ..RecallOptions::default()
        };
        Ok(match system {
            System::Ama if answer => {
                let answered = main.answer(caller, question, &options)?;
                Ranked {
                    fragments: answered
                        .recall
                        .hits
                        .into_iter()
                        .map(|h| h.fragment)
                        .collect(),
                    answer: Some(answered.answer.text),
                }
            }
            System::Ama => Ranked {
                fragments: main
                    .recall(caller, question, &options)?
                    .hits
                    .into_iter()
                    .map(|h| h.fragment)
                    .collect(),
                answer: None,
            },
            System::AmaExclusive => Ranked {
                fragments: exclusive
                    .recall(caller, question, &options)?
                    .hits
                    .into_iter()
                    .map(|h| h.fragment)
                    .collect(),
                answer: None,
            },
            System::Only(granularities, _) => Ranked {
                fragments: single_round
                    .recall(
                        caller,
                        question,
                        &RecallOptions {
                            granularities: Some(granularities.to_vec()),
                            ..options
                        },
                    )?
                    .hits
                    .into_iter()
                    .map(|h| h.fragment)
                    .collect(),
                answer: None,
            },
            System::Bm25Turns => {
                let hits = harness.index.search(
                    &Query {
                        vector: None,
                        text: Some(question),
                        k: FETCH,
                        granularities: &[Granularity::RawTurn],
                        begun_in: None,
                    },
                    caller.filter(),
                )?;
                let fragments = hits
                    .iter()
                    .map(|h| harness.store.get(h.id))
                    .collect::<Result<Vec<_>, _>>()?;
                Ranked {
                    fragments,
                    answer: None,
                }
            }
        })
    }
}
