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
//! With the `conformance` feature, `conformance::run` checks any
//! implementation of the trait against the same behaviour.
//!
//! # The audit log and its growth
//!
//! Every write, update, delete, erasure, purge, access event and (through
//! [`FragmentStore::record_reads`]) every read appends an entry chained by
//! BLAKE3 hash to the one before it. Entries hold ids and digests, never text:
//! a read entry is the reader and the returned ids (tens of bytes plus about
//! eight per id), and a batch of reads is one transaction. The log grows
//! linearly with activity; [`FragmentStore::archive_audit`] moves a prefix out
//! for the caller to keep in cold storage and leaves an anchor `(seq, hash)`,
//! so the remaining chain still verifies, and the archived entries verify
//! against each other and the anchor. The head `(seq, hash)` that
//! [`FragmentStore::audit_head`] returns can be published elsewhere and given to
//! [`FragmentStore::verify_audit_against`] to detect a rewrite of the whole log.
//! Verification also checks the store against the chain: every live fragment's
//! text and provenance against the digests its write entry recorded, and the
//! access event log against the access entries.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod audit;
mod backup;
mod codec;
#[cfg(feature = "conformance")]
pub mod conformance;
mod erasure;
mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod read_sql;
mod reembed;
mod schema;
mod sqlite;
mod store;
mod verify;

pub use audit::{AuditProblem, AuditStatus, Disagreement, StoreCheck};
pub use backup::BackupReport;
pub use error::{Error, Result};
pub use schema::SCHEMA_VERSION;
pub use sqlite::{Mode, SqliteStore, StoreConfig, Synchronous};
pub use store::{
    CardRecord, CardWrite, Delete, Erase, FragmentStore, Interaction, ListQuery, Order, Purge,
    PurgeMany, ReadRecord, Supersede, SupersedeBy, VisibilityRecord, WriteReceipt,
};
