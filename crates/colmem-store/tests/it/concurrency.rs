//! Several threads, each with its own store (its own connections) on one file,
//! write and read at once: nothing is lost and no "database is locked" escapes.

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier};

use colmem_store::{AuditStatus, FragmentStore, ListQuery, ReadRecord, SqliteStore};

use super::{everything, fact, interaction, open};

const THREADS: usize = 4;
const WRITES: usize = 40;

#[test]
fn concurrent_writers_and_readers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let shared = Arc::new(open(&path));
    let barrier = Arc::new(Barrier::new(THREADS + 1));
    let mut handles = Vec::new();
    for thread in 0..=THREADS {
        let path = path.clone();
        let barrier = barrier.clone();
        let shared = shared.clone();
        handles.push(std::thread::spawn(
            move || -> Result<Vec<(String, colmem_core::FragmentId)>, colmem_store::Error> {
                // Threads 0..THREADS open their own store; the last shares one across threads' pools.
                let own;
                let store: &SqliteStore = if thread < THREADS {
                    own = open(&path);
                    &own
                } else {
                    &shared
                };
                barrier.wait();
                let mut mine = Vec::new();
                for i in 0..WRITES {
                    let texts = [format!("t{thread} w{i} a"), format!("t{thread} w{i} b")];
                    let mut write = interaction(texts.iter().map(|t| fact(t)).collect());
                    write.idempotency_key = Some(format!("t{thread}-w{i}"));
                    let receipt = store.write(&write)?;
                    mine.extend(texts.into_iter().zip(receipt.ids));
                    let seen = store.list(
                        &everything(),
                        &ListQuery {
                            limit: Some(20),
                            ..ListQuery::default()
                        },
                    )?;
                    store.record_reads(&[ReadRecord {
                        user: super::user(),
                        agent: super::agent(),
                        returned: seen.iter().map(|f| f.id).collect(),
                    }])?;
                    let count = store.count(&everything(), &ListQuery::default())?;
                    assert!(
                        count as usize >= mine.len(),
                        "a reader missed its own writes"
                    );
                }
                Ok(mine)
            },
        ));
    }
    let mut all = Vec::new();
    for handle in handles {
        // Any error here (a busy/locked database included) fails the test.
        all.extend(handle.join().unwrap().unwrap());
    }
    let store = open(&path);
    assert_eq!(all.len(), (THREADS + 1) * WRITES * 2);
    let ids: BTreeSet<_> = all.iter().map(|(_, id)| *id).collect();
    assert_eq!(ids.len(), all.len(), "ids are unique");
    for (text, id) in &all {
        assert_eq!(&store.get(*id).unwrap().content, text);
    }
    assert_eq!(
        store.count(&everything(), &ListQuery::default()).unwrap() as usize,
        all.len()
    );
    let writes_and_reads = (THREADS + 1) * WRITES * 2;
    match store.verify_audit().unwrap() {
        AuditStatus::Intact { entries, .. } => assert_eq!(entries as usize, writes_and_reads),
        broken => panic!("the audit chain is broken: {broken:?}"),
    }
    store.integrity_check().unwrap();
}
