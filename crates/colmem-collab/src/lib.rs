//! The Collaborative Memory loop (DESIGN section 7): users, specialist agents with
//! resources as tools, a coordinator that picks among the agents a user may invoke now,
//! memory-first answering with tool fallback, an aggregator, the loop's metrics, and an
//! independent checker of every tool call and memory read.
//!
//! - [`Coordinator`]: [`OfflineCoordinator`] (BM25 over the candidates' specialisations, an
//!   embedding tie-break) and [`LlmCoordinator`] (a chat model that may only choose among the
//!   authorised candidates; anything else is [`Error::OutOfSet`] or the offline fallback).
//!   The candidates always come from the access graph, never from a model.
//! - [`Specialist`] agents with [`Resource`]s: a [`KnowledgeBase`] (BM25 over documents) or a
//!   deterministic [`Computation`]. A tool is called only if the agent may use it now (`R(a,t)`).
//! - [`Collaboration`]: recall through the AMA pipeline (the read rule inside the search); a
//!   confident remembered [`Finding`] is used as is, otherwise a tool is called and its finding
//!   written back with provenance naming the resource; the [`Aggregator`] combines answers.
//! - [`QueryRecord`], [`Summary`] and [`AccessMatrix`]: accuracy, agent and resource
//!   utilisation, and user × agent × resource counts.
//! - [`Checker`]: replays the raw access events with its own code and counts every logged
//!   [`Event`] that was not allowed at its moment.

mod agent;
mod checker;
mod collaboration;
mod coordinator;
mod error;
mod event;
mod finding;
mod metrics;
mod resource;

pub use agent::Specialist;
pub use checker::{CheckReport, Checker, Violation};
pub use collaboration::{CollabConfig, Collaboration, Outcome, Sharing};
pub use coordinator::{
    Coordinator, LlmCoordinator, OfflineCoordinator, OutOfSet, Selection, SelectionConfig,
};
pub use error::{Error, Result};
pub use event::{Event, EventLog};
pub use finding::{AgentAnswer, Aggregator, Finding, Source};
pub use metrics::{AccessMatrix, MatrixCell, QueryRecord, Summary};
pub use resource::{
    Computation, Document, KnowledgeBase, Resource, ToolAnswer, break_even, coverage, numbers,
};
