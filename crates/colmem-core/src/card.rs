//! Card records: the fields of a ConMem strategy card and the typed edges between cards.
//!
//! A card is stored as a fragment of granularity [`Granularity::Card`](crate::Granularity)
//! (so the read rule applies to it) plus these fields; edges link two cards.

use serde::{Deserialize, Serialize};

use crate::id::FragmentId;

/// Whether a card is a reusable strategy or a warning distilled from a failure.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CardSign {
    /// A strategy that worked.
    Positive,
    /// A warning: what failed and why.
    Negative,
}

impl CardSign {
    /// The lowercase name used on the wire and in SQL.
    pub fn as_str(self) -> &'static str {
        match self {
            CardSign::Positive => "positive",
            CardSign::Negative => "negative",
        }
    }
}

/// The sections of a strategy card (DESIGN section 6).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct CardFields {
    /// The task the card was distilled from.
    pub task: String,
    /// What in a new task should bring the card to mind.
    pub trigger: String,
    /// When the card applies, and when it does not.
    pub applicability: String,
    /// The plan to follow.
    pub plan: String,
    /// How to carry the plan out.
    pub execution: String,
    /// How to check the result.
    pub evaluation: String,
    /// Strategy or warning.
    pub sign: CardSign,
}

/// How one card relates to another.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "relation")]
pub enum CardRelation {
    /// The source card backs the target up.
    Supports,
    /// The source card narrows the target, but only while `precondition` holds.
    Constrains {
        /// The condition under which the constraint is live.
        precondition: String,
    },
    /// The source card meets a need the target card states.
    Satisfies,
    /// The two cards contradict each other: never use both.
    Conflicts,
}

impl CardRelation {
    /// The lowercase name used on the wire and in SQL.
    pub fn as_str(&self) -> &'static str {
        match self {
            CardRelation::Supports => "supports",
            CardRelation::Constrains { .. } => "constrains",
            CardRelation::Satisfies => "satisfies",
            CardRelation::Conflicts => "conflicts",
        }
    }
}

/// A typed, weighted edge from one card to another.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct CardEdge {
    /// The source card.
    pub from: FragmentId,
    /// The target card.
    pub to: FragmentId,
    /// How they relate.
    #[serde(flatten)]
    pub relation: CardRelation,
    /// How strongly, in `[0, 1]`.
    pub weight: f32,
}
