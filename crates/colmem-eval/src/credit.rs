//! CoMAM credit assignment: how much each role's local reward agrees with the global
//! outcome over a group of trajectories on the same input.
//!
//! For a group of G trajectories and role n: `v_n = NDCG(ranking by role n's local
//! reward, with the ranking by global reward as ideal)`; the credit weights are
//! `w = softmax(v)`; each trajectory's final reward for role n is
//! `r_final,n = r_n + w_n · r_global`.

use serde::{Deserialize, Serialize};

use crate::error::{EvalError, Result};
use crate::metrics::ndcg_by_scores;

/// The roles that earn local rewards, in a fixed order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Extracting memories from the conversation.
    Extraction,
    /// Keeping the user profile.
    Profile,
    /// Retrieving memories for a question.
    Retrieval,
}

impl Role {
    /// Every role, in the order of [`PerRole`] arrays.
    pub const ALL: [Role; 3] = [Role::Extraction, Role::Profile, Role::Retrieval];

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Extraction => "extraction",
            Role::Profile => "profile",
            Role::Retrieval => "retrieval",
        }
    }
}

/// One number per role, in the order of [`Role::ALL`].
#[derive(Clone, Copy, PartialEq, Debug, Default, Serialize, Deserialize)]
pub struct PerRole {
    /// Extraction.
    pub extraction: f64,
    /// Profile.
    pub profile: f64,
    /// Retrieval.
    pub retrieval: f64,
}

impl PerRole {
    /// The value for `role`.
    pub fn get(&self, role: Role) -> f64 {
        match role {
            Role::Extraction => self.extraction,
            Role::Profile => self.profile,
            Role::Retrieval => self.retrieval,
        }
    }

    /// Builds one from a function of the role.
    pub fn from_fn(mut f: impl FnMut(Role) -> f64) -> Self {
        PerRole {
            extraction: f(Role::Extraction),
            profile: f(Role::Profile),
            retrieval: f(Role::Retrieval),
        }
    }
}

/// The credit of each role in one group.
#[derive(Clone, Copy, PartialEq, Debug, Serialize, Deserialize)]
pub struct Credit {
    /// `v_n`: ranking consistency of each role's local reward with the global reward.
    pub consistency: PerRole,
    /// `w = softmax(v)`.
    pub weights: PerRole,
}

/// Assigns credit over a group: `local[i]` and `global[i]` are trajectory i's rewards.
pub fn assign_credit(local: &[PerRole], global: &[f64]) -> Result<Credit> {
    if local.len() != global.len() {
        return Err(EvalError::Group(format!(
            "{} local rewards but {} global rewards",
            local.len(),
            global.len()
        )));
    }
    if local.is_empty() {
        return Err(EvalError::Group(
            "a group needs at least one trajectory".into(),
        ));
    }
    if local
        .iter()
        .flat_map(|l| Role::ALL.map(|r| l.get(r)))
        .chain(global.iter().copied())
        .any(|x| !x.is_finite())
    {
        return Err(EvalError::Group("rewards must be finite numbers".into()));
    }
    let g = local.len();
    let consistency = PerRole::from_fn(|role| {
        let items: Vec<(f64, f64)> = local
            .iter()
            .map(|l| l.get(role))
            .zip(global.iter().copied())
            .collect();
        ndcg_by_scores(&items, g)
    });
    let max = Role::ALL
        .map(|r| consistency.get(r))
        .into_iter()
        .fold(f64::MIN, f64::max);
    let exp = PerRole::from_fn(|r| (consistency.get(r) - max).exp());
    let sum: f64 = Role::ALL.map(|r| exp.get(r)).iter().sum();
    let weights = PerRole::from_fn(|r| exp.get(r) / sum);
    Ok(Credit {
        consistency,
        weights,
    })
}

/// `r_final,n = r_n + w_n · r_global` for one trajectory.
pub fn final_rewards(local: &PerRole, global: f64, credit: &Credit) -> PerRole {
    PerRole::from_fn(|r| local.get(r) + credit.weights.get(r) * global)
}

/// Group-normalised advantages `(r − mean) / std` (population std); all zeros when the
/// rewards do not vary.
pub fn advantages(rewards: &[f64]) -> Vec<f64> {
    if rewards.is_empty() {
        return Vec::new();
    }
    let n = rewards.len() as f64;
    let mean = rewards.iter().sum::<f64>() / n;
    let var = rewards.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / n;
    let std = var.sqrt();
    if std < 1e-12 {
        return vec![0.0; rewards.len()];
    }
    rewards.iter().map(|r| (r - mean) / std).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    fn l(e: f64, p: f64, r: f64) -> PerRole {
        PerRole {
            extraction: e,
            profile: p,
            retrieval: r,
        }
    }

    #[test]
    fn the_role_that_agrees_with_the_outcome_gets_the_most_credit() {
        // Global: trajectories 0 and 2 are right. Retrieval ranks them first; extraction ranks them last.
        let local = [
            l(0.1, 0.5, 0.9),
            l(0.9, 0.5, 0.2),
            l(0.2, 0.5, 0.8),
            l(0.8, 0.5, 0.1),
        ];
        let global = [1.0, 0.0, 1.0, 0.0];
        let credit = assign_credit(&local, &global).unwrap();
        assert!(close(credit.consistency.retrieval, 1.0));
        // Extraction puts the two correct ones at positions 3 and 4 of 4.
        let d = |i: usize| 1.0 / ((i + 2) as f64).log2();
        assert!(close(
            credit.consistency.extraction,
            (d(2) + d(3)) / (d(0) + d(1))
        ));
        // Profile ties everything: each item gets the mean discount.
        let mean = (d(0) + d(1) + d(2) + d(3)) / 4.0;
        assert!(close(
            credit.consistency.profile,
            2.0 * mean / (d(0) + d(1))
        ));
        assert!(
            credit.weights.retrieval > credit.weights.profile
                && credit.weights.profile > credit.weights.extraction
        );
        let total = credit.weights.extraction + credit.weights.profile + credit.weights.retrieval;
        assert!(close(total, 1.0));
        let fin = final_rewards(&local[0], global[0], &credit);
        assert!(close(fin.retrieval, 0.9 + credit.weights.retrieval));
    }

    #[test]
    fn softmax_hand_computed() {
        let local = [l(1.0, 0.0, 0.0), l(0.0, 1.0, 0.0)];
        let global = [1.0, 0.0];
        let c = assign_credit(&local, &global).unwrap();
        // v = [1, 1/log2(3), mean of both discounts / 1]
        let v = [1.0, 1.0 / 3f64.log2(), (1.0 + 1.0 / 3f64.log2()) / 2.0];
        let z: f64 = v.iter().map(|x| x.exp()).sum();
        assert!(close(c.weights.extraction, v[0].exp() / z));
        assert!(close(c.weights.profile, v[1].exp() / z));
        assert!(close(c.weights.retrieval, v[2].exp() / z));
    }

    #[test]
    fn bad_groups_are_typed_errors() {
        assert!(assign_credit(&[], &[]).is_err());
        assert!(assign_credit(&[l(0.0, 0.0, 0.0)], &[1.0, 0.0]).is_err());
        assert!(assign_credit(&[l(f64::NAN, 0.0, 0.0)], &[1.0]).is_err());
    }

    #[test]
    fn advantages_hand_computed() {
        let a = advantages(&[1.0, 2.0, 3.0]);
        let std = (2.0f64 / 3.0).sqrt();
        assert!(close(a[0], -1.0 / std) && close(a[1], 0.0) && close(a[2], 1.0 / std));
        assert_eq!(advantages(&[0.5, 0.5]), vec![0.0, 0.0]);
    }
}
