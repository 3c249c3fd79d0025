//! An independent oracle for the loop: re-derives, from the raw access events, whether each
//! logged tool call, memory read, write and promotion was allowed at its moment.
//!
//! It shares no code with `colmem-access`: it keeps its own table of edge intervals built
//! from the event list in the order it was recorded (a grant opens `[at, until)`; a
//! revocation ends, from its date on, every grant of the edge recorded before it, so it
//! also cancels one scheduled to start later), its own transitive group walk, and its own reading of the four conditions
//! of the read rule (DESIGN section 3). Only the vocabulary types of `colmem-core` are shared.

use std::collections::{BTreeSet, HashMap};

use colmem_core::{
    AccessChange, AccessEvent, AgentId, Edge, Fragment, FragmentId, GroupId, Member, ResourceId,
    Scope, Timestamp, UserId,
};
use serde::Serialize;

use crate::event::Event;

/// One disallowed action found by the checker.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct Violation {
    /// When it happened.
    pub at: Timestamp,
    /// The user served.
    pub user: UserId,
    /// The acting agent.
    pub agent: AgentId,
    /// What was not allowed, and why.
    pub reason: String,
}

/// What the checker found.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct CheckReport {
    /// Tool calls checked.
    pub tool_calls: usize,
    /// Memory reads checked.
    pub reads: usize,
    /// Fragment ids returned by those reads, checked one by one.
    pub returned: usize,
    /// Writes and promotions checked.
    pub writes: usize,
    /// Everything that was not allowed at its moment.
    pub violations: Vec<Violation>,
}

/// Half-open `[from, until)`.
#[derive(Clone, Copy, Debug)]
struct Span {
    from: Timestamp,
    until: Option<Timestamp>,
}

impl Span {
    fn holds(&self, t: Timestamp) -> bool {
        self.from <= t && self.until.is_none_or(|u| t < u)
    }
}

/// The permission oracle, built from the raw access event list.
#[derive(Clone, Debug, Default)]
pub struct Checker {
    spans: HashMap<Edge, Vec<Span>>,
    /// The agents the system lets write `Global` fragments (none unless given).
    global_writers: BTreeSet<AgentId>,
}

impl Checker {
    /// The agents the system lets write `Global` fragments: a Global write by any other
    /// agent is a violation.
    pub fn with_global_writers(mut self, writers: impl IntoIterator<Item = AgentId>) -> Self {
        self.global_writers = writers.into_iter().collect();
        self
    }

    /// Replays `events` (in log order) into edge intervals.
    pub fn new(events: &[AccessEvent]) -> Self {
        let mut spans: HashMap<Edge, Vec<Span>> = HashMap::new();
        for event in events {
            match event.change {
                AccessChange::Register { .. } => {}
                AccessChange::Grant { edge, until } => spans.entry(edge).or_default().push(Span {
                    from: event.at,
                    until,
                }),
                AccessChange::Revoke { edge } => {
                    let spans = spans.entry(edge).or_default();
                    // Nothing of a span scheduled to start at or after the revocation.
                    spans.retain(|span| span.from < event.at);
                    for span in spans {
                        if span.until.is_none_or(|until| until > event.at) {
                            span.until = Some(event.at);
                        }
                    }
                }
            }
        }
        Checker {
            spans,
            global_writers: BTreeSet::new(),
        }
    }

    fn holds(&self, edge: Edge, t: Timestamp) -> bool {
        self.spans
            .get(&edge)
            .is_some_and(|spans| spans.iter().any(|s| s.holds(t)))
    }

    fn may_invoke(&self, user: UserId, agent: AgentId, t: Timestamp) -> bool {
        self.holds(Edge::Invoke { user, agent }, t)
    }

    fn may_use(&self, agent: AgentId, resource: ResourceId, t: Timestamp) -> bool {
        self.holds(Edge::Access { agent, resource }, t)
    }

    /// Every group `agent` is in at `t`, directly or through nested groups.
    fn groups_of(&self, agent: AgentId, t: Timestamp) -> BTreeSet<GroupId> {
        let mut found = BTreeSet::new();
        let mut frontier: Vec<Member> = vec![Member::Agent(agent)];
        while let Some(member) = frontier.pop() {
            for (edge, spans) in &self.spans {
                if let Edge::Member { member: m, group } = *edge
                    && m == member
                    && spans.iter().any(|s| s.holds(t))
                    && found.insert(group)
                {
                    frontier.push(Member::Group(group));
                }
            }
        }
        found
    }

    /// Why `fragment` may not be read by `agent` serving `user` at `t`, or `None` if it may.
    fn read_refusal(
        &self,
        user: UserId,
        agent: AgentId,
        t: Timestamp,
        fragment: &Fragment,
    ) -> Option<String> {
        let p = &fragment.provenance;
        if p.created_at > t {
            return Some(format!("fragment {} did not exist yet", fragment.id));
        }
        if fragment.deleted_at.is_some_and(|d| d <= t) {
            return Some(format!("fragment {} was deleted", fragment.id));
        }
        if fragment.superseded_at.is_some_and(|s| s <= t) {
            return Some(format!("fragment {} was superseded", fragment.id));
        }
        let scope_ok = match fragment.scope {
            Scope::Agent => p.user == user && p.agents.contains(&agent),
            Scope::User => p.user == user,
            Scope::Group(g) => self.groups_of(agent, t).contains(&g),
            Scope::Global => true,
        };
        if !scope_ok {
            return Some(format!(
                "fragment {} has scope {} that excludes this reader",
                fragment.id, fragment.scope
            ));
        }
        if let Some(a) = p.agents.iter().find(|a| !self.may_invoke(user, **a, t)) {
            return Some(format!(
                "fragment {} was made by agent {a}, which the user may not invoke",
                fragment.id
            ));
        }
        if let Some(r) = p.resources.iter().find(|r| !self.may_use(agent, **r, t)) {
            return Some(format!(
                "fragment {} was drawn from resource {r}, which the reader may not use",
                fragment.id
            ));
        }
        None
    }

    /// Checks every event. `fragment` looks a fragment up by id (its provenance is immutable,
    /// and its record-time stamps say whether it was current at the read).
    pub fn check(
        &self,
        events: &[Event],
        fragment: &dyn Fn(FragmentId) -> Option<Fragment>,
    ) -> CheckReport {
        let mut report = CheckReport::default();
        let violation = |at, user, agent, reason: String| Violation {
            at,
            user,
            agent,
            reason,
        };
        let mut found = Vec::new();
        for event in events {
            match event {
                Event::ToolCall {
                    at,
                    user,
                    agent,
                    resource,
                } => {
                    report.tool_calls += 1;
                    if !self.may_invoke(*user, *agent, *at) {
                        found.push(violation(*at, *user, *agent, format!(
                            "called {resource} while serving a user who may not invoke the agent"
                        )));
                    } else if !self.may_use(*agent, *resource, *at) {
                        found.push(violation(
                            *at,
                            *user,
                            *agent,
                            format!("called {resource}, which the agent may not use"),
                        ));
                    }
                }
                Event::MemoryRead {
                    at,
                    user,
                    agent,
                    returned,
                } => {
                    report.reads += 1;
                    report.returned += returned.len();
                    if !self.may_invoke(*user, *agent, *at) {
                        found.push(violation(
                            *at,
                            *user,
                            *agent,
                            "read memory while serving a user who may not invoke the agent".into(),
                        ));
                        continue;
                    }
                    for id in returned {
                        let reason = match fragment(*id) {
                            None => Some(format!("fragment {id} does not exist")),
                            Some(f) => self.read_refusal(*user, *agent, *at, &f),
                        };
                        if let Some(reason) = reason {
                            found.push(violation(*at, *user, *agent, reason));
                        }
                    }
                }
                Event::MemoryWrite {
                    at,
                    user,
                    agent,
                    written,
                } => {
                    report.writes += 1;
                    self.check_write(*at, *user, *agent, written, fragment, None, &mut found);
                }
                Event::Promotion {
                    at,
                    user,
                    agent,
                    promoted,
                    group,
                    ..
                } => {
                    report.writes += 1;
                    self.check_write(
                        *at,
                        *user,
                        *agent,
                        std::slice::from_ref(promoted),
                        fragment,
                        Some(*group),
                        &mut found,
                    );
                }
            }
        }
        report.violations = found;
        report
    }

    #[allow(clippy::too_many_arguments)]
    fn check_write(
        &self,
        at: Timestamp,
        user: UserId,
        agent: AgentId,
        written: &[FragmentId],
        fragment: &dyn Fn(FragmentId) -> Option<Fragment>,
        group: Option<GroupId>,
        found: &mut Vec<Violation>,
    ) {
        let mut push = |reason: String| {
            found.push(Violation {
                at,
                user,
                agent,
                reason,
            })
        };
        if !self.may_invoke(user, agent, at) {
            push("wrote memory while serving a user who may not invoke the agent".into());
            return;
        }
        if let Some(g) = group
            && !self.groups_of(agent, at).contains(&g)
        {
            push(format!("promoted to group {g}, which the agent is not in"));
        }
        for id in written {
            let Some(f) = fragment(*id) else {
                push(format!("wrote fragment {id}, which does not exist"));
                continue;
            };
            if f.provenance.user != user {
                push(format!(
                    "wrote fragment {id} for user {}, not the user served",
                    f.provenance.user
                ));
            }
            if !f.provenance.agents.contains(&agent) {
                push(format!(
                    "wrote fragment {id} whose provenance does not name the writing agent"
                ));
            }
            if f.scope == Scope::Global && !self.global_writers.contains(&agent) {
                push(format!(
                    "wrote fragment {id} as Global, which the agent may not write"
                ));
            }
            if let Some(r) = f
                .provenance
                .resources
                .iter()
                .find(|r| !self.may_use(agent, **r, at))
            {
                push(format!(
                    "wrote fragment {id} drawn from resource {r}, which the agent may not use"
                ));
            }
            if let Scope::Group(g) = f.scope
                && !self.groups_of(agent, at).contains(&g)
            {
                push(format!(
                    "wrote fragment {id} into group {g}, which the agent is not in"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeSet;

    use colmem_core::{
        AccessChange, AccessEvent, Edge, Fragment, FragmentId, GroupId, Member, Provenance, Source,
        Validity,
    };

    use super::*;

    fn t(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn grant(at: i64, edge: Edge, until: Option<i64>) -> AccessEvent {
        AccessEvent {
            at: t(at),
            change: AccessChange::Grant {
                edge,
                until: until.map(t),
            },
        }
    }

    fn fragment(id: u64, scope: Scope, user: UserId, agent: AgentId) -> Fragment {
        Fragment {
            id: FragmentId(id),
            key: None,
            content: String::new(),
            granularity: colmem_core::Granularity::Fact,
            kind: colmem_core::Kind::Observation,
            scope,
            provenance: Provenance {
                created_at: t(0),
                user,
                agents: BTreeSet::from([agent]),
                resources: BTreeSet::new(),
                source: Source::default(),
            },
            validity: Validity::always(),
            keywords: Vec::new(),
            superseded_at: None,
            superseded_by: None,
            deleted_at: None,
        }
    }

    #[test]
    fn intervals_groups_and_instants_are_replayed_independently() {
        let u = UserId::new("checker-u").unwrap();
        let a = AgentId::new("checker-a").unwrap();
        let b = AgentId::new("checker-b").unwrap();
        let crew = GroupId::new("checker-crew").unwrap();
        let team = GroupId::new("checker-team").unwrap();
        let events = vec![
            grant(0, Edge::Invoke { user: u, agent: a }, Some(100)),
            grant(0, Edge::Invoke { user: u, agent: b }, None),
            grant(
                0,
                Edge::Member {
                    member: Member::Agent(a),
                    group: crew,
                },
                None,
            ),
            grant(
                0,
                Edge::Member {
                    member: Member::Group(crew),
                    group: team,
                },
                None,
            ),
            AccessEvent {
                at: t(50),
                change: AccessChange::Revoke {
                    edge: Edge::Member {
                        member: Member::Group(crew),
                        group: team,
                    },
                },
            },
        ];
        let checker = Checker::new(&events);
        assert!(checker.may_invoke(u, a, t(99)));
        assert!(
            !checker.may_invoke(u, a, t(100)),
            "the grant's end is exclusive"
        );
        assert_eq!(checker.groups_of(a, t(10)), BTreeSet::from([crew, team]));
        assert_eq!(
            checker.groups_of(a, t(50)),
            BTreeSet::from([crew]),
            "revoked at that instant"
        );
        let team_note = fragment(1, Scope::Group(team), u, b);
        let read = |at: i64| Event::MemoryRead {
            at: t(at),
            user: u,
            agent: a,
            returned: vec![FragmentId(1)],
        };
        let lookup = |id: FragmentId| (id == FragmentId(1)).then(|| team_note.clone());
        assert!(checker.check(&[read(10)], &lookup).violations.is_empty());
        let late = checker.check(&[read(60), read(120)], &lookup);
        assert_eq!(late.reads, 2);
        assert_eq!(late.violations.len(), 2, "{:?}", late.violations);
        assert!(late.violations[0].reason.contains("scope"));
        assert!(late.violations[1].reason.contains("may not invoke"));
    }

    #[test]
    fn a_revocation_cancels_a_grant_scheduled_after_it() {
        let u = UserId::new("checker-u").unwrap();
        let a = AgentId::new("checker-a").unwrap();
        let b = AgentId::new("checker-b").unwrap();
        let revoke = |at: i64, edge| AccessEvent {
            at: t(at),
            change: AccessChange::Revoke { edge },
        };
        let events = vec![
            // Scheduled for 100, cancelled by a revocation recorded later, dated 20.
            grant(100, Edge::Invoke { user: u, agent: a }, None),
            revoke(20, Edge::Invoke { user: u, agent: a }),
            // Live from 0, its end scheduled for 300.
            grant(0, Edge::Invoke { user: u, agent: b }, None),
            revoke(300, Edge::Invoke { user: u, agent: b }),
        ];
        let checker = Checker::new(&events);
        assert!(!checker.may_invoke(u, a, t(150)), "cancelled");
        assert!(checker.may_invoke(u, b, t(299)));
        assert!(!checker.may_invoke(u, b, t(300)), "ended as scheduled");
    }

    #[test]
    fn a_write_for_another_user_without_its_agent_or_into_global_is_found() {
        let u = UserId::new("checker-u").unwrap();
        let v = UserId::new("checker-v").unwrap();
        let a = AgentId::new("checker-a").unwrap();
        let b = AgentId::new("checker-b").unwrap();
        let events = vec![grant(0, Edge::Invoke { user: u, agent: a }, None)];
        let written = [
            fragment(1, Scope::User, u, a),
            fragment(2, Scope::User, v, a),
            fragment(3, Scope::User, u, b),
            fragment(4, Scope::Global, u, a),
        ];
        let lookup = |id: FragmentId| written.iter().find(|f| f.id == id).cloned();
        let write = |id: u64| Event::MemoryWrite {
            at: t(10),
            user: u,
            agent: a,
            written: vec![FragmentId(id)],
        };
        let checker = Checker::new(&events);
        let report = checker.check(&[write(1), write(2), write(3), write(4)], &lookup);
        let reasons: Vec<&str> = report
            .violations
            .iter()
            .map(|v| v.reason.as_str())
            .collect();
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        assert!(reasons[0].contains("not the user served"));
        assert!(reasons[1].contains("does not name the writing agent"));
        assert!(reasons[2].contains("Global"));
        // A global writer may write Global.
        let checker = Checker::new(&events).with_global_writers([a]);
        assert!(checker.check(&[write(4)], &lookup).violations.is_empty());
    }
}
