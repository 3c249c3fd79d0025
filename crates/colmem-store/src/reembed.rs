//! Re-embedding: replacing the stored vectors of existing fragments when the
//! embedder changed, so the indexes can rebuild from the store alone.

use colmem_core::{Embedding, FragmentId};
use rusqlite::{OptionalExtension, params};

use crate::codec::{self, id_param};
use crate::error::Result;
use crate::sqlite::SqliteStore;

impl SqliteStore {
    /// Replaces the embeddings of existing fragments in one transaction and
    /// records a `Put` change for each, so indexes following the change feed
    /// re-index them with the new vectors. Text and provenance are untouched,
    /// and so is the audit log (no content changes). Ids that no longer exist
    /// (purged meanwhile) are skipped; returns how many were replaced.
    pub fn replace_embeddings(&self, items: &[(FragmentId, Embedding)]) -> Result<usize> {
        // Checked as a write's embeddings are: one an index cannot take would stop every
        // later catch-up.
        for (_, embedding) in items {
            self.check_embedding(embedding)?;
        }
        self.write_tx(|tx, _now| {
            let mut replaced = 0;
            let mut exists = tx.prepare("SELECT 1 FROM fragments WHERE id = ?1")?;
            let mut put = tx.prepare(
                "INSERT INTO embeddings (fragment, embedder, dim, vector) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (fragment) DO UPDATE SET
                   embedder = excluded.embedder, dim = excluded.dim, vector = excluded.vector",
            )?;
            let mut change = tx.prepare("INSERT INTO changes (fragment, op) VALUES (?1, ?2)")?;
            for (id, embedding) in items {
                let raw = id_param(*id)?;
                let found: Option<i64> = exists.query_row([raw], |row| row.get(0)).optional()?;
                if found.is_none() {
                    continue;
                }
                put.execute(params![
                    raw,
                    embedding.embedder,
                    embedding.vector.len() as i64,
                    codec::vector_blob(&embedding.vector)
                ])?;
                // The feed decodes "put" as `ChangeOp::Put`: re-index this fragment.
                change.execute(params![raw, "put"])?;
                replaced += 1;
            }
            Ok(replaced)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use colmem_core::{
        AgentId, ChangeFeed as _, ChangeOp, Granularity, Kind, NewFragment, Provenance, Scope,
        Source, Timestamp, UserId, Validity,
    };

    use super::*;
    use crate::{Error, FragmentStore, Interaction, Purge, StoreConfig};

    fn fragment(user: UserId, agent: AgentId, vector: Vec<f32>) -> NewFragment {
        NewFragment {
            key: None,
            content: "text".to_owned(),
            granularity: Granularity::Fact,
            kind: Kind::Observation,
            scope: Scope::User,
            provenance: Provenance {
                created_at: Timestamp::from_millis(1),
                user,
                agents: BTreeSet::from([agent]),
                resources: BTreeSet::new(),
                source: Source::default(),
            },
            validity: Validity::always(),
            keywords: Vec::new(),
            embedding: Some(Embedding {
                embedder: "old".to_owned(),
                vector,
            }),
        }
    }

    #[test]
    fn replaced_vectors_are_stored_and_announced_on_the_feed() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("s.db"), StoreConfig::default()).unwrap();
        let user = UserId::new("reembed-u").unwrap();
        let agent = AgentId::new("reembed-a").unwrap();
        let ids = store
            .write(&Interaction {
                user,
                agent,
                fragments: vec![
                    fragment(user, agent, vec![1.0, 0.0]),
                    fragment(user, agent, vec![0.0, 1.0]),
                ],
                idempotency_key: None,
            })
            .unwrap()
            .ids;
        store
            .purge(&Purge {
                admin: "root".to_owned(),
                fragment: ids[1],
            })
            .unwrap();
        let head = store.head().unwrap();
        let new = Embedding {
            embedder: "new".to_owned(),
            vector: vec![0.5, 0.5, 0.5],
        };
        let replaced = store
            .replace_embeddings(&[(ids[0], new.clone()), (ids[1], new.clone())])
            .unwrap();
        assert_eq!(replaced, 1, "the purged fragment is skipped");
        assert_eq!(store.embedding(ids[0]).unwrap(), Some(new));
        let changes = store.changes_after(head, 10).unwrap();
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].fragment, ids[0]);
        assert_eq!(changes[0].op, ChangeOp::Put);
    }

    #[test]
    fn a_vector_no_index_could_take_is_refused_and_nothing_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("s.db"), StoreConfig::default()).unwrap();
        let user = UserId::new("reembed-u").unwrap();
        let agent = AgentId::new("reembed-a").unwrap();
        let id = store
            .write(&Interaction {
                user,
                agent,
                fragments: vec![fragment(user, agent, vec![1.0, 0.0])],
                idempotency_key: None,
            })
            .unwrap()
            .ids[0];
        let head = store.head().unwrap();
        for vector in [vec![f32::NAN, 0.0], vec![f32::INFINITY, 0.0], Vec::new()] {
            let bad = Embedding {
                embedder: "new".to_owned(),
                vector,
            };
            let err = store.replace_embeddings(&[(id, bad)]).unwrap_err();
            assert!(matches!(err, Error::InvalidInput(_)), "{err}");
        }
        assert_eq!(store.head().unwrap(), head, "nothing was announced");
    }
}
