//! ConMem strategy cards: the signed card bank, the typed card graph, needs-aware
//! retrieval, coordination and budgeted composition (DESIGN section 6).
//!
//! A card is a fragment of granularity `Card` with the sections of
//! [`CardFields`](colmem_core::CardFields), so the read rule applies to it. The
//! [`CardBank`] runs both paths over a [`FragmentStore`](colmem_store::FragmentStore):
//!
//! - **write** ([`CardBank::learn`], after tasks are scored): [`Reflector`] turns
//!   failures into warnings, [`Aggregator`] successes into strategies; candidates are
//!   admitted by a weighted sum of reliability, novelty, recency and expected utility;
//!   an admitted near-duplicate is merged ([`Merger`]) into one card clipped to
//!   [`CardBounds`]; a [`RelationJudge`] puts typed edges (`supports`, `constrains`,
//!   `satisfies`, `conflicts`) to related cards.
//! - **read** ([`CardBank::compose`]): a [`NeedsProfiler`] profile, a needs-aware score,
//!   MMR, expansion along the [`CardGraph`] within the reader's visible cards
//!   (`conflicts` blocks, `constrains` only when live), coordination (duplicates,
//!   conflicts, deferred constraints) and role-aware composition into a [`Budget`],
//!   reported in a [`CompositionReport`].
//!
//! Every role has an offline, deterministic implementation (in [`roles`]) and a
//! model-backed one (in [`llm`], prompts under `prompts/`).
//!
//! Prequential order comes from the read rule: a composition for a task at time `t`
//! sees only cards created at or before `t`, and `learn` writes at its writer's moment.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod bank;
pub mod card;
mod error;
pub mod graph;
pub mod llm;
pub mod read;
pub mod roles;
pub mod text;
mod trajectory;

pub use bank::{Admission, BankConfig, CardBank, LearnReport, Roles, WriteConfig, Writer};
pub use card::{Card, CardBounds, CardDraft};
pub use error::{Error, Result};
pub use graph::CardGraph;
pub use read::{
    Budget, ComposedCard, Composition, CompositionReport, Form, Needs, PruneReason, Pruned,
    ReadConfig, Role, ScoreWeights, TaskContext,
};
pub use roles::{
    Admitter, Aggregator, Assessment, Merger, NeedsProfiler, OfflineAdmitter, OfflineAggregator,
    OfflineMerger, OfflineNeedsProfiler, OfflineReflector, OfflineRelationJudge, Reflection,
    Reflector, RelationJudge,
};
pub use trajectory::{
    Decision, Outcome, Step, Trajectory, TrajectoryLineError, parse_trajectories,
};
