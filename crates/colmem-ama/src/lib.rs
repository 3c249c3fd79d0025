//! The AMA memory pipeline (Adaptive Memory via Multi-Agent Collaboration).
//!
//! This crate holds the roles as traits with offline, rule-based implementations:
//! - [`Constructor`]: raw turns, atomic facts in the five sentence patterns, episode
//!   summaries (topic shift, explicit request, full window) and profile entries;
//! - [`Retriever`]: query rewriting, the intent vector, routing and dynamic k.
//!
//! The judge, the refresher, the model-backed roles and the pipeline that runs them
//! through the read and write rules against the store and indexes are being built
//! (issue 6); nothing here writes or reads storage yet.

pub mod constructor;
pub mod retriever;
pub mod text;

pub use constructor::{
    Construction, Constructor, ConstructorConfig, Memory, OfflineConstructor, Pattern, TurnInput,
};
pub use retriever::{
    Intent, OfflineRetriever, QueryContext, QueryPlan, Retriever, RetrieverConfig, Route,
};
