//! Audit entries: ids and hashes of what happened, hash-chained. Never fragment text.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::event::AccessEvent;
use crate::fragment::{Provenance, Scope};
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

    /// The digest of what decides who may read a fragment and where it came
    /// from, as write entries record it: its scope and provenance (record time,
    /// user, agents and resources by name in name order, source session, turns and
    /// parents in order), each field length-prefixed so no two differ in one way only.
    pub fn of_provenance(scope: Scope, provenance: &Provenance) -> Self {
        let mut buffer = Vec::with_capacity(256);
        let mut field = |bytes: &[u8]| {
            buffer.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            buffer.extend_from_slice(bytes);
        };
        field(b"colmem provenance 1");
        field(scope.to_string().as_bytes());
        field(&provenance.created_at.as_millis().to_le_bytes());
        field(provenance.user.as_str().as_bytes());
        let mut agents: Vec<&str> = provenance.agents.iter().map(|a| a.as_str()).collect();
        agents.sort_unstable();
        let mut resources: Vec<&str> = provenance.resources.iter().map(|r| r.as_str()).collect();
        resources.sort_unstable();
        let source = &provenance.source;
        for names in [&agents, &resources] {
            field(&(names.len() as u64).to_le_bytes());
            for name in names {
                field(name.as_bytes());
            }
        }
        match &source.session {
            Some(session) => {
                field(b"session");
                field(session.as_bytes());
            }
            None => field(b""),
        }
        field(&(source.turns.len() as u64).to_le_bytes());
        for turn in &source.turns {
            field(turn.as_bytes());
        }
        field(&(source.parents.len() as u64).to_le_bytes());
        for parent in &source.parents {
            field(&parent.0.to_le_bytes());
        }
        Digest::of(&buffer)
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
    /// Fragments written in one interaction, with the digests of their text and
    /// provenance.
    Write {
        /// The user of the request.
        user: UserId,
        /// The serving agent.
        agent: AgentId,
        /// Each written fragment and the digest of its text.
        fragments: Vec<(FragmentId, Digest)>,
        /// The digest of each written fragment's scope and provenance
        /// ([`Digest::of_provenance`]), in the order of `fragments`; empty in entries
        /// written before stores recorded it (store schema 8), which hash as they did.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        provenance: Vec<Digest>,
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeSet;

    use super::*;
    use crate::fragment::Source;
    use crate::id::{GroupId, ResourceId};

    fn provenance() -> Provenance {
        Provenance {
            created_at: Timestamp::from_millis(7),
            user: UserId::new("digest-alice").unwrap(),
            agents: BTreeSet::from([
                AgentId::new("digest-b").unwrap(),
                AgentId::new("digest-a").unwrap(),
            ]),
            resources: BTreeSet::from([ResourceId::new("digest-kb").unwrap()]),
            source: Source {
                session: Some("s1".into()),
                turns: vec!["D1:1".into()],
                parents: vec![FragmentId(3)],
            },
        }
    }

    #[test]
    fn a_provenance_digest_changes_with_every_field_it_covers() {
        let p = provenance();
        let base = Digest::of_provenance(Scope::User, &p);
        assert_eq!(base, Digest::of_provenance(Scope::User, &p.clone()));
        let mut variants = vec![
            Digest::of_provenance(Scope::Agent, &p),
            Digest::of_provenance(Scope::Group(GroupId::new("digest-crew").unwrap()), &p),
        ];
        let mut changed = |edit: fn(&mut Provenance)| {
            let mut q = provenance();
            edit(&mut q);
            variants.push(Digest::of_provenance(Scope::User, &q));
        };
        changed(|q| q.created_at = Timestamp::from_millis(8));
        changed(|q| q.user = UserId::new("digest-mallory").unwrap());
        changed(|q| {
            q.agents.insert(AgentId::new("digest-c").unwrap());
        });
        changed(|q| q.resources.clear());
        changed(|q| q.source.session = None);
        changed(|q| q.source.session = Some(String::new()));
        changed(|q| q.source.turns.push("D1:2".into()));
        changed(|q| q.source.parents.clear());
        // An agent moved into the resources is another provenance.
        changed(|q| {
            q.agents.remove(&AgentId::new("digest-b").unwrap());
            q.resources.insert(ResourceId::new("digest-b").unwrap());
        });
        let distinct: BTreeSet<String> = variants.iter().map(Digest::to_hex).collect();
        assert_eq!(distinct.len(), variants.len());
        assert!(!distinct.contains(&base.to_hex()));
    }

    #[test]
    fn a_write_entry_without_provenance_digests_hashes_as_before_they_existed() {
        let old = r#"{"type":"write","user":"digest-alice","agent":"digest-a","fragments":[[1,"0000000000000000000000000000000000000000000000000000000000000000"]]}"#;
        let event: AuditEvent = serde_json::from_str(old).unwrap();
        assert!(matches!(&event, AuditEvent::Write { provenance, .. } if provenance.is_empty()));
        assert_eq!(serde_json::to_string(&event).unwrap(), old);
    }
}
