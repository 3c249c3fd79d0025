//! SQLite-only checks: triggers and tampering with raw SQL, migrations, purge on disk, busy handling.

use std::sync::Arc;
use std::time::Duration;

use colmem_core::{AuditEvent, ErrorKind, LogicalClock, Timestamp};
use colmem_store::{
    AuditProblem, AuditStatus, CardWrite, Delete, Erase, Error, FragmentStore, ListQuery, Purge,
    ReadRecord, SCHEMA_VERSION, SqliteStore, StoreConfig,
};
use rusqlite::Connection;

use super::{clock, everything, fact, interaction, open, with_embedding};

#[test]
fn provenance_columns_refuse_raw_updates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = open(&path);
    let mut f = fact("provenance test");
    f.provenance.resources = [colmem_core::ResourceId::new("it-kb").unwrap()].into();
    f.provenance.source.session = Some("s1".into());
    f.provenance.source.parents = vec![colmem_core::FragmentId(1)];
    let id = store.write(&interaction(vec![f.clone()])).unwrap().ids[0];

    let raw = Connection::open(&path).unwrap();
    for sql in [
        "UPDATE fragments SET user = 'mallory'",
        "UPDATE fragments SET created_at = 0",
        "UPDATE fragment_agents SET agent = 'mallory-agent'",
        "UPDATE fragment_resources SET resource = 'other-kb'",
        "UPDATE fragment_sources SET session = 'forged'",
        "UPDATE fragment_parents SET parent = 99",
    ] {
        let err = raw.execute(sql, []).unwrap_err();
        assert!(
            err.to_string().contains("provenance is immutable"),
            "{sql}: {err}"
        );
    }
    // Who may read a fragment is fixed at the write too: its scope and access class.
    for sql in [
        "UPDATE fragments SET scope = 'global'",
        "UPDATE fragments SET class = class + 1",
    ] {
        let err = raw.execute(sql, []).unwrap_err();
        assert!(err.to_string().contains("immutable"), "{sql}: {err}");
    }
    let err = raw
        .execute("UPDATE access_classes SET scope = 'global'", [])
        .unwrap_err();
    assert!(err.to_string().contains("immutable"), "{err}");
    // Columns that are not provenance may change (the store itself stamps them).
    raw.execute("UPDATE fragments SET keywords = '[\"k\"]'", [])
        .unwrap();
    assert_eq!(store.get(id).unwrap().provenance, f.provenance);
}

fn tampered(tamper: &str) -> AuditStatus {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = open(&path);
    store.write(&interaction(vec![fact("a")])).unwrap();
    let reads: Vec<_> = (0..4)
        .map(|i| ReadRecord {
            user: super::user(),
            agent: super::agent(),
            returned: vec![colmem_core::FragmentId(i)],
        })
        .collect();
    store.record_reads(&reads).unwrap();
    assert!(matches!(
        store.verify_audit().unwrap(),
        AuditStatus::Intact { entries: 5, .. }
    ));
    Connection::open(&path)
        .unwrap()
        .execute_batch(tamper)
        .unwrap();
    store.verify_audit().unwrap()
}

#[test]
fn raw_edits_deletions_and_reorderings_of_the_audit_log_are_detected() {
    let broken = |seq, problem| AuditStatus::Broken { seq, problem };
    assert_eq!(
        tampered("UPDATE audit SET at = at + 1 WHERE seq = 2"),
        broken(2, AuditProblem::Edited)
    );
    assert_eq!(
        tampered("UPDATE audit SET event = replace(event, '[0]', '[7]') WHERE seq = 2"),
        broken(2, AuditProblem::Edited)
    );
    assert_eq!(
        tampered("DELETE FROM audit WHERE seq = 3"),
        broken(4, AuditProblem::BrokenLink)
    );
    assert_eq!(
        tampered("DELETE FROM audit WHERE seq = 1"),
        broken(2, AuditProblem::BrokenLink)
    );
    assert_eq!(
        tampered("DELETE FROM audit WHERE seq = 5"),
        broken(5, AuditProblem::Truncated)
    );
    // Reordering: swap the contents of entries 2 and 3 (seq stays in place).
    let swap = "CREATE TEMP TABLE t AS SELECT * FROM audit WHERE seq IN (2, 3);
        UPDATE audit SET at = (SELECT at FROM t WHERE seq = 5 - audit.seq),
                         event = (SELECT event FROM t WHERE seq = 5 - audit.seq),
                         prev = (SELECT prev FROM t WHERE seq = 5 - audit.seq),
                         hash = (SELECT hash FROM t WHERE seq = 5 - audit.seq)
        WHERE seq IN (2, 3);";
    assert!(matches!(tampered(swap), AuditStatus::Broken { seq: 2, .. }));
    // Renumbering a whole entry also breaks its hash.
    assert!(matches!(
        tampered(
            "UPDATE audit SET seq = 10 WHERE seq = 5; UPDATE audit SET seq = 5 WHERE seq = 4; UPDATE audit SET seq = 4 WHERE seq = 10;"
        ),
        AuditStatus::Broken { seq: 4, .. }
    ));
    assert!(matches!(
        tampered("UPDATE audit SET event = 'not json' WHERE seq = 3"),
        AuditStatus::Broken {
            seq: 3,
            problem: AuditProblem::Undecodable
        }
    ));
}

#[test]
fn an_older_file_is_upgraded_and_a_newer_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let edge = colmem_core::Edge::Invoke {
        user: super::user(),
        agent: super::agent(),
    };
    let grant = |at: i64| colmem_core::AccessEvent {
        at: colmem_core::Timestamp::from_millis(at),
        change: colmem_core::AccessChange::Grant { edge, until: None },
    };
    let id = {
        let store = open(&path);
        // Scheduled for later, logged while the clock reads 1000.
        store.append_access_event(&grant(5_000)).unwrap();
        store
            .write(&interaction(vec![fact("from version 1")]))
            .unwrap()
            .ids[0]
    };
    // Turn the file into a version-1 store: version 8 added the audit format, version
    // 7 erasure, version 6 the narrowed list, version 5 the change stamps, version 4
    // the secrets, version 3 the access classes, version 2 the cards tables.
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "DROP INDEX fragments_unerased; ALTER TABLE fragments DROP COLUMN erased_at; \
             DROP TRIGGER fragments_count_update; \
             DROP TRIGGER fragments_count_delete; DROP TRIGGER fragments_class_immutable; \
             DROP TRIGGER access_classes_immutable; DROP INDEX fragments_superseded; \
             DROP INDEX fragments_deleted; \
             CREATE INDEX fragments_group ON fragments (scope_group) WHERE scope_group IS NOT NULL; \
             ALTER TABLE fragments DROP COLUMN class; \
             DROP TABLE class_counts; DROP TABLE access_classes; \
             DROP TABLE card_edges; DROP TABLE cards; DROP TABLE secrets; \
             DROP INDEX access_events_recorded; ALTER TABLE access_events DROP COLUMN recorded; \
             DROP TRIGGER changes_stamp; ALTER TABLE changes DROP COLUMN stamp; \
             DROP TABLE narrowed; \
             DROP TABLE audit_format; \
             DELETE FROM schema_version WHERE version >= 2;",
        )
        .unwrap();
    let store = open(&path);
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(store.get(id).unwrap().content, "from version 1");
    // Its audit chain and the store still agree.
    assert!(matches!(
        store.verify_audit().unwrap(),
        AuditStatus::Intact { entries: 2, .. }
    ));
    // The upgrade made the store's secrets, and stamped the change made before it.
    assert_ne!(store.secret("pseudonym").unwrap(), [0; 32]);
    assert_ne!(
        colmem_core::ChangeFeed::changes_after(&store, 0, 1).unwrap()[0].stamp,
        0
    );
    // An access event logged before the upgrade counts as recorded when it was
    // applied (1000), not at its own date: nothing earlier, and no freeze.
    assert!(matches!(
        store.append_access_event(&grant(999)),
        Err(Error::AccessEventBackdated { .. })
    ));
    store.append_access_event(&grant(1_000)).unwrap();
    // The upgrade gave the old fragment its access class and counted it, and a
    // new fragment of the same shape joins that class rather than a copy of it.
    let current = everything().with_view(colmem_core::View::Current);
    let all = colmem_store::ListQuery::default();
    assert_eq!(store.count(&current, &all).unwrap(), 1);
    store
        .write(&interaction(vec![fact("from version 3")]))
        .unwrap();
    assert_eq!(store.count(&current, &all).unwrap(), 2);
    assert_eq!(store.count(&everything(), &all).unwrap(), 2);
    let classes: i64 = Connection::open(&path)
        .unwrap()
        .query_row("SELECT count(*) FROM access_classes", [], |row| row.get(0))
        .unwrap();
    assert_eq!(classes, 1);
    let card = CardWrite {
        user: super::user(),
        agent: super::agent(),
        fragment: colmem_core::NewFragment {
            granularity: colmem_core::Granularity::Card,
            ..fact("card")
        },
        fields: colmem_core::CardFields {
            task: "t".into(),
            trigger: "t".into(),
            applicability: "a".into(),
            plan: "p".into(),
            execution: "e".into(),
            evaluation: "v".into(),
            sign: colmem_core::CardSign::Positive,
        },
        replaces: None,
        idempotency_key: None,
    };
    assert!(
        store.write_card(&card).is_ok(),
        "the upgrade created the cards tables"
    );
    drop(store);

    Connection::open(&path)
        .unwrap()
        .execute(
            "INSERT INTO schema_version (version, applied_at) VALUES (99, 0)",
            [],
        )
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    let err = SqliteStore::open(&path, StoreConfig::default()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::SchemaTooNew {
                found: 99,
                supported: SCHEMA_VERSION
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade colmem"), "{err}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "a refused file is left as it was"
    );
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn files_contain(dir: &std::path::Path, needle: &str) -> bool {
    std::fs::read_dir(dir).unwrap().any(|entry| {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        contains(&bytes, needle.as_bytes())
    })
}

/// How a check takes a fragment's text away: what it leaves of the fragment.
enum Removal {
    /// An administrator's purge: nothing.
    Purge,
    /// A deletion, then the erasure of its text: a tombstone of ids and times.
    DeleteThenErase,
}

#[test]
fn purge_and_erasure_remove_the_text_from_the_database_and_its_log() {
    for removal in [Removal::Purge, Removal::DeleteThenErase] {
        text_leaves_the_database_and_its_log(removal);
    }
}

fn text_leaves_the_database_and_its_log(removal: Removal) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = open(&path);
    let secret = "zebra-violet-7781 is the vault code";
    let kept = "kept-marmot-1234 stays";
    let mut doomed = fact(&format!("{secret} {}", "padding ".repeat(800)));
    doomed.key = Some("zebra-violet-7781/key".into());
    doomed.keywords = vec!["zebra-violet-7781".into()];
    let ids = store
        .write(&interaction(vec![
            fact(kept),
            with_embedding(doomed, 384, 0.5),
            fact("more"),
        ]))
        .unwrap()
        .ids;
    // Half the pages go to the file, the rest stay in the log.
    store.checkpoint().unwrap();
    store
        .write(&interaction(vec![fact("after the checkpoint")]))
        .unwrap();
    assert!(
        files_contain(dir.path(), "zebra-violet-7781"),
        "the search finds text before the removal"
    );

    match removal {
        Removal::Purge => store
            .purge(&Purge {
                admin: "root".into(),
                fragment: ids[1],
            })
            .unwrap(),
        Removal::DeleteThenErase => {
            store
                .delete(&Delete {
                    user: super::user(),
                    agent: super::agent(),
                    fragment: ids[1],
                })
                .unwrap();
            assert!(
                files_contain(dir.path(), "zebra-violet-7781"),
                "a deletion alone keeps the text"
            );
            let erased = store
                .erase(&Erase {
                    fragments: vec![ids[1]],
                })
                .unwrap();
            assert_eq!(erased, [ids[1]]);
        }
    }
    assert!(
        !files_contain(dir.path(), "zebra-violet-7781"),
        "removed text is still on disk"
    );
    assert!(
        files_contain(dir.path(), "kept-marmot-1234"),
        "other fragments are untouched"
    );
    drop(store);
    assert!(!files_contain(dir.path(), "zebra-violet-7781"));
    let store = open(&path);
    assert_eq!(
        store.count(&everything(), &ListQuery::default()).unwrap(),
        3
    );
    let last = store.audit_entries(0, 100).unwrap().pop().unwrap().event;
    match removal {
        Removal::Purge => {
            assert!(matches!(store.get(ids[1]), Err(Error::NotFound { .. })));
            assert!(matches!(last, AuditEvent::Purge { .. }), "{last:?}");
        }
        Removal::DeleteThenErase => {
            let tomb = store.get(ids[1]).unwrap();
            assert!(tomb.content.is_empty() && tomb.deleted_at.is_some());
            assert!(matches!(last, AuditEvent::Erase { .. }), "{last:?}");
        }
    }
}

#[test]
fn the_selections_of_purge_and_erasure() {
    let dir = tempfile::tempdir().unwrap();
    let clock = std::sync::Arc::new(colmem_core::LogicalClock::new(
        colmem_core::Timestamp::from_millis(1000),
    ));
    let store = SqliteStore::open(
        dir.path().join("s.db"),
        StoreConfig {
            clock: clock.clone(),
            ..StoreConfig::default()
        },
    )
    .unwrap();
    let ids = store
        .write(&interaction(vec![
            fact("a"),
            fact("b"),
            fact("c"),
            fact("d"),
        ]))
        .unwrap()
        .ids;
    let mut other = fact("someone else's");
    other.provenance.user = colmem_core::UserId::new("it-other").unwrap();
    let theirs = store.write(&interaction(vec![other])).unwrap().ids[0];
    let delete = |id| {
        store
            .delete(&Delete {
                user: super::user(),
                agent: super::agent(),
                fragment: id,
            })
            .unwrap()
    };
    let start = colmem_core::Clock::now(clock.as_ref());
    delete(ids[0]);
    clock.advance(10);
    delete(ids[1]);
    clock.advance(10);
    delete(theirs);
    let at = |ms| colmem_core::Timestamp::from_millis(start.as_millis() + ms);

    assert_eq!(
        store.fragment_ids().unwrap(),
        [&ids[..], &[theirs]].concat()
    );
    assert_eq!(store.fragments_of(super::user()).unwrap(), ids);
    assert_eq!(store.deleted_before(at(10)).unwrap(), [ids[0]]);
    assert_eq!(store.deleted_before(at(11)).unwrap(), [ids[0], ids[1]]);
    assert_eq!(store.erasure_due(at(10)).unwrap(), [ids[0], ids[1]]);
    store
        .erase(&Erase {
            fragments: vec![ids[1]],
        })
        .unwrap();
    // An erased tombstone is held (and listed) until purged, but no longer due.
    assert_eq!(store.erasure_due(at(20)).unwrap(), [ids[0], theirs]);
    assert_eq!(
        store.fragment_ids().unwrap(),
        [&ids[..], &[theirs]].concat()
    );
    store
        .purge(&Purge {
            admin: "root".into(),
            fragment: ids[0],
        })
        .unwrap();
    assert_eq!(store.erasure_due(at(20)).unwrap(), [theirs]);
    assert_eq!(store.deleted_before(at(30)).unwrap(), [ids[1], theirs]);
    assert_eq!(
        store.fragment_ids().unwrap(),
        [ids[1], ids[2], ids[3], theirs]
    );
}

#[test]
fn a_purge_held_off_by_a_reader_is_done_and_its_text_leaves_the_log_later() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = SqliteStore::open(
        &path,
        StoreConfig {
            busy_deadline: Duration::from_millis(100),
            clock: clock(),
            ..StoreConfig::default()
        },
    )
    .unwrap();
    let ids = store
        .write(&interaction(vec![
            fact("okapi-saffron-5521 is the alarm code"),
            fact("kept"),
        ]))
        .unwrap()
        .ids;
    // A reader in the middle of a read holds the log's frames.
    let reader = Connection::open(&path).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let _: i64 = reader
        .query_row("SELECT count(*) FROM fragments", [], |row| row.get(0))
        .unwrap();
    store
        .purge(&Purge {
            admin: "root".into(),
            fragment: ids[0],
        })
        .unwrap();
    assert!(matches!(store.get(ids[0]), Err(Error::NotFound { .. })));
    assert!(store.purged_text_in_log());
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    // The next write finishes the checkpoint.
    store.write(&interaction(vec![fact("later")])).unwrap();
    assert!(!store.purged_text_in_log());
    assert!(!files_contain(dir.path(), "okapi-saffron-5521"));
}

#[test]
fn a_lock_held_past_the_deadline_is_a_typed_busy_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = SqliteStore::open(
        &path,
        StoreConfig {
            busy_deadline: Duration::from_millis(200),
            clock: clock(),
            ..StoreConfig::default()
        },
    )
    .unwrap();
    store.write(&interaction(vec![fact("before")])).unwrap();
    let holder = Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let err = store
        .write(&interaction(vec![fact("blocked")]))
        .unwrap_err();
    assert!(
        matches!(err, Error::Busy { waited } if waited >= Duration::from_millis(200)),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::Busy);
    // Readers are not blocked by a writer under WAL.
    assert_eq!(
        store.count(&everything(), &ListQuery::default()).unwrap(),
        1
    );
    holder.execute_batch("COMMIT").unwrap();
    store.write(&interaction(vec![fact("after")])).unwrap();
    assert_eq!(
        store.count(&everything(), &ListQuery::default()).unwrap(),
        2
    );
}

/// A store written by a version that put a user's conversation in the agent's crew
/// is narrowed on upgrade: what was drawn from user turns becomes kind conversation in
/// scope `User` (one audit entry lists them, and the chain verifies); a crew finding
/// drawn from no turn, and a card, keep their scope.
#[test]
fn an_upgrade_narrows_a_users_conversation_to_the_user() {
    use colmem_core::{GroupId, Kind, Scope};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let crew = GroupId::new("kitchen").unwrap();
    let mut turn = fact("alice: my rent is 900 euros");
    turn.granularity = colmem_core::Granularity::RawTurn;
    turn.scope = Scope::Group(crew);
    turn.provenance.source.turns = vec!["D1:1".to_owned()];
    let mut drawn = fact("alice's rent is 900 euros");
    drawn.scope = Scope::Group(crew);
    drawn.provenance.source.turns = vec!["D1:1".to_owned()];
    let mut finding = fact("the east gate is unguarded after dusk");
    finding.scope = Scope::Group(crew);
    let ids = {
        let store = open(&path);
        store
            .write(&interaction(vec![turn, drawn, finding]))
            .unwrap()
            .ids
    };
    // As the older version left it: schema 5, nothing narrowed, write entries
    // without provenance digests.
    super::rewrite_chain(&path, |event| {
        if let AuditEvent::Write { provenance, .. } = event {
            provenance.clear();
        }
    });
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "DROP INDEX fragments_unerased; ALTER TABLE fragments DROP COLUMN erased_at; \
             DROP TABLE narrowed; DROP TABLE audit_format; \
             DELETE FROM schema_version WHERE version >= 6;",
        )
        .unwrap();
    let store = open(&path);
    for id in &ids[..2] {
        let f = store.get(*id).unwrap();
        assert_eq!(
            (f.scope, f.kind),
            (Scope::User, Kind::Conversation),
            "{f:?}"
        );
    }
    let finding = store.get(ids[2]).unwrap();
    assert_eq!(
        (finding.scope, finding.kind),
        (Scope::Group(crew), Kind::Observation)
    );
    let entries = store.audit_entries(0, 1_000).unwrap();
    let narrowed: Vec<_> = entries
        .iter()
        .filter_map(|e| match &e.event {
            AuditEvent::Narrow { fragments } => Some(fragments.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(narrowed, vec![ids[..2].to_vec()]);
    assert!(matches!(
        store.verify_audit().unwrap(),
        AuditStatus::Intact { .. }
    ));
    // The owner reads them through any agent of hers; the crew's finding is not hers.
    let seen = store.count(&everything(), &ListQuery::default()).unwrap();
    assert_eq!(seen, 2);
    drop(store);
    // Reopening narrows nothing more.
    let store = open(&path);
    let again = store
        .audit_entries(0, 1_000)
        .unwrap()
        .iter()
        .filter(|e| matches!(e.event, AuditEvent::Narrow { .. }))
        .count();
    assert_eq!(again, 1);
}

#[test]
fn now_is_held_at_the_last_record_when_the_clock_steps_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let ahead = Arc::new(LogicalClock::new(Timestamp::from_millis(5_000)));
    let store = SqliteStore::open(
        &path,
        StoreConfig {
            clock: ahead.clone(),
            ..StoreConfig::default()
        },
    )
    .unwrap();
    let id = store.write(&interaction(vec![fact("ahead")])).unwrap().ids[0];
    assert_eq!(store.now(), Timestamp::from_millis(5_000));
    drop(store);
    // Reopened on a clock that reads earlier: now stays at the last record, and
    // what is recorded now is dated there, until the clock passes it.
    let behind = Arc::new(LogicalClock::new(Timestamp::from_millis(1_000)));
    let store = SqliteStore::open(
        &path,
        StoreConfig {
            clock: behind.clone(),
            ..StoreConfig::default()
        },
    )
    .unwrap();
    assert_eq!(store.now(), Timestamp::from_millis(5_000));
    store
        .delete(&colmem_store::Delete {
            user: super::user(),
            agent: super::agent(),
            fragment: id,
        })
        .unwrap();
    assert_eq!(
        store.get(id).unwrap().deleted_at,
        Some(Timestamp::from_millis(5_000))
    );
    behind.set(Timestamp::from_millis(7_000)).unwrap();
    assert_eq!(store.now(), Timestamp::from_millis(7_000));
}
