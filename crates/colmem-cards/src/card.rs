//! The card as the bank sees it: the stored sections plus credibility, round, source
//! trajectories and the trigger embedding, and the bounds every written card obeys.
//!
//! Credibility and round are kept in the card fragment's keywords as `~credibility=…`
//! and `~round=…` (the store has no columns for them); source trajectories are the
//! fragment's source turns, and a merged card's parents are its source parents.

use std::collections::BTreeSet;

use colmem_core::{CardFields, CardSign, Fragment, FragmentId};
use colmem_store::CardRecord;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::text::{self, Directive};

const CREDIBILITY: &str = "~credibility=";
const ROUND: &str = "~round=";

/// The phrase that opens a precondition in a card's applicability: "only when …".
pub const PRECONDITION_MARK: &str = "only when ";

/// A stored card with everything the read and write paths use.
#[derive(Clone, PartialEq, Debug)]
pub struct Card {
    /// Its fragment id.
    pub id: FragmentId,
    /// Its sections.
    pub fields: CardFields,
    /// Its trigger keywords.
    pub triggers: BTreeSet<String>,
    /// How far it is to be trusted, in `[0, 1]`.
    pub credibility: f32,
    /// The round of the task stream in which it was written.
    pub round: u32,
    /// The ids of the trajectories it was distilled from (most recent last).
    pub sources: Vec<String>,
    /// The embedding of its trigger semantics (empty when the store has none).
    pub embedding: Vec<f32>,
    /// Its fragment: scope and provenance, for the read rule.
    pub fragment: Fragment,
}

impl Card {
    /// Reads a stored card and its embedding.
    pub fn from_record(record: CardRecord, embedding: Option<Vec<f32>>) -> Result<Card> {
        let id = record.fragment.id;
        let mut triggers = BTreeSet::new();
        let mut credibility = None;
        let mut round = None;
        for keyword in &record.fragment.keywords {
            if let Some(value) = keyword.strip_prefix(CREDIBILITY) {
                let parsed = value
                    .parse::<f32>()
                    .ok()
                    .filter(|c| (0.0..=1.0).contains(c));
                credibility = Some(parsed.ok_or_else(|| Error::Corrupt {
                    id,
                    field: "credibility",
                    value: keyword.clone(),
                })?);
            } else if let Some(value) = keyword.strip_prefix(ROUND) {
                round = Some(value.parse::<u32>().map_err(|_| Error::Corrupt {
                    id,
                    field: "round",
                    value: keyword.clone(),
                })?);
            } else {
                triggers.insert(keyword.clone());
            }
        }
        Ok(Card {
            id,
            triggers,
            credibility: credibility.unwrap_or(0.5),
            round: round.unwrap_or(0),
            sources: record.fragment.provenance.source.turns.clone(),
            embedding: embedding.unwrap_or_default(),
            fields: record.fields,
            fragment: record.fragment,
        })
    }

    /// The `use`/`avoid` directives of its plan and execution.
    pub fn directives(&self) -> Vec<Directive> {
        card_directives(&self.fields)
    }

    /// The precondition its applicability states ("only when …"), if any.
    pub fn precondition(&self) -> Option<String> {
        precondition(&self.fields.applicability)
    }

    /// The characters of its sections together: what the merge bound limits.
    pub fn length(&self) -> usize {
        fields_length(&self.fields)
    }
}

/// The directives of a card's plan and execution, without repeats.
pub fn card_directives(fields: &CardFields) -> Vec<Directive> {
    let mut seen = Vec::new();
    for d in text::directives(&format!("{} {}", fields.plan, fields.execution)) {
        if !seen.contains(&d) {
            seen.push(d);
        }
    }
    seen
}

/// The precondition in an applicability text: the rest of the sentence after "only when"
/// (up to a semicolon or a full stop that ends a sentence, not the point of "2.5%").
pub fn precondition(applicability: &str) -> Option<String> {
    let lower = applicability.to_lowercase();
    let start = lower.find(PRECONDITION_MARK)? + PRECONDITION_MARK.len();
    let rest = &lower[start..];
    let end = rest
        .char_indices()
        .find(|&(i, c)| {
            c == ';' || (c == '.' && rest[i + 1..].chars().next().is_none_or(char::is_whitespace))
        })
        .map_or(rest.len(), |(i, _)| i);
    let condition = rest[..end].trim();
    (!condition.is_empty()).then(|| condition.to_owned())
}

/// The characters of all sections of a card.
pub fn fields_length(fields: &CardFields) -> usize {
    [
        &fields.task,
        &fields.trigger,
        &fields.applicability,
        &fields.plan,
        &fields.execution,
        &fields.evaluation,
    ]
    .iter()
    .map(|s| s.chars().count())
    .sum()
}

/// A card proposed by reflection, aggregation or merge, before admission.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct CardDraft {
    /// Its sections.
    pub fields: CardFields,
    /// Its trigger keywords.
    pub triggers: BTreeSet<String>,
    /// The trajectories it comes from.
    pub sources: Vec<String>,
    /// How strongly the outcomes behind it back it, in `[0, 1]`.
    pub evidence: f32,
}

impl CardDraft {
    /// The text its trigger embedding is computed from.
    pub fn trigger_text(&self) -> String {
        trigger_text(&self.fields)
    }
}

/// What a card's trigger embedding is computed from: its task, trigger and applicability.
pub fn trigger_text(fields: &CardFields) -> String {
    format!(
        "{} {} {}",
        fields.task, fields.trigger, fields.applicability
    )
}

/// Size limits of a written card: however many merges it goes through, it stays within them.
#[derive(Clone, Copy, PartialEq, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CardBounds {
    /// The most characters of one section.
    pub section_chars: usize,
    /// The most trigger keywords.
    pub triggers: usize,
    /// The most source trajectories remembered (the most recent are kept).
    pub sources: usize,
}

impl Default for CardBounds {
    fn default() -> Self {
        CardBounds {
            section_chars: 240,
            triggers: 16,
            sources: 8,
        }
    }
}

impl CardBounds {
    /// The longest a bounded card can be, in characters of its sections.
    pub fn max_length(&self) -> usize {
        self.section_chars.saturating_mul(6)
    }

    /// Refuses bounds a card cannot keep: a section of no character ("…" is one).
    pub fn validate(&self) -> crate::Result<()> {
        if self.section_chars == 0 {
            return Err(crate::Error::Config(
                "bounds.section_chars must be at least 1".to_owned(),
            ));
        }
        Ok(())
    }

    /// Clips a draft to the bounds.
    pub fn apply(&self, mut draft: CardDraft) -> CardDraft {
        let f = &mut draft.fields;
        for section in [
            &mut f.task,
            &mut f.trigger,
            &mut f.applicability,
            &mut f.plan,
            &mut f.execution,
            &mut f.evaluation,
        ] {
            *section = text::clip(section, self.section_chars);
        }
        if draft.triggers.len() > self.triggers {
            // Keywords the card's own trigger and task name come first, then the rest in order.
            let named = text::keywords(&format!("{} {}", f.trigger, f.task));
            let (first, rest): (Vec<String>, Vec<String>) =
                draft.triggers.into_iter().partition(|k| named.contains(k));
            draft.triggers = first.into_iter().chain(rest).take(self.triggers).collect();
        }
        let excess = draft.sources.len().saturating_sub(self.sources);
        draft.sources.drain(..excess);
        draft.evidence = draft.evidence.clamp(0.0, 1.0);
        draft
    }
}

/// The keywords a card fragment stores: its triggers, then its bookkeeping.
pub(crate) fn stored_keywords(
    triggers: &BTreeSet<String>,
    credibility: f32,
    round: u32,
) -> Vec<String> {
    let mut out: Vec<String> = triggers.iter().cloned().collect();
    out.push(format!("{CREDIBILITY}{:.3}", credibility.clamp(0.0, 1.0)));
    out.push(format!("{ROUND}{round}"));
    out
}

/// The fragment text of a card: all its sections on one line each.
pub(crate) fn content(fields: &CardFields) -> String {
    let sign = match fields.sign {
        CardSign::Positive => "strategy",
        CardSign::Negative => "warning",
    };
    format!(
        "{sign}: {}\ntrigger: {}\napplicability: {}\nplan: {}\nexecution: {}\nevaluation: {}",
        fields.task,
        fields.trigger,
        fields.applicability,
        fields.plan,
        fields.execution,
        fields.evaluation
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(section: &str) -> CardFields {
        CardFields {
            task: section.to_owned(),
            trigger: section.to_owned(),
            applicability: format!("{section} only when both ends count; otherwise not"),
            plan: section.to_owned(),
            execution: section.to_owned(),
            evaluation: section.to_owned(),
            sign: CardSign::Negative,
        }
    }

    #[test]
    fn bounds_clip_every_section_triggers_and_sources() {
        let bounds = CardBounds {
            section_chars: 20,
            triggers: 2,
            sources: 2,
        };
        let draft = CardDraft {
            fields: fields(&"word ".repeat(50)),
            triggers: ["a", "b", "c"].iter().map(|s| s.to_string()).collect(),
            sources: vec!["t1".into(), "t2".into(), "t3".into()],
            evidence: 2.0,
        };
        let bounded = bounds.apply(draft);
        assert!(fields_length(&bounded.fields) <= bounds.max_length());
        assert_eq!(bounded.triggers.len(), 2);
        let named = bounds.apply(CardDraft {
            fields: CardFields {
                trigger: "zebra".to_owned(),
                ..fields("x")
            },
            triggers: ["a", "b", "zebra"].iter().map(|s| s.to_string()).collect(),
            sources: Vec::new(),
            evidence: 0.5,
        });
        assert!(named.triggers.contains("zebra"));
        assert_eq!(bounded.sources, vec!["t2", "t3"]);
        assert_eq!(bounded.evidence, 1.0);
    }

    #[test]
    fn preconditions_are_read_from_applicability() {
        assert_eq!(
            precondition(&fields("x").applicability).as_deref(),
            Some("both ends count")
        );
        assert_eq!(precondition("always"), None);
        assert_eq!(
            precondition("loans; only when the rate is 2.5%. Then more").as_deref(),
            Some("the rate is 2.5%")
        );
    }
}
