//! Verification of the hash-chained audit log, independent of where it is stored.
//!
//! The log starts after an *anchor* `(seq, hash)` — `(0, zeros)` until a prefix
//! is archived — and ends at a *head* `(seq, hash)` the store updates with every
//! append. Editing an entry breaks its hash; deleting or reordering entries
//! breaks a link or leaves a gap; deleting entries at the end no longer matches
//! the head.

use colmem_core::{AuditEntry, Digest};

/// What verification found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AuditStatus {
    /// Every entry is intact and linked, from the anchor to the head.
    Intact {
        /// The number of entries checked.
        entries: u64,
        /// The last entry's sequence number and hash (publish them elsewhere to
        /// detect a rewrite of the whole log).
        head: (u64, Digest),
    },
    /// The chain is broken at `seq`.
    Broken {
        /// The first sequence number where the chain does not hold.
        seq: u64,
        /// How it is broken.
        problem: AuditProblem,
    },
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

impl ChainCheck {
    /// Starts after the anchor `(seq, hash)`.
    pub(crate) fn new(anchor: (u64, Digest)) -> Self {
        ChainCheck {
            last_seq: anchor.0,
            last_hash: anchor.1,
            count: 0,
        }
    }

    /// Checks the next entry (`Err(seq)` for one that does not decode).
    pub(crate) fn push(&mut self, entry: Result<AuditEntry, u64>) -> Result<(), AuditStatus> {
        let broken = |seq, problem| Err(AuditStatus::Broken { seq, problem });
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
        Ok(())
    }

    /// The verdict once every entry was pushed, given the recorded head.
    pub(crate) fn finish(self, head: (u64, Digest)) -> AuditStatus {
        if (self.last_seq, self.last_hash) != head {
            return AuditStatus::Broken {
                seq: self.last_seq + 1,
                problem: if self.last_seq < head.0 {
                    AuditProblem::Truncated
                } else {
                    AuditProblem::BrokenLink
                },
            };
        }
        AuditStatus::Intact {
            entries: self.count,
            head,
        }
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
        if let Err(status) = check.push(entry) {
            return status;
        }
    }
    check.finish(head)
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
            AuditStatus::Intact { entries: 5, head }
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
