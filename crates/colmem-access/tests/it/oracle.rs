//! The read rule against an independent oracle, over randomly evolving graphs.
//!
//! The oracle is written from DESIGN section 3 alone and shares no code with
//! `colmem-access`: it keeps the raw event log and decides every question by
//! scanning it (an edge holds at `t` if some grant of it started by `t`, has not
//! expired, and no revocation recorded after it and dated by `t` closed it).
//! Events may be dated after the moment they are recorded: a grant scheduled for
//! later, a revocation recorded before it takes effect.

use std::cell::RefCell;
use std::collections::BTreeSet;

use colmem_access::{AccessGraph, Context};
use colmem_core::{
    AccessChange, AccessEvent, AgentId, Edge, Fragment, FragmentId, Granularity, GroupId,
    GroupKind, Kind, LogicalClock, Member, Principal, Provenance, ResourceId, Scope, Source,
    Timestamp, UserId, Validity, View,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const USERS: usize = 4;
const AGENTS: usize = 5;
const RESOURCES: usize = 4;
const GROUPS: usize = 5;

fn user(i: usize) -> UserId {
    UserId::new(&format!("ou{i}")).unwrap()
}
fn agent(i: usize) -> AgentId {
    AgentId::new(&format!("oa{i}")).unwrap()
}
fn resource(i: usize) -> ResourceId {
    ResourceId::new(&format!("or{i}")).unwrap()
}
fn group(i: usize) -> GroupId {
    GroupId::new(&format!("og{i}")).unwrap()
}
fn t(ms: i64) -> Timestamp {
    Timestamp::from_millis(ms)
}

// ---------------------------------------------------------------- the oracle

struct Oracle {
    log: Vec<AccessEvent>,
}

impl Oracle {
    fn holds(&self, edge: Edge, at: Timestamp) -> bool {
        self.log.iter().enumerate().any(|(i, e)| match e.change {
            AccessChange::Grant {
                edge: granted,
                until,
            } if granted == edge => {
                let started = e.at <= at;
                let not_expired = match until {
                    None => true,
                    Some(u) => at < u,
                };
                let revoked = self.log[i + 1..].iter().any(|r| {
                    matches!(r.change, AccessChange::Revoke { edge: revoked } if revoked == edge)
                        && r.at <= at
                });
                started && not_expired && !revoked
            }
            _ => false,
        })
    }

    /// Whether a revocation dated `at` has something to end: a grant of the edge
    /// that, cut short by the revocations recorded after it, still holds at some
    /// moment from `at` on.
    fn revocable(&self, edge: Edge, at: Timestamp) -> bool {
        self.log.iter().enumerate().any(|(i, e)| match e.change {
            AccessChange::Grant {
                edge: granted,
                until,
            } if granted == edge => {
                let end = self.log[i + 1..]
                    .iter()
                    .filter(|r| matches!(r.change, AccessChange::Revoke { edge: revoked } if revoked == edge))
                    .map(|r| r.at)
                    .chain(until)
                    .min();
                end.is_none_or(|end| e.at.max(at) < end)
            }
            _ => false,
        })
    }

    fn a(&self, u: UserId, at: Timestamp) -> BTreeSet<AgentId> {
        (0..AGENTS)
            .map(agent)
            .filter(|&a| self.holds(Edge::Invoke { user: u, agent: a }, at))
            .collect()
    }

    fn r(&self, a: AgentId, at: Timestamp) -> BTreeSet<ResourceId> {
        (0..RESOURCES)
            .map(resource)
            .filter(|&r| {
                self.holds(
                    Edge::Access {
                        agent: a,
                        resource: r,
                    },
                    at,
                )
            })
            .collect()
    }

    /// G(a,t) and the deepest nesting level reached.
    fn g(&self, a: AgentId, at: Timestamp) -> (BTreeSet<GroupId>, usize) {
        let mut found: BTreeSet<GroupId> = (0..GROUPS)
            .map(group)
            .filter(|&g| {
                self.holds(
                    Edge::Member {
                        member: Member::Agent(a),
                        group: g,
                    },
                    at,
                )
            })
            .collect();
        let mut depth = usize::from(!found.is_empty());
        loop {
            let next: BTreeSet<GroupId> = (0..GROUPS)
                .map(group)
                .filter(|g| !found.contains(g))
                .filter(|&g| {
                    found.iter().any(|&inner| {
                        self.holds(
                            Edge::Member {
                                member: Member::Group(inner),
                                group: g,
                            },
                            at,
                        )
                    })
                })
                .collect();
            if next.is_empty() {
                return (found, depth);
            }
            depth += 1;
            found.extend(next);
        }
    }

    /// The four conditions of the read rule, in order, for a fragment under a view.
    fn conditions(
        &self,
        u: UserId,
        a: AgentId,
        now: Timestamp,
        f: &Fragment,
        view: View,
    ) -> [bool; 4] {
        let created = f.provenance.created_at;
        let alive = created <= now && f.deleted_at.is_none_or(|d| d > now);
        let version = match view {
            View::Current => f.superseded_at.is_none_or(|s| s > now),
            View::RecordAsOf(r) => {
                let r = r.min(now);
                created <= r && f.superseded_at.is_none_or(|s| s > r)
            }
            View::WorldAsOf(w) => {
                f.validity.from() <= w && f.validity.until().is_none_or(|until| w < until)
            }
            View::AllVersions => true,
        };
        let scope = match f.scope {
            Scope::Agent => f.provenance.user == u && f.provenance.agents.contains(&a),
            Scope::User => f.provenance.user == u,
            Scope::Group(g) => self.g(a, now).0.contains(&g),
            Scope::Global => true,
        };
        let invocable = self.a(u, now);
        let agents = f.provenance.agents.iter().all(|x| invocable.contains(x));
        let usable = self.r(a, now);
        let resources = f.provenance.resources.iter().all(|x| usable.contains(x));
        [alive && version, scope, agents, resources]
    }
}

// ---------------------------------------------------------------- generation

#[derive(Clone, Debug)]
struct Op {
    gap: i64,
    /// How far after the moment of recording the event is dated.
    ahead: Option<i64>,
    what: u8,
    x: usize,
    y: usize,
    until: Option<i64>,
}

#[derive(Clone, Debug)]
struct FragmentSpec {
    user: usize,
    scope: u8,
    scope_group: usize,
    agents: Vec<usize>,
    resources: Vec<usize>,
    created: i64,
    superseded: Option<i64>,
    deleted: Option<i64>,
    valid_from: i64,
    valid_len: Option<i64>,
}

#[derive(Clone, Debug)]
struct QuerySpec {
    user: usize,
    agent: usize,
    at: Option<i64>,
    revoke_pick: usize,
    view: u8,
    view_at: i64,
}

#[derive(Clone, Debug)]
struct Case {
    ops: Vec<Op>,
    fragments: Vec<FragmentSpec>,
    queries: Vec<QuerySpec>,
}

fn op() -> impl Strategy<Value = Op> {
    (
        prop_oneof![3 => Just(0i64), 5 => 1i64..4],
        0u8..10,
        0usize..8,
        0usize..8,
        prop::option::weighted(0.2, 1i64..12),
        prop::option::weighted(0.2, 1i64..15),
    )
        .prop_map(|(gap, what, x, y, until, ahead)| Op {
            gap,
            ahead,
            what,
            x,
            y,
            until,
        })
}

fn fragment_spec() -> impl Strategy<Value = FragmentSpec> {
    (
        (0..USERS, 0u8..4, 0..GROUPS),
        (
            prop::collection::vec(0..AGENTS, 1..3),
            prop::collection::vec(0..RESOURCES, 0..3),
        ),
        (
            0i64..50,
            prop::option::weighted(0.25, 0i64..60),
            prop::option::weighted(0.15, 0i64..60),
        ),
        (0i64..50, prop::option::weighted(0.5, 1i64..30)),
    )
        .prop_map(
            |(
                (user, scope, scope_group),
                (agents, resources),
                (created, superseded, deleted),
                (valid_from, valid_len),
            )| {
                FragmentSpec {
                    user,
                    scope,
                    scope_group,
                    agents,
                    resources,
                    created,
                    superseded,
                    deleted,
                    valid_from,
                    valid_len,
                }
            },
        )
}

fn query_spec() -> impl Strategy<Value = QuerySpec> {
    (
        0..USERS,
        0..AGENTS,
        prop::option::weighted(0.6, 0i64..60),
        0usize..64,
        0u8..8,
        0i64..60,
    )
        .prop_map(|(user, agent, at, revoke_pick, view, view_at)| QuerySpec {
            user,
            agent,
            at,
            revoke_pick,
            view,
            view_at,
        })
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(op(), 10..45),
        prop::collection::vec(fragment_spec(), 4..10),
        prop::collection::vec(query_spec(), 4..8),
    )
        .prop_map(|(ops, fragments, queries)| Case {
            ops,
            fragments,
            queries,
        })
}

fn registrations() -> Vec<AccessEvent> {
    let kinds = [
        GroupKind::Crew,
        GroupKind::Crew,
        GroupKind::Team,
        GroupKind::Department,
        GroupKind::Org,
    ];
    let mut principals: Vec<Principal> = Vec::new();
    principals.extend((0..USERS).map(|i| Principal::User(user(i))));
    principals.extend((0..AGENTS).map(|i| Principal::Agent(agent(i))));
    principals.extend((0..RESOURCES).map(|i| Principal::Resource(resource(i))));
    principals.extend((0..GROUPS).map(|i| Principal::Group(group(i), kinds[i])));
    principals
        .into_iter()
        .map(|principal| AccessEvent {
            at: t(0),
            change: AccessChange::Register { principal },
        })
        .collect()
}

/// Turns an op into an event. Group-in-group memberships only go from a lower to a
/// higher group number, so they never form a cycle and every grant is valid.
fn event(op: &Op, at: i64) -> AccessEvent {
    let edge = match op.what % 5 {
        0 | 1 => Edge::Invoke {
            user: user(op.x % USERS),
            agent: agent(op.y % AGENTS),
        },
        2 => Edge::Access {
            agent: agent(op.x % AGENTS),
            resource: resource(op.y % RESOURCES),
        },
        3 => Edge::Member {
            member: Member::Agent(agent(op.x % AGENTS)),
            group: group(op.y % GROUPS),
        },
        _ => {
            let (a, b) = (op.x % GROUPS, op.y % GROUPS);
            let (lo, hi) = if a < b {
                (a, b)
            } else if a > b {
                (b, a)
            } else {
                (a.min(GROUPS - 2), a.min(GROUPS - 2) + 1)
            };
            Edge::Member {
                member: Member::Group(group(lo)),
                group: group(hi),
            }
        }
    };
    let change = if op.what >= 6 {
        AccessChange::Revoke { edge }
    } else {
        AccessChange::Grant {
            edge,
            until: op.until.map(|d| t(at + d)),
        }
    };
    AccessEvent { at: t(at), change }
}

fn fragment(id: u64, spec: &FragmentSpec) -> Fragment {
    let scope = match spec.scope {
        0 => Scope::Agent,
        1 => Scope::User,
        2 => Scope::Group(group(spec.scope_group)),
        _ => Scope::Global,
    };
    Fragment {
        id: FragmentId(id),
        key: None,
        content: format!("fragment {id}"),
        granularity: Granularity::Fact,
        kind: Kind::Observation,
        scope,
        provenance: Provenance {
            created_at: t(spec.created),
            user: user(spec.user),
            agents: spec.agents.iter().map(|&i| agent(i)).collect(),
            resources: spec.resources.iter().map(|&i| resource(i)).collect(),
            source: Source::default(),
        },
        validity: Validity::new(
            t(spec.valid_from),
            spec.valid_len.map(|l| t(spec.valid_from + l)),
        )
        .unwrap(),
        keywords: Vec::new(),
        superseded_at: spec.superseded.map(|s| t(spec.created + s)),
        superseded_by: None,
        deleted_at: spec.deleted.map(|d| t(spec.created + d)),
    }
}

#[derive(Default, Debug)]
struct Coverage {
    deciding: [usize; 4],
    same_instant_revocations: usize,
    scheduled_revocations: usize,
    cancelled_grants: usize,
    max_depth: usize,
    visible: usize,
    forbidden: usize,
    cases: usize,
}

fn check(case: &Case, coverage: &RefCell<Coverage>) -> Result<(), TestCaseError> {
    let mut graph = AccessGraph::new();
    let mut oracle = Oracle { log: Vec::new() };
    for e in registrations() {
        graph.apply(e).unwrap();
        oracle.log.push(e);
    }
    let mut now = 0;
    let mut revocations = Vec::new();
    for op in &case.ops {
        now += op.gap;
        let e = event(op, now + op.ahead.unwrap_or(0));
        let oracle_accepts = match e.change {
            AccessChange::Revoke { edge } => oracle.revocable(edge, e.at),
            _ => true,
        };
        let accepted = graph.check_at(&e, t(now)).is_ok() && graph.apply(e).is_ok();
        prop_assert_eq!(accepted, oracle_accepts, "acceptance of {:?}", e);
        if accepted {
            if let AccessChange::Revoke { edge } = e.change {
                let mut cov = coverage.borrow_mut();
                cov.scheduled_revocations += usize::from(e.at > t(now));
                cov.cancelled_grants += usize::from(oracle.log.iter().any(|g| {
                    matches!(g.change, AccessChange::Grant { edge: granted, .. } if granted == edge)
                        && g.at > e.at
                }));
            }
            oracle.log.push(e);
            if let AccessChange::Revoke {
                edge: Edge::Invoke { user, agent },
            } = e.change
            {
                revocations.push((user, agent, e.at));
            }
        }
    }
    let fragments: Vec<Fragment> = case
        .fragments
        .iter()
        .enumerate()
        .map(|(i, spec)| fragment(i as u64 + 1, spec))
        .collect();
    let mut cov = coverage.borrow_mut();
    cov.cases += 1;
    for q in &case.queries {
        let (u, a, at) = match (q.at, revocations.is_empty()) {
            (None, false) => {
                // Read exactly at the instant an invoke edge was revoked.
                let (u, a, at) = revocations[q.revoke_pick % revocations.len()];
                (u, a, at)
            }
            _ => (user(q.user), agent(q.agent), t(q.at.unwrap_or(now))),
        };
        let clock = LogicalClock::new(at);
        let ctx = Context::new(u, a, &clock);
        let invocable = oracle.a(u, at);
        let allowed = invocable.contains(&a);
        if revocations.contains(&(u, a, at)) && !allowed {
            cov.same_instant_revocations += 1;
        }
        cov.max_depth = cov.max_depth.max(oracle.g(a, at).1);

        // Replaying the log up to `at` gives the same graph at `at`.
        let replayed = graph.replay_until(at).unwrap();
        prop_assert_eq!(replayed.snapshot(at), graph.snapshot(at));
        prop_assert_eq!(graph.invocable(u, at).unwrap(), invocable.clone());
        prop_assert_eq!(graph.usable(a, at).unwrap(), oracle.r(a, at));
        prop_assert_eq!(graph.memberships(a, at).unwrap(), oracle.g(a, at).0);

        let filter = graph.compile(&ctx);
        prop_assert_eq!(
            filter.is_ok(),
            allowed,
            "compile for ({}, {}, {})",
            u,
            a,
            at
        );
        if !allowed {
            cov.forbidden += 1;
        }
        let view = match q.view % 8 {
            0 => View::RecordAsOf(t(q.view_at)),
            1 => View::WorldAsOf(t(q.view_at)),
            2 => View::AllVersions,
            _ => View::Current,
        };
        for f in &fragments {
            let conditions = oracle.conditions(u, a, at, f, View::Current);
            let expected = allowed && conditions.iter().all(|&c| c);
            prop_assert_eq!(
                graph.can_read(&ctx, f),
                expected,
                "can_read {:?} for ({}, {}, {})",
                f,
                u,
                a,
                at
            );
            if let Ok(filter) = &filter {
                prop_assert_eq!(
                    filter.admits(&f.meta()),
                    expected,
                    "admits {:?} for ({}, {}, {})",
                    f,
                    u,
                    a,
                    at
                );
                let in_view = oracle.conditions(u, a, at, f, view).iter().all(|&c| c);
                prop_assert_eq!(
                    filter.clone().with_view(view).admits(&f.meta()),
                    in_view,
                    "view {:?}",
                    view
                );
            }
            if allowed {
                if expected {
                    cov.visible += 1;
                }
                let failing: Vec<usize> = (0..4).filter(|&i| !conditions[i]).collect();
                if let [only] = failing.as_slice() {
                    cov.deciding[*only] += 1;
                }
            }
        }
    }
    Ok(())
}

#[test]
fn read_rule_matches_the_oracle_on_evolving_graphs() {
    let coverage = RefCell::new(Coverage::default());
    let mut runner = TestRunner::new(Config {
        cases: 10_000,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&case(), |case| check(&case, &coverage));
    if let Err(e) = result {
        panic!("{e}");
    }
    let cov = coverage.into_inner();
    println!("oracle coverage: {cov:?}");
    assert!(cov.cases >= 10_000, "ran {} cases", cov.cases);
    for (i, n) in cov.deciding.iter().enumerate() {
        assert!(*n > 100, "condition {} decided only {n} cases", i + 1);
    }
    assert!(
        cov.same_instant_revocations > 100,
        "same-instant revocations: {}",
        cov.same_instant_revocations
    );
    assert!(
        cov.scheduled_revocations > 100 && cov.cancelled_grants > 100,
        "scheduled revocations {}, revocations of a grant scheduled after them {}",
        cov.scheduled_revocations,
        cov.cancelled_grants
    );
    assert!(
        cov.max_depth >= 3,
        "group nesting reached only {} levels",
        cov.max_depth
    );
    assert!(cov.visible > 1000 && cov.forbidden > 1000, "{cov:?}");
}
