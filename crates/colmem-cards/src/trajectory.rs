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
