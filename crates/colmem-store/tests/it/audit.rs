//! The audit chain checked against the store: raw-SQL tampering with fragments,
//! their provenance, the access event log or the whole chain is found, naming ids.

use std::collections::BTreeSet;

use colmem_core::{
    AccessChange, AccessEvent, AuditEvent, Digest, Edge, FragmentId, Principal, ResourceId, Source,
    Timestamp,
};
use colmem_store::{AuditStatus, Disagreement, FragmentStore, ReadRecord, SqliteStore};
use rusqlite::Connection;

use super::{agent, fact, interaction, open, rewrite_chain, user};

/// A store with registrations, a grant, three fragments (one with a resource and
/// a source, one deleted) and reads; and its file.
fn populated() -> (tempfile::TempDir, std::path::PathBuf, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = open(&path);
    let at = Timestamp::from_millis(1000);
    for change in [
        AccessChange::Register {
            principal: Principal::User(user()),
        },
        AccessChange::Register {
            principal: Principal::Agent(agent()),
        },
        AccessChange::Grant {
            edge: Edge::Invoke {
                user: user(),
                agent: agent(),
            },
            until: None,
        },
    ] {
        store
            .append_access_event(&AccessEvent { at, change })
            .unwrap();
    }
    let mut drawn = fact("drawn from the wiki");
    drawn.provenance.resources = BTreeSet::from([ResourceId::new("it-wiki").unwrap()]);
    drawn.provenance.source = Source {
        session: Some("s1".into()),
        turns: vec!["D1:1".into()],
        parents: Vec::new(),
    };
    let ids = store
        .write(&interaction(vec![fact("alice lives in Oslo"), drawn]))
        .unwrap()
        .ids;
    let gone = store
        .write(&interaction(vec![fact("forget me")]))
        .unwrap()
        .ids[0];
    store
        .delete(&colmem_store::Delete {
            user: user(),
            agent: agent(),
            fragment: gone,
        })
        .unwrap();
    store
        .record_reads(&[ReadRecord {
            user: user(),
            agent: agent(),
            returned: ids.clone(),
        }])
        .unwrap();
    assert!(
        matches!(store.verify_audit().unwrap(), AuditStatus::Intact { .. }),
        "untouched"
    );
    (dir, path, store)
}

/// The verdict after running `tamper` on the file of a populated store.
fn tampered(tamper: &str) -> AuditStatus {
    let (_dir, path, store) = populated();
    Connection::open(&path)
        .unwrap()
        .execute_batch(tamper)
        .unwrap();
    store.verify_audit().unwrap()
}

#[test]
fn a_store_with_fragments_and_events_but_no_audit_entries_is_broken() {
    assert_eq!(
        tampered("DELETE FROM audit; DELETE FROM audit_head; DELETE FROM audit_anchor;"),
        AuditStatus::Disagrees(Disagreement::EmptyChain {
            fragments: 3,
            events: 3
        })
    );
    // An empty store with an empty chain is intact.
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("s.db"));
    assert!(matches!(
        store.verify_audit().unwrap(),
        AuditStatus::Intact { entries: 0, .. }
    ));
}

#[test]
fn an_edited_fragment_text_is_found() {
    assert_eq!(
        tampered("UPDATE fragments SET content = 'alice lives in Rome' WHERE id = 1"),
        AuditStatus::Disagrees(Disagreement::Content {
            fragment: FragmentId(1),
            seq: 4
        })
    );
    // A tombstone's text is not compared (it may be gone), a live one's always.
    assert!(matches!(
        tampered("UPDATE fragments SET content = '' WHERE id = 3"),
        AuditStatus::Intact { .. }
    ));
}

#[test]
fn provenance_changed_behind_the_store_is_found() {
    let provenance = |fragment| {
        AuditStatus::Disagrees(Disagreement::Provenance {
            fragment: FragmentId(fragment),
            seq: 4,
        })
    };
    assert_eq!(
        tampered(
            "DELETE FROM fragment_agents WHERE fragment = 2;
             INSERT INTO fragment_agents (fragment, agent) VALUES (2, 'mallory-agent');",
        ),
        provenance(2)
    );
    assert_eq!(
        tampered("DELETE FROM fragment_resources WHERE fragment = 2"),
        provenance(2)
    );
    assert_eq!(
        tampered(
            "DELETE FROM fragment_sources WHERE fragment = 2;
             INSERT INTO fragment_sources (fragment, session, turns) VALUES (2, 's9', '[\"D9:9\"]');",
        ),
        provenance(2)
    );
    assert_eq!(
        tampered(
            "DROP TRIGGER fragments_provenance_immutable;
             UPDATE fragments SET user = 'mallory' WHERE id = 1;",
        ),
        provenance(1)
    );
}

#[test]
fn a_fragment_moved_to_a_wider_access_class_is_found() {
    assert_eq!(
        tampered(
            "DROP TRIGGER fragments_class_immutable;
             INSERT INTO access_classes (signature, scope, owner, agents, resources)
             VALUES ('[\"global\",null,null,[],[]]', 'global', NULL, '[]', '[]');
             UPDATE fragments SET class = (SELECT id FROM access_classes WHERE scope = 'global') WHERE id = 1;",
        ),
        AuditStatus::Disagrees(Disagreement::Class {
            fragment: FragmentId(1)
        })
    );
}

#[test]
fn a_fragment_no_write_entry_records_is_found() {
    let forged = "INSERT INTO fragments (id, content, granularity, kind, scope, valid_from, keywords, user, created_at, class)
         SELECT 99, 'planted', granularity, kind, scope, valid_from, keywords, user, created_at, class FROM fragments WHERE id = 1;
         INSERT INTO fragment_agents (fragment, agent) VALUES (99, 'it-agent');";
    assert_eq!(
        tampered(forged),
        AuditStatus::Disagrees(Disagreement::Unrecorded {
            fragment: FragmentId(99)
        })
    );
}

#[test]
fn access_events_deleted_edited_or_added_are_found() {
    let unprotected = "DROP TRIGGER access_events_append_only_delete;
         DROP TRIGGER access_events_append_only_update;";
    assert_eq!(
        tampered(&format!(
            "{unprotected} DELETE FROM access_events WHERE seq = 3;"
        )),
        AuditStatus::Disagrees(Disagreement::AccessEventMissing { event: 3, seq: 3 })
    );
    assert_eq!(
        tampered(&format!(
            "{unprotected} DELETE FROM access_events WHERE seq = 2;"
        )),
        AuditStatus::Disagrees(Disagreement::AccessEventMissing { event: 2, seq: 2 })
    );
    // Backdated: the filter of who could see what at a moment reads this column.
    assert_eq!(
        tampered(&format!(
            "{unprotected} UPDATE access_events SET at = 0 WHERE seq = 3;"
        )),
        AuditStatus::Disagrees(Disagreement::AccessEvent { event: 3, seq: 3 })
    );
    assert_eq!(
        tampered(&format!(
            "{unprotected} UPDATE access_events SET body = replace(body, 'grant', 'revoke') WHERE seq = 3;"
        )),
        AuditStatus::Disagrees(Disagreement::AccessEvent { event: 3, seq: 3 })
    );
    assert_eq!(
        tampered(
            "INSERT INTO access_events (at, recorded, body) SELECT at, recorded, body FROM access_events WHERE seq = 3;"
        ),
        AuditStatus::Disagrees(Disagreement::AccessEventUnrecorded { event: 4 })
    );
}

#[test]
fn a_rewritten_chain_is_found_against_the_published_head() {
    let (_dir, path, store) = populated();
    let published = store.audit_head().unwrap();
    assert!(matches!(
        store.verify_audit_against(Some(published.1)).unwrap(),
        AuditStatus::Intact { store: check, .. } if check.published == Some(published.0)
    ));
    // The text changed and its write entry made to agree, the whole chain rehashed.
    Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE fragments SET content = 'alice lives in Rome' WHERE id = 1",
            [],
        )
        .unwrap();
    rewrite_chain(&path, |event| {
        if let AuditEvent::Write { fragments, .. } = event {
            for (id, digest) in fragments.iter_mut() {
                if *id == FragmentId(1) {
                    *digest = Digest::of_text("alice lives in Rome");
                }
            }
        }
    });
    assert!(
        matches!(store.verify_audit().unwrap(), AuditStatus::Intact { .. }),
        "intact on its own"
    );
    assert_eq!(
        store.verify_audit_against(Some(published.1)).unwrap(),
        AuditStatus::Disagrees(Disagreement::PublishedHeadMissing { hash: published.1 })
    );
}

/// Entries written before write entries recorded provenance digests keep their
/// hashes and verify: their fragments' text is checked, and their provenance only
/// through the access class; every later entry must carry the digests.
#[test]
fn write_entries_from_before_provenance_digests_verify_on_their_text() {
    let (_dir, path, store) = populated();
    rewrite_chain(&path, |event| {
        if let AuditEvent::Write { provenance, .. } = event {
            provenance.clear();
        }
    });
    let raw = Connection::open(&path).unwrap();
    raw.execute("UPDATE audit_format SET provenance_from = 8", [])
        .unwrap();
    let status = store.verify_audit().unwrap();
    let AuditStatus::Intact { store: check, .. } = status else {
        panic!("{status:?}")
    };
    assert_eq!((check.fragments, check.provenance), (2, 0), "{check:?}");
    // A later write carries them and is checked in full.
    store.write(&interaction(vec![fact("later")])).unwrap();
    let status = store.verify_audit().unwrap();
    let AuditStatus::Intact { store: check, .. } = status else {
        panic!("{status:?}")
    };
    assert_eq!((check.fragments, check.provenance), (3, 1), "{check:?}");
    // Agents changed under an old entry still move the fragment out of its class.
    raw.execute_batch(
        "DELETE FROM fragment_agents WHERE fragment = 1;
         INSERT INTO fragment_agents (fragment, agent) VALUES (1, 'mallory-agent');",
    )
    .unwrap();
    assert_eq!(
        store.verify_audit().unwrap(),
        AuditStatus::Disagrees(Disagreement::Class {
            fragment: FragmentId(1)
        })
    );
    // An entry recorded since the digests exist must carry them.
    raw.execute("UPDATE audit_format SET provenance_from = 4", [])
        .unwrap();
    assert_eq!(
        store.verify_audit().unwrap(),
        AuditStatus::Disagrees(Disagreement::ProvenanceMissing { seq: 4 })
    );
}
