//! Audit entries: ids and hashes of what happened, hash-chained. Never fragment text.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::event::AccessEvent;
use crate::id::{AgentId, FragmentId, UserId};
use crate::time::Timestamp;

/// A 32-byte BLAKE3 digest, written as hex.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Digest(*blake3::hash(bytes).as_bytes())
    }

    /// The digest of a fragment's text, as audit entries record it.
    pub fn of_text(text: &str) -> Self {
        Digest::of(text.as_bytes())
    }

    /// Lowercase hex.
    pub fn to_hex(&self) -> String {
        blake3::Hash::from_bytes(self.0).to_hex().to_string()
    }

    /// Parses 64 hex digits.
    pub fn from_hex(hex: &str) -> Option<Self> {
        blake3::Hash::from_hex(hex)
            .ok()
            .map(|h| Digest(*h.as_bytes()))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", &self.to_hex()[..12])
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let hex = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Digest::from_hex(&hex).ok_or_else(|| serde::de::Error::custom("expected 64 hex digits"))
    }
}

/// What an audit entry records.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
#[non_exhaustive]
pub enum AuditEvent {
    /// A grant, revocation or registration in the access graph.
    Access {
        /// The event as logged.
        event: AccessEvent,
    },
    /// Fragments written in one interaction, with the digests of their text.
    Write {
        /// The user of the request.
        user: UserId,
        /// The serving agent.
        agent: AgentId,
        /// Each written fragment and the digest of its text.
        fragments: Vec<(FragmentId, Digest)>,
    },
    /// A read, with the ids it returned.
    Read {
        /// The user of the request.
        user: UserId,
        /// The serving agent.
        agent: AgentId,
        /// The ids returned, in order.
        returned: Vec<FragmentId>,
    },
    /// A fact superseded by a newer one.
    Update {
        /// The user of the request.
        user: UserId,
        /// The serving agent.
        agent: AgentId,
        /// The closed version.
        old: FragmentId,
        /// The version that replaced it.
        new: FragmentId,
    },
    /// A fragment tombstoned.
    Delete {
        /// The user of the request.
        user: UserId,
        /// The serving agent.
        agent: AgentId,
        /// The deleted fragment.
        fragment: FragmentId,
    },
    /// Fragments an upgrade narrowed to scope `User`: a user's conversation, which an
    /// older version had written to the serving agent's crew.
    Narrow {
        /// The narrowed fragments.
        fragments: Vec<FragmentId>,
    },
    /// A fragment purged by an administrator: its text is gone.
    Purge {
        /// Who purged it.
        admin: String,
        /// The purged fragment.
        fragment: FragmentId,
    },
    /// A session's request refused because the user may not invoke the agent now
    /// (a recall, an answer, a history read, an explanation, or a write).
    Denied {
        /// The user of the request.
        user: UserId,
        /// The agent the user may not invoke.
        agent: AgentId,
    },
    /// An explanation of the read rule for one fragment id in the context (user,
    /// agent, now), whether or not such a fragment exists.
    Explain {
        /// The user of the context.
        user: UserId,
        /// The agent of the context.
        agent: AgentId,
        /// The id asked about.
        fragment: FragmentId,
        /// The administrator's full explanation (`true`), or the session's own,
        /// which tells only whether it may read the fragment (`false`).
        admin: bool,
    },
    /// Deleted fragments whose text was erased (their text, key, keywords,
    /// embedding and card): each stays as a tombstone of ids and times.
    Erase {
        /// The erased fragments.
        fragments: Vec<FragmentId>,
    },
}

/// One link of the audit chain: `hash = BLAKE3(prev ‖ seq ‖ at ‖ canonical JSON of event)`.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Position in the log, from 1.
    pub seq: u64,
    /// When it was recorded.
    pub at: Timestamp,
    /// What happened.
    pub event: AuditEvent,
    /// The hash of the previous entry (all zeros for the first).
    pub prev: Digest,
    /// This entry's hash.
    pub hash: Digest,
}

impl AuditEntry {
    /// Builds the entry that follows `prev`, computing its hash.
    pub fn chain(prev: Digest, seq: u64, at: Timestamp, event: AuditEvent) -> Self {
        let hash = Self::compute_hash(&prev, seq, at, &event);
        AuditEntry {
            seq,
            at,
            event,
            prev,
            hash,
        }
    }

    /// The hash an entry with these fields must have.
    pub fn compute_hash(prev: &Digest, seq: u64, at: Timestamp, event: &AuditEvent) -> Digest {
        let mut hasher = blake3::Hasher::new();
        hasher.update(&prev.0);
        hasher.update(&seq.to_le_bytes());
        hasher.update(&at.as_millis().to_le_bytes());
        // Serialising these plain data types cannot fail; an empty body would still chain.
        let body = serde_json::to_vec(event).unwrap_or_default();
        hasher.update(&body);
        Digest(*hasher.finalize().as_bytes())
    }

    /// Whether the stored hash matches the fields.
    pub fn is_intact(&self) -> bool {
        Self::compute_hash(&self.prev, self.seq, self.at, &self.event) == self.hash
    }
}
