//! Upkeep of a data directory: walking every stored fragment (for export),
//! erasing deleted text, consistent backups, and re-embedding after the embedder
//! changed.

use std::path::Path;

use colmem_core::{ChangeFeed as _, Embedding, FragmentId, StoredFragment, Timestamp};
use colmem_index::CatchUp;
use colmem_store::{BackupReport, Erase, FragmentStore as _};

use crate::error::Result;
use crate::memory::Memory;
use crate::private::PrivateFile;

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
        Ok(self.store.fragment_ids()?)
    }

    /// Calls `visit` with every stored fragment and its embedding, in id order
    /// (an administrator's export: no read filter applies). A deleted fragment comes
    /// as a tombstone: its ids and times, without its text, key, keywords or
    /// embedding, even while `[store] purge_deleted_after` keeps them.
    pub fn for_each_fragment(
        &self,
        mut visit: impl FnMut(StoredFragment) -> Result<()>,
    ) -> Result<u64> {
        let ids = self.fragment_ids()?;
        let mut count = 0;
        for chunk in ids.chunks(LOAD_BATCH) {
            for mut stored in self.store.load(chunk)? {
                if stored.fragment.deleted_at.is_some() {
                    stored.fragment.content.clear();
                    stored.fragment.key = None;
                    stored.fragment.keywords.clear();
                    stored.embedding = None;
                }
                visit(stored)?;
                count += 1;
            }
        }
        Ok(count)
    }

    /// Erases the text of fragments deleted at a user's request — a conversational
    /// forget, a retention run, an explicit erasure — as `[store]
    /// purge_deleted_after` says: at once when it is 0 (the default), else by the
    /// upkeep pass once that long has passed since the deletion (on a later session
    /// call, or when the directory is opened for writing). Either way it also erases
    /// every deletion due by now. What an erased fragment said (its text, key,
    /// keywords, embedding and card) leaves the store, its log and the index files;
    /// a tombstone of ids and times stays (see `FragmentStore::erase`). Each of `ids`
    /// must be deleted (else invalid input); ids purged meanwhile or erased already
    /// are skipped. Returns the ids erased now.
    pub fn erase(&self, ids: &[FragmentId]) -> Result<Vec<FragmentId>> {
        self.writable()?;
        let mut erased = if self.config.store.purge_deleted_after == 0 {
            self.store.erase(&Erase {
                fragments: ids.to_vec(),
            })?
        } else {
            for &id in ids {
                match self.store.get(id) {
                    Ok(f) if f.deleted_at.is_none() => {
                        return Err(colmem_store::Error::InvalidInput(format!(
                            "fragment {id} is not deleted: only a deleted fragment's text is erased; delete it first"
                        ))
                        .into());
                    }
                    Ok(_) | Err(colmem_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Vec::new()
        };
        // None of them is due: they are erased already.
        erased.extend(self.erasure_due()?);
        if !erased.is_empty() {
            self.flush()?;
        }
        Ok(erased)
    }

    /// The upkeep pass of [`Memory::erase`]: erases every deletion older than
    /// `[store] purge_deleted_after` whose text is still kept, and writes the index
    /// snapshot without it. Finds them through an index of those alone, so a pass
    /// with nothing due costs one lookup.
    pub(crate) fn erase_due(&self) -> Result<Vec<FragmentId>> {
        let erased = self.erasure_due()?;
        if !erased.is_empty() {
            self.flush()?;
        }
        Ok(erased)
    }

    /// Erases the deletions due by now, without writing the index snapshot.
    fn erasure_due(&self) -> Result<Vec<FragmentId>> {
        let delay = i64::try_from(self.config.store.purge_deleted_after).unwrap_or(i64::MAX);
        let by = Timestamp::from_millis(self.now().as_millis().saturating_sub(delay));
        let due = self.store.erasure_due(by)?;
        if due.is_empty() {
            return Ok(due);
        }
        Ok(self.store.erase(&Erase { fragments: due })?)
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
