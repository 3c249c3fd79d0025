//! [`Admit`]: the set of fragments a search may return, handed to every backend.
//!
//! Backends apply it *inside* their search (as the HNSW predicate, in the BM25
//! collector, as the list an exact scan walks), never to a finished top-k.

use std::sync::Arc;

use roaring::RoaringTreemap;

/// The fragments a search may return, by fragment id.
#[derive(Clone, Debug)]
pub enum Admit {
    /// Every fragment in the index: no filter.
    All,
    /// Only these fragment ids.
    Only(Arc<RoaringTreemap>),
}

impl Admit {
    /// Only the given ids.
    pub fn only(ids: RoaringTreemap) -> Self {
        Admit::Only(Arc::new(ids))
    }

    /// Only the given ids, from any iterator.
    pub fn from_ids(ids: impl IntoIterator<Item = u64>) -> Self {
        Admit::only(ids.into_iter().collect())
    }

    /// Whether fragment `id` may be returned.
    #[inline]
    pub fn contains(&self, id: u64) -> bool {
        match self {
            Admit::All => true,
            Admit::Only(ids) => ids.contains(id),
        }
    }

    /// The admitted ids when the set is explicit.
    pub fn ids(&self) -> Option<&RoaringTreemap> {
        match self {
            Admit::All => None,
            Admit::Only(ids) => Some(ids),
        }
    }

    /// The number of admitted ids, or `None` for [`Admit::All`].
    pub fn count(&self) -> Option<u64> {
        self.ids().map(RoaringTreemap::len)
    }
}
