//! Erasure and purge through the facade: when a deletion's text goes
//! (`[store] purge_deleted_after`), what its tombstone keeps, and the
//! administrator's purges.

use colmem::parts::store::FragmentStore as _;
use colmem::{Error, ErrorKind, FragmentId, Memory, PurgeTarget, Timestamp};

use crate::{MINUTE, START, agent, logical, setup, tick, turn, user};

/// The text the store holds for `id`: `None` once purged.
fn text(memory: &Memory, id: FragmentId) -> Option<String> {
    match memory.store().get(id) {
        Ok(f) => Some(f.content),
        Err(colmem::parts::store::Error::NotFound { .. }) => None,
        Err(e) => panic!("{e}"),
    }
}

/// alice tells planner where she lives, then asks to forget it; returns what was deleted.
fn alice_forgets_her_address(memory: &Memory) -> Vec<FragmentId> {
    let session = memory.session(user("alice"), agent("planner")).unwrap();
    session
        .remember(&turn(
            "D1:1",
            "alice",
            "My address is 12 Quillfeather Lane.",
        ))
        .unwrap();
    tick(memory);
    let forget = session
        .remember(&turn("D1:2", "alice", "Please forget my address."))
        .unwrap();
    assert!(!forget.deleted.is_empty(), "{forget:?}");
    forget.deleted
}

#[test]
fn a_forget_erases_the_text_at_once_and_keeps_a_tombstone() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    let deleted = alice_forgets_her_address(&memory);
    for &id in &deleted {
        assert_eq!(text(&memory, id).as_deref(), Some(""), "{id}");
        let tomb = memory.store().get(id).unwrap();
        assert!(tomb.deleted_at.is_some() && tomb.key.is_none() && tomb.keywords.is_empty());
        assert_eq!(memory.store().embedding(id).unwrap(), None);
    }
    // The tombstone still answers who could have read it before it was forgotten.
    let before = Timestamp::parse(START).unwrap();
    let before = Timestamp::from_millis(before.as_millis() + MINUTE + 1);
    let who = memory.admin().who_could_see(deleted[0], before).unwrap();
    assert!(who.contains(&(user("alice"), agent("planner"))), "{who:?}");
    // A live fragment's text is not erased.
    let live = memory
        .session(user("alice"), agent("planner"))
        .unwrap()
        .remember(&turn("D1:3", "alice", "I walk to work."))
        .unwrap()
        .written[0];
    let err = memory.erase(&[live]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("not deleted"), "{err}");
}

#[test]
fn a_keyed_turn_forgotten_since_is_replayed_without_comparing_its_words() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    let session = memory.session(user("alice"), agent("planner")).unwrap();
    let said = turn("D1:1", "alice", "My address is 12 Quillfeather Lane.");
    let first = session.remember_keyed(&said, Some("k1")).unwrap();
    tick(&memory);
    session
        .remember(&turn("D1:2", "alice", "Please forget my address."))
        .unwrap();
    // A retry (an import run again, say) is a replay, not a conflict.
    let again = session.remember_keyed(&said, Some("k1")).unwrap();
    assert!(again.replayed, "{again:?}");
    assert_eq!(again.written, first.written);
}

#[test]
fn a_delay_keeps_deleted_text_until_a_later_call_or_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = logical();
    config.store.purge_deleted_after = (3 * MINUTE) as u64;
    let deleted = {
        let memory = Memory::open(dir.path(), config.clone()).unwrap();
        setup(&memory);
        let deleted = alice_forgets_her_address(&memory);
        assert!(
            deleted
                .iter()
                .all(|&id| text(&memory, id).is_some_and(|t| !t.is_empty())),
            "kept for the delay"
        );
        let err = memory.erase(&[FragmentId(9_999)]).map(|_| ());
        assert!(err.is_ok(), "an id gone is skipped: {err:?}");
        tick(&memory);
        let session = memory.session(user("alice"), agent("planner")).unwrap();
        session.recall("address", &Default::default()).unwrap();
        assert!(text(&memory, deleted[0]).is_some_and(|t| !t.is_empty()));
        tick(&memory);
        tick(&memory);
        // The next session call after the delay erases it.
        session.recall("address", &Default::default()).unwrap();
        for &id in &deleted {
            assert_eq!(text(&memory, id).as_deref(), Some(""), "{id}");
        }
        // Another deletion, erased when the directory is next opened after the delay.
        session
            .remember(&turn("D1:4", "alice", "My cat is called Zorbulon."))
            .unwrap();
        tick(&memory);
        let forget = session
            .remember(&turn("D1:5", "alice", "Please forget my cat's name."))
            .unwrap();
        assert!(!forget.deleted.is_empty(), "{forget:?}");
        forget.deleted
    };
    let read_only = Memory::open_read_only(dir.path(), config.clone()).unwrap();
    assert!(text(&read_only, deleted[0]).is_some_and(|t| !t.is_empty()));
    drop(read_only);
    let later = Timestamp::from_millis(Timestamp::parse(START).unwrap().as_millis() + 60 * MINUTE);
    config.clock = colmem::ClockConfig::Logical { start: later };
    let memory = Memory::open(dir.path(), config).unwrap();
    for &id in &deleted {
        assert_eq!(text(&memory, id).as_deref(), Some(""), "{id}");
    }
}

#[test]
fn an_administrator_purges_by_id_by_user_and_by_deletion_time() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    let deleted = alice_forgets_her_address(&memory);
    tick(&memory);
    let cutoff = memory.now();
    let alices = memory
        .session(user("alice"), agent("planner"))
        .unwrap()
        .remember(&turn("D1:3", "alice", "I walk to work."))
        .unwrap()
        .written;
    let bobs = memory
        .session(user("bob"), agent("planner"))
        .unwrap()
        .remember(&turn("D2:1", "bob", "I cycle to work."))
        .unwrap()
        .written;
    let admin = memory.admin();

    // By ids: every one must exist, or nothing is purged.
    let unknown = PurgeTarget::Fragments(vec![alices[0], FragmentId(9_999)]);
    for err in [
        admin.purgeable(&unknown).unwrap_err(),
        admin.purge(&unknown, "root").unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    }
    assert!(text(&memory, alices[0]).is_some());
    // A user never registered is unknown.
    let err = admin
        .purgeable(&PurgeTarget::User(user("carol")))
        .unwrap_err();
    assert!(matches!(err, Error::UnknownPrincipal { .. }), "{err}");

    // Every fragment deleted before the cutoff: the tombstones of the forget.
    let before = PurgeTarget::DeletedBefore(cutoff);
    let mut tombstones = deleted.clone();
    tombstones.sort();
    assert_eq!(admin.purgeable(&before).unwrap(), tombstones);
    assert_eq!(admin.purge(&before, "root").unwrap(), tombstones);
    assert!(deleted.iter().all(|&id| text(&memory, id).is_none()));

    // A dry run purges nothing; the purge removes what it listed, and only that.
    let bob = PurgeTarget::User(user("bob"));
    let listed = admin.purgeable(&bob).unwrap();
    assert_eq!(listed, bobs);
    assert!(bobs.iter().all(|&id| text(&memory, id).is_some()));
    assert_eq!(admin.purge(&bob, "root").unwrap(), listed);
    assert!(bobs.iter().all(|&id| text(&memory, id).is_none()));
    assert!(alices.iter().all(|&id| text(&memory, id).is_some()));
    let recalled: Vec<String> = memory
        .session(user("bob"), agent("planner"))
        .unwrap()
        .recall("cycle work", &Default::default())
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.fragment.content)
        .collect();
    assert!(recalled.is_empty(), "the index forgot them: {recalled:?}");

    let by_id = PurgeTarget::Fragments(vec![alices[0], alices[0]]);
    assert_eq!(admin.purge(&by_id, "root").unwrap(), [alices[0]]);
    let purges = admin
        .audit_tail(50)
        .unwrap()
        .into_iter()
        .filter(|e| matches!(&e.event, colmem::AuditEvent::Purge { admin, .. } if admin == "root"))
        .count();
    assert_eq!(purges, tombstones.len() + bobs.len() + 1);
    assert!(matches!(
        admin.audit_verify().unwrap(),
        colmem::AuditStatus::Intact { .. }
    ));
}
