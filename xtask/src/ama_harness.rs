//! A memory for the evaluations: a SQLite store in a temporary directory, an exact
//! vector index with tantivy BM25, an access graph with one assistant agent, and a
//! logical clock, with the AMA pipeline on top.

use std::sync::Arc;

use anyhow::{Context as _, Result};
use colmem_access::{AccessGraph, Context, SystemPolicy};
use colmem_ama::{Caller, Pipeline, PipelineConfig, Roles};
use colmem_core::{
    AccessChange, AccessEvent, AgentId, Clock, Edge, LogicalClock, Principal, Timestamp, UserId,
};
use colmem_index::{FlatIndex, FusionConfig, HybridConfig, HybridIndex, TantivyBm25};
use colmem_llm::Embedder;
use colmem_store::{FragmentStore, SqliteStore, StoreConfig};
use tempfile::TempDir;

/// The parts of an evaluation memory.
pub struct Harness {
    /// The logical clock every record time comes from.
    pub clock: Arc<LogicalClock>,
    /// The store.
    pub store: Arc<dyn FragmentStore>,
    /// The index over it.
    pub index: Arc<HybridIndex>,
    /// The embedder.
    pub embedder: Arc<dyn Embedder>,
    /// The access graph.
    pub graph: AccessGraph,
    /// The system policy (nobody writes globally).
    pub system: SystemPolicy,
    /// The one assistant agent.
    pub agent: AgentId,
    _dir: TempDir,
}

impl Harness {
    /// A fresh, empty memory.
    pub fn new(
        embedder: Arc<dyn Embedder>,
        start: Timestamp,
        fusion: FusionConfig,
    ) -> Result<Self> {
        let dir = tempfile::tempdir().context("creating a temporary directory")?;
        let clock = Arc::new(LogicalClock::new(start));
        let store = SqliteStore::open(
            dir.path().join("colmem.db"),
            StoreConfig {
                clock: Arc::new(Ticking(clock.clone())),
                ..StoreConfig::default()
            },
        )?;
        let index = HybridIndex::new(
            Arc::new(FlatIndex::new(embedder.dim())),
            Some(Arc::new(TantivyBm25::new()?)),
            HybridConfig {
                embedder: Some(embedder.id().to_owned()),
                fusion,
                ..HybridConfig::default()
            },
        );
        let agent = AgentId::new("assistant")?;
        let mut harness = Harness {
            clock,
            store: Arc::new(store),
            index: Arc::new(index),
            embedder,
            graph: AccessGraph::new(),
            system: SystemPolicy::default(),
            agent,
            _dir: dir,
        };
        harness.log(AccessChange::Register {
            principal: Principal::Agent(agent),
        })?;
        Ok(harness)
    }

    /// A pipeline with these roles and settings over this memory.
    pub fn pipeline(&self, roles: Roles, config: PipelineConfig) -> Pipeline {
        Pipeline::new(
            self.store.clone(),
            self.index.clone(),
            self.embedder.clone(),
            roles,
            config,
        )
    }

    /// Registers a user who may invoke the assistant from now on.
    pub fn add_user(&mut self, name: &str) -> Result<UserId> {
        let user = UserId::new(name)?;
        self.log(AccessChange::Register {
            principal: Principal::User(user),
        })?;
        self.log(AccessChange::Grant {
            edge: Edge::Invoke {
                user,
                agent: self.agent,
            },
            until: None,
        })?;
        Ok(user)
    }

    /// The assistant serving `user` now.
    pub fn caller(&self, user: UserId) -> Result<Caller<'_>> {
        let context = Context::new(user, self.agent, self.clock.as_ref());
        Ok(Caller::new(&self.graph, &self.system, context)?)
    }

    /// Appends an access event to the store's log and applies it to the graph.
    fn log(&mut self, change: AccessChange) -> Result<()> {
        let now = self.clock.now();
        let event = AccessEvent { at: now, change };
        self.graph.check_at(&event, now)?;
        self.store.append_access_event(&event)?;
        self.graph.apply(event)?;
        Ok(())
    }
}

/// The store's clock: the harness's logical clock, moving on a millisecond each time it
/// is read as a wall clock does, so one call's writes are later than what it listed.
#[derive(Debug)]
struct Ticking(Arc<LogicalClock>);
impl Clock for Ticking {
    fn now(&self) -> Timestamp {
        self.0.advance(1)
    }
}
