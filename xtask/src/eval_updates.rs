//! `cargo xtask eval updates`: the knowledge-update suite of `fixtures/knowledge-update/`.
//!
//! Each fixture conversation is remembered turn by turn as its own user (the user's turns
//! are the user's own input; the assistant's are not). Then its questions are asked in
//! full mode:
//! - `current`: the answer must contain an expected value and no stale one (an empty
//!   answer is wrong), and no fact or profile entry stating the old state (holding a
//!   stale value, drawn from turns said before the change: the first turn naming the
//!   current value, or the fixture's `changed_in`) may be recalled as current;
//! - `past`: asked as a history read at the question's world date; the answer must hold
//!   the value of that time;
//! - `forgotten`: after the user's explicit forget instruction, nothing recalled may hold
//!   the forgotten value, in the current view or in a history read of every version;
//! - `kept`: a fact that never changed, asked after chatter that uses change words in
//!   other senses ("my sister gave me a cookbook", "the ending moved me"); scored as
//!   `current`, reported on its own row so that it does not dilute the current figure.
//!
//! In the `unchanged` conversations nothing about the user changes, so every fact the
//! pipeline closes there is closed by mistake: the suite counts them as false closures.
//!
//! Recall (an expected value anywhere in the recalled fragments) is reported beside
//! accuracy.
//!
//! The pipeline runs on the offline defaults: the offline embedder at its fusion weight
//! ([`OfflineEmbedder::FUSION_WEIGHT`]) beside BM25, rule-based roles.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result, bail, ensure};
use colmem_ama::{Origin, PipelineConfig, RecallOptions, Roles, TurnInput};
use colmem_core::{Granularity, Timestamp, View};
use colmem_index::FusionConfig;
use colmem_llm::{OfflineConfig, OfflineEmbedder};
use serde::{Deserialize, Serialize};

use crate::ama_harness::Harness;

/// Arguments of `eval updates`.
#[derive(clap::Args, Debug)]
pub struct EvalUpdatesArgs {
    /// One fixture directory to run instead of the suite's two halves
    /// (fixtures/knowledge-update/tuning and held-out).
    #[arg(long)]
    pub fixtures: Option<PathBuf>,
    /// Print every question that was answered wrongly.
    #[arg(long)]
    pub verbose: bool,
    /// Print one JSON object as the last line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    conversation: Vec<Conversation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Conversation {
    id: String,
    user: String,
    agent: String,
    change: String,
    turns: Vec<FixtureTurn>,
    questions: Vec<FixtureQuestion>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FixtureTurn {
    date: String,
    speaker: String,
    text: String,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
enum QuestionKind {
    Current,
    Past,
    Forgotten,
    Kept,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FixtureQuestion {
    ask: String,
    kind: QuestionKind,
    #[serde(default)]
    at: Option<String>,
    expect: Vec<String>,
    #[serde(default)]
    stale: Vec<String>,
    /// `current` questions only: the dialogue id of the turn that tells of the change,
    /// when that is not the first turn naming an `expect` value ("my Trek is gone"
    /// comes before "my new ride is a Brompton").
    #[serde(default)]
    changed_in: Option<String>,
}

#[derive(Default, Serialize, Clone)]
struct Score {
    questions: usize,
    correct: usize,
    recalled: usize,
    stale_returned: usize,
}

impl Score {
    fn accuracy(&self) -> f64 {
        self.correct as f64 / self.questions.max(1) as f64
    }
    fn recall(&self) -> f64 {
        self.recalled as f64 / self.questions.max(1) as f64
    }
    fn add(&mut self, other: &Score) {
        self.questions += other.questions;
        self.correct += other.correct;
        self.recalled += other.recalled;
        self.stale_returned += other.stale_returned;
    }
}

#[derive(Serialize)]
struct Summary {
    questions: usize,
    accuracy: f64,
    current_accuracy: f64,
    past_accuracy: f64,
    forgotten_accuracy: f64,
    recall: f64,
    stale_returned: usize,
    kept_accuracy: f64,
    /// Facts closed while an `unchanged` conversation was remembered, in which nothing
    /// changes: each one closed by mistake.
    false_closures: usize,
    /// Fragments deleted while an adversarial conversation was remembered: its
    /// stored text must never trigger a deletion.
    adversarial_deletions: usize,
    by_type: BTreeMap<String, f64>,
}

fn contains(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

fn date(text: &str) -> Result<Timestamp> {
    Timestamp::parse(text).with_context(|| format!("bad date {text:?}: use YYYY-MM-DD"))
}

fn load(dir: &Path) -> Result<Vec<Conversation>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    ensure!(
        !paths.is_empty(),
        "{} holds no .toml fixtures",
        dir.display()
    );
    let mut out = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path)?;
        let file: File =
            toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        for conversation in &file.conversation {
            for question in &conversation.questions {
                ensure!(
                    question.at.is_some() == (question.kind == QuestionKind::Past),
                    "{}: {}: {:?}: `at` is given on past questions, and only on them",
                    path.display(),
                    conversation.id,
                    question.ask
                );
                if let Some(id) = &question.changed_in {
                    // At most the turn that first names the current value: the change
                    // is told by then.
                    let named = conversation
                        .turns
                        .iter()
                        .position(|t| question.expect.iter().any(|e| contains(&t.text, e)))
                        .map_or(conversation.turns.len(), |i| i + 1);
                    ensure!(
                        question.kind == QuestionKind::Current
                            && turn_number(id).is_some_and(|n| (1..=named).contains(&n)),
                        "{}: {}: `changed_in = {id:?}` must name a turn D1:n of the \
                         conversation, on a current question, no later than the first \
                         turn naming an `expect` value",
                        path.display(),
                        conversation.id
                    );
                }
            }
        }
        out.extend(file.conversation);
    }
    Ok(out)
}

/// Runs the suite's two halves, each with its table, and prints one JSON object of
/// both. The held-out half prints aggregates only, never a question it got wrong:
/// rules are tuned on the tuning half alone, and the held-out figure says whether
/// they carry over.
pub fn run(args: &EvalUpdatesArgs) -> Result<()> {
    let root = crate::repo_root().join("fixtures/knowledge-update");
    let halves = match &args.fixtures {
        Some(dir) => vec![("given", dir.clone(), args.verbose)],
        None => vec![
            ("tuning", root.join("tuning"), args.verbose),
            ("held-out", root.join("held-out"), false),
        ],
    };
    let mut summaries = BTreeMap::new();
    for (half, dir, verbose) in halves {
        println!("{half} half ({})", dir.display());
        summaries.insert(half.replace('-', "_"), evaluate(&dir, verbose)?);
        println!();
    }
    if args.json {
        println!("{}", serde_json::to_string(&summaries)?);
    }
    for (half, summary) in &summaries {
        ensure!(
            summary.adversarial_deletions == 0,
            "{half}: stored text triggered {} deletions in adversarial conversations",
            summary.adversarial_deletions
        );
    }
    Ok(())
}

/// Runs the conversations of `dir` and prints their table; `verbose` prints each
/// question answered wrongly.
fn evaluate(dir: &Path, verbose: bool) -> Result<Summary> {
    let conversations = load(dir)?;
    let embedder = Arc::new(OfflineEmbedder::new(OfflineConfig::default())?);
    let mut harness = Harness::new(
        embedder,
        Timestamp::parse("2026-01-01T00:00:00Z")?,
        FusionConfig {
            vector_weight: OfflineEmbedder::FUSION_WEIGHT,
            ..FusionConfig::default()
        },
    )?;
    let pipeline = harness.pipeline(Roles::offline(), PipelineConfig::default());

    let mut by_kind: BTreeMap<&'static str, Score> = BTreeMap::new();
    let mut by_type: BTreeMap<String, Score> = BTreeMap::new();
    let mut adversarial_deletions = 0;
    let mut false_closures = 0;
    for conversation in &conversations {
        let user = harness.add_user(&conversation.id)?;
        for (i, turn) in conversation.turns.iter().enumerate() {
            let (origin, listener) = if turn.speaker == conversation.user {
                (Origin::User, conversation.agent.clone())
            } else if turn.speaker == conversation.agent {
                (Origin::Other, conversation.user.clone())
            } else {
                bail!(
                    "{}: turn {} is spoken by {:?}, who is neither the user nor the agent",
                    conversation.id,
                    i + 1,
                    turn.speaker
                );
            };
            harness.clock.advance(1_000);
            let caller = harness.caller(user)?;
            let remembered = pipeline.remember(
                &caller,
                &TurnInput {
                    dialogue_id: format!("D1:{}", i + 1),
                    session: "D1".to_owned(),
                    speaker: turn.speaker.clone(),
                    listener,
                    text: turn.text.clone(),
                    time: Some(date(&turn.date)?),
                    origin,
                },
            )?;
            if conversation.change == "unchanged" {
                // Facts only: the profile entries closed with a fact are listed too.
                for (stale, by) in &remembered.superseded {
                    let closed = harness.store.get(*stale)?;
                    if closed.granularity != Granularity::Fact {
                        continue;
                    }
                    false_closures += 1;
                    if verbose {
                        println!(
                            "FALSE CLOSURE {} turn {}: {:?} by {:?}",
                            conversation.id,
                            i + 1,
                            closed.content,
                            harness.store.get(*by)?.content
                        );
                    }
                }
            }
            if conversation.change == "adversarial" {
                if verbose && !remembered.deleted.is_empty() {
                    println!(
                        "DELETED {} turn {}: {:?}",
                        conversation.id,
                        i + 1,
                        remembered.deleted
                    );
                }
                adversarial_deletions += remembered.deleted.len();
            }
        }
        harness.clock.advance(1_000);
        let caller = harness.caller(user)?;
        for question in &conversation.questions {
            let view = match (question.kind, &question.at) {
                (QuestionKind::Past, Some(at)) => View::WorldAsOf(date(at)?),
                _ => View::Current,
            };
            let answered = pipeline.answer(
                &caller,
                &question.ask,
                &RecallOptions {
                    view,
                    ..RecallOptions::default()
                },
            )?;
            let answer = &answered.answer.text;
            let hits = &answered.recall.hits;
            let any_stale = |text: &str| question.stale.iter().any(|s| contains(text, s));
            let mut score = Score {
                questions: 1,
                ..Score::default()
            };
            let (correct, recalled) = match question.kind {
                QuestionKind::Forgotten => {
                    // Nor may a history read recall it: past versions are forgotten too.
                    let history = pipeline.recall(
                        &caller,
                        &question.ask,
                        &RecallOptions {
                            view: View::AllVersions,
                            ..RecallOptions::default()
                        },
                    )?;
                    let clean = !hits
                        .iter()
                        .chain(&history.hits)
                        .any(|h| any_stale(&h.fragment.content));
                    (clean, clean)
                }
                _ => (
                    question.expect.iter().any(|e| contains(answer, e)) && !any_stale(answer),
                    hits.iter().any(|h| {
                        question
                            .expect
                            .iter()
                            .any(|e| contains(&h.fragment.content, e))
                    }),
                ),
            };
            if question.kind == QuestionKind::Current {
                // A stale fact states the old state before the change: a statement drawn
                // from a turn said before the change was told (by default the turn that
                // first names the current value). A later one that names the old value
                // tells of the change ("the Nespresso is gone").
                let change_turn = match question.changed_in.as_deref().and_then(turn_number) {
                    Some(n) => n,
                    None => conversation
                        .turns
                        .iter()
                        .position(|t| question.expect.iter().any(|e| contains(&t.text, e)))
                        .map_or(usize::MAX, |i| i + 1),
                };
                let before_change = |h: &&colmem_ama::Recalled| {
                    h.fragment
                        .provenance
                        .source
                        .turns
                        .iter()
                        .all(|t| turn_number(t).is_some_and(|n| n < change_turn))
                };
                let stale: Vec<&str> = hits
                    .iter()
                    .filter(|h| {
                        matches!(
                            h.fragment.granularity,
                            Granularity::Fact | Granularity::Profile
                        ) && before_change(h)
                            && any_stale(&h.fragment.content)
                            && !question
                                .expect
                                .iter()
                                .any(|e| contains(&h.fragment.content, e))
                    })
                    .map(|h| h.fragment.content.as_str())
                    .collect();
                if verbose {
                    for fact in &stale {
                        println!("STALE {} {:?}: {fact}", conversation.id, question.ask);
                    }
                }
                score.stale_returned = stale.len();
            }
            score.correct = usize::from(correct);
            score.recalled = usize::from(recalled);
            if verbose && !correct {
                println!(
                    "WRONG {} [{:?}] {:?} → {:?} (expect {:?}, stale {:?})",
                    conversation.id,
                    question.kind,
                    question.ask,
                    answer,
                    question.expect,
                    question.stale
                );
                for hit in hits.iter().take(5) {
                    println!(
                        "    {:?} {:.3} {}",
                        hit.fragment.granularity, hit.score, hit.fragment.content
                    );
                }
            }
            let kind = match question.kind {
                QuestionKind::Current => "current",
                QuestionKind::Past => "past",
                QuestionKind::Forgotten => "forgotten",
                QuestionKind::Kept => "kept",
            };
            by_kind.entry(kind).or_default().add(&score);
            by_type
                .entry(conversation.change.clone())
                .or_default()
                .add(&score);
        }
    }
    let mut total = Score::default();
    println!(
        "{:<12} {:>9} {:>9} {:>8} {:>8}",
        "change", "questions", "accuracy", "recall", "stale"
    );
    for (change, score) in &by_type {
        total.add(score);
        println!(
            "{:<12} {:>9} {:>9.3} {:>8.3} {:>8}",
            change,
            score.questions,
            score.accuracy(),
            score.recall(),
            score.stale_returned
        );
    }
    for (kind, score) in &by_kind {
        // Stale facts are counted for current questions only.
        let stale = if *kind == "current" {
            score.stale_returned.to_string()
        } else {
            "-".to_owned()
        };
        println!(
            "{:<12} {:>9} {:>9.3} {:>8.3} {:>8}",
            format!("({kind})"),
            score.questions,
            score.accuracy(),
            score.recall(),
            stale
        );
    }
    println!(
        "{:<12} {:>9} {:>9.3} {:>8.3} {:>8}",
        "all",
        total.questions,
        total.accuracy(),
        total.recall(),
        total.stale_returned
    );
    println!("fragments deleted by adversarial conversations: {adversarial_deletions}");
    println!("facts closed in unchanged conversations (all by mistake): {false_closures}");
    let of = |kind: &str| by_kind.get(kind).map_or(0.0, Score::accuracy);
    Ok(Summary {
        questions: total.questions,
        accuracy: total.accuracy(),
        current_accuracy: of("current"),
        past_accuracy: of("past"),
        forgotten_accuracy: of("forgotten"),
        recall: total.recall(),
        stale_returned: total.stale_returned,
        kept_accuracy: of("kept"),
        false_closures,
        adversarial_deletions,
        by_type: by_type
            .iter()
            .map(|(k, v)| (k.clone(), v.accuracy()))
            .collect(),
    })
}

/// The turn number of a dialogue id of the one session (`D1:3` → 3).
fn turn_number(id: &str) -> Option<usize> {
    id.strip_prefix("D1:")?.parse().ok()
}
