//! The audit chain checked against the SQLite store, in one pass over one
//! snapshot: the chain entry by entry, the fragments in id order beside the
//! write entries, and the access event log in order beside the access entries.
//! Three cursors, nothing loaded whole, so the check is linear in the store.
//!
//! The merge relies on what the store guarantees: a write takes ids after the
//! largest ever used, in the `BEGIN IMMEDIATE` transaction that appends its
//! entry, so fragment ids grow along the chain; and the access log takes one
//! row per access entry, in the same transaction and order, numbered from 1
//! without gaps (rows are never deleted).

use std::iter::Peekable;

use colmem_core::{AccessEvent, AuditEntry, AuditEvent, Digest, Fragment, FragmentId, Timestamp};
use rusqlite::{Connection, OptionalExtension};

use crate::audit::{AuditStatus, ChainCheck, Disagreement, StoreCheck};
use crate::codec::{FRAGMENT_COLUMNS, FRAGMENT_FROM, fragment_from_row};
use crate::error::{Error, Result};
use crate::sqlite::{audit_from_row, chain_point};

/// Whether a fragment's access class (what the read SQL filters on) is the one
/// its own scope, owner, agents and resources make, as the insert computes it.
const CLASS_MATCHES: &str = "json_array(c.scope, c.scope_group, c.owner, json(c.agents), json(c.resources)) IS \
     json_array(f.scope, f.scope_group, CASE WHEN f.scope IN ('user', 'agent') THEN f.user END, \
       json((SELECT json_group_array(agent) FROM \
         (SELECT agent FROM fragment_agents WHERE fragment = f.id ORDER BY agent))), \
       json((SELECT json_group_array(resource) FROM \
         (SELECT resource FROM fragment_resources WHERE fragment = f.id ORDER BY resource))))";

/// A fragment as the verifier reads it.
struct Stored {
    fragment: Fragment,
    class_matches: bool,
}

/// An access event row as the verifier reads it; `event` is `None` when its body
/// does not decode.
struct EventRow {
    seq: u64,
    at: i64,
    recorded: Option<i64>,
    event: Option<AccessEvent>,
}

/// Checks the chain of `conn`'s store and the store against it; see
/// [`FragmentStore::verify_audit_against`](crate::FragmentStore::verify_audit_against).
pub(crate) fn verify(conn: &Connection, published: Option<Digest>) -> Result<AuditStatus> {
    let tx = conn.unchecked_transaction()?;
    let anchor = chain_point(&tx, "audit_anchor")?;
    let head = chain_point(&tx, "audit_head")?;
    let archived = anchor.0 > 0;
    let count = |sql: &str| -> Result<u64> {
        let n: i64 = tx.query_row(sql, [], |row| row.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    };
    let fragments = count("SELECT count(*) FROM fragments")?;
    let events = count("SELECT count(*) FROM access_events")?;
    let entries = count("SELECT count(*) FROM (SELECT 1 FROM audit LIMIT 1)")?;
    if !archived && head.0 == 0 && entries == 0 && (fragments > 0 || events > 0) {
        return Ok(AuditStatus::Disagrees(Disagreement::EmptyChain {
            fragments,
            events,
        }));
    }
    // Entries archived out of the store recorded the oldest events, which the
    // store cannot check: as many as the log holds beyond the remaining entries.
    let archived_events = if archived {
        let recorded = count(
            "SELECT count(*) FROM audit \
             WHERE CASE WHEN json_valid(event) THEN json_extract(event, '$.type') END = 'access'",
        )?;
        events.saturating_sub(recorded)
    } else {
        0
    };
    let provenance_from: Option<i64> = tx
        .query_row(
            "SELECT provenance_from FROM audit_format WHERE id = 1",
            [],
            |row| row.get(0),
        )
        .optional()?;

    let mut fragment_stmt = tx.prepare(&format!(
        "SELECT {FRAGMENT_COLUMNS}, {CLASS_MATCHES} FROM {FRAGMENT_FROM} \
         LEFT JOIN access_classes c ON c.id = f.class ORDER BY f.id"
    ))?;
    let fragment_rows = fragment_stmt
        .query_map([], |row| {
            Ok(fragment_from_row(row).and_then(|fragment| {
                Ok(Stored {
                    fragment,
                    class_matches: row.get(20)?,
                })
            }))
        })?
        .map(|row| row.map_err(Error::from).and_then(|stored| stored));
    let mut event_stmt =
        tx.prepare("SELECT seq, at, recorded, body FROM access_events ORDER BY seq")?;
    let mut event_rows = event_stmt
        .query_map([], |row| {
            Ok(EventRow {
                seq: u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
                at: row.get(1)?,
                recorded: row.get(2)?,
                event: serde_json::from_str(&row.get::<_, String>(3)?).ok(),
            })
        })?
        .map(|row| row.map_err(Error::from));
    let mut check = StoreCheck::default();
    for row in event_rows.by_ref().take(archived_events as usize) {
        row?;
        check.archived += 1;
    }
    let fragment_rows: Box<dyn Iterator<Item = Result<Stored>> + '_> = Box::new(fragment_rows);
    let mut cross = CrossCheck {
        fragments: fragment_rows.peekable(),
        events: Box::new(event_rows),
        // Without the row (removed behind the store's back), every write entry
        // must carry provenance digests.
        provenance_from: provenance_from.map_or(0, |seq| u64::try_from(seq).unwrap_or(0)),
        archived,
        written: false,
        next_event: (!archived).then_some(1),
        check,
    };

    let mut chain = ChainCheck::new(anchor);
    let mut found = published.filter(|&p| p == anchor.1).map(|_| anchor.0);
    let mut disagreement = None;
    let mut audit_rows = tx.prepare("SELECT seq, at, event, prev, hash FROM audit ORDER BY seq")?;
    for row in audit_rows.query_map([], audit_from_row)? {
        let entry = match chain.push(row?) {
            Ok(entry) => entry,
            Err(broken) => return Ok(broken.into()),
        };
        if published == Some(entry.hash) {
            found = Some(entry.seq);
        }
        if disagreement.is_none() {
            disagreement = cross.entry(&entry)?;
        }
    }
    let entries = match chain.finish(head) {
        Ok(entries) => entries,
        Err(broken) => return Ok(broken.into()),
    };
    if disagreement.is_none() {
        disagreement = cross.finish()?;
    }
    if let Some(disagreement) = disagreement {
        return Ok(AuditStatus::Disagrees(disagreement));
    }
    if let (Some(hash), None) = (published, found) {
        return Ok(AuditStatus::Disagrees(Disagreement::PublishedHeadMissing {
            hash,
        }));
    }
    Ok(AuditStatus::Intact {
        entries,
        head,
        store: StoreCheck {
            published: found,
            ..cross.check
        },
    })
}

/// The store's side of the merge: fragments and access events not matched yet.
struct CrossCheck<'a> {
    fragments: Peekable<Box<dyn Iterator<Item = Result<Stored>> + 'a>>,
    events: Box<dyn Iterator<Item = Result<EventRow>> + 'a>,
    /// The first entry seq that must carry provenance digests.
    provenance_from: u64,
    /// Whether a prefix of the chain was archived.
    archived: bool,
    /// Whether a write entry was met yet.
    written: bool,
    /// The access log position the next access entry records, when known.
    next_event: Option<u64>,
    check: StoreCheck,
}

impl CrossCheck<'_> {
    /// Matches one entry of an intact chain against the store.
    fn entry(&mut self, entry: &AuditEntry) -> Result<Option<Disagreement>> {
        match &entry.event {
            AuditEvent::Write {
                fragments,
                provenance,
                ..
            } => self.write(entry.seq, fragments, provenance),
            AuditEvent::Access { event } => self.access(entry.seq, entry.at, event),
            _ => Ok(None),
        }
    }

    fn write(
        &mut self,
        seq: u64,
        fragments: &[(FragmentId, Digest)],
        provenance: &[Digest],
    ) -> Result<Option<Disagreement>> {
        let recorded = provenance.len() == fragments.len();
        if !recorded && (seq >= self.provenance_from || !provenance.is_empty()) {
            return Ok(Some(Disagreement::ProvenanceMissing { seq }));
        }
        for (i, &(id, content)) in fragments.iter().enumerate() {
            if !self.written {
                self.written = true;
                // Fragments below the first write entry left were written by
                // archived entries (ids grow along the chain).
                while self.archived && self.next_fragment(|f| f < id)?.is_some() {
                    self.check.archived += 1;
                }
            }
            let Some(stored) = self.next_fragment(|f| f <= id)? else {
                // Purged since: nothing left to compare.
                continue;
            };
            let f = &stored.fragment;
            if f.id != id {
                return Ok(Some(Disagreement::Unrecorded { fragment: f.id }));
            }
            // A tombstone's text may be gone; it is read by nobody.
            if f.deleted_at.is_some() {
                continue;
            }
            if Digest::of_text(&f.content) != content {
                return Ok(Some(Disagreement::Content { fragment: id, seq }));
            }
            if let Some(&expected) = provenance.get(i) {
                if Digest::of_provenance(f.scope, &f.provenance) != expected {
                    return Ok(Some(Disagreement::Provenance { fragment: id, seq }));
                }
                self.check.provenance += 1;
            }
            if !stored.class_matches {
                return Ok(Some(Disagreement::Class { fragment: id }));
            }
            self.check.fragments += 1;
        }
        Ok(None)
    }

    fn access(
        &mut self,
        seq: u64,
        at: Timestamp,
        event: &AccessEvent,
    ) -> Result<Option<Disagreement>> {
        let expected = self.next_event;
        let Some(row) = self.events.next().transpose()? else {
            return Ok(Some(Disagreement::AccessEventMissing {
                event: expected.unwrap_or(1),
                seq,
            }));
        };
        match expected {
            Some(expected) if row.seq > expected => {
                return Ok(Some(Disagreement::AccessEventMissing {
                    event: expected,
                    seq,
                }));
            }
            Some(expected) if row.seq < expected => {
                return Ok(Some(Disagreement::AccessEventUnrecorded { event: row.seq }));
            }
            _ => {}
        }
        self.next_event = Some(row.seq + 1);
        // Events logged before schema 4 have no record time.
        let same = row.event.as_ref() == Some(event)
            && row.at == event.at.as_millis()
            && row.recorded.is_none_or(|r| r == at.as_millis());
        if !same {
            return Ok(Some(Disagreement::AccessEvent {
                event: row.seq,
                seq,
            }));
        }
        self.check.events += 1;
        Ok(None)
    }

    /// What is left of the store once the chain has ended.
    fn finish(&mut self) -> Result<Option<Disagreement>> {
        while let Some(stored) = self.next_fragment(|_| true)? {
            if self.archived && !self.written {
                self.check.archived += 1;
            } else {
                return Ok(Some(Disagreement::Unrecorded {
                    fragment: stored.fragment.id,
                }));
            }
        }
        if let Some(row) = self.events.next().transpose()? {
            return Ok(Some(Disagreement::AccessEventUnrecorded { event: row.seq }));
        }
        Ok(None)
    }

    /// The next fragment if its id passes `take` (a row that fails to read is
    /// always taken, as its error).
    fn next_fragment(&mut self, take: impl Fn(FragmentId) -> bool) -> Result<Option<Stored>> {
        self.fragments
            .next_if(|row| row.as_ref().map_or(true, |s| take(s.fragment.id)))
            .transpose()
    }
}
