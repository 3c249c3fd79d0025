//! Encoding of core types into SQLite columns and back.
//!
//! Principal ids are stored by name (the interned number is process-local);
//! sets as JSON arrays of names; vectors as little-endian f32 blobs. Anything
//! that does not decode is a [`Error::Corrupt`].

use std::collections::BTreeSet;

use colmem_core::{
    AgentId, CardFields, CardRelation, Embedding, Fragment, FragmentId, Granularity, GroupId, Kind,
    Provenance, ResourceId, Scope, Source, Timestamp, UserId, Validity,
};
use rusqlite::Row;

use crate::error::{Error, Result};

/// The columns [`fragment_from_row`] reads, in order; `f` is `fragments`, `s` its source row.
pub(crate) const FRAGMENT_COLUMNS: &str = "f.id, f.key, f.content, f.granularity, f.kind, \
     f.scope, f.scope_group, f.valid_from, f.valid_until, f.keywords, f.user, f.created_at, \
     f.superseded_at, f.superseded_by, f.deleted_at, \
     (SELECT json_group_array(agent) FROM fragment_agents WHERE fragment = f.id), \
     (SELECT json_group_array(resource) FROM fragment_resources WHERE fragment = f.id), \
     s.session, s.turns, \
     (SELECT json_group_array(parent) FROM \
        (SELECT parent FROM fragment_parents WHERE fragment = f.id ORDER BY position))";

/// The `FROM` clause that goes with [`FRAGMENT_COLUMNS`].
pub(crate) const FRAGMENT_FROM: &str =
    "fragments f LEFT JOIN fragment_sources s ON s.fragment = f.id";

pub(crate) fn granularity_from_str(s: &str) -> Result<Granularity> {
    Granularity::ALL
        .into_iter()
        .find(|g| g.as_str() == s)
        .ok_or_else(|| Error::corrupt(format!("unknown granularity {s:?}")))
}

pub(crate) fn kind_from_str(s: &str) -> Result<Kind> {
    [Kind::Conversation, Kind::Observation, Kind::Trace]
        .into_iter()
        .find(|k| k.as_str() == s)
        .ok_or_else(|| Error::corrupt(format!("unknown kind {s:?}")))
}

/// The `(scope, scope_group)` columns of a scope.
pub(crate) fn scope_columns(scope: Scope) -> (&'static str, Option<&'static str>) {
    match scope {
        Scope::Agent => ("agent", None),
        Scope::User => ("user", None),
        Scope::Group(g) => ("group", Some(g.as_str())),
        Scope::Global => ("global", None),
    }
}

fn scope_from_columns(scope: &str, group: Option<&str>) -> Result<Scope> {
    Ok(match (scope, group) {
        ("agent", None) => Scope::Agent,
        ("user", None) => Scope::User,
        ("global", None) => Scope::Global,
        ("group", Some(g)) => {
            Scope::Group(GroupId::new(g).map_err(|e| Error::corrupt(e.to_string()))?)
        }
        _ => return Err(Error::corrupt(format!("unknown scope {scope:?}"))),
    })
}

pub(crate) fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| Error::InvalidInput(format!("cannot encode value: {e}")))
}

pub(crate) fn from_json<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::corrupt(format!("bad {what}: {e}")))
}

fn names<T>(
    what: &str,
    text: &str,
    parse: impl Fn(&str) -> Result<T, colmem_core::Error>,
) -> Result<Vec<T>> {
    let raw: Vec<String> = from_json(what, text)?;
    raw.iter()
        .map(|name| parse(name).map_err(|e| Error::corrupt(e.to_string())))
        .collect()
}

pub(crate) fn ts(t: Timestamp) -> i64 {
    t.as_millis()
}

fn opt_ts(v: Option<i64>) -> Option<Timestamp> {
    v.map(Timestamp::from_millis)
}

pub(crate) fn fragment_id(v: i64) -> Result<FragmentId> {
    u64::try_from(v)
        .map(FragmentId)
        .map_err(|_| Error::corrupt(format!("negative fragment id {v}")))
}

pub(crate) fn id_param(id: FragmentId) -> Result<i64> {
    i64::try_from(id.0).map_err(|_| Error::NotFound { id })
}

/// A fragment from a row selected with [`FRAGMENT_COLUMNS`].
pub(crate) fn fragment_from_row(row: &Row<'_>) -> Result<Fragment> {
    let id = fragment_id(row.get(0)?)?;
    let granularity = granularity_from_str(&row.get::<_, String>(3)?)?;
    let kind = kind_from_str(&row.get::<_, String>(4)?)?;
    let scope = scope_from_columns(
        &row.get::<_, String>(5)?,
        row.get::<_, Option<String>>(6)?.as_deref(),
    )?;
    let validity = Validity::new(Timestamp::from_millis(row.get(7)?), opt_ts(row.get(8)?))
        .map_err(|e| Error::corrupt(e.to_string()))?;
    let keywords: Vec<String> = from_json("keywords", &row.get::<_, String>(9)?)?;
    let user =
        UserId::new(&row.get::<_, String>(10)?).map_err(|e| Error::corrupt(e.to_string()))?;
    let agents: BTreeSet<AgentId> = names("agents", &row.get::<_, String>(15)?, AgentId::new)?
        .into_iter()
        .collect();
    let resources: BTreeSet<ResourceId> =
        names("resources", &row.get::<_, String>(16)?, ResourceId::new)?
            .into_iter()
            .collect();
    let session: Option<String> = row.get(17)?;
    let turns: Vec<String> = match row.get::<_, Option<String>>(18)? {
        Some(text) => from_json("turns", &text)?,
        None => Vec::new(),
    };
    let parents: Vec<i64> = from_json("parents", &row.get::<_, String>(19)?)?;
    let parents = parents
        .into_iter()
        .map(fragment_id)
        .collect::<Result<Vec<_>>>()?;
    Ok(Fragment {
        id,
        key: row.get(1)?,
        content: row.get(2)?,
        granularity,
        kind,
        scope,
        provenance: Provenance {
            created_at: Timestamp::from_millis(row.get(11)?),
            user,
            agents,
            resources,
            source: Source {
                session,
                turns,
                parents,
            },
        },
        validity,
        keywords,
        superseded_at: opt_ts(row.get(12)?),
        superseded_by: row
            .get::<_, Option<i64>>(13)?
            .map(fragment_id)
            .transpose()?,
        deleted_at: opt_ts(row.get(14)?),
    })
}

/// The blob of a vector.
pub(crate) fn vector_blob(vector: &[f32]) -> Vec<u8> {
    let mut blob = vec![0u8; vector.len() * 4];
    for (bytes, x) in blob.chunks_exact_mut(4).zip(vector) {
        bytes.copy_from_slice(&x.to_le_bytes());
    }
    blob
}

/// An embedding from its columns.
pub(crate) fn embedding_from_columns(embedder: String, blob: &[u8]) -> Result<Embedding> {
    if !blob.len().is_multiple_of(4) {
        return Err(Error::corrupt(
            "an embedding blob is not a whole number of f32",
        ));
    }
    let vector = blob
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok(Embedding { embedder, vector })
}

/// The `(relation, precondition)` columns of a card relation.
pub(crate) fn relation_columns(relation: &CardRelation) -> (&'static str, Option<&str>) {
    match relation {
        CardRelation::Constrains { precondition } => ("constrains", Some(precondition.as_str())),
        other => (other.as_str(), None),
    }
}

pub(crate) fn relation_from_columns(
    relation: &str,
    precondition: Option<String>,
) -> Result<CardRelation> {
    Ok(match (relation, precondition) {
        ("supports", None) => CardRelation::Supports,
        ("satisfies", None) => CardRelation::Satisfies,
        ("conflicts", None) => CardRelation::Conflicts,
        ("constrains", Some(precondition)) => CardRelation::Constrains { precondition },
        (other, _) => return Err(Error::corrupt(format!("unknown card relation {other:?}"))),
    })
}

pub(crate) fn card_fields(text: &str) -> Result<CardFields> {
    from_json("card fields", text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_bit_exactly() {
        let v = vec![0.0, -1.5, f32::MIN_POSITIVE, 3.25e7];
        let e = embedding_from_columns("e".into(), &vector_blob(&v)).unwrap();
        assert_eq!(e.vector, v);
        assert!(embedding_from_columns("e".into(), &[1, 2, 3]).is_err());
    }

    #[test]
    fn scopes_round_trip() {
        let g = GroupId::new("codec-crew").unwrap();
        for scope in [Scope::Agent, Scope::User, Scope::Group(g), Scope::Global] {
            let (s, group) = scope_columns(scope);
            assert_eq!(scope_from_columns(s, group).unwrap(), scope);
        }
        assert!(scope_from_columns("group", None).is_err());
        assert!(scope_from_columns("everyone", None).is_err());
    }
}
