//! Explanations of the read rule: every condition of DESIGN section 3 evaluated for
//! one context and one fragment, and the one that decides.
//!
//! [`AccessGraph::explain`] answers the same question as
//! [`AccessGraph::can_read`] (a test holds them equal) but keeps each condition's
//! outcome with the sets it was decided on, for administrators and the `explain`
//! command.

use std::collections::BTreeSet;
use std::fmt;

use colmem_core::{Fragment, Scope};

use crate::graph::AccessGraph;
use crate::rule::Context;

/// One condition of the read rule, in the order the rule states them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Condition {
    /// The request itself: the user may invoke the serving agent now.
    Invoke,
    /// 1: the fragment exists now, is not deleted and is current.
    Version,
    /// 2: the fragment's scope admits the reader.
    Scope,
    /// 3: every agent that made the fragment is invocable by the user now.
    Agents,
    /// 4: every resource the fragment was drawn from is usable by the serving agent now.
    Resources,
}

impl Condition {
    /// Every condition, in the rule's order.
    pub const ALL: [Condition; 5] = [
        Condition::Invoke,
        Condition::Version,
        Condition::Scope,
        Condition::Agents,
        Condition::Resources,
    ];

    /// A short name: `invoke`, `version`, `scope`, `agents`, `resources`.
    pub fn as_str(self) -> &'static str {
        match self {
            Condition::Invoke => "invoke",
            Condition::Version => "version",
            Condition::Scope => "scope",
            Condition::Agents => "agents",
            Condition::Resources => "resources",
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One condition's outcome and the facts it was decided on.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Check {
    /// The condition.
    pub condition: Condition,
    /// Whether it holds.
    pub holds: bool,
    /// What was compared, in words.
    pub detail: String,
}

/// The read rule evaluated condition by condition.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Explanation {
    /// The context the rule was evaluated in.
    pub context: Context,
    /// Every condition, in the rule's order.
    pub checks: Vec<Check>,
}

impl Explanation {
    /// Whether the fragment is visible: every condition holds.
    pub fn visible(&self) -> bool {
        self.checks.iter().all(|c| c.holds)
    }

    /// The condition that decides: the first that fails in the rule's order, or
    /// `None` when all hold (then each of them is needed).
    pub fn deciding(&self) -> Option<&Check> {
        self.checks.iter().find(|c| !c.holds)
    }
}

fn names<T: fmt::Display>(set: impl IntoIterator<Item = T>) -> String {
    let items: Vec<String> = set.into_iter().map(|x| x.to_string()).collect();
    format!("{{{}}}", items.join(", "))
}

impl AccessGraph {
    /// Evaluates every condition of the read rule for `fragment` in `ctx`, naming
    /// the sets each was decided on. `explain(ctx, f).visible() == can_read(ctx, f)`.
    pub fn explain(&self, ctx: &Context, fragment: &Fragment) -> Explanation {
        let (u, a, t) = (ctx.user(), ctx.agent(), ctx.now());
        let invocable = self.invocable(u, t).unwrap_or_default();
        let usable = self.usable(a, t).unwrap_or_default();
        let groups = self.memberships(a, t).unwrap_or_default();
        let p = &fragment.provenance;
        let mut checks = Vec::with_capacity(Condition::ALL.len());

        let invoke = invocable.contains(&a);
        checks.push(Check {
            condition: Condition::Invoke,
            holds: invoke,
            detail: if invoke {
                format!("user {u} may invoke agent {a} at {t}")
            } else {
                format!(
                    "user {u} may not invoke agent {a} at {t}: A({u}) = {}",
                    names(&invocable)
                )
            },
        });

        let version = if p.created_at > t {
            Err(format!("it is created at {}, after {t}", p.created_at))
        } else if let Some(d) = fragment.deleted_at.filter(|d| *d <= t) {
            Err(format!("it was deleted at {d}"))
        } else if let Some(s) = fragment.superseded_at.filter(|s| *s <= t) {
            Err(match fragment.superseded_by {
                Some(by) => format!("it was superseded at {s} by fragment {by}"),
                None => format!("it was superseded at {s}"),
            })
        } else {
            Ok(format!("created at {}, current at {t}", p.created_at))
        };
        checks.push(match version {
            Ok(detail) => Check {
                condition: Condition::Version,
                holds: true,
                detail,
            },
            Err(detail) => Check {
                condition: Condition::Version,
                holds: false,
                detail,
            },
        });

        let (scope, detail) = match fragment.scope {
            Scope::Agent => {
                let holds = p.user == u && p.agents.contains(&a);
                let detail = if p.user != u {
                    format!(
                        "scope agent: the fragment belongs to user {}, not {u}",
                        p.user
                    )
                } else if !p.agents.contains(&a) {
                    format!(
                        "scope agent: private to agents {}, which do not include {a}",
                        names(&p.agents)
                    )
                } else {
                    format!("scope agent: user {u} and agent {a} made it")
                };
                (holds, detail)
            }
            Scope::User => {
                let holds = p.user == u;
                let detail = if holds {
                    format!("scope user: it belongs to user {u}")
                } else {
                    format!(
                        "scope user: the fragment belongs to user {}, not {u}",
                        p.user
                    )
                };
                (holds, detail)
            }
            Scope::Group(g) => {
                let holds = groups.contains(&g);
                let detail = if holds {
                    format!("scope group {g}: agent {a} is a member at {t}")
                } else {
                    format!(
                        "scope group {g}: agent {a} is not a member at {t}; G({a}) = {}",
                        names(&groups)
                    )
                };
                (holds, detail)
            }
            Scope::Global => (true, "scope global: admits every reader".to_owned()),
        };
        checks.push(Check {
            condition: Condition::Scope,
            holds: scope,
            detail,
        });

        let foreign_agents: BTreeSet<_> = p.agents.difference(&invocable).collect();
        checks.push(Check {
            condition: Condition::Agents,
            holds: foreign_agents.is_empty(),
            detail: if foreign_agents.is_empty() {
                format!("its agents {} are all invocable by {u}", names(&p.agents))
            } else {
                format!(
                    "it was made by agents {} that user {u} may not invoke at {t}",
                    names(foreign_agents)
                )
            },
        });

        let foreign_resources: BTreeSet<_> = p.resources.difference(&usable).collect();
        checks.push(Check {
            condition: Condition::Resources,
            holds: foreign_resources.is_empty(),
            detail: if foreign_resources.is_empty() {
                format!(
                    "its resources {} are all usable by agent {a}",
                    names(&p.resources)
                )
            } else {
                format!(
                    "it was drawn from resources {} that agent {a} may not use at {t}",
                    names(foreign_resources)
                )
            },
        });

        Explanation {
            context: *ctx,
            checks,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeSet;

    use colmem_core::{
        AccessChange, AccessEvent, AgentId, Edge, FragmentId, GroupId, GroupKind, Kind,
        LogicalClock, Member, Principal, Provenance, ResourceId, Source, Timestamp, UserId,
        Validity,
    };
    use colmem_core::{Granularity, Scope};

    use super::*;

    fn t(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn ev(at: i64, change: AccessChange) -> AccessEvent {
        AccessEvent { at: t(at), change }
    }

    struct World {
        graph: AccessGraph,
        u: UserId,
        other: UserId,
        a: AgentId,
        b: AgentId,
        r: ResourceId,
        g: GroupId,
    }

    fn world() -> World {
        let u = UserId::new("explain-u").unwrap();
        let other = UserId::new("explain-other").unwrap();
        let a = AgentId::new("explain-a").unwrap();
        let b = AgentId::new("explain-b").unwrap();
        let r = ResourceId::new("explain-r").unwrap();
        let g = GroupId::new("explain-g").unwrap();
        let register = |principal| AccessChange::Register { principal };
        let grant = |edge| AccessChange::Grant { edge, until: None };
        let events = [
            ev(0, register(Principal::User(u))),
            ev(0, register(Principal::User(other))),
            ev(0, register(Principal::Agent(a))),
            ev(0, register(Principal::Agent(b))),
            ev(0, register(Principal::Resource(r))),
            ev(0, register(Principal::Group(g, GroupKind::Crew))),
            ev(1, grant(Edge::Invoke { user: u, agent: a })),
            ev(1, grant(Edge::Invoke { user: u, agent: b })),
            ev(
                1,
                grant(Edge::Access {
                    agent: b,
                    resource: r,
                }),
            ),
            ev(
                1,
                grant(Edge::Member {
                    member: Member::Agent(b),
                    group: g,
                }),
            ),
            ev(
                50,
                AccessChange::Revoke {
                    edge: Edge::Invoke { user: u, agent: b },
                },
            ),
        ];
        World {
            graph: AccessGraph::from_events(events.iter()).unwrap(),
            u,
            other,
            a,
            b,
            r,
            g,
        }
    }

    fn fragment(
        user: UserId,
        agents: &[AgentId],
        resources: &[ResourceId],
        scope: Scope,
    ) -> Fragment {
        Fragment {
            id: FragmentId(7),
            key: None,
            content: "x".into(),
            granularity: Granularity::Fact,
            kind: Kind::Observation,
            scope,
            provenance: Provenance {
                created_at: t(10),
                user,
                agents: agents.iter().copied().collect::<BTreeSet<_>>(),
                resources: resources.iter().copied().collect::<BTreeSet<_>>(),
                source: Source::default(),
            },
            validity: Validity::always(),
            keywords: Vec::new(),
            superseded_at: None,
            superseded_by: None,
            deleted_at: None,
        }
    }

    fn ctx(user: UserId, agent: AgentId, at: i64) -> Context {
        Context::new(user, agent, &LogicalClock::new(t(at)))
    }

    /// `(context, fragment, expected deciding condition)`; `None` = visible.
    fn check(w: &World, c: Context, f: &Fragment, expected: Option<Condition>) {
        let explanation = w.graph.explain(&c, f);
        assert_eq!(
            explanation.visible(),
            w.graph.can_read(&c, f),
            "explain and can_read disagree: {explanation:?}"
        );
        assert_eq!(
            explanation.deciding().map(|c| c.condition),
            expected,
            "{explanation:?}"
        );
    }

    #[test]
    fn each_condition_can_decide_and_agrees_with_can_read() {
        let w = world();
        let own = fragment(w.u, &[w.a], &[], Scope::User);
        check(&w, ctx(w.u, w.a, 20), &own, None);
        check(&w, ctx(w.u, w.b, 60), &own, Some(Condition::Invoke));
        check(&w, ctx(w.u, w.a, 5), &own, Some(Condition::Version));
        let mut deleted = own.clone();
        deleted.deleted_at = Some(t(15));
        check(&w, ctx(w.u, w.a, 20), &deleted, Some(Condition::Version));
        let foreign = fragment(w.other, &[w.a], &[], Scope::User);
        check(&w, ctx(w.u, w.a, 20), &foreign, Some(Condition::Scope));
        let private_to_b = fragment(w.u, &[w.b], &[], Scope::Agent);
        check(&w, ctx(w.u, w.a, 20), &private_to_b, Some(Condition::Scope));
        let crew = fragment(w.u, &[w.a], &[], Scope::Group(w.g));
        check(&w, ctx(w.u, w.a, 20), &crew, Some(Condition::Scope));
        check(&w, ctx(w.u, w.b, 20), &crew, None);
        let by_b = fragment(w.u, &[w.b], &[], Scope::Global);
        check(&w, ctx(w.u, w.a, 20), &by_b, None);
        check(&w, ctx(w.u, w.a, 60), &by_b, Some(Condition::Agents));
        let from_r = fragment(w.u, &[w.a], &[w.r], Scope::Global);
        check(&w, ctx(w.u, w.a, 20), &from_r, Some(Condition::Resources));
        check(&w, ctx(w.u, w.b, 20), &from_r, None);
    }

    #[test]
    fn details_name_the_sets_that_decided() {
        let w = world();
        let by_b = fragment(w.u, &[w.b], &[], Scope::Global);
        let explanation = w.graph.explain(&ctx(w.u, w.a, 60), &by_b);
        let deciding = explanation.deciding().unwrap();
        assert!(deciding.detail.contains("explain-b"), "{}", deciding.detail);
        assert_eq!(explanation.checks.len(), Condition::ALL.len());
    }
}
