//! Access-graph events: the ordered log that the access graph is derived from.
//!
//! The types live here, not in `colmem-access`, so the store can persist the log
//! without depending on the access crate.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::id::{AgentId, GroupId, ResourceId, UserId};
use crate::time::Timestamp;

/// The kind of a group, from the smallest unit to the whole organisation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupKind {
    /// A small working unit of agents; observations are shared with the crew by default.
    Crew,
    /// A team of crews.
    Team,
    /// A department of teams.
    Department,
    /// The whole organisation.
    Org,
}

/// A principal to register in the graph.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type", content = "id")]
pub enum Principal {
    /// A user.
    User(UserId),
    /// An agent.
    Agent(AgentId),
    /// A resource.
    Resource(ResourceId),
    /// A group of the given kind.
    Group(GroupId, GroupKind),
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Principal::User(u) => write!(f, "user {u}"),
            Principal::Agent(a) => write!(f, "agent {a}"),
            Principal::Resource(r) => write!(f, "resource {r}"),
            Principal::Group(g, kind) => write!(f, "group {g} ({kind:?})"),
        }
    }
}

/// What may be a member of a group.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type", content = "id")]
pub enum Member {
    /// An agent.
    Agent(AgentId),
    /// A nested group.
    Group(GroupId),
}

/// An edge of the access graph.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "edge")]
pub enum Edge {
    /// `invoke(user, agent)`: the user may be served by the agent.
    Invoke {
        /// The user.
        user: UserId,
        /// The agent.
        agent: AgentId,
    },
    /// `access(agent, resource)`: the agent may use the resource.
    Access {
        /// The agent.
        agent: AgentId,
        /// The resource.
        resource: ResourceId,
    },
    /// `member(agent|group, group)`.
    Member {
        /// The member.
        member: Member,
        /// The containing group.
        group: GroupId,
    },
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Edge::Invoke { user, agent } => write!(f, "invoke({user}, {agent})"),
            Edge::Access { agent, resource } => write!(f, "access({agent}, {resource})"),
            Edge::Member {
                member: Member::Agent(a),
                group,
            } => write!(f, "member({a}, {group})"),
            Edge::Member {
                member: Member::Group(g),
                group,
            } => write!(f, "member({g}, {group})"),
        }
    }
}

/// A change to the access graph.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum AccessChange {
    /// Adds a principal.
    Register {
        /// The principal.
        principal: Principal,
    },
    /// Grants an edge over `[event.at, until)`.
    Grant {
        /// The edge.
        edge: Edge,
        /// The exclusive end, if the grant expires.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        until: Option<Timestamp>,
    },
    /// Revokes an edge from `event.at` on.
    Revoke {
        /// The edge.
        edge: Edge,
    },
}

/// One entry of the access-graph event log, kept in the order events are recorded.
/// An event takes effect at `at`, which is never before the moment it was recorded
/// (history is not rewritten); a grant or revocation dated in the future takes
/// effect when that moment comes.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct AccessEvent {
    /// When the change takes effect.
    pub at: Timestamp,
    /// The change.
    #[serde(flatten)]
    pub change: AccessChange,
}
