//! Verification of the hash-chained audit log, independent of where it is stored.
//!
//! The log starts after an *anchor* `(seq, hash)` — `(0, zeros)` until a prefix
//! is archived — and ends at a *head* `(seq, hash)` the store updates with every
//! append. Editing an entry breaks its hash; deleting or reordering entries
//! breaks a link or leaves a gap; deleting entries at the end no longer matches
//! the head. What the chain records is then checked against what the store holds
//! ([`Disagreement`]), and a head published elsewhere must be one of its entries
//! (a rewritten chain is intact on its own).

use std::fmt;

use colmem_core::{AuditEntry, Digest, FragmentId};
use serde::Serialize;

/// What verification found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AuditStatus {
    /// Every entry is intact and linked, from the anchor to the head, and the
    /// store agrees with what they record.
    Intact {
        /// The number of entries checked.
        entries: u64,
        /// The last entry's sequence number and hash (publish them elsewhere to
        /// detect a rewrite of the whole log).
        head: (u64, Digest),
        /// What of the store was checked against the chain.
        store: StoreCheck,
    },
    /// The chain is broken at `seq`.
    Broken {
        /// The first sequence number where the chain does not hold.
        seq: u64,
        /// How it is broken.
        problem: AuditProblem,
    },
    /// The chain holds, but the store (or a head published elsewhere) disagrees
    /// with it: the first disagreement found.
    Disagrees(Disagreement),
}

/// What of the store an intact chain was checked against.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct StoreCheck {
    /// Live (not deleted) fragments whose text matched their write entry.
    pub fragments: u64,
    /// Of those, the ones whose scope and provenance matched too; the others were
    /// written before write entries recorded a provenance digest (schema 8).
    pub provenance: u64,
    /// Access events that matched the entries that recorded them.
    pub events: u64,
    /// Fragments and access events whose entries were archived out of the store,
    /// which it cannot check (the archive can).
    pub archived: u64,
    /// The sequence number of the head published elsewhere, when one was given.
    pub published: Option<u64>,
}

/// How the store disagrees with an intact audit chain, by id (never text).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum Disagreement {
    /// The store holds fragments or access events, but the chain has no entry and
    /// none was archived: the audit log was emptied.
    EmptyChain {
        /// Fragments in the store.
        fragments: u64,
        /// Access events in the store.
        events: u64,
    },
    /// A live fragment's text is not the text its write entry recorded.
    Content {
        /// The fragment.
        fragment: FragmentId,
        /// The write entry.
        seq: u64,
    },
    /// A live fragment's scope or provenance (record time, user, agents,
    /// resources, source) is not what its write entry recorded.
    Provenance {
        /// The fragment.
        fragment: FragmentId,
        /// The write entry.
        seq: u64,
    },
    /// A live fragment's access class, which reads are filtered on, does not
    /// match its scope, owner, agents and resources.
    Class {
        /// The fragment.
        fragment: FragmentId,
    },
    /// A write entry recorded since provenance digests exist has none for its
    /// fragments.
    ProvenanceMissing {
        /// The write entry.
        seq: u64,
    },
    /// A fragment that no write entry records.
    Unrecorded {
        /// The fragment.
        fragment: FragmentId,
    },
    /// An access event differs from the entry that recorded it.
    AccessEvent {
        /// The event's position in the access log.
        event: u64,
        /// The audit entry.
        seq: u64,
    },
    /// An entry records an access event the log no longer holds.
    AccessEventMissing {
        /// The position the event should have in the access log.
        event: u64,
        /// The audit entry.
        seq: u64,
    },
    /// An access event that no entry records.
    AccessEventUnrecorded {
        /// The event's position in the access log.
        event: u64,
    },
    /// The head published elsewhere is not an entry of the chain: the log was
    /// rewritten (or archived past it: check it against the archive).
    PublishedHeadMissing {
        /// The published hash.
        hash: Digest,
    },
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Disagreement::EmptyChain { fragments, events } => write!(
                f,
                "the audit chain is empty but the store holds {fragments} fragments and {events} access events"
            ),
            Disagreement::Content { fragment, seq } => write!(
                f,
                "fragment {fragment}: its text is not what write entry {seq} recorded"
            ),
            Disagreement::Provenance { fragment, seq } => write!(
                f,
                "fragment {fragment}: its scope or provenance is not what write entry {seq} recorded"
            ),
            Disagreement::Class { fragment } => write!(
                f,
                "fragment {fragment}: its access class does not match its scope and provenance"
            ),
            Disagreement::ProvenanceMissing { seq } => write!(
                f,
                "write entry {seq} has no provenance digests, which every write entry of this store records"
            ),
            Disagreement::Unrecorded { fragment } => {
                write!(f, "fragment {fragment}: no write entry records it")
            }
            Disagreement::AccessEvent { event, seq } => write!(
                f,
                "access event {event} is not what audit entry {seq} recorded"
            ),
            Disagreement::AccessEventMissing { event, seq } => write!(
                f,
                "access event {event}, recorded by audit entry {seq}, is missing from the access log"
            ),
            Disagreement::AccessEventUnrecorded { event } => {
                write!(f, "access event {event}: no audit entry records it")
            }
            Disagreement::PublishedHeadMissing { hash } => write!(
                f,
                "the published head {hash} is not an entry of the chain: the log was rewritten (or archived past it: check the archive)"
            ),
        }
    }
}

/// How an audit chain is broken.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AuditProblem {
    /// The entry's fields do not match its hash: it was edited.
    Edited,
    /// The entry does not link to the one before it, or a sequence number is
    /// missing: entries were deleted, inserted or reordered.
    BrokenLink,
    /// The log ends before the recorded head: entries were deleted at the end.
    Truncated,
    /// An entry cannot be decoded.
    Undecodable,
}

/// Walks a chain entry by entry, so a long log is checked without loading it whole.
#[derive(Debug)]
pub(crate) struct ChainCheck {
    last_seq: u64,
    last_hash: Digest,
    count: u64,
}

/// A chain that is not intact.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct ChainBreak {
    pub(crate) seq: u64,
    pub(crate) problem: AuditProblem,
}

impl From<ChainBreak> for AuditStatus {
    fn from(b: ChainBreak) -> Self {
        AuditStatus::Broken {
            seq: b.seq,
            problem: b.problem,
        }
    }
}

impl ChainCheck {
    /// Starts after the anchor `(seq, hash)`.
    pub(crate) fn new(anchor: (u64, Digest)) -> Self {
        ChainCheck {
            last_seq: anchor.0,
            last_hash: anchor.1,
            count: 0,
        }
    }

    /// Checks the next entry (`Err(seq)` for one that does not decode) and hands it back.
    pub(crate) fn push(
        &mut self,
        entry: Result<AuditEntry, u64>,
    ) -> Result<AuditEntry, ChainBreak> {
        let broken = |seq, problem| Err(ChainBreak { seq, problem });
        let entry = match entry {
            Ok(entry) => entry,
            Err(seq) => return broken(seq, AuditProblem::Undecodable),
        };
        if !entry.is_intact() {
            return broken(entry.seq, AuditProblem::Edited);
        }
        if entry.seq != self.last_seq + 1 || entry.prev != self.last_hash {
            return broken(entry.seq, AuditProblem::BrokenLink);
        }
        self.last_seq = entry.seq;
        self.last_hash = entry.hash;
        self.count += 1;
        Ok(entry)
    }

    /// Once every entry was pushed, given the recorded head: the number of
    /// entries checked, or where the chain ends short of (or past) the head.
    pub(crate) fn finish(self, head: (u64, Digest)) -> Result<u64, ChainBreak> {
        if (self.last_seq, self.last_hash) != head {
            return Err(ChainBreak {
                seq: self.last_seq + 1,
                problem: if self.last_seq < head.0 {
                    AuditProblem::Truncated
                } else {
                    AuditProblem::BrokenLink
                },
            });
        }
        Ok(self.count)
    }
}

/// Checks `entries` (in stored order) against the anchor and head.
#[cfg(test)]
pub(crate) fn verify_chain(
    anchor: (u64, Digest),
    entries: impl IntoIterator<Item = Result<AuditEntry, u64>>,
    head: (u64, Digest),
) -> AuditStatus {
    let mut check = ChainCheck::new(anchor);
    for entry in entries {
        if let Err(broken) = check.push(entry) {
            return broken.into();
        }
    }
    match check.finish(head) {
        Ok(entries) => AuditStatus::Intact {
            entries,
            head,
            store: StoreCheck::default(),
        },
        Err(broken) => broken.into(),
    }
}

#[cfg(test)]
mod tests {
    use colmem_core::{AuditEvent, FragmentId, Timestamp};

    use super::*;

    fn chain(n: u64) -> Vec<AuditEntry> {
        let mut prev = Digest::default();
        (1..=n)
            .map(|seq| {
                let e = AuditEntry::chain(
                    prev,
                    seq,
                    Timestamp::from_millis(seq as i64),
                    AuditEvent::Purge {
                        admin: "root".into(),
                        fragment: FragmentId(seq),
                    },
                );
                prev = e.hash;
                e
            })
            .collect()
    }

    fn check(entries: Vec<AuditEntry>, head: (u64, Digest)) -> AuditStatus {
        verify_chain((0, Digest::default()), entries.into_iter().map(Ok), head)
    }

    #[test]
    fn an_untouched_chain_is_intact() {
        let entries = chain(5);
        let head = (5, entries[4].hash);
        assert_eq!(
            check(entries, head),
            AuditStatus::Intact {
                entries: 5,
                head,
                store: StoreCheck::default()
            }
        );
        assert!(matches!(
            check(Vec::new(), (0, Digest::default())),
            AuditStatus::Intact { entries: 0, .. }
        ));
    }

    #[test]
    fn edits_deletions_reorderings_and_truncation_are_found() {
        let entries = chain(5);
        let head = (5, entries[4].hash);

        let mut edited = entries.clone();
        edited[2].at = Timestamp::from_millis(99);
        assert_eq!(
            check(edited, head),
            AuditStatus::Broken {
                seq: 3,
                problem: AuditProblem::Edited
            }
        );

        let mut deleted = entries.clone();
        deleted.remove(1);
        assert_eq!(
            check(deleted, head),
            AuditStatus::Broken {
                seq: 3,
                problem: AuditProblem::BrokenLink
            }
        );

        let mut reordered = entries.clone();
        reordered.swap(1, 2);
        assert!(matches!(
            check(reordered, head),
            AuditStatus::Broken { seq: 3, .. }
        ));

        let truncated = entries[..4].to_vec();
        assert_eq!(
            check(truncated, head),
            AuditStatus::Broken {
                seq: 5,
                problem: AuditProblem::Truncated
            }
        );
    }
}
