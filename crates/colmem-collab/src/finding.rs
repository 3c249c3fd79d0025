//! Findings: what an agent learned from a tool, in the text form it is remembered in, and
//! the aggregator that combines several agents' answers into one.

use std::collections::{BTreeMap, BTreeSet};

use colmem_core::{AgentId, FragmentId, ResourceId};
use colmem_index::analyze;

use crate::resource::QUESTION_WORDS;
use serde::Serialize;

const MARK: &str = " (answer: ";

/// A tool's answer with the evidence it came from, as stored in memory:
/// `"{evidence} (answer: {answer})"`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Finding {
    /// The evidence text.
    pub evidence: String,
    /// The answer.
    pub answer: String,
}

impl Finding {
    /// The text a finding is remembered as.
    pub fn to_content(&self) -> String {
        format!("{}{MARK}{})", self.evidence, self.answer)
    }

    /// How well this finding answers `query`: the share of its subject terms (the evidence's
    /// analysed terms, less the answer's and question words) that the query holds. A paraphrase of the question
    /// that produced it holds them all; a question about another entity or attribute lacks
    /// some. Numbers must match exactly: a subject number the query lacks makes the score 0
    /// (a break-even volume for other inputs is another question). 0 when the finding has no
    /// subject terms.
    pub fn match_score(&self, query: &str) -> f32 {
        let answer: BTreeSet<String> = analyze(&self.answer).into_iter().collect();
        let subject: BTreeSet<String> = analyze(&self.evidence)
            .into_iter()
            .filter(|t| !answer.contains(t) && !QUESTION_WORDS.contains(&t.as_str()))
            .collect();
        if subject.is_empty() {
            return 0.0;
        }
        let asked: BTreeSet<String> = analyze(query).into_iter().collect();
        let numeric = |t: &String| t.chars().any(|c| c.is_ascii_digit());
        if subject.iter().any(|t| numeric(t) && !asked.contains(t)) {
            return 0.0;
        }
        subject.iter().filter(|t| asked.contains(*t)).count() as f32 / subject.len() as f32
    }

    /// Reads a remembered finding back; `None` for text that is not one.
    pub fn parse(content: &str) -> Option<Finding> {
        let start = content.rfind(MARK)?;
        let answer = content[start + MARK.len()..].strip_suffix(')')?;
        if answer.is_empty() {
            return None;
        }
        Some(Finding {
            evidence: content[..start].to_owned(),
            answer: answer.to_owned(),
        })
    }
}

/// Where an agent's answer came from.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
#[serde(rename_all = "snake_case", tag = "from")]
pub enum Source {
    /// A remembered finding.
    Memory {
        /// The fragment.
        fragment: FragmentId,
    },
    /// A tool call.
    Tool {
        /// The resource called.
        resource: ResourceId,
    },
    /// Neither memory nor any usable tool had an answer.
    Nothing,
}

/// One agent's contribution to a query.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct AgentAnswer {
    /// The agent.
    pub agent: AgentId,
    /// Its answer, if it found one.
    pub answer: Option<String>,
    /// Where the answer came from.
    pub source: Source,
    /// How well the evidence covers the query (0 to 1).
    pub confidence: f32,
}

/// Combines the agents' answers: the answer with the greatest summed confidence wins
/// (answers compared case-insensitively); a tie goes to the answer of the agent the
/// coordinator ranked first.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Aggregator;

impl Aggregator {
    /// The combined answer, or `None` if no agent answered.
    pub fn combine(&self, answers: &[AgentAnswer]) -> Option<String> {
        let mut weight: BTreeMap<String, (f32, usize, &str)> = BTreeMap::new();
        for (rank, a) in answers.iter().enumerate() {
            let Some(answer) = a.answer.as_deref() else {
                continue;
            };
            let entry =
                weight
                    .entry(answer.trim().to_lowercase())
                    .or_insert((0.0, rank, answer.trim()));
            entry.0 += a.confidence.max(f32::EPSILON);
        }
        weight
            .into_values()
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)))
            .map(|(_, _, answer)| answer.to_owned())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn findings_round_trip_through_their_text() {
        let f = Finding {
            evidence: "The carrier (primary) of Orvane is Keltra.".into(),
            answer: "Keltra".into(),
        };
        assert_eq!(Finding::parse(&f.to_content()), Some(f));
        assert_eq!(Finding::parse("just a remembered sentence"), None);
        assert_eq!(Finding::parse("x (answer: )"), None);
    }

    #[test]
    fn a_finding_matches_paraphrases_of_its_question_only() {
        let f = Finding {
            evidence: "The credit rating of Valmora is AA.".into(),
            answer: "AA".into(),
        };
        assert_eq!(f.match_score("Which credit rating does Valmora have?"), 1.0);
        assert!(f.match_score("What is the credit limit of Valmora?") < 0.8);
        assert!(f.match_score("What is the credit rating of Tessel?") < 0.8);
        assert_eq!(f.match_score(""), 0.0);
        let computed = Finding {
            evidence: "Break-even volume for fixed cost 3200 and unit margin 22? = 146".into(),
            answer: "146".into(),
        };
        assert_eq!(
            computed.match_score(
                "What is the break-even volume for fixed cost 3200 and unit margin 22?"
            ),
            1.0
        );
        assert_eq!(
            computed.match_score(
                "What is the break-even volume for fixed cost 9200 and unit margin 13?"
            ),
            0.0
        );
    }

    #[test]
    fn the_aggregator_weighs_votes_and_breaks_ties_by_rank() {
        let a = |agent: &str, answer: Option<&str>, confidence| AgentAnswer {
            agent: AgentId::new(agent).unwrap(),
            answer: answer.map(str::to_owned),
            source: Source::Nothing,
            confidence,
        };
        let agg = Aggregator;
        assert_eq!(agg.combine(&[]), None);
        assert_eq!(agg.combine(&[a("x", None, 1.0)]), None);
        assert_eq!(
            agg.combine(&[a("x", Some("AA"), 0.6), a("y", Some("BB"), 0.6)]),
            Some("AA".into())
        );
        assert_eq!(
            agg.combine(&[
                a("x", Some("AA"), 0.6),
                a("y", Some("bb"), 0.5),
                a("z", Some("BB"), 0.5)
            ]),
            Some("bb".into())
        );
    }
}
