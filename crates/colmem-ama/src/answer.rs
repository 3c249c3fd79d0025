//! Answering in full mode: from the retrieved evidence to an answer.
//!
//! Offline, the answer is the best evidence span: the clause of the top evidence that
//! covers the question best, preferring facts (the current state) over raw turns (what
//! was once said). With a model, the evidence is the context of a prompt.

use colmem_core::{Fragment, FragmentId, Granularity};
use serde::{Deserialize, Serialize};

use crate::change::attributes;
use crate::error::Result;
use crate::judge::coverage;
use crate::text::sentences;

/// An answer with the evidence it rests on.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Answer {
    /// The answer; empty when the evidence holds none.
    pub text: String,
    /// The fragments the answer was drawn from.
    pub evidence: Vec<FragmentId>,
}

/// The answering role.
pub trait Answerer: Send + Sync + std::fmt::Debug {
    /// Answers `question` from `evidence`, ranked best first.
    fn answer(&self, question: &str, evidence: &[&Fragment]) -> Result<Answer>;
}

/// Returns the best evidence span; see the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct EvidenceSpan;

/// How many of the top fragments the offline answer reads.
const READ_TOP: usize = 10;
/// Below this coverage nothing is answered.
const MIN_COVERAGE: f64 = 0.2;

/// Coverage of the question by a clause, counting a shared attribute as one more term.
fn support(question: &str, clause: &str) -> f64 {
    let base = coverage(question, clause);
    let asked = attributes(question);
    match asked.first() {
        Some(a) if attributes(clause).contains(a) => (base * 2.0 + 1.0) / 3.0,
        Some(_) => base * 2.0 / 3.0,
        None => base,
    }
}

fn clauses(text: &str) -> Vec<String> {
    sentences(text)
        .into_iter()
        .flat_map(|s| {
            s.split([';', ','])
                .map(str::trim)
                .filter(|c| c.split_whitespace().count() >= 2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

impl Answerer for EvidenceSpan {
    fn answer(&self, question: &str, evidence: &[&Fragment]) -> Result<Answer> {
        let mut best: Option<(f64, &str, FragmentId)> = None;
        let mut candidates = Vec::new();
        for (rank, fragment) in evidence.iter().take(READ_TOP).enumerate() {
            let prior = match fragment.granularity {
                Granularity::Fact | Granularity::Profile => 0.5,
                Granularity::RawTurn => 0.0,
                _ => -0.1,
            } - rank as f64 * 0.01;
            // A raw turn is "Speaker: text"; answer from the text.
            let text = match fragment.granularity {
                Granularity::RawTurn => fragment
                    .content
                    .split_once(": ")
                    .map_or(fragment.content.as_str(), |(_, t)| t),
                _ => fragment.content.as_str(),
            };
            for clause in clauses(text) {
                candidates.push((support(question, &clause), prior, clause, fragment.id));
            }
        }
        for (support, prior, clause, id) in &candidates {
            if *support < MIN_COVERAGE {
                continue;
            }
            let score = support + prior;
            if best.is_none_or(|(b, _, _)| score > b) {
                best = Some((score, clause.as_str(), *id));
            }
        }
        Ok(match best {
            Some((_, text, id)) => Answer {
                text: text.to_owned(),
                evidence: vec![id],
            },
            None => Answer {
                text: String::new(),
                evidence: Vec::new(),
            },
        })
    }
}
