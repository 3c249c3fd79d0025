//! colmem's source of truth: fragments, their immutable provenance, embeddings,
//! the access-graph event log, the hash-chained audit log, strategy cards and
//! the change feed that indexes follow, on SQLite.
//!
//! [`FragmentStore`] is the object-safe trait the rest of colmem uses;
//! [`SqliteStore`] implements it on one SQLite file (or in memory). Listing
//! and counting push a [`ReadFilter`](colmem_core::ReadFilter) into SQL as a
//! WHERE clause with bound parameters only, so a reader never sees what the
//! read rule refuses. The store knows nothing of the access graph itself
//! (`colmem-access` compiles the filter): it only persists the events.
//!
//! With the `conformance` feature, [`conformance::run`] checks any
//! implementation of the trait against the same behaviour.

mod audit;
mod codec;
#[cfg(feature = "conformance")]
pub mod conformance;
mod error;
mod read_sql;
mod schema;
mod sqlite;
mod store;

pub use audit::{AuditProblem, AuditStatus};
pub use error::{Error, Result};
pub use schema::SCHEMA_VERSION;
pub use sqlite::{Mode, SqliteStore, StoreConfig, Synchronous};
pub use store::{
    CardRecord, CardWrite, Delete, FragmentStore, Interaction, ListQuery, Order, Purge,
    ReadRecord, Supersede, VisibilityRecord, WriteReceipt,
};
