//! [`SqliteStore`]: the [`FragmentStore`] on one SQLite file (or in memory).
//!
//! One writer connection and a small pool of reader connections, each behind a
//! mutex, so the store is `Send + Sync` and readers never wait for the writer
//! (WAL). Every write is one `BEGIN IMMEDIATE` transaction; "busy" and "locked"
//! answers are retried with jittered exponential backoff up to
//! [`StoreConfig::busy_deadline`], then reported as [`Error::Busy`].

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use colmem_core::{
    AccessEvent, AgentId, AuditEntry, AuditEvent, CardEdge, CardFields, Change, ChangeFeed,
    ChangeOp, Clock, Digest, Embedding, FeedError, Fragment, FragmentId, Granularity, NewFragment,
    ReadFilter, Scope, StoredFragment, SystemClock, Timestamp, UserId, Validity,
};
use rusqlite::{
    Connection, OpenFlags, OptionalExtension, ToSql, Transaction, TransactionBehavior, params,
    params_from_iter,
};

use crate::audit::AuditStatus;
use crate::codec::{
    self, FRAGMENT_COLUMNS, FRAGMENT_FROM, fragment_from_row, fragment_id, id_param, json, ts,
};
use crate::erasure;
use crate::error::{Error, Result};
use crate::read_sql::{CountPlan, Sql, push_order_limit, push_where};
use crate::schema::{self, SCHEMA_VERSION};
use crate::store::{
    CardRecord, CardWrite, Delete, Erase, FragmentStore, Interaction, ListQuery, Purge, PurgeMany,
    ReadRecord, Supersede, SupersedeBy, VisibilityRecord, WriteReceipt,
};

/// Whether a store may change its file.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Mode {
    /// Reads and writes; creates and upgrades the file.
    #[default]
    ReadWrite,
    /// Reads only (SQLite `mode=ro`); every write returns [`Error::ReadOnly`].
    ReadOnly,
}

/// How hard SQLite pushes each commit to disk.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Synchronous {
    /// WAL `synchronous=NORMAL`: a process crash loses nothing committed; a power
    /// cut may roll back the last commits, never corrupt the file.
    #[default]
    Normal,
    /// `synchronous=FULL`: every commit survives a power cut too, at a cost per commit.
    Full,
}

/// How a [`SqliteStore`] behaves.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// The largest text value (content, key, keywords, card fields, embedding bytes), in bytes.
    pub max_value_bytes: usize,
    /// How long to keep retrying while the database is busy before [`Error::Busy`].
    pub busy_deadline: Duration,
    /// A cap on the database size in pages (`PRAGMA max_page_count`); past it, writes fail with [`Error::Full`].
    pub max_pages: Option<u64>,
    /// Read-write or read-only.
    pub mode: Mode,
    /// Reader connections kept open for reuse (more are opened under load).
    pub readers: usize,
    /// Commit durability.
    pub synchronous: Synchronous,
    /// The clock that stamps record times (`superseded_at`, `deleted_at`, audit times);
    /// the store's [now](SqliteStore::now) never falls below the last record.
    pub clock: Arc<dyn Clock>,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            max_value_bytes: 64 * 1024,
            busy_deadline: Duration::from_secs(10),
            max_pages: None,
            mode: Mode::ReadWrite,
            readers: 4,
            synchronous: Synchronous::Normal,
            clock: Arc::new(SystemClock),
        }
    }
}

#[derive(Clone, Debug)]
enum Location {
    File(PathBuf),
    Memory,
}

/// The SQLite fragment store. See the [crate docs](crate).
pub struct SqliteStore {
    location: Location,
    config: StoreConfig,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    jitter: RandomState,
    /// Committed access classes, taken while holding `writer` (see [`Inserter`]).
    classes: Mutex<HashMap<ClassKey, i64>>,
    /// A purge committed but its checkpoint was held off by readers: purged text may
    /// still lie in the write-ahead log. Every later write and checkpoint tries again.
    checkpoint_due: AtomicBool,
    /// The latest record time (ms) the store holds or has written: its now never
    /// falls below it.
    floor: AtomicI64,
    /// Whether the clock was last seen behind `floor` (warned once per step back).
    held: AtomicBool,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("location", &self.location)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The SQLite page size is 4096 and a file starts with this magic string.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// How long SQLite itself waits on a lock before the store's own backoff takes over.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_millis(25);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock dropped the open transaction, which rolled back.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A busy answer, for states SQLite reports in a result row rather than an error.
fn busy() -> Error {
    Error::Sqlite(rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
        Some("checkpoint blocked by a reader".to_owned()),
    ))
}

fn ro_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?mode=ro");
    uri
}

impl SqliteStore {
    /// Opens (creating if needed, upgrading if older) the store at `path`.
    ///
    /// A file that is not a SQLite database is refused untouched; a file from a
    /// newer colmem gives [`Error::SchemaTooNew`].
    pub fn open(path: impl AsRef<Path>, config: StoreConfig) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        check_header(&path)?;
        Self::open_at(Location::File(path), config)
    }

    /// A fresh store in memory: one connection, nothing on disk.
    pub fn open_in_memory(config: StoreConfig) -> Result<Self> {
        Self::open_at(Location::Memory, config)
    }

    fn open_at(location: Location, config: StoreConfig) -> Result<Self> {
        let store = SqliteStore {
            writer: Mutex::new(open_connection(&location, &config)?),
            readers: Mutex::new(Vec::new()),
            location,
            config,
            jitter: RandomState::new(),
            classes: Mutex::new(HashMap::new()),
            checkpoint_due: AtomicBool::new(false),
            floor: AtomicI64::new(i64::MIN),
            held: AtomicBool::new(false),
        };
        let found = store.retry(|| schema::version(&lock(&store.writer)))?;
        if found > SCHEMA_VERSION {
            return Err(Error::SchemaTooNew {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        if found < SCHEMA_VERSION {
            if store.config.mode == Mode::ReadOnly {
                return Err(Error::SchemaTooOld {
                    found,
                    supported: SCHEMA_VERSION,
                });
            }
            let now = ts(store.config.clock.now());
            store.retry(|| schema::migrate_to(&mut lock(&store.writer), SCHEMA_VERSION, now))?;
        }
        if let Some(latest) = store.latest_record_time()? {
            store.floor.fetch_max(ts(latest), Ordering::SeqCst);
        }
        if found < SCHEMA_VERSION {
            let now = store.now();
            store.retry(|| audit_narrowed(&mut lock(&store.writer), now))?;
            store.floor.fetch_max(ts(now), Ordering::SeqCst);
        }
        Ok(store)
    }

    /// The store's "now": its clock, but never earlier than the last event it
    /// recorded (the latest audit entry or access change, or a write of this
    /// process). A clock that steps back is logged, once per step, and now is held
    /// at the last record until the clock passes it: what was recorded stays in the
    /// past, so a change recorded now (a revocation) is never dated before it.
    pub fn now(&self) -> Timestamp {
        let clock = self.config.clock.now();
        let floor = self.floor.load(Ordering::SeqCst);
        if ts(clock) >= floor {
            self.held.store(false, Ordering::SeqCst);
            return clock;
        }
        let held = Timestamp::from_millis(floor);
        if !self.held.swap(true, Ordering::SeqCst) {
            tracing::warn!(
                %clock,
                %held,
                "the clock reads earlier than the last recorded event: now is held there until the clock passes it"
            );
        }
        held
    }

    /// The file, or `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        match &self.location {
            Location::File(path) => Some(path),
            Location::Memory => None,
        }
    }

    /// The schema version of the open file.
    pub fn schema_version(&self) -> Result<i64> {
        self.read(schema::version)
    }

    /// The 32-byte secret `name` made with the store (`pseudonym`: the key of
    /// anonymisation's pseudonyms), the same for every process and backup of it.
    pub fn secret(&self, name: &str) -> Result<[u8; 32]> {
        let value: Option<Vec<u8>> = self.read(|conn| {
            Ok(conn
                .prepare_cached("SELECT value FROM secrets WHERE name = ?1")?
                .query_row([name], |row| row.get(0))
                .optional()?)
        })?;
        let value =
            value.ok_or_else(|| Error::corrupt(format!("the secret {name:?} is missing")))?;
        <[u8; 32]>::try_from(value.as_slice())
            .map_err(|_| Error::corrupt(format!("the secret {name:?} is not 32 bytes")))
    }

    /// Runs `PRAGMA integrity_check`; a damaged file gives [`Error::Corrupt`].
    pub fn integrity_check(&self) -> Result<()> {
        let report: Vec<String> = self.read(|conn| {
            let mut stmt = conn.prepare("PRAGMA integrity_check")?;
            let rows = stmt.query_map([], |row| row.get::<_, String>(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })?;
        if report == ["ok"] {
            Ok(())
        } else {
            Err(Error::corrupt(report.join("; ")))
        }
    }

    /// The latest record time of the audit log and the access event log: every
    /// write and access change is audited when recorded (but the audit may be
    /// archived, and an access change may be dated later, scheduled for then).
    pub fn latest_record_time(&self) -> Result<Option<Timestamp>> {
        self.read(|conn| {
            let audited: Option<i64> = conn
                .prepare_cached("SELECT at FROM audit ORDER BY seq DESC LIMIT 1")?
                .query_row([], |row| row.get(0))
                .optional()?;
            let access: Option<i64> = conn
                .prepare_cached(LAST_ACCESS_RECORD)?
                .query_row([], |row| row.get(0))?;
            Ok(audited.max(access).map(Timestamp::from_millis))
        })
    }

    /// Copies the write-ahead log into the database file and truncates it
    /// (`wal_checkpoint(TRUNCATE)`), retrying while readers block it.
    pub fn checkpoint(&self) -> Result<()> {
        if matches!(self.location, Location::Memory) || self.config.mode == Mode::ReadOnly {
            return Ok(());
        }
        self.retry(|| {
            let conn = lock(&self.writer);
            let blocked: i64 =
                conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get(0))?;
            if blocked != 0 { Err(busy()) } else { Ok(()) }
        })?;
        self.checkpoint_due.store(false, Ordering::SeqCst);
        Ok(())
    }

    /// Whether purged text may still lie in the write-ahead log: a purge committed
    /// (the fragment is gone from every read) but readers held its checkpoint off
    /// past the busy deadline. The next write or [`checkpoint`](Self::checkpoint)
    /// tries again.
    pub fn purged_text_in_log(&self) -> bool {
        self.checkpoint_due.load(Ordering::SeqCst)
    }

    /// After text was removed (secure_delete zeroed the freed space), moves the
    /// pages into the file and empties the log, which still held the old text. The
    /// removal is done once committed: readers that hold the checkpoint off past
    /// the deadline leave it due (`purged_text_in_log`), not the removal failed.
    fn flush_freed_space(&self) -> Result<()> {
        match self.checkpoint() {
            Err(Error::Busy { .. }) => {
                self.checkpoint_due.store(true, Ordering::SeqCst);
                Ok(())
            }
            other => other,
        }
    }

    /// One try at the checkpoint a purge left due, after a write.
    fn settle_purges(&self) {
        if self.checkpoint_due.load(Ordering::SeqCst) {
            let conn = lock(&self.writer);
            let blocked = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
                row.get::<_, i64>(0)
            });
            if matches!(blocked, Ok(0)) {
                self.checkpoint_due.store(false, Ordering::SeqCst);
            }
        }
    }

    /// Runs `op` again while SQLite answers busy or locked, with jittered
    /// exponential backoff, until the deadline.
    fn retry<T>(&self, mut op: impl FnMut() -> Result<T>) -> Result<T> {
        let start = Instant::now();
        let mut backoff = Duration::from_millis(1);
        let mut attempt: u64 = 0;
        loop {
            match op() {
                Err(e) if e.is_busy() => {
                    let waited = start.elapsed();
                    if waited >= self.config.busy_deadline {
                        return Err(Error::Busy { waited });
                    }
                    attempt += 1;
                    let jitter_us =
                        self.jitter.hash_one(attempt) % (backoff.as_micros() as u64 + 1);
                    let pause = (backoff + Duration::from_micros(jitter_us))
                        .min(self.config.busy_deadline.saturating_sub(waited));
                    std::thread::sleep(pause);
                    backoff = (backoff * 2).min(Duration::from_millis(50));
                }
                other => return other,
            }
        }
    }

    /// Refuses an embedding no index could take: too long, empty, unnamed, or holding
    /// a number that is not finite.
    pub(crate) fn check_embedding(&self, e: &Embedding) -> Result<()> {
        self.check_len("embedding", e.vector.len() * 4)?;
        if e.vector.is_empty() || e.embedder.is_empty() {
            return Err(Error::InvalidInput(
                "an embedding needs a non-empty vector and an embedder id".to_owned(),
            ));
        }
        if e.vector.iter().any(|x| !x.is_finite()) {
            return Err(Error::InvalidInput(
                "an embedding must hold finite numbers only".to_owned(),
            ));
        }
        Ok(())
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction with the store's
    /// [now](Self::now), which no later record falls below.
    pub(crate) fn write_tx<T>(
        &self,
        mut body: impl FnMut(&Transaction<'_>, Timestamp) -> Result<T>,
    ) -> Result<T> {
        if self.config.mode == Mode::ReadOnly {
            return Err(Error::ReadOnly);
        }
        let out = self.retry(|| {
            let mut conn = lock(&self.writer);
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let now = self.now();
            let out = body(&tx, now)?;
            tx.commit()?;
            self.floor.fetch_max(ts(now), Ordering::SeqCst);
            Ok(out)
        })?;
        self.settle_purges();
        Ok(out)
    }

    /// Runs `body` on a reader connection (the writer's, in memory).
    /// Runs `sql` (a SELECT ending in `WHERE `) under the read filter and query, decoding each row.
    fn filtered_rows<T>(
        &self,
        mut sql: Sql,
        filter: &ReadFilter,
        query: &ListQuery,
        decode: fn(&rusqlite::Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        push_where(&mut sql, filter, query)?;
        push_order_limit(&mut sql, query);
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&sql.text)?;
            let rows =
                stmt.query_map(params_from_iter(sql.params.iter()), |row| Ok(decode(row)))?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row??);
            }
            Ok(out)
        })
    }

    pub(crate) fn read<T>(&self, mut body: impl FnMut(&Connection) -> Result<T>) -> Result<T> {
        self.retry(|| match &self.location {
            Location::Memory => body(&lock(&self.writer)),
            Location::File(_) => {
                let idle = lock(&self.readers).pop();
                let conn = match idle {
                    Some(conn) => conn,
                    None => open_connection(&self.location, &self.config)?,
                };
                let out = body(&conn);
                let mut pool = lock(&self.readers);
                if pool.len() < self.config.readers {
                    pool.push(conn);
                }
                out
            }
        })
    }

    fn check_len(&self, what: &'static str, len: usize) -> Result<()> {
        if len > self.config.max_value_bytes {
            return Err(Error::TooLarge {
                what,
                len,
                limit: self.config.max_value_bytes,
            });
        }
        Ok(())
    }

    fn check_fragment(&self, f: &NewFragment) -> Result<()> {
        self.check_len("content", f.content.len())?;
        self.check_len("key", f.key.as_ref().map_or(0, String::len))?;
        self.check_len("keywords", f.keywords.iter().map(String::len).sum())?;
        self.check_len(
            "source turns",
            f.provenance
                .source
                .turns
                .iter()
                .map(String::len)
                .sum::<usize>()
                + f.provenance.source.session.as_ref().map_or(0, String::len),
        )?;
        if let Some(e) = &f.embedding {
            self.check_embedding(e)?;
        }
        if f.provenance
            .source
            .parents
            .iter()
            .any(|p| i64::try_from(p.0).is_err())
        {
            return Err(Error::InvalidInput(
                "a parent fragment id is out of range".to_owned(),
            ));
        }
        Ok(())
    }

    fn write_items(
        &self,
        user: UserId,
        agent: AgentId,
        items: &[(&NewFragment, Option<&CardFields>)],
        key: Option<&str>,
        replaces: Option<FragmentId>,
    ) -> Result<WriteReceipt> {
        if items.is_empty() {
            return Err(Error::InvalidInput(
                "an interaction needs at least one fragment".to_owned(),
            ));
        }
        let mut cards = Vec::with_capacity(items.len());
        for (fragment, card) in items {
            self.check_fragment(fragment)?;
            let card_json = match card {
                Some(fields) => {
                    let text = json(fields)?;
                    self.check_len("card fields", text.len())?;
                    Some(text)
                }
                None => None,
            };
            cards.push(card_json);
        }
        if let Some(key) = key {
            self.check_len("idempotency key", key.len())?;
        }
        let digest = key.map(|_| batch_digest(user, agent, items, &cards));
        let mut found = HashMap::new();
        let receipt = self.write_tx(|tx, now| {
            // Classes an attempt rolled back (a retry after busy) were never committed:
            // a retry that replays a key must not cache them.
            found.clear();
            if let Some(key) = key {
                let seen: Option<(Vec<u8>, String)> = tx
                    .prepare_cached("SELECT digest, ids FROM idempotency WHERE key = ?1")?
                    .query_row([key], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()?;
                if let Some((seen_digest, ids)) = seen {
                    if digest.is_none_or(|d| seen_digest != d.0) {
                        return Err(Error::IdempotencyConflict {
                            key: key.to_owned(),
                        });
                    }
                    let ids: Vec<u64> = codec::from_json("idempotency ids", &ids)?;
                    return Ok(WriteReceipt {
                        ids: ids.into_iter().map(FragmentId).collect(),
                        replayed: true,
                    });
                }
            }
            let fragments: Vec<&NewFragment> = items.iter().map(|(f, _)| *f).collect();
            let ids = self.insert_fragments(tx, &fragments, &mut found)?;
            let mut audited = Vec::with_capacity(items.len());
            let mut provenance = Vec::with_capacity(items.len());
            for ((&id, (fragment, fields)), text) in ids.iter().zip(items).zip(&cards) {
                if let (Some(fields), Some(text)) = (fields, text) {
                    insert_card(tx, id, fields, text)?;
                }
                audited.push((id, Digest::of_text(&fragment.content)));
                provenance.push(Digest::of_provenance(fragment.scope, &fragment.provenance));
            }
            append_audit_tx(
                tx,
                now,
                &AuditEvent::Write {
                    user,
                    agent,
                    fragments: audited,
                    provenance,
                },
            )?;
            if let (Some(old), Some(&successor)) = (replaces, ids.first()) {
                supersede_by_tx(
                    tx,
                    now,
                    &SupersedeBy {
                        user,
                        agent,
                        old,
                        successor,
                    },
                )?;
            }
            if let (Some(key), Some(digest)) = (key, digest) {
                let raw: Vec<u64> = ids.iter().map(|id| id.0).collect();
                tx.prepare_cached(
                    "INSERT INTO idempotency (key, digest, ids) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![key, digest.0.as_slice(), json(&raw)?])?;
            }
            Ok(WriteReceipt {
                ids,
                replayed: false,
            })
        })?;
        self.remember_classes(found);
        Ok(receipt)
    }

    /// Inserts `fragments` in `tx` (see [`Inserter::insert_all`]); the access
    /// classes it had to look up land in `found`, for [`Self::remember_classes`]
    /// once `tx` has committed.
    fn insert_fragments(
        &self,
        tx: &Transaction<'_>,
        fragments: &[&NewFragment],
        found: &mut HashMap<ClassKey, i64>,
    ) -> Result<Vec<FragmentId>> {
        let known = lock(&self.classes);
        let mut inserter = Inserter::new(tx, &known);
        let ids = inserter.insert_all(fragments)?;
        *found = inserter.found;
        Ok(ids)
    }

    /// Adds the access classes a committed transaction looked up to the cache.
    fn remember_classes(&self, found: HashMap<ClassKey, i64>) {
        if found.is_empty() {
            return;
        }
        let mut known = lock(&self.classes);
        if known.len() + found.len() > CLASS_CACHE_LIMIT {
            known.clear();
        }
        known.extend(found);
    }
}

/// Refuses, without opening it, a file that does not start like a SQLite database, and
/// an empty one.
fn check_header(path: &Path) -> Result<()> {
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(Error::CannotOpen {
                path: path.to_path_buf(),
                detail: e.to_string(),
            });
        }
    };
    let mut header = Vec::with_capacity(16);
    file.by_ref()
        .take(16)
        .read_to_end(&mut header)
        .map_err(|e| Error::CannotOpen {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
    // SQLite would start a new store in an empty file: nothing opened writes one
    // (a store's file holds its first page from the moment it is opened).
    if header.is_empty() {
        Err(Error::EmptyFile {
            path: path.to_path_buf(),
        })
    } else if header == SQLITE_MAGIC {
        Ok(())
    } else {
        Err(Error::NotADatabase {
            path: path.to_path_buf(),
        })
    }
}

fn open_connection(location: &Location, config: &StoreConfig) -> Result<Connection> {
    let conn = match (location, config.mode) {
        (Location::Memory, _) => Connection::open_in_memory()?,
        (Location::File(path), mode) => {
            let opened = match mode {
                Mode::ReadWrite => Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_WRITE
                        | OpenFlags::SQLITE_OPEN_CREATE
                        | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                ),
                Mode::ReadOnly => Connection::open_with_flags(
                    ro_uri(path),
                    OpenFlags::SQLITE_OPEN_READ_ONLY
                        | OpenFlags::SQLITE_OPEN_URI
                        | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                ),
            };
            opened.map_err(|e| match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::NotADatabase) => {
                    Error::NotADatabase { path: path.clone() }
                }
                _ => Error::CannotOpen {
                    path: path.clone(),
                    detail: e.to_string(),
                },
            })?
        }
    };
    let not_a_database = |e: rusqlite::Error| match (e.sqlite_error_code(), location) {
        (Some(rusqlite::ErrorCode::NotADatabase), Location::File(path)) => {
            Error::NotADatabase { path: path.clone() }
        }
        _ => Error::from(e),
    };
    conn.busy_timeout(SQLITE_BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(128);
    // 16 MiB of page cache per connection (negative = KiB): the index pages a
    // batch touches stay in memory (much larger caches cost more per commit).
    conn.pragma_update(None, "cache_size", -16_384)?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(not_a_database)?;
    // Statement journals (a multi-row INSERT keeps one while it may still
    // abort) and the temporary b-trees of sorts stay in memory, never in a file.
    conn.pragma_update(None, "temp_store", "memory")?;
    conn.pragma_update(None, "secure_delete", true)
        .map_err(not_a_database)?;
    if let (Location::File(_), Mode::ReadWrite) = (location, config.mode) {
        // Larger pages hold several 384-d embeddings each (this only takes
        // effect on a new, empty file, before WAL mode is set).
        conn.pragma_update(None, "page_size", 8192)
            .map_err(not_a_database)?;
        let journal: String = conn
            .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))
            .map_err(not_a_database)?;
        if !journal.eq_ignore_ascii_case("wal") {
            return Err(Error::Sqlite(rusqlite::Error::InvalidParameterName(
                format!("journal_mode stayed {journal}"),
            )));
        }
        let sync = match config.synchronous {
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        };
        conn.pragma_update(None, "synchronous", sync)?;
        // Checkpoint every ~320 MiB of log instead of ~8: the key index's
        // leaves, which batches of unrelated keys rewrite at random, reach the
        // file once per checkpoint, with fewer fsyncs (measured at 1M
        // fragments: ~8% faster inserts than at ~80 MiB; larger page caches
        // and 4 KiB pages were slower, mmap made no difference).
        conn.pragma_update(None, "wal_autocheckpoint", 40_000)?;
    }
    if let Some(max) = config.max_pages {
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        conn.pragma_update(None, "max_page_count", max)?;
    }
    Ok(conn)
}

/// A digest of everything a write would store, to recognise a replay.
///
/// The length-prefixed fields are gathered into one buffer and hashed at once
/// (the same digest as hashing them one by one, at a fraction of the cost for
/// many short fields).
fn batch_digest(
    user: UserId,
    agent: AgentId,
    items: &[(&NewFragment, Option<&CardFields>)],
    cards: &[Option<String>],
) -> Digest {
    let mut buffer = Vec::with_capacity(256 * items.len() + 64);
    let mut field = |bytes: &[u8]| {
        buffer.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        buffer.extend_from_slice(bytes);
    };
    field(user.as_str().as_bytes());
    field(agent.as_str().as_bytes());
    for ((f, _), card) in items.iter().zip(cards) {
        field(f.key.as_deref().unwrap_or("\u{0}").as_bytes());
        field(f.content.as_bytes());
        field(f.granularity.as_str().as_bytes());
        field(f.kind.as_str().as_bytes());
        field(f.scope.to_string().as_bytes());
        field(&ts(f.provenance.created_at).to_le_bytes());
        field(f.provenance.user.as_str().as_bytes());
        for a in &f.provenance.agents {
            field(a.as_str().as_bytes());
        }
        field(b"|");
        for r in &f.provenance.resources {
            field(r.as_str().as_bytes());
        }
        field(b"|");
        let source = &f.provenance.source;
        field(source.session.as_deref().unwrap_or("\u{0}").as_bytes());
        for turn in &source.turns {
            field(turn.as_bytes());
        }
        field(b"|");
        for parent in &source.parents {
            field(&parent.0.to_le_bytes());
        }
        field(b"|");
        field(&ts(f.validity.from()).to_le_bytes());
        field(&f.validity.until().map_or(i64::MIN, ts).to_le_bytes());
        for k in &f.keywords {
            field(k.as_bytes());
        }
        field(b"|");
        // The embedding follows from the content and the embedder: its id and
        // dimension identify it without hashing every component.
        if let Some(e) = &f.embedding {
            field(e.embedder.as_bytes());
            field(&(e.vector.len() as u64).to_le_bytes());
        }
        field(card.as_deref().unwrap_or("").as_bytes());
    }
    Digest(*blake3::hash(&buffer).as_bytes())
}

/// Rows per multi-row INSERT, largest first. A batch is split greedily, so a
/// few statement shapes per table (each prepared once per connection) serve
/// every batch size, and a batch of 100 takes four statements per table
/// instead of a hundred.
const ROWS_PER_INSERT: [usize; 4] = [64, 16, 4, 1];

/// A plain insert: a failed constraint aborts the statement, and SQLite keeps a
/// statement journal to undo the rows a multi-row insert had already written.
const INSERT: &str = "INSERT";

/// For tables no foreign key constrains from this side: a failed constraint
/// rolls the whole transaction back — what the store does on any error anyway —
/// so SQLite keeps no statement journal for the key index pages it rewrites.
const INSERT_OR_ROLLBACK: &str = "INSERT OR ROLLBACK";

/// Inserts `rows` into `into` (a table and its column list) with multi-row
/// `{verb} INTO … VALUES (…), (…) {tail}` statements.
fn insert_rows<const W: usize>(
    tx: &Transaction<'_>,
    verb: &str,
    into: &str,
    tail: &str,
    rows: &[[&dyn ToSql; W]],
) -> Result<()> {
    let mut rest = rows;
    while !rest.is_empty() {
        let take = ROWS_PER_INSERT
            .into_iter()
            .find(|&n| n <= rest.len())
            .unwrap_or(1);
        let (now, later) = rest.split_at(take);
        let mut sql =
            String::with_capacity(verb.len() + into.len() + tail.len() + 16 + take * (2 * W + 2));
        sql.push_str(verb);
        sql.push_str(" INTO ");
        sql.push_str(into);
        sql.push_str(" VALUES ");
        for row in 0..take {
            if row > 0 {
                sql.push(',');
            }
            sql.push('(');
            for column in 0..W {
                if column > 0 {
                    sql.push(',');
                }
                sql.push('?');
            }
            sql.push(')');
        }
        sql.push_str(tail);
        tx.prepare_cached(&sql)?
            .execute(params_from_iter(now.as_flattened()))?;
        rest = later;
    }
    Ok(())
}

/// What makes a fragment's access class: scope, group, owner (for user and
/// agent scope) and the agents and resources, sorted by name.
type ClassKey = (
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    Vec<&'static str>,
    Vec<&'static str>,
);

/// Access class ids the store's writer has seen committed. Classes are never
/// changed or removed once written, so the cache never goes stale; it only
/// saves looking a class up again, and it is emptied past this many entries.
const CLASS_CACHE_LIMIT: usize = 65_536;

/// The column values of one fragment that are computed rather than borrowed.
struct Encoded {
    id: i64,
    class: i64,
    granularity: &'static str,
    kind: &'static str,
    user: &'static str,
    agents: Vec<&'static str>,
    resources: Vec<&'static str>,
    parents: Vec<(i64, i64)>,
    scope: &'static str,
    group: Option<&'static str>,
    valid_from: i64,
    valid_until: Option<i64>,
    keywords: String,
    created_at: i64,
    turns: Option<String>,
    embedding: Option<(i64, Vec<u8>)>,
}

/// Inserts fragments a batch at a time. Access classes come from the store's
/// cache of committed ones, or are looked up (and created) here; those are
/// kept in `found`, for the cache once the transaction commits.
struct Inserter<'t, 'k> {
    tx: &'t Transaction<'t>,
    known: &'k HashMap<ClassKey, i64>,
    found: HashMap<ClassKey, i64>,
}

impl<'t, 'k> Inserter<'t, 'k> {
    fn new(tx: &'t Transaction<'t>, known: &'k HashMap<ClassKey, i64>) -> Self {
        Inserter {
            tx,
            known,
            found: HashMap::new(),
        }
    }

    /// The id of `f`'s access class, created on first use.
    fn class(&mut self, f: &NewFragment) -> Result<i64> {
        let (scope, group) = codec::scope_columns(f.scope);
        let owner =
            matches!(f.scope, Scope::User | Scope::Agent).then(|| f.provenance.user.as_str());
        let mut agents: Vec<&'static str> =
            f.provenance.agents.iter().map(|a| a.as_str()).collect();
        agents.sort_unstable();
        let mut resources: Vec<&'static str> =
            f.provenance.resources.iter().map(|r| r.as_str()).collect();
        resources.sort_unstable();
        let key: ClassKey = (scope, group, owner, agents, resources);
        if let Some(&id) = self.known.get(&key).or_else(|| self.found.get(&key)) {
            return Ok(id);
        }
        let (agents, resources) = (json(&key.3)?, json(&key.4)?);
        let values = params![key.0, key.1, key.2, agents, resources];
        let found: Option<i64> = self
            .tx
            .prepare_cached(
                "SELECT id FROM access_classes \
                 WHERE signature = json_array(?1, ?2, ?3, json(?4), json(?5))",
            )?
            .query_row(values, |row| row.get(0))
            .optional()?;
        let id = match found {
            Some(id) => id,
            None => self
                .tx
                .prepare_cached(
                    "INSERT INTO access_classes (signature, scope, scope_group, owner, agents, resources) \
                     VALUES (json_array(?1, ?2, ?3, json(?4), json(?5)), ?1, ?2, ?3, json(?4), json(?5)) \
                     RETURNING id",
                )?
                .query_row(values, |row| row.get(0))?,
        };
        self.found.insert(key, id);
        Ok(id)
    }

    /// Inserts `fragments` with their provenance, embeddings and `Put`
    /// changes, counts them in their classes, and returns their ids in order.
    ///
    /// The ids are assigned here, after the largest ever used (the
    /// `AUTOINCREMENT` sequence, which the inserts move on), so that each table
    /// takes the whole batch in a few multi-row statements. The transaction is
    /// `BEGIN IMMEDIATE`, so no other writer can take them meanwhile.
    fn insert_all(&mut self, fragments: &[&NewFragment]) -> Result<Vec<FragmentId>> {
        let last: i64 = self
            .tx
            .prepare_cached(
                "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'fragments'), 0), \
                            coalesce((SELECT max(id) FROM fragments), 0))",
            )?
            .query_row([], |row| row.get(0))?;
        let mut encoded = Vec::with_capacity(fragments.len());
        for (offset, f) in (1..).zip(fragments) {
            let (scope, group) = codec::scope_columns(f.scope);
            let source = &f.provenance.source;
            encoded.push(Encoded {
                id: last
                    .checked_add(offset)
                    .ok_or_else(|| Error::corrupt("fragment ids are exhausted"))?,
                class: self.class(f)?,
                granularity: f.granularity.as_str(),
                kind: f.kind.as_str(),
                user: f.provenance.user.as_str(),
                agents: f.provenance.agents.iter().map(|a| a.as_str()).collect(),
                resources: f.provenance.resources.iter().map(|r| r.as_str()).collect(),
                parents: (0..)
                    .zip(&source.parents)
                    .map(|(position, parent)| Ok((position, id_param(*parent)?)))
                    .collect::<Result<_>>()?,
                scope,
                group,
                valid_from: ts(f.validity.from()),
                valid_until: f.validity.until().map(ts),
                keywords: json(&f.keywords)?,
                created_at: ts(f.provenance.created_at),
                turns: if source.session.is_some() || !source.turns.is_empty() {
                    Some(json(&source.turns)?)
                } else {
                    None
                },
                embedding: f
                    .embedding
                    .as_ref()
                    .map(|e| (e.vector.len() as i64, codec::vector_blob(&e.vector))),
            });
        }
        // No RETURNING and no insert triggers: either would make every insert
        // keep a statement journal.
        let rows: Vec<[&dyn ToSql; 13]> = fragments
            .iter()
            .zip(&encoded)
            .map(|(f, e)| -> [&dyn ToSql; 13] {
                [
                    &e.id,
                    &f.key,
                    &f.content,
                    &e.granularity,
                    &e.kind,
                    &e.scope,
                    &e.group,
                    &e.valid_from,
                    &e.valid_until,
                    &e.keywords,
                    &e.user,
                    &e.created_at,
                    &e.class,
                ]
            })
            .collect();
        insert_rows(
            self.tx,
            INSERT_OR_ROLLBACK,
            "fragments (id, key, content, granularity, kind, scope, scope_group, \
             valid_from, valid_until, keywords, user, created_at, class)",
            "",
            &rows,
        )?;
        let mut counts: Vec<(i64, i64, i64)> = Vec::new();
        for e in &encoded {
            match counts.iter_mut().find(|(class, _, _)| *class == e.class) {
                Some((_, live, newest)) => {
                    *live += 1;
                    *newest = (*newest).max(e.created_at);
                }
                None => counts.push((e.class, 1, e.created_at)),
            }
        }
        let rows: Vec<[&dyn ToSql; 3]> = counts
            .iter()
            .map(|(class, live, newest)| -> [&dyn ToSql; 3] { [class, live, newest] })
            .collect();
        insert_rows(
            self.tx,
            INSERT,
            "class_counts (class, live, newest)",
            " ON CONFLICT (class) DO UPDATE \
             SET live = live + excluded.live, newest = max(newest, excluded.newest)",
            &rows,
        )?;
        let mut agents: Vec<[&dyn ToSql; 2]> = Vec::new();
        let mut resources: Vec<[&dyn ToSql; 2]> = Vec::new();
        let mut sources: Vec<[&dyn ToSql; 3]> = Vec::new();
        let mut parents: Vec<[&dyn ToSql; 3]> = Vec::new();
        let mut embeddings: Vec<[&dyn ToSql; 4]> = Vec::new();
        for (f, e) in fragments.iter().zip(&encoded) {
            for agent in &e.agents {
                agents.push([&e.id, agent]);
            }
            for resource in &e.resources {
                resources.push([&e.id, resource]);
            }
            if let Some(turns) = &e.turns {
                sources.push([&e.id, &f.provenance.source.session, turns]);
            }
            for (position, parent) in &e.parents {
                parents.push([&e.id, position, parent]);
            }
            if let (Some(embedding), Some((dim, blob))) = (&f.embedding, &e.embedding) {
                embeddings.push([&e.id, &embedding.embedder, dim, blob]);
            }
        }
        insert_rows(
            self.tx,
            INSERT,
            "fragment_agents (fragment, agent)",
            "",
            &agents,
        )?;
        insert_rows(
            self.tx,
            INSERT,
            "fragment_resources (fragment, resource)",
            "",
            &resources,
        )?;
        insert_rows(
            self.tx,
            INSERT,
            "fragment_sources (fragment, session, turns)",
            "",
            &sources,
        )?;
        insert_rows(
            self.tx,
            INSERT,
            "fragment_parents (fragment, position, parent)",
            "",
            &parents,
        )?;
        insert_rows(
            self.tx,
            INSERT,
            "embeddings (fragment, embedder, dim, vector)",
            "",
            &embeddings,
        )?;
        let put = op_str(ChangeOp::Put);
        let changes: Vec<[&dyn ToSql; 2]> = encoded
            .iter()
            .map(|e| -> [&dyn ToSql; 2] { [&e.id, &put] })
            .collect();
        insert_rows(
            self.tx,
            INSERT_OR_ROLLBACK,
            "changes (fragment, op)",
            "",
            &changes,
        )?;
        encoded.iter().map(|e| fragment_id(e.id)).collect()
    }
}

fn insert_card(
    tx: &Transaction<'_>,
    id: FragmentId,
    fields: &CardFields,
    text: &str,
) -> Result<()> {
    tx.prepare_cached("INSERT INTO cards (fragment, sign, fields) VALUES (?1, ?2, ?3)")?
        .execute(params![id_param(id)?, fields.sign.as_str(), text])?;
    Ok(())
}

fn op_str(op: ChangeOp) -> &'static str {
    match op {
        ChangeOp::Put => "put",
        ChangeOp::Meta => "meta",
        ChangeOp::Delete => "delete",
        ChangeOp::Purge => "purge",
    }
}

fn op_from_str(s: &str) -> Result<ChangeOp> {
    Ok(match s {
        "put" => ChangeOp::Put,
        "meta" => ChangeOp::Meta,
        "delete" => ChangeOp::Delete,
        "purge" => ChangeOp::Purge,
        other => return Err(Error::corrupt(format!("unknown change op {other:?}"))),
    })
}

/// Audits the fragments the upgrade to schema 6 narrowed to scope `User` (a user's
/// conversation that an older version wrote to the agent's crew), once: one entry,
/// in the transaction that empties `narrowed`.
fn audit_narrowed(conn: &mut Connection, at: Timestamp) -> Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let ids: Vec<i64> = tx
        .prepare("SELECT fragment FROM narrowed ORDER BY fragment")?
        .query_map([], |row| row.get(0))?
        .collect::<std::result::Result<_, _>>()?;
    if ids.is_empty() {
        return Ok(());
    }
    let fragments = ids
        .into_iter()
        .map(|id| {
            u64::try_from(id)
                .map(FragmentId)
                .map_err(|_| Error::corrupt("negative fragment id"))
        })
        .collect::<Result<Vec<_>>>()?;
    append_audit_tx(&tx, at, &AuditEvent::Narrow { fragments })?;
    tx.execute("DELETE FROM narrowed", [])?;
    tx.commit()?;
    Ok(())
}

pub(crate) fn record_change(tx: &Transaction<'_>, id: FragmentId, op: ChangeOp) -> Result<()> {
    tx.prepare_cached("INSERT INTO changes (fragment, op) VALUES (?1, ?2)")?
        .execute(params![id_param(id)?, op_str(op)])?;
    Ok(())
}

fn digest_from_blob(blob: &[u8]) -> Option<Digest> {
    <[u8; 32]>::try_from(blob).ok().map(Digest)
}

/// Reads a `(seq, hash)` row of `audit_head` or `audit_anchor`; `(0, zeros)` if absent.
pub(crate) fn chain_point(conn: &Connection, table: &str) -> Result<(u64, Digest)> {
    let row: Option<(i64, Vec<u8>)> = conn
        .prepare_cached(&format!("SELECT seq, hash FROM {table} WHERE id = 1"))?
        .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    match row {
        None => Ok((0, Digest::default())),
        Some((seq, hash)) => {
            let seq = u64::try_from(seq).map_err(|_| Error::corrupt("negative audit seq"))?;
            let hash = digest_from_blob(&hash).ok_or_else(|| Error::corrupt("bad audit hash"))?;
            Ok((seq, hash))
        }
    }
}

pub(crate) fn append_audit_tx(
    tx: &Transaction<'_>,
    at: Timestamp,
    event: &AuditEvent,
) -> Result<AuditEntry> {
    let (seq, prev) = chain_point(tx, "audit_head")?;
    let entry = AuditEntry::chain(prev, seq + 1, at, event.clone());
    let seq = i64::try_from(entry.seq).map_err(|_| Error::corrupt("audit seq overflow"))?;
    tx.prepare_cached(
        "INSERT INTO audit (seq, at, event, prev, hash) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        seq,
        ts(at),
        json(&entry.event)?,
        entry.prev.0.as_slice(),
        entry.hash.0.as_slice()
    ])?;
    tx.prepare_cached(
        "INSERT INTO audit_head (id, seq, hash) VALUES (1, ?1, ?2) \
         ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
    )?
    .execute(params![seq, entry.hash.0.as_slice()])?;
    Ok(entry)
}

/// An audit entry from `(seq, at, event, prev, hash)`; `Err(seq)` if it does not decode.
pub(crate) fn audit_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Result<AuditEntry, u64>> {
    let seq: i64 = row.get(0)?;
    let useq = u64::try_from(seq).unwrap_or(0);
    let at: i64 = row.get(1)?;
    let event: String = row.get(2)?;
    let prev: Vec<u8> = row.get(3)?;
    let hash: Vec<u8> = row.get(4)?;
    let decoded = (|| {
        Some(AuditEntry {
            seq: u64::try_from(seq).ok()?,
            at: Timestamp::from_millis(at),
            event: serde_json::from_str(&event).ok()?,
            prev: digest_from_blob(&prev)?,
            hash: digest_from_blob(&hash)?,
        })
    })();
    Ok(decoded.ok_or(useq))
}

/// The state columns of one fragment: `(valid_from, valid_until, superseded_at, deleted_at)`.
pub(crate) type FragmentState = (i64, Option<i64>, Option<i64>, Option<i64>);

pub(crate) fn fragment_state(tx: &Transaction<'_>, id: FragmentId) -> Result<FragmentState> {
    tx.prepare_cached(
        "SELECT valid_from, valid_until, superseded_at, deleted_at FROM fragments WHERE id = ?1",
    )?
    .query_row([id_param(id)?], |row| {
        Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
    })
    .optional()?
    .ok_or(Error::NotFound { id })
}

fn get_on(conn: &Connection, id: FragmentId) -> Result<Fragment> {
    let sql = format!("SELECT {FRAGMENT_COLUMNS} FROM {FRAGMENT_FROM} WHERE f.id = ?1");
    conn.prepare_cached(&sql)?
        .query_row([id_param(id)?], |row| Ok(fragment_from_row(row)))
        .optional()?
        .ok_or(Error::NotFound { id })?
}

fn embedding_on(conn: &Connection, id: FragmentId) -> Result<Option<Embedding>> {
    let row: Option<(String, Vec<u8>)> = conn
        .prepare_cached("SELECT embedder, vector FROM embeddings WHERE fragment = ?1")?
        .query_row([id_param(id)?], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    row.map(|(embedder, blob)| codec::embedding_from_columns(embedder, &blob))
        .transpose()
}

pub(crate) fn card_from_row(row: &rusqlite::Row<'_>) -> Result<CardRecord> {
    let fragment = fragment_from_row(row)?;
    let fields = codec::card_fields(&row.get::<_, String>(20)?)?;
    Ok(CardRecord { fragment, fields })
}

impl FragmentStore for SqliteStore {
    fn write(&self, interaction: &Interaction) -> Result<WriteReceipt> {
        if interaction
            .fragments
            .iter()
            .any(|f| f.granularity == Granularity::Card)
        {
            return Err(Error::InvalidInput(
                "a card needs its fields: write it with write_card".to_owned(),
            ));
        }
        let items: Vec<_> = interaction.fragments.iter().map(|f| (f, None)).collect();
        self.write_items(
            interaction.user,
            interaction.agent,
            &items,
            interaction.idempotency_key.as_deref(),
            None,
        )
    }

    fn write_card(&self, card: &CardWrite) -> Result<WriteReceipt> {
        if card.fragment.granularity != Granularity::Card {
            return Err(Error::InvalidInput(
                "a card's fragment must have granularity card".to_owned(),
            ));
        }
        self.write_items(
            card.user,
            card.agent,
            &[(&card.fragment, Some(&card.fields))],
            card.idempotency_key.as_deref(),
            card.replaces,
        )
    }

    fn idempotent_ids(&self, idempotency_key: &str) -> Result<Option<Vec<FragmentId>>> {
        self.check_len("idempotency key", idempotency_key.len())?;
        self.read(|conn| {
            let ids: Option<String> = conn
                .prepare_cached("SELECT ids FROM idempotency WHERE key = ?1")?
                .query_row([idempotency_key], |row| row.get(0))
                .optional()?;
            ids.map(|ids| {
                let ids: Vec<u64> = codec::from_json("idempotency ids", &ids)?;
                Ok(ids.into_iter().map(FragmentId).collect())
            })
            .transpose()
        })
    }

    fn get(&self, id: FragmentId) -> Result<Fragment> {
        self.read(|conn| get_on(conn, id))
    }

    fn embedding(&self, id: FragmentId) -> Result<Option<Embedding>> {
        self.read(|conn| {
            let exists: bool = conn
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM fragments WHERE id = ?1)")?
                .query_row([id_param(id)?], |row| row.get(0))?;
            if !exists {
                return Err(Error::NotFound { id });
            }
            embedding_on(conn, id)
        })
    }

    fn list(&self, filter: &ReadFilter, query: &ListQuery) -> Result<Vec<Fragment>> {
        let sql = Sql {
            text: format!("SELECT {FRAGMENT_COLUMNS} FROM {FRAGMENT_FROM} WHERE "),
            params: Vec::new(),
        };
        self.filtered_rows(sql, filter, query, fragment_from_row)
    }

    fn count(&self, filter: &ReadFilter, query: &ListQuery) -> Result<u64> {
        let plan = CountPlan::new(filter, query)?;
        self.read(|conn| {
            // One snapshot for the plan's statements.
            let tx = conn.unchecked_transaction()?;
            plan.run(&tx)
        })
    }

    fn supersede(&self, request: &Supersede) -> Result<FragmentId> {
        if request.new.granularity == Granularity::Card {
            return Err(Error::InvalidInput(
                "cards are replaced with write_card, not superseded".to_owned(),
            ));
        }
        self.check_fragment(&request.new)?;
        let mut found = HashMap::new();
        let new_id = self.write_tx(|tx, now| {
            let new_id = self
                .insert_fragments(tx, &[&request.new], &mut found)?
                .into_iter()
                .next()
                .ok_or_else(|| Error::corrupt("an insert returned no id"))?;
            append_audit_tx(
                tx,
                now,
                &AuditEvent::Write {
                    user: request.user,
                    agent: request.agent,
                    fragments: vec![(new_id, Digest::of_text(&request.new.content))],
                    provenance: vec![Digest::of_provenance(
                        request.new.scope,
                        &request.new.provenance,
                    )],
                },
            )?;
            // A new version that starts no later than the old one corrects it
            // rather than ending it in world time: the old interval is kept.
            supersede_by_tx(
                tx,
                now,
                &SupersedeBy {
                    user: request.user,
                    agent: request.agent,
                    old: request.old,
                    successor: new_id,
                },
            )?;
            Ok(new_id)
        })?;
        self.remember_classes(found);
        Ok(new_id)
    }

    fn supersede_by(&self, request: &SupersedeBy) -> Result<()> {
        if request.old == request.successor {
            return Err(Error::InvalidInput(
                "a fragment cannot supersede itself".to_owned(),
            ));
        }
        self.write_tx(|tx, now| supersede_by_tx(tx, now, request))
    }

    fn delete(&self, request: &Delete) -> Result<()> {
        self.write_tx(|tx, now| {
            let (_, _, _, deleted) = fragment_state(tx, request.fragment)?;
            if deleted.is_some() {
                return Err(Error::NotCurrent {
                    id: request.fragment,
                    state: "deleted",
                });
            }
            tx.prepare_cached("UPDATE fragments SET deleted_at = ?1 WHERE id = ?2")?
                .execute(params![ts(now), id_param(request.fragment)?])?;
            record_change(tx, request.fragment, ChangeOp::Delete)?;
            append_audit_tx(
                tx,
                now,
                &AuditEvent::Delete {
                    user: request.user,
                    agent: request.agent,
                    fragment: request.fragment,
                },
            )?;
            Ok(())
        })
    }

    fn purge(&self, request: &Purge) -> Result<()> {
        self.purge_many(&PurgeMany {
            admin: request.admin.clone(),
            fragments: vec![request.fragment],
        })
    }

    fn purge_many(&self, request: &PurgeMany) -> Result<()> {
        if request.admin.is_empty() {
            return Err(Error::InvalidInput(
                "a purge needs the administrator's name for the audit log".to_owned(),
            ));
        }
        self.check_len("admin name", request.admin.len())?;
        self.write_tx(|tx, now| erasure::purge_tx(tx, now, &request.admin, &request.fragments))?;
        self.flush_freed_space()
    }

    fn erase(&self, request: &Erase) -> Result<Vec<FragmentId>> {
        if request.fragments.is_empty() {
            return Ok(Vec::new());
        }
        let erased = self.write_tx(|tx, now| erasure::erase_tx(tx, now, &request.fragments))?;
        if !erased.is_empty() {
            self.flush_freed_space()?;
        }
        Ok(erased)
    }

    fn append_access_event(&self, event: &AccessEvent) -> Result<u64> {
        let body = json(event)?;
        self.write_tx(|tx, now| {
            // What was recorded is not rewritten: no event is dated before the
            // moment the last one was recorded (whatever the caller's clock says).
            let recorded: Option<i64> = tx
                .prepare_cached(LAST_ACCESS_RECORD)?
                .query_row([], |row| row.get(0))?;
            if let Some(recorded) = recorded.filter(|&r| ts(event.at) < r) {
                return Err(Error::AccessEventBackdated {
                    at: event.at,
                    recorded: Timestamp::from_millis(recorded),
                });
            }
            tx.prepare_cached(
                "INSERT INTO access_events (at, recorded, body) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![ts(event.at), ts(now), body])?;
            let seq = u64::try_from(tx.last_insert_rowid()).unwrap_or(0);
            append_audit_tx(tx, now, &AuditEvent::Access { event: *event })?;
            Ok(seq)
        })
    }

    fn access_events(&self) -> Result<Vec<AccessEvent>> {
        self.read(|conn| access_events_until(conn, i64::MAX))
    }

    fn visibility_at(&self, id: FragmentId, at: Timestamp) -> Result<VisibilityRecord> {
        self.read(|conn| {
            let tx = conn.unchecked_transaction()?;
            let meta = get_on(&tx, id)?.meta();
            let events = access_events_until(&tx, ts(at))?;
            Ok(VisibilityRecord { at, meta, events })
        })
    }

    fn append_audit(&self, event: &AuditEvent) -> Result<AuditEntry> {
        if matches!(event, AuditEvent::Write { .. } | AuditEvent::Access { .. }) {
            return Err(Error::InvalidInput(
                "writes and access events are audited by the calls that record them: use write or append_access_event".to_owned(),
            ));
        }
        self.write_tx(|tx, now| append_audit_tx(tx, now, event))
    }

    fn record_reads(&self, reads: &[ReadRecord]) -> Result<()> {
        if reads.is_empty() {
            return Ok(());
        }
        self.write_tx(|tx, now| {
            for read in reads {
                append_audit_tx(
                    tx,
                    now,
                    &AuditEvent::Read {
                        user: read.user,
                        agent: read.agent,
                        returned: read.returned.clone(),
                    },
                )?;
            }
            Ok(())
        })
    }

    fn audit_entries(&self, after: u64, limit: usize) -> Result<Vec<AuditEntry>> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT seq, at, event, prev, hash FROM audit WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![after, limit], audit_from_row)?;
            let mut out = Vec::new();
            for row in rows {
                out.push(
                    row?.map_err(|seq| {
                        Error::corrupt(format!("audit entry {seq} does not decode"))
                    })?,
                );
            }
            Ok(out)
        })
    }

    fn verify_audit_against(&self, published: Option<Digest>) -> Result<AuditStatus> {
        self.read(|conn| crate::verify::verify(conn, published))
    }

    fn audit_head(&self) -> Result<(u64, Digest)> {
        self.read(|conn| chain_point(conn, "audit_head"))
    }

    fn archive_audit(&self, up_to: u64) -> Result<Vec<AuditEntry>> {
        let up_to = i64::try_from(up_to).unwrap_or(i64::MAX);
        self.write_tx(|tx, _| {
            let mut entries = Vec::new();
            {
                let mut stmt = tx.prepare(
                    "SELECT seq, at, event, prev, hash FROM audit WHERE seq <= ?1 ORDER BY seq",
                )?;
                let rows = stmt.query_map([up_to], audit_from_row)?;
                for row in rows {
                    entries.push(row?.map_err(|seq| {
                        Error::corrupt(format!("audit entry {seq} does not decode"))
                    })?);
                }
            }
            if let Some(last) = entries.last() {
                let seq =
                    i64::try_from(last.seq).map_err(|_| Error::corrupt("audit seq overflow"))?;
                tx.execute("DELETE FROM audit WHERE seq <= ?1", [seq])?;
                tx.execute(
                    "INSERT INTO audit_anchor (id, seq, hash) VALUES (1, ?1, ?2) \
                     ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
                    params![seq, last.hash.0.as_slice()],
                )?;
            }
            Ok(entries)
        })
    }

    fn card(&self, id: FragmentId) -> Result<CardRecord> {
        let sql = format!(
            "SELECT {FRAGMENT_COLUMNS}, c.fields FROM {FRAGMENT_FROM} \
             JOIN cards c ON c.fragment = f.id WHERE f.id = ?1"
        );
        self.read(|conn| {
            conn.prepare_cached(&sql)?
                .query_row([id_param(id)?], |row| Ok(card_from_row(row)))
                .optional()?
                .ok_or(Error::NotFound { id })?
        })
    }

    fn list_cards(&self, filter: &ReadFilter, query: &ListQuery) -> Result<Vec<CardRecord>> {
        let sql = Sql {
            text: format!(
                "SELECT {FRAGMENT_COLUMNS}, c.fields FROM {FRAGMENT_FROM} \
                 JOIN cards c ON c.fragment = f.id WHERE "
            ),
            params: Vec::new(),
        };
        self.filtered_rows(sql, filter, query, card_from_row)
    }

    fn put_card_edge(&self, edge: &CardEdge) -> Result<()> {
        if !(edge.weight.is_finite() && (0.0..=1.0).contains(&edge.weight)) {
            return Err(Error::InvalidInput(format!(
                "card edge weight {} is outside [0, 1]",
                edge.weight
            )));
        }
        if edge.from == edge.to {
            return Err(Error::InvalidInput(
                "a card edge needs two different cards".to_owned(),
            ));
        }
        let (relation, precondition) = codec::relation_columns(&edge.relation);
        if let Some(p) = precondition {
            if p.is_empty() {
                return Err(Error::InvalidInput(
                    "a constrains edge needs a precondition".to_owned(),
                ));
            }
            self.check_len("precondition", p.len())?;
        }
        self.write_tx(|tx, _| {
            for id in [edge.from, edge.to] {
                let exists: bool = tx
                    .prepare_cached("SELECT EXISTS (SELECT 1 FROM cards WHERE fragment = ?1)")?
                    .query_row([id_param(id)?], |row| row.get(0))?;
                if !exists {
                    return Err(Error::NotFound { id });
                }
            }
            tx.prepare_cached(
                "INSERT INTO card_edges (src, dst, relation, precondition, weight) \
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (src, dst, relation) \
                 DO UPDATE SET precondition = excluded.precondition, weight = excluded.weight",
            )?
            .execute(params![
                id_param(edge.from)?,
                id_param(edge.to)?,
                relation,
                precondition,
                f64::from(edge.weight)
            ])?;
            Ok(())
        })
    }

    fn card_edges(&self, cards: &[FragmentId]) -> Result<Vec<CardEdge>> {
        let ids: Vec<u64> = cards.iter().map(|id| id.0).collect();
        let ids = json(&ids)?;
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT src, dst, relation, precondition, weight FROM card_edges \
                 WHERE src IN (SELECT value FROM json_each(?1)) \
                    OR dst IN (SELECT value FROM json_each(?1)) \
                 ORDER BY src, dst, relation",
            )?;
            let rows = stmt.query_map([&ids], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, Option<String>>(3)?,
                    row.get::<_, f64>(4)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (src, dst, relation, precondition, weight) = row?;
                out.push(CardEdge {
                    from: fragment_id(src)?,
                    to: fragment_id(dst)?,
                    relation: codec::relation_from_columns(&relation, precondition)?,
                    weight: weight as f32,
                });
            }
            Ok(out)
        })
    }
}

/// When the last access event was recorded: one logged before schema 4 counts as
/// recorded when that migration was applied.
const LAST_ACCESS_RECORD: &str = "SELECT coalesce(max(recorded), \
     (SELECT applied_at FROM schema_version WHERE version = 4 AND EXISTS (SELECT 1 FROM access_events))) \
     FROM access_events";

/// The transaction of [`FragmentStore::supersede_by`].
fn supersede_by_tx(tx: &Transaction<'_>, now: Timestamp, request: &SupersedeBy) -> Result<()> {
    let (from, until, superseded, deleted) = fragment_state(tx, request.old)?;
    let state = |deleted: &Option<i64>, superseded: &Option<i64>| {
        if deleted.is_some() {
            Some("deleted")
        } else if superseded.is_some() {
            Some("superseded")
        } else {
            None
        }
    };
    if let Some(state) = state(&deleted, &superseded) {
        return Err(Error::NotCurrent {
            id: request.old,
            state,
        });
    }
    let (successor_from, _, successor_superseded, successor_deleted) =
        fragment_state(tx, request.successor)?;
    if let Some(state) = state(&successor_deleted, &successor_superseded) {
        return Err(Error::NotCurrent {
            id: request.successor,
            state,
        });
    }
    let old_validity = Validity::new(
        Timestamp::from_millis(from),
        until.map(Timestamp::from_millis),
    )
    .map_err(|e| Error::corrupt(e.to_string()))?;
    let closed = old_validity
        .closed_at(Timestamp::from_millis(successor_from))
        .unwrap_or(old_validity);
    tx.prepare_cached(
        "UPDATE fragments SET valid_until = ?1, superseded_at = ?2, superseded_by = ?3 \
         WHERE id = ?4",
    )?
    .execute(params![
        closed.until().map(ts),
        ts(now),
        id_param(request.successor)?,
        id_param(request.old)?
    ])?;
    record_change(tx, request.old, ChangeOp::Meta)?;
    append_audit_tx(
        tx,
        now,
        &AuditEvent::Update {
            user: request.user,
            agent: request.agent,
            old: request.old,
            new: request.successor,
        },
    )?;
    Ok(())
}

fn access_events_until(conn: &Connection, until: i64) -> Result<Vec<AccessEvent>> {
    let mut stmt =
        conn.prepare_cached("SELECT body FROM access_events WHERE at <= ?1 ORDER BY seq")?;
    let rows = stmt.query_map([until], |row| row.get::<_, String>(0))?;
    let mut out = Vec::new();
    for row in rows {
        out.push(codec::from_json("access event", &row?)?);
    }
    Ok(out)
}

impl ChangeFeed for SqliteStore {
    fn head(&self) -> Result<u64, FeedError> {
        let head = self.read(|conn| {
            let head: i64 = conn
                .prepare_cached("SELECT coalesce(max(seq), 0) FROM changes")?
                .query_row([], |row| row.get(0))?;
            Ok(u64::try_from(head).unwrap_or(0))
        })?;
        Ok(head)
    }

    fn changes_after(&self, after: u64, limit: usize) -> Result<Vec<Change>, FeedError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let changes = self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT seq, fragment, op, stamp FROM changes WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![after, limit], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, i64>(3)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (seq, fragment, op, stamp) = row?;
                out.push(Change {
                    seq: u64::try_from(seq).map_err(|_| Error::corrupt("negative change seq"))?,
                    fragment: fragment_id(fragment)?,
                    op: op_from_str(&op)?,
                    // The stamp's 64 random bits, read as unsigned.
                    stamp: u64::from_ne_bytes(stamp.to_ne_bytes()),
                });
            }
            Ok(out)
        })?;
        Ok(changes)
    }

    fn load(&self, ids: &[FragmentId]) -> Result<Vec<StoredFragment>, FeedError> {
        let loaded = self.read(|conn| {
            let tx = conn.unchecked_transaction()?;
            let mut out = Vec::with_capacity(ids.len());
            for &id in ids {
                match get_on(&tx, id) {
                    Ok(fragment) => out.push(StoredFragment {
                        embedding: embedding_on(&tx, id)?,
                        fragment,
                    }),
                    Err(Error::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(out)
        })?;
        Ok(loaded)
    }
}
