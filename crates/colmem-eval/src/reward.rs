//! CoMAM rewards: local rewards for extraction, profile and retrieval, and the global
//! reward of a correct answer.

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Arc;

use colmem_llm::{ChatModel, ChatRequest, JsonSchema, Message, Usage, complete_json};
use serde::Deserialize;

use crate::error::Result;
use crate::metrics::token_f1;

/// The α of the extraction reward.
pub const EXTRACTION_ALPHA: f64 = 0.8;
/// The β of the retrieval reward.
pub const RETRIEVAL_BETA: f64 = 0.2;

fn sets<'a, T: Eq + Hash>(a: &'a [T], b: &'a [T]) -> (HashSet<&'a T>, HashSet<&'a T>) {
    (a.iter().collect(), b.iter().collect())
}

/// Extraction coverage of extracted memories `m` against the expected set `e`:
/// `α·|M∩E|/|E| + (1−α)·|M∩E|/|M∪E|`, with `α = 0.8`. 0 when `E` is empty and `M` is
/// not; 1 when both are empty.
pub fn extraction_reward<T: Eq + Hash>(m: &[T], e: &[T]) -> f64 {
    let (m, e) = sets(m, e);
    if e.is_empty() {
        return if m.is_empty() { 1.0 } else { 0.0 };
    }
    let inter = m.intersection(&e).count() as f64;
    let union = m.union(&e).count() as f64;
    EXTRACTION_ALPHA * inter / e.len() as f64 + (1.0 - EXTRACTION_ALPHA) * inter / union
}

/// Retrieval reward of retrieved ids against the relevant ones:
/// `β·recall + (1−β)·Jaccard`, with `β = 0.2`. 1 when both are empty.
pub fn retrieval_reward<T: Eq + Hash>(retrieved: &[T], relevant: &[T]) -> f64 {
    let (r, e) = sets(retrieved, relevant);
    if e.is_empty() {
        return if r.is_empty() { 1.0 } else { 0.0 };
    }
    let inter = r.intersection(&e).count() as f64;
    let union = r.union(&e).count() as f64;
    RETRIEVAL_BETA * inter / e.len() as f64 + (1.0 - RETRIEVAL_BETA) * inter / union
}

/// The global reward: 1 when the answer is correct, else 0. An answer is correct when
/// its token F1 against the gold answer reaches `threshold` (0.5 is customary).
pub fn global_reward(answer: &str, gold: &str, threshold: f64) -> f64 {
    if token_f1(answer, gold) >= threshold {
        1.0
    } else {
        0.0
    }
}

/// Scores a user profile (stable preferences) against the turns it was drawn from, in [0, 1].
pub trait ProfileJudge: Send + Sync + std::fmt::Debug {
    /// The score and the tokens spent judging.
    fn score(&self, profile: &[String], source: &[String]) -> Result<(f64, Usage)>;
}

/// The offline profile rubric, a documented heuristic. Each entry is scored on four
/// criteria, each in [0, 1], and the profile's score is their mean over entries:
///
/// 1. *grounded* — the share of the entry's content words that occur in the source
///    turns (a profile must not invent);
/// 2. *stable* — whether it states a lasting preference or habit (likes, loves,
///    prefers, enjoys, hates, always, usually, favourite, …);
/// 3. *specific* — whether it names something concrete (a capitalised name, a
///    number, or a content word of six letters or more);
/// 4. *concise* — 1 up to 25 words, falling linearly to 0 at 50.
///
/// An empty profile scores 0. It rewards grounded, specific preference statements and
/// cannot judge whether a preference is *important*, which a model judge can.
#[derive(Debug, Clone, Copy, Default)]
pub struct RubricHeuristic;

const STABLE_CUES: &[&str] = &[
    "like",
    "likes",
    "love",
    "loves",
    "prefer",
    "prefers",
    "enjoy",
    "enjoys",
    "hate",
    "hates",
    "always",
    "usually",
    "often",
    "never",
    "favorite",
    "favourite",
    "fan",
    "into",
    "avoid",
    "avoids",
    "allergic",
    "vegetarian",
    "vegan",
];
const STOP: &[&str] = &[
    "the", "a", "an", "and", "or", "of", "to", "in", "on", "at", "for", "with", "is", "are", "was",
    "be", "user", "their", "they", "she", "he", "her", "his", "it", "that", "this", "by", "from",
];

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A word with a plural or third-person `s` dropped, so "loves" grounds in "love".
fn stem(word: &str) -> &str {
    match word.strip_suffix('s') {
        Some(stem) if stem.len() >= 3 => stem,
        _ => word,
    }
}

impl RubricHeuristic {
    /// The four criteria for one entry; `source_words` are the stemmed words of the source turns.
    pub fn criteria(entry: &str, source_words: &HashSet<String>) -> [f64; 4] {
        let all = words(entry);
        let content: Vec<&String> = all.iter().filter(|w| !STOP.contains(&w.as_str())).collect();
        let grounded = if content.is_empty() {
            0.0
        } else {
            content
                .iter()
                .filter(|w| source_words.contains(stem(w)))
                .count() as f64
                / content.len() as f64
        };
        let stable = if all.iter().any(|w| STABLE_CUES.contains(&w.as_str())) {
            1.0
        } else {
            0.0
        };
        let specific = entry.split_whitespace().skip(1).any(|w| {
            w.chars()
                .next()
                .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit())
        }) || content.iter().any(|w| w.chars().count() >= 6);
        let n = all.len() as f64;
        let concise = if n <= 25.0 {
            1.0
        } else {
            ((50.0 - n) / 25.0).max(0.0)
        };
        [grounded, stable, if specific { 1.0 } else { 0.0 }, concise]
    }
}

impl ProfileJudge for RubricHeuristic {
    fn score(&self, profile: &[String], source: &[String]) -> Result<(f64, Usage)> {
        if profile.is_empty() {
            return Ok((0.0, Usage::default()));
        }
        let source_words: HashSet<String> = source
            .iter()
            .flat_map(|s| words(s))
            .map(|w| stem(&w).to_owned())
            .collect();
        let total: f64 = profile
            .iter()
            .map(|entry| Self::criteria(entry, &source_words).iter().sum::<f64>() / 4.0)
            .sum();
        Ok((total / profile.len() as f64, Usage::default()))
    }
}

/// A profile judge backed by a chat model and the rubric in `prompts/profile_rubric.md`.
#[derive(Debug, Clone)]
pub struct ModelRubric {
    model: Arc<dyn ChatModel>,
}

impl ModelRubric {
    /// A judge asking `model`.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        ModelRubric { model }
    }
}

const RUBRIC_PROMPT: &str = include_str!("../prompts/profile_rubric.md");

#[derive(Deserialize)]
struct Verdict {
    grounded: f64,
    stable: f64,
    specific: f64,
    useful: f64,
}

impl ProfileJudge for ModelRubric {
    fn score(&self, profile: &[String], source: &[String]) -> Result<(f64, Usage)> {
        if profile.is_empty() {
            return Ok((0.0, Usage::default()));
        }
        let user = format!(
            "Source turns:\n{}\n\nProfile entries:\n{}",
            source
                .iter()
                .map(|s| format!("- {s}"))
                .collect::<Vec<_>>()
                .join("\n"),
            profile
                .iter()
                .map(|s| format!("- {s}"))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        let request = ChatRequest::new(vec![Message::system(RUBRIC_PROMPT), Message::user(user)])
            .temperature(0.0);
        let schema = JsonSchema {
            name: "profile_rubric".into(),
            schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "grounded": {"type": "number", "minimum": 0, "maximum": 1},
                    "stable": {"type": "number", "minimum": 0, "maximum": 1},
                    "specific": {"type": "number", "minimum": 0, "maximum": 1},
                    "useful": {"type": "number", "minimum": 0, "maximum": 1}
                },
                "required": ["grounded", "stable", "specific", "useful"],
                "additionalProperties": false
            }),
            strict: true,
        };
        let (v, usage): (Verdict, Usage) = complete_json(self.model.as_ref(), &request, &schema)?;
        let score = [v.grounded, v.stable, v.specific, v.useful]
            .iter()
            .map(|x| x.clamp(0.0, 1.0))
            .sum::<f64>()
            / 4.0;
        Ok((score, usage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn extraction_hand_computed() {
        // M = {a, b, c}, E = {b, c, d, e}: |M∩E| = 2, |E| = 4, |M∪E| = 5.
        let r = extraction_reward(&["a", "b", "c"], &["b", "c", "d", "e"]);
        assert!(close(r, 0.8 * 2.0 / 4.0 + 0.2 * 2.0 / 5.0));
        assert!(close(extraction_reward(&["x"], &["x"]), 1.0));
        assert!(close(extraction_reward::<&str>(&[], &[]), 1.0));
        assert!(close(extraction_reward(&["x"], &[]), 0.0));
    }

    #[test]
    fn retrieval_hand_computed() {
        // retrieved {1, 2, 3, 4}, relevant {2, 5}: recall 1/2, Jaccard 1/5.
        let r = retrieval_reward(&[1, 2, 3, 4], &[2, 5]);
        assert!(close(r, 0.2 * 0.5 + 0.8 * 0.2));
    }

    #[test]
    fn global_reward_thresholds_f1() {
        assert!(close(
            global_reward("on 7 May 2023", "7 May 2023", 0.5),
            1.0
        ));
        assert!(close(
            global_reward("sometime last year", "7 May 2023", 0.5),
            0.0
        ));
    }

    #[test]
    fn rubric_heuristic_prefers_grounded_stable_entries() {
        let source = vec!["I love hiking in the Rockies every summer".to_string()];
        let (good, _) = RubricHeuristic
            .score(&["Loves hiking in the Rockies".into()], &source)
            .unwrap();
        let (bad, _) = RubricHeuristic
            .score(&["Owns a yacht named Calypso".into()], &source)
            .unwrap();
        assert!(good > bad, "{good} vs {bad}");
        assert!(close(good, 1.0), "{good}");
        assert!(close(RubricHeuristic.score(&[], &source).unwrap().0, 0.0));
    }
}
