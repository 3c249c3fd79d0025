//! The facade end to end on a logical clock: opening and reopening a directory,
//! the writer lock, sessions and the read rule at each call's moment, atomic
//! grants, audits, history reads, re-indexing and strategy cards.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod write_path;

use std::collections::BTreeSet;

use colmem::{
    AgentId, AuditStatus, ClockConfig, Config, Draft, Edge, EmbedderConfig, Error, ErrorKind,
    Granted, Granularity, Memory, Origin, Principal, RecallOptions, TaskContext, Timestamp,
    Trajectory, TurnInput, UserId, Validity, View, parts,
};

mod bounded_input;
mod config_ranges;
mod erasure;
mod explain;
#[cfg(unix)]
mod private;

const START: &str = "2026-01-01T00:00:00Z";
const MINUTE: i64 = 60_000;

fn logical() -> Config {
    Config {
        clock: ClockConfig::Logical {
            start: Timestamp::parse(START).unwrap(),
        },
        ..Config::default()
    }
}

fn user(name: &str) -> UserId {
    UserId::new(name).unwrap()
}

fn agent(name: &str) -> AgentId {
    AgentId::new(name).unwrap()
}

fn tick(memory: &Memory) {
    memory.logical_clock().unwrap().advance(MINUTE);
}

/// alice and bob; alice may invoke `planner` and `scribe`, bob only `planner`.
fn setup(memory: &Memory) {
    let admin = memory.admin();
    for u in ["alice", "bob"] {
        admin.register(Principal::User(user(u))).unwrap();
    }
    for a in ["planner", "scribe"] {
        admin.register(Principal::Agent(agent(a))).unwrap();
    }
    for (u, a) in [
        ("alice", "planner"),
        ("alice", "scribe"),
        ("bob", "planner"),
    ] {
        admin
            .grant(
                Edge::Invoke {
                    user: user(u),
                    agent: agent(a),
                },
                None,
                None,
            )
            .unwrap();
    }
    tick(memory);
}

fn turn(id: &str, speaker: &str, text: &str) -> TurnInput {
    TurnInput {
        dialogue_id: id.to_owned(),
        session: "s1".to_owned(),
        speaker: speaker.to_owned(),
        listener: "assistant".to_owned(),
        text: text.to_owned(),
        time: None,
        origin: Origin::User,
    }
}

fn contents(memory: &Memory, u: &str, a: &str, query: &str, view: View) -> Vec<String> {
    hits(memory, u, a, query, view)
        .into_iter()
        .map(|(_, content)| content)
        .collect()
}

fn hits(memory: &Memory, u: &str, a: &str, query: &str, view: View) -> Vec<(Granularity, String)> {
    let options = RecallOptions {
        view,
        ..RecallOptions::default()
    };
    memory
        .session(user(u), agent(a))
        .unwrap()
        .recall(query, &options)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| (h.fragment.granularity, h.fragment.content))
        .collect()
}

/// The audit chain holds and the store agrees with it: every live fragment's text
/// and provenance with its write entry, the access log with its entries.
fn assert_store_agrees_with_its_audit(memory: &Memory) {
    let status = memory.admin().audit_verify().unwrap();
    let AuditStatus::Intact { store, .. } = status else {
        panic!("{status:?}")
    };
    assert!(store.events > 0, "{store:?}");
    assert_eq!(store.provenance, store.fragments, "{store:?}");
}

#[test]
fn sessions_are_checked_at_each_call_and_revocation_hides_knowledge() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    assert_eq!(memory.now(), Timestamp::parse(START).unwrap());
    setup(&memory);

    let err = memory.session(user("bob"), agent("scribe")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
    let err = memory.session(user("carol"), agent("scribe")).unwrap_err();
    assert!(
        matches!(err, Error::UnknownPrincipal { kind: "user", .. }),
        "{err}"
    );

    let scribe = memory.session(user("alice"), agent("scribe")).unwrap();
    let written = scribe
        .remember(&turn(
            "D1:1",
            "alice",
            "I am allergic to peanuts and I live in Oslo.",
        ))
        .unwrap();
    assert!(!written.written.is_empty());
    tick(&memory);
    let seen = contents(
        &memory,
        "alice",
        "planner",
        "peanuts allergy",
        View::Current,
    );
    assert!(seen.iter().any(|c| c.contains("peanuts")), "{seen:?}");
    let bobs = contents(&memory, "bob", "planner", "peanuts allergy", View::Current);
    assert!(
        bobs.is_empty(),
        "user scope keeps alice's memories from bob: {bobs:?}"
    );

    // The open session fails on its next call once the grant is gone.
    memory
        .admin()
        .revoke(
            Edge::Invoke {
                user: user("alice"),
                agent: agent("scribe"),
            },
            None,
        )
        .unwrap();
    tick(&memory);
    let err = scribe
        .recall("peanuts", &RecallOptions::default())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    // What scribe made is no longer visible through planner either (condition 3).
    let seen = contents(
        &memory,
        "alice",
        "planner",
        "peanuts allergy",
        View::Current,
    );
    assert!(seen.iter().all(|c| !c.contains("peanuts")), "{seen:?}");
}

#[test]
fn a_refused_event_changes_neither_the_store_nor_the_graph() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    let before = memory.access_graph().log().len();
    let past = Timestamp::parse("2025-01-01").unwrap();
    let err = memory
        .admin()
        .grant(
            Edge::Invoke {
                user: user("bob"),
                agent: agent("scribe"),
            },
            Some(past),
            None,
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "backdated: {err}");
    let err = memory
        .admin()
        .revoke(
            Edge::Invoke {
                user: user("bob"),
                agent: agent("scribe"),
            },
            None,
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "nothing to revoke: {err}");
    assert_eq!(memory.access_graph().log().len(), before);
    drop(memory);
    let reopened = Memory::open(dir.path(), logical()).unwrap();
    assert_eq!(
        reopened.access_graph().log().len(),
        before,
        "the store refused them too"
    );
    assert!(reopened.session(user("bob"), agent("scribe")).is_err());
}

#[test]
fn a_scheduled_grant_holds_up_no_revocation_and_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    let bob_scribe = Edge::Invoke {
        user: user("bob"),
        agent: agent("scribe"),
    };
    let tomorrow = Timestamp::from_millis(memory.now().as_millis() + 24 * 60 * MINUTE);
    memory
        .admin()
        .grant(bob_scribe, Some(tomorrow), None)
        .unwrap();
    tick(&memory);
    // A compromised agent can be cut off at once, whatever is scheduled.
    let alice_scribe = Edge::Invoke {
        user: user("alice"),
        agent: agent("scribe"),
    };
    memory.admin().revoke(alice_scribe, None).unwrap();
    assert!(memory.session(user("alice"), agent("scribe")).is_err());
    // Given back the day after, recorded last.
    let day_after = Timestamp::from_millis(tomorrow.as_millis() + 24 * 60 * MINUTE);
    memory
        .admin()
        .grant(alice_scribe, Some(day_after), None)
        .unwrap();
    let recorded = memory.now();
    let graph = memory.access_graph();
    drop(memory);
    // Reopened, the clock resumes from the last record, not from the date of the
    // scheduled grant, and the log replays alike.
    let memory = Memory::open(dir.path(), logical()).unwrap();
    assert_eq!(memory.now(), recorded);
    assert_eq!(memory.access_graph().log(), graph.log());
    assert!(
        memory.session(user("bob"), agent("scribe")).is_err(),
        "not yet"
    );
    memory.logical_clock().unwrap().advance(24 * 60 * MINUTE);
    memory.session(user("bob"), agent("scribe")).unwrap();
    assert!(memory.session(user("alice"), agent("scribe")).is_err());
    memory.logical_clock().unwrap().advance(24 * 60 * MINUTE);
    memory.session(user("alice"), agent("scribe")).unwrap();
}

/// A clock that once ran ahead blocks no revocation: the store's now is held at
/// the last recorded event, the revocation is dated there and takes effect at once.
#[test]
fn a_revocation_after_the_clock_stepped_back_takes_effect_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    memory
        .session(user("alice"), agent("planner"))
        .unwrap()
        .remember(&turn("D1:1", "alice", "My passport is in the blue drawer."))
        .unwrap();
    drop(memory);
    // The clock jumps to 2099 and an access change is recorded there.
    let ahead = Timestamp::parse("2099-06-01").unwrap();
    let jumped = Config {
        clock: ClockConfig::Logical { start: ahead },
        ..Config::default()
    };
    let memory = Memory::open(dir.path(), jumped).unwrap();
    memory
        .admin()
        .register(Principal::Agent(agent("auditor")))
        .unwrap();
    drop(memory);
    // Back on the system clock, years earlier: now is held at the last record.
    let system = Config {
        clock: ClockConfig::System,
        ..Config::default()
    };
    let memory = Memory::open(dir.path(), system.clone()).unwrap();
    assert!(memory.now() >= ahead, "{}", memory.now());
    let alice = memory.session(user("alice"), agent("planner")).unwrap();
    let alice_planner = Edge::Invoke {
        user: user("alice"),
        agent: agent("planner"),
    };
    let event = memory.admin().revoke(alice_planner, None).unwrap();
    assert!(event.at >= ahead, "dated at the held now: {}", event.at);
    // The very next read is refused, and so is every read after it.
    let err = alice
        .recall("passport", &RecallOptions::default())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
    let graph = memory.access_graph();
    for later in ["2099-06-01", "2099-06-02", "2100-01-01", "3000-01-01"] {
        let t = Timestamp::parse(later).unwrap().max(event.at);
        assert!(
            !graph
                .invocable(user("alice"), t)
                .unwrap()
                .contains(&agent("planner")),
            "{later}"
        );
    }
    drop(memory);
    let memory = Memory::open(dir.path(), system).unwrap();
    assert!(memory.session(user("alice"), agent("planner")).is_err());
    let later = Config {
        clock: ClockConfig::Logical {
            start: Timestamp::parse("2100-01-01").unwrap(),
        },
        ..Config::default()
    };
    drop(memory);
    let memory = Memory::open(dir.path(), later).unwrap();
    assert!(memory.session(user("alice"), agent("planner")).is_err());
    memory.session(user("alice"), agent("scribe")).unwrap();
}

/// A grant scheduled for later and revoked before its date never takes effect.
#[test]
fn a_scheduled_grant_revoked_now_never_takes_effect() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    let bob_scribe = Edge::Invoke {
        user: user("bob"),
        agent: agent("scribe"),
    };
    let tomorrow = Timestamp::from_millis(memory.now().as_millis() + 24 * 60 * MINUTE);
    memory
        .admin()
        .grant(bob_scribe, Some(tomorrow), None)
        .unwrap();
    tick(&memory);
    let event = memory.admin().revoke(bob_scribe, None).unwrap();
    assert_eq!(event.at, memory.now());
    let check = |memory: &Memory| {
        let graph = memory.access_graph();
        for days in [1, 2, 365] {
            let t = Timestamp::from_millis(tomorrow.as_millis() + (days - 1) * 24 * 60 * MINUTE);
            assert!(
                !graph
                    .invocable(user("bob"), t)
                    .unwrap()
                    .contains(&agent("scribe")),
                "day {days}"
            );
        }
    };
    check(&memory);
    memory
        .logical_clock()
        .unwrap()
        .advance(2 * 24 * 60 * MINUTE);
    assert!(memory.session(user("bob"), agent("scribe")).is_err());
    drop(memory);
    let memory = Memory::open(dir.path(), logical()).unwrap();
    check(&memory);
    assert!(memory.session(user("bob"), agent("scribe")).is_err());
}

/// A grant the graph already holds throughout its time records nothing; one that
/// reaches past what is held, or comes after a revocation, is recorded.
#[test]
fn a_grant_already_held_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    let admin = memory.admin();
    let bob_scribe = Edge::Invoke {
        user: user("bob"),
        agent: agent("scribe"),
    };
    let at = |minutes: i64| Timestamp::from_millis(memory.now().as_millis() + minutes * MINUTE);
    let log_len = || memory.access_graph().log().len();

    let first = admin.grant(bob_scribe, None, Some(at(60))).unwrap();
    let Granted::Recorded(event) = first else {
        panic!("{first:?}")
    };
    let before = log_len();
    let held = admin.grant(bob_scribe, Some(at(10)), Some(at(30))).unwrap();
    assert_eq!(
        held,
        Granted::AlreadyHeld(Validity::new(event.at, Some(at(60))).unwrap())
    );
    assert_eq!(log_len(), before, "nothing recorded");
    // Open-ended reaches past the hour held.
    assert!(matches!(
        admin.grant(bob_scribe, None, None).unwrap(),
        Granted::Recorded(_)
    ));
    tick(&memory);
    assert!(matches!(
        admin.grant(bob_scribe, None, None).unwrap(),
        Granted::AlreadyHeld(_)
    ));
    tick(&memory);
    admin.revoke(bob_scribe, None).unwrap();
    assert!(memory.session(user("bob"), agent("scribe")).is_err());
    tick(&memory);
    assert!(matches!(
        admin.grant(bob_scribe, None, None).unwrap(),
        Granted::Recorded(_)
    ));
    memory.session(user("bob"), agent("scribe")).unwrap();
    let entries = admin.audit_tail(100).unwrap();
    let grants = entries
        .iter()
        .filter(|e| matches!(&e.event, colmem::AuditEvent::Access { event } if matches!(event.change, colmem::AccessChange::Grant { edge, .. } if edge == bob_scribe)))
        .count();
    assert_eq!(grants, 3, "one audit entry per recorded grant");
}

#[test]
fn the_directory_has_one_writer_and_reopening_restores_everything() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    memory
        .session(user("alice"), agent("planner"))
        .unwrap()
        .remember(&turn(
            "D1:1",
            "alice",
            "My daughter Ingrid plays the violin.",
        ))
        .unwrap();
    let err = Memory::open(dir.path(), logical()).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::Busy);
    assert!(err.to_string().contains(&dir.path().display().to_string()));
    // A reader opens beside the writer, and cannot start sessions.
    let reader = Memory::open_read_only(dir.path(), logical()).unwrap();
    assert!(matches!(
        reader.admin().audit_verify().unwrap(),
        AuditStatus::Intact { .. }
    ));
    assert!(matches!(
        reader.session(user("alice"), agent("planner")),
        Err(Error::ReadOnly)
    ));
    assert!(reader.embedder().is_none() && reader.index().is_none());
    drop(reader);
    // A reader builds no model: an audit needs neither the API key nor the model
    // files that writing does.
    let models = Config::from_toml(
        &format!(
            "[clock]\nkind = \"logical\"\nstart = \"{START}\"\n\
             [chat]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n\
             api_key_env = \"COLMEM_TEST_SURELY_UNSET_KEY\"\n\
             [embedder]\nkind = \"local\"\ndir = \"no/such/model\"\n"
        ),
        "test",
    )
    .unwrap();
    let reader = Memory::open_read_only(dir.path(), models).unwrap();
    assert!(matches!(
        reader.admin().audit_verify().unwrap(),
        AuditStatus::Intact { .. }
    ));
    drop(reader);
    memory.flush().unwrap();
    drop(memory);

    let memory = Memory::open(dir.path(), logical()).unwrap();
    assert!(memory.open_report().restored, "{:?}", memory.open_report());
    assert!(
        memory.now() > Timestamp::parse(START).unwrap(),
        "the clock resumes after the log"
    );
    let seen = contents(&memory, "alice", "planner", "violin", View::Current);
    assert!(seen.iter().any(|c| c.contains("violin")), "{seen:?}");
}

#[test]
fn shared_openers_recall_together_and_leave_the_index_snapshot_to_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let missing = Memory::open_shared(dir.path(), logical()).unwrap_err();
    assert!(matches!(missing, Error::NotInitialised { .. }), "{missing}");
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    let alice = |m: &Memory, id: &str, text: &str| {
        m.session(user("alice"), agent("planner"))
            .unwrap()
            .remember(&turn(id, "alice", text))
            .unwrap();
    };
    alice(&memory, "D1:1", "My daughter Ingrid plays the violin.");
    // Not beside a writer, in either order.
    let err = Memory::open_shared(dir.path(), logical()).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    memory.flush().unwrap();
    drop(memory);
    let snapshot = |dir: &std::path::Path| {
        let mut files: Vec<_> = std::fs::read_dir(dir.join("index"))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name(), e.metadata().unwrap().modified().unwrap())
            })
            .collect();
        files.sort();
        files
    };
    let before = snapshot(dir.path());

    let one = Memory::open_shared(dir.path(), logical()).unwrap();
    let two = Memory::open_shared(dir.path(), logical()).unwrap();
    assert!(one.open_report().restored, "{:?}", one.open_report());
    let err = Memory::open(dir.path(), logical()).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    // No access change: the other's graph, read at open, would miss it (and a second
    // registration of one name would leave a log that no open could replay).
    for shared in [&one, &two] {
        let err = shared
            .admin()
            .revoke(
                Edge::Invoke {
                    user: user("alice"),
                    agent: agent("planner"),
                },
                None,
            )
            .unwrap_err();
        assert!(matches!(err, Error::Shared), "{err}");
        let err = shared
            .admin()
            .register(Principal::User(user("carol")))
            .unwrap_err();
        assert!(matches!(err, Error::Shared), "{err}");
    }
    // What one writes, the other recalls: both catch up from the store.
    alice(&one, "D1:2", "Ingrid joined the youth orchestra in Bergen.");
    let seen = contents(&two, "alice", "planner", "orchestra Bergen", View::Current);
    assert!(seen.iter().any(|c| c.contains("Bergen")), "{seen:?}");
    one.flush().unwrap();
    drop((one, two));
    assert_eq!(
        snapshot(dir.path()),
        before,
        "a shared opener wrote the index"
    );

    // The next writer catches up on what they wrote.
    let memory = Memory::open(dir.path(), logical()).unwrap();
    assert!(
        memory.open_report().catch_up.changes > 0,
        "{:?}",
        memory.open_report()
    );
    let seen = contents(
        &memory,
        "alice",
        "planner",
        "orchestra Bergen",
        View::Current,
    );
    assert!(seen.iter().any(|c| c.contains("Bergen")), "{seen:?}");
}

#[test]
fn an_index_left_beside_another_store_is_rebuilt_from_it() {
    let remembered = |dir: &std::path::Path, u: &str, texts: &[&str]| {
        let memory = Memory::open(dir, logical()).unwrap();
        setup(&memory);
        let session = memory.session(user(u), agent("planner")).unwrap();
        for (i, text) in texts.iter().enumerate() {
            session
                .remember(&turn(&format!("D1:{}", i + 1), u, text))
                .unwrap();
        }
        memory.flush().unwrap();
        memory
    };
    let ours = tempfile::tempdir().unwrap();
    drop(remembered(
        ours.path(),
        "alice",
        &["My daughter Ingrid plays the violin."],
    ));
    let theirs = tempfile::tempdir().unwrap();
    let other = remembered(
        theirs.path(),
        "bob",
        &[
            "I keep bees on the roof of my flat.",
            "My brother Tomasz repairs clocks in Gdansk.",
            "I swim in the lake every morning before work.",
        ],
    );
    // The other store's file takes the place of ours; our index directory stays.
    for file in std::fs::read_dir(ours.path()).unwrap() {
        let path = file.unwrap().path();
        if path.is_file() {
            std::fs::remove_file(path).unwrap();
        }
    }
    other.backup(&ours.path().join(colmem::STORE_FILE)).unwrap();
    drop(other);

    let memory = Memory::open(ours.path(), logical()).unwrap();
    // Our snapshot, trusted, would hold our fragments' text and access under ids the
    // other store gives to its own.
    let seen = contents(&memory, "bob", "planner", "bees on the roof", View::Current);
    assert!(seen.iter().any(|c| c.contains("bees")), "{seen:?}");
    assert!(contents(&memory, "alice", "planner", "violin", View::Current).is_empty());
    let report = memory.open_report();
    assert!(!report.restored, "{report:?}");
    let reason = report.rebuild_reason.as_deref().unwrap_or_default();
    assert!(reason.contains("another store"), "{reason}");
}

#[test]
fn history_reads_see_superseded_facts_with_the_permissions_of_now() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    let session = memory.session(user("alice"), agent("planner")).unwrap();
    session
        .remember(&turn("D1:1", "alice", "I live in Oslo with my two cats."))
        .unwrap();
    tick(&memory);
    let before_move = memory.now();
    tick(&memory);
    let moved = session
        .remember(&turn(
            "D1:2",
            "alice",
            "I moved to Bergen last month, so now I live in Bergen with my two cats.",
        ))
        .unwrap();
    assert!(
        !moved.superseded.is_empty(),
        "the move supersedes the Oslo fact"
    );
    tick(&memory);
    let facts = |view| -> Vec<String> {
        hits(&memory, "alice", "planner", "where does alice live", view)
            .into_iter()
            .filter(|(g, _)| *g == Granularity::Fact)
            .map(|(_, c)| c)
            .collect()
    };
    let now = facts(View::Current);
    assert!(now.iter().any(|c| c.contains("Bergen")), "{now:?}");
    assert!(
        now.iter().all(|c| !c.contains("Oslo")),
        "superseded: {now:?}"
    );
    let then = facts(View::RecordAsOf(before_move));
    assert!(then.iter().any(|c| c.contains("Oslo")), "{then:?}");
    assert!(then.iter().all(|c| !c.contains("Bergen")), "{then:?}");
    let all = facts(View::AllVersions);
    assert!(all.iter().any(|c| c.contains("Oslo")) && all.iter().any(|c| c.contains("Bergen")));
    // Permissions are still those of now: bob sees no version at all.
    let bobs = hits(
        &memory,
        "bob",
        "planner",
        "where does alice live",
        View::AllVersions,
    );
    assert!(bobs.is_empty(), "{bobs:?}");
    assert_store_agrees_with_its_audit(&memory);
}

#[test]
fn audits_matrix_and_who_could_see() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    let written = memory
        .session(user("alice"), agent("planner"))
        .unwrap()
        .remember(&turn("D1:1", "alice", "I keep bees on my roof."))
        .unwrap();
    let id = written.written[0];
    tick(&memory);
    let seen_at = memory.now();
    contents(&memory, "alice", "planner", "bees", View::Current);
    contents(&memory, "alice", "planner", "roof", View::Current);

    let admin = memory.admin();
    let matrix = admin.access_matrix().unwrap();
    let cell = matrix
        .cells
        .iter()
        .find(|c| c.user == user("alice") && c.agent == agent("planner") && c.resource.is_none())
        .unwrap();
    assert_eq!(cell.reads, 2);
    assert!(cell.fragments_read >= 1);
    assert_eq!(cell.fragments_written as usize, written.written.len());

    let who: BTreeSet<_> = admin
        .who_could_see(id, seen_at)
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(
        who,
        BTreeSet::from([
            (user("alice"), agent("planner")),
            (user("alice"), agent("scribe"))
        ])
    );
    tick(&memory);
    admin
        .revoke(
            Edge::Invoke {
                user: user("alice"),
                agent: agent("scribe"),
            },
            None,
        )
        .unwrap();
    tick(&memory);
    let later = admin.who_could_see(id, memory.now()).unwrap();
    assert_eq!(later, vec![(user("alice"), agent("planner"))]);
    assert_eq!(
        admin.who_could_see(id, seen_at).unwrap().len(),
        2,
        "the past is replayed as it was"
    );
    // Given back from tomorrow, then cancelled before its time: between the
    // cancellation and tomorrow the replay meets a revocation with nothing left to
    // revoke; after tomorrow, the cancelled grant.
    let scribe = Edge::Invoke {
        user: user("alice"),
        agent: agent("scribe"),
    };
    let now = memory.now().as_millis();
    let tomorrow = Timestamp::from_millis(now + 24 * 60 * MINUTE);
    admin.grant(scribe, Some(tomorrow), None).unwrap();
    tick(&memory);
    admin.revoke(scribe, None).unwrap();
    for at in [now + 60 * MINUTE, now + 48 * 60 * MINUTE] {
        assert_eq!(
            admin.who_could_see(id, Timestamp::from_millis(at)).unwrap(),
            vec![(user("alice"), agent("planner"))],
            "at {at}"
        );
    }

    let explanation = admin.explain(user("alice"), agent("scribe"), id).unwrap();
    assert!(!explanation.visible());
    assert_eq!(
        explanation.deciding().unwrap().condition,
        colmem::Condition::Invoke
    );
    let tail = admin.audit_tail(3).unwrap();
    assert_eq!(tail.len(), 3);
    assert!(tail.windows(2).all(|w| w[0].seq + 1 == w[1].seq));
    assert!(matches!(
        admin.audit_verify().unwrap(),
        AuditStatus::Intact { .. }
    ));
}

#[test]
fn reindex_after_an_embedder_change_restores_vector_search() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    memory
        .session(user("alice"), agent("planner"))
        .unwrap()
        .remember(&turn(
            "D1:1",
            "alice",
            "I restore old sailing boats every summer.",
        ))
        .unwrap();
    let stored = memory.fragment_ids().unwrap().len() as u64;
    drop(memory);

    let mut config = logical();
    config.embedder = EmbedderConfig::Offline(parts::llm::OfflineConfig {
        dim: 48,
        ..parts::llm::OfflineConfig::default()
    });
    let memory = Memory::open(dir.path(), config).unwrap();
    let report = memory.open_report();
    assert!(
        !report.restored,
        "another embedder's snapshot is not restored"
    );
    assert_eq!(report.catch_up.skipped_vectors as u64, stored, "{report:?}");
    let mut calls = Vec::new();
    let reindexed = memory
        .reindex(|done, total| calls.push((done, total)))
        .unwrap();
    assert_eq!(reindexed.examined, stored);
    assert_eq!(reindexed.reembedded, stored);
    assert_eq!(calls.last(), Some(&(stored, stored)));
    let again = memory.reindex(|_, _| {}).unwrap();
    assert_eq!(again.reembedded, 0, "nothing left from the old embedder");
    let seen = contents(&memory, "alice", "planner", "sailing boats", View::Current);
    assert!(seen.iter().any(|c| c.contains("sailing")), "{seen:?}");
}

#[test]
fn cards_learned_by_one_session_compose_for_another_agent_of_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    let trajectory: Trajectory = serde_json_trajectory();
    let learned = memory
        .session(user("alice"), agent("planner"))
        .unwrap()
        .learn_cards(&[trajectory], None)
        .unwrap();
    tick(&memory);
    let composed = memory
        .session(user("alice"), agent("scribe"))
        .unwrap()
        .compose_cards(
            &TaskContext::new("sum the invoice totals and round the result"),
            256,
        )
        .unwrap();
    assert!(!learned.written.is_empty(), "{learned:?}");
    assert!(
        composed
            .cards
            .iter()
            .any(|c| learned.written.contains(&c.id)),
        "{learned:?} {composed:?}"
    );
    let bobs = memory
        .session(user("bob"), agent("planner"))
        .unwrap()
        .compose_cards(
            &TaskContext::new("sum the invoice totals and round the result"),
            256,
        )
        .unwrap();
    assert!(bobs.cards.is_empty(), "alice's cards are hers: {bobs:?}");
    assert_store_agrees_with_its_audit(&memory);
}

fn serde_json_trajectory() -> Trajectory {
    use parts::cards::{Decision, Outcome, Step};
    Trajectory {
        id: "t1".to_owned(),
        task: "sum the invoice totals and round the result to cents".to_owned(),
        conditions: BTreeSet::new(),
        round: 0,
        steps: vec![
            Step {
                action: "read every invoice line and add the totals".to_owned(),
                decision: None,
            },
            Step {
                action: "round the sum".to_owned(),
                decision: Some(Decision {
                    name: "rounding".to_owned(),
                    chosen: "half-up".to_owned(),
                    alternatives: vec!["truncate".to_owned()],
                }),
            },
        ],
        outcome: Outcome {
            score: 1.0,
            success: true,
            feedback: "correct total".to_owned(),
            infrastructure_error: false,
        },
    }
}

#[test]
fn model_configuration_is_checked_when_the_memory_opens() {
    let dir = tempfile::tempdir().unwrap();
    let chat = r#"
        [chat]
        base_url = "http://127.0.0.1:9/v1"
        model = "any"
        api_key_env = "COLMEM_TEST_NEVER_SET_KEY"
    "#;
    let config = Config::from_toml(chat, "test.toml").unwrap();
    let err = Memory::open(dir.path(), config).unwrap_err();
    assert!(
        err.to_string().contains("COLMEM_TEST_NEVER_SET_KEY"),
        "{err}"
    );

    let without_key = Config::from_toml(
        "[chat]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"any\"\n",
        "test.toml",
    )
    .unwrap();
    // The model-backed roles are built without calling the server.
    Memory::open(dir.path(), without_key).unwrap();

    let local =
        Config::from_toml("[embedder]\nkind = \"local\"\ndir = \"nowhere\"\n", "t").unwrap();
    let err = Memory::open(dir.path(), local).unwrap_err();
    assert!(err.to_string().contains("nowhere"), "{err}");
}

#[test]
fn retention_deletes_a_sessions_old_fragments() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = logical();
    config.pipeline.retention_ms = Some(2 * MINUTE);
    let memory = Memory::open(dir.path(), config).unwrap();
    setup(&memory);
    let session = memory.session(user("alice"), agent("planner")).unwrap();
    let written = session
        .remember(&turn("D1:1", "alice", "I live in Leeds, near the station."))
        .unwrap();
    // The move keeps the old home as a past version: retention holds for it too.
    session
        .remember(&turn("D1:2", "alice", "Big news: I moved to Bristol."))
        .unwrap();
    let history = RecallOptions {
        view: View::AllVersions,
        ..RecallOptions::default()
    };
    let past = session.recall("Leeds", &history).unwrap().hits;
    assert!(
        past.iter().any(|h| h.fragment.superseded_by.is_some()),
        "{past:?}"
    );
    tick(&memory);
    assert!(
        session.enforce_retention().unwrap() == colmem::Deletion::default(),
        "not old yet"
    );
    tick(&memory);
    tick(&memory);
    let retention = session.enforce_retention().unwrap();
    assert!(retention.refused.is_empty(), "{retention:?}");
    let deleted: BTreeSet<_> = retention.deleted.into_iter().collect();
    assert!(
        written.written.iter().all(|id| deleted.contains(id)),
        "{deleted:?} {written:?}"
    );
    for view in [View::Current, View::AllVersions] {
        let seen = contents(&memory, "alice", "planner", "Leeds Bristol station", view);
        assert!(seen.is_empty(), "{view:?}: {seen:?}");
    }
    assert_store_agrees_with_its_audit(&memory);
}

#[test]
fn drafts_from_a_resource_count_in_the_matrix_and_need_the_resource_to_be_read() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    let wiki = colmem::ResourceId::new("wiki").unwrap();
    let admin = memory.admin();
    admin.register(Principal::Resource(wiki)).unwrap();
    admin
        .grant(
            Edge::Access {
                agent: agent("planner"),
                resource: wiki,
            },
            None,
            None,
        )
        .unwrap();
    tick(&memory);
    let session = memory.session(user("alice"), agent("planner")).unwrap();
    let mut draft = Draft::new(
        "The wiki says the office closes at six on Fridays.",
        Granularity::Fact,
        colmem::Kind::Observation,
    );
    draft.resources.insert(wiki);
    let ids = session
        .write(vec![draft.clone()], Some("k1".into()))
        .unwrap();
    assert_eq!(
        session.write(vec![draft], Some("k1".into())).unwrap(),
        ids,
        "idempotent"
    );
    // scribe may not use the wiki, so what was drawn from it is hidden from it (condition 4).
    let err = memory
        .session(user("alice"), agent("scribe"))
        .unwrap()
        .write(
            vec![{
                let mut d = Draft::new("x", Granularity::Fact, colmem::Kind::Observation);
                d.resources.insert(wiki);
                d
            }],
            None,
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
    tick(&memory);
    let planner = contents(
        &memory,
        "alice",
        "planner",
        "office closes Fridays",
        View::Current,
    );
    assert!(planner.iter().any(|c| c.contains("office")), "{planner:?}");
    let scribe = contents(
        &memory,
        "alice",
        "scribe",
        "office closes Fridays",
        View::Current,
    );
    assert!(scribe.is_empty(), "{scribe:?}");

    let matrix = memory.admin().access_matrix().unwrap();
    let cell = matrix
        .cells
        .iter()
        .find(|c| c.resource == Some(wiki))
        .unwrap();
    assert_eq!((cell.user, cell.agent), (user("alice"), agent("planner")));
    assert_eq!(cell.fragments_written, 1);
    assert_eq!(cell.reads, 1);
    assert_eq!(cell.fragments_read, 1);
    assert_store_agrees_with_its_audit(&memory);
}

/// The Collaborative Memory split: the private part stays with its user, the shared
/// part reaches other users through the shared scope, redacted by the write policy.
#[test]
fn share_splits_into_a_private_and_a_redacted_shared_part() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = logical();
    config.policy.global_writers.insert(agent("planner"));
    let memory = Memory::open(dir.path(), config).unwrap();
    setup(&memory);
    let shared = memory
        .session(user("alice"), agent("planner"))
        .unwrap()
        .share(
            "The supplier quote arrived, call Dana at dana@example.com about the quote",
            colmem::Scope::Global,
            &[],
        )
        .unwrap();
    assert!(
        shared.private.is_some() && shared.shared.is_some(),
        "{shared:?}"
    );
    tick(&memory);
    let alice = contents(&memory, "alice", "planner", "supplier quote", View::Current);
    assert!(
        alice.iter().any(|c| c.contains("dana@example.com")),
        "{alice:?}"
    );
    let bob = contents(&memory, "bob", "planner", "supplier quote", View::Current);
    assert!(!bob.is_empty(), "the shared part reaches bob");
    assert!(
        bob.iter().all(|c| !c.contains("dana@example.com")),
        "bob sees only the redacted shared part: {bob:?}"
    );
}

/// What a crew's agent remembers reaches the crew only as the write policy's shared
/// part leaves it: a turn it would change (an e-mail address, redacted by default)
/// stays with the agent and the user.
#[test]
fn remember_shares_with_a_crew_through_the_write_policy() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    let crew = colmem::GroupId::new("crew").unwrap();
    let admin = memory.admin();
    admin
        .register(Principal::Group(crew, colmem::GroupKind::Crew))
        .unwrap();
    admin
        .grant(
            Edge::Member {
                member: colmem::Member::Agent(agent("planner")),
                group: crew,
            },
            None,
            None,
        )
        .unwrap();
    tick(&memory);
    // A user's conversation is personal: shared with the crew only when asked.
    let planner = memory
        .session(user("alice"), agent("planner"))
        .unwrap()
        .with_scope(colmem::Scope::Group(crew));
    planner
        .remember(&turn(
            "D1:1",
            "alice",
            "The supplier quote is due on Friday.",
        ))
        .unwrap();
    let mut second = turn(
        "D2:1",
        "alice",
        "Send the supplier quote to alice@example.com.",
    );
    second.session = "s2".to_owned();
    planner.remember(&second).unwrap();
    tick(&memory);
    let bob = contents(&memory, "bob", "planner", "supplier quote", View::Current);
    assert!(bob.iter().any(|c| c.contains("Friday")), "{bob:?}");
    assert!(
        bob.iter().all(|c| !c.contains("alice@example.com")),
        "{bob:?}"
    );
    let alice = contents(&memory, "alice", "planner", "supplier quote", View::Current);
    assert!(
        alice.iter().any(|c| c.contains("alice@example.com")),
        "{alice:?}"
    );
    assert_store_agrees_with_its_audit(&memory);
}

/// Pseudonyms are keyed with a secret of the memory: stable across reopening, not
/// the same in another memory, so not computable from a user id alone.
#[test]
fn anonymised_users_get_pseudonyms_keyed_by_their_memory() {
    let shared_text = |dir: &std::path::Path, fresh: bool| {
        let mut config = logical();
        config.policy.write.system.shared.transforms =
            vec![parts::access::Transform::AnonymiseUsers {}];
        let memory = Memory::open(dir, config).unwrap();
        if fresh {
            setup(&memory);
        }
        let shared = memory
            .session(user("alice"), agent("planner"))
            .unwrap()
            .share(
                "alice asked bob for the supplier quote",
                colmem::Scope::User,
                &[user("bob")],
            )
            .unwrap();
        shared.split.shared.text().unwrap().to_owned()
    };
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = shared_text(one.path(), true);
    assert!(
        !first.contains("alice") && !first.contains("bob") && first.contains("user-"),
        "{first}"
    );
    assert_eq!(
        shared_text(one.path(), false),
        first,
        "stable when reopened"
    );
    assert_ne!(shared_text(two.path(), true), first, "keyed per memory");
}

/// A write under an idempotency key is safe to retry later: the retry returns the
/// first write's ids; the same key for other content is a conflict.
#[test]
fn a_keyed_write_retried_later_is_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    let session = memory.session(user("alice"), agent("planner")).unwrap();
    let fact = |text: &str| {
        vec![Draft::new(
            text,
            Granularity::Fact,
            colmem::Kind::Observation,
        )]
    };
    let drafts = || fact("the standup moved to ten");
    let first = session.write(drafts(), Some("standup".into())).unwrap();
    tick(&memory);
    let again = session.write(drafts(), Some("standup".into())).unwrap();
    assert_eq!(again, first);
    let other = fact("the standup moved to eleven");
    let err = session
        .write(other.clone(), Some("standup".into()))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    // The same text valid from another day is another request.
    let mut dated = drafts();
    dated[0].validity = colmem::Validity::since(Timestamp::parse("2025-06-01").unwrap());
    let err = session.write(dated, Some("standup".into())).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    // Purged since, the first write can no longer be compared: the key is spent.
    use colmem::parts::store::FragmentStore as _;
    memory
        .store()
        .purge(&colmem::parts::store::Purge {
            admin: "root".into(),
            fragment: first[0],
        })
        .unwrap();
    let err = session.write(drafts(), Some("standup".into())).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    // Keys are each user's own: bob's "standup" is another key, and tells bob
    // nothing of alice's.
    let bobs = memory
        .session(user("bob"), agent("planner"))
        .unwrap()
        .write(other, Some("standup".into()))
        .unwrap();
    assert_ne!(bobs, first);
}

/// A memory whose read policy redacts "Oslo", where alice told planner she lives there.
fn alice_in_redacted_oslo(dir: &std::path::Path) -> Memory {
    let mut config = logical();
    config.policy.read.redact = vec![parts::access::Redaction::Names(vec!["Oslo".to_owned()])];
    let memory = Memory::open(dir, config).unwrap();
    setup(&memory);
    let session = memory.session(user("alice"), agent("planner")).unwrap();
    session
        .remember(&turn("D1:1", "alice", "I live in Oslo with my two cats."))
        .unwrap();
    tick(&memory);
    memory
}

#[test]
fn an_answer_reads_only_what_the_read_policy_shows() {
    let dir = tempfile::tempdir().unwrap();
    let memory = alice_in_redacted_oslo(dir.path());
    let session = memory.session(user("alice"), agent("planner")).unwrap();
    let answered = session
        .answer("Where does alice live?", &RecallOptions::default())
        .unwrap();
    assert!(!answered.answer.text.is_empty());
    assert!(
        !answered.answer.text.contains("Oslo"),
        "{}",
        answered.answer.text
    );
}

/// A history lists every version under a key, replaced ones included, as the read
/// policy shows them (its keywords narrow, its redactions apply), and is audited.
#[test]
fn a_history_shows_every_version_as_the_read_policy_does() {
    let dir = tempfile::tempdir().unwrap();
    let memory = alice_in_redacted_oslo(dir.path());
    let session = memory.session(user("alice"), agent("planner")).unwrap();
    session
        .remember(&turn("D1:2", "alice", "I moved to Bergen last week."))
        .unwrap();
    tick(&memory);
    let versions = session.history("alice/home").unwrap();
    let contents: Vec<&str> = versions.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(versions.len(), 2, "{contents:?}");
    assert!(
        versions[0].superseded_by == Some(versions[1].id),
        "{versions:?}"
    );
    assert!(!contents[0].contains("Oslo"), "{contents:?}");
    assert!(contents[1].contains("Bergen"), "{contents:?}");
    let read = memory.admin().audit_tail(1).unwrap();
    assert!(
        matches!(&read[0].event, colmem::AuditEvent::Read { returned, .. } if returned.len() == 2),
        "{read:?}"
    );
    // bob sees none of alice's; an empty key is refused.
    let bob = memory.session(user("bob"), agent("planner")).unwrap();
    assert!(bob.history("alice/home").unwrap().is_empty());
    assert_eq!(
        session.history("  ").unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    drop(memory);

    let mut config = logical();
    config.policy.read.keywords = vec!["bergen".to_owned()];
    let memory = Memory::open(dir.path(), config).unwrap();
    let session = memory.session(user("alice"), agent("planner")).unwrap();
    let versions = session.history("alice/home").unwrap();
    assert_eq!(versions.len(), 1, "{versions:?}");
    assert!(versions[0].content.contains("Bergen"));
}
