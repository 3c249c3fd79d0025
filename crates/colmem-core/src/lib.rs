//! The shared vocabulary of colmem.
//!
//! Every other crate speaks in these types: principal ids, [`Timestamp`] and
//! [`Clock`], [`Fragment`] with its immutable [`Provenance`], [`Scope`], the
//! data-only [`ReadFilter`], access-graph events, audit entries and the
//! [`ChangeFeed`] that indexes follow. This crate depends on nothing of ours and
//! holds no policy: deciding who may read what is `colmem-access`'s job.

mod audit;
mod card;
mod error;
mod event;
mod feed;
mod filter;
mod fragment;
mod id;
mod time;

pub use audit::{AuditEntry, AuditEvent, Digest};
pub use card::{CardEdge, CardFields, CardRelation, CardSign};
pub use error::{Denial, Error, ErrorKind, FeedError, Forbidden, Result};
pub use event::{AccessChange, AccessEvent, Edge, GroupKind, Member, Principal};
pub use feed::{Change, ChangeFeed, ChangeOp, StoredFragment};
pub use filter::{FilterParts, IdSet, ReadFilter, View};
pub use fragment::{
    Draft, Embedding, Fragment, FragmentMeta, Granularity, Kind, NewFragment, Provenance, Scope,
    Source,
};
pub use id::{AgentId, FragmentId, GroupId, PrincipalId, ResourceId, UserId};
pub use time::{Clock, LogicalClock, SystemClock, Timestamp, Validity};
