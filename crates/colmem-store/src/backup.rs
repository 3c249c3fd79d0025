//! Consistent copies of a store file through SQLite's online backup API.
//!
//! The copy is taken from a separate read connection: SQLite restarts the copy
//! if another connection writes meanwhile, so the result is always one
//! committed state of the database, with its audit chain and change sequence.

use std::path::Path;
use std::time::Duration;

use rusqlite::backup::Backup;
use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};
use crate::sqlite::SqliteStore;

/// Pages copied per backup step.
const PAGES_PER_STEP: i32 = 256;
/// The pause between steps, so writers are not starved during a long copy.
const PAUSE_BETWEEN_STEPS: Duration = Duration::from_millis(2);
/// How long the source connection waits on a lock before a step reports busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// What a backup copied.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BackupReport {
    /// Database pages in the copy.
    pub pages: u64,
    /// The copy's size in bytes.
    pub bytes: u64,
}

impl SqliteStore {
    /// Copies the database into a new file at `dest` through SQLite's backup API.
    ///
    /// `dest` must not exist: a backup never overwrites. The copy opens as a store
    /// of its own with [`SqliteStore::open`].
    pub fn backup(&self, dest: impl AsRef<Path>) -> Result<BackupReport> {
        let dest = dest.as_ref();
        let Some(source) = self.path() else {
            return Err(Error::InvalidInput(
                "an in-memory store has no file to back up: open a store on a file".to_owned(),
            ));
        };
        if dest.exists() {
            return Err(Error::InvalidInput(format!(
                "{} already exists: a backup never overwrites, choose a new file",
                dest.display()
            )));
        }
        let cannot_open = |path: &Path, e: rusqlite::Error| Error::CannotOpen {
            path: path.to_path_buf(),
            detail: e.to_string(),
        };
        let from = Connection::open_with_flags(
            source,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| cannot_open(source, e))?;
        from.busy_timeout(BUSY_TIMEOUT)?;
        let mut to = Connection::open_with_flags(
            dest,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| cannot_open(dest, e))?;
        let pages = {
            let backup = Backup::new(&from, &mut to)?;
            backup.run_to_completion(PAGES_PER_STEP, PAUSE_BETWEEN_STEPS, None)?;
            backup.progress().pagecount
        };
        // The copy carries the source's WAL flag: fold everything into the file itself.
        to.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        drop(to);
        let bytes = std::fs::metadata(dest)
            .map(|m| m.len())
            .map_err(|e| Error::CannotOpen {
                path: dest.to_path_buf(),
                detail: e.to_string(),
            })?;
        Ok(BackupReport {
            pages: u64::try_from(pages).unwrap_or(0),
            bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use colmem_core::{
        AgentId, ChangeFeed as _, Granularity, Kind, NewFragment, Provenance, Scope, Source,
        Timestamp, UserId, Validity,
    };

    use super::*;
    use crate::{AuditStatus, FragmentStore, Interaction, StoreConfig};

    fn fragment(user: UserId, agent: AgentId, text: &str) -> NewFragment {
        NewFragment {
            key: None,
            content: text.to_owned(),
            granularity: Granularity::Fact,
            kind: Kind::Observation,
            scope: Scope::User,
            provenance: Provenance {
                created_at: Timestamp::from_millis(1),
                user,
                agents: BTreeSet::from([agent]),
                resources: BTreeSet::new(),
                source: Source::default(),
            },
            validity: Validity::always(),
            keywords: Vec::new(),
            embedding: None,
        }
    }

    #[test]
    fn a_backup_is_a_whole_store_and_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("a.db"), StoreConfig::default()).unwrap();
        let user = UserId::new("backup-u").unwrap();
        let agent = AgentId::new("backup-a").unwrap();
        let write = |store: &SqliteStore, text: &str| {
            store
                .write(&Interaction {
                    user,
                    agent,
                    fragments: vec![fragment(user, agent, text)],
                    idempotency_key: None,
                })
                .unwrap()
        };
        let receipt = write(&store, "kept in the copy");
        let dest = dir.path().join("copy.db");
        let report = store.backup(&dest).unwrap();
        assert!(report.pages > 0 && report.bytes > 0, "{report:?}");
        // Written after the copy: not in it.
        write(&store, "after the copy");
        let copy = SqliteStore::open(&dest, StoreConfig::default()).unwrap();
        assert_eq!(
            copy.get(receipt.ids[0]).unwrap().content,
            "kept in the copy"
        );
        assert_eq!(copy.head().unwrap(), 1, "one change in the copy");
        // The copy's change is the store's, stamp and all; another store's first
        // change, of the same write, is not.
        let first = |s: &SqliteStore| s.changes_after(0, 1).unwrap()[0];
        assert_eq!(first(&copy), first(&store));
        let other = SqliteStore::open(dir.path().join("b.db"), StoreConfig::default()).unwrap();
        write(&other, "kept in the copy");
        assert_eq!(first(&other).fragment, first(&store).fragment);
        assert_ne!(first(&other).stamp, first(&store).stamp);
        assert!(matches!(
            copy.verify_audit().unwrap(),
            AuditStatus::Intact { entries: 1, .. }
        ));
        assert!(matches!(store.backup(&dest), Err(Error::InvalidInput(_))));
    }

    #[test]
    fn an_in_memory_store_cannot_be_backed_up() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open_in_memory(StoreConfig::default()).unwrap();
        assert!(matches!(
            store.backup(dir.path().join("x.db")),
            Err(Error::InvalidInput(_))
        ));
    }
}
