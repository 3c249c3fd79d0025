//! [`Memory`]: one data directory opened — the SQLite store, the derived
//! indexes, the embedder, the access graph rebuilt from the store's event log,
//! and the clock that decides "now".

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use colmem_access::{AccessGraph, PseudonymKey, SystemPolicy, WritePolicySet};
use colmem_ama::{Pipeline, Roles};
use colmem_cards::CardBank;
use colmem_core::ChangeFeed as _;
use colmem_core::{AgentId, Clock, LogicalClock, Principal, SystemClock, Timestamp, UserId};
use colmem_index::{
    CatchUp, HnswConfig, HnswIndex, HybridConfig, HybridIndex, LexicalIndex, OpenReport,
    TantivyBm25, VectorIndex,
};
use colmem_llm::{
    ApproxTokenCounter, ChatModel, Embedder, OfflineEmbedder, OpenAiChat, OpenAiEmbedder,
};
use colmem_store::{FragmentStore, Mode, SqliteStore, StoreConfig, Synchronous};

use crate::config::{CONFIG_FILE, ClockConfig, Config, EmbedderConfig};
use crate::error::{Error, Result};
use crate::lock::{DirLock, LOCK_FILE};
use crate::private;

/// The store's file inside the data directory.
pub const STORE_FILE: &str = "colmem.db";
/// The index directory inside the data directory.
pub const INDEX_DIR: &str = "index";

/// The store's file and those SQLite keeps beside it.
const STORE_FILES: [&str; 4] = [
    STORE_FILE,
    "colmem.db-wal",
    "colmem.db-shm",
    "colmem.db-journal",
];

/// How a memory was opened.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Access {
    /// Reads and writes; the directory is locked against other writers.
    ReadWrite,
    /// Reads only: no lock, the store opened read-only, the index not loaded.
    ReadOnly,
    /// Reads and writes beside other shared openers, under a shared lock (no
    /// exclusive opener meanwhile); the index is loaded and kept up in memory but
    /// its snapshot is never written, so the next exclusive opener catches up.
    Shared,
}

/// What only a writable memory carries: the models and what is built on them.
#[derive(Debug)]
pub(crate) struct Engine {
    pub(crate) index: Arc<HybridIndex>,
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) pipeline: Pipeline,
    pub(crate) cards: CardBank,
}

impl Engine {
    /// Builds the models `config` names and opens the index in `dir`, catching up
    /// from the store's change feed.
    fn open(
        dir: &Path,
        config: &Config,
        store: &Arc<SqliteStore>,
        persist: bool,
    ) -> Result<(Engine, OpenReport)> {
        let embedder = embedder(&config.embedder)?;
        let vector: Arc<dyn VectorIndex> =
            Arc::new(HnswIndex::new(embedder.dim(), HnswConfig::default())?);
        let lexical: Arc<dyn LexicalIndex> = Arc::new(TantivyBm25::new()?);
        let hybrid = HybridConfig {
            planner: config.index.planner(),
            fusion: config.index.fusion(),
            embedder: Some(embedder.id().to_owned()),
        };
        let open = if persist {
            HybridIndex::open
        } else {
            HybridIndex::load
        };
        let (index, report) = open(
            &dir.join(INDEX_DIR),
            vector,
            Some(lexical),
            hybrid,
            store.as_ref(),
        )?;
        let index = Arc::new(index);
        let (roles, card_roles) = match &config.chat {
            None => (
                Roles::offline_with(config.constructor, config.retriever),
                colmem_cards::Roles::offline(),
            ),
            Some(chat) => {
                let model: Arc<dyn ChatModel> = Arc::new(OpenAiChat::new(chat.clone())?);
                (
                    Roles::llm(
                        model.clone(),
                        config.roles,
                        config.constructor,
                        config.retriever,
                    )?,
                    colmem_cards::llm::roles(model),
                )
            }
        };
        let pipeline = Pipeline::new(
            store.clone(),
            index.clone(),
            embedder.clone(),
            roles,
            config.pipeline,
        );
        let cards = CardBank::new(
            store.clone(),
            embedder.clone(),
            Arc::new(ApproxTokenCounter),
            card_roles,
            config.cards,
        )?;
        let engine = Engine {
            index,
            embedder,
            pipeline,
            cards,
        };
        Ok((engine, report))
    }
}

/// An open data directory. See the [crate docs](crate).
#[derive(Debug)]
pub struct Memory {
    pub(crate) dir: PathBuf,
    pub(crate) config: Config,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) logical: Option<Arc<LogicalClock>>,
    pub(crate) store: Arc<SqliteStore>,
    pub(crate) graph: RwLock<AccessGraph>,
    pub(crate) system: SystemPolicy,
    pub(crate) write_policies: WritePolicySet,
    pub(crate) access: Access,
    /// `None` when opened read-only: audits, exports and backups build no model.
    engine: Option<Engine>,
    report: OpenReport,
    tightened: Vec<PathBuf>,
    _lock: Option<DirLock>,
}

impl Memory {
    /// Whether `dir` holds a colmem store.
    pub fn exists(dir: &Path) -> bool {
        dir.join(STORE_FILE).is_file()
    }

    /// Opens (creating if needed) the data directory `dir` for reading and writing.
    ///
    /// Takes the directory's writer lock (a second writer gets [`Error::Locked`],
    /// after waiting up to `[store] lock_wait_ms`),
    /// opens `dir/colmem.db`, rebuilds the access graph from its event log, and
    /// opens the indexes in `dir/index/`, catching up from the store's change feed.
    ///
    /// Every open keeps the directory its owner's only: the directory and those in
    /// it 0700, every file 0600, whatever the umask. What an older colmem left open
    /// to others is made private ([`Memory::tightened`] lists it); a path whose mode
    /// cannot be changed refuses the open ([`Error::NotPrivate`]).
    pub fn open(dir: impl AsRef<Path>, config: Config) -> Result<Memory> {
        let dir = dir.as_ref();
        private::create_dir(dir)?;
        let wait = Duration::from_millis(config.store.lock_wait_ms);
        let lock = DirLock::acquire(dir, false, wait)?;
        Memory::open_with(dir, config, Access::ReadWrite, Some(lock))
    }

    /// Opens an existing data directory for reading only, without the writer lock,
    /// so a writer may hold the directory meanwhile: for audits, explanations,
    /// exports and backups. The store is opened read-only; no index is loaded and no
    /// model is built (an audit needs neither an API key nor model files), so
    /// [`Memory::index`] and [`Memory::embedder`] are `None`. Sessions cannot be
    /// opened on it (a read is audited, which writes).
    pub fn open_read_only(dir: impl AsRef<Path>, config: Config) -> Result<Memory> {
        let dir = dir.as_ref();
        if !Memory::exists(dir) {
            return Err(Error::NotInitialised {
                dir: dir.to_path_buf(),
            });
        }
        Memory::open_with(dir, config, Access::ReadOnly, None)
    }

    /// Opens an existing data directory beside other shared openers (other
    /// processes recalling from it at the same time), under a shared lock:
    /// [`Error::Locked`] while a [`Memory::open`] holds it, and it holds off one
    /// meanwhile. Sessions work as in [`Memory::open`], the store taking writes from
    /// all of them, but:
    /// - access changes are refused ([`Error::Shared`]): the access graph is read
    ///   once, at open, and no open memory may miss a revocation. None can happen
    ///   while any shared opener holds the directory;
    /// - the index is only caught up in memory: its snapshot is never written
    ///   ([`Memory::flush`] only checkpoints the store), so each shared open catches
    ///   up from the last snapshot a [`Memory::open`] wrote. Open the directory that
    ///   way now and then (any writing CLI command does) when shared openers write
    ///   much.
    pub fn open_shared(dir: impl AsRef<Path>, config: Config) -> Result<Memory> {
        let dir = dir.as_ref();
        if !Memory::exists(dir) {
            return Err(Error::NotInitialised {
                dir: dir.to_path_buf(),
            });
        }
        let wait = Duration::from_millis(config.store.lock_wait_ms);
        let lock = DirLock::acquire(dir, true, wait)?;
        Memory::open_with(dir, config, Access::Shared, Some(lock))
    }

    fn open_with(
        dir: &Path,
        config: Config,
        access: Access,
        lock: Option<DirLock>,
    ) -> Result<Memory> {
        let (clock, logical): (Arc<dyn Clock>, Option<Arc<LogicalClock>>) = match config.clock {
            ClockConfig::System => (Arc::new(SystemClock), None),
            ClockConfig::Logical { start } => {
                let logical = Arc::new(LogicalClock::new(start));
                (logical.clone(), Some(logical))
            }
        };
        let store_config = StoreConfig {
            max_value_bytes: config.store.max_value_bytes,
            busy_deadline: Duration::from_millis(config.store.busy_deadline_ms),
            max_pages: (config.store.max_pages > 0).then_some(config.store.max_pages),
            mode: match access {
                Access::ReadWrite | Access::Shared => Mode::ReadWrite,
                Access::ReadOnly => Mode::ReadOnly,
            },
            synchronous: if config.store.durable_commits {
                Synchronous::Full
            } else {
                Synchronous::Normal
            },
            clock: clock.clone(),
            ..StoreConfig::default()
        };
        // What an older colmem left open to others is closed before it is read.
        let tightened = private::tighten(
            dir,
            &[&STORE_FILES[..], &[LOCK_FILE, CONFIG_FILE, INDEX_DIR]].concat(),
        )?;
        let store = Arc::new(SqliteStore::open(dir.join(STORE_FILE), store_config)?);
        // A store SQLite just made has the umask's mode, and its -wal and -shm that
        // mode too; later ones take the file's.
        private::tighten(dir, &STORE_FILES)?;
        let events = store.access_events()?;
        if let Some(logical) = &logical {
            // A logical clock never reads earlier than the history already recorded
            // (nor later: an access change scheduled for later takes effect then).
            let recorded = store.latest_record_time()?;
            if let Some(latest) = recorded.max(latest_change_time(&store)?)
                && latest > logical.now()
            {
                logical.set(latest)?;
            }
        }
        let graph = AccessGraph::from_events(&events)?;
        // Every read and write is decided at the store's now, which a clock that
        // steps back does not move below the last recorded event.
        let clock: Arc<dyn Clock> = Arc::new(StoreClock(store.clone()));
        let system = SystemPolicy {
            global_writers: config.policy.global_writers.clone(),
        };
        let write_policies = WritePolicySet::new(
            config.policy.write.clone(),
            PseudonymKey::new(store.secret("pseudonym")?),
        )?;
        let (engine, report) = match access {
            Access::ReadWrite | Access::Shared => {
                let persist = access == Access::ReadWrite;
                let (engine, report) = Engine::open(dir, &config, &store, persist)?;
                private::tighten(dir, &[INDEX_DIR])?;
                (Some(engine), report)
            }
            // Sessions need a writable memory, so a read-only one never searches nor
            // calls a model: none is built (a missing API key or model directory does
            // not stop an audit), and the index is not loaded.
            Access::ReadOnly => (
                None,
                OpenReport {
                    restored: false,
                    rebuild_reason: Some("opened read-only: the index is not loaded".to_owned()),
                    catch_up: CatchUp::default(),
                },
            ),
        };
        let memory = Memory {
            dir: dir.to_path_buf(),
            config,
            clock,
            logical,
            store,
            graph: RwLock::new(graph),
            system,
            write_policies,
            access,
            engine,
            report,
            tightened,
            _lock: lock,
        };
        if access != Access::ReadOnly {
            // Deleted text whose time has come, or left by a run stopped between a
            // deletion and its erasure.
            memory.erase_due()?;
        }
        Ok(memory)
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The configuration it was opened with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Read-write, shared or read-only.
    pub fn access(&self) -> Access {
        self.access
    }

    /// "Now" on the memory's clock: the moment every read and write is decided at.
    /// It never falls below the last event the store recorded: when the clock
    /// steps back, now is held there (and a warning logged) until it passes it.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The logical clock, when the configuration asked for one (scenarios and tests
    /// move it; nothing else can choose the time of a read).
    pub fn logical_clock(&self) -> Option<&LogicalClock> {
        self.logical.as_deref()
    }

    /// The store, for callers that want one part on its own.
    pub fn store(&self) -> &Arc<SqliteStore> {
        &self.store
    }

    /// The hybrid index; `None` when opened read-only.
    pub fn index(&self) -> Option<&Arc<HybridIndex>> {
        self.engine.as_ref().map(|e| &e.index)
    }

    /// The embedder; `None` when opened read-only.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.engine.as_ref().map(|e| &e.embedder)
    }

    /// What opening the index did (restored or rebuilt, and why; vectors skipped
    /// because another embedder made them, which `reindex` fixes).
    pub fn open_report(&self) -> &OpenReport {
        &self.report
    }

    /// What opening found open to others (an older colmem's directory, files it
    /// made under a lax umask) and made its owner's only: the paths whose modes
    /// gave others any access.
    pub fn tightened(&self) -> &[PathBuf] {
        &self.tightened
    }

    /// Whether a principal is registered.
    pub fn is_registered(&self, principal: Principal) -> bool {
        self.graph().contains(principal)
    }

    /// The agents `user` may invoke now.
    pub fn invocable(&self, user: UserId) -> Result<std::collections::BTreeSet<AgentId>> {
        Ok(self.graph().invocable(user, self.now())?)
    }

    /// The store's change sequence: grows with every change to a fragment.
    pub fn store_head(&self) -> Result<u64> {
        Ok(self.store.head()?)
    }

    /// A copy of the access graph as it stands (its whole history).
    pub fn access_graph(&self) -> AccessGraph {
        self.graph().clone()
    }

    pub(crate) fn graph(&self) -> RwLockReadGuard<'_, AccessGraph> {
        self.graph.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn graph_mut(&self) -> RwLockWriteGuard<'_, AccessGraph> {
        self.graph.write().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn writable(&self) -> Result<()> {
        self.engine().map(|_| ())
    }

    /// The models and what is built on them: a writable memory's.
    pub(crate) fn engine(&self) -> Result<&Engine> {
        self.engine.as_ref().ok_or(Error::ReadOnly)
    }

    /// Refuses names that were never registered, with an error that says so.
    pub(crate) fn known(&self, user: Option<UserId>, agent: Option<AgentId>) -> Result<()> {
        let graph = self.graph();
        if let Some(user) = user
            && !graph.has_user(user)
        {
            return Err(Error::UnknownPrincipal {
                kind: "user",
                name: user.as_str().to_owned(),
            });
        }
        if let Some(agent) = agent
            && !graph.has_agent(agent)
        {
            return Err(Error::UnknownPrincipal {
                kind: "agent",
                name: agent.as_str().to_owned(),
            });
        }
        Ok(())
    }

    /// Writes the index snapshot (not when opened shared) and checkpoints the store,
    /// so the next open restores instead of catching up. Also done on drop, best
    /// effort.
    pub fn flush(&self) -> Result<()> {
        let engine = self.engine()?;
        engine.index.catch_up(self.store.as_ref())?;
        self.persist_index()?;
        self.store.checkpoint()?;
        Ok(())
    }

    /// Writes the index snapshot and makes its new files private.
    pub(crate) fn persist_index(&self) -> Result<()> {
        self.engine()?.index.persist()?;
        private::tighten(&self.dir, &[INDEX_DIR])?;
        Ok(())
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        if self.engine.is_some() {
            // Best effort: a lost snapshot only costs a catch-up on the next open.
            let _ = self.persist_index();
        }
    }
}

/// The store's now ([`SqliteStore::now`]) as a [`Clock`], for the contexts of
/// reads and writes.
#[derive(Debug)]
struct StoreClock(Arc<SqliteStore>);

impl Clock for StoreClock {
    fn now(&self) -> Timestamp {
        self.0.now()
    }
}

/// Changes looked at to find the latest record time.
const RECENT_CHANGES: u64 = 64;

/// The latest record time among the most recent changes: creation, supersession
/// or deletion of the fragments they touch.
fn latest_change_time(store: &SqliteStore) -> Result<Option<Timestamp>> {
    let head = store.head()?;
    let start = head.saturating_sub(RECENT_CHANGES);
    let changes = store.changes_after(start, RECENT_CHANGES as usize)?;
    let ids: Vec<_> = changes.iter().map(|c| c.fragment).collect();
    Ok(store
        .load(&ids)?
        .iter()
        .flat_map(|s| {
            let f = &s.fragment;
            [Some(f.provenance.created_at), f.superseded_at, f.deleted_at]
        })
        .flatten()
        .max())
}

/// The embedder the configuration names.
fn embedder(config: &EmbedderConfig) -> Result<Arc<dyn Embedder>> {
    Ok(match config {
        EmbedderConfig::Offline(offline) => Arc::new(OfflineEmbedder::new(*offline)?),
        EmbedderConfig::Openai(server) => Arc::new(OpenAiEmbedder::new(server.clone())?),
        EmbedderConfig::Local(local) => local_embedder(local)?,
    })
}

#[cfg(feature = "local")]
fn local_embedder(local: &crate::config::LocalEmbedderConfig) -> Result<Arc<dyn Embedder>> {
    let mut model = colmem_llm::LocalModelConfig::new(local.dir.clone());
    model.max_seq_len = local.max_seq_len;
    model.batch_size = local.batch_size;
    Ok(Arc::new(colmem_llm::LocalEmbedder::load(&model)?))
}

#[cfg(not(feature = "local"))]
fn local_embedder(local: &crate::config::LocalEmbedderConfig) -> Result<Arc<dyn Embedder>> {
    Err(Error::InvalidConfig(format!(
        "embedder kind \"local\" ({}) needs a build with the `local` feature: rebuild colmem with --features local, or use kind = \"offline\" or \"openai\"",
        local.dir.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<Memory>();
        shared::<crate::Session<'static>>();
    }
}
