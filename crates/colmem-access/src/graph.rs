//! The temporal access graph: users, agents, resources and groups on petgraph,
//! with edges valid over `[from, until)`, derived from an event log kept in the
//! order the events were recorded.
//!
//! An event takes effect at its date, which is never before the moment it is
//! recorded ([`AccessGraph::check_at`]): a grant may be scheduled for later, and a
//! revocation recorded meanwhile still takes effect now (and cancels the scheduled
//! grant if it is of the same edge). So an event changes nothing before its own
//! date, and the graph built from the whole log answers `A(u,t)`, `R(a,t)` and
//! `G(a,t)` for any past `t` exactly as a graph replayed from the events dated up
//! to `t` would; [`AccessGraph::replay_until`] does the replay for audits that want
//! it spelled out.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use colmem_core::{
    AccessChange, AccessEvent, AgentId, Edge, GroupId, GroupKind, Member, Principal, ResourceId,
    Timestamp, UserId, Validity,
};
use petgraph::Direction;
use petgraph::algo::has_path_connecting;
use petgraph::graph::{DiGraph, EdgeIndex, NodeIndex};
use petgraph::visit::{EdgeFiltered, EdgeRef};

use crate::error::{AccessError, Result};

/// A node: one principal.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Node {
    User(UserId),
    Agent(AgentId),
    Resource(ResourceId),
    Group(GroupId),
}

impl Node {
    fn describe(self) -> (&'static str, &'static str) {
        match self {
            Node::User(u) => ("user", u.as_str()),
            Node::Agent(a) => ("agent", a.as_str()),
            Node::Resource(r) => ("resource", r.as_str()),
            Node::Group(g) => ("group", g.as_str()),
        }
    }
}

/// Which relation an edge stands for.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Relation {
    Invoke,
    Access,
    Member,
}

#[derive(Clone, Copy, Debug)]
struct EdgeData {
    relation: Relation,
    valid: Validity,
}

/// The access graph with its event log. Cheap to query at any moment.
#[derive(Clone, Debug, Default)]
pub struct AccessGraph {
    graph: DiGraph<Node, EdgeData>,
    nodes: HashMap<Node, NodeIndex>,
    group_kinds: HashMap<GroupId, GroupKind>,
    log: Vec<AccessEvent>,
}

/// The graph as of one moment: who may invoke, use and belong to what.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct AccessSnapshot {
    /// The moment.
    pub at: Timestamp,
    /// `A(u,t)` for every user.
    pub invoke: BTreeMap<UserId, BTreeSet<AgentId>>,
    /// `R(a,t)` for every agent.
    pub access: BTreeMap<AgentId, BTreeSet<ResourceId>>,
    /// `G(a,t)` for every agent, transitively.
    pub groups: BTreeMap<AgentId, BTreeSet<GroupId>>,
}

impl AccessGraph {
    /// An empty graph.
    pub fn new() -> Self {
        AccessGraph::default()
    }

    /// Builds the graph from a log, applying each event in order.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a AccessEvent>) -> Result<Self> {
        let mut graph = AccessGraph::new();
        for event in events {
            graph.apply(*event)?;
        }
        Ok(graph)
    }

    /// The graph rebuilt from the events of this log dated at or before `t`.
    pub fn replay_until(&self, t: Timestamp) -> Result<Self> {
        AccessGraph::from_events_until(&self.log, t)
    }

    /// The graph built from the events of a log (in its order) dated at or before
    /// `t`: what held up to `t`. A revocation that finds nothing to revoke there
    /// cancelled a grant dated after `t`, which is left out too.
    pub fn from_events_until<'a>(
        events: impl IntoIterator<Item = &'a AccessEvent>,
        t: Timestamp,
    ) -> Result<Self> {
        let mut graph = AccessGraph::new();
        for event in events.into_iter().filter(|e| e.at <= t) {
            match graph.apply(*event) {
                Err(AccessError::NothingToRevoke { .. }) => {}
                other => other?,
            }
        }
        Ok(graph)
    }

    /// The event log, in order.
    pub fn log(&self) -> &[AccessEvent] {
        &self.log
    }

    /// Checks an event about to be recorded at `now`: it may not be dated before
    /// `now` (what could be read in the past stays as it was decided), and
    /// [`apply`](Self::apply) must accept it.
    pub fn check_at(&self, event: &AccessEvent, now: Timestamp) -> Result<()> {
        if event.at < now {
            return Err(AccessError::Backdated { at: event.at, now });
        }
        self.check(event)
    }

    /// Checks an event without applying it: `Ok` exactly when [`apply`](Self::apply)
    /// would accept it. Its date is not checked against the clock (a replayed log
    /// was checked when recorded): new events go through [`check_at`](Self::check_at).
    pub fn check(&self, event: &AccessEvent) -> Result<()> {
        match event.change {
            AccessChange::Register { principal } => {
                let node = principal_node(principal);
                if self.nodes.contains_key(&node) {
                    return Err(AccessError::Duplicate { principal });
                }
                Ok(())
            }
            AccessChange::Grant { edge, until } => {
                let valid = Validity::new(event.at, until)?;
                let (from, to, _) = self.endpoints(edge)?;
                if let Edge::Member {
                    member: Member::Group(member),
                    group,
                } = edge
                    && (member == group || self.reaches_via_membership(to, from, &valid))
                {
                    return Err(AccessError::Cycle { member, group });
                }
                Ok(())
            }
            AccessChange::Revoke { edge } => {
                let (from, to, relation) = self.endpoints(edge)?;
                if self
                    .edges_from(from, to, relation, event.at)
                    .next()
                    .is_none()
                {
                    return Err(AccessError::NothingToRevoke { edge, at: event.at });
                }
                Ok(())
            }
        }
    }

    /// The validity of a granted edge that already holds throughout `valid`, if one
    /// does: a grant of it for `valid` would change nothing.
    pub fn held_throughout(&self, edge: Edge, valid: &Validity) -> Result<Option<Validity>> {
        let (from, to, relation) = self.endpoints(edge)?;
        Ok(self
            .graph
            .edges_connecting(from, to)
            .map(|e| e.weight())
            .find(|w| w.relation == relation && w.valid.covers(valid))
            .map(|w| w.valid))
    }

    /// Appends an event to the log and applies it. A refused event changes nothing.
    pub fn apply(&mut self, event: AccessEvent) -> Result<()> {
        self.check(&event)?;
        match event.change {
            AccessChange::Register { principal } => {
                let node = principal_node(principal);
                let index = self.graph.add_node(node);
                self.nodes.insert(node, index);
                if let Principal::Group(g, kind) = principal {
                    self.group_kinds.insert(g, kind);
                }
            }
            AccessChange::Grant { edge, until } => {
                let valid = Validity::new(event.at, until)?;
                let (from, to, relation) = self.endpoints(edge)?;
                self.graph.add_edge(from, to, EdgeData { relation, valid });
            }
            AccessChange::Revoke { edge } => {
                let (from, to, relation) = self.endpoints(edge)?;
                // Closed at its date if it holds then; cancelled if scheduled after.
                let revoked: Vec<EdgeIndex> =
                    self.edges_from(from, to, relation, event.at).collect();
                let mut emptied = Vec::new();
                for index in revoked {
                    if let Some(data) = self.graph.edge_weight_mut(index) {
                        match data.valid.closed_at(event.at) {
                            Some(closed) => data.valid = closed,
                            None => emptied.push(index),
                        }
                    }
                }
                // Remove from the highest index down: removal moves the last edge into the gap.
                emptied.sort_unstable_by(|a, b| b.cmp(a));
                for index in emptied {
                    self.graph.remove_edge(index);
                }
            }
        }
        self.log.push(event);
        Ok(())
    }

    /// Whether a principal is registered.
    pub fn contains(&self, principal: Principal) -> bool {
        self.nodes.contains_key(&principal_node(principal))
    }

    /// Whether a user is registered.
    pub fn has_user(&self, user: UserId) -> bool {
        self.nodes.contains_key(&Node::User(user))
    }

    /// Whether an agent is registered.
    pub fn has_agent(&self, agent: AgentId) -> bool {
        self.nodes.contains_key(&Node::Agent(agent))
    }

    /// Whether a resource is registered.
    pub fn has_resource(&self, resource: ResourceId) -> bool {
        self.nodes.contains_key(&Node::Resource(resource))
    }

    /// The kind of a registered group.
    pub fn group_kind(&self, group: GroupId) -> Option<GroupKind> {
        self.group_kinds.get(&group).copied()
    }

    /// All registered users, by name.
    pub fn users(&self) -> BTreeSet<UserId> {
        self.nodes
            .keys()
            .filter_map(|n| match n {
                Node::User(u) => Some(*u),
                _ => None,
            })
            .collect()
    }

    /// All registered agents, by name.
    pub fn agents(&self) -> BTreeSet<AgentId> {
        self.nodes
            .keys()
            .filter_map(|n| match n {
                Node::Agent(a) => Some(*a),
                _ => None,
            })
            .collect()
    }

    /// All registered resources, by name.
    pub fn resources(&self) -> BTreeSet<ResourceId> {
        self.nodes
            .keys()
            .filter_map(|n| match n {
                Node::Resource(r) => Some(*r),
                _ => None,
            })
            .collect()
    }

    /// All registered groups, by name.
    pub fn groups(&self) -> BTreeSet<GroupId> {
        self.group_kinds.keys().copied().collect()
    }

    /// `A(u,t)`: the agents user `u` may invoke at `t`.
    pub fn invocable(&self, user: UserId, t: Timestamp) -> Result<BTreeSet<AgentId>> {
        let node = self.node(Node::User(user))?;
        Ok(self
            .targets(node, Relation::Invoke, t)
            .filter_map(|n| match n {
                Node::Agent(a) => Some(a),
                _ => None,
            })
            .collect())
    }

    /// `R(a,t)`: the resources agent `a` may use at `t`.
    pub fn usable(&self, agent: AgentId, t: Timestamp) -> Result<BTreeSet<ResourceId>> {
        let node = self.node(Node::Agent(agent))?;
        Ok(self
            .targets(node, Relation::Access, t)
            .filter_map(|n| match n {
                Node::Resource(r) => Some(r),
                _ => None,
            })
            .collect())
    }

    /// `G(a,t)`: the groups agent `a` belongs to at `t`, directly or through nested groups.
    pub fn memberships(&self, agent: AgentId, t: Timestamp) -> Result<BTreeSet<GroupId>> {
        let start = self.node(Node::Agent(agent))?;
        let mut seen = BTreeSet::new();
        let mut queue = VecDeque::from([start]);
        while let Some(node) = queue.pop_front() {
            for edge in self.graph.edges_directed(node, Direction::Outgoing) {
                let data = edge.weight();
                if data.relation == Relation::Member
                    && data.valid.contains(t)
                    && let Node::Group(g) = self.graph[edge.target()]
                    && seen.insert(g)
                {
                    queue.push_back(edge.target());
                }
            }
        }
        Ok(seen)
    }

    /// The groups agent `a` belongs to directly (not through nesting) at `t`.
    pub fn direct_groups(&self, agent: AgentId, t: Timestamp) -> Result<BTreeSet<GroupId>> {
        let node = self.node(Node::Agent(agent))?;
        Ok(self
            .targets(node, Relation::Member, t)
            .filter_map(|n| match n {
                Node::Group(g) => Some(g),
                _ => None,
            })
            .collect())
    }

    /// Whether `edge` is valid at `t`.
    pub fn is_granted(&self, edge: Edge, t: Timestamp) -> Result<bool> {
        let (from, to, relation) = self.endpoints(edge)?;
        Ok(self
            .graph
            .edges_connecting(from, to)
            .any(|e| e.weight().relation == relation && e.weight().valid.contains(t)))
    }

    /// The whole graph as of `t`, for replay and reports.
    pub fn snapshot(&self, t: Timestamp) -> AccessSnapshot {
        let mut snapshot = AccessSnapshot {
            at: t,
            ..AccessSnapshot::default()
        };
        for user in self.users() {
            snapshot
                .invoke
                .insert(user, self.invocable(user, t).unwrap_or_default());
        }
        for agent in self.agents() {
            snapshot
                .access
                .insert(agent, self.usable(agent, t).unwrap_or_default());
            snapshot
                .groups
                .insert(agent, self.memberships(agent, t).unwrap_or_default());
        }
        snapshot
    }

    fn node(&self, node: Node) -> Result<NodeIndex> {
        self.nodes.get(&node).copied().ok_or_else(|| {
            let (kind, name) = node.describe();
            AccessError::UnknownPrincipal {
                kind,
                name: name.to_owned(),
            }
        })
    }

    fn endpoints(&self, edge: Edge) -> Result<(NodeIndex, NodeIndex, Relation)> {
        let (from, to, relation) = match edge {
            Edge::Invoke { user, agent } => {
                (Node::User(user), Node::Agent(agent), Relation::Invoke)
            }
            Edge::Access { agent, resource } => (
                Node::Agent(agent),
                Node::Resource(resource),
                Relation::Access,
            ),
            Edge::Member { member, group } => {
                let from = match member {
                    Member::Agent(a) => Node::Agent(a),
                    Member::Group(g) => Node::Group(g),
                };
                (from, Node::Group(group), Relation::Member)
            }
        };
        Ok((self.node(from)?, self.node(to)?, relation))
    }

    fn targets(
        &self,
        node: NodeIndex,
        relation: Relation,
        t: Timestamp,
    ) -> impl Iterator<Item = Node> + '_ {
        self.graph
            .edges_directed(node, Direction::Outgoing)
            .filter(move |e| e.weight().relation == relation && e.weight().valid.contains(t))
            .map(|e| self.graph[e.target()])
    }

    /// The edges of a relation that hold at `at` or any time after.
    fn edges_from(
        &self,
        from: NodeIndex,
        to: NodeIndex,
        relation: Relation,
        at: Timestamp,
    ) -> impl Iterator<Item = EdgeIndex> + '_ {
        self.graph
            .edges_connecting(from, to)
            .filter(move |e| {
                e.weight().relation == relation && e.weight().valid.until().is_none_or(|u| u > at)
            })
            .map(|e| e.id())
    }

    /// Whether `from` reaches `to` through membership edges whose validity overlaps `valid`.
    /// Conservative: overlapping edges need not all hold at one instant, so a few
    /// memberships that could never form a cycle at the same moment are refused too.
    fn reaches_via_membership(&self, from: NodeIndex, to: NodeIndex, valid: &Validity) -> bool {
        let filtered = EdgeFiltered::from_fn(&self.graph, |e| {
            e.weight().relation == Relation::Member && e.weight().valid.overlaps(valid)
        });
        has_path_connecting(&filtered, from, to, None)
    }
}

fn principal_node(principal: Principal) -> Node {
    match principal {
        Principal::User(u) => Node::User(u),
        Principal::Agent(a) => Node::Agent(a),
        Principal::Resource(r) => Node::Resource(r),
        Principal::Group(g, _) => Node::Group(g),
    }
}
