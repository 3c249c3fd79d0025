//! The change feed: the ordered stream of store changes that derived indexes follow.

use crate::error::FeedError;
use crate::fragment::{Embedding, Fragment};
use crate::id::FragmentId;

/// What happened to a fragment at one change sequence number.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ChangeOp {
    /// Inserted: index its text and embedding.
    Put,
    /// Its access metadata changed (superseded, validity closed): refresh what the filter reads.
    Meta,
    /// Tombstoned: it must no longer be returned.
    Delete,
    /// Purged: forget everything about it, text included.
    Purge,
}

/// One change, at a strictly increasing sequence number.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Change {
    /// The sequence number; the first change is 1.
    pub seq: u64,
    /// The fragment changed.
    pub fragment: FragmentId,
    /// What changed.
    pub op: ChangeOp,
    /// A random number the store drew for this change. A store and its backups agree
    /// on it; another store, or a backup written on after it was restored, almost
    /// surely does not. An index checks it to know its snapshot follows this store.
    pub stamp: u64,
}

/// A fragment as an index needs it: the record and its embedding, if any.
#[derive(Clone, PartialEq, Debug)]
pub struct StoredFragment {
    /// The fragment.
    pub fragment: Fragment,
    /// Its embedding.
    pub embedding: Option<Embedding>,
}

/// The ordered changes of a store, for indexes to catch up from.
///
/// An index remembers the last `seq` it applied and that change's `stamp`; on open it
/// checks that the feed's change of that `seq` carries the stamp (else the index was
/// made from another store and is rebuilt), asks for the changes after it and applies
/// them in order. Losing an index loses no data.
///
/// Stamps are the feed's contract as much as the order: each change's is drawn at
/// random (never a counter, never 0 for all), and a copy of the store (a backup) keeps
/// them.
pub trait ChangeFeed: Send + Sync {
    /// The sequence number of the latest change (0 when there is none).
    fn head(&self) -> Result<u64, FeedError>;

    /// Up to `limit` changes with `seq > after`, in order.
    fn changes_after(&self, after: u64, limit: usize) -> Result<Vec<Change>, FeedError>;

    /// The current records of `ids` that still exist (purged ones are absent), in any order.
    fn load(&self, ids: &[FragmentId]) -> Result<Vec<StoredFragment>, FeedError>;
}
