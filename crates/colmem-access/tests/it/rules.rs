//! Table-driven tests of the read rule's scopes and conditions, the write rule,
//! default scopes, derivation and bad input.

use std::collections::BTreeSet;

use colmem_access::{AccessError, AccessGraph, Context, SystemPolicy, narrowest, within};
use colmem_core::{
    AccessChange, AccessEvent, AgentId, Denial, Draft, Edge, ErrorKind, Fragment, FragmentId,
    Granularity, GroupId, GroupKind, Kind, LogicalClock, Member, Principal, Provenance, ResourceId,
    Scope, Source, Timestamp, UserId, Validity,
};

fn t(ms: i64) -> Timestamp {
    Timestamp::from_millis(ms)
}
fn u(name: &str) -> UserId {
    UserId::new(name).unwrap()
}
fn a(name: &str) -> AgentId {
    AgentId::new(name).unwrap()
}
fn r(name: &str) -> ResourceId {
    ResourceId::new(name).unwrap()
}
fn g(name: &str) -> GroupId {
    GroupId::new(name).unwrap()
}
fn register(p: Principal) -> AccessEvent {
    AccessEvent {
        at: t(0),
        change: AccessChange::Register { principal: p },
    }
}
fn grant(at: i64, edge: Edge) -> AccessEvent {
    AccessEvent {
        at: t(at),
        change: AccessChange::Grant { edge, until: None },
    }
}
fn revoke(at: i64, edge: Edge) -> AccessEvent {
    AccessEvent {
        at: t(at),
        change: AccessChange::Revoke { edge },
    }
}
fn invoke(user: &str, agent: &str) -> Edge {
    Edge::Invoke {
        user: u(user),
        agent: a(agent),
    }
}
fn access(agent: &str, resource: &str) -> Edge {
    Edge::Access {
        agent: a(agent),
        resource: r(resource),
    }
}
fn member(agent: &str, group: &str) -> Edge {
    Edge::Member {
        member: Member::Agent(a(agent)),
        group: g(group),
    }
}
fn nest(inner: &str, outer: &str) -> Edge {
    Edge::Member {
        member: Member::Group(g(inner)),
        group: g(outer),
    }
}

/// alice invokes planner and coder; bob invokes coder. planner uses wiki; coder uses
/// wiki and repo. planner is in crew-a (in team-x in dept-y); coder in crew-b.
fn world() -> AccessGraph {
    let mut graph = AccessGraph::new();
    let principals = [
        Principal::User(u("alice")),
        Principal::User(u("bob")),
        Principal::Agent(a("planner")),
        Principal::Agent(a("coder")),
        Principal::Agent(a("outsider")),
        Principal::Resource(r("wiki")),
        Principal::Resource(r("repo")),
        Principal::Group(g("crew-a"), GroupKind::Crew),
        Principal::Group(g("crew-b"), GroupKind::Crew),
        Principal::Group(g("team-x"), GroupKind::Team),
        Principal::Group(g("dept-y"), GroupKind::Department),
    ];
    for p in principals {
        graph.apply(register(p)).unwrap();
    }
    for edge in [
        invoke("alice", "planner"),
        invoke("alice", "coder"),
        invoke("bob", "coder"),
        access("planner", "wiki"),
        access("coder", "wiki"),
        access("coder", "repo"),
        member("planner", "crew-a"),
        member("coder", "crew-b"),
        nest("crew-a", "team-x"),
        nest("team-x", "dept-y"),
    ] {
        graph.apply(grant(1, edge)).unwrap();
    }
    graph
}

fn ctx(user: &str, agent: &str, at: i64) -> Context {
    Context::new(u(user), a(agent), &LogicalClock::new(t(at)))
}

fn fragment(user: &str, scope: Scope, agents: &[&str], resources: &[&str]) -> Fragment {
    Fragment {
        id: FragmentId(1),
        key: None,
        content: "x".into(),
        granularity: Granularity::Fact,
        kind: Kind::Observation,
        scope,
        provenance: Provenance {
            created_at: t(5),
            user: u(user),
            agents: agents.iter().map(|n| a(n)).collect(),
            resources: resources.iter().map(|n| r(n)).collect(),
            source: Source::default(),
        },
        validity: Validity::always(),
        keywords: Vec::new(),
        superseded_at: None,
        superseded_by: None,
        deleted_at: None,
    }
}

/// Checks `can_read` and the compiled filter agree with the expected verdict.
fn check(graph: &AccessGraph, reader: (&str, &str, i64), f: &Fragment, expected: bool, why: &str) {
    let ctx = ctx(reader.0, reader.1, reader.2);
    assert_eq!(graph.can_read(&ctx, f), expected, "can_read: {why}");
    let admitted = graph
        .compile(&ctx)
        .map(|filter| filter.admits(&f.meta()))
        .unwrap_or(false);
    assert_eq!(admitted, expected, "admits: {why}");
}

#[test]
fn every_scope() {
    let graph = world();
    // (why, reader (user, agent, t), fragment, visible)
    type Case<'a> = (&'a str, (&'a str, &'a str, i64), Fragment, bool);
    let cases: &[Case] = &[
        (
            "agent scope: the writer, same user",
            ("alice", "planner", 10),
            fragment("alice", Scope::Agent, &["planner"], &[]),
            true,
        ),
        (
            "agent scope: another agent of the same user",
            ("alice", "coder", 10),
            fragment("alice", Scope::Agent, &["planner"], &[]),
            false,
        ),
        (
            "agent scope: the writer serving another user",
            ("bob", "coder", 10),
            fragment("alice", Scope::Agent, &["coder"], &[]),
            false,
        ),
        (
            "user scope: any agent of that user",
            ("alice", "coder", 10),
            fragment("alice", Scope::User, &["planner"], &[]),
            true,
        ),
        (
            "user scope: another user",
            ("bob", "coder", 10),
            fragment("alice", Scope::User, &["coder"], &[]),
            false,
        ),
        (
            "group scope: a member of the group",
            ("alice", "planner", 10),
            fragment("bob", Scope::Group(g("crew-a")), &["planner"], &[]),
            true,
        ),
        (
            "group scope: through nesting two levels up",
            ("alice", "planner", 10),
            fragment("bob", Scope::Group(g("dept-y")), &["planner"], &[]),
            true,
        ),
        (
            "group scope: not a member",
            ("alice", "coder", 10),
            fragment("alice", Scope::Group(g("crew-a")), &["coder"], &[]),
            false,
        ),
        (
            "global scope: everyone",
            ("bob", "coder", 10),
            fragment("alice", Scope::Global, &["coder"], &["repo"]),
            true,
        ),
        (
            "global scope is narrowed by condition 3",
            ("bob", "coder", 10),
            fragment("alice", Scope::Global, &["planner"], &[]),
            false,
        ),
        (
            "global scope is narrowed by condition 4",
            ("alice", "planner", 10),
            fragment("alice", Scope::Global, &["planner"], &["repo"]),
            false,
        ),
    ];
    for (why, reader, f, expected) in cases {
        check(&graph, *reader, f, *expected, why);
    }
}

#[test]
fn each_condition_decides_alone() {
    let mut graph = world();
    let base = fragment("alice", Scope::User, &["planner"], &["wiki"]);
    check(&graph, ("alice", "coder", 10), &base, true, "baseline");

    // 1. time, deletion, supersession
    let mut future = base.clone();
    future.provenance.created_at = t(11);
    check(
        &graph,
        ("alice", "coder", 10),
        &future,
        false,
        "created after now",
    );
    let mut deleted = base.clone();
    deleted.deleted_at = Some(t(10));
    check(
        &graph,
        ("alice", "coder", 10),
        &deleted,
        false,
        "deleted at now",
    );
    let mut superseded = base.clone();
    superseded.superseded_at = Some(t(9));
    check(
        &graph,
        ("alice", "coder", 10),
        &superseded,
        false,
        "superseded",
    );
    let mut later = base.clone();
    later.superseded_at = Some(t(11));
    check(
        &graph,
        ("alice", "coder", 10),
        &later,
        true,
        "superseded only later",
    );

    // 2. scope
    check(
        &graph,
        ("bob", "coder", 10),
        &fragment("alice", Scope::User, &["coder"], &["wiki"]),
        false,
        "scope decides",
    );

    // 3. agents ⊆ A(u,t): revoking alice → planner hides planner's knowledge from alice's coder
    graph.apply(revoke(20, invoke("alice", "planner"))).unwrap();
    check(
        &graph,
        ("alice", "coder", 19),
        &base,
        true,
        "before the revocation",
    );
    check(
        &graph,
        ("alice", "coder", 20),
        &base,
        false,
        "at the exact instant of the revocation",
    );
    check(
        &graph,
        ("alice", "coder", 21),
        &base,
        false,
        "after the revocation",
    );

    // 4. resources ⊆ R(a,t)
    graph.apply(revoke(30, access("coder", "wiki"))).unwrap();
    let from_wiki = fragment("alice", Scope::User, &["coder"], &["wiki"]);
    check(
        &graph,
        ("alice", "coder", 29),
        &from_wiki,
        true,
        "before the resource revocation",
    );
    check(
        &graph,
        ("alice", "coder", 30),
        &from_wiki,
        false,
        "resource revoked",
    );
}

#[test]
fn forbidden_unless_the_user_may_invoke_the_agent() {
    let graph = world();
    let err = graph.compile(&ctx("bob", "planner", 10)).unwrap_err();
    assert!(matches!(err.denial, Denial::NotInvocable { .. }), "{err}");
    assert!(err.to_string().contains("may not invoke"), "{err}");
    // Unknown principals are refused the same way, without panicking.
    assert!(graph.compile(&ctx("nobody-here", "planner", 10)).is_err());
    assert!(graph.compile(&ctx("alice", "no-such-agent", 10)).is_err());
    // Before any grant.
    assert!(graph.compile(&ctx("alice", "planner", 0)).is_err());
}

#[test]
fn future_grants_and_expiry() {
    let mut graph = world();
    graph
        .apply(AccessEvent {
            at: t(100),
            change: AccessChange::Grant {
                edge: invoke("bob", "planner"),
                until: Some(t(200)),
            },
        })
        .unwrap();
    assert!(
        graph.compile(&ctx("bob", "planner", 99)).is_err(),
        "not yet"
    );
    assert!(
        graph.compile(&ctx("bob", "planner", 100)).is_ok(),
        "from its moment"
    );
    assert!(graph.compile(&ctx("bob", "planner", 199)).is_ok());
    assert!(
        graph.compile(&ctx("bob", "planner", 200)).is_err(),
        "until is exclusive"
    );
}

#[test]
fn a_scheduled_grant_holds_up_no_revocation_and_a_revocation_cancels_it() {
    let mut graph = world();
    // Recorded at 10, in effect from 100.
    let scheduled = grant(100, invoke("bob", "planner"));
    graph.check_at(&scheduled, t(10)).unwrap();
    graph.apply(scheduled).unwrap();
    // A revocation recorded next takes effect now, not when the grant does.
    let now = revoke(11, invoke("bob", "coder"));
    graph.check_at(&now, t(11)).unwrap();
    graph.apply(now).unwrap();
    assert!(graph.compile(&ctx("bob", "coder", 11)).is_err());
    // Revoking the scheduled edge before its time cancels it.
    let cancel = revoke(20, invoke("bob", "planner"));
    graph.check_at(&cancel, t(20)).unwrap();
    graph.apply(cancel).unwrap();
    assert!(
        graph.compile(&ctx("bob", "planner", 150)).is_err(),
        "the scheduled grant was cancelled"
    );
    // A revocation dated later schedules the end of a live edge.
    let end = revoke(300, invoke("alice", "planner"));
    graph.check_at(&end, t(30)).unwrap();
    graph.apply(end).unwrap();
    assert!(graph.compile(&ctx("alice", "planner", 299)).is_ok());
    assert!(graph.compile(&ctx("alice", "planner", 300)).is_err());
    // Nothing left to revoke of the cancelled edge.
    let again = revoke(40, invoke("bob", "planner"));
    assert_eq!(
        graph.check_at(&again, t(40)).unwrap_err().kind(),
        ErrorKind::Conflict
    );
    // A change dated before the moment it is recorded would rewrite what could be
    // read then.
    let backdated = grant(25, invoke("bob", "coder"));
    let err = graph.check_at(&backdated, t(40)).unwrap_err();
    assert!(matches!(err, AccessError::Backdated { .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    // Replaying the events dated up to a moment gives the graph of that moment,
    // though the cancelling revocation comes before the grant it cancelled.
    for at in [10, 11, 20, 100, 150, 299, 300] {
        assert_eq!(
            graph.replay_until(t(at)).unwrap().snapshot(t(at)),
            graph.snapshot(t(at)),
            "at {at}"
        );
    }
}

#[test]
fn revoke_then_regrant_at_the_same_instant() {
    let mut graph = world();
    graph.apply(revoke(10, invoke("bob", "coder"))).unwrap();
    graph.apply(grant(10, invoke("bob", "coder"))).unwrap();
    assert!(
        graph.compile(&ctx("bob", "coder", 10)).is_ok(),
        "the later event wins"
    );
    // A grant and a revocation at the same instant, in that order: revoked.
    graph.apply(grant(12, invoke("bob", "planner"))).unwrap();
    graph.apply(revoke(12, invoke("bob", "planner"))).unwrap();
    assert!(graph.compile(&ctx("bob", "planner", 12)).is_err());
}

#[test]
fn group_moves_change_visibility() {
    let mut graph = world();
    let crew_b_note = fragment("alice", Scope::Group(g("crew-b")), &["coder"], &[]);
    check(
        &graph,
        ("alice", "planner", 10),
        &crew_b_note,
        false,
        "planner is not in crew-b",
    );
    graph
        .apply(revoke(20, member("planner", "crew-a")))
        .unwrap();
    graph.apply(grant(20, member("planner", "crew-b"))).unwrap();
    check(
        &graph,
        ("alice", "planner", 20),
        &crew_b_note,
        true,
        "planner moved to crew-b",
    );
    let dept_note = fragment("alice", Scope::Group(g("dept-y")), &["planner"], &[]);
    check(
        &graph,
        ("alice", "planner", 19),
        &dept_note,
        true,
        "via crew-a before the move",
    );
    check(
        &graph,
        ("alice", "planner", 20),
        &dept_note,
        false,
        "no longer under dept-y",
    );
    assert_eq!(graph.memberships(a("planner"), t(19)).unwrap().len(), 3);
    // The past is still answerable.
    let snapshot = graph.snapshot(t(19));
    assert!(snapshot.groups[&a("planner")].contains(&g("dept-y")));
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let graph = world();
    let cases: Vec<(AccessEvent, ErrorKind, &str)> = vec![
        (
            grant(5, invoke("alice", "ghost-agent")),
            ErrorKind::NotFound,
            "unknown agent",
        ),
        (
            grant(5, invoke("ghost-user", "planner")),
            ErrorKind::NotFound,
            "unknown user",
        ),
        (
            grant(5, access("planner", "ghost-resource")),
            ErrorKind::NotFound,
            "unknown resource",
        ),
        (
            grant(5, member("planner", "ghost-group")),
            ErrorKind::NotFound,
            "unknown group",
        ),
        (
            register(Principal::User(u("alice"))),
            ErrorKind::Conflict,
            "duplicate user",
        ),
        (
            AccessEvent {
                at: t(5),
                change: AccessChange::Register {
                    principal: Principal::Group(g("crew-a"), GroupKind::Team),
                },
            },
            ErrorKind::Conflict,
            "duplicate group",
        ),
        (
            AccessEvent {
                at: t(5),
                change: AccessChange::Grant {
                    edge: invoke("bob", "planner"),
                    until: Some(t(5)),
                },
            },
            ErrorKind::InvalidInput,
            "empty interval",
        ),
        (
            AccessEvent {
                at: t(5),
                change: AccessChange::Grant {
                    edge: invoke("bob", "planner"),
                    until: Some(t(2)),
                },
            },
            ErrorKind::InvalidInput,
            "reversed interval",
        ),
        (
            revoke(5, invoke("bob", "planner")),
            ErrorKind::Conflict,
            "revoking what was never granted",
        ),
        (
            grant(5, nest("dept-y", "crew-a")),
            ErrorKind::Conflict,
            "a three-group cycle",
        ),
        (
            grant(5, nest("crew-a", "crew-a")),
            ErrorKind::Conflict,
            "a group in itself",
        ),
    ];
    for (event, kind, why) in cases {
        let mut copy = graph.clone();
        let err = copy.apply(event).unwrap_err();
        assert_eq!(err.kind(), kind, "{why}: {err}");
        assert!(
            !err.to_string().is_empty() && !err.to_string().ends_with('.'),
            "{why}: {err}"
        );
        assert_eq!(copy.log(), graph.log(), "{why}: the log is unchanged");
        assert_eq!(
            copy.snapshot(t(50)),
            graph.snapshot(t(50)),
            "{why}: the graph is unchanged"
        );
    }
}

#[test]
fn a_closed_membership_does_not_block_a_later_reverse_one() {
    let mut graph = world();
    graph.apply(revoke(10, nest("team-x", "dept-y"))).unwrap();
    graph.apply(grant(11, nest("dept-y", "team-x"))).unwrap();
    assert!(
        graph
            .memberships(a("planner"), t(12))
            .unwrap()
            .contains(&g("team-x"))
    );
}

#[test]
fn write_rule() {
    let graph = world();
    let system = SystemPolicy {
        global_writers: BTreeSet::from([a("coder")]),
    };
    let draft = |scope: Option<Scope>| {
        let mut d = Draft::new("a note", Granularity::Fact, Kind::Observation);
        d.scope = scope;
        d
    };
    let ok = graph
        .authorize_write(
            &ctx("alice", "planner", 10),
            draft(Some(Scope::User)),
            &system,
        )
        .unwrap();
    assert_eq!(ok.provenance.user, u("alice"));
    assert_eq!(
        ok.provenance.created_at,
        t(10),
        "record time comes from the clock"
    );
    assert!(
        ok.provenance.agents.contains(&a("planner")),
        "the writer is among the agents"
    );

    let refused: Vec<(Context, Draft, &str)> = vec![
        (
            ctx("bob", "planner", 10),
            draft(Some(Scope::User)),
            "user may not invoke the agent",
        ),
        (
            ctx("alice", "planner", 10),
            draft(Some(Scope::Group(g("crew-b")))),
            "not a member of the group",
        ),
        (
            ctx("alice", "planner", 10),
            draft(Some(Scope::Global)),
            "not a global writer",
        ),
        (
            ctx("alice", "planner", 10),
            {
                let mut d = draft(Some(Scope::User));
                d.resources.insert(r("repo"));
                d
            },
            "resource the agent may not use",
        ),
        (
            ctx("alice", "planner", 10),
            {
                let mut d = draft(Some(Scope::Agent));
                d.agents.insert(a("outsider"));
                d
            },
            "a co-author the user may not invoke",
        ),
    ];
    for (c, d, why) in refused {
        let err = graph.authorize_write(&c, d, &system).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Forbidden, "{why}: {err}");
    }
    assert!(
        graph
            .authorize_write(
                &ctx("alice", "coder", 10),
                draft(Some(Scope::Global)),
                &system
            )
            .is_ok()
    );
    // A co-author the user may invoke is fine.
    let mut both = draft(Some(Scope::Agent));
    both.agents.insert(a("coder"));
    assert!(
        graph
            .authorize_write(&ctx("alice", "planner", 10), both, &system)
            .is_ok()
    );
    assert!(
        graph
            .authorize_write(
                &ctx("alice", "planner", 10),
                draft(Some(Scope::Group(g("dept-y")))),
                &system
            )
            .is_ok()
    );
}

#[test]
fn default_scope_by_kind() {
    let mut graph = world();
    let system = SystemPolicy::default();
    let write = |graph: &AccessGraph, agent: &str, kind: Kind, at: i64| {
        graph.authorize_write(
            &ctx("alice", agent, at),
            Draft::new("n", Granularity::Fact, kind),
            &system,
        )
    };
    assert_eq!(
        write(&graph, "planner", Kind::Observation, 10)
            .unwrap()
            .scope,
        Scope::Group(g("crew-a"))
    );
    assert_eq!(
        write(&graph, "planner", Kind::Trace, 10).unwrap().scope,
        Scope::Agent
    );
    // No crew: user scope.
    graph.apply(grant(11, invoke("alice", "outsider"))).unwrap();
    assert_eq!(
        write(&graph, "outsider", Kind::Observation, 11)
            .unwrap()
            .scope,
        Scope::User
    );
    // Two crews: the writer must say which.
    graph.apply(grant(12, member("planner", "crew-b"))).unwrap();
    let err = write(&graph, "planner", Kind::Observation, 12).unwrap_err();
    assert!(
        matches!(err, AccessError::AmbiguousScope { crews: 2, .. }),
        "{err}"
    );
    assert_eq!(
        write(&graph, "planner", Kind::Trace, 12).unwrap().scope,
        Scope::Agent
    );
}

#[test]
fn derived_fragments_keep_the_user_and_narrowest_scope() {
    let graph = world();
    let system = SystemPolicy::default();
    let mut p1 = fragment("alice", Scope::Group(g("crew-a")), &["planner"], &["wiki"]);
    p1.id = FragmentId(1);
    let mut p2 = fragment("alice", Scope::User, &["planner"], &["wiki"]);
    p2.id = FragmentId(2);
    let draft = Draft::new("summary", Granularity::Episode, Kind::Observation);
    // A crew's fragment and a user's share only the agents both reach: the derived one is
    // private to its agents, all of them in the crew.
    let derived = graph
        .authorize_derived(
            &ctx("alice", "planner", 10),
            &[&p1, &p2],
            draft.clone(),
            &system,
        )
        .unwrap();
    assert_eq!(derived.scope, Scope::Agent);
    assert_eq!(derived.provenance.user, u("alice"));
    assert_eq!(derived.provenance.agents, BTreeSet::from([a("planner")]));
    assert_eq!(derived.provenance.resources, BTreeSet::from([r("wiki")]));
    assert_eq!(
        derived.provenance.source.parents,
        vec![FragmentId(1), FragmentId(2)]
    );
    // With an agent outside the crew among its authors it would reach that agent, which
    // cannot read the crew's fragment: refused, as is asking for User.
    let mut coders = fragment("alice", Scope::User, &["coder"], &["wiki"]);
    coders.id = FragmentId(6);
    let err = graph
        .authorize_derived(
            &ctx("alice", "planner", 10),
            &[&p1, &coders],
            draft.clone(),
            &system,
        )
        .unwrap_err();
    assert!(matches!(err, AccessError::Widening { .. }), "{err}");
    let mut as_user = draft.clone();
    as_user.scope = Some(Scope::User);
    let err = graph
        .authorize_derived(&ctx("alice", "planner", 10), &[&p1], as_user, &system)
        .unwrap_err();
    assert!(matches!(err, AccessError::Widening { .. }), "{err}");

    // Asking for a wider scope than the parents' is refused.
    let mut wider = draft.clone();
    wider.scope = Some(Scope::Global);
    let err = graph
        .authorize_derived(&ctx("alice", "planner", 10), &[&p1, &p2], wider, &system)
        .unwrap_err();
    assert!(matches!(err, AccessError::Widening { .. }), "{err}");

    // Parents of different users cannot be combined.
    let mut other = fragment("bob", Scope::Global, &["coder"], &[]);
    other.id = FragmentId(3);
    let err = graph
        .authorize_derived(
            &ctx("alice", "coder", 10),
            &[&p2, &other],
            draft.clone(),
            &system,
        )
        .unwrap_err();
    assert!(matches!(err, AccessError::MixedUsers { .. }), "{err}");

    // A parent the caller cannot read cannot be derived from.
    let mut private = fragment("alice", Scope::Agent, &["coder"], &[]);
    private.id = FragmentId(4);
    let err = graph
        .authorize_derived(
            &ctx("alice", "planner", 10),
            &[&private],
            draft.clone(),
            &system,
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");

    // A private trace combined with another agent's knowledge would become readable by that agent.
    let mut trace = fragment("alice", Scope::Agent, &["planner"], &[]);
    trace.id = FragmentId(5);
    let err = graph
        .authorize_derived(
            &ctx("alice", "planner", 10),
            &[&trace, &coders],
            draft.clone(),
            &system,
        )
        .unwrap_err();
    assert!(matches!(err, AccessError::Widening { .. }), "{err}");
    // …but deriving from one's own private traces is fine and stays private.
    let own = graph
        .authorize_derived(&ctx("alice", "planner", 10), &[&trace], draft, &system)
        .unwrap();
    assert_eq!(own.scope, Scope::Agent);
}

#[test]
fn narrowest_scope_order() {
    assert_eq!(
        narrowest([Scope::Global, Scope::Group(g("crew-a"))]),
        Some(Scope::Group(g("crew-a")))
    );
    assert_eq!(
        narrowest([Scope::Group(g("crew-a")), Scope::Group(g("crew-b"))]),
        Some(Scope::Agent)
    );
    assert_eq!(
        narrowest([Scope::User, Scope::Group(g("crew-a"))]),
        Some(Scope::Agent)
    );
    assert_eq!(
        narrowest([Scope::Group(g("crew-a")), Scope::Global]),
        Some(Scope::Group(g("crew-a")))
    );
    assert!(within(Scope::Agent, Scope::Group(g("crew-a"))));
    assert!(!within(Scope::User, Scope::Group(g("crew-a"))));
    assert!(!within(Scope::Group(g("crew-a")), Scope::User));
    assert_eq!(
        narrowest([Scope::User, Scope::Agent, Scope::Global]),
        Some(Scope::Agent)
    );
    assert_eq!(narrowest([]), None);
}
