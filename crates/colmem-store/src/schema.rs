//! The SQLite schema and its migrations, tracked in the `schema_version` table.
//!
//! Migration `i` (1-based) brings a file from version `i - 1` to `i`. Opening an
//! older file applies the missing ones in one transaction; opening a newer file
//! is refused, because this build would not know how to keep its invariants.

use rusqlite::{Connection, OptionalExtension};

use crate::error::{Error, Result};

/// The migrations, in order; the schema version of a file is the number applied.
const MIGRATIONS: &[&str] = &[
    // 1: fragments, provenance, embeddings, access events, audit, changes, idempotency.
    r#"
    CREATE TABLE fragments (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        key           TEXT,
        content       TEXT NOT NULL,
        granularity   TEXT NOT NULL,
        kind          TEXT NOT NULL,
        scope         TEXT NOT NULL CHECK (scope IN ('agent', 'user', 'group', 'global')),
        scope_group   TEXT CHECK ((scope = 'group') = (scope_group IS NOT NULL)),
        valid_from    INTEGER NOT NULL,
        valid_until   INTEGER CHECK (valid_until IS NULL OR valid_until > valid_from),
        keywords      TEXT NOT NULL,
        user          TEXT NOT NULL,
        created_at    INTEGER NOT NULL,
        superseded_at INTEGER,
        superseded_by INTEGER,
        deleted_at    INTEGER
    );
    CREATE INDEX fragments_group ON fragments (scope_group) WHERE scope_group IS NOT NULL;
    CREATE INDEX fragments_key ON fragments (key) WHERE key IS NOT NULL;

    CREATE TABLE fragment_agents (
        fragment INTEGER NOT NULL REFERENCES fragments (id) ON DELETE CASCADE,
        agent    TEXT NOT NULL,
        PRIMARY KEY (fragment, agent)
    ) WITHOUT ROWID;
    CREATE TABLE fragment_resources (
        fragment INTEGER NOT NULL REFERENCES fragments (id) ON DELETE CASCADE,
        resource TEXT NOT NULL,
        PRIMARY KEY (fragment, resource)
    ) WITHOUT ROWID;
    CREATE TABLE fragment_sources (
        fragment INTEGER PRIMARY KEY REFERENCES fragments (id) ON DELETE CASCADE,
        session  TEXT,
        turns    TEXT NOT NULL
    );
    CREATE TABLE fragment_parents (
        fragment INTEGER NOT NULL REFERENCES fragments (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        parent   INTEGER NOT NULL,
        PRIMARY KEY (fragment, position)
    ) WITHOUT ROWID;

    CREATE TRIGGER fragments_provenance_immutable
    BEFORE UPDATE OF user, created_at ON fragments
    BEGIN SELECT RAISE(ABORT, 'provenance is immutable'); END;
    CREATE TRIGGER fragment_agents_immutable BEFORE UPDATE ON fragment_agents
    BEGIN SELECT RAISE(ABORT, 'provenance is immutable'); END;
    CREATE TRIGGER fragment_resources_immutable BEFORE UPDATE ON fragment_resources
    BEGIN SELECT RAISE(ABORT, 'provenance is immutable'); END;
    CREATE TRIGGER fragment_sources_immutable BEFORE UPDATE ON fragment_sources
    BEGIN SELECT RAISE(ABORT, 'provenance is immutable'); END;
    CREATE TRIGGER fragment_parents_immutable BEFORE UPDATE ON fragment_parents
    BEGIN SELECT RAISE(ABORT, 'provenance is immutable'); END;

    CREATE TABLE embeddings (
        fragment INTEGER PRIMARY KEY REFERENCES fragments (id) ON DELETE CASCADE,
        embedder TEXT NOT NULL,
        dim      INTEGER NOT NULL,
        vector   BLOB NOT NULL CHECK (length(vector) = 4 * dim)
    );

    CREATE TABLE access_events (
        seq  INTEGER PRIMARY KEY AUTOINCREMENT,
        at   INTEGER NOT NULL,
        body TEXT NOT NULL
    );
    CREATE TRIGGER access_events_append_only_update BEFORE UPDATE ON access_events
    BEGIN SELECT RAISE(ABORT, 'the access event log is append-only'); END;
    CREATE TRIGGER access_events_append_only_delete BEFORE DELETE ON access_events
    BEGIN SELECT RAISE(ABORT, 'the access event log is append-only'); END;

    CREATE TABLE audit (
        seq   INTEGER PRIMARY KEY,
        at    INTEGER NOT NULL,
        event TEXT NOT NULL,
        prev  BLOB NOT NULL,
        hash  BLOB NOT NULL
    );
    CREATE TABLE audit_anchor (
        id   INTEGER PRIMARY KEY CHECK (id = 1),
        seq  INTEGER NOT NULL,
        hash BLOB NOT NULL
    );
    CREATE TABLE audit_head (
        id   INTEGER PRIMARY KEY CHECK (id = 1),
        seq  INTEGER NOT NULL,
        hash BLOB NOT NULL
    );

    CREATE TABLE changes (
        seq      INTEGER PRIMARY KEY AUTOINCREMENT,
        fragment INTEGER NOT NULL,
        op       TEXT NOT NULL CHECK (op IN ('put', 'meta', 'delete', 'purge'))
    );

    CREATE TABLE idempotency (
        key    TEXT PRIMARY KEY,
        digest BLOB NOT NULL,
        ids    TEXT NOT NULL
    );
    "#,
    // 2: strategy cards and their typed edges, for ConMem.
    r#"
    CREATE TABLE cards (
        fragment INTEGER PRIMARY KEY REFERENCES fragments (id) ON DELETE CASCADE,
        sign     TEXT NOT NULL CHECK (sign IN ('positive', 'negative')),
        fields   TEXT NOT NULL
    );
    CREATE TABLE card_edges (
        src          INTEGER NOT NULL REFERENCES cards (fragment) ON DELETE CASCADE,
        dst          INTEGER NOT NULL REFERENCES cards (fragment) ON DELETE CASCADE,
        relation     TEXT NOT NULL CHECK (relation IN ('supports', 'constrains', 'satisfies', 'conflicts')),
        precondition TEXT CHECK ((relation = 'constrains') = (precondition IS NOT NULL)),
        weight       REAL NOT NULL,
        PRIMARY KEY (src, dst, relation)
    ) WITHOUT ROWID;
    CREATE INDEX card_edges_dst ON card_edges (dst);
    "#,
    // 3: access classes. The read rule's scope and principal conditions depend
    // only on (scope, group, owner, agents, resources), which never change after
    // the write; fragments that share them share a class, so a read evaluates the
    // rule once per class (a few thousand rows) instead of once per fragment.
    // `class_counts.live` counts a class's fragments that are neither superseded
    // nor deleted and `newest` is the latest record time ever written to it, so a
    // count of the current view adds counters instead of scanning. The insert
    // counts its fragment (a trigger there would make every insert keep a
    // statement journal); triggers count supersedes, deletes and purges.
    r#"
    CREATE TABLE access_classes (
        id          INTEGER PRIMARY KEY,
        signature   TEXT NOT NULL UNIQUE,
        scope       TEXT NOT NULL,
        scope_group TEXT,
        owner       TEXT,
        agents      TEXT NOT NULL,
        resources   TEXT NOT NULL
    );
    -- Apart from the classes, so that the rows a write touches sit on few pages.
    CREATE TABLE class_counts (
        class  INTEGER PRIMARY KEY REFERENCES access_classes (id),
        live   INTEGER NOT NULL,
        newest INTEGER NOT NULL
    );
    -- Set once by the insert and kept by a trigger below (no foreign key, so
    -- that the column can be dropped again to rebuild the classes).
    ALTER TABLE fragments ADD COLUMN class INTEGER;
    -- Versions closed or deleted after a reader's "now" are the only ones a
    -- counter-based count looks at one by one.
    CREATE INDEX fragments_superseded ON fragments (superseded_at) WHERE superseded_at IS NOT NULL;
    CREATE INDEX fragments_deleted ON fragments (deleted_at) WHERE deleted_at IS NOT NULL;
    -- Reads find group-scoped fragments through their class now.
    DROP INDEX fragments_group;

    CREATE TEMP TABLE class_of AS
    SELECT id AS fragment,
           json_array(scope, scope_group, owner, json(agents), json(resources)) AS signature,
           scope, scope_group, owner, agents, resources
    FROM (SELECT f.id, f.scope, f.scope_group,
                 CASE WHEN f.scope IN ('user', 'agent') THEN f.user END AS owner,
                 (SELECT json_group_array(agent) FROM
                    (SELECT agent FROM fragment_agents WHERE fragment = f.id ORDER BY agent)) AS agents,
                 (SELECT json_group_array(resource) FROM
                    (SELECT resource FROM fragment_resources WHERE fragment = f.id ORDER BY resource)) AS resources
          FROM fragments f);
    INSERT OR IGNORE INTO access_classes (signature, scope, scope_group, owner, agents, resources)
    SELECT signature, scope, scope_group, owner, agents, resources FROM class_of ORDER BY fragment;
    UPDATE fragments SET class = c.id
    FROM class_of o JOIN access_classes c ON c.signature = o.signature
    WHERE fragments.id = o.fragment;
    DROP TABLE temp.class_of;
    INSERT INTO class_counts (class, live, newest)
    SELECT class, sum(superseded_at IS NULL AND deleted_at IS NULL), max(created_at)
    FROM fragments GROUP BY class;

    CREATE TRIGGER access_classes_immutable
    BEFORE UPDATE OF signature, scope, scope_group, owner, agents, resources ON access_classes
    BEGIN SELECT RAISE(ABORT, 'an access class is immutable'); END;
    CREATE TRIGGER fragments_class_immutable
    BEFORE UPDATE OF class, scope, scope_group ON fragments
    BEGIN SELECT RAISE(ABORT, 'the scope and access class of a fragment are immutable'); END;
    CREATE TRIGGER fragments_count_update AFTER UPDATE OF superseded_at, deleted_at ON fragments
    BEGIN
        UPDATE class_counts SET
            live = live - (OLD.superseded_at IS NULL AND OLD.deleted_at IS NULL)
                        + (NEW.superseded_at IS NULL AND NEW.deleted_at IS NULL)
        WHERE class = NEW.class;
    END;
    CREATE TRIGGER fragments_count_delete AFTER DELETE ON fragments
    BEGIN
        UPDATE class_counts SET live = live - (OLD.superseded_at IS NULL AND OLD.deleted_at IS NULL)
        WHERE class = OLD.class;
    END;
    "#,
    // 4: secrets of this store, made when the store is: the key of the pseudonyms
    // that anonymisation puts in place of user ids (a pseudonym anyone could
    // compute from a user id would name the user). SQLite's randomness comes
    // from the operating system. And the record time of each access event, which
    // no later event may be dated before (events logged before this migration
    // count as recorded when it was applied).
    r#"
    CREATE TABLE secrets (
        name  TEXT PRIMARY KEY,
        value BLOB NOT NULL CHECK (length(value) = 32)
    );
    INSERT INTO secrets (name, value) VALUES ('pseudonym', randomblob(32));
    ALTER TABLE access_events ADD COLUMN recorded INTEGER;
    CREATE INDEX access_events_recorded ON access_events (recorded);
    "#,
    // 5: a random stamp on each change, so an index can tell that its snapshot was
    // made from this store's history (a backup keeps the stamps) and not from another
    // store's, or from a backup's written on after it was restored. The trigger
    // stamps every change however it is inserted; changes made before this migration
    // get theirs now.
    r#"
    ALTER TABLE changes ADD COLUMN stamp INTEGER NOT NULL DEFAULT 0;
    UPDATE changes SET stamp = random();
    CREATE TRIGGER changes_stamp AFTER INSERT ON changes
    BEGIN
        UPDATE changes SET stamp = random() WHERE seq = NEW.seq;
    END;
    "#,
    // 6: a user's conversation is personal. What the AMA pipeline drew from a user's
    // turns (raw turns, facts, episodes, profile entries: observations with source
    // turns) went to the agent's crew before; it becomes kind `conversation` in scope
    // `user`, in the access class of the same owner, agents and resources. The
    // narrowed ids wait in `narrowed` until the store audits them (see
    // `SqliteStore::open`). Fresh stamps on every change make an index snapshot
    // taken before this migration rebuild from the store, scopes and all.
    r#"
    CREATE TABLE narrowed (
        fragment    INTEGER PRIMARY KEY,
        scope_group TEXT NOT NULL
    );
    INSERT INTO narrowed (fragment, scope_group)
    SELECT f.id, f.scope_group FROM fragments f JOIN fragment_sources s ON s.fragment = f.id
    WHERE f.kind = 'observation' AND f.scope = 'group'
      AND f.granularity IN ('raw_turn', 'fact', 'episode', 'profile')
      AND s.turns <> '[]';
    INSERT OR IGNORE INTO access_classes (signature, scope, scope_group, owner, agents, resources)
    SELECT json_array('user', NULL, f.user, json(c.agents), json(c.resources)),
           'user', NULL, f.user, c.agents, c.resources
    FROM narrowed n JOIN fragments f ON f.id = n.fragment JOIN access_classes c ON c.id = f.class;
    DROP TRIGGER fragments_class_immutable;
    UPDATE fragments SET kind = 'conversation', scope = 'user', scope_group = NULL,
        class = (SELECT mine.id FROM access_classes AS old, access_classes AS mine
                 WHERE old.id = fragments.class
                   AND mine.signature = json_array('user', NULL, fragments.user,
                                                   json(old.agents), json(old.resources)))
    WHERE id IN (SELECT fragment FROM narrowed);
    CREATE TRIGGER fragments_class_immutable
    BEFORE UPDATE OF class, scope, scope_group ON fragments
    BEGIN SELECT RAISE(ABORT, 'the scope and access class of a fragment are immutable'); END;
    INSERT OR IGNORE INTO class_counts (class, live, newest)
    SELECT id, 0, 0 FROM access_classes;
    UPDATE class_counts SET
        live = (SELECT count(*) FROM fragments f
                WHERE f.class = class_counts.class
                  AND f.superseded_at IS NULL AND f.deleted_at IS NULL),
        newest = max(newest, coalesce((SELECT max(created_at) FROM fragments f
                                      WHERE f.class = class_counts.class), 0))
    WHERE EXISTS (SELECT 1 FROM narrowed);
    UPDATE changes SET stamp = random() WHERE EXISTS (SELECT 1 FROM narrowed);
    "#,
    // 7: erasure. A deleted fragment's text (content, key, keywords, embedding,
    // card) is erased some time after its deletion; `erased_at` says when, and the
    // row stays as a tombstone of ids and times. The partial index holds only the
    // deleted fragments still to erase, so finding those due reads no tombstone.
    r#"
    ALTER TABLE fragments ADD COLUMN erased_at INTEGER;
    CREATE INDEX fragments_unerased ON fragments (deleted_at)
        WHERE deleted_at IS NOT NULL AND erased_at IS NULL;
    "#,
    // 8: write entries record a digest of each fragment's scope and provenance
    // beside the digest of its text, from the first entry after this migration
    // on, which every later write entry must carry; the verifier checks the
    // provenance of the fragments written since, and only the text of those
    // written before (their entries keep their hashes).
    r#"
    CREATE TABLE audit_format (
        id              INTEGER PRIMARY KEY CHECK (id = 1),
        provenance_from INTEGER NOT NULL
    );
    INSERT INTO audit_format (id, provenance_from)
    VALUES (1, coalesce((SELECT seq FROM audit_head WHERE id = 1), 0) + 1);
    "#,
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The schema version of an open database (0 for an empty file).
pub(crate) fn version(conn: &Connection) -> Result<i64> {
    let has_table: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version')",
        [],
        |row| row.get(0),
    )?;
    if !has_table {
        let objects: i64 =
            conn.query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))?;
        if objects > 0 {
            return Err(Error::corrupt(
                "the file is a SQLite database but not a colmem store (no schema_version table)",
            ));
        }
        return Ok(0);
    }
    let version: Option<i64> = conn
        .query_row("SELECT max(version) FROM schema_version", [], |row| {
            row.get(0)
        })
        .optional()?
        .flatten();
    Ok(version.unwrap_or(0))
}

/// Brings the database up to `target` (at most [`SCHEMA_VERSION`]) in one transaction.
pub(crate) fn migrate_to(conn: &mut Connection, target: i64, now_ms: i64) -> Result<i64> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let found = version(&tx)?;
    if found > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found == 0 {
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_version (
                 version    INTEGER PRIMARY KEY,
                 applied_at INTEGER NOT NULL
             )",
        )?;
    }
    for (index, sql) in MIGRATIONS.iter().enumerate() {
        let v = index as i64 + 1;
        if v <= found || v > target {
            continue;
        }
        tx.execute_batch(sql)?;
        tx.execute(
            "INSERT INTO schema_version (version, applied_at) VALUES (?1, ?2)",
            (v, now_ms),
        )?;
    }
    tx.commit()?;
    Ok(target.max(found))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn fresh_database_reaches_the_latest_version() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(version(&conn).unwrap(), 0);
        migrate_to(&mut conn, SCHEMA_VERSION, 0).unwrap();
        assert_eq!(version(&conn).unwrap(), SCHEMA_VERSION);
        // Idempotent: a second run applies nothing.
        migrate_to(&mut conn, SCHEMA_VERSION, 0).unwrap();
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM schema_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, SCHEMA_VERSION);
    }

    #[test]
    fn every_change_gets_a_random_stamp() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate_to(&mut conn, 4, 0).unwrap();
        conn.execute_batch(
            "INSERT INTO changes (fragment, op) VALUES (1, 'put'), (2, 'put'), (1, 'meta')",
        )
        .unwrap();
        migrate_to(&mut conn, SCHEMA_VERSION, 0).unwrap();
        // And every change made after it, however it is inserted.
        conn.execute_batch("INSERT INTO changes (fragment, op) VALUES (3, 'put'), (3, 'delete')")
            .unwrap();
        let stamps: BTreeSet<i64> = conn
            .prepare("SELECT stamp FROM changes")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(stamps.len(), 5, "{stamps:?}");
        assert!(!stamps.contains(&0), "{stamps:?}");
    }

    #[test]
    fn a_foreign_database_is_not_taken_for_an_empty_store() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE other (x)").unwrap();
        assert!(matches!(version(&conn), Err(Error::Corrupt { .. })));
    }
}
