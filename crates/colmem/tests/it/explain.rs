//! `Session::explain` tells a session only what it may read; `Admin::explain` tells
//! the administrator everything; both, and every request refused because the user
//! may not invoke the agent, are audited.

use colmem::{AuditEvent, Edge, ErrorKind, FragmentId, Memory, RecallOptions};

use crate::{agent, logical, setup, tick, turn, user};

#[test]
fn a_session_is_told_only_of_what_it_may_read_and_every_explain_is_audited() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(dir.path(), logical()).unwrap();
    setup(&memory);
    let alices = memory
        .session(user("alice"), agent("planner"))
        .unwrap()
        .remember(&turn("D1:1", "alice", "I keep bees on my roof."))
        .unwrap()
        .written[0];
    tick(&memory);
    let explanation = memory
        .session(user("alice"), agent("planner"))
        .unwrap()
        .explain(alices)
        .unwrap()
        .expect("alice may read her own fragment");
    assert!(explanation.visible());
    let bob = memory.session(user("bob"), agent("planner")).unwrap();
    assert_eq!(bob.explain(alices).unwrap(), None, "hidden");
    assert_eq!(bob.explain(FragmentId(999_999)).unwrap(), None, "missing");
    let full = memory
        .admin()
        .explain(user("bob"), agent("planner"), alices)
        .unwrap();
    assert_eq!(full.deciding().unwrap().condition, colmem::Condition::Scope);
    let explained = |u: &str, fragment: FragmentId, admin: bool| AuditEvent::Explain {
        user: user(u),
        agent: agent("planner"),
        fragment,
        admin,
    };
    let denied = |u: &str, a: &str| AuditEvent::Denied {
        user: user(u),
        agent: agent(a),
    };

    // bob may not invoke scribe: the session is refused; alice's with scribe is
    // refused at its next call once her grant is revoked.
    let err = memory.session(user("bob"), agent("scribe")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
    let scribe = memory.session(user("alice"), agent("scribe")).unwrap();
    tick(&memory);
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
        .recall("bees", &RecallOptions::default())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
    let err = scribe.explain(alices).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");

    let tail = memory.admin().audit_tail(8).unwrap();
    let events: Vec<AuditEvent> = tail.into_iter().map(|e| e.event).collect();
    assert_eq!(
        events,
        [
            explained("alice", alices, false),
            explained("bob", alices, false),
            explained("bob", FragmentId(999_999), false),
            explained("bob", alices, true),
            denied("bob", "scribe"),
            events[5].clone(),
            denied("alice", "scribe"),
            denied("alice", "scribe"),
        ]
    );
    assert!(
        matches!(&events[5], AuditEvent::Access { .. }),
        "the revocation: {:?}",
        events[5]
    );
}
