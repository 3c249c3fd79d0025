//! The roles of the write and read paths as object-safe traits, and their offline,
//! deterministic implementations.
//!
//! - [`Reflector`]: a failed trajectory → root cause, wrong behaviour, correction,
//!   lesson, and a negative card; uninformative failures are rejected.
//! - [`Aggregator`]: successful trajectories → candidate positive cards.
//! - [`Admitter`]: the reliability and expected utility terms of the admission score
//!   (novelty and recency are computed by the bank from the stored cards).
//! - [`Merger`]: a near-duplicate pair → one card (the bank then clips it to its bounds).
//! - [`RelationJudge`]: the typed edge from one card to another, if any.
//! - [`NeedsProfiler`]: which sections a task needs.
//!
//! The offline implementations read the trajectory's typed decisions and the cards'
//! `use name=value` / `avoid name=value` directives; model-backed ones are in `llm`.

use std::collections::BTreeSet;
use std::fmt;

use colmem_core::{CardFields, CardRelation, CardSign};
use serde::{Deserialize, Serialize};

use crate::card::{Card, CardDraft, card_directives};
use crate::error::Result;
use crate::read::{Needs, TaskContext};
use crate::text::{self, Polarity};
use crate::trajectory::Trajectory;

/// What reflection learned from one failure.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Reflection {
    /// Why the task failed.
    pub root_cause: String,
    /// What the agent did wrong.
    pub wrong_behaviour: String,
    /// What it should have done.
    pub correction: String,
    /// The reusable lesson.
    pub lesson: String,
    /// The negative card that carries the lesson.
    pub card: CardDraft,
}

/// Turns a scored failure into a warning.
pub trait Reflector: Send + Sync + fmt::Debug {
    /// The reflection on `failure`, or `None` when it teaches nothing (a success, an
    /// infrastructure error, an empty trace, no identifiable cause).
    fn reflect(&self, failure: &Trajectory) -> Result<Option<Reflection>>;
}

/// Distils successful trajectories into candidate strategy cards.
pub trait Aggregator: Send + Sync + fmt::Debug {
    /// Candidate positive cards from `successes`.
    fn aggregate(&self, successes: &[&Trajectory]) -> Result<Vec<CardDraft>>;
}

/// The role-dependent terms of the admission score.
#[derive(Clone, Copy, PartialEq, Debug, Serialize, Deserialize)]
pub struct Assessment {
    /// Section coverage, consistency between fields and outcome evidence, in `[0, 1]`.
    pub reliability: f32,
    /// How much using the card is expected to help, in `[0, 1]`.
    pub utility: f32,
}

/// Rates a candidate card for admission.
pub trait Admitter: Send + Sync + fmt::Debug {
    /// The reliability and expected utility of `draft`.
    fn assess(&self, draft: &CardDraft) -> Result<Assessment>;
}

/// Rewrites a stored card and a near-duplicate candidate into one card.
pub trait Merger: Send + Sync + fmt::Debug {
    /// The merged card. It must not concatenate: the bank clips it to its bounds anyway.
    fn merge(&self, existing: &Card, candidate: &CardDraft) -> Result<CardDraft>;
}

/// Decides how one card relates to another.
pub trait RelationJudge: Send + Sync + fmt::Debug {
    /// The edge from `from` to `to` with its weight in `[0, 1]`, if they are related;
    /// `similarity` is the cosine of their trigger embeddings.
    fn relate(
        &self,
        from: &Card,
        to: &Card,
        similarity: f32,
    ) -> Result<Option<(CardRelation, f32)>>;
}

/// Builds a task's needs profile.
pub trait NeedsProfiler: Send + Sync + fmt::Debug {
    /// How much `task` needs each section.
    fn profile(&self, task: &TaskContext) -> Result<Needs>;
}

/// The applicability text for a task's conditions and keywords.
fn applicability(conditions: &BTreeSet<String>, keywords: &[String]) -> String {
    let about = format!("tasks about {}", keywords.join(", "));
    if conditions.is_empty() {
        about
    } else {
        let joined: Vec<&str> = conditions.iter().map(String::as_str).collect();
        format!("{about}; only when {}", joined.join(" and "))
    }
}

/// The most telling keywords of a task: the longest first, then alphabetical.
fn top_keywords(task: &str, n: usize) -> Vec<String> {
    let mut k: Vec<String> = text::keywords(task).into_iter().collect();
    k.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    k.truncate(n);
    k
}

/// Offline reflection: blames the last decision the agent took under uncertainty.
///
/// The trace must mark choices as [`Decision`](crate::Decision)s. The root cause is the
/// last uncertain choice before the wrong result; the correction is its alternative
/// (when there is exactly one), and the warning avoids the choice made. A failure
/// without such a choice, with an empty trace, or with an infrastructure error teaches
/// nothing and is rejected.
#[derive(Clone, Copy, Debug, Default)]
pub struct OfflineReflector;

impl Reflector for OfflineReflector {
    fn reflect(&self, failure: &Trajectory) -> Result<Option<Reflection>> {
        let outcome = &failure.outcome;
        if outcome.success || outcome.infrastructure_error || failure.steps.is_empty() {
            return Ok(None);
        }
        let Some(decision) = failure.uncertain_decisions().last() else {
            return Ok(None);
        };
        let (name, chosen) = (&decision.name, &decision.chosen);
        let keywords = top_keywords(&failure.task, 8);
        let correction = match decision.alternatives.as_slice() {
            [only] => format!("use {name}={only}"),
            many => format!(
                "pick another {name}: {}",
                many.iter()
                    .map(|v| format!("{name}={v}"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        };
        let feedback = if outcome.feedback.trim().is_empty() {
            format!("scored {:.2}", outcome.score)
        } else {
            outcome.feedback.trim().to_owned()
        };
        let fields = CardFields {
            task: text::clip(&failure.task, 160),
            trigger: keywords.join(" "),
            applicability: applicability(&failure.conditions, &keywords),
            plan: format!("before settling {name}, check this warning: avoid {name}={chosen}"),
            execution: format!("avoid {name}={chosen}; {correction} instead"),
            evaluation: format!(
                "a result reached with {name}={chosen} was wrong before ({})",
                text::clip(&feedback, 80)
            ),
            sign: CardSign::Negative,
        };
        Ok(Some(Reflection {
            root_cause: format!(
                "the choice {name}={chosen} (alternatives: {}) led to a wrong result: {feedback}",
                decision.alternatives.join(", ")
            ),
            wrong_behaviour: format!("chose {name}={chosen}"),
            correction,
            lesson: format!(
                "in tasks about {}, avoid {name}={chosen}",
                keywords.join(", ")
            ),
            card: CardDraft {
                triggers: text::keywords(&failure.task),
                fields,
                sources: vec![failure.id.clone()],
                evidence: (1.0 - outcome.score).clamp(0.0, 1.0),
            },
        }))
    }
}

/// Successes grouped by aggregation: their choices, their keywords, the members.
type Group<'a> = (Vec<(String, String)>, BTreeSet<String>, Vec<&'a Trajectory>);

/// Offline aggregation: one strategy card per group of successes that made the same
/// uncertain choices on overlapping tasks (keyword Jaccard at least `overlap`).
#[derive(Clone, Copy, Debug)]
pub struct OfflineAggregator {
    /// The keyword Jaccard above which two successes are grouped.
    pub overlap: f32,
}

impl Default for OfflineAggregator {
    fn default() -> Self {
        OfflineAggregator { overlap: 0.3 }
    }
}

impl Aggregator for OfflineAggregator {
    fn aggregate(&self, successes: &[&Trajectory]) -> Result<Vec<CardDraft>> {
        let mut groups: Vec<Group<'_>> = Vec::new();
        for t in successes
            .iter()
            .filter(|t| t.outcome.success && !t.outcome.infrastructure_error)
        {
            let choices: Vec<(String, String)> = t
                .uncertain_decisions()
                .map(|d| (d.name.clone(), d.chosen.clone()))
                .collect();
            if choices.is_empty() {
                continue;
            }
            let keywords = text::keywords(&t.task);
            match groups
                .iter_mut()
                .find(|(c, k, _)| *c == choices && text::jaccard(k, &keywords) >= self.overlap)
            {
                Some((_, k, members)) => {
                    k.extend(keywords);
                    members.push(t);
                }
                None => groups.push((choices, keywords, vec![t])),
            }
        }
        Ok(groups
            .into_iter()
            .map(|(choices, keywords, members)| {
                let first = members[0];
                let top = top_keywords(&first.task, 8);
                let uses: Vec<String> = choices
                    .iter()
                    .map(|(n, v)| format!("use {n}={v}"))
                    .collect();
                let conditions: BTreeSet<String> = members
                    .iter()
                    .map(|m| m.conditions.clone())
                    .reduce(|a, b| a.intersection(&b).cloned().collect())
                    .unwrap_or_default();
                let mean =
                    members.iter().map(|m| m.outcome.score).sum::<f32>() / members.len() as f32;
                CardDraft {
                    fields: CardFields {
                        task: text::clip(&first.task, 160),
                        trigger: top.join(" "),
                        applicability: applicability(&conditions, &top),
                        plan: format!("settle the open choices first: {}", uses.join(", ")),
                        execution: format!("{} and compute as before", uses.join("; ")),
                        evaluation: format!(
                            "{} similar tasks solved this way scored {:.2} on average",
                            members.len(),
                            mean
                        ),
                        sign: CardSign::Positive,
                    },
                    triggers: keywords,
                    sources: members.iter().map(|m| m.id.clone()).collect(),
                    evidence: mean.clamp(0.0, 1.0),
                }
            })
            .collect())
    }
}

/// Offline admission terms: reliability is the mean of section coverage, consistency
/// (directives present, not contradicting each other, matching the sign) and outcome
/// evidence; utility is higher for actionable cards backed by strong outcomes.
#[derive(Clone, Copy, Debug, Default)]
pub struct OfflineAdmitter;

impl Admitter for OfflineAdmitter {
    fn assess(&self, draft: &CardDraft) -> Result<Assessment> {
        let f = &draft.fields;
        let sections = [
            &f.task,
            &f.trigger,
            &f.applicability,
            &f.plan,
            &f.execution,
            &f.evaluation,
        ];
        let coverage =
            sections.iter().filter(|s| s.trim().len() >= 3).count() as f32 / sections.len() as f32;
        let directives = card_directives(f);
        let self_contradicting = directives
            .iter()
            .enumerate()
            .any(|(i, a)| directives[i + 1..].iter().any(|b| a.contradicts(b)));
        let matches_sign = match f.sign {
            CardSign::Negative => directives.iter().any(|d| d.polarity == Polarity::Avoid),
            CardSign::Positive => directives.iter().any(|d| d.polarity == Polarity::Use),
        };
        let consistency = if directives.is_empty() || self_contradicting {
            0.0
        } else if !matches_sign || draft.triggers.is_empty() {
            0.5
        } else {
            1.0
        };
        let reliability = (coverage + consistency + draft.evidence.clamp(0.0, 1.0)) / 3.0;
        let utility = if directives.is_empty() {
            0.2
        } else {
            0.6 + 0.4 * draft.evidence.clamp(0.0, 1.0)
        };
        Ok(Assessment {
            reliability,
            utility,
        })
    }
}

/// The merge of `candidate` into `existing` with the sections and triggers a merger
/// chose: the sources of both in order, and the better of their evidence.
pub(crate) fn merged(
    existing: &Card,
    candidate: &CardDraft,
    fields: CardFields,
    triggers: BTreeSet<String>,
) -> CardDraft {
    let mut sources = existing.sources.clone();
    sources.extend(
        candidate
            .sources
            .iter()
            .filter(|s| !existing.sources.contains(s))
            .cloned(),
    );
    CardDraft {
        fields,
        triggers,
        sources,
        evidence: existing.credibility.max(candidate.evidence),
    }
}

/// Offline merge: each section comes whole from the better-backed side (never both
/// concatenated); triggers are the union and sources are kept in order (the bank clips both).
#[derive(Clone, Copy, Debug, Default)]
pub struct OfflineMerger;

impl Merger for OfflineMerger {
    fn merge(&self, existing: &Card, candidate: &CardDraft) -> Result<CardDraft> {
        let keep_existing = existing.credibility >= candidate.evidence;
        let fields = if keep_existing {
            existing.fields.clone()
        } else {
            candidate.fields.clone()
        };
        let triggers: BTreeSet<String> = existing
            .triggers
            .union(&candidate.triggers)
            .cloned()
            .collect();
        Ok(merged(existing, candidate, fields, triggers))
    }
}

/// Offline relation judge on lexical signals: contradicting directives conflict; a card
/// with a precondition constrains a related card without one; a strategy that follows
/// a warning's correction satisfies it; agreeing cards of one sign support each other.
#[derive(Clone, Copy, Debug)]
pub struct OfflineRelationJudge {
    /// The least trigger similarity for a `supports`, `satisfies` or `constrains` edge.
    pub link_similarity: f32,
}

impl Default for OfflineRelationJudge {
    fn default() -> Self {
        OfflineRelationJudge {
            link_similarity: 0.3,
        }
    }
}

impl RelationJudge for OfflineRelationJudge {
    fn relate(
        &self,
        from: &Card,
        to: &Card,
        similarity: f32,
    ) -> Result<Option<(CardRelation, f32)>> {
        let a = from.directives();
        let b = to.directives();
        let weight = similarity.clamp(0.05, 1.0);
        if a.iter().any(|x| b.iter().any(|y| x.contradicts(y))) {
            return Ok(Some((CardRelation::Conflicts, weight)));
        }
        let shared = a.iter().any(|x| b.iter().any(|y| x.agrees(y)));
        if !shared || similarity < self.link_similarity {
            return Ok(None);
        }
        if let Some(p) = from.precondition()
            && to.precondition().is_none()
        {
            return Ok(Some((CardRelation::Constrains { precondition: p }, weight)));
        }
        if from.fields.sign == CardSign::Positive
            && to.fields.sign == CardSign::Negative
            && a.iter()
                .any(|x| x.polarity == Polarity::Use && b.contains(x))
        {
            return Ok(Some((CardRelation::Satisfies, weight)));
        }
        if from.fields.sign == to.fields.sign {
            return Ok(Some((CardRelation::Supports, weight)));
        }
        Ok(None)
    }
}

/// Offline needs profile from cue words: conditions and "whether/when" call for
/// applicability, multi-step wording for the plan, computing for execution, and
/// checking for evaluation. Every section keeps a floor of need.
#[derive(Clone, Copy, Debug)]
pub struct OfflineNeedsProfiler {
    /// The need every section has without a cue.
    pub floor: f32,
}

impl Default for OfflineNeedsProfiler {
    fn default() -> Self {
        OfflineNeedsProfiler { floor: 0.4 }
    }
}

const APPLICABILITY_CUES: &[&str] = &[
    "whether",
    "when",
    "if",
    "only",
    "unless",
    "including",
    "inclusive",
];
const PLAN_CUES: &[&str] = &[
    "then", "first", "steps", "plan", "schedule", "after", "before", "and",
];
const EXECUTION_CUES: &[&str] = &[
    "how",
    "many",
    "much",
    "compute",
    "calculate",
    "total",
    "what",
];
const EVALUATION_CUES: &[&str] = &[
    "check", "verify", "ensure", "exact", "exactly", "round", "nearest",
];

impl NeedsProfiler for OfflineNeedsProfiler {
    fn profile(&self, task: &TaskContext) -> Result<Needs> {
        let w: BTreeSet<String> = text::words(&task.task).into_iter().collect();
        let cue = |cues: &[&str]| {
            let hits = cues.iter().filter(|c| w.contains(**c)).count() as f32;
            (self.floor + (1.0 - self.floor) * (hits / 2.0).min(1.0)).clamp(0.0, 1.0)
        };
        let mut applicability = cue(APPLICABILITY_CUES);
        if !task.live.is_empty() {
            applicability = 1.0;
        }
        Ok(Needs {
            applicability,
            plan: cue(PLAN_CUES),
            execution: cue(EXECUTION_CUES),
            evaluation: cue(EVALUATION_CUES),
        })
    }
}

/// Whether a precondition holds in a task: it is live conditions joined by " and " (a
/// condition may hold an "and" of its own: "both ends and weekends count"). Compared
/// without case, as [`crate::card::precondition`] lowercases.
pub fn precondition_live(precondition: &str, live: &BTreeSet<String>) -> bool {
    let live: BTreeSet<String> = live.iter().map(|l| l.trim().to_lowercase()).collect();
    let parts: Vec<&str> = precondition
        .split(" and ")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    // covered[i]: the first i parts are live conditions joined by " and ".
    let mut covered = vec![false; parts.len() + 1];
    covered[0] = true;
    for end in 1..=parts.len() {
        covered[end] = (0..end).any(|start| {
            covered[start] && live.contains(&parts[start..end].join(" and ").to_lowercase())
        });
    }
    covered[parts.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_precondition_is_live_conditions_joined_by_and() {
        let live = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert!(precondition_live(
            "both ends and weekends count",
            &live(&["Both ends and weekends count"])
        ));
        assert!(precondition_live(
            "a holds and b holds",
            &live(&["b holds", "a holds"])
        ));
        assert!(!precondition_live(
            "a holds and b holds",
            &live(&["a holds"])
        ));
        assert!(precondition_live(
            "ölpreis steigt",
            &live(&["Ölpreis steigt"])
        ));
    }
}
