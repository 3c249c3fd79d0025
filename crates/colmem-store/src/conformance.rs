//! The generic conformance suite for [`FragmentStore`] implementations.
//!
//! Every backend (SQLite on disk and in memory today, PostgreSQL later) runs
//! [`run`] with a factory that makes a fresh, empty store with the default
//! limits on the clock it is given. The suite panics on the first behaviour
//! that differs from the contract.
// A test suite: failing loudly with the value that was wrong is its whole job.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::Arc;

use colmem_core::{
    AccessChange, AccessEvent, AgentId, AuditEvent, CardEdge, CardFields, CardRelation, CardSign,
    ChangeOp, Clock, Digest, Edge, Embedding, FilterParts, FragmentId, Granularity, GroupId, IdSet,
    Kind, LogicalClock, NewFragment, Provenance, ReadFilter, ResourceId, Scope, Source, Timestamp,
    UserId, Validity, View,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use crate::{
    AuditStatus, CardWrite, Delete, Error, FragmentStore, Interaction, ListQuery, Order, Purge,
    ReadRecord, Supersede,
};

/// Makes a fresh, empty store with default limits whose record times come from the given clock.
pub type Factory<'a> = &'a dyn Fn(Arc<dyn Clock>) -> Box<dyn FragmentStore>;

/// Runs every check of the suite against stores made by `make`.
pub fn run(make: Factory<'_>) {
    round_trip(make);
    idempotent_writes(make);
    read_filter_agrees_with_admits(make);
    supersede_and_history(make);
    delete_and_purge(make);
    access_event_log(make);
    audit_chain(make);
    unknown_ids_and_oversized_values(make);
    cards_and_edges(make);
    change_feed(make);
}

fn t(ms: i64) -> Timestamp {
    Timestamp::from_millis(ms)
}

fn user(i: usize) -> UserId {
    UserId::new(&format!("conf-u{i}")).unwrap()
}

fn agent(i: usize) -> AgentId {
    AgentId::new(&format!("conf-a{i}")).unwrap()
}

fn resource(i: usize) -> ResourceId {
    ResourceId::new(&format!("conf-r{i}")).unwrap()
}

fn group(i: usize) -> GroupId {
    GroupId::new(&format!("conf-g{i}")).unwrap()
}

fn fresh(make: Factory<'_>, start: i64) -> (Arc<LogicalClock>, Box<dyn FragmentStore>) {
    let clock = Arc::new(LogicalClock::new(t(start)));
    let store = make(clock.clone());
    (clock, store)
}

/// A plain observation by `conf-a0` for `conf-u0`, recorded at `at`.
fn fact(content: &str, at: i64) -> NewFragment {
    NewFragment {
        key: None,
        content: content.to_owned(),
        granularity: Granularity::Fact,
        kind: Kind::Observation,
        scope: Scope::User,
        provenance: Provenance {
            created_at: t(at),
            user: user(0),
            agents: BTreeSet::from([agent(0)]),
            resources: BTreeSet::new(),
            source: Source::default(),
        },
        validity: Validity::always(),
        keywords: Vec::new(),
        embedding: None,
    }
}

fn one(fragment: NewFragment) -> Interaction {
    Interaction {
        user: user(0),
        agent: agent(0),
        fragments: vec![fragment],
        idempotency_key: None,
    }
}

/// The reader `(conf-u0, conf-a0)` at `now`, allowed every principal of the suite.
fn reader(now: i64) -> ReadFilter {
    ReadFilter::from_parts(FilterParts {
        user: user(0),
        agent: agent(0),
        now: t(now),
        agents: (0..4).map(agent).collect(),
        resources: (0..3).map(resource).collect(),
        groups: (0..3).map(group).collect(),
    })
}

fn ids_of(fragments: &[colmem_core::Fragment]) -> Vec<FragmentId> {
    fragments.iter().map(|f| f.id).collect()
}

fn audit_len(store: &dyn FragmentStore) -> usize {
    store.audit_entries(0, usize::MAX).unwrap().len()
}

fn round_trip(make: Factory<'_>) {
    let (_, store) = fresh(make, 100);
    let mut f = fact("alice lives in Lyon", 100);
    f.key = Some("alice/location".into());
    f.kind = Kind::Trace;
    f.scope = Scope::Group(group(1));
    f.provenance.agents = BTreeSet::from([agent(0), agent(2)]);
    f.provenance.resources = BTreeSet::from([resource(1)]);
    f.provenance.source = Source {
        session: Some("s-1".into()),
        turns: vec!["D1:3".into(), "D1:4".into()],
        parents: vec![FragmentId(7), FragmentId(3)],
    };
    f.validity = Validity::new(t(10), Some(t(50))).unwrap();
    f.keywords = vec!["alice".into(), "lyon".into()];
    f.embedding = Some(Embedding {
        embedder: "offline-v1".into(),
        vector: vec![0.25, -1.0, 3.5],
    });
    let receipt = store.write(&one(f.clone())).unwrap();
    assert!(!receipt.replayed);
    let [id] = receipt.ids[..] else {
        panic!("one fragment written, got {:?}", receipt.ids)
    };
    let got = store.get(id).unwrap();
    assert_eq!(got.id, id);
    assert_eq!(got.key, f.key);
    assert_eq!(got.content, f.content);
    assert_eq!(got.granularity, f.granularity);
    assert_eq!(got.kind, f.kind);
    assert_eq!(got.scope, f.scope);
    assert_eq!(got.provenance, f.provenance);
    assert_eq!(got.validity, f.validity);
    assert_eq!(got.keywords, f.keywords);
    assert_eq!(
        (got.superseded_at, got.superseded_by, got.deleted_at),
        (None, None, None)
    );
    assert_eq!(store.embedding(id).unwrap(), f.embedding);

    // A second interaction of several fragments gets fresh ids in order.
    let batch = Interaction {
        fragments: vec![fact("one", 100), fact("two", 100), fact("three", 100)],
        ..one(fact("unused", 0))
    };
    let ids = store.write(&batch).unwrap().ids;
    assert_eq!(ids.len(), 3);
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]) && ids[0] > id,
        "{ids:?}"
    );
    let contents: Vec<String> = ids.iter().map(|&i| store.get(i).unwrap().content).collect();
    assert_eq!(contents, ["one", "two", "three"]);
    assert_eq!(store.embedding(ids[0]).unwrap(), None);

    // The write was audited with the digests of the texts, never the texts.
    let entries = store.audit_entries(0, 10).unwrap();
    let AuditEvent::Write { fragments, .. } = &entries[1].event else {
        panic!("expected a write entry, got {:?}", entries[1].event)
    };
    assert_eq!(fragments[1], (ids[1], Digest::of_text("two")));
    let written = serde_json::to_string(&entries).unwrap();
    assert!(
        !written.contains("alice lives"),
        "audit entries hold no text"
    );
}

fn idempotent_writes(make: Factory<'_>) {
    let (_, store) = fresh(make, 100);
    let mut write = one(fact("remember me once", 100));
    write.idempotency_key = Some("req-42".into());
    let first = store.write(&write).unwrap();
    let head = store.head().unwrap();
    let audited = audit_len(&*store);
    let again = store.write(&write).unwrap();
    assert!(again.replayed);
    assert_eq!(again.ids, first.ids);
    assert_eq!(store.head().unwrap(), head, "a replay writes no change");
    assert_eq!(
        audit_len(&*store),
        audited,
        "a replay writes no audit entry"
    );
    assert_eq!(store.count(&reader(100), &ListQuery::default()).unwrap(), 1);

    let mut other = write.clone();
    other.fragments[0].content = "something else".into();
    let err = store.write(&other).unwrap_err();
    assert!(matches!(err, Error::IdempotencyConflict { .. }), "{err}");
    assert_eq!(store.count(&reader(100), &ListQuery::default()).unwrap(), 1);
}

#[derive(Clone, Debug)]
struct Spec {
    user: usize,
    agents: u8,
    resources: u8,
    scope: u8,
    group: usize,
    created: i64,
    validity: Option<(i64, Option<i64>)>,
    fate: u8,
    fate_at: i64,
}

#[derive(Clone, Debug)]
struct ReaderSpec {
    user: usize,
    agent: usize,
    now: i64,
    agents: u8,
    resources: u8,
    groups: u8,
    view: u8,
    view_at: i64,
}

// Times are multiples of 10 so that boundaries (created at the reader's now,
// a validity ending exactly at the view's moment, …) come up often.
fn spec() -> impl Strategy<Value = Spec> {
    (
        (0..3usize, 1..16u8, 0..8u8, 0..4u8, 0..3usize),
        (
            0..6i64,
            proptest::option::of((0..8i64, proptest::option::of(1..4i64))),
        ),
        (0..3u8, 6..10i64),
    )
        .prop_map(
            |((user, agents, resources, scope, group), (created, validity), (fate, fate_at))| {
                Spec {
                    user,
                    agents,
                    resources,
                    scope,
                    group,
                    created: created * 10,
                    validity: validity.map(|(from, len)| (from * 10, len.map(|l| (from + l) * 10))),
                    fate,
                    fate_at: fate_at * 10,
                }
            },
        )
}

fn reader_spec() -> impl Strategy<Value = ReaderSpec> {
    (
        (0..3usize, 0..4usize, 0..12i64),
        (0..16u8, 0..8u8, 0..8u8),
        (0..4u8, -1..11i64),
    )
        .prop_map(
            |((user, agent, now), (agents, resources, groups), (view, view_at))| ReaderSpec {
                user,
                agent,
                now: now * 10,
                agents,
                resources,
                groups,
                view,
                view_at: view_at * 10,
            },
        )
}

fn mask<T: colmem_core::PrincipalId>(bits: u8, n: usize, id: fn(usize) -> T) -> Vec<T> {
    (0..n).filter(|i| bits & (1 << i) != 0).map(id).collect()
}

fn spec_fragment(s: &Spec, content: String, created: i64) -> NewFragment {
    NewFragment {
        key: Some(format!("k{}", s.user)),
        content,
        granularity: Granularity::Fact,
        kind: Kind::Observation,
        scope: match s.scope {
            0 => Scope::Agent,
            1 => Scope::User,
            2 => Scope::Group(group(s.group)),
            _ => Scope::Global,
        },
        provenance: Provenance {
            created_at: t(created),
            user: user(s.user),
            agents: mask(s.agents, 4, agent).into_iter().collect(),
            resources: mask(s.resources, 3, resource).into_iter().collect(),
            source: Source::default(),
        },
        validity: match s.validity {
            None => Validity::always(),
            Some((from, until)) => Validity::new(t(from), until.map(t)).unwrap(),
        },
        keywords: Vec::new(),
        embedding: None,
    }
}

fn reader_filter(r: &ReaderSpec) -> ReadFilter {
    let filter = ReadFilter::from_parts(FilterParts {
        user: user(r.user),
        agent: agent(r.agent),
        now: t(r.now),
        agents: mask(r.agents, 4, agent).into_iter().collect::<IdSet<_>>(),
        resources: mask(r.resources, 3, resource).into_iter().collect(),
        groups: mask(r.groups, 3, group).into_iter().collect(),
    });
    let view = match r.view {
        0 => View::Current,
        1 => View::RecordAsOf(t(r.view_at)),
        2 => View::WorldAsOf(t(r.view_at)),
        _ => View::AllVersions,
    };
    filter.with_view(view)
}

/// The SQL translation of the read rule returns exactly the fragments that
/// `ReadFilter::admits` accepts, one by one, in memory — for random fragments,
/// states (superseded, deleted, future-dated) and readers.
fn read_filter_agrees_with_admits(make: Factory<'_>) {
    let mut runner = TestRunner::new(Config {
        cases: 40,
        failure_persistence: None,
        ..Config::default()
    });
    let world = (
        proptest::collection::vec(spec(), 1..20),
        proptest::collection::vec(reader_spec(), 1..8),
    );
    let result = runner.run(&world, |(specs, readers)| {
        let (clock, store) = fresh(make, 0);
        let mut ids = Vec::new();
        for (i, s) in specs.iter().enumerate() {
            let f = spec_fragment(s, format!("fragment {i}"), s.created);
            let w = Interaction {
                user: f.provenance.user,
                agent: *f.provenance.agents.first().unwrap(),
                fragments: vec![f],
                idempotency_key: None,
            };
            ids.push(store.write(&w).unwrap().ids[0]);
        }
        let mut fates: Vec<(i64, usize)> = specs
            .iter()
            .enumerate()
            .filter(|(_, s)| s.fate != 0)
            .map(|(i, s)| (s.fate_at, i))
            .collect();
        fates.sort();
        for (at, i) in fates {
            clock.set(t(at)).unwrap();
            let s = &specs[i];
            let (u, a) = (user(s.user), agent(s.agents.trailing_zeros() as usize));
            if s.fate == 1 {
                let mut next = s.clone();
                next.validity = Some((at - 20, None));
                let new = spec_fragment(&next, format!("fragment {i} v2"), at);
                let new_id = store
                    .supersede(&Supersede {
                        user: u,
                        agent: a,
                        old: ids[i],
                        new,
                    })
                    .unwrap();
                ids.push(new_id);
            } else {
                store
                    .delete(&Delete {
                        user: u,
                        agent: a,
                        fragment: ids[i],
                    })
                    .unwrap();
            }
        }
        clock.set(t(200)).unwrap();
        let all: Vec<_> = ids.iter().map(|&id| store.get(id).unwrap()).collect();
        for r in &readers {
            let filter = reader_filter(r);
            let mut expected: Vec<FragmentId> = all
                .iter()
                .filter(|f| filter.admits(&f.meta()))
                .map(|f| f.id)
                .collect();
            expected.sort();
            let listed = ids_of(&store.list(&filter, &ListQuery::default()).unwrap());
            prop_assert_eq!(&listed, &expected, "reader {:?}", r);
            let counted = store.count(&filter, &ListQuery::default()).unwrap();
            prop_assert_eq!(counted, expected.len() as u64);
            // Narrowing, ordering and paging only ever take from the admitted set.
            let newest = ListQuery {
                order: Order::NewestFirst,
                limit: Some(2),
                ..ListQuery::default()
            };
            let page = ids_of(&store.list(&filter, &newest).unwrap());
            let want: Vec<_> = expected.iter().rev().take(2).copied().collect();
            prop_assert_eq!(&page, &want);
            if let Some(&first) = expected.first() {
                let rest = ListQuery {
                    after: Some(first),
                    ..ListQuery::default()
                };
                prop_assert_eq!(
                    ids_of(&store.list(&filter, &rest).unwrap()),
                    expected[1..].to_vec()
                );
            }
            let key = ListQuery {
                key: Some("k1".into()),
                ..ListQuery::default()
            };
            let keyed: Vec<_> = all
                .iter()
                .filter(|f| expected.contains(&f.id) && f.key.as_deref() == Some("k1"))
                .map(|f| f.id)
                .collect();
            prop_assert_eq!(ids_of(&store.list(&filter, &key).unwrap()), keyed);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("read filter and SQL disagree: {e}");
    }
}

fn supersede_and_history(make: Factory<'_>) {
    let (clock, store) = fresh(make, 100);
    let mut old = fact("alice lives in Lyon", 100);
    old.key = Some("alice/location".into());
    old.validity = Validity::since(t(10));
    let old_id = store.write(&one(old.clone())).unwrap().ids[0];
    clock.set(t(200)).unwrap();
    let mut new = fact("alice lives in Paris", 200);
    new.key = old.key.clone();
    new.validity = Validity::since(t(50));
    let new_id = store
        .supersede(&Supersede {
            user: user(0),
            agent: agent(0),
            old: old_id,
            new,
        })
        .unwrap();

    let closed = store.get(old_id).unwrap();
    assert_eq!(closed.validity, Validity::new(t(10), Some(t(50))).unwrap());
    assert_eq!(closed.superseded_at, Some(t(200)));
    assert_eq!(closed.superseded_by, Some(new_id));
    assert_eq!(
        closed.provenance, old.provenance,
        "provenance never changes"
    );

    let key = ListQuery {
        key: old.key.clone(),
        ..ListQuery::default()
    };
    let now = reader(300);
    assert_eq!(ids_of(&store.list(&now, &key).unwrap()), [new_id]);
    let world = |w| now.clone().with_view(View::WorldAsOf(t(w)));
    assert_eq!(ids_of(&store.list(&world(20), &key).unwrap()), [old_id]);
    assert_eq!(ids_of(&store.list(&world(49), &key).unwrap()), [old_id]);
    assert_eq!(
        ids_of(&store.list(&world(50), &key).unwrap()),
        [new_id],
        "validity is half-open"
    );
    assert_eq!(ids_of(&store.list(&world(60), &key).unwrap()), [new_id]);
    let record = |r| now.clone().with_view(View::RecordAsOf(t(r)));
    assert_eq!(ids_of(&store.list(&record(150), &key).unwrap()), [old_id]);
    assert_eq!(ids_of(&store.list(&record(199), &key).unwrap()), [old_id]);
    assert_eq!(ids_of(&store.list(&record(200), &key).unwrap()), [new_id]);
    assert_eq!(ids_of(&store.list(&record(250), &key).unwrap()), [new_id]);
    let all = now.clone().with_view(View::AllVersions);
    assert_eq!(ids_of(&store.list(&all, &key).unwrap()), [old_id, new_id]);

    let entries = store.audit_entries(0, 10).unwrap();
    assert!(
        entries.iter().any(|e| e.event
            == AuditEvent::Update {
                user: user(0),
                agent: agent(0),
                old: old_id,
                new: new_id
            }),
        "{entries:?}"
    );
    let err = store
        .supersede(&Supersede {
            user: user(0),
            agent: agent(0),
            old: old_id,
            new: fact("x", 200),
        })
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotCurrent {
                state: "superseded",
                ..
            }
        ),
        "{err}"
    );
}

fn delete_and_purge(make: Factory<'_>) {
    let (clock, store) = fresh(make, 100);
    let ids = store
        .write(&Interaction {
            fragments: vec![fact("keep me", 100), fact("forget me", 100)],
            ..one(fact("unused", 0))
        })
        .unwrap()
        .ids;
    clock.set(t(150)).unwrap();
    store
        .delete(&Delete {
            user: user(0),
            agent: agent(0),
            fragment: ids[1],
        })
        .unwrap();
    let tomb = store.get(ids[1]).unwrap();
    assert_eq!(tomb.deleted_at, Some(t(150)));
    assert_eq!(
        ids_of(&store.list(&reader(200), &ListQuery::default()).unwrap()),
        [ids[0]]
    );
    let all = reader(200).with_view(View::AllVersions);
    assert_eq!(
        ids_of(&store.list(&all, &ListQuery::default()).unwrap()),
        [ids[0]]
    );
    let before = reader(120);
    assert_eq!(
        ids_of(&store.list(&before, &ListQuery::default()).unwrap()),
        ids
    );
    let err = store
        .delete(&Delete {
            user: user(0),
            agent: agent(0),
            fragment: ids[1],
        })
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotCurrent {
                state: "deleted",
                ..
            }
        ),
        "{err}"
    );

    store
        .purge(&Purge {
            admin: "root".into(),
            fragment: ids[1],
        })
        .unwrap();
    assert!(matches!(store.get(ids[1]), Err(Error::NotFound { .. })));
    assert!(store.load(&[ids[1]]).unwrap().is_empty());
    let last = store.changes_after(0, 100).unwrap();
    assert_eq!(
        last.last().map(|c| (c.fragment, c.op)),
        Some((ids[1], ChangeOp::Purge))
    );
    let entries = store.audit_entries(0, 100).unwrap();
    assert_eq!(
        entries.last().unwrap().event,
        AuditEvent::Purge {
            admin: "root".into(),
            fragment: ids[1]
        }
    );
    assert!(matches!(
        store.purge(&Purge {
            admin: "root".into(),
            fragment: ids[1]
        }),
        Err(Error::NotFound { .. })
    ));
    // Ids are never reused after a purge.
    let next = store.write(&one(fact("later", 150))).unwrap().ids[0];
    assert!(next > ids[1]);
    assert!(matches!(
        store.verify_audit().unwrap(),
        AuditStatus::Intact { .. }
    ));
}

fn access_event_log(make: Factory<'_>) {
    let (_, store) = fresh(make, 100);
    let grant = |at| AccessEvent {
        at: t(at),
        change: AccessChange::Grant {
            edge: Edge::Invoke {
                user: user(0),
                agent: agent(1),
            },
            until: None,
        },
    };
    let revoke = AccessEvent {
        at: t(20),
        change: AccessChange::Revoke {
            edge: Edge::Invoke {
                user: user(0),
                agent: agent(1),
            },
        },
    };
    assert_eq!(store.append_access_event(&grant(10)).unwrap(), 1);
    store.append_access_event(&grant(20)).unwrap();
    store.append_access_event(&revoke).unwrap();
    let audited = audit_len(&*store);
    let err = store.append_access_event(&grant(15)).unwrap_err();
    assert!(matches!(err, Error::EventOutOfOrder { .. }), "{err}");
    assert_eq!(err.kind(), colmem_core::ErrorKind::Conflict);
    assert_eq!(
        audit_len(&*store),
        audited,
        "a refused event is not audited"
    );
    // A grant dated in the future is accepted; it takes effect when its time comes.
    store.append_access_event(&grant(10_000)).unwrap();
    assert_eq!(
        store.access_events().unwrap(),
        [grant(10), grant(20), revoke, grant(10_000)]
    );

    let id = store.write(&one(fact("seen by whom", 100))).unwrap().ids[0];
    let record = store.visibility_at(id, t(20)).unwrap();
    assert_eq!(record.events, [grant(10), grant(20), revoke]);
    assert_eq!(record.meta, store.get(id).unwrap().meta());
    assert_eq!(store.visibility_at(id, t(5)).unwrap().events, []);
}

fn audit_chain(make: Factory<'_>) {
    let (_, store) = fresh(make, 100);
    assert!(matches!(
        store.verify_audit().unwrap(),
        AuditStatus::Intact { entries: 0, .. }
    ));
    let ids = store.write(&one(fact("audited", 100))).unwrap().ids;
    let reads: Vec<_> = (0..5)
        .map(|i| ReadRecord {
            user: user(0),
            agent: agent(i % 2),
            returned: ids.clone(),
        })
        .collect();
    store.record_reads(&reads).unwrap();
    store.record_reads(&[]).unwrap();
    let entries = store.audit_entries(0, 100).unwrap();
    assert_eq!(entries.len(), 6);
    assert!(
        entries
            .windows(2)
            .all(|w| w[1].prev == w[0].hash && w[1].seq == w[0].seq + 1)
    );
    assert!(entries.iter().all(|e| e.is_intact()));
    assert_eq!(
        entries[5].event,
        AuditEvent::Read {
            user: user(0),
            agent: agent(0),
            returned: ids.clone()
        }
    );
    assert_eq!(store.audit_entries(4, 1).unwrap(), entries[4..5]);
    let status = store.verify_audit().unwrap();
    assert_eq!(
        status,
        AuditStatus::Intact {
            entries: 6,
            head: (6, entries[5].hash)
        }
    );

    // Archiving a prefix hands it over and keeps the rest verifiable.
    let archived = store.archive_audit(4).unwrap();
    assert_eq!(archived, entries[..4]);
    assert_eq!(store.audit_entries(0, 100).unwrap(), entries[4..]);
    assert_eq!(
        store.verify_audit().unwrap(),
        AuditStatus::Intact {
            entries: 2,
            head: (6, entries[5].hash)
        }
    );
    let appended = store.append_audit(&AuditEvent::Purge {
        admin: "a".into(),
        fragment: ids[0],
    });
    assert_eq!(appended.unwrap().prev, entries[5].hash);
    assert!(matches!(
        store.verify_audit().unwrap(),
        AuditStatus::Intact { entries: 3, .. }
    ));
}

fn unknown_ids_and_oversized_values(make: Factory<'_>) {
    let (_, store) = fresh(make, 100);
    let kept = store.write(&one(fact("kept", 100))).unwrap().ids[0];
    let ghost = FragmentId(kept.0 + 1000);
    let not_found = |r: Result<(), Error>| {
        let err = r.unwrap_err();
        assert!(
            matches!(err, Error::NotFound { id } if id == ghost),
            "{err}"
        );
        assert_eq!(err.kind(), colmem_core::ErrorKind::NotFound);
    };
    not_found(store.get(ghost).map(drop));
    not_found(store.embedding(ghost).map(drop));
    not_found(store.card(ghost).map(drop));
    not_found(store.visibility_at(ghost, t(1)).map(drop));
    not_found(store.delete(&Delete {
        user: user(0),
        agent: agent(0),
        fragment: ghost,
    }));
    not_found(store.purge(&Purge {
        admin: "root".into(),
        fragment: ghost,
    }));
    not_found(
        store
            .supersede(&Supersede {
                user: user(0),
                agent: agent(0),
                old: ghost,
                new: fact("n", 1),
            })
            .map(drop),
    );
    assert!(matches!(store.card(kept), Err(Error::NotFound { id }) if id == kept));
    assert!(matches!(
        store.get(FragmentId(u64::MAX)),
        Err(Error::NotFound { .. })
    ));

    let head = store.head().unwrap();
    let audited = audit_len(&*store);
    let big = "x".repeat(64 * 1024 + 1);
    let mut batch = one(fact("small", 100));
    batch.fragments.push(fact(&big, 100));
    let err = store.write(&batch).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooLarge {
                what: "content",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.kind(), colmem_core::ErrorKind::InvalidInput);
    let mut wide = fact("ok", 100);
    wide.keywords = vec![big.clone()];
    assert!(matches!(
        store.write(&one(wide)),
        Err(Error::TooLarge { .. })
    ));
    assert!(store.write(&one(fact(&"y".repeat(64 * 1024), 100))).is_ok());
    assert_eq!(
        store.head().unwrap(),
        head + 1,
        "nothing of the refused writes was stored"
    );
    assert_eq!(audit_len(&*store), audited + 1);
    assert_eq!(store.get(kept).unwrap().content, "kept");
}

fn card_fields(task: &str, sign: CardSign) -> CardFields {
    CardFields {
        task: task.into(),
        trigger: "when a date is ambiguous".into(),
        applicability: "dialogues with relative dates".into(),
        plan: "resolve against the session date".into(),
        execution: "look up the session header".into(),
        evaluation: "the answer names an absolute date".into(),
        sign,
    }
}

fn cards_and_edges(make: Factory<'_>) {
    let (_, store) = fresh(make, 100);
    let card = |task: &str, sign| CardWrite {
        user: user(0),
        agent: agent(0),
        fragment: NewFragment {
            granularity: Granularity::Card,
            ..fact(task, 100)
        },
        fields: card_fields(task, sign),
        idempotency_key: None,
    };
    let a = store
        .write_card(&card("dates", CardSign::Positive))
        .unwrap()
        .ids[0];
    let b = store
        .write_card(&card("dates-fail", CardSign::Negative))
        .unwrap()
        .ids[0];
    let c = store
        .write_card(&card("units", CardSign::Positive))
        .unwrap()
        .ids[0];
    let plain = store.write(&one(fact("not a card", 100))).unwrap().ids[0];
    assert!(matches!(
        store.write(&one(NewFragment {
            granularity: Granularity::Card,
            ..fact("bare", 100)
        })),
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(
        store.write_card(&CardWrite {
            fragment: fact("fact", 100),
            ..card("x", CardSign::Positive)
        }),
        Err(Error::InvalidInput(_))
    ));

    let got = store.card(b).unwrap();
    assert_eq!(got.fields, card_fields("dates-fail", CardSign::Negative));
    assert_eq!(got.fragment.granularity, Granularity::Card);
    let listed: Vec<_> = store
        .list_cards(&reader(100), &ListQuery::default())
        .unwrap()
        .into_iter()
        .map(|c| c.fragment.id)
        .collect();
    assert_eq!(listed, [a, b, c]);
    let stranger = ReadFilter::from_parts(FilterParts {
        user: user(2),
        agent: agent(0),
        now: t(100),
        agents: (0..4).map(agent).collect(),
        resources: IdSet::new(),
        groups: IdSet::new(),
    });
    assert!(
        store
            .list_cards(&stranger, &ListQuery::default())
            .unwrap()
            .is_empty()
    );

    let edge = |from, to, relation, weight| CardEdge {
        from,
        to,
        relation,
        weight,
    };
    let constrains = CardRelation::Constrains {
        precondition: "the session has a date".into(),
    };
    store
        .put_card_edge(&edge(a, b, CardRelation::Conflicts, 1.0))
        .unwrap();
    store
        .put_card_edge(&edge(a, c, CardRelation::Supports, 0.5))
        .unwrap();
    store
        .put_card_edge(&edge(c, b, constrains.clone(), 0.25))
        .unwrap();
    store
        .put_card_edge(&edge(a, c, CardRelation::Supports, 0.75))
        .unwrap();
    assert!(matches!(
        store.put_card_edge(&edge(a, plain, CardRelation::Supports, 0.5)),
        Err(Error::NotFound { id }) if id == plain
    ));
    assert!(matches!(
        store.put_card_edge(&edge(a, c, CardRelation::Satisfies, 1.5)),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(
        store.card_edges(&[a]).unwrap(),
        [
            edge(a, b, CardRelation::Conflicts, 1.0),
            edge(a, c, CardRelation::Supports, 0.75)
        ]
    );
    assert_eq!(
        store.card_edges(&[b]).unwrap(),
        [
            edge(a, b, CardRelation::Conflicts, 1.0),
            edge(c, b, constrains, 0.25)
        ]
    );
    store
        .purge(&Purge {
            admin: "root".into(),
            fragment: b,
        })
        .unwrap();
    assert_eq!(
        store.card_edges(&[a, b, c]).unwrap(),
        [edge(a, c, CardRelation::Supports, 0.75)]
    );
    assert!(matches!(store.card(b), Err(Error::NotFound { .. })));
}

fn change_feed(make: Factory<'_>) {
    let (clock, store) = fresh(make, 100);
    assert_eq!(store.head().unwrap(), 0);
    assert!(store.changes_after(0, 10).unwrap().is_empty());
    let mut f = fact("indexed", 100);
    f.embedding = Some(Embedding {
        embedder: "e".into(),
        vector: vec![1.0, 2.0],
    });
    let a = store.write(&one(f.clone())).unwrap().ids[0];
    let b = store.write(&one(fact("other", 100))).unwrap().ids[0];
    clock.set(t(110)).unwrap();
    let c = store
        .supersede(&Supersede {
            user: user(0),
            agent: agent(0),
            old: b,
            new: fact("newer", 110),
        })
        .unwrap();
    store
        .delete(&Delete {
            user: user(0),
            agent: agent(0),
            fragment: c,
        })
        .unwrap();
    store
        .purge(&Purge {
            admin: "root".into(),
            fragment: a,
        })
        .unwrap();

    let changes = store.changes_after(0, 100).unwrap();
    let ops: Vec<_> = changes.iter().map(|ch| (ch.fragment, ch.op)).collect();
    assert_eq!(
        ops,
        [
            (a, ChangeOp::Put),
            (b, ChangeOp::Put),
            (c, ChangeOp::Put),
            (b, ChangeOp::Meta),
            (c, ChangeOp::Delete),
            (a, ChangeOp::Purge),
        ]
    );
    assert!(changes.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(store.head().unwrap(), changes.last().unwrap().seq);
    assert_eq!(
        store.changes_after(changes[1].seq, 2).unwrap(),
        changes[2..4]
    );

    let loaded = store.load(&[a, b, c]).unwrap();
    let mut loaded_ids: Vec<_> = loaded.iter().map(|s| s.fragment.id).collect();
    loaded_ids.sort();
    assert_eq!(
        loaded_ids,
        [b, c],
        "purged fragments are absent, tombstones present"
    );
    let tomb = loaded.iter().find(|s| s.fragment.id == c).unwrap();
    assert_eq!(tomb.fragment.deleted_at, Some(t(110)));

    let d = store.write(&one(f)).unwrap().ids[0];
    let stored = store.load(&[d]).unwrap();
    assert_eq!(
        stored[0].embedding.as_ref().map(|e| e.vector.clone()),
        Some(vec![1.0, 2.0])
    );
}
