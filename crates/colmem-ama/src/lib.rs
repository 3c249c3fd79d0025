//! The AMA memory pipeline (Adaptive Memory via Multi-Agent Collaboration).
//!
//! The roles are traits, each with an offline, rule-based implementation and a
//! model-backed one ([`llm`]):
//! - [`Constructor`]: raw turns, atomic facts in the five sentence patterns, episode
//!   summaries (topic shift, explicit request, full window) and profile entries;
//! - [`Retriever`]: query rewriting, the intent vector, routing and dynamic k;
//! - [`Judge`]: relevance of what was retrieved, conflicts of new input with held facts;
//! - [`Refresher`]: closes stale facts in favour of their successors, deletes only on
//!   the user's explicit instruction or by retention;
//! - [`Answerer`]: the answer of full mode.
//!
//! [`Pipeline`] runs them against a [`FragmentStore`](colmem_store::FragmentStore) and a
//! [`HybridIndex`](colmem_index::HybridIndex), always inside a [`Caller`]: a request
//! that passed the access check, whose read filter goes inside every search.

pub mod answer;
pub mod caller;
pub mod categories;
pub mod change;
pub mod constructor;
mod error;
pub mod judge;
pub mod llm;
pub mod pipeline;
pub mod refresher;
pub mod retriever;
pub mod text;
pub mod values;

pub use answer::{Answer, Answerer, EvidenceSpan};
pub use caller::Caller;
pub use constructor::{
    Construction, Constructor, ConstructorConfig, Memory, OfflineConstructor, Origin, Pattern,
    TurnInput,
};
pub use error::{Error, Result};
pub use judge::{Conflict, ConflictReason, Judge, JudgeConfig, OfflineJudge, Relevance};
pub use llm::{LlmAnswerer, LlmConstructor, LlmJudge, LlmRefresher, LlmRetriever, LlmRoleConfig};
pub use pipeline::{
    Answered, Deletion, ForgetPlan, MAX_K, Pipeline, PipelineConfig, Recall, RecallOptions,
    Recalled, Remembered, Roles, RoundKind, Stored, turn_key,
};
pub use refresher::{OfflineRefresher, Refresher};
pub use retriever::{
    Intent, OfflineRetriever, QueryContext, QueryPlan, Retriever, RetrieverConfig, Route,
};
