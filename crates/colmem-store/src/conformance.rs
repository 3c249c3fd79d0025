//! The generic conformance suite for [`FragmentStore`] implementations.
//!
//! Every backend (SQLite on disk and in memory today, PostgreSQL later) runs
//! [`run`] with a factory that makes a fresh, empty store with the default
//! limits on the clock it is given. The suite returns the first behaviour that
//! differs from the contract as an `Err`, naming the check, the property and
//! the values that showed it (a test returns it with `?`):
//!
//! ```no_run
//! use colmem_store::{SqliteStore, StoreConfig, conformance};
//! conformance::run(&|clock| {
//!     let config = StoreConfig { clock, ..StoreConfig::default() };
//!     // invariant: an in-memory store needs no file, so opening it cannot fail here.
//!     Box::new(SqliteStore::open_in_memory(config).expect("an in-memory store opens"))
//! })?;
//! # Ok::<(), conformance::Failure>(())
//! ```

use std::collections::BTreeSet;
use std::fmt::{Debug, Display};
use std::sync::Arc;

use colmem_core::{
    AccessChange, AccessEvent, AgentId, AuditEvent, CardEdge, CardFields, CardRelation, CardSign,
    ChangeOp, Clock, Digest, Edge, Embedding, FilterParts, FragmentId, Granularity, GroupId, IdSet,
    Kind, LogicalClock, NewFragment, Provenance, ReadFilter, ResourceId, Scope, Source, Timestamp,
    UserId, Validity, View,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::{
    AuditStatus, CardWrite, Delete, Disagreement, Erase, Error, FragmentStore, Interaction,
    ListQuery, Order, Purge, PurgeMany, ReadRecord, StoreCheck, Supersede,
};

/// Makes a fresh, empty store with default limits whose record times come from the given clock.
pub type Factory<'a> = &'a dyn Fn(Arc<dyn Clock>) -> Box<dyn FragmentStore>;

/// A failed conformance check: the check, the property that broke and the values that showed it.
pub type Failure = String;

/// One check of the suite.
type Check = fn(Factory<'_>) -> Result<(), Failure>;

/// Runs every check of the suite against stores made by `make`; the first failure ends it.
pub fn run(make: Factory<'_>) -> Result<(), Failure> {
    let checks: [(&str, Check); 11] = [
        ("round trip", round_trip),
        ("idempotent writes", idempotent_writes),
        (
            "read filter agrees with admits",
            read_filter_agrees_with_admits,
        ),
        ("supersede and history", supersede_and_history),
        ("delete and purge", delete_and_purge),
        ("erase and purge many", erase_and_purge_many),
        ("access event log", access_event_log),
        ("audit chain", audit_chain),
        (
            "unknown ids and oversized values",
            unknown_ids_and_oversized_values,
        ),
        ("cards and edges", cards_and_edges),
        ("change feed", change_feed),
    ];
    for (name, check) in checks {
        check(make).map_err(|e| format!("conformance check '{name}' failed: {e}"))?;
    }
    Ok(())
}

fn ensure(holds: bool, what: impl FnOnce() -> String) -> Result<(), Failure> {
    if holds { Ok(()) } else { Err(what()) }
}

/// `got == want`, or a failure saying what was compared and both values.
fn eq<A, B>(what: &str, got: A, want: B) -> Result<(), Failure>
where
    A: PartialEq<B> + Debug,
    B: Debug,
{
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}"))
    }
}

/// The value of a call that must succeed, or a failure naming the call and its error.
fn ok<T, E: Display>(what: &str, r: Result<T, E>) -> Result<T, Failure> {
    r.map_err(|e| format!("{what}: unexpected error: {e}"))
}

/// The error of a call that must fail, or a failure naming the call and what it returned.
fn refused<T: Debug>(what: &str, r: Result<T, Error>) -> Result<Error, Failure> {
    match r {
        Ok(value) => Err(format!("{what}: succeeded with {value:?}, want an error")),
        Err(e) => Ok(e),
    }
}

fn t(ms: i64) -> Timestamp {
    Timestamp::from_millis(ms)
}

fn user(i: usize) -> Result<UserId, Failure> {
    ok("make a user id", UserId::new(&format!("conf-u{i}")))
}

fn agent(i: usize) -> Result<AgentId, Failure> {
    ok("make an agent id", AgentId::new(&format!("conf-a{i}")))
}

fn resource(i: usize) -> Result<ResourceId, Failure> {
    ok("make a resource id", ResourceId::new(&format!("conf-r{i}")))
}

fn group(i: usize) -> Result<GroupId, Failure> {
    ok("make a group id", GroupId::new(&format!("conf-g{i}")))
}

fn fresh(make: Factory<'_>, start: i64) -> (Arc<LogicalClock>, Box<dyn FragmentStore>) {
    let clock = Arc::new(LogicalClock::new(t(start)));
    let store = make(clock.clone());
    (clock, store)
}

fn set_clock(clock: &LogicalClock, at: i64) -> Result<(), Failure> {
    ok(&format!("move the clock to {at}"), clock.set(t(at)))
}

/// A plain observation by `conf-a0` for `conf-u0`, recorded at `at`.
fn fact(content: &str, at: i64) -> Result<NewFragment, Failure> {
    Ok(NewFragment {
        key: None,
        content: content.to_owned(),
        granularity: Granularity::Fact,
        kind: Kind::Observation,
        scope: Scope::User,
        provenance: Provenance {
            created_at: t(at),
            user: user(0)?,
            agents: BTreeSet::from([agent(0)?]),
            resources: BTreeSet::new(),
            source: Source::default(),
        },
        validity: Validity::always(),
        keywords: Vec::new(),
        embedding: None,
    })
}

/// One interaction of `conf-u0` through `conf-a0` holding `fragments`.
fn interaction(fragments: Vec<NewFragment>) -> Result<Interaction, Failure> {
    Ok(Interaction {
        user: user(0)?,
        agent: agent(0)?,
        fragments,
        idempotency_key: None,
    })
}

fn one(fragment: NewFragment) -> Result<Interaction, Failure> {
    interaction(vec![fragment])
}

/// Writes `fragment` alone and returns its id.
fn write_one(
    store: &dyn FragmentStore,
    what: &str,
    fragment: NewFragment,
) -> Result<FragmentId, Failure> {
    let receipt = ok(what, store.write(&one(fragment)?))?;
    match receipt.ids[..] {
        [id] => Ok(id),
        _ => Err(format!(
            "{what}: one fragment written, got ids {:?}",
            receipt.ids
        )),
    }
}

/// The reader `(conf-u0, conf-a0)` at `now`, allowed every principal of the suite.
fn reader(now: i64) -> Result<ReadFilter, Failure> {
    Ok(ReadFilter::from_parts(FilterParts {
        user: user(0)?,
        agent: agent(0)?,
        now: t(now),
        agents: (0..4).map(agent).collect::<Result<IdSet<_>, _>>()?,
        resources: (0..3).map(resource).collect::<Result<_, _>>()?,
        groups: (0..3).map(group).collect::<Result<_, _>>()?,
    }))
}

fn ids_of(fragments: &[colmem_core::Fragment]) -> Vec<FragmentId> {
    fragments.iter().map(|f| f.id).collect()
}

/// The ids `filter` lists under `query`.
fn listed(
    store: &dyn FragmentStore,
    filter: &ReadFilter,
    query: &ListQuery,
) -> Result<Vec<FragmentId>, Failure> {
    Ok(ids_of(&ok(
        &format!("list under {query:?}"),
        store.list(filter, query),
    )?))
}

fn audit_len(store: &dyn FragmentStore) -> Result<usize, Failure> {
    Ok(ok("read the audit log", store.audit_entries(0, usize::MAX))?.len())
}

fn head(store: &dyn FragmentStore) -> Result<u64, Failure> {
    ok("read the change feed head", store.head())
}

fn round_trip(make: Factory<'_>) -> Result<(), Failure> {
    let (_, store) = fresh(make, 100);
    let mut f = fact("alice lives in Lyon", 100)?;
    f.key = Some("alice/location".into());
    f.kind = Kind::Trace;
    f.scope = Scope::Group(group(1)?);
    f.provenance.agents = BTreeSet::from([agent(0)?, agent(2)?]);
    f.provenance.resources = BTreeSet::from([resource(1)?]);
    f.provenance.source = Source {
        session: Some("s-1".into()),
        turns: vec!["D1:3".into(), "D1:4".into()],
        parents: vec![FragmentId(7), FragmentId(3)],
    };
    f.validity = ok("make a validity", Validity::new(t(10), Some(t(50))))?;
    f.keywords = vec!["alice".into(), "lyon".into()];
    f.embedding = Some(Embedding {
        embedder: "offline-v1".into(),
        vector: vec![0.25, -1.0, 3.5],
    });
    let receipt = ok("write one fragment", store.write(&one(f.clone())?))?;
    ensure(!receipt.replayed, || {
        "a first write reports replayed = true".into()
    })?;
    let [id] = receipt.ids[..] else {
        return Err(format!("one fragment written, got ids {:?}", receipt.ids));
    };
    let got = ok("get the written fragment", store.get(id))?;
    eq("get returns the id asked for", got.id, id)?;
    eq("the key round-trips", &got.key, &f.key)?;
    eq("the content round-trips", &got.content, &f.content)?;
    eq(
        "the granularity round-trips",
        got.granularity,
        f.granularity,
    )?;
    eq("the kind round-trips", got.kind, f.kind)?;
    eq("the scope round-trips", got.scope, f.scope)?;
    eq("the provenance round-trips", &got.provenance, &f.provenance)?;
    eq("the validity round-trips", got.validity, f.validity)?;
    eq("the keywords round-trip", &got.keywords, &f.keywords)?;
    eq(
        "a new fragment is neither superseded nor deleted",
        (got.superseded_at, got.superseded_by, got.deleted_at),
        (None, None, None),
    )?;
    eq(
        "the embedding round-trips",
        ok("read the embedding", store.embedding(id))?,
        f.embedding,
    )?;

    // A second interaction of several fragments gets fresh ids in order.
    let batch = interaction(vec![
        fact("one", 100)?,
        fact("two", 100)?,
        fact("three", 100)?,
    ])?;
    let ids = ok("write three fragments at once", store.write(&batch))?.ids;
    eq("ids returned for a batch of three", ids.len(), 3)?;
    ensure(ids.windows(2).all(|w| w[0] < w[1]) && ids[0] > id, || {
        format!("the ids of a batch rise in order after the earlier write's {id:?}: {ids:?}")
    })?;
    let contents = ids
        .iter()
        .map(|&i| ok("get a batch member", store.get(i)).map(|f| f.content))
        .collect::<Result<Vec<_>, _>>()?;
    eq(
        "a batch's fragments keep their order",
        contents,
        ["one", "two", "three"],
    )?;
    eq(
        "a fragment written without an embedding has none",
        ok("read the embedding", store.embedding(ids[0]))?,
        None,
    )?;

    // The write was audited with the digests of the texts, never the texts.
    let entries = ok("read the audit log", store.audit_entries(0, 10))?;
    let Some(AuditEvent::Write { fragments, .. }) = entries.get(1).map(|e| &e.event) else {
        return Err(format!(
            "the second audit entry is the batch's write, got {entries:?}"
        ));
    };
    eq(
        "the write entry holds each fragment's id and text digest",
        fragments.get(1),
        Some(&(ids[1], Digest::of_text("two"))),
    )?;
    let written = ok("encode the audit entries", serde_json::to_string(&entries))?;
    ensure(!written.contains("alice lives"), || {
        format!("audit entries hold no text, got {written}")
    })
}

fn idempotent_writes(make: Factory<'_>) -> Result<(), Failure> {
    let (_, store) = fresh(make, 100);
    let mut write = one(fact("remember me once", 100)?)?;
    write.idempotency_key = Some("req-42".into());
    eq(
        "a key never used has no ids",
        ok("look up a key", store.idempotent_ids("req-42"))?,
        None,
    )?;
    let first = ok("a first keyed write", store.write(&write))?;
    eq(
        "a used key names the ids it wrote",
        ok("look up a key", store.idempotent_ids("req-42"))?,
        Some(first.ids.clone()),
    )?;
    let head_before = head(&*store)?;
    let audited = audit_len(&*store)?;
    let again = ok("repeat the keyed write", store.write(&write))?;
    ensure(again.replayed, || {
        "a repeated key reports replayed = false".into()
    })?;
    eq("a replay returns the original ids", &again.ids, &first.ids)?;
    eq("a replay writes no change", head(&*store)?, head_before)?;
    eq(
        "a replay writes no audit entry",
        audit_len(&*store)?,
        audited,
    )?;
    eq(
        "a replay stores no second copy",
        ok("count", store.count(&reader(100)?, &ListQuery::default()))?,
        1,
    )?;

    let mut other = write.clone();
    other.fragments[0].content = "something else".into();
    let err = refused(
        "reuse an idempotency key for a different write",
        store.write(&other),
    )?;
    ensure(matches!(err, Error::IdempotencyConflict { .. }), || {
        format!("a reused key with a different body gives IdempotencyConflict, got {err}")
    })?;
    // The same text drawn from another turn is another write.
    let mut elsewhere = write.clone();
    elsewhere.fragments[0].provenance.source.turns = vec!["D9:9".into()];
    let err = refused(
        "reuse an idempotency key for the same text from another source",
        store.write(&elsewhere),
    )?;
    ensure(matches!(err, Error::IdempotencyConflict { .. }), || {
        format!("a reused key with another source gives IdempotencyConflict, got {err}")
    })?;
    eq(
        "a conflicting write stores nothing",
        ok("count", store.count(&reader(100)?, &ListQuery::default()))?,
        1,
    )
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

fn mask<T>(bits: u8, n: usize, id: fn(usize) -> Result<T, Failure>) -> Result<Vec<T>, Failure> {
    (0..n).filter(|i| bits & (1 << i) != 0).map(id).collect()
}

fn spec_fragment(s: &Spec, content: String, created: i64) -> Result<NewFragment, Failure> {
    Ok(NewFragment {
        key: Some(format!("k{}", s.user)),
        content,
        granularity: Granularity::Fact,
        kind: Kind::Observation,
        scope: match s.scope {
            0 => Scope::Agent,
            1 => Scope::User,
            2 => Scope::Group(group(s.group)?),
            _ => Scope::Global,
        },
        provenance: Provenance {
            created_at: t(created),
            user: user(s.user)?,
            agents: mask(s.agents, 4, agent)?.into_iter().collect(),
            resources: mask(s.resources, 3, resource)?.into_iter().collect(),
            source: Source::default(),
        },
        validity: match s.validity {
            None => Validity::always(),
            Some((from, until)) => ok("make a validity", Validity::new(t(from), until.map(t)))?,
        },
        keywords: Vec::new(),
        embedding: None,
    })
}

fn reader_filter(r: &ReaderSpec) -> Result<ReadFilter, Failure> {
    let filter = ReadFilter::from_parts(FilterParts {
        user: user(r.user)?,
        agent: agent(r.agent)?,
        now: t(r.now),
        agents: mask(r.agents, 4, agent)?.into_iter().collect::<IdSet<_>>(),
        resources: mask(r.resources, 3, resource)?.into_iter().collect(),
        groups: mask(r.groups, 3, group)?.into_iter().collect(),
    });
    let view = match r.view {
        0 => View::Current,
        1 => View::RecordAsOf(t(r.view_at)),
        2 => View::WorldAsOf(t(r.view_at)),
        _ => View::AllVersions,
    };
    Ok(filter.with_view(view))
}

/// The SQL translation of the read rule returns exactly the fragments that
/// `ReadFilter::admits` accepts, one by one, in memory — for random fragments,
/// states (superseded, deleted, future-dated) and readers.
fn read_filter_agrees_with_admits(make: Factory<'_>) -> Result<(), Failure> {
    let mut runner = TestRunner::new(Config {
        cases: 40,
        failure_persistence: None,
        ..Config::default()
    });
    let world = (
        proptest::collection::vec(spec(), 1..20),
        proptest::collection::vec(reader_spec(), 1..8),
    );
    runner
        .run(&world, |(specs, readers)| {
            filter_case(make, &specs, &readers).map_err(TestCaseError::fail)
        })
        .map_err(|e| format!("the store's filtered reads disagree with ReadFilter::admits: {e}"))
}

/// One world of [`read_filter_agrees_with_admits`]: writes `specs`, applies their
/// fates, then compares every reader's list, count, page and narrowing with `admits`.
fn filter_case(make: Factory<'_>, specs: &[Spec], readers: &[ReaderSpec]) -> Result<(), Failure> {
    let (clock, store) = fresh(make, 0);
    let mut ids = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let f = spec_fragment(s, format!("fragment {i}"), s.created)?;
        let Some(&by) = f.provenance.agents.first() else {
            return Err(format!("spec {s:?} has no agent"));
        };
        let w = Interaction {
            user: f.provenance.user,
            agent: by,
            fragments: vec![f],
            idempotency_key: None,
        };
        let receipt = ok(&format!("write spec {s:?}"), store.write(&w))?;
        ids.extend(receipt.ids.first().copied());
    }
    let mut fates: Vec<(i64, usize)> = specs
        .iter()
        .enumerate()
        .filter(|(_, s)| s.fate != 0)
        .map(|(i, s)| (s.fate_at, i))
        .collect();
    fates.sort();
    for (at, i) in fates {
        set_clock(&clock, at)?;
        let s = &specs[i];
        let (u, a) = (user(s.user)?, agent(s.agents.trailing_zeros() as usize)?);
        if s.fate == 1 {
            let mut next = s.clone();
            next.validity = Some((at - 20, None));
            let new = spec_fragment(&next, format!("fragment {i} v2"), at)?;
            let new_id = ok(
                &format!("supersede {:?} at {at}", ids[i]),
                store.supersede(&Supersede {
                    user: u,
                    agent: a,
                    old: ids[i],
                    new,
                }),
            )?;
            ids.push(new_id);
        } else {
            ok(
                &format!("delete {:?} at {at}", ids[i]),
                store.delete(&Delete {
                    user: u,
                    agent: a,
                    fragment: ids[i],
                }),
            )?;
        }
    }
    set_clock(&clock, 200)?;
    let all = ids
        .iter()
        .map(|&id| ok(&format!("get {id:?}"), store.get(id)))
        .collect::<Result<Vec<_>, _>>()?;
    for r in readers {
        let filter = reader_filter(r)?;
        let mut expected: Vec<FragmentId> = all
            .iter()
            .filter(|f| filter.admits(&f.meta()))
            .map(|f| f.id)
            .collect();
        expected.sort();
        eq(
            &format!("list for reader {r:?} (left: the store, right: admits)"),
            listed(&*store, &filter, &ListQuery::default())?,
            expected.as_slice(),
        )?;
        eq(
            &format!("count for reader {r:?} (left: the store, right: admits)"),
            ok("count", store.count(&filter, &ListQuery::default()))?,
            expected.len() as u64,
        )?;
        // Narrowing, ordering and paging only ever take from the admitted set.
        let newest = ListQuery {
            order: Order::NewestFirst,
            limit: Some(2),
            ..ListQuery::default()
        };
        let want: Vec<_> = expected.iter().rev().take(2).copied().collect();
        eq(
            &format!("the newest two admitted for reader {r:?}"),
            listed(&*store, &filter, &newest)?,
            want,
        )?;
        if let Some(&first) = expected.first() {
            let rest = ListQuery {
                after: Some(first),
                ..ListQuery::default()
            };
            eq(
                &format!("the admitted after {first:?} for reader {r:?}"),
                listed(&*store, &filter, &rest)?,
                expected[1..].to_vec(),
            )?;
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
        eq(
            &format!("the admitted with key k1 for reader {r:?}"),
            listed(&*store, &filter, &key)?,
            keyed.as_slice(),
        )?;
        eq(
            &format!("the count of admitted with key k1 for reader {r:?}"),
            ok("count by key", store.count(&filter, &key))?,
            keyed.len() as u64,
        )?;
    }
    Ok(())
}

fn supersede_and_history(make: Factory<'_>) -> Result<(), Failure> {
    let (clock, store) = fresh(make, 100);
    let mut old = fact("alice lives in Lyon", 100)?;
    old.key = Some("alice/location".into());
    old.validity = Validity::since(t(10));
    let old_id = write_one(&*store, "write the old fact", old.clone())?;
    set_clock(&clock, 200)?;
    let mut new = fact("alice lives in Paris", 200)?;
    new.key = old.key.clone();
    new.validity = Validity::since(t(50));
    let new_id = ok(
        "supersede the old fact",
        store.supersede(&Supersede {
            user: user(0)?,
            agent: agent(0)?,
            old: old_id,
            new,
        }),
    )?;

    let closed = ok("get the superseded fact", store.get(old_id))?;
    eq(
        "supersede closes the old validity where the new one starts",
        closed.validity,
        ok("make a validity", Validity::new(t(10), Some(t(50))))?,
    )?;
    eq(
        "superseded_at is the record time",
        closed.superseded_at,
        Some(t(200)),
    )?;
    eq(
        "superseded_by links the successor",
        closed.superseded_by,
        Some(new_id),
    )?;
    eq(
        "provenance never changes",
        &closed.provenance,
        &old.provenance,
    )?;

    let key = ListQuery {
        key: old.key.clone(),
        ..ListQuery::default()
    };
    let now = reader(300)?;
    eq(
        "the current version",
        listed(&*store, &now, &key)?,
        [new_id],
    )?;
    let world = |w| now.clone().with_view(View::WorldAsOf(t(w)));
    for (w, want, why) in [
        (20, old_id, "world time 20 is in the old interval"),
        (49, old_id, "world time 49 is in the old interval"),
        (
            50,
            new_id,
            "validity is half-open: world time 50 is the new one's",
        ),
        (60, new_id, "world time 60 is in the new interval"),
    ] {
        eq(why, listed(&*store, &world(w), &key)?, [want])?;
    }
    let record = |r| now.clone().with_view(View::RecordAsOf(t(r)));
    for (r, want, why) in [
        (150, old_id, "record time 150 is before the supersede"),
        (199, old_id, "record time 199 is before the supersede"),
        (200, new_id, "record time 200 is the supersede's"),
        (250, new_id, "record time 250 is after the supersede"),
    ] {
        eq(why, listed(&*store, &record(r), &key)?, [want])?;
    }
    let all = now.clone().with_view(View::AllVersions);
    eq(
        "all versions list both, oldest first",
        listed(&*store, &all, &key)?,
        [old_id, new_id],
    )?;

    let entries = ok("read the audit log", store.audit_entries(0, 10))?;
    let update = AuditEvent::Update {
        user: user(0)?,
        agent: agent(0)?,
        old: old_id,
        new: new_id,
    };
    ensure(entries.iter().any(|e| e.event == update), || {
        format!("supersede is audited as {update:?}, got {entries:?}")
    })?;
    let err = refused(
        "supersede an already superseded fact",
        store.supersede(&Supersede {
            user: user(0)?,
            agent: agent(0)?,
            old: old_id,
            new: fact("x", 200)?,
        }),
    )?;
    ensure(
        matches!(
            err,
            Error::NotCurrent {
                state: "superseded",
                ..
            }
        ),
        || format!("superseding twice gives NotCurrent {{ state: \"superseded\" }}, got {err}"),
    )?;
    // A past version can be deleted (a forget instruction reaches history too).
    ok(
        "delete a superseded version",
        store.delete(&Delete {
            user: user(0)?,
            agent: agent(0)?,
            fragment: old_id,
        }),
    )?;
    eq(
        "a deleted past version is in no version",
        listed(&*store, &all, &key)?,
        [new_id],
    )
}

fn delete_and_purge(make: Factory<'_>) -> Result<(), Failure> {
    let (clock, store) = fresh(make, 100);
    let ids = ok(
        "write two fragments",
        store.write(&interaction(vec![
            fact("keep me", 100)?,
            fact("forget me", 100)?,
        ])?),
    )?
    .ids;
    let [keep, forget] = ids[..] else {
        return Err(format!("two fragments written, got ids {ids:?}"));
    };
    set_clock(&clock, 150)?;
    let delete = Delete {
        user: user(0)?,
        agent: agent(0)?,
        fragment: forget,
    };
    ok("delete a fragment", store.delete(&delete))?;
    let tomb = ok("get a deleted fragment (its tombstone)", store.get(forget))?;
    eq(
        "deleted_at is the record time",
        tomb.deleted_at,
        Some(t(150)),
    )?;
    eq(
        "a deleted fragment is not current",
        listed(&*store, &reader(200)?, &ListQuery::default())?,
        [keep],
    )?;
    let all = reader(200)?.with_view(View::AllVersions);
    eq(
        "a deleted fragment is in no version after its deletion",
        listed(&*store, &all, &ListQuery::default())?,
        [keep],
    )?;
    eq(
        "a reader before the deletion still sees it",
        listed(&*store, &reader(120)?, &ListQuery::default())?,
        [keep, forget],
    )?;
    let err = refused("delete a fragment twice", store.delete(&delete))?;
    ensure(
        matches!(
            err,
            Error::NotCurrent {
                state: "deleted",
                ..
            }
        ),
        || format!("deleting twice gives NotCurrent {{ state: \"deleted\" }}, got {err}"),
    )?;

    let purge = Purge {
        admin: "root".into(),
        fragment: forget,
    };
    ok("purge a deleted fragment", store.purge(&purge))?;
    let err = refused("get a purged fragment", store.get(forget))?;
    ensure(matches!(err, Error::NotFound { .. }), || {
        format!("a purged fragment is NotFound, got {err}")
    })?;
    let loaded = ok("load a purged fragment", store.load(&[forget]))?;
    ensure(loaded.is_empty(), || {
        format!("the change feed loads nothing for a purged fragment, got {loaded:?}")
    })?;
    let changes = ok("read the change feed", store.changes_after(0, 100))?;
    eq(
        "a purge ends the change feed with a Purge change",
        changes.last().map(|c| (c.fragment, c.op)),
        Some((forget, ChangeOp::Purge)),
    )?;
    let entries = ok("read the audit log", store.audit_entries(0, 100))?;
    eq(
        "a purge is audited by id",
        entries.last().map(|e| &e.event),
        Some(&AuditEvent::Purge {
            admin: "root".into(),
            fragment: forget,
        }),
    )?;
    let err = refused("purge a fragment twice", store.purge(&purge))?;
    ensure(matches!(err, Error::NotFound { .. }), || {
        format!("purging twice gives NotFound, got {err}")
    })?;
    let next = write_one(&*store, "write after a purge", fact("later", 150)?)?;
    ensure(next > forget, || {
        format!("ids are never reused after a purge: {next:?} after purged {forget:?}")
    })?;
    let status = ok("verify the audit chain", store.verify_audit())?;
    ensure(matches!(status, AuditStatus::Intact { .. }), || {
        format!("the audit chain verifies after delete and purge, got {status:?}")
    })
}

/// Erasure keeps a tombstone of ids and times and nothing a fragment said; a purge
/// of several fragments is one all-or-nothing request.
fn erase_and_purge_many(make: Factory<'_>) -> Result<(), Failure> {
    let (clock, store) = fresh(make, 100);
    let mut said = fact("erase my words", 100)?;
    said.key = Some("conf-u0/words".into());
    said.keywords = vec!["words".into()];
    said.provenance.source = Source {
        session: Some("s1".into()),
        turns: vec!["D1:1".into()],
        parents: Vec::new(),
    };
    said.embedding = Some(Embedding {
        embedder: "conf-embedder".into(),
        vector: vec![0.5; 4],
    });
    let said = write_one(&*store, "write a fragment to erase", said)?;
    let live = write_one(&*store, "write a live fragment", fact("keep me", 100)?)?;
    let card = ok(
        "write a card to erase",
        store.write_card(&CardWrite {
            user: user(0)?,
            agent: agent(0)?,
            fragment: NewFragment {
                granularity: Granularity::Card,
                ..fact("a card to erase", 100)?
            },
            fields: card_fields("a card to erase", CardSign::Positive),
            replaces: None,
            idempotency_key: None,
        }),
    )?
    .ids;
    let [card] = card[..] else {
        return Err(format!("one card written, got ids {card:?}"));
    };
    set_clock(&clock, 150)?;
    for id in [said, card] {
        ok(
            "delete a fragment",
            store.delete(&Delete {
                user: user(0)?,
                agent: agent(0)?,
                fragment: id,
            }),
        )?;
    }
    let before = ok("get the fragment before erasure", store.get(said))?;
    let audited = audit_len(&*store)?;
    let err = refused(
        "erase a live fragment with a deleted one",
        store.erase(&Erase {
            fragments: vec![said, live],
        }),
    )?;
    ensure(matches!(err, Error::InvalidInput(_)), || {
        format!("erasing a fragment not deleted is InvalidInput, got {err}")
    })?;
    eq(
        "a refused erasure erases nothing",
        ok("get the fragment", store.get(said))?,
        before.clone(),
    )?;

    set_clock(&clock, 160)?;
    let gone = FragmentId(9_999);
    let erased = ok(
        "erase deleted fragments (and an id that does not exist)",
        store.erase(&Erase {
            fragments: vec![said, gone, card, said],
        }),
    )?;
    eq("the ids erased, each once", &erased, &vec![said, card])?;
    let tomb = ok("get an erased fragment (its tombstone)", store.get(said))?;
    eq("an erased fragment says nothing", tomb.content.as_str(), "")?;
    eq("an erased fragment has no key", &tomb.key, &None)?;
    eq("an erased fragment has no keywords", tomb.keywords.len(), 0)?;
    eq(
        "an erased fragment keeps its provenance",
        &tomb.provenance,
        &before.provenance,
    )?;
    eq(
        "an erased fragment keeps its scope and times",
        (tomb.scope, tomb.validity, tomb.deleted_at),
        (before.scope, before.validity, Some(t(150))),
    )?;
    eq(
        "an erased fragment has no embedding",
        ok("read the embedding", store.embedding(said))?,
        None,
    )?;
    let err = refused("read an erased card", store.card(card))?;
    ensure(matches!(err, Error::NotFound { .. }), || {
        format!("an erased card is NotFound, got {err}")
    })?;
    let loaded = ok("load erased fragments", store.load(&[said]))?;
    ensure(
        loaded.len() == 1 && loaded[0].embedding.is_none() && loaded[0].fragment.content.is_empty(),
        || format!("the change feed loads the bare tombstone, got {loaded:?}"),
    )?;
    let changes = ok("read the change feed", store.changes_after(0, 100))?;
    eq(
        "each erasure ends the change feed with a Purge change",
        changes
            .iter()
            .rev()
            .take(2)
            .map(|c| (c.fragment, c.op))
            .collect::<Vec<_>>(),
        vec![(card, ChangeOp::Purge), (said, ChangeOp::Purge)],
    )?;
    let entries = ok("read the audit log", store.audit_entries(0, 100))?;
    eq(
        "an erasure is audited once, by id",
        entries
            .iter()
            .skip(audited)
            .map(|e| &e.event)
            .collect::<Vec<_>>(),
        vec![&AuditEvent::Erase {
            fragments: vec![said, card],
        }],
    )?;
    let record = ok(
        "who could see an erased fragment",
        store.visibility_at(said, t(120)),
    )?;
    eq(
        "an erased fragment's access metadata stays",
        record.meta,
        before.meta(),
    )?;
    let head_before = head(&*store)?;
    eq(
        "erasing again erases nothing",
        ok(
            "erase again",
            store.erase(&Erase {
                fragments: vec![said],
            }),
        )?,
        Vec::<FragmentId>::new(),
    )?;
    eq(
        "erasing again records no change",
        head(&*store)?,
        head_before,
    )?;

    let err = refused(
        "purge an existing fragment with one that does not exist",
        store.purge_many(&PurgeMany {
            admin: "root".into(),
            fragments: vec![live, gone],
        }),
    )?;
    ensure(matches!(err, Error::NotFound { id } if id == gone), || {
        format!("purging an unknown id is NotFound {{ id: {gone:?} }}, got {err}")
    })?;
    ok("a refused purge purged nothing", store.get(live))?;
    let audited = audit_len(&*store)?;
    ok(
        "purge a live fragment and a tombstone",
        store.purge_many(&PurgeMany {
            admin: "root".into(),
            fragments: vec![live, said],
        }),
    )?;
    for id in [live, said] {
        let err = refused("get a purged fragment", store.get(id))?;
        ensure(matches!(err, Error::NotFound { .. }), || {
            format!("a purged fragment is NotFound, got {err}")
        })?;
    }
    eq(
        "a purge of several is audited by id, one entry each",
        ok("read the audit log", store.audit_entries(0, 100))?
            .iter()
            .skip(audited)
            .map(|e| e.event.clone())
            .collect::<Vec<_>>(),
        [live, said]
            .map(|fragment| AuditEvent::Purge {
                admin: "root".into(),
                fragment,
            })
            .to_vec(),
    )?;
    let status = ok("verify the audit chain", store.verify_audit())?;
    ensure(matches!(status, AuditStatus::Intact { .. }), || {
        format!("the audit chain verifies after erasure and purge, got {status:?}")
    })
}

fn access_event_log(make: Factory<'_>) -> Result<(), Failure> {
    let (clock, store) = fresh(make, 0);
    let edge = Edge::Invoke {
        user: user(0)?,
        agent: agent(1)?,
    };
    let grant = |at| AccessEvent {
        at: t(at),
        change: AccessChange::Grant { edge, until: None },
    };
    let revoke = AccessEvent {
        at: t(20),
        change: AccessChange::Revoke { edge },
    };
    eq(
        "the first access event gets sequence number 1",
        ok("append a grant", store.append_access_event(&grant(10)))?,
        1,
    )?;
    ok(
        "append a second grant",
        store.append_access_event(&grant(20)),
    )?;
    ok(
        "append a revoke at the same time",
        store.append_access_event(&revoke),
    )?;
    // A grant scheduled for later, then a revocation recorded before it takes
    // effect: the log keeps the order of recording, not of dates.
    set_clock(&clock, 25)?;
    ok(
        "append a grant dated in the future",
        store.append_access_event(&grant(10_000)),
    )?;
    set_clock(&clock, 30)?;
    let cancel = AccessEvent {
        at: t(30),
        change: AccessChange::Revoke { edge },
    };
    ok(
        "append a revocation dated before the last event",
        store.append_access_event(&cancel),
    )?;
    // Nothing is dated before the last event was recorded, whatever the caller.
    let audited = audit_len(&*store)?;
    let err = refused(
        "append an event dated before the last one was recorded",
        store.append_access_event(&grant(28)),
    )?;
    ensure(matches!(err, Error::AccessEventBackdated { .. }), || {
        format!("a backdated event gives AccessEventBackdated, got {err}")
    })?;
    eq(
        "a backdated event is invalid input",
        err.kind(),
        colmem_core::ErrorKind::InvalidInput,
    )?;
    eq(
        "a refused event is not audited",
        audit_len(&*store)?,
        audited,
    )?;
    eq(
        "the event log returns every accepted event in the order it was recorded",
        ok("read the event log", store.access_events())?,
        [grant(10), grant(20), revoke, grant(10_000), cancel],
    )?;

    set_clock(&clock, 100)?;
    let id = write_one(&*store, "write a fragment", fact("seen by whom", 100)?)?;
    let record = ok("who could see it at 20", store.visibility_at(id, t(20)))?;
    eq(
        "visibility_at returns the events up to its moment",
        &record.events,
        &[grant(10), grant(20), revoke],
    )?;
    eq(
        "visibility_at returns the fragment's meta",
        record.meta,
        ok("get the fragment", store.get(id))?.meta(),
    )?;
    eq(
        "visibility_at before any event returns none",
        ok("who could see it at 5", store.visibility_at(id, t(5)))?.events,
        Vec::<AccessEvent>::new(),
    )
}

fn audit_chain(make: Factory<'_>) -> Result<(), Failure> {
    let (_, store) = fresh(make, 100);
    let status = ok("verify an empty audit log", store.verify_audit())?;
    ensure(
        matches!(status, AuditStatus::Intact { entries: 0, .. }),
        || format!("an empty audit log verifies with 0 entries, got {status:?}"),
    )?;
    let id = write_one(&*store, "write a fragment", fact("audited", 100)?)?;
    let reads = (0..5)
        .map(|i| {
            Ok(ReadRecord {
                user: user(0)?,
                agent: agent(i % 2)?,
                returned: vec![id],
            })
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    ok("record five reads", store.record_reads(&reads))?;
    ok("record no reads", store.record_reads(&[]))?;
    let entries = ok("read the audit log", store.audit_entries(0, 100))?;
    eq(
        "one entry per write and per read, none for an empty batch",
        entries.len(),
        6,
    )?;
    ensure(
        entries
            .windows(2)
            .all(|w| w[1].prev == w[0].hash && w[1].seq == w[0].seq + 1),
        || format!("each entry follows its predecessor's seq and hash: {entries:?}"),
    )?;
    ensure(entries.iter().all(|e| e.is_intact()), || {
        format!("every entry's hash matches its content: {entries:?}")
    })?;
    eq(
        "a read entry holds the reader and the returned ids",
        &entries[5].event,
        &AuditEvent::Read {
            user: user(0)?,
            agent: agent(0)?,
            returned: vec![id],
        },
    )?;
    eq(
        "audit_entries pages by seq",
        ok("read one entry after 4", store.audit_entries(4, 1))?,
        &entries[4..5],
    )?;
    let checked = StoreCheck {
        fragments: 1,
        provenance: 1,
        ..StoreCheck::default()
    };
    eq(
        "the whole chain verifies, and the fragment against its write entry",
        ok("verify the audit chain", store.verify_audit())?,
        AuditStatus::Intact {
            entries: 6,
            head: (6, entries[5].hash),
            store: checked,
        },
    )?;
    eq(
        "the head is the last entry's",
        ok("read the head", store.audit_head())?,
        (6, entries[5].hash),
    )?;
    eq(
        "a published head that is an entry of the chain is found",
        ok(
            "verify against a published head",
            store.verify_audit_against(Some(entries[2].hash)),
        )?,
        AuditStatus::Intact {
            entries: 6,
            head: (6, entries[5].hash),
            store: StoreCheck {
                published: Some(3),
                ..checked
            },
        },
    )?;
    let elsewhere = Digest::of(b"a head of another chain");
    eq(
        "a published head that is not in the chain is a disagreement",
        ok(
            "verify against a foreign head",
            store.verify_audit_against(Some(elsewhere)),
        )?,
        AuditStatus::Disagrees(Disagreement::PublishedHeadMissing { hash: elsewhere }),
    )?;
    for forged in [
        AuditEvent::Write {
            user: user(0)?,
            agent: agent(0)?,
            fragments: vec![(id, Digest::of_text("forged"))],
            provenance: Vec::new(),
        },
        AuditEvent::Access {
            event: AccessEvent {
                at: t(100),
                change: AccessChange::Register {
                    principal: colmem_core::Principal::User(user(0)?),
                },
            },
        },
    ] {
        let err = refused(
            "append a write or access entry with nothing recorded",
            store.append_audit(&forged),
        )?;
        ensure(matches!(err, Error::InvalidInput(_)), || {
            format!("a forged write or access entry is invalid input, got {err}")
        })?;
    }

    // Archiving a prefix hands it over and keeps the rest verifiable.
    eq(
        "archive_audit hands over the prefix",
        ok("archive up to 4", store.archive_audit(4))?,
        &entries[..4],
    )?;
    eq(
        "archived entries leave the log",
        ok("read the audit log", store.audit_entries(0, 100))?,
        &entries[4..],
    )?;
    eq(
        "the rest verifies from the anchor; the fragment's entry was archived",
        ok("verify after archiving", store.verify_audit())?,
        AuditStatus::Intact {
            entries: 2,
            head: (6, entries[5].hash),
            store: StoreCheck {
                archived: 1,
                ..StoreCheck::default()
            },
        },
    )?;
    let status = ok(
        "verify against a head at the anchor",
        store.verify_audit_against(Some(entries[3].hash)),
    )?;
    ensure(
        matches!(status, AuditStatus::Intact { store, .. } if store.published == Some(4)),
        || format!("the anchor is a published head's place, got {status:?}"),
    )?;
    let appended = ok(
        "append an entry after archiving",
        store.append_audit(&AuditEvent::Purge {
            admin: "a".into(),
            fragment: id,
        }),
    )?;
    eq(
        "a new entry chains to the head",
        appended.prev,
        entries[5].hash,
    )?;
    let status = ok("verify after appending", store.verify_audit())?;
    ensure(
        matches!(status, AuditStatus::Intact { entries: 3, .. }),
        || format!("the chain verifies with 3 entries after appending, got {status:?}"),
    )
}

fn unknown_ids_and_oversized_values(make: Factory<'_>) -> Result<(), Failure> {
    let (_, store) = fresh(make, 100);
    let kept = write_one(&*store, "write a fragment", fact("kept", 100)?)?;
    let ghost = FragmentId(kept.0 + 1000);
    let not_found = |what: &str, r: Result<(), Error>| -> Result<(), Failure> {
        let err = refused(what, r)?;
        ensure(matches!(err, Error::NotFound { id } if id == ghost), || {
            format!("{what}: want NotFound {{ id: {ghost:?} }}, got {err}")
        })?;
        eq(
            &format!("{what}: the error kind"),
            err.kind(),
            colmem_core::ErrorKind::NotFound,
        )
    };
    not_found("get an unknown id", store.get(ghost).map(drop))?;
    not_found(
        "read an unknown id's embedding",
        store.embedding(ghost).map(drop),
    )?;
    not_found("read an unknown card", store.card(ghost).map(drop))?;
    not_found(
        "ask who could see an unknown id",
        store.visibility_at(ghost, t(1)).map(drop),
    )?;
    not_found(
        "delete an unknown id",
        store.delete(&Delete {
            user: user(0)?,
            agent: agent(0)?,
            fragment: ghost,
        }),
    )?;
    not_found(
        "purge an unknown id",
        store.purge(&Purge {
            admin: "root".into(),
            fragment: ghost,
        }),
    )?;
    not_found(
        "supersede an unknown id",
        store
            .supersede(&Supersede {
                user: user(0)?,
                agent: agent(0)?,
                old: ghost,
                new: fact("n", 1)?,
            })
            .map(drop),
    )?;
    let err = refused("read a plain fragment as a card", store.card(kept))?;
    ensure(matches!(err, Error::NotFound { id } if id == kept), || {
        format!("a fragment that is not a card is NotFound as a card, got {err}")
    })?;
    let err = refused("get the largest id", store.get(FragmentId(u64::MAX)))?;
    ensure(matches!(err, Error::NotFound { .. }), || {
        format!("an id beyond the backend's range is NotFound, got {err}")
    })?;

    let head_before = head(&*store)?;
    let audited = audit_len(&*store)?;
    let big = "x".repeat(64 * 1024 + 1);
    let mut batch = one(fact("small", 100)?)?;
    batch.fragments.push(fact(&big, 100)?);
    let err = refused(
        "write a batch holding a content over 64 KiB",
        store.write(&batch),
    )?;
    ensure(
        matches!(
            err,
            Error::TooLarge {
                what: "content",
                ..
            }
        ),
        || format!("oversized content gives TooLarge {{ what: \"content\" }}, got {err}"),
    )?;
    eq(
        "an oversized value is invalid input",
        err.kind(),
        colmem_core::ErrorKind::InvalidInput,
    )?;
    let mut wide = fact("ok", 100)?;
    wide.keywords = vec![big.clone()];
    let err = refused("write keywords over 64 KiB", store.write(&one(wide)?))?;
    ensure(matches!(err, Error::TooLarge { .. }), || {
        format!("oversized keywords give TooLarge, got {err}")
    })?;
    write_one(
        &*store,
        "write a content of exactly 64 KiB",
        fact(&"y".repeat(64 * 1024), 100)?,
    )?;
    eq(
        "nothing of the refused writes was stored (one change for the accepted write)",
        head(&*store)?,
        head_before + 1,
    )?;
    eq(
        "refused writes are not audited",
        audit_len(&*store)?,
        audited + 1,
    )?;
    eq(
        "refused writes leave existing data untouched",
        ok("get the earlier fragment", store.get(kept))?.content,
        "kept",
    )
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

fn cards_and_edges(make: Factory<'_>) -> Result<(), Failure> {
    let (_, store) = fresh(make, 100);
    let card = |task: &str, sign| -> Result<CardWrite, Failure> {
        Ok(CardWrite {
            user: user(0)?,
            agent: agent(0)?,
            fragment: NewFragment {
                granularity: Granularity::Card,
                ..fact(task, 100)?
            },
            fields: card_fields(task, sign),
            replaces: None,
            idempotency_key: None,
        })
    };
    let write_card = |task: &str, sign| -> Result<FragmentId, Failure> {
        let receipt = ok(
            &format!("write card {task:?}"),
            store.write_card(&card(task, sign)?),
        )?;
        receipt
            .ids
            .first()
            .copied()
            .ok_or_else(|| format!("writing card {task:?} returned no id"))
    };
    let a = write_card("dates", CardSign::Positive)?;
    let b = write_card("dates-fail", CardSign::Negative)?;
    let c = write_card("units", CardSign::Positive)?;
    let plain = write_one(&*store, "write a plain fact", fact("not a card", 100)?)?;
    let bare = NewFragment {
        granularity: Granularity::Card,
        ..fact("bare", 100)?
    };
    let err = refused("write a card without fields", store.write(&one(bare)?))?;
    ensure(matches!(err, Error::InvalidInput(_)), || {
        format!("a card written without fields is InvalidInput, got {err}")
    })?;
    let err = refused(
        "write card fields on a fact",
        store.write_card(&CardWrite {
            fragment: fact("fact", 100)?,
            ..card("x", CardSign::Positive)?
        }),
    )?;
    ensure(matches!(err, Error::InvalidInput(_)), || {
        format!("card fields on a non-card fragment are InvalidInput, got {err}")
    })?;

    let got = ok("read a card", store.card(b))?;
    eq(
        "card fields round-trip",
        &got.fields,
        &card_fields("dates-fail", CardSign::Negative),
    )?;
    eq(
        "a card's fragment has granularity card",
        got.fragment.granularity,
        Granularity::Card,
    )?;
    let listed: Vec<_> = ok(
        "list cards",
        store.list_cards(&reader(100)?, &ListQuery::default()),
    )?
    .into_iter()
    .map(|c| c.fragment.id)
    .collect();
    eq(
        "list_cards returns the cards only, in order",
        listed,
        [a, b, c],
    )?;
    let stranger = ReadFilter::from_parts(FilterParts {
        user: user(2)?,
        agent: agent(0)?,
        now: t(100),
        agents: (0..4).map(agent).collect::<Result<IdSet<_>, _>>()?,
        resources: IdSet::new(),
        groups: IdSet::new(),
    });
    let seen = ok(
        "list cards as another user",
        store.list_cards(&stranger, &ListQuery::default()),
    )?;
    ensure(seen.is_empty(), || {
        format!("list_cards applies the read filter: another user saw {seen:?}")
    })?;

    let edge = |from, to, relation, weight| CardEdge {
        from,
        to,
        relation,
        weight,
    };
    let constrains = CardRelation::Constrains {
        precondition: "the session has a date".into(),
    };
    for e in [
        edge(a, b, CardRelation::Conflicts, 1.0),
        edge(a, c, CardRelation::Supports, 0.5),
        edge(c, b, constrains.clone(), 0.25),
        edge(a, c, CardRelation::Supports, 0.75),
    ] {
        ok(&format!("put card edge {e:?}"), store.put_card_edge(&e))?;
    }
    let err = refused(
        "put an edge to a fragment that is not a card",
        store.put_card_edge(&edge(a, plain, CardRelation::Supports, 0.5)),
    )?;
    ensure(matches!(err, Error::NotFound { id } if id == plain), || {
        format!("an edge to a non-card gives NotFound {{ id: {plain:?} }}, got {err}")
    })?;
    let err = refused(
        "put an edge of weight 1.5",
        store.put_card_edge(&edge(a, c, CardRelation::Satisfies, 1.5)),
    )?;
    ensure(matches!(err, Error::InvalidInput(_)), || {
        format!("a weight outside [0, 1] is InvalidInput, got {err}")
    })?;
    eq(
        "the edges from a card (a second put of the same edge replaces its weight)",
        ok("read a's edges", store.card_edges(&[a]))?,
        [
            edge(a, b, CardRelation::Conflicts, 1.0),
            edge(a, c, CardRelation::Supports, 0.75),
        ],
    )?;
    eq(
        "the edges to a card",
        ok("read b's edges", store.card_edges(&[b]))?,
        [
            edge(a, b, CardRelation::Conflicts, 1.0),
            edge(c, b, constrains, 0.25),
        ],
    )?;
    ok(
        "purge a card",
        store.purge(&Purge {
            admin: "root".into(),
            fragment: b,
        }),
    )?;
    eq(
        "purging a card removes its edges",
        ok("read the edges", store.card_edges(&[a, b, c]))?,
        [edge(a, c, CardRelation::Supports, 0.75)],
    )?;
    let err = refused("read a purged card", store.card(b))?;
    ensure(matches!(err, Error::NotFound { .. }), || {
        format!("a purged card is NotFound, got {err}")
    })?;

    // A merge writes the merged card and closes the one it replaces in one go.
    let merged = ok(
        "write a card replacing another",
        store.write_card(&CardWrite {
            replaces: Some(c),
            ..card("units, merged", CardSign::Positive)?
        }),
    )?
    .ids[0];
    let closed = ok("read the replaced card", store.get(c))?;
    eq(
        "the replaced card is closed and linked to the merged one",
        (closed.superseded_at.is_some(), closed.superseded_by),
        (true, Some(merged)),
    )?;
    let before = ok(
        "count the cards",
        store.count(
            &reader(100)?.with_view(View::AllVersions),
            &ListQuery::default(),
        ),
    )?;
    let err = refused(
        "write a card replacing one already replaced",
        store.write_card(&CardWrite {
            replaces: Some(c),
            ..card("units, merged again", CardSign::Positive)?
        }),
    )?;
    ensure(
        matches!(err, Error::NotCurrent { id, .. } if id == c),
        || format!("replacing a closed card is NotCurrent {{ id: {c:?} }}, got {err}"),
    )?;
    eq(
        "a refused merge writes no card",
        ok(
            "count the cards again",
            store.count(
                &reader(100)?.with_view(View::AllVersions),
                &ListQuery::default(),
            ),
        )?,
        before,
    )
}

fn change_feed(make: Factory<'_>) -> Result<(), Failure> {
    let (clock, store) = fresh(make, 100);
    eq("an empty store's feed head", head(&*store)?, 0)?;
    let none = ok("read an empty feed", store.changes_after(0, 10))?;
    ensure(none.is_empty(), || {
        format!("an empty store has no changes, got {none:?}")
    })?;
    let mut f = fact("indexed", 100)?;
    f.embedding = Some(Embedding {
        embedder: "e".into(),
        vector: vec![1.0, 2.0],
    });
    let a = write_one(&*store, "write a", f.clone())?;
    let b = write_one(&*store, "write b", fact("other", 100)?)?;
    set_clock(&clock, 110)?;
    let c = ok(
        "supersede b with c",
        store.supersede(&Supersede {
            user: user(0)?,
            agent: agent(0)?,
            old: b,
            new: fact("newer", 110)?,
        }),
    )?;
    ok(
        "delete c",
        store.delete(&Delete {
            user: user(0)?,
            agent: agent(0)?,
            fragment: c,
        }),
    )?;
    ok(
        "purge a",
        store.purge(&Purge {
            admin: "root".into(),
            fragment: a,
        }),
    )?;

    let changes = ok("read the feed", store.changes_after(0, 100))?;
    let ops: Vec<_> = changes.iter().map(|ch| (ch.fragment, ch.op)).collect();
    eq(
        "one change per put, supersede (meta of the old), delete and purge, in order",
        ops,
        [
            (a, ChangeOp::Put),
            (b, ChangeOp::Put),
            (c, ChangeOp::Put),
            (b, ChangeOp::Meta),
            (c, ChangeOp::Delete),
            (a, ChangeOp::Purge),
        ],
    )?;
    ensure(changes.windows(2).all(|w| w[0].seq < w[1].seq), || {
        format!("change sequence numbers rise: {changes:?}")
    })?;
    let mut stamps: Vec<u64> = changes.iter().map(|c| c.stamp).collect();
    stamps.sort_unstable();
    stamps.dedup();
    ensure(stamps.len() == changes.len() && stamps[0] != 0, || {
        format!("each change has a random stamp of its own: {changes:?}")
    })?;
    let (_, other) = fresh(make, 100);
    write_one(&*other, "write a in another store", fact("indexed", 100)?)?;
    let theirs = ok("read the other store's feed", other.changes_after(0, 1))?;
    ensure(
        theirs.first().is_some_and(|c| c.stamp != changes[0].stamp),
        || format!("another store's first change has another stamp: {theirs:?}"),
    )?;
    eq(
        "the head is the last change's seq",
        Some(head(&*store)?),
        changes.last().map(|c| c.seq),
    )?;
    eq(
        "changes_after pages by seq",
        ok(
            "read two changes after the second",
            store.changes_after(changes[1].seq, 2),
        )?,
        &changes[2..4],
    )?;

    let loaded = ok("load a, b and c", store.load(&[a, b, c]))?;
    let mut loaded_ids: Vec<_> = loaded.iter().map(|s| s.fragment.id).collect();
    loaded_ids.sort();
    eq(
        "load skips purged fragments and returns tombstones",
        loaded_ids,
        [b, c],
    )?;
    let tomb = loaded
        .iter()
        .find(|s| s.fragment.id == c)
        .ok_or_else(|| format!("load returned no tombstone for {c:?}"))?;
    eq(
        "a loaded tombstone carries deleted_at",
        tomb.fragment.deleted_at,
        Some(t(110)),
    )?;

    let d = write_one(&*store, "write d with an embedding", f)?;
    let stored = ok("load d", store.load(&[d]))?;
    eq(
        "load returns the embedding",
        stored
            .first()
            .and_then(|s| s.embedding.as_ref())
            .map(|e| e.vector.clone()),
        Some(vec![1.0, 2.0]),
    )
}
