//! The [`FragmentStore`] trait and the requests and records it speaks in.

use std::fmt;

use colmem_core::{
    AccessEvent, AgentId, AuditEntry, AuditEvent, CardEdge, CardFields, ChangeFeed, Digest,
    Embedding, Fragment, FragmentId, FragmentMeta, Granularity, NewFragment, ReadFilter, Timestamp,
    UserId,
};

use crate::audit::AuditStatus;
use crate::error::Result;

/// The fragments one interaction writes: they commit together with their
/// embeddings and one audit entry, or not at all.
#[derive(Clone, PartialEq, Debug)]
pub struct Interaction {
    /// The user of the request.
    pub user: UserId,
    /// The serving agent.
    pub agent: AgentId,
    /// The fragments, already accepted by the write rule.
    pub fragments: Vec<NewFragment>,
    /// A caller-chosen key: repeating a write with the same key returns the
    /// original ids and writes nothing.
    pub idempotency_key: Option<String>,
}

/// A strategy card to write: a fragment of granularity `Card` plus its fields.
#[derive(Clone, PartialEq, Debug)]
pub struct CardWrite {
    /// The user of the request.
    pub user: UserId,
    /// The serving agent.
    pub agent: AgentId,
    /// The card's fragment; its granularity must be [`Granularity::Card`].
    pub fragment: NewFragment,
    /// The card's sections.
    pub fields: CardFields,
    /// The current card this one replaces (a merge): closed and linked to the new
    /// card as [`FragmentStore::supersede_by`] does, in the same transaction, so no
    /// crash leaves both current. A replaced card that is not current refuses
    /// the whole write.
    pub replaces: Option<FragmentId>,
    /// As for [`Interaction::idempotency_key`].
    pub idempotency_key: Option<String>,
}

/// What a write did.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct WriteReceipt {
    /// The ids of the written fragments, in the order given.
    pub ids: Vec<FragmentId>,
    /// `true` when the idempotency key had been seen: nothing was written now.
    pub replayed: bool,
}

/// Replace a current fact by a newer version.
#[derive(Clone, PartialEq, Debug)]
pub struct Supersede {
    /// The user of the request.
    pub user: UserId,
    /// The serving agent.
    pub agent: AgentId,
    /// The version to close.
    pub old: FragmentId,
    /// The version that replaces it.
    pub new: NewFragment,
}

/// Close a current version in favour of a successor that is already stored (when one
/// new fact makes several held versions stale).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SupersedeBy {
    /// The user of the request.
    pub user: UserId,
    /// The serving agent.
    pub agent: AgentId,
    /// The version to close.
    pub old: FragmentId,
    /// The current version that replaces it.
    pub successor: FragmentId,
}

/// Tombstone a fragment.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Delete {
    /// The user of the request.
    pub user: UserId,
    /// The serving agent.
    pub agent: AgentId,
    /// The fragment.
    pub fragment: FragmentId,
}

/// Forget a fragment entirely. The caller has checked that `admin` is an administrator.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Purge {
    /// The administrator, as recorded in the audit log.
    pub admin: String,
    /// The fragment.
    pub fragment: FragmentId,
}

/// Forget several fragments entirely, in one transaction. The caller has checked
/// that `admin` is an administrator.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PurgeMany {
    /// The administrator, as recorded in the audit log.
    pub admin: String,
    /// The fragments.
    pub fragments: Vec<FragmentId>,
}

/// Erase the text of deleted fragments: each stays as a tombstone of ids and times.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Erase {
    /// The fragments; each must be deleted.
    pub fragments: Vec<FragmentId>,
}

/// One read to audit: who read, and the ids it returned.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ReadRecord {
    /// The user of the request.
    pub user: UserId,
    /// The serving agent.
    pub agent: AgentId,
    /// The ids returned, in order.
    pub returned: Vec<FragmentId>,
}

/// The order of listed fragments.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Order {
    /// Ascending ids (oldest first).
    #[default]
    OldestFirst,
    /// Descending ids (newest first).
    NewestFirst,
}

/// Narrowings of a listing; none can widen what the [`ReadFilter`] admits.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct ListQuery {
    /// Only fragments with this subject key (e.g. all versions of one fact).
    pub key: Option<String>,
    /// Only this granularity.
    pub granularity: Option<Granularity>,
    /// Only ids after this one, in the listing's order (a page cursor).
    pub after: Option<FragmentId>,
    /// At most this many.
    pub limit: Option<usize>,
    /// The order.
    pub order: Order,
}

/// What "who could see fragment f at time t" needs: the fragment's access
/// metadata and the access event log up to `t`.
///
/// The store does not know the read rule's graph (that is `colmem-access`), so
/// the administrator query is answered in two steps: the store returns this
/// record, and the caller replays `events` into an access graph as of `at`,
/// compiles a `ReadFilter` for each `(user, agent)` pair with `now = at`, and
/// keeps the pairs whose filter admits `meta`.
#[derive(Clone, PartialEq, Debug)]
pub struct VisibilityRecord {
    /// The moment asked about.
    pub at: Timestamp,
    /// The fragment's access metadata (with its record-time stamps, so a
    /// version check at `at` is exact).
    pub meta: FragmentMeta,
    /// Every access event with `event.at <= at`, in log order (replay them with
    /// `AccessGraph::from_events_until`: a revocation among them may cancel a grant
    /// dated after `at`).
    pub events: Vec<AccessEvent>,
}

/// A stored strategy card.
#[derive(Clone, PartialEq, Debug)]
pub struct CardRecord {
    /// The card's fragment.
    pub fragment: Fragment,
    /// Its sections.
    pub fields: CardFields,
}

/// The source of truth for fragments, provenance, the access event log, the
/// audit chain and cards. Object-safe: use it as `Arc<dyn FragmentStore>`.
///
/// Reads take a [`ReadFilter`] compiled by `colmem-access` and return only what
/// it admits; `get` and friends are unfiltered and meant for the write rule,
/// administrators and indexes. Record times (`superseded_at`, `deleted_at`,
/// audit times) come from the store's clock.
pub trait FragmentStore: ChangeFeed + Send + Sync + fmt::Debug {
    /// Writes one interaction in one transaction with its `Write` audit entry.
    fn write(&self, interaction: &Interaction) -> Result<WriteReceipt>;

    /// Writes one strategy card (fragment, fields and audit entry) in one transaction.
    fn write_card(&self, card: &CardWrite) -> Result<WriteReceipt>;

    /// The ids a write under `idempotency_key` wrote, or `None` if no write used it.
    fn idempotent_ids(&self, idempotency_key: &str) -> Result<Option<Vec<FragmentId>>>;

    /// The fragment with this id, whatever its state (tombstones included); unfiltered.
    fn get(&self, id: FragmentId) -> Result<Fragment>;

    /// The fragment's embedding, if it has one.
    fn embedding(&self, id: FragmentId) -> Result<Option<Embedding>>;

    /// The fragments `filter` admits, narrowed by `query`.
    fn list(&self, filter: &ReadFilter, query: &ListQuery) -> Result<Vec<Fragment>>;

    /// How many fragments `filter` admits, narrowed by `query` (its limit and order are ignored).
    fn count(&self, filter: &ReadFilter, query: &ListQuery) -> Result<u64>;

    /// Closes the old version's world-time validity at the new one's start,
    /// stamps its `superseded_at` and `superseded_by`, writes the new version,
    /// and audits a `Write` and an `Update`, in one transaction. Returns the new id.
    fn supersede(&self, request: &Supersede) -> Result<FragmentId>;

    /// As [`supersede`](FragmentStore::supersede), with a successor already stored and
    /// current: closes the old version at the successor's start, links it, and audits an
    /// `Update`, in one transaction.
    fn supersede_by(&self, request: &SupersedeBy) -> Result<()>;

    /// Tombstones a fragment not deleted yet, current or a past version (`deleted_at` =
    /// now), and audits a `Delete`.
    fn delete(&self, request: &Delete) -> Result<()>;

    /// Removes a fragment with its provenance, embedding and card, overwrites the
    /// freed space, audits a `Purge` by id, and records a `Purge` change so
    /// indexes forget it too. Done once committed: a backend that must then flush
    /// a log (SQLite's checkpoint) and is held off by readers does so later rather
    /// than report the purge failed.
    fn purge(&self, request: &Purge) -> Result<()>;

    /// As [`purge`](FragmentStore::purge) for each of `request.fragments`, in one
    /// transaction: an id that does not exist refuses the whole request
    /// ([`crate::Error::NotFound`]) and nothing is purged.
    fn purge_many(&self, request: &PurgeMany) -> Result<()>;

    /// Erases what a deleted fragment says — its text, key, keywords, embedding and
    /// card — for each of `request.fragments` not erased yet, in one transaction. The
    /// row stays as a tombstone: provenance (ids), scope, validity and record times,
    /// so the audit chain's ids still resolve and "who could see" still answers; the
    /// digest of the text stays in the audit's write entry. Each erased fragment gets
    /// a `Purge` change, so indexes forget its text too, and the request one `Erase`
    /// audit entry. Freed space is overwritten and the log flushed as by a purge.
    /// A fragment not deleted refuses the whole request
    /// ([`crate::Error::InvalidInput`]); ids gone (purged) or erased already are
    /// skipped. Returns the ids erased now, in the order given.
    fn erase(&self, request: &Erase) -> Result<Vec<FragmentId>>;

    /// Appends an access-graph event (and its audit entry) to the log, which keeps
    /// the order of recording, with the moment it is recorded; refuses one dated
    /// before the last event was recorded ([`crate::Error::AccessEventBackdated`]: the
    /// access layer refuses one dated before now). Returns its position in the log.
    fn append_access_event(&self, event: &AccessEvent) -> Result<u64>;

    /// The whole access event log, in the order of recording.
    fn access_events(&self) -> Result<Vec<AccessEvent>>;

    /// The data for "who could see fragment `id` at `at`"; see [`VisibilityRecord`].
    fn visibility_at(&self, id: FragmentId, at: Timestamp) -> Result<VisibilityRecord>;

    /// Appends one audit entry, chained to the last. Writes and access events are
    /// audited by the calls that record them, with what they recorded: a `Write`
    /// or `Access` entry given here is refused ([`crate::Error::InvalidInput`]).
    fn append_audit(&self, event: &AuditEvent) -> Result<AuditEntry>;

    /// Appends one compact `Read` entry (ids only) per read, all in one transaction.
    fn record_reads(&self, reads: &[ReadRecord]) -> Result<()>;

    /// Up to `limit` audit entries with `seq > after`, in order.
    fn audit_entries(&self, after: u64, limit: usize) -> Result<Vec<AuditEntry>>;

    /// Checks the whole chain — every hash, every link, no gap, nothing missing at
    /// the end — and the store against it: every live fragment's text, scope and
    /// provenance against its write entry, every access event against the entry
    /// that recorded it, and a store holding either with an empty chain is broken.
    fn verify_audit(&self) -> Result<AuditStatus> {
        self.verify_audit_against(None)
    }

    /// [`verify_audit`](FragmentStore::verify_audit), and, given the hash of a head
    /// published elsewhere, that it is one of the chain's entries (or its anchor):
    /// a chain rewritten from before it no longer holds it.
    fn verify_audit_against(&self, published: Option<Digest>) -> Result<AuditStatus>;

    /// The head of the audit chain: the last entry's `(seq, hash)` as recorded,
    /// `(0, zeros)` for an empty log. Publish it elsewhere to check the chain against.
    fn audit_head(&self) -> Result<(u64, Digest)>;

    /// Moves the entries with `seq <= up_to` out of the store and returns them,
    /// for the caller to archive; the chain stays verifiable from an anchor.
    fn archive_audit(&self, up_to: u64) -> Result<Vec<AuditEntry>>;

    /// The card with this id; unfiltered.
    fn card(&self, id: FragmentId) -> Result<CardRecord>;

    /// The cards `filter` admits, narrowed by `query`.
    fn list_cards(&self, filter: &ReadFilter, query: &ListQuery) -> Result<Vec<CardRecord>>;

    /// Adds an edge between two cards, or replaces the weight and precondition
    /// of the edge with the same ends and relation.
    fn put_card_edge(&self, edge: &CardEdge) -> Result<()>;

    /// The edges leaving or entering any of `cards`.
    fn card_edges(&self, cards: &[FragmentId]) -> Result<Vec<CardEdge>>;
}
