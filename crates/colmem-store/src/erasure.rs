//! How text leaves the store: erasing what a deleted fragment says (its tombstone
//! of ids and times stays) and purging fragments (nothing of them stays but the
//! audit chain's ids and digests), and the selections an administrator or the
//! facade's upkeep purges or erases by.

use std::collections::HashSet;

use colmem_core::{AuditEvent, ChangeOp, FragmentId, Timestamp, UserId};
use rusqlite::{Connection, OptionalExtension, ToSql, Transaction, params};

use crate::codec::{fragment_id, id_param, ts};
use crate::error::{Error, Result};
use crate::sqlite::{SqliteStore, append_audit_tx, fragment_state, record_change};

/// `ids` without repeats, in the order first given.
fn distinct(ids: &[FragmentId]) -> Vec<FragmentId> {
    let mut seen = HashSet::with_capacity(ids.len());
    ids.iter().copied().filter(|id| seen.insert(*id)).collect()
}

/// Removes each fragment with its provenance, embedding and card (cascades), records
/// a `Purge` change and audits a `Purge` per fragment. An id that does not exist
/// refuses the whole transaction.
pub(crate) fn purge_tx(
    tx: &Transaction<'_>,
    now: Timestamp,
    admin: &str,
    ids: &[FragmentId],
) -> Result<()> {
    for id in distinct(ids) {
        fragment_state(tx, id)?;
        tx.prepare_cached("DELETE FROM fragments WHERE id = ?1")?
            .execute([id_param(id)?])?;
        record_change(tx, id, ChangeOp::Purge)?;
        append_audit_tx(
            tx,
            now,
            &AuditEvent::Purge {
                admin: admin.to_owned(),
                fragment: id,
            },
        )?;
    }
    Ok(())
}

/// Erases the text, key, keywords, embedding and card of each deleted fragment not
/// erased yet; skips ids gone or erased already; refuses (the whole transaction) a
/// fragment not deleted. Returns the ids erased.
pub(crate) fn erase_tx(
    tx: &Transaction<'_>,
    now: Timestamp,
    ids: &[FragmentId],
) -> Result<Vec<FragmentId>> {
    let mut erased = Vec::new();
    for id in distinct(ids) {
        let raw = id_param(id)?;
        let state: Option<(Option<i64>, Option<i64>)> = tx
            .prepare_cached("SELECT deleted_at, erased_at FROM fragments WHERE id = ?1")?
            .query_row([raw], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        match state {
            // Purged: nothing of it is left to erase.
            None => continue,
            Some((None, _)) => {
                return Err(Error::InvalidInput(format!(
                    "fragment {id} is not deleted: only a deleted fragment's text is erased; delete it first"
                )));
            }
            Some((Some(_), Some(_))) => continue,
            Some((Some(_), None)) => {}
        }
        tx.prepare_cached(
            "UPDATE fragments SET content = '', key = NULL, keywords = '[]', erased_at = ?2 \
             WHERE id = ?1",
        )?
        .execute(params![raw, ts(now)])?;
        tx.prepare_cached("DELETE FROM embeddings WHERE fragment = ?1")?
            .execute([raw])?;
        // Its edges go with it (ON DELETE CASCADE).
        tx.prepare_cached("DELETE FROM cards WHERE fragment = ?1")?
            .execute([raw])?;
        // An index drops a deleted fragment but may keep its text until told to purge it.
        record_change(tx, id, ChangeOp::Purge)?;
        erased.push(id);
    }
    if !erased.is_empty() {
        append_audit_tx(
            tx,
            now,
            &AuditEvent::Erase {
                fragments: erased.clone(),
            },
        )?;
    }
    Ok(erased)
}

/// The ids a selection returns, in its order.
fn ids_where(conn: &Connection, sql: &str, params: &[&dyn ToSql]) -> Result<Vec<FragmentId>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(params, |row| row.get::<_, i64>(0))?;
    let mut out = Vec::new();
    for row in rows {
        out.push(fragment_id(row?)?);
    }
    Ok(out)
}

impl SqliteStore {
    /// The id of every fragment the store holds, tombstones included (purged ones
    /// are gone), in id order.
    pub fn fragment_ids(&self) -> Result<Vec<FragmentId>> {
        self.read(|conn| ids_where(conn, "SELECT id FROM fragments ORDER BY id", &[]))
    }

    /// Every fragment of `user` (its provenance's user), live or deleted, in id order.
    pub fn fragments_of(&self, user: UserId) -> Result<Vec<FragmentId>> {
        self.read(|conn| {
            ids_where(
                conn,
                "SELECT id FROM fragments WHERE user = ?1 ORDER BY id",
                &[&user.as_str()],
            )
        })
    }

    /// Every fragment deleted before `at` (erased or not), in id order.
    pub fn deleted_before(&self, at: Timestamp) -> Result<Vec<FragmentId>> {
        self.read(|conn| {
            ids_where(
                conn,
                "SELECT id FROM fragments WHERE deleted_at IS NOT NULL AND deleted_at < ?1 \
                 ORDER BY id",
                &[&ts(at)],
            )
        })
    }

    /// The deleted fragments whose text is not erased yet, deleted at `by` or
    /// before, oldest deletion first. Reads no tombstone (a partial index holds only
    /// these).
    pub fn erasure_due(&self, by: Timestamp) -> Result<Vec<FragmentId>> {
        self.read(|conn| {
            ids_where(
                conn,
                "SELECT id FROM fragments \
                 WHERE deleted_at IS NOT NULL AND erased_at IS NULL AND deleted_at <= ?1 \
                 ORDER BY deleted_at, id",
                &[&ts(by)],
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erasures_due_are_found_through_the_partial_index() {
        let store = SqliteStore::open_in_memory(crate::StoreConfig::default()).unwrap();
        let plan: Vec<String> = store
            .read(|conn| {
                let mut stmt = conn.prepare(
                    "EXPLAIN QUERY PLAN SELECT id FROM fragments \
                     WHERE deleted_at IS NOT NULL AND erased_at IS NULL AND deleted_at <= 5 \
                     ORDER BY deleted_at, id",
                )?;
                let rows = stmt.query_map([], |row| row.get::<_, String>(3))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })
            .unwrap();
        assert!(
            plan.iter().any(|step| step.contains("fragments_unerased")),
            "{plan:?}"
        );
    }
}
