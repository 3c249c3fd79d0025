//! The read path as a pure function over the cards a reader may see: needs-aware
//! scoring, MMR, bounded expansion on the typed graph, coordination, and role-aware
//! composition into a token budget, with a report of every step.

use std::collections::{BTreeMap, BTreeSet};

use colmem_core::{CardSign, FragmentId};
use colmem_llm::TokenCounter;
use serde::{Deserialize, Serialize};

use crate::card::Card;
use crate::error::{Error, Result, in_unit_interval, positive};
use crate::graph::CardGraph;
use crate::roles::precondition_live;
use crate::text::{self, cosine};

/// The task a composition is for.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
pub struct TaskContext {
    /// The task's text.
    pub task: String,
    /// Conditions that hold in this task; a `constrains` edge or a card precondition is
    /// live only when named here.
    #[serde(default)]
    pub live: BTreeSet<String>,
    /// The round of the task stream (for recency).
    #[serde(default)]
    pub round: u32,
}

impl TaskContext {
    /// A task with no live conditions, in round 0.
    pub fn new(task: impl Into<String>) -> Self {
        TaskContext {
            task: task.into(),
            ..TaskContext::default()
        }
    }
}

/// How much a task needs each section of a card, each in `[0, 1]`.
#[derive(Clone, Copy, PartialEq, Debug, Serialize, Deserialize)]
pub struct Needs {
    /// When a strategy applies.
    pub applicability: f32,
    /// What to do, step by step.
    pub plan: f32,
    /// How to carry it out.
    pub execution: f32,
    /// How to check the result.
    pub evaluation: f32,
}

impl Needs {
    /// Every section needed fully.
    pub const ALL: Needs = Needs {
        applicability: 1.0,
        plan: 1.0,
        execution: 1.0,
        evaluation: 1.0,
    };

    /// The share of the needs a card's non-empty sections meet.
    pub fn support(&self, card: &Card) -> f32 {
        let f = &card.fields;
        let present = |s: &str| if s.trim().len() >= 3 { 1.0 } else { 0.0 };
        let pairs = [
            (self.applicability, present(&f.applicability)),
            (self.plan, present(&f.plan)),
            (self.execution, present(&f.execution)),
            (self.evaluation, present(&f.evaluation)),
        ];
        let total: f32 = pairs.iter().map(|p| p.0).sum();
        if total <= 0.0 {
            return 0.0;
        }
        pairs.iter().map(|p| p.0 * p.1).sum::<f32>() / total
    }
}

/// Who reads a section of the composition.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Reads applicability and plans.
    Planner,
    /// Reads executions.
    Executor,
    /// Reads evaluations.
    Evaluator,
}

impl Role {
    /// Every role, in composition order.
    pub const ALL: [Role; 3] = [Role::Planner, Role::Executor, Role::Evaluator];

    fn header(self) -> &'static str {
        match self {
            Role::Planner => "## Planner",
            Role::Executor => "## Executor",
            Role::Evaluator => "## Evaluator",
        }
    }
}

/// The token budget of a composition and its split between roles.
#[derive(Clone, Copy, PartialEq, Debug, Serialize, Deserialize)]
pub struct Budget {
    /// The most tokens the whole composed text may take.
    pub tokens: usize,
    /// The planner section's share of `tokens`.
    pub planner: f32,
    /// The executor section's share.
    pub executor: f32,
    /// The evaluator section's share.
    pub evaluator: f32,
}

impl Budget {
    /// `tokens` split 35% planner, 45% executor, 20% evaluator.
    pub fn new(tokens: usize) -> Self {
        Budget {
            tokens,
            planner: 0.35,
            executor: 0.45,
            evaluator: 0.2,
        }
    }

    /// The most tokens `role`'s section may take.
    pub fn for_role(&self, role: Role) -> usize {
        let share = match role {
            Role::Planner => self.planner,
            Role::Executor => self.executor,
            Role::Evaluator => self.evaluator,
        };
        (self.tokens as f32 * share.clamp(0.0, 1.0)).floor() as usize
    }
}

/// The weights of the needs-aware card score.
#[derive(Clone, Copy, PartialEq, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScoreWeights {
    /// Cosine of the task and the card's trigger embedding.
    pub cosine: f32,
    /// Keyword overlap of the task and the card's triggers (Dice).
    pub keyword: f32,
    /// How well the card's sections meet the task's needs.
    pub support: f32,
    /// The card's credibility.
    pub credibility: f32,
    /// How recent the card is, in rounds.
    pub recency: f32,
}

impl Default for ScoreWeights {
    fn default() -> Self {
        ScoreWeights {
            cosine: 0.45,
            keyword: 0.35,
            support: 0.05,
            credibility: 0.1,
            recency: 0.05,
        }
    }
}

/// Settings of the read path.
#[derive(Clone, Copy, PartialEq, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReadConfig {
    /// The score weights.
    pub weights: ScoreWeights,
    /// Cards scoring below this are not retrieved.
    pub min_score: f32,
    /// How many cards MMR retrieves.
    pub top_k: usize,
    /// MMR's trade-off: 1 is pure relevance, 0 pure diversity.
    pub mmr_lambda: f32,
    /// How many edges expansion may follow from a retrieved card.
    pub hops: usize,
    /// Trigger cosine above which two cards are duplicates for coordination.
    pub duplicate_similarity: f32,
    /// Rounds after which recency halves.
    pub recency_half_life: f32,
    /// A section enters a card's full form when the task needs it at least this much
    /// (execution always does: it carries the card's directives).
    pub section_need: f32,
    /// The most characters of a compact card.
    pub compact_chars: usize,
}

impl Default for ReadConfig {
    fn default() -> Self {
        ReadConfig {
            weights: ScoreWeights::default(),
            min_score: 0.3,
            top_k: 4,
            mmr_lambda: 0.7,
            hops: 2,
            duplicate_similarity: 0.9,
            recency_half_life: 50.0,
            section_need: 0.6,
            compact_chars: 120,
        }
    }
}

impl ReadConfig {
    /// Refuses settings outside their ranges.
    pub fn validate(&self) -> Result<()> {
        let w = &self.weights;
        in_unit_interval(&[
            ("weights.cosine", w.cosine),
            ("weights.keyword", w.keyword),
            ("weights.support", w.support),
            ("weights.credibility", w.credibility),
            ("weights.recency", w.recency),
            ("mmr_lambda", self.mmr_lambda),
            ("min_score", self.min_score),
            ("duplicate_similarity", self.duplicate_similarity),
            ("section_need", self.section_need),
        ])?;
        positive("recency_half_life", self.recency_half_life)?;
        if self.compact_chars == 0 {
            return Err(Error::Config("compact_chars must be at least 1".to_owned()));
        }
        Ok(())
    }
}

/// How a card was composed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    /// Every needed section.
    Full,
    /// One executor line.
    Compact,
}

/// A card in the composition.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct ComposedCard {
    /// The card.
    pub id: FragmentId,
    /// Strategy or warning ("avoid" cue).
    pub sign: CardSign,
    /// Full or compact.
    pub form: Form,
    /// Its score for this task.
    pub quality: f32,
}

/// Why coordination dropped a candidate.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum PruneReason {
    /// It says what a better card already says.
    Duplicate {
        /// The card kept.
        of: FragmentId,
    },
    /// It conflicts with a better card.
    Conflict {
        /// The card kept.
        with: FragmentId,
    },
    /// Its precondition is not live in this task: deferred.
    Deferred {
        /// The precondition.
        precondition: String,
    },
}

/// A candidate coordination dropped.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Pruned {
    /// The card.
    pub id: FragmentId,
    /// Why.
    #[serde(flatten)]
    pub reason: PruneReason,
}

/// What one composition did.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
pub struct CompositionReport {
    /// The cards MMR retrieved, best first.
    pub retrieved: Vec<FragmentId>,
    /// The candidates after expansion (the retrieved ones included), in the order reached.
    pub expanded: Vec<FragmentId>,
    /// The candidates coordination dropped.
    pub pruned: Vec<Pruned>,
    /// Coordinated cards that did not fit the budget even compact.
    pub skipped: Vec<FragmentId>,
    /// Tokens of the composed text.
    pub tokens_used: usize,
    /// The budget.
    pub budget: usize,
}

impl CompositionReport {
    /// The share of expanded candidates that coordination pruned (0 with no candidates).
    pub fn pruned_share(&self) -> f32 {
        if self.expanded.is_empty() {
            0.0
        } else {
            self.pruned.len() as f32 / self.expanded.len() as f32
        }
    }
}

/// A composed set of cards and its text.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Composition {
    /// The text for the agent: a section per role; warnings are "Avoid:" cues.
    pub text: String,
    /// The composed cards, in quality order.
    pub cards: Vec<ComposedCard>,
    /// The task's needs profile.
    pub needs: Needs,
    /// What each step did.
    pub report: CompositionReport,
}

/// The inputs of one composition besides the cards.
#[derive(Debug)]
pub struct ReadInput<'a> {
    /// The task.
    pub task: &'a TaskContext,
    /// The task's embedding.
    pub embedding: &'a [f32],
    /// Its needs profile.
    pub needs: Needs,
    /// The budget.
    pub budget: &'a Budget,
    /// The settings.
    pub config: &'a ReadConfig,
    /// Counts tokens.
    pub counter: &'a dyn TokenCounter,
}

/// The score of each card for the task.
pub fn score_cards(cards: &[Card], input: &ReadInput<'_>) -> BTreeMap<FragmentId, f32> {
    let w = &input.config.weights;
    let task_keywords = text::keywords(&input.task.task);
    cards
        .iter()
        .map(|card| {
            let cos = cosine(input.embedding, &card.embedding).max(0.0);
            let both = card.triggers.intersection(&task_keywords).count() as f32;
            let sizes = (card.triggers.len() + task_keywords.len()) as f32;
            let dice = if sizes > 0.0 { 2.0 * both / sizes } else { 0.0 };
            let age = input.task.round.saturating_sub(card.round) as f32;
            let recency = (-std::f32::consts::LN_2 * age / input.config.recency_half_life).exp();
            let score = w.cosine * cos
                + w.keyword * dice
                + w.support * input.needs.support(card)
                + w.credibility * card.credibility.clamp(0.0, 1.0)
                + w.recency * recency;
            (card.id, score)
        })
        .collect()
}

/// MMR over the cards scoring at least `min_score`: up to `top_k`, best first.
pub fn mmr(
    cards: &[Card],
    scores: &BTreeMap<FragmentId, f32>,
    config: &ReadConfig,
) -> Vec<FragmentId> {
    let score = |c: &Card| scores.get(&c.id).copied().unwrap_or(0.0);
    let mut pool: Vec<&Card> = cards
        .iter()
        .filter(|c| score(c) >= config.min_score)
        .collect();
    pool.sort_by(|a, b| score(b).total_cmp(&score(a)).then(a.id.cmp(&b.id)));
    let mut chosen: Vec<&Card> = Vec::new();
    while chosen.len() < config.top_k && !pool.is_empty() {
        let mut best = 0;
        let mut best_value = f32::NEG_INFINITY;
        for (i, c) in pool.iter().enumerate() {
            let redundancy = chosen
                .iter()
                .map(|s| cosine(&c.embedding, &s.embedding))
                .fold(0.0f32, f32::max);
            let value = config.mmr_lambda * score(c) - (1.0 - config.mmr_lambda) * redundancy;
            if value > best_value {
                best_value = value;
                best = i;
            }
        }
        chosen.push(pool.remove(best));
    }
    chosen.into_iter().map(|c| c.id).collect()
}

/// Runs the read path over `cards` (all of which the reader may see) and `graph`.
pub fn compose(cards: &[Card], graph: &CardGraph, input: &ReadInput<'_>) -> Composition {
    let config = input.config;
    let by_id: BTreeMap<FragmentId, &Card> = cards.iter().map(|c| (c.id, c)).collect();
    let visible: BTreeSet<FragmentId> = by_id.keys().copied().collect();
    let scores = score_cards(cards, input);
    let quality = |id: FragmentId| scores.get(&id).copied().unwrap_or(0.0);

    // 1–3. Score, MMR.
    let retrieved = mmr(cards, &scores, config);

    // 4. Expand along typed edges, within what the reader may see.
    let live = |p: &str| precondition_live(p, &input.task.live);
    let expanded: Vec<FragmentId> = graph
        .expand(&retrieved, &visible, config.hops, &live)
        .into_iter()
        .map(|(id, _)| id)
        .collect();

    // 5. Coordinate, best first.
    let mut order = expanded.clone();
    order.sort_by(|a, b| quality(*b).total_cmp(&quality(*a)).then(a.cmp(b)));
    let mut kept: Vec<&Card> = Vec::new();
    let mut pruned = Vec::new();
    for id in order {
        let Some(&card) = by_id.get(&id) else {
            continue;
        };
        if let Some(p) = card.precondition()
            && !live(&p)
        {
            pruned.push(Pruned {
                id,
                reason: PruneReason::Deferred { precondition: p },
            });
            continue;
        }
        let directives = card.directives();
        // A stored conflict edge, or directives that contradict: cards written by
        // people who could not see each other's have no edge between them.
        if let Some(other) = kept.iter().find(|k| {
            graph.conflicting(k.id, id)
                || k.directives()
                    .iter()
                    .any(|d| directives.iter().any(|e| d.contradicts(e)))
        }) {
            pruned.push(Pruned {
                id,
                reason: PruneReason::Conflict { with: other.id },
            });
            continue;
        }
        if let Some(other) = kept.iter().find(|k| {
            cosine(&k.embedding, &card.embedding) >= config.duplicate_similarity
                || (k.fields.sign == card.fields.sign
                    && !directives.is_empty()
                    && k.directives() == directives)
        }) {
            pruned.push(Pruned {
                id,
                reason: PruneReason::Duplicate { of: other.id },
            });
            continue;
        }
        kept.push(card);
    }

    // 6. Compose into the budget.
    let mut composer = Composer::new(input);
    let mut composed = Vec::new();
    let mut skipped = Vec::new();
    for card in kept {
        let form = if composer.try_add(card, Form::Full) {
            Form::Full
        } else if composer.try_add(card, Form::Compact) {
            Form::Compact
        } else {
            skipped.push(card.id);
            continue;
        };
        composed.push(ComposedCard {
            id: card.id,
            sign: card.fields.sign,
            form,
            quality: quality(card.id),
        });
    }
    let text = composer.render();
    let tokens_used = if text.is_empty() {
        0
    } else {
        input.counter.count(&text)
    };
    Composition {
        text,
        cards: composed,
        needs: input.needs,
        report: CompositionReport {
            retrieved,
            expanded,
            pruned,
            skipped,
            tokens_used,
            budget: input.budget.tokens,
        },
    }
}

/// Builds the role sections line by line, accepting a card only if every section and the
/// whole text stay within the budget.
struct Composer<'a> {
    input: &'a ReadInput<'a>,
    lines: BTreeMap<Role, Vec<String>>,
}

impl<'a> Composer<'a> {
    fn new(input: &'a ReadInput<'a>) -> Self {
        Composer {
            input,
            lines: BTreeMap::new(),
        }
    }

    fn card_lines(&self, card: &Card, form: Form) -> Vec<(Role, String)> {
        let f = &card.fields;
        let cue = match f.sign {
            CardSign::Positive => "Use:",
            CardSign::Negative => "Avoid:",
        };
        let compact = self.input.config.compact_chars;
        if form == Form::Compact {
            return vec![(
                Role::Executor,
                format!("- {cue} {}", text::clip(&f.execution, compact)),
            )];
        }
        let needs = &self.input.needs;
        let threshold = self.input.config.section_need;
        let tag = match f.sign {
            CardSign::Positive => "[strategy]",
            CardSign::Negative => "[avoid]",
        };
        let mut out = Vec::new();
        let mut planner = Vec::new();
        if needs.applicability >= threshold {
            planner.push(format!(
                "applies to {}.",
                f.applicability.trim_end_matches('.')
            ));
        }
        if needs.plan >= threshold {
            planner.push(f.plan.clone());
        }
        if !planner.is_empty() {
            out.push((Role::Planner, format!("- {tag} {}", planner.join(" "))));
        }
        out.push((Role::Executor, format!("- {cue} {}", f.execution)));
        if needs.evaluation >= threshold {
            out.push((Role::Evaluator, format!("- {tag} {}", f.evaluation)));
        }
        out
    }

    fn section(lines: &[String], role: Role) -> String {
        format!("{}\n{}", role.header(), lines.join("\n"))
    }

    fn render_from(lines: &BTreeMap<Role, Vec<String>>) -> String {
        Role::ALL
            .iter()
            .filter_map(|r| {
                lines
                    .get(r)
                    .filter(|l| !l.is_empty())
                    .map(|l| Self::section(l, *r))
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    fn render(&self) -> String {
        Self::render_from(&self.lines)
    }

    fn try_add(&mut self, card: &Card, form: Form) -> bool {
        let mut next = self.lines.clone();
        for (role, line) in self.card_lines(card, form) {
            next.entry(role).or_default().push(line);
        }
        let counter = self.input.counter;
        let budget = self.input.budget;
        let fits_roles = next.iter().all(|(role, lines)| {
            counter.count(&Self::section(lines, *role)) <= budget.for_role(*role)
        });
        if !fits_roles || counter.count(&Self::render_from(&next)) > budget.tokens {
            return false;
        }
        self.lines = next;
        true
    }
}
