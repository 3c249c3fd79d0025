//! Fragments: what agents remember, with the scope that says who may read them and
//! the provenance that says where they came from.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::id::{AgentId, FragmentId, GroupId, ResourceId, UserId};
use crate::time::{Timestamp, Validity};

/// Who may read a fragment, before conditions 3 and 4 of the read rule narrow it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The writing agent(s), serving that user only.
    Agent,
    /// That user, through any agent they may invoke.
    User,
    /// Agents that belong to group `g` (transitively) at read time.
    Group(GroupId),
    /// Everyone.
    Global,
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Agent => f.write_str("agent"),
            Scope::User => f.write_str("user"),
            Scope::Group(g) => write!(f, "group:{g}"),
            Scope::Global => f.write_str("global"),
        }
    }
}

/// Parses what [`Display`](fmt::Display) writes: `agent`, `user`, `global` or
/// `group:NAME`.
impl std::str::FromStr for Scope {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self, crate::Error> {
        let invalid = || crate::Error::InvalidScope {
            value: s.chars().take(crate::id::MAX_NAME_LEN).collect(),
        };
        match s {
            "agent" => Ok(Scope::Agent),
            "user" => Ok(Scope::User),
            "global" => Ok(Scope::Global),
            _ => {
                let name = s.strip_prefix("group:").ok_or_else(invalid)?;
                Ok(Scope::Group(GroupId::new(name)?))
            }
        }
    }
}

/// How coarse a fragment is.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Granularity {
    /// One dialogue turn, verbatim.
    RawTurn,
    /// One atomic fact.
    Fact,
    /// A summary of several turns.
    Episode,
    /// A stable user preference.
    Profile,
    /// A strategy card (ConMem).
    Card,
}

impl Granularity {
    /// Every granularity, in order.
    pub const ALL: [Granularity; 5] = [
        Granularity::RawTurn,
        Granularity::Fact,
        Granularity::Episode,
        Granularity::Profile,
        Granularity::Card,
    ];

    /// The lowercase name used on the wire and in SQL.
    pub fn as_str(self) -> &'static str {
        match self {
            Granularity::RawTurn => "raw_turn",
            Granularity::Fact => "fact",
            Granularity::Episode => "episode",
            Granularity::Profile => "profile",
            Granularity::Card => "card",
        }
    }
}

/// What sort of knowledge a fragment is; decides its default scope.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Kind {
    /// A user's own conversation and everything drawn from it (raw turns, facts,
    /// episodes, profile entries): personal, so `User` by default whatever crews the
    /// agent is in.
    Conversation,
    /// Something an agent observed in a resource or tool (a finding about the world,
    /// not about a user): shared with the writer's crew by default.
    Observation,
    /// An agent's own reasoning trace: private to that agent by default.
    Trace,
}

impl Kind {
    /// The lowercase name used on the wire and in SQL.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Conversation => "conversation",
            Kind::Observation => "observation",
            Kind::Trace => "trace",
        }
    }
}

/// Where a fragment came from inside a conversation.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct Source {
    /// The session or conversation it was written in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Dialogue turn ids it was drawn from (e.g. `D3:7`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<String>,
    /// Fragments it was derived from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<FragmentId>,
}

/// Who made a fragment, when, and from what. Immutable once written.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Provenance {
    /// Record time: when colmem stored it (the store's clock).
    pub created_at: Timestamp,
    /// The user the knowledge belongs to.
    pub user: UserId,
    /// The agents that produced it.
    pub agents: BTreeSet<AgentId>,
    /// The resources it was drawn from.
    pub resources: BTreeSet<ResourceId>,
    /// The turns and parent fragments it came from.
    pub source: Source,
}

/// A vector with the id of the embedder that made it (changing embedder forces a re-index).
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Embedding {
    /// The stable id of the embedder.
    pub embedder: String,
    /// The vector; its length is the dimension.
    pub vector: Vec<f32>,
}

impl Embedding {
    /// The number of components.
    pub fn dim(&self) -> usize {
        self.vector.len()
    }
}

/// What a caller asks to remember, before the write rule resolves scope and provenance.
#[derive(Clone, PartialEq, Debug)]
pub struct Draft {
    /// An optional subject key (e.g. `alice/location`) that facts about the same thing share.
    pub key: Option<String>,
    /// The text.
    pub content: String,
    /// How coarse it is.
    pub granularity: Granularity,
    /// What sort of knowledge it is.
    pub kind: Kind,
    /// The scope; `None` takes the default for the kind.
    pub scope: Option<Scope>,
    /// Agents besides the writer that contributed (the writer is always added).
    pub agents: BTreeSet<AgentId>,
    /// Resources it was drawn from.
    pub resources: BTreeSet<ResourceId>,
    /// Turns and parents.
    pub source: Source,
    /// World time during which it holds.
    pub validity: Validity,
    /// Keywords for lexical matching.
    pub keywords: Vec<String>,
}

impl Draft {
    /// A draft with default scope, no extra agents or resources, valid always.
    pub fn new(content: impl Into<String>, granularity: Granularity, kind: Kind) -> Self {
        Draft {
            key: None,
            content: content.into(),
            granularity,
            kind,
            scope: None,
            agents: BTreeSet::new(),
            resources: BTreeSet::new(),
            source: Source::default(),
            validity: Validity::always(),
            keywords: Vec::new(),
        }
    }
}

/// A fragment the write rule has accepted: scope resolved, provenance fixed. What a store persists.
#[derive(Clone, PartialEq, Debug)]
pub struct NewFragment {
    /// Subject key.
    pub key: Option<String>,
    /// The text.
    pub content: String,
    /// How coarse it is.
    pub granularity: Granularity,
    /// What sort of knowledge it is.
    pub kind: Kind,
    /// Who may read it.
    pub scope: Scope,
    /// Where it came from.
    pub provenance: Provenance,
    /// World time during which it holds.
    pub validity: Validity,
    /// Keywords for lexical matching.
    pub keywords: Vec<String>,
    /// Its embedding, if computed.
    pub embedding: Option<Embedding>,
}

/// A stored fragment.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Fragment {
    /// Its id.
    pub id: FragmentId,
    /// Subject key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The text.
    pub content: String,
    /// How coarse it is.
    pub granularity: Granularity,
    /// What sort of knowledge it is.
    pub kind: Kind,
    /// Who may read it.
    pub scope: Scope,
    /// Where it came from; immutable.
    pub provenance: Provenance,
    /// World time during which it holds.
    pub validity: Validity,
    /// Keywords for lexical matching.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Record time at which a newer version replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_at: Option<Timestamp>,
    /// The version that replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<FragmentId>,
    /// Record time of its deletion (a tombstone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_at: Option<Timestamp>,
}

impl Fragment {
    /// The fields the read rule looks at.
    pub fn meta(&self) -> FragmentMeta {
        FragmentMeta {
            user: self.provenance.user,
            scope: self.scope,
            agents: self.provenance.agents.iter().copied().collect(),
            resources: self.provenance.resources.iter().copied().collect(),
            created_at: self.provenance.created_at,
            superseded_at: self.superseded_at,
            deleted_at: self.deleted_at,
            validity: self.validity,
        }
    }
}

/// The access-relevant part of a fragment: everything the read rule needs, nothing else.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FragmentMeta {
    /// The owning user.
    pub user: UserId,
    /// Its scope.
    pub scope: Scope,
    /// Agents in its provenance.
    pub agents: Box<[AgentId]>,
    /// Resources in its provenance.
    pub resources: Box<[ResourceId]>,
    /// Record time of creation.
    pub created_at: Timestamp,
    /// Record time of supersession.
    pub superseded_at: Option<Timestamp>,
    /// Record time of deletion.
    pub deleted_at: Option<Timestamp>,
    /// World-time validity.
    pub validity: Validity,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_parses_from_what_it_displays_as() {
        for scope in [
            Scope::Agent,
            Scope::User,
            Scope::Global,
            Scope::Group(GroupId::new("crew-a").unwrap()),
        ] {
            assert_eq!(scope.to_string().parse::<Scope>().unwrap(), scope);
        }
        for bad in ["", "users", "group:", "group:a b", "Global"] {
            assert!(bad.parse::<Scope>().is_err(), "{bad:?}");
        }
    }
}
