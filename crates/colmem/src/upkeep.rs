//! Upkeep of a data directory: walking every stored fragment (for export),
//! consistent backups, and re-embedding after the embedder changed.

use std::collections::BTreeSet;
use std::path::Path;

use colmem_core::{ChangeFeed as _, ChangeOp, Embedding, FragmentId, StoredFragment};
use colmem_index::CatchUp;
use colmem_store::BackupReport;

use crate::error::Result;
use crate::memory::Memory;
use crate::private::PrivateFile;

/// Changes read per batch when listing fragments from the feed.
const FEED_BATCH: usize = 4096;
/// Fragments loaded (and embedded) per batch.
const LOAD_BATCH: usize = 256;

/// What [`Memory::reindex`] did.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct ReindexReport {
    /// The id of the embedder the vectors now come from.
    pub embedder: String,
    /// Live fragments looked at.
    pub examined: u64,
    /// Fragments whose vectors were recomputed with the current embedder.
    pub reembedded: u64,
    /// What the index's catch-up did afterwards.
    pub catch_up: CatchUp,
}

impl Memory {
    /// The ids of every fragment the store holds (tombstones included, purged
    /// ones not), in id order.
    pub fn fragment_ids(&self) -> Result<Vec<FragmentId>> {
        let mut ids = BTreeSet::new();
        let mut after = 0;
        loop {
            let changes = self.store.changes_after(after, FEED_BATCH)?;
            let Some(last) = changes.last() else {
                break;
            };
            after = last.seq;
            for change in changes {
                match change.op {
                    ChangeOp::Purge => {
                        ids.remove(&change.fragment);
                    }
                    ChangeOp::Put | ChangeOp::Meta | ChangeOp::Delete => {
                        ids.insert(change.fragment);
                    }
                }
            }
        }
        Ok(ids.into_iter().collect())
    }

    /// Calls `visit` with every stored fragment and its embedding, in id order
    /// (an administrator's export: no read filter applies).
    pub fn for_each_fragment(
        &self,
        mut visit: impl FnMut(StoredFragment) -> Result<()>,
    ) -> Result<u64> {
        let ids = self.fragment_ids()?;
        let mut count = 0;
        for chunk in ids.chunks(LOAD_BATCH) {
            for stored in self.store.load(chunk)? {
                visit(stored)?;
                count += 1;
            }
        }
        Ok(count)
    }

    /// Copies the store into a new file `dest` through SQLite's backup API: one
    /// committed state, audit chain included. Indexes are not copied (they are
    /// rebuilt from the store when the copy is opened). The copy is a
    /// [`PrivateFile`]: its owner's only (0600), and refused ([`Error::Exists`](crate::Error::Exists))
    /// when anything is at `dest`, a symbolic link included.
    pub fn backup(&self, dest: &Path) -> Result<BackupReport> {
        let file = PrivateFile::new(dest)?;
        let report = self.store.backup(file.staged())?;
        file.publish()?;
        Ok(report)
    }

    /// Recomputes, with the current embedder, the vectors of every live fragment
    /// that has none or one from another embedder; stores them (one transaction
    /// per batch), then lets the index catch up and persists it. `progress` is
    /// called with `(done, total)` after each batch.
    pub fn reindex(&self, mut progress: impl FnMut(u64, u64)) -> Result<ReindexReport> {
        let engine = self.engine()?;
        let ids = self.fragment_ids()?;
        let total = ids.len() as u64;
        let current = engine.embedder.id().to_owned();
        let mut done = 0;
        let mut reembedded = 0;
        progress(0, total);
        for chunk in ids.chunks(LOAD_BATCH) {
            let stale: Vec<StoredFragment> = self
                .store
                .load(chunk)?
                .into_iter()
                .filter(|s| s.fragment.deleted_at.is_none())
                .filter(|s| s.embedding.as_ref().is_none_or(|e| e.embedder != current))
                .collect();
            if !stale.is_empty() {
                let texts: Vec<&str> = stale.iter().map(|s| s.fragment.content.as_str()).collect();
                let vectors = engine.embedder.embed_checked(&texts)?;
                let items: Vec<(FragmentId, Embedding)> = stale
                    .iter()
                    .zip(vectors)
                    .map(|(s, vector)| {
                        (
                            s.fragment.id,
                            Embedding {
                                embedder: current.clone(),
                                vector,
                            },
                        )
                    })
                    .collect();
                reembedded += self.store.replace_embeddings(&items)? as u64;
            }
            done += chunk.len() as u64;
            progress(done, total);
        }
        let catch_up = engine.index.catch_up(self.store.as_ref())?;
        self.persist_index()?;
        Ok(ReindexReport {
            embedder: current,
            examined: total,
            reembedded,
            catch_up,
        })
    }
}
