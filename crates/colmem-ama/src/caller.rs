//! The request context every pipeline call runs in: `(user, agent, now)` checked against
//! the access graph, with its read filter compiled once.

use colmem_access::{AccessGraph, Context, Part, SystemPolicy, WritePolicySet};
use colmem_core::{
    AgentId, Draft, Forbidden, Fragment, NewFragment, ReadFilter, Scope, Timestamp, UserId,
};

use crate::error::{Error, Result};

/// A request that passed the access check: the agent may serve the user now.
///
/// There is no other way to reach the pipeline, so no read or write runs without a
/// session context, and the read filter is compiled from the graph at the store's now.
#[derive(Debug)]
pub struct Caller<'a> {
    graph: &'a AccessGraph,
    system: &'a SystemPolicy,
    context: Context,
    filter: ReadFilter,
    /// The write policies every fragment written passes through, with the users
    /// anonymisation replaces; none unless given.
    policies: Option<(&'a WritePolicySet, Vec<UserId>)>,
}

impl<'a> Caller<'a> {
    /// Checks `context` against `graph` and compiles its read filter; *forbidden* unless
    /// the agent may serve the user at the context's moment.
    pub fn new(
        graph: &'a AccessGraph,
        system: &'a SystemPolicy,
        context: Context,
    ) -> std::result::Result<Self, Forbidden> {
        let filter = graph.compile(&context)?;
        Ok(Caller {
            graph,
            system,
            context,
            filter,
            policies: None,
        })
    }

    /// Writes through `policies` (DESIGN section 4: constructor → write policy → write
    /// rule): a fragment shared beyond its user (a group's, or global) is written as the
    /// policy's shared part, any other as its private part, each transformed (mandatory
    /// redactions always). A shared fragment whose shared part is blocked or disabled is
    /// written as the private part, private to its agents; one whose private part is
    /// too is refused. `known_users` are the ids anonymisation replaces.
    pub fn with_write_policies(
        mut self,
        policies: &'a WritePolicySet,
        known_users: Vec<UserId>,
    ) -> Self {
        self.policies = Some((policies, known_users));
        self
    }

    /// What this caller may see.
    pub fn filter(&self) -> &ReadFilter {
        &self.filter
    }

    /// The request context.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The user.
    pub fn user(&self) -> UserId {
        self.context.user()
    }

    /// The serving agent.
    pub fn agent(&self) -> AgentId {
        self.context.agent()
    }

    /// The request's moment on the store's clock.
    pub fn now(&self) -> Timestamp {
        self.context.now()
    }

    /// The write rule for a new fragment, then the write policies.
    pub fn authorize(&self, draft: Draft) -> Result<NewFragment> {
        let fragment = self
            .graph
            .authorize_write(&self.context, draft, self.system)?;
        self.through_policies(fragment)
    }

    /// The write rule for a fragment derived from readable parents, then the write
    /// policies.
    pub fn authorize_derived(&self, parents: &[&Fragment], draft: Draft) -> Result<NewFragment> {
        let fragment = self
            .graph
            .authorize_derived(&self.context, parents, draft, self.system)?;
        self.through_policies(fragment)
    }

    /// See [`Caller::with_write_policies`].
    fn through_policies(&self, mut fragment: NewFragment) -> Result<NewFragment> {
        let Some((policies, known_users)) = &self.policies else {
            return Ok(fragment);
        };
        let split = policies.split(self.user(), self.agent(), &fragment.content, known_users)?;
        let shared = matches!(fragment.scope, Scope::Group(_) | Scope::Global);
        let text = match (shared, split.shared, split.private) {
            (true, Part::Kept(text), _) => text,
            (_, _, Part::Kept(text)) => {
                if shared {
                    // Not to be shared: kept by its agents alone (within any scope).
                    fragment.scope = Scope::Agent;
                }
                text
            }
            (_, _, Part::Blocked { pattern }) => {
                return Err(Error::InvalidInput(format!(
                    "the write policy blocks this content (pattern {pattern:?})"
                )));
            }
            (_, _, Part::Disabled) => {
                return Err(Error::InvalidInput(
                    "the write policy writes no part this content could be kept in".to_owned(),
                ));
            }
        };
        if text != fragment.content {
            // A keyword the transformation took out of the text must not keep it.
            let lower = text.to_lowercase();
            fragment
                .keywords
                .retain(|k| lower.contains(&k.to_lowercase()));
            fragment.content = text;
        }
        Ok(fragment)
    }

    /// Whether this caller may read `fragment` now.
    pub fn can_read(&self, fragment: &Fragment) -> bool {
        self.filter.admits(&fragment.meta())
    }

    /// Whether this caller may read `fragment` as a past version: the read rule of now,
    /// with superseded versions admitted (a history read, DESIGN section 3).
    pub fn can_read_history(&self, fragment: &Fragment) -> bool {
        self.filter
            .clone()
            .with_view(colmem_core::View::AllVersions)
            .admits(&fragment.meta())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use colmem_access::{WritePolicies, WritePolicy};
    use colmem_core::{
        AccessChange, AccessEvent, Edge, Granularity, GroupId, GroupKind, Kind, LogicalClock,
        Member, Principal,
    };

    use super::*;

    /// Dana may invoke `helper`, a member of the crew `crew`.
    fn crew_world() -> (AccessGraph, LogicalClock, UserId, AgentId) {
        let clock = LogicalClock::new(Timestamp::from_millis(1_000));
        let (user, agent) = (
            UserId::new("dana").unwrap(),
            AgentId::new("helper").unwrap(),
        );
        let crew = GroupId::new("crew").unwrap();
        let mut graph = AccessGraph::new();
        for change in [
            AccessChange::Register {
                principal: Principal::User(user),
            },
            AccessChange::Register {
                principal: Principal::Agent(agent),
            },
            AccessChange::Register {
                principal: Principal::Group(crew, GroupKind::Crew),
            },
            AccessChange::Grant {
                edge: Edge::Invoke { user, agent },
                until: None,
            },
            AccessChange::Grant {
                edge: Edge::Member {
                    member: Member::Agent(agent),
                    group: crew,
                },
                until: None,
            },
        ] {
            graph
                .apply(AccessEvent {
                    at: Timestamp::from_millis(1_000),
                    change,
                })
                .unwrap();
        }
        (graph, clock, user, agent)
    }

    #[test]
    fn a_shared_fragment_is_the_policys_shared_part_or_kept_by_its_agents() {
        let (graph, clock, user, agent) = crew_world();
        let system = SystemPolicy::default();
        let draft = || {
            Draft::new(
                "mail me at dana@example.com",
                Granularity::Fact,
                Kind::Observation,
            )
        };
        // The default policy shares with the crew, emails redacted.
        let defaults = WritePolicySet::new(WritePolicies::default()).unwrap();
        let caller = Caller::new(&graph, &system, Context::new(user, agent, &clock))
            .unwrap()
            .with_write_policies(&defaults, Vec::new());
        let shared = caller.authorize(draft()).unwrap();
        assert!(matches!(shared.scope, Scope::Group(_)));
        assert!(
            !shared.content.contains("dana@example.com"),
            "{}",
            shared.content
        );
        // A policy that shares nothing keeps it with its agents, untransformed.
        let mut private_only = WritePolicy::default();
        private_only.shared.enabled = false;
        let set = WritePolicySet::new(WritePolicies {
            system: private_only,
            ..WritePolicies::default()
        })
        .unwrap();
        let caller = Caller::new(&graph, &system, Context::new(user, agent, &clock))
            .unwrap()
            .with_write_policies(&set, Vec::new());
        let kept = caller.authorize(draft()).unwrap();
        assert_eq!(kept.scope, Scope::Agent);
        assert!(kept.content.contains("dana@example.com"));
    }
}
