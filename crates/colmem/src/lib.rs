//! colmem: a memory layer for teams of LLM agents that serve many users.
//!
//! This crate is the facade: it wires the parts together and re-exports them,
//! and holds no domain logic of its own.
//!
//! - [`Memory::open`] opens a data directory: one SQLite file (`colmem.db`), the
//!   derived indexes (`index/`: usearch HNSW and tantivy BM25, caught up from the
//!   store's change feed), the embedder and the roles the [`Config`] names
//!   (offline by default), and the access graph rebuilt from the store's event
//!   log. The directory is locked against a second writer.
//! - [`Memory::admin`] is the administrator's handle: principals, grants and
//!   revocations, audit queries, the access matrix, "who could see this",
//!   explanations of the read rule, and purges.
//! - [`Memory::erase`] erases the text of deleted fragments (at once, or after
//!   `[store] purge_deleted_after`), keeping tombstones of ids and times.
//! - [`Config`] is read from TOML with `COLMEM_…` environment overrides.
//!
//! Every read and write takes its time from the memory's clock (the system
//! clock, or a logical clock for scenarios and tests): no caller picks the time
//! of a read.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod admin;
mod config;
mod error;
mod lock;
mod memory;
mod private;
mod session;
mod upkeep;

pub use admin::{AccessMatrix, Admin, Granted, MatrixCell, PurgeTarget};
pub use config::{
    CONFIG_FILE, ClockConfig, Config, ENV_PREFIX, EmbedderConfig, IndexConfig, KEY_RANGES,
    KeyRange, LocalEmbedderConfig, NOT_CONFIG_VARS, PolicyConfig, StoreSettings, key_range,
};
pub use error::{Error, Result};
pub use lock::LOCK_FILE;
pub use memory::{Access, INDEX_DIR, Memory, STORE_FILE};
pub use private::PrivateFile;
pub use session::{Forget, Forgotten, Session, Shared};
pub use upkeep::ReindexReport;

pub use colmem_ama::{
    Answered, Deletion, ForgetPlan, Origin, PipelineConfig, Recall, RecallOptions, Recalled,
    Remembered, RoundKind, TurnInput,
};

pub use colmem_access::{Check, Condition, Explanation};
pub use colmem_cards::{
    BankConfig, Budget, ComposedCard, Composition, LearnReport, TaskContext, Trajectory,
};
pub use colmem_core::{
    AccessChange, AccessEvent, AgentId, AuditEntry, AuditEvent, Digest, Draft, Edge, ErrorKind,
    Forbidden, Fragment, FragmentId, Granularity, GroupId, GroupKind, Kind, Member, Principal,
    ResourceId, Scope, StoredFragment, Timestamp, UserId, Validity, View,
};
pub use colmem_eval::locomo;
pub use colmem_store::{AuditProblem, AuditStatus, BackupReport, Disagreement, StoreCheck};

/// Each part on its own, for callers that want more than the facade shows.
pub mod parts {
    pub use colmem_access as access;
    pub use colmem_ama as ama;
    pub use colmem_cards as cards;
    pub use colmem_core as core;
    pub use colmem_eval as eval;
    pub use colmem_index as index;
    pub use colmem_llm as llm;
    pub use colmem_store as store;
}
