//! `cargo xtask comam --data PATH --group 8`: CoMAM evaluation of the AMA pipeline on
//! LoCoMo — trajectories, local and global rewards, NDCG credit assignment, the JSONL
//! export for a GRPO trainer, and a training-free choice of role configurations.
//!
//! Every conversation is ingested as its own user (dialogue turns only, as in
//! `eval locomo`) once per *extraction* configuration of a small seeded catalogue. Each
//! question of categories 1–4 with evidence is then run under G variants, each a
//! (extraction, profile, retrieval) triple drawn from the catalogues with a seeded
//! generator; variant 0 is always the default configuration. A variant is one
//! trajectory of three steps:
//!
//! - *extraction*: the facts the constructor drew from the question's evidence turns;
//!   local reward = coverage of the evidence turns' words by those facts' words
//!   (`α·|M∩E|/|E| + (1−α)·|M∩E|/|M∪E|`, α = 0.8);
//! - *profile*: the profile entries kept by the variant's rubric threshold (the others
//!   are hidden from retrieval); local reward = the offline rubric heuristic
//!   ([`RubricHeuristic`]) over the kept entries;
//! - *retrieval*: the distinct source turns of the first `k` hits, `k` being the
//!   retriever's dynamic k; local reward = `β·recall + (1−β)·Jaccard` against the
//!   evidence turns, β = 0.2.
//!
//! The global reward is 1 when the answer is correct, else 0. The offline answerer
//! (an evidence span of the top fragments) rarely matches LoCoMo's gold phrasing, so an
//! answer counts as correct when its token F1 against the gold answer reaches 0.5 *or*
//! when every evidence turn is among the first 10 distinct source turns of the context
//! it was drawn from (an answerer reading that context has all it needs).
//!
//! Credit per group is `colmem_eval::credit` (NDCG consistency, softmax, `r_final`);
//! records go to `target/comam/groups.jsonl` (see docs/comam.md) and are validated by
//! re-reading. The best catalogue entry per role is the one with the highest mean
//! `r_final` of that role over the trajectories of the first `--train` conversations;
//! evidence recall@10 on the other conversations is then reported for the default
//! configuration (before) and the chosen one (after).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result, ensure};
use colmem_ama::{
    Answerer, ConstructorConfig, EvidenceSpan, JudgeConfig, OfflineConstructor, OfflineJudge,
    OfflineRetriever, Pipeline, PipelineConfig, RecallOptions, RetrieverConfig, Roles,
};
use colmem_core::{Fragment, FragmentId, Granularity, Timestamp, UserId};
use colmem_eval::credit::{PerRole, Role, final_rewards};
use colmem_eval::locomo::{self, Conversation, Question};
use colmem_eval::metrics::{normalize_answer, recall_at_k};
use colmem_eval::reward::{
    ProfileJudge, RubricHeuristic, extraction_reward, global_reward, retrieval_reward,
};
use colmem_eval::trajectory::{Action, Step, TrainingRecord, Trajectory, score_group, write_jsonl};
use colmem_index::FusionConfig;
use colmem_llm::{ApproxTokenCounter, OfflineConfig, OfflineEmbedder, TokenCounter, Usage};
use serde::Serialize;

use crate::ama_harness::Harness;
use crate::eval_locomo::{CONTEXT_FRAGMENTS, FETCH, mean, ranked_turns, turns};

/// Arguments of `comam`.
#[derive(clap::Args, Debug)]
pub struct ComamArgs {
    /// The LoCoMo JSON file (e.g. ../shared/data/locomo/locomo-dev.json).
    #[arg(long)]
    pub data: PathBuf,
    /// G: variants (sampled role configurations) per question.
    #[arg(long, default_value_t = 8)]
    pub group: usize,
    /// Seed of the retrieval catalogue and of the variant draws.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// How many leading conversations the configurations are chosen on; recall is
    /// reported on the others only.
    #[arg(long, default_value_t = 3)]
    pub train: usize,
    /// Only the first N conversations.
    #[arg(long)]
    pub conversations: Option<usize>,
    /// Where the JSONL groups go [default: target/comam/groups.jsonl].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Weight of the vector signal in rank fusion (the offline hash embedder is a weaker
    /// signal than BM25).
    #[arg(long, default_value_t = OfflineEmbedder::FUSION_WEIGHT)]
    pub vector_weight: f64,
    /// Print one JSON object as the last line.
    #[arg(long)]
    pub json: bool,
}

/// The token F1 from which an answer counts as correct.
const F1_CORRECT: f64 = 0.5;
/// The cut of evidence recall (distinct source turns), as in `eval locomo`.
const RECALL_K: usize = 10;
/// How many retrieval configurations the catalogue holds (the default included).
const RETRIEVAL_PRESETS: usize = 8;

/// The profile role's setting: which profile entries it keeps.
#[derive(Clone, Copy, PartialEq, Debug, Serialize)]
pub(crate) struct ProfileConfig {
    /// Whether profile entries are used at all.
    enabled: bool,
    /// Entries whose rubric score is below this are dropped (hidden from retrieval).
    min_rubric: f64,
}

/// The retrieval role's setting: the retriever, the judge, the rounds and the
/// granularity choice.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub(crate) struct RetrievalConfig {
    retriever: RetrieverConfig,
    judge: JudgeConfig,
    rounds: usize,
    /// `None` follows the retriever's route; otherwise these granularities together.
    granularities: Option<Vec<Granularity>>,
}

/// The configurations variants are drawn from; entry 0 of each is the default.
pub(crate) struct Catalogue {
    extraction: Vec<ConstructorConfig>,
    profile: Vec<ProfileConfig>,
    retrieval: Vec<RetrievalConfig>,
}

impl Catalogue {
    /// Four extraction settings (each one ingestion), four profile thresholds, and the
    /// default retrieval plus seeded draws from a grid of retriever, judge, round and
    /// granularity settings.
    pub(crate) fn new(seed: u64) -> Self {
        let base = ConstructorConfig::default();
        let extraction = vec![
            base,
            ConstructorConfig {
                episode_window: 6,
                min_fact_words: 3,
                topic_shift_overlap: 0.08,
                ..base
            },
            ConstructorConfig {
                episode_window: 20,
                min_fact_words: 5,
                topic_shift_overlap: 0.02,
                ..base
            },
            ConstructorConfig {
                min_fact_words: 7,
                summary_sentences: 2,
                ..base
            },
        ];
        let profile = vec![
            ProfileConfig {
                enabled: true,
                min_rubric: 0.0,
            },
            ProfileConfig {
                enabled: true,
                min_rubric: 0.5,
            },
            ProfileConfig {
                enabled: true,
                min_rubric: 0.75,
            },
            ProfileConfig {
                enabled: false,
                min_rubric: 0.0,
            },
        ];
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut retrieval = vec![RetrievalConfig {
            retriever: RetrieverConfig::default(),
            judge: JudgeConfig::default(),
            rounds: PipelineConfig::default().rounds,
            granularities: None,
        }];
        let granularity_choices: [Option<Vec<Granularity>>; 3] = [
            None,
            Some(vec![Granularity::RawTurn, Granularity::Fact]),
            Some(vec![
                Granularity::RawTurn,
                Granularity::Fact,
                Granularity::Episode,
                Granularity::Profile,
            ]),
        ];
        while retrieval.len() < RETRIEVAL_PRESETS {
            let pick = |rng: &mut fastrand::Rng, values: &[f64]| values[rng.usize(..values.len())];
            let k_base = [6usize, 10, 15][rng.usize(..3)];
            let candidate = RetrievalConfig {
                retriever: RetrieverConfig {
                    k_base,
                    k_min: k_base.min(RetrieverConfig::default().k_min),
                    episode_threshold: pick(&mut rng, &[0.35, 0.45, 0.6]),
                    raw_threshold: pick(&mut rng, &[0.3, 0.4, 0.55]),
                    ..RetrieverConfig::default()
                },
                judge: JudgeConfig {
                    relevant_coverage: pick(&mut rng, &[0.3, 0.5, 0.7]),
                    enough: rng.usize(1..=3),
                    ..JudgeConfig::default()
                },
                rounds: rng.usize(0..=2),
                granularities: granularity_choices[rng.usize(..3)].clone(),
            };
            if !retrieval.contains(&candidate) {
                retrieval.push(candidate);
            }
        }
        Catalogue {
            extraction,
            profile,
            retrieval,
        }
    }
}

/// One variant: an index into each catalogue.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
pub(crate) struct Variant {
    extraction: usize,
    profile: usize,
    retrieval: usize,
}

impl Variant {
    const DEFAULT: Variant = Variant {
        extraction: 0,
        profile: 0,
        retrieval: 0,
    };

    fn index(&self, role: Role) -> usize {
        match role {
            Role::Extraction => self.extraction,
            Role::Profile => self.profile,
            Role::Retrieval => self.retrieval,
        }
    }
}

/// The G variants of question `question` (a running number): the default first, then
/// seeded draws.
fn variants(catalogue: &Catalogue, seed: u64, question: u64, g: usize) -> Vec<Variant> {
    let mut rng = fastrand::Rng::with_seed(seed ^ question.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut out = vec![Variant::DEFAULT];
    while out.len() < g {
        out.push(Variant {
            extraction: rng.usize(..catalogue.extraction.len()),
            profile: rng.usize(..catalogue.profile.len()),
            retrieval: rng.usize(..catalogue.retrieval.len()),
        });
    }
    out
}

/// A profile entry with its rubric score.
struct ProfileEntry {
    id: FragmentId,
    content: String,
    rubric: f64,
}

/// One conversation as one extraction configuration stored it.
struct Ingested {
    user: UserId,
    /// Current facts, with their source turns.
    facts: Vec<Fragment>,
    profile: Vec<ProfileEntry>,
    /// Milliseconds the write path spent per turn.
    ms_per_turn: f64,
}

/// A memory built under one extraction configuration, every conversation in it.
struct Memory {
    harness: Harness,
    conversations: Vec<Ingested>,
}

fn ingest(
    conversations: &[Conversation],
    constructor: ConstructorConfig,
    fusion: FusionConfig,
) -> Result<Memory> {
    let embedder = Arc::new(OfflineEmbedder::new(OfflineConfig::default())?);
    let start = Timestamp::parse("2026-01-01T00:00:00Z")?;
    let mut harness = Harness::new(embedder, start, fusion)?;
    let pipeline = harness.pipeline(roles(constructor, None), PipelineConfig::default());
    let mut out = Vec::new();
    for conversation in conversations {
        let user = harness.add_user(&conversation.sample_id)?;
        let inputs = turns(conversation);
        let texts: HashMap<String, String> = inputs
            .iter()
            .map(|t| (t.dialogue_id.clone(), t.text.clone()))
            .collect();
        let began = Instant::now();
        let mut written = Vec::new();
        let mut session: Option<String> = None;
        for turn in &inputs {
            harness.clock.advance(1_000);
            let caller = harness.caller(user)?;
            if let Some(previous) = session.as_deref().filter(|s| *s != turn.session) {
                written.extend(pipeline.close_episode(&caller, previous)?);
            }
            session = Some(turn.session.clone());
            written.extend(pipeline.remember(&caller, turn)?.written);
        }
        if let Some(last) = &session {
            written.extend(pipeline.close_episode(&harness.caller(user)?, last)?);
        }
        let ms_per_turn = began.elapsed().as_secs_f64() * 1e3 / inputs.len().max(1) as f64;
        let mut facts = Vec::new();
        let mut profile = Vec::new();
        for id in written {
            let fragment = harness.store.get(id)?;
            if fragment.superseded_at.is_some() || fragment.deleted_at.is_some() {
                continue;
            }
            match fragment.granularity {
                Granularity::Fact => facts.push(fragment),
                Granularity::Profile => {
                    let source: Vec<String> = fragment
                        .provenance
                        .source
                        .turns
                        .iter()
                        .filter_map(|t| texts.get(t).cloned())
                        .collect();
                    let (rubric, _) =
                        RubricHeuristic.score(std::slice::from_ref(&fragment.content), &source)?;
                    profile.push(ProfileEntry {
                        id: fragment.id,
                        content: fragment.content,
                        rubric,
                    });
                }
                _ => {}
            }
        }
        out.push(Ingested {
            user,
            facts,
            profile,
            ms_per_turn,
        });
    }
    harness.clock.advance(1_000);
    pipeline.index().catch_up(harness.store.as_ref())?;
    Ok(Memory {
        harness,
        conversations: out,
    })
}

fn roles(constructor: ConstructorConfig, retrieval: Option<&RetrievalConfig>) -> Roles {
    let mut roles = Roles::offline();
    roles.constructor = Arc::new(OfflineConstructor::new(constructor));
    if let Some(r) = retrieval {
        roles.retriever = Arc::new(OfflineRetriever::new(r.retriever));
        roles.judge = Arc::new(OfflineJudge::new(r.judge));
    }
    roles
}

/// The words of a text, normalised as answers are (lowercase, no punctuation or articles).
fn word_set(texts: impl IntoIterator<Item = impl AsRef<str>>) -> Vec<String> {
    let set: HashSet<String> = texts
        .into_iter()
        .flat_map(|t| {
            normalize_answer(t.as_ref())
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    let mut words: Vec<String> = set.into_iter().collect();
    words.sort();
    words
}

fn usage(prompt: &str, output: &str) -> Usage {
    let counter = ApproxTokenCounter;
    Usage {
        prompt_tokens: counter.count(prompt) as u64,
        completion_tokens: counter.count(output) as u64,
    }
}

/// What one retrieval run returned.
struct Retrieved {
    /// Distinct source turns of the whole ranking.
    ranked: Vec<String>,
    /// Distinct source turns of the first k hits (the retriever's dynamic k).
    at_k: Vec<String>,
    /// Hit ids, in order, up to k.
    ids: Vec<String>,
    answer: String,
    k: usize,
    rewritten: String,
}

/// Recalls with a retrieval configuration, hiding profile entries the profile role dropped.
fn retrieve(
    pipeline: &Pipeline,
    memory: &Memory,
    ingested: &Ingested,
    retrieval: &RetrievalConfig,
    profile: &ProfileConfig,
    question: &str,
) -> Result<Retrieved> {
    let caller = memory.harness.caller(ingested.user)?;
    let options = RecallOptions {
        k: Some(FETCH),
        granularities: retrieval.granularities.clone(),
        ..RecallOptions::default()
    };
    let recall = pipeline.recall(&caller, question, &options)?;
    let hidden: HashSet<FragmentId> = ingested
        .profile
        .iter()
        .filter(|p| !profile.enabled || p.rubric < profile.min_rubric)
        .map(|p| p.id)
        .collect();
    let fragments: Vec<Fragment> = recall
        .hits
        .into_iter()
        .map(|h| h.fragment)
        .filter(|f| !hidden.contains(&f.id))
        .collect();
    let k = recall.plan.k.max(1);
    let context: Vec<&Fragment> = fragments.iter().take(CONTEXT_FRAGMENTS).collect();
    let answer = EvidenceSpan
        .answer(&recall.plan.rewritten, &context, &[])?
        .text;
    Ok(Retrieved {
        ranked: ranked_turns(fragments.iter()),
        at_k: ranked_turns(fragments.iter().take(k)),
        ids: fragments.iter().take(k).map(|f| f.id.to_string()).collect(),
        answer,
        k,
        rewritten: recall.plan.rewritten,
    })
}

/// The settings of one evaluation.
pub(crate) struct Settings {
    pub(crate) group: usize,
    pub(crate) seed: u64,
    pub(crate) train: usize,
    pub(crate) fusion: FusionConfig,
}

/// What an evaluation produced.
pub(crate) struct Outcome {
    pub(crate) records: Vec<TrainingRecord>,
    /// Credit weights, mean over groups.
    pub(crate) credit: PerRole,
    pub(crate) groups: usize,
    pub(crate) chosen: Variant,
    pub(crate) recall_before: f64,
    pub(crate) recall_after: f64,
    /// Recall@10 with only one role's choice applied (the others at their defaults).
    pub(crate) recall_role_alone: PerRole,
    /// Credit weights, mean over the groups whose global rewards differ.
    pub(crate) informative_credit: PerRole,
    /// How many groups those are.
    pub(crate) informative_groups: usize,
    pub(crate) held_out_questions: usize,
    pub(crate) catalogue: Catalogue,
}

fn questions(conversation: &Conversation) -> impl Iterator<Item = &Question> {
    conversation
        .questions
        .iter()
        .filter(|q| (1..=4).contains(&q.category) && !q.evidence.is_empty())
}

/// Runs the groups, assigns credit, chooses configurations and measures recall.
pub(crate) fn evaluate(conversations: &[Conversation], settings: &Settings) -> Result<Outcome> {
    ensure!(settings.group >= 2, "--group needs at least 2 variants");
    ensure!(
        settings.train >= 1 && conversations.len() > settings.train,
        "{} conversations leave none held out after --train {}: lower --train",
        conversations.len(),
        settings.train
    );
    let catalogue = Catalogue::new(settings.seed);
    let memories: Vec<Memory> = catalogue
        .extraction
        .iter()
        .map(|c| ingest(conversations, *c, settings.fusion))
        .collect::<Result<_>>()?;
    // One pipeline per (extraction, retrieval) pair.
    let pipelines: Vec<Vec<Pipeline>> = memories
        .iter()
        .zip(&catalogue.extraction)
        .map(|(m, e)| {
            catalogue
                .retrieval
                .iter()
                .map(|r| {
                    m.harness.pipeline(
                        roles(*e, Some(r)),
                        PipelineConfig {
                            rounds: r.rounds,
                            ..PipelineConfig::default()
                        },
                    )
                })
                .collect()
        })
        .collect();

    let mut records = Vec::new();
    let mut credit_sum = PerRole::default();
    // Groups whose global rewards differ: the others give every role the same credit.
    let mut informative = 0usize;
    let mut informative_sum = PerRole::default();
    let mut groups = 0usize;
    // Training conversations: role → catalogue index → r_final values.
    let mut chosen_sums: HashMap<(Role, usize), Vec<f64>> = HashMap::new();
    let mut running = 0u64;
    for (c, conversation) in conversations.iter().enumerate() {
        let texts: HashMap<String, String> = turns(conversation)
            .into_iter()
            .map(|t| (t.dialogue_id, t.text))
            .collect();
        for (q, question) in questions(conversation).enumerate() {
            running += 1;
            let evidence: Vec<String> = question.evidence.iter().map(|d| d.to_string()).collect();
            let evidence_text: Vec<&str> = evidence
                .iter()
                .filter_map(|e| texts.get(e).map(String::as_str))
                .collect();
            let expected = word_set(&evidence_text);
            let mut group = Vec::new();
            for (v, variant) in variants(&catalogue, settings.seed, running, settings.group)
                .into_iter()
                .enumerate()
            {
                let memory = &memories[variant.extraction];
                let ingested = &memory.conversations[c];
                let profile = &catalogue.profile[variant.profile];
                let retrieval = &catalogue.retrieval[variant.retrieval];

                // Extraction: the facts drawn from the evidence turns.
                let facts: Vec<&str> = ingested
                    .facts
                    .iter()
                    .filter(|f| {
                        f.provenance
                            .source
                            .turns
                            .iter()
                            .any(|t| evidence.contains(t))
                    })
                    .map(|f| f.content.as_str())
                    .collect();
                let extraction_local = extraction_reward(&word_set(&facts), &expected);
                let extraction_state = format!(
                    "Extract atomic facts from these turns:\n{}",
                    evidence
                        .iter()
                        .zip(&evidence_text)
                        .map(|(id, text)| format!("[{id}] {text}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
                let extraction_action = Action {
                    memories: facts.iter().map(|f| (*f).to_owned()).collect(),
                    ..Action::default()
                };

                // Profile: the entries the threshold keeps.
                let kept: Vec<&ProfileEntry> = ingested
                    .profile
                    .iter()
                    .filter(|p| profile.enabled && p.rubric >= profile.min_rubric)
                    .collect();
                let profile_local = mean(&kept.iter().map(|p| p.rubric).collect::<Vec<_>>());
                let profile_state = format!(
                    "Keep the stable preferences among these {} profile entries of {}:\n{}",
                    ingested.profile.len(),
                    conversation.sample_id,
                    ingested
                        .profile
                        .iter()
                        .map(|p| format!("- {}", p.content))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
                let profile_action = Action {
                    memories: kept.iter().map(|p| p.content.clone()).collect(),
                    ..Action::default()
                };

                // Retrieval and the answer.
                let began = Instant::now();
                let got = retrieve(
                    &pipelines[variant.extraction][variant.retrieval],
                    memory,
                    ingested,
                    retrieval,
                    profile,
                    &question.question,
                )?;
                let retrieval_ms = began.elapsed().as_secs_f64() * 1e3;
                let retrieval_local = retrieval_reward(&got.at_k, &evidence);
                let complete =
                    recall_at_k(&got.ranked, &evidence, RECALL_K).is_some_and(|r| r.all >= 1.0);
                let f1_correct = question
                    .answer
                    .as_deref()
                    .is_some_and(|gold| global_reward(&got.answer, gold, F1_CORRECT) >= 1.0);
                let global = if complete || f1_correct { 1.0 } else { 0.0 };
                let retrieval_state = format!(
                    "Question: {}\nRewritten: {}\nk: {}",
                    question.question, got.rewritten, got.k
                );
                let retrieval_action = Action {
                    retrieved: got.ids.clone(),
                    response: Some(got.answer.clone()),
                    ..Action::default()
                };

                let extraction_ms = ingested.ms_per_turn * evidence.len() as f64;
                let steps = vec![
                    step(
                        Role::Extraction,
                        extraction_state,
                        extraction_action,
                        extraction_ms,
                    ),
                    step(Role::Profile, profile_state, profile_action, 0.0),
                    step(
                        Role::Retrieval,
                        retrieval_state,
                        retrieval_action,
                        retrieval_ms,
                    ),
                ];
                group.push(Trajectory {
                    input: format!("{}/q{}", conversation.sample_id, q),
                    variant: v,
                    config: serde_json::json!({
                        "extraction": variant.extraction,
                        "profile": variant.profile,
                        "retrieval": variant.retrieval,
                    }),
                    steps,
                    local: PerRole {
                        extraction: extraction_local,
                        profile: profile_local,
                        retrieval: retrieval_local,
                    },
                    global,
                });
            }
            let (credit, group_records) = score_group(&group)?;
            for role in Role::ALL {
                let w = credit.weights.get(role);
                match role {
                    Role::Extraction => credit_sum.extraction += w,
                    Role::Profile => credit_sum.profile += w,
                    Role::Retrieval => credit_sum.retrieval += w,
                }
            }
            groups += 1;
            if group.iter().any(|t| t.global != group[0].global) {
                informative += 1;
                for role in Role::ALL {
                    let w = credit.weights.get(role);
                    match role {
                        Role::Extraction => informative_sum.extraction += w,
                        Role::Profile => informative_sum.profile += w,
                        Role::Retrieval => informative_sum.retrieval += w,
                    }
                }
            }
            if c < settings.train {
                for t in &group {
                    let variant: Variant =
                        serde_json::from_value::<VariantIndices>(t.config.clone())
                            .map(VariantIndices::into_variant)?;
                    let finals = final_rewards(&t.local, t.global, &credit);
                    for role in Role::ALL {
                        chosen_sums
                            .entry((role, variant.index(role)))
                            .or_default()
                            .push(finals.get(role));
                    }
                }
            }
            records.extend(group_records);
        }
    }
    ensure!(groups > 0, "no question of categories 1–4 has evidence");
    let credit = PerRole::from_fn(|r| credit_sum.get(r) / groups as f64);
    let informative_credit =
        PerRole::from_fn(|r| informative_sum.get(r) / informative.max(1) as f64);

    // Training-free choice: the catalogue entry with the best mean r_final per role.
    let best = |role: Role, entries: usize| -> usize {
        (0..entries)
            .filter_map(|i| chosen_sums.get(&(role, i)).map(|v| (i, mean(v))))
            .fold(
                (0usize, f64::MIN),
                |acc, (i, m)| {
                    if m > acc.1 { (i, m) } else { acc }
                },
            )
            .0
    };
    let chosen = Variant {
        extraction: best(Role::Extraction, catalogue.extraction.len()),
        profile: best(Role::Profile, catalogue.profile.len()),
        retrieval: best(Role::Retrieval, catalogue.retrieval.len()),
    };

    // Held-out recall@10: the default, the choice, and the choice of one role alone.
    let only = |role: Role| {
        let mut v = Variant::DEFAULT;
        match role {
            Role::Extraction => v.extraction = chosen.extraction,
            Role::Profile => v.profile = chosen.profile,
            Role::Retrieval => v.retrieval = chosen.retrieval,
        }
        v
    };
    let measured = [
        Variant::DEFAULT,
        chosen,
        only(Role::Extraction),
        only(Role::Profile),
        only(Role::Retrieval),
    ];
    let mut recall: Vec<Vec<f64>> = measured.iter().map(|_| Vec::new()).collect();
    for (c, conversation) in conversations.iter().enumerate().skip(settings.train) {
        for question in questions(conversation) {
            let evidence: Vec<String> = question.evidence.iter().map(|d| d.to_string()).collect();
            for (variant, out) in measured.iter().zip(recall.iter_mut()) {
                let memory = &memories[variant.extraction];
                let got = retrieve(
                    &pipelines[variant.extraction][variant.retrieval],
                    memory,
                    &memory.conversations[c],
                    &catalogue.retrieval[variant.retrieval],
                    &catalogue.profile[variant.profile],
                    &question.question,
                )?;
                if let Some(r) = recall_at_k(&got.ranked, &evidence, RECALL_K) {
                    out.push(r.fraction);
                }
            }
        }
    }
    Ok(Outcome {
        records,
        credit,
        groups,
        chosen,
        informative_credit,
        informative_groups: informative,
        recall_before: mean(&recall[0]),
        recall_after: mean(&recall[1]),
        recall_role_alone: PerRole {
            extraction: mean(&recall[2]),
            profile: mean(&recall[3]),
            retrieval: mean(&recall[4]),
        },
        held_out_questions: recall[0].len(),
        catalogue,
    })
}

#[derive(serde::Deserialize)]
struct VariantIndices {
    extraction: usize,
    profile: usize,
    retrieval: usize,
}

impl VariantIndices {
    fn into_variant(self) -> Variant {
        Variant {
            extraction: self.extraction,
            profile: self.profile,
            retrieval: self.retrieval,
        }
    }
}

fn step(role: Role, state: String, action: Action, elapsed_ms: f64) -> Step {
    let usage = usage(&state, &action.as_output());
    Step {
        role,
        state,
        action,
        elapsed_ms,
        usage,
    }
}

/// Writes the records and checks the file by reading it back: every line a record,
/// advantages centred within each (group, role).
pub(crate) fn write_and_validate(records: &[TrainingRecord], path: &Path) -> Result<usize> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = BufWriter::new(file);
    write_jsonl(records, &mut out)?;
    out.flush()?;
    drop(out);

    let reader = BufReader::new(File::open(path)?);
    let mut by_group: HashMap<(String, Role), Vec<f64>> = HashMap::new();
    let mut lines = 0usize;
    for (n, line) in reader.lines().enumerate() {
        let line = line?;
        let record: TrainingRecord = serde_json::from_str(&line)
            .with_context(|| format!("{} line {} is not a record", path.display(), n + 1))?;
        ensure!(
            record.reward.is_finite() && record.advantage.is_finite(),
            "{} line {}: reward and advantage must be finite",
            path.display(),
            n + 1
        );
        by_group
            .entry((record.group, record.role))
            .or_default()
            .push(record.advantage);
        lines += 1;
    }
    ensure!(
        lines == records.len(),
        "{} holds {lines} lines for {} records",
        path.display(),
        records.len()
    );
    for ((group, role), adv) in &by_group {
        let m = mean(adv);
        let var = adv.iter().map(|a| (a - m).powi(2)).sum::<f64>() / adv.len() as f64;
        ensure!(
            m.abs() < 1e-6 && (var < 1e-12 || (var - 1.0).abs() < 1e-6),
            "advantages of {group}/{} are not normalised (mean {m}, variance {var})",
            role.as_str()
        );
    }
    Ok(lines)
}

#[derive(Serialize)]
struct Summary {
    credit: PerRole,
    recall_at_10_before: f64,
    recall_at_10_after: f64,
    groups: usize,
}

/// Runs the command: prints the credit, the choice and the before/after recall.
pub fn run(args: &ComamArgs) -> Result<()> {
    let mut conversations =
        locomo::load(&args.data).with_context(|| format!("loading {}", args.data.display()))?;
    if let Some(n) = args.conversations {
        conversations.truncate(n);
    }
    let settings = Settings {
        group: args.group,
        seed: args.seed,
        train: args.train,
        fusion: FusionConfig {
            vector_weight: args.vector_weight,
            ..FusionConfig::default()
        },
    };
    let began = Instant::now();
    let outcome = evaluate(&conversations, &settings)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| crate::repo_root().join("target/comam/groups.jsonl"));
    let lines = write_and_validate(&outcome.records, &out)?;

    println!(
        "CoMAM on LoCoMo: {} conversations ({} for the choice), {} groups of {} variants, {:.1} s",
        conversations.len(),
        settings.train,
        outcome.groups,
        settings.group,
        began.elapsed().as_secs_f64()
    );
    println!("{lines} records written to {} and re-read", out.display());
    println!("credit weights (mean over groups):");
    for role in Role::ALL {
        println!("  {:<10} {:.4}", role.as_str(), outcome.credit.get(role));
    }
    let c = &outcome.catalogue;
    println!(
        "credit weights over the {} groups whose global rewards differ: extraction {:.4}, profile {:.4}, retrieval {:.4}",
        outcome.informative_groups,
        outcome.informative_credit.extraction,
        outcome.informative_credit.profile,
        outcome.informative_credit.retrieval
    );
    println!("chosen on the first {} conversations:", settings.train);
    println!(
        "  extraction #{}: {}",
        outcome.chosen.extraction,
        serde_json::to_string(&c.extraction[outcome.chosen.extraction])?
    );
    println!(
        "  profile    #{}: {}",
        outcome.chosen.profile,
        serde_json::to_string(&c.profile[outcome.chosen.profile])?
    );
    println!(
        "  retrieval  #{}: {}",
        outcome.chosen.retrieval,
        serde_json::to_string(&c.retrieval[outcome.chosen.retrieval])?
    );
    println!(
        "evidence recall@10 on the {} held-out questions: before {:.4}, after {:.4}",
        outcome.held_out_questions, outcome.recall_before, outcome.recall_after
    );
    println!(
        "  one role's choice alone: extraction {:.4}, profile {:.4}, retrieval {:.4}",
        outcome.recall_role_alone.extraction,
        outcome.recall_role_alone.profile,
        outcome.recall_role_alone.retrieval
    );
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&Summary {
                credit: outcome.credit,
                recall_at_10_before: outcome.recall_before,
                recall_at_10_after: outcome.recall_after,
                groups: outcome.groups,
            })?
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two tiny synthetic conversations (not the licensed data), LoCoMo-shaped.
    fn synthetic() -> Vec<Conversation> {
        let conversation = |id: &str, pet: &str, city: &str| {
            format!(
                r#"{{"sample_id": "{id}", "conversation": {{
                "speaker_a": "Ann", "speaker_b": "Bo",
                "session_1_date_time": "1:56 pm on 1 May, 2023",
                "session_1": [
                    {{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a {pet} named Biscuit last week."}},
                    {{"speaker": "Bo", "dia_id": "D1:2", "text": "That is lovely, how is Biscuit settling in?"}},
                    {{"speaker": "Ann", "dia_id": "D1:3", "text": "I love hiking with Biscuit every weekend in the hills."}}],
                "session_2_date_time": "9:00 am on 9 May, 2023",
                "session_2": [
                    {{"speaker": "Bo", "dia_id": "D2:1", "text": "I am moving to {city} next month for a new job."}},
                    {{"speaker": "Ann", "dia_id": "D2:2", "text": "Congratulations on the new job in {city}!"}}]}},
              "qa": [
                {{"question": "What pet did Ann adopt?", "answer": "a {pet}", "evidence": ["D1:1"], "category": 1}},
                {{"question": "Where is Bo moving?", "answer": "{city}", "evidence": ["D2:1"], "category": 4}},
                {{"question": "What does Ann do on weekends?", "answer": "hiking with Biscuit", "evidence": ["D1:3"], "category": 1}}]}}"#
            )
        };
        let text = format!(
            "[{}, {}]",
            conversation("s1", "dog", "Lisbon"),
            conversation("s2", "cat", "Oslo")
        );
        locomo::parse(&text, "synthetic").unwrap()
    }

    #[test]
    fn comam_exports_valid_jsonl_with_group_normalised_advantages() {
        let conversations = synthetic();
        let settings = Settings {
            group: 4,
            seed: 3,
            train: 1,
            fusion: FusionConfig::default(),
        };
        let outcome = evaluate(&conversations, &settings).unwrap();
        assert_eq!(outcome.groups, 6, "one group per question");
        assert_eq!(
            outcome.records.len(),
            6 * 4 * 3,
            "one record per role per variant"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("comam/groups.jsonl");
        assert_eq!(
            write_and_validate(&outcome.records, &path).unwrap(),
            outcome.records.len()
        );
        // Re-read independently: valid JSON objects with the trainer's fields.
        let text = std::fs::read_to_string(&path).unwrap();
        let mut by_group: HashMap<(String, String), Vec<f64>> = HashMap::new();
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            for field in [
                "group",
                "variant",
                "role",
                "prompt",
                "output",
                "reward",
                "advantage",
            ] {
                assert!(v.get(field).is_some(), "{field} missing in {line}");
            }
            by_group
                .entry((
                    v["group"].as_str().unwrap().to_owned(),
                    v["role"].as_str().unwrap().to_owned(),
                ))
                .or_default()
                .push(v["advantage"].as_f64().unwrap());
        }
        assert_eq!(by_group.len(), 6 * 3);
        for (key, adv) in &by_group {
            assert_eq!(adv.len(), 4, "{key:?}");
            let m = adv.iter().sum::<f64>() / adv.len() as f64;
            let var = adv.iter().map(|a| (a - m).powi(2)).sum::<f64>() / adv.len() as f64;
            assert!(m.abs() < 1e-9, "{key:?} mean {m}");
            assert!(
                var < 1e-12 || (var - 1.0).abs() < 1e-9,
                "{key:?} variance {var}"
            );
        }
        let total = outcome.credit.extraction + outcome.credit.profile + outcome.credit.retrieval;
        assert!((total - 1.0).abs() < 1e-9, "credit weights sum to 1");
        assert!(outcome.held_out_questions == 3);
        assert!((0.0..=1.0).contains(&outcome.recall_before));
        assert!((0.0..=1.0).contains(&outcome.recall_after));
    }

    #[test]
    fn variants_are_seeded_and_start_with_the_default() {
        let catalogue = Catalogue::new(7);
        assert_eq!(catalogue.retrieval.len(), RETRIEVAL_PRESETS);
        let a = variants(&catalogue, 7, 1, 8);
        assert_eq!(a, variants(&catalogue, 7, 1, 8));
        assert_eq!(a[0], Variant::DEFAULT);
        assert_eq!(a.len(), 8);
        assert_ne!(a, variants(&catalogue, 7, 2, 8));
    }
}
