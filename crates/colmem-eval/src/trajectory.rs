//! Trajectories: each extraction → profile → retrieval run recorded as an MDP
//! trajectory, and their export as JSON lines for an external GRPO trainer.
//!
//! Each exported line is one [`TrainingRecord`]: one role's step of one trajectory,
//! with the prompt the role saw, the output it produced, its final reward
//! (`r_n + w_n · r_global`) and its advantage normalised within its group (the G
//! variants on the same input, per role).

use std::io::Write;

use colmem_llm::Usage;
use serde::{Deserialize, Serialize};

use crate::credit::{Credit, PerRole, Role, advantages, assign_credit, final_rewards};
use crate::error::Result;

/// What a role did in one step.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
pub struct Action {
    /// Memories produced (extraction, profile).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memories: Vec<String>,
    /// Ids retrieved (retrieval).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retrieved: Vec<String>,
    /// The response, if the step answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
}

impl Action {
    /// The action as the text a trainer sees as the output.
    pub fn as_output(&self) -> String {
        let mut parts = Vec::new();
        if !self.memories.is_empty() {
            parts.push(self.memories.join("\n"));
        }
        if !self.retrieved.is_empty() {
            parts.push(format!("retrieved: {}", self.retrieved.join(", ")));
        }
        if let Some(r) = &self.response {
            parts.push(r.clone());
        }
        parts.join("\n")
    }
}

/// One step of a trajectory.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Step {
    /// The role that acted.
    pub role: Role,
    /// A summary of the state the role saw (its prompt).
    pub state: String,
    /// What it did.
    pub action: Action,
    /// How long the step took, in milliseconds.
    pub elapsed_ms: f64,
    /// Tokens it spent (zero for offline roles).
    pub usage: Usage,
}

/// One run of the pipeline on one input, under one sampled configuration.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Trajectory {
    /// The input (e.g. `conv-26/q17`); trajectories with the same input form a group.
    pub input: String,
    /// Which sampled configuration ran.
    pub variant: usize,
    /// The configuration, as data.
    pub config: serde_json::Value,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Local rewards of the roles.
    pub local: PerRole,
    /// The global reward (answer correctness).
    pub global: f64,
}

/// One line of the export.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct TrainingRecord {
    /// The group (the shared input).
    pub group: String,
    /// The variant within the group.
    pub variant: usize,
    /// The role whose step this is.
    pub role: Role,
    /// What the role saw.
    pub prompt: String,
    /// What it produced.
    pub output: String,
    /// `r_n + w_n · r_global`.
    pub reward: f64,
    /// The reward normalised within the group, for this role.
    pub advantage: f64,
}

/// Scores a group of trajectories on one input: the credit, and one record per step.
pub fn score_group(group: &[Trajectory]) -> Result<(Credit, Vec<TrainingRecord>)> {
    let local: Vec<PerRole> = group.iter().map(|t| t.local).collect();
    let global: Vec<f64> = group.iter().map(|t| t.global).collect();
    let credit = assign_credit(&local, &global)?;
    let finals: Vec<PerRole> = group
        .iter()
        .map(|t| final_rewards(&t.local, t.global, &credit))
        .collect();
    let mut records = Vec::new();
    for role in Role::ALL {
        let rewards: Vec<f64> = finals.iter().map(|f| f.get(role)).collect();
        let adv = advantages(&rewards);
        for (i, t) in group.iter().enumerate() {
            for step in t.steps.iter().filter(|s| s.role == role) {
                records.push(TrainingRecord {
                    group: t.input.clone(),
                    variant: t.variant,
                    role,
                    prompt: step.state.clone(),
                    output: step.action.as_output(),
                    reward: rewards[i],
                    advantage: adv[i],
                });
            }
        }
    }
    Ok((credit, records))
}

/// Writes records as JSON lines.
pub fn write_jsonl(records: &[TrainingRecord], mut out: impl Write) -> std::io::Result<()> {
    for r in records {
        serde_json::to_writer(&mut out, r)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trajectory(variant: usize, retrieval: f64, global: f64) -> Trajectory {
        let step = |role| Step {
            role,
            state: format!("state {variant}"),
            action: Action {
                memories: vec!["m".into()],
                retrieved: vec!["D1:1".into()],
                response: None,
            },
            elapsed_ms: 1.0,
            usage: Usage::default(),
        };
        Trajectory {
            input: "conv/q1".into(),
            variant,
            config: serde_json::json!({"k": variant}),
            steps: Role::ALL.map(step).to_vec(),
            local: PerRole {
                extraction: 0.5,
                profile: 0.5,
                retrieval,
            },
            global,
        }
    }

    #[test]
    fn export_is_valid_jsonl_with_normalised_advantages() {
        let group = vec![
            trajectory(0, 0.9, 1.0),
            trajectory(1, 0.1, 0.0),
            trajectory(2, 0.5, 1.0),
        ];
        let (credit, records) = score_group(&group).unwrap();
        assert_eq!(records.len(), 9, "one record per role per trajectory");
        let mut buf = Vec::new();
        write_jsonl(&records, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let parsed: Vec<TrainingRecord> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(parsed.len(), records.len());
        for (p, r) in parsed.iter().zip(&records) {
            assert_eq!(
                (&p.group, p.variant, p.role, &p.prompt, &p.output),
                (&r.group, r.variant, r.role, &r.prompt, &r.output)
            );
            assert!(
                (p.reward - r.reward).abs() < 1e-12 && (p.advantage - r.advantage).abs() < 1e-12
            );
        }
        for role in Role::ALL {
            let adv: Vec<f64> = records
                .iter()
                .filter(|r| r.role == role)
                .map(|r| r.advantage)
                .collect();
            let mean = adv.iter().sum::<f64>() / adv.len() as f64;
            assert!(mean.abs() < 1e-9, "{role:?} advantages are centred");
        }
        assert!(credit.weights.retrieval > credit.weights.extraction);
    }
}
