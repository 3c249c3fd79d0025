//! The read rule and the write rule (DESIGN section 3), decided by code against the
//! graph at request time.

use std::collections::BTreeSet;

use colmem_core::{
    AgentId, Clock, Denial, Draft, FilterParts, Forbidden, Fragment, GroupKind, IdSet, Kind,
    NewFragment, Provenance, ReadFilter, Scope, Timestamp, UserId,
};

use crate::error::{AccessError, Result};
use crate::graph::AccessGraph;

/// A request context `(u, a, t)`. `t` is read from the clock when the context is
/// made: a caller can never choose the time of its own read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Context {
    user: UserId,
    agent: AgentId,
    now: Timestamp,
}

impl Context {
    /// User `user` served by agent `agent`, now on `clock`.
    pub fn new(user: UserId, agent: AgentId, clock: &dyn Clock) -> Self {
        Context {
            user,
            agent,
            now: clock.now(),
        }
    }

    /// The user.
    pub fn user(&self) -> UserId {
        self.user
    }

    /// The serving agent.
    pub fn agent(&self) -> AgentId {
        self.agent
    }

    /// The moment of the request.
    pub fn now(&self) -> Timestamp {
        self.now
    }
}

/// System-level settings of the write rule.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemPolicy {
    /// Agents the system lets write `Global` fragments.
    #[serde(default)]
    pub global_writers: BTreeSet<AgentId>,
}

fn forbidden(denial: Denial) -> AccessError {
    AccessError::Forbidden(Forbidden { denial })
}

impl AccessGraph {
    /// Compiles the read rule for `ctx` into a filter, or refuses the request when the
    /// user may not invoke the agent now.
    pub fn compile(&self, ctx: &Context) -> std::result::Result<ReadFilter, Forbidden> {
        let not_invocable = || Forbidden {
            denial: Denial::NotInvocable {
                user: ctx.user,
                agent: ctx.agent,
            },
        };
        let agents = self
            .invocable(ctx.user, ctx.now)
            .map_err(|_| not_invocable())?;
        if !agents.contains(&ctx.agent) {
            return Err(not_invocable());
        }
        let resources = self
            .usable(ctx.agent, ctx.now)
            .map_err(|_| not_invocable())?;
        let groups = self
            .memberships(ctx.agent, ctx.now)
            .map_err(|_| not_invocable())?;
        Ok(ReadFilter::from_parts(FilterParts {
            user: ctx.user,
            agent: ctx.agent,
            now: ctx.now,
            agents: agents.into_iter().collect::<IdSet<_>>(),
            resources: resources.into_iter().collect(),
            groups: groups.into_iter().collect(),
        }))
    }

    /// Whether `fragment` is visible (as a current version) in context `ctx`: the read
    /// rule evaluated directly on the graph, one condition after another.
    pub fn can_read(&self, ctx: &Context, fragment: &Fragment) -> bool {
        let (u, a, t) = (ctx.user, ctx.agent, ctx.now);
        let Ok(invocable) = self.invocable(u, t) else {
            return false;
        };
        if !invocable.contains(&a) {
            return false;
        }
        let current = fragment.provenance.created_at <= t
            && fragment.deleted_at.is_none_or(|d| d > t)
            && fragment.superseded_at.is_none_or(|s| s > t);
        let scope = match fragment.scope {
            Scope::Agent => {
                fragment.provenance.user == u && fragment.provenance.agents.contains(&a)
            }
            Scope::User => fragment.provenance.user == u,
            Scope::Group(g) => self
                .memberships(a, t)
                .is_ok_and(|groups| groups.contains(&g)),
            Scope::Global => true,
        };
        let agents = fragment.provenance.agents.is_subset(&invocable);
        let resources = self
            .usable(a, t)
            .is_ok_and(|usable| fragment.provenance.resources.is_subset(&usable));
        current && scope && agents && resources
    }

    /// The scope a draft of `kind` gets when its writer names none: a user's
    /// conversation, and all drawn from it, stays with that user whatever crews the
    /// agent is in; an observation goes to the writer's crew if it is in exactly one (to
    /// `User` if in none); a trace stays with the writing agent.
    pub fn default_scope(&self, agent: AgentId, kind: Kind, t: Timestamp) -> Result<Scope> {
        match kind {
            Kind::Conversation => Ok(Scope::User),
            Kind::Trace => Ok(Scope::Agent),
            _ => {
                let crews: Vec<_> = self
                    .direct_groups(agent, t)?
                    .into_iter()
                    .filter(|g| self.group_kind(*g) == Some(GroupKind::Crew))
                    .collect();
                match crews.as_slice() {
                    [] => Ok(Scope::User),
                    [crew] => Ok(Scope::Group(*crew)),
                    many => Err(AccessError::AmbiguousScope {
                        agent,
                        crews: many.len(),
                    }),
                }
            }
        }
    }

    /// Applies the write rule to a draft: resolves its scope, fixes its provenance at
    /// `ctx`'s moment, and refuses what the context may not write.
    pub fn authorize_write(
        &self,
        ctx: &Context,
        draft: Draft,
        system: &SystemPolicy,
    ) -> Result<NewFragment> {
        let (u, a, t) = (ctx.user, ctx.agent, ctx.now);
        let invocable = self.invocable(u, t)?;
        if !invocable.contains(&a) {
            return Err(forbidden(Denial::NotInvocable { user: u, agent: a }));
        }
        let scope = match draft.scope {
            Some(scope) => scope,
            None => self.default_scope(a, draft.kind, t)?,
        };
        self.check_scope_write(a, scope, t, system)?;
        let usable = self.usable(a, t)?;
        if let Some(r) = draft.resources.iter().find(|r| !usable.contains(r)) {
            return Err(forbidden(Denial::Write(format!(
                "agent {a} may not use resource {r} now, so it cannot write knowledge drawn from it"
            ))));
        }
        let mut agents = draft.agents;
        for other in &agents {
            if !self.has_agent(*other) {
                return Err(AccessError::UnknownPrincipal {
                    kind: "agent",
                    name: other.as_str().to_owned(),
                });
            }
            // Provenance agents ⊆ A(u,t) (DESIGN section 2): naming another agent as an
            // author would let it read an agent-private fragment, or put words in its mouth.
            if !invocable.contains(other) {
                return Err(forbidden(Denial::Write(format!(
                    "agent {other} is named as an author but may not serve user {u} now"
                ))));
            }
        }
        agents.insert(a);
        Ok(NewFragment {
            key: draft.key,
            content: draft.content,
            granularity: draft.granularity,
            kind: draft.kind,
            scope,
            provenance: Provenance {
                created_at: t,
                user: u,
                agents,
                resources: draft.resources,
                source: draft.source,
            },
            validity: draft.validity,
            keywords: draft.keywords,
            embedding: None,
        })
    }

    /// Derives a fragment (an episode, a merged card, a superseding fact) from parents
    /// that `ctx` can read: same user, the union of their agents and resources (plus
    /// the deriving agent), and the narrowest of their scopes. A draft scope may
    /// narrow that further, never widen it.
    pub fn authorize_derived(
        &self,
        ctx: &Context,
        parents: &[&Fragment],
        mut draft: Draft,
        system: &SystemPolicy,
    ) -> Result<NewFragment> {
        let mut users = parents.iter().map(|p| p.provenance.user);
        if let Some(first) = users.next() {
            if let Some(second) = users.find(|u| *u != first) {
                return Err(AccessError::MixedUsers { first, second });
            }
            if first != ctx.user {
                return Err(AccessError::MixedUsers {
                    first,
                    second: ctx.user,
                });
            }
        }
        if parents.iter().any(|p| !self.can_read(ctx, p)) {
            return Err(forbidden(Denial::NotReadable));
        }
        let inherited = narrowest(parents.iter().map(|p| p.scope));
        let scope = match (inherited, draft.scope) {
            (None, requested) => requested,
            (Some(inherited), None) => Some(inherited),
            (Some(inherited), Some(requested)) => {
                if !within(requested, inherited) {
                    return Err(AccessError::Widening {
                        reason: format!(
                            "the parents' narrowest scope is {inherited}, and {requested} is not within it"
                        ),
                    });
                }
                Some(requested)
            }
        };
        for parent in parents {
            draft
                .agents
                .extend(parent.provenance.agents.iter().copied());
            draft
                .resources
                .extend(parent.provenance.resources.iter().copied());
            draft.source.parents.push(parent.id);
        }
        if scope == Some(Scope::Agent) {
            // Read through its agents alone: each must be one who may read every parent.
            let mut writers = draft.agents.clone();
            writers.insert(ctx.agent);
            for parent in parents {
                let readable_by_all = match parent.scope {
                    Scope::Agent => writers.is_subset(&parent.provenance.agents),
                    Scope::Group(g) => {
                        let mut all = true;
                        for w in &writers {
                            all &= self.memberships(*w, ctx.now)?.contains(&g);
                        }
                        all
                    }
                    Scope::User | Scope::Global => true,
                };
                if !readable_by_all {
                    return Err(AccessError::Widening {
                        reason: format!(
                            "fragment {} ({}) is not readable by every agent of the derived one, {:?}",
                            parent.id, parent.scope, writers
                        ),
                    });
                }
            }
        }
        draft.scope = scope;
        self.authorize_write(ctx, draft, system)
    }

    fn check_scope_write(
        &self,
        agent: AgentId,
        scope: Scope,
        t: Timestamp,
        system: &SystemPolicy,
    ) -> Result<()> {
        match scope {
            Scope::Agent | Scope::User => Ok(()),
            Scope::Group(g) => {
                if self.group_kind(g).is_none() {
                    return Err(AccessError::UnknownPrincipal {
                        kind: "group",
                        name: g.as_str().to_owned(),
                    });
                }
                if self.memberships(agent, t)?.contains(&g) {
                    Ok(())
                } else {
                    Err(forbidden(Denial::Write(format!(
                        "agent {agent} is not a member of group {g} now, so it cannot write to its scope"
                    ))))
                }
            }
            Scope::Global => {
                if system.global_writers.contains(&agent) {
                    Ok(())
                } else {
                    Err(forbidden(Denial::Write(format!(
                        "agent {agent} may not write global fragments; the system policy names who may"
                    ))))
                }
            }
        }
    }
}

/// The widest scope within each of several scopes of one user's fragments (their
/// meet); `None` for no scopes. `Global` holds every other; `Agent` is within every
/// other. `User` and `Group(g)` are not nested: a user's other agents outside `g` read
/// the one, other users' agents in `g` the other, so they (and two different groups)
/// share only `Agent`.
pub fn narrowest(scopes: impl IntoIterator<Item = Scope>) -> Option<Scope> {
    scopes.into_iter().reduce(meet)
}

fn meet(a: Scope, b: Scope) -> Scope {
    match (a, b) {
        (Scope::Global, x) | (x, Scope::Global) => x,
        (Scope::User, Scope::User) => Scope::User,
        (Scope::Group(g), Scope::Group(h)) if g == h => Scope::Group(g),
        _ => Scope::Agent,
    }
}

/// Whether a fragment of scope `inner` has no reader that one of scope `outer` (of the
/// same user and agents) lacks.
pub fn within(inner: Scope, outer: Scope) -> bool {
    meet(inner, outer) == inner
}
