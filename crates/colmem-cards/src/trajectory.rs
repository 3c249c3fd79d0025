//! What the write path learns from: a scored task's trajectory.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// One task attempt, after its prediction was fixed and scored.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trajectory {
    /// A stable id, kept in the cards distilled from it.
    pub id: String,
    /// The task's text.
    pub task: String,
    /// Conditions stated by the task that were live while it ran (e.g. "both ends count").
    #[serde(default)]
    pub conditions: BTreeSet<String>,
    /// The round of the task stream it belongs to.
    pub round: u32,
    /// What the agent did, in order.
    pub steps: Vec<Step>,
    /// How it was scored.
    pub outcome: Outcome,
}

/// One step of a trajectory.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// What the agent did or observed, in words.
    pub action: String,
    /// The choice it made here under uncertainty, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

/// A choice between settings of one decision, made without certainty.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// The decision's name (a word such as `rounding`).
    pub name: String,
    /// The setting chosen.
    pub chosen: String,
    /// The settings not chosen.
    pub alternatives: Vec<String>,
}

/// The scorer's verdict.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    /// The score, in `[0, 1]`.
    pub score: f32,
    /// Whether the task counts as solved.
    pub success: bool,
    /// The scorer's words.
    #[serde(default)]
    pub feedback: String,
    /// The attempt failed for a reason outside the agent (a timeout, a crashed tool).
    #[serde(default)]
    pub infrastructure_error: bool,
}

impl Trajectory {
    /// The decisions taken with at least one alternative, in order.
    pub fn uncertain_decisions(&self) -> impl Iterator<Item = &Decision> {
        self.steps
            .iter()
            .filter_map(|s| s.decision.as_ref())
            .filter(|d| !d.alternatives.is_empty())
    }

    /// The trajectory as text, for a model prompt.
    pub fn transcript(&self) -> String {
        let mut out = String::new();
        for (i, step) in self.steps.iter().enumerate() {
            out.push_str(&format!("{}. {}", i + 1, step.action));
            if let Some(d) = &step.decision {
                out.push_str(&format!(
                    " [decision {}={}; alternatives: {}]",
                    d.name,
                    d.chosen,
                    d.alternatives.join(", ")
                ));
            }
            out.push('\n');
        }
        out
    }
}

/// A line of a trajectory file that is not a trajectory.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("line {line} is not a trajectory: {reason}")]
pub struct TrajectoryLineError {
    /// The line's number, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub reason: String,
}

/// Parses scored trajectories, one JSON object per non-blank line (what `colmem cards
/// learn` reads). Every line is parsed before any is returned: the first that is not
/// a trajectory (not one JSON object of the fields above, an empty id, a task with no
/// words, a score outside `[0, 1]`) is the error.
pub fn parse_trajectories(text: &str) -> Result<Vec<Trajectory>, TrajectoryLineError> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            let refuse = |reason: String| TrajectoryLineError {
                line: i + 1,
                reason,
            };
            let t: Trajectory = serde_json::from_str(line).map_err(|e| refuse(e.to_string()))?;
            if t.id.trim().is_empty() {
                return Err(refuse("its id is empty".into()));
            }
            if !t.task.chars().any(char::is_alphanumeric) {
                return Err(refuse("its task has no words".into()));
            }
            if !(0.0..=1.0).contains(&t.outcome.score) {
                return Err(refuse(format!(
                    "score {} is not in [0, 1]",
                    t.outcome.score
                )));
            }
            Ok(t)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_or_name_the_first_bad_one() {
        let good = r#"{"id": "t1", "task": "add two dates", "round": 0, "steps": [{"action": "read"}], "outcome": {"score": 1.0, "success": true}}"#;
        let parsed = parse_trajectories(&format!("\n{good}\n  \n{good}\n")).unwrap();
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].id, "t1");
        for (text, line, reason) in [
            ("{}", 1, "missing field"),
            (&format!("{good}\nnot json")[..], 2, "expected"),
            (&good.replace("\"t1\"", "\" \"")[..], 1, "its id is empty"),
            (
                &good.replace("add two dates", "?!")[..],
                1,
                "its task has no words",
            ),
            (
                &good.replace("1.0", "1.5")[..],
                1,
                "score 1.5 is not in [0, 1]",
            ),
            (&good.replace("1.0", "NaN")[..], 1, "expected"),
        ] {
            let err = parse_trajectories(text).unwrap_err();
            assert_eq!(err.line, line, "{text}");
            assert!(err.reason.contains(reason), "{text}: {err}");
        }
    }
}
