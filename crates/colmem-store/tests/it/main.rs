//! Integration tests of colmem-store: the conformance suite on SQLite (on disk
//! and in memory), and what only a real SQLite file can show: raw-SQL
//! tampering, migrations, purging from the files, bad files, crashes and
//! concurrent connections.

// Tests fail by panicking with the value that was wrong.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod audit;
mod bad_input;
mod concurrency;
mod crash;
mod sqlite;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use colmem_core::{
    AgentId, Clock, Embedding, FilterParts, Granularity, IdSet, Kind, LogicalClock, NewFragment,
    Provenance, ReadFilter, Scope, Source, Timestamp, UserId, Validity, View,
};
use colmem_store::{Interaction, SqliteStore, StoreConfig};

fn user() -> UserId {
    UserId::new("it-user").unwrap()
}

fn agent() -> AgentId {
    AgentId::new("it-agent").unwrap()
}

/// A user-scoped fact of `it-user` by `it-agent`, recorded at time 1000.
fn fact(content: &str) -> NewFragment {
    NewFragment {
        key: None,
        content: content.to_owned(),
        granularity: Granularity::Fact,
        kind: Kind::Observation,
        scope: Scope::User,
        provenance: Provenance {
            created_at: Timestamp::from_millis(1000),
            user: user(),
            agents: BTreeSet::from([agent()]),
            resources: BTreeSet::new(),
            source: Source::default(),
        },
        validity: Validity::always(),
        keywords: Vec::new(),
        embedding: None,
    }
}

fn with_embedding(mut f: NewFragment, dim: usize, seed: f32) -> NewFragment {
    f.embedding = Some(Embedding {
        embedder: "it-embedder".into(),
        vector: (0..dim).map(|i| seed + i as f32 * 0.001).collect(),
    });
    f
}

fn interaction(fragments: Vec<NewFragment>) -> Interaction {
    Interaction {
        user: user(),
        agent: agent(),
        fragments,
        idempotency_key: None,
    }
}

/// `it-user` through `it-agent`, every version, at time 10^12.
fn everything() -> ReadFilter {
    ReadFilter::from_parts(FilterParts {
        user: user(),
        agent: agent(),
        now: Timestamp::from_millis(1_000_000_000_000),
        agents: [agent()].into_iter().collect(),
        resources: IdSet::new(),
        groups: IdSet::new(),
    })
    .with_view(View::AllVersions)
}

fn clock() -> Arc<dyn Clock> {
    Arc::new(LogicalClock::new(Timestamp::from_millis(1000)))
}

fn open(path: &Path) -> SqliteStore {
    SqliteStore::open(
        path,
        StoreConfig {
            clock: clock(),
            ..StoreConfig::default()
        },
    )
    .unwrap()
}

/// Rewrites every entry of the chain at `path` through `edit` and chains them
/// again, head included: what someone who rewrites the whole log would do.
fn rewrite_chain(path: &std::path::Path, edit: impl Fn(&mut colmem_core::AuditEvent)) {
    let mut raw = rusqlite::Connection::open(path).unwrap();
    let rows: Vec<(i64, i64, String)> = raw
        .prepare("SELECT seq, at, event FROM audit ORDER BY seq")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let tx = raw.transaction().unwrap();
    let mut prev = colmem_core::Digest::default();
    for (seq, at, event) in rows {
        let mut event: colmem_core::AuditEvent = serde_json::from_str(&event).unwrap();
        edit(&mut event);
        let entry =
            colmem_core::AuditEntry::chain(prev, seq as u64, Timestamp::from_millis(at), event);
        tx.execute(
            "UPDATE audit SET event = ?1, prev = ?2, hash = ?3 WHERE seq = ?4",
            rusqlite::params![
                serde_json::to_string(&entry.event).unwrap(),
                entry.prev.0.as_slice(),
                entry.hash.0.as_slice(),
                seq
            ],
        )
        .unwrap();
        tx.execute(
            "UPDATE audit_head SET seq = ?1, hash = ?2",
            rusqlite::params![seq, entry.hash.0.as_slice()],
        )
        .unwrap();
        prev = entry.hash;
    }
    tx.commit().unwrap();
}

#[cfg(feature = "conformance")]
#[test]
fn conformance_in_memory() {
    colmem_store::conformance::run(&|clock| {
        Box::new(
            SqliteStore::open_in_memory(StoreConfig {
                clock,
                ..StoreConfig::default()
            })
            .unwrap(),
        )
    })
    .unwrap();
}

#[cfg(feature = "conformance")]
#[test]
fn conformance_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let n = std::sync::atomic::AtomicUsize::new(0);
    colmem_store::conformance::run(&|clock| {
        let path = dir.path().join(format!(
            "store-{}.db",
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        Box::new(
            SqliteStore::open(
                path,
                StoreConfig {
                    clock,
                    ..StoreConfig::default()
                },
            )
            .unwrap(),
        )
    })
    .unwrap();
}
