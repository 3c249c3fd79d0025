//! The usearch HNSW backend: cosine, f32 with optional f16 or i8 quantisation,
//! the filter applied as the predicate of usearch's `filtered_search`. With
//! quantisation the graph is walked on the coarse vectors and the candidates it
//! found are re-ranked on the exact f32 copies.
//!
//! The expansion setting of a usearch index is index-wide, so it is fixed at
//! construction and never changed while others search; a query asks for more
//! candidates through the result count instead ([`Effort::candidates`]), which
//! widens that query's beam alone.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use crate::admit::Admit;
use crate::error::{Error, Result};
use crate::flat::FlatIndex;
use crate::vector::{Effort, VectorHit, VectorIndex, normalized, scan_by_lookup, sort_hits};

const FILE: &str = "hnsw.usearch";
const BACKEND: &str = "usearch";

/// How vectors are stored inside the HNSW graph.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Quantization {
    /// 32-bit floats: exact distances.
    #[default]
    F32,
    /// 16-bit floats: half the memory, near-identical ranking.
    F16,
    /// 8-bit integers: a quarter of the memory, coarser distances.
    I8,
}

/// Construction settings of an [`HnswIndex`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct HnswConfig {
    /// Edges per node (usearch "connectivity", HNSW `M`).
    pub connectivity: usize,
    /// Beam width while inserting.
    pub expansion_add: usize,
    /// Default beam width while searching; fixed for the index's life.
    pub expansion_search: usize,
    /// Vector storage.
    pub quantization: Quantization,
    /// Threads used by [`VectorIndex::insert_batch`], and the number of concurrent
    /// searches usearch prepares contexts for is at least this.
    pub threads: usize,
    /// Concurrent searches usearch prepares contexts for.
    pub max_concurrent_searches: usize,
    /// A scope (group, user, global) holding more vectors than this gets its own
    /// partition graph besides the main one ([`VectorIndex::partition`]), which
    /// the planner walks when a filter admits most of that scope; `None`: never.
    /// Costs one more insert per vector of such a scope.
    pub partition_min: Option<u64>,
}

impl Default for HnswConfig {
    fn default() -> Self {
        HnswConfig {
            connectivity: 32,
            expansion_add: 128,
            expansion_search: 32,
            quantization: Quantization::F32,
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            max_concurrent_searches: 64,
            partition_min: Some(20_000),
        }
    }
}

/// An approximate cosine index on usearch's HNSW graph.
pub struct HnswIndex {
    dim: usize,
    config: HnswConfig,
    index: RwLock<Index>,
    /// Contiguous f32 copies for the planner's exact scans over admitted lists
    /// (usearch's per-key `get` is several times slower). Costs `4·dim` bytes a
    /// vector. A partition graph ([`VectorIndex::partition`]) has none: the
    /// planner scans through the main index.
    exact: Option<FlatIndex>,
    /// Serialises writers, so capacity checks and inserts do not race.
    writer: Mutex<()>,
    /// Whether a vector was purged since the last save. usearch only marks a
    /// removed slot free and keeps its bytes (compaction too), which a save
    /// would write out: a save after a purge first rebuilds the graph from the
    /// exact copies, so no snapshot holds the vector of a purged fragment. A
    /// partition graph, which has no copies, is rebuilt by its owner.
    purged: AtomicBool,
}

impl std::fmt::Debug for HnswIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HnswIndex")
            .field("dim", &self.dim)
            .field("config", &self.config)
            .field("len", &self.len())
            .finish()
    }
}

fn options(dim: usize, config: &HnswConfig) -> IndexOptions {
    IndexOptions {
        dimensions: dim,
        metric: MetricKind::Cos,
        quantization: match config.quantization {
            Quantization::F32 => ScalarKind::F32,
            Quantization::F16 => ScalarKind::F16,
            Quantization::I8 => ScalarKind::I8,
        },
        connectivity: config.connectivity,
        expansion_add: config.expansion_add,
        expansion_search: config.expansion_search,
        multi: false,
    }
}

impl HnswIndex {
    /// An empty index of `dim`-dimensional vectors.
    pub fn new(dim: usize, config: HnswConfig) -> Result<Self> {
        if dim == 0 {
            return Err(Error::InvalidInput(
                "an index needs a dimension of at least 1".into(),
            ));
        }
        let index = Self::fresh(dim, &config)?;
        Ok(HnswIndex {
            dim,
            config,
            index: RwLock::new(index),
            exact: Some(FlatIndex::new(dim)),
            writer: Mutex::new(()),
            purged: AtomicBool::new(false),
        })
    }

    /// An empty graph without exact copies, for a partition.
    fn graph_only(dim: usize, config: HnswConfig) -> Result<Self> {
        let config = HnswConfig {
            partition_min: None,
            ..config
        };
        let mut index = Self::new(dim, config)?;
        index.exact = None;
        Ok(index)
    }

    fn fresh(dim: usize, config: &HnswConfig) -> Result<Index> {
        let index = Index::new(&options(dim, config)).map_err(|e| Error::backend(BACKEND, e))?;
        Self::reserve(&index, 1024, config)?;
        Ok(index)
    }

    fn reserve(index: &Index, capacity: usize, config: &HnswConfig) -> Result<()> {
        let threads = config.max_concurrent_searches.max(config.threads).max(1);
        index
            .reserve_capacity_and_threads(capacity, threads)
            .map_err(|e| Error::backend(BACKEND, e))
    }

    /// The SIMD kernels usearch picked on this machine (for reports).
    pub fn hardware_acceleration(&self) -> String {
        self.read().hardware_acceleration()
    }

    /// The construction settings.
    pub fn config(&self) -> &HnswConfig {
        &self.config
    }

    fn read(&self) -> RwLockReadGuard<'_, Index> {
        self.index.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Index> {
        self.index.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes room for `extra` more vectors; the caller holds the writer lock.
    fn ensure_room(&self, extra: usize) -> Result<()> {
        let (size, capacity) = {
            let index = self.read();
            (index.size(), index.capacity())
        };
        if size + extra > capacity {
            let wanted = (size + extra).max(capacity.saturating_mul(2));
            Self::reserve(&self.write(), wanted, &self.config)?;
        }
        Ok(())
    }
}

/// Adds normalised vectors to `index` on up to `threads` threads; the caller
/// made room and holds the writer lock.
fn add_all(index: &Index, rows: &[(u64, &[f32])], threads: usize) -> Result<()> {
    let threads = threads.clamp(1, 64);
    let chunk = rows.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = rows
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || -> Result<()> {
                    for (id, vector) in part {
                        index
                            .add(*id, vector)
                            .map_err(|e| Error::backend(BACKEND, e))?;
                    }
                    Ok(())
                })
            })
            .collect();
        workers.into_iter().try_for_each(|worker| {
            worker
                .join()
                .map_err(|_| Error::backend(BACKEND, "an insert thread panicked"))?
        })
    })
}

impl VectorIndex for HnswIndex {
    fn name(&self) -> &'static str {
        "usearch-hnsw"
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn len(&self) -> usize {
        self.read().size()
    }

    fn is_exact(&self) -> bool {
        false
    }

    fn insert(&self, id: u64, vector: &[f32]) -> Result<()> {
        let vector = normalized(vector, self.dim)?;
        let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        self.ensure_room(1)?;
        let index = self.read();
        if index.contains(id) {
            index.remove(id).map_err(|e| Error::backend(BACKEND, e))?;
        }
        index
            .add(id, &vector)
            .map_err(|e| Error::backend(BACKEND, e))?;
        match &self.exact {
            Some(exact) => exact.insert(id, &vector),
            None => Ok(()),
        }
    }

    fn insert_batch(&self, items: &[(u64, &[f32])]) -> Result<()> {
        let mut rows = Vec::with_capacity(items.len());
        for (id, vector) in items {
            rows.push((*id, normalized(vector, self.dim)?));
        }
        let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        self.ensure_room(rows.len())?;
        let index = self.read();
        for (id, _) in &rows {
            if index.contains(*id) {
                index.remove(*id).map_err(|e| Error::backend(BACKEND, e))?;
            }
        }
        if let Some(exact) = &self.exact {
            for (id, vector) in &rows {
                exact.insert(*id, vector)?;
            }
        }
        let items: Vec<(u64, &[f32])> = rows.iter().map(|(id, v)| (*id, v.as_slice())).collect();
        add_all(&index, &items, self.config.threads)
    }

    fn remove(&self, id: u64) -> Result<bool> {
        let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let index = self.read();
        if !index.contains(id) {
            return Ok(false);
        }
        index.remove(id).map_err(|e| Error::backend(BACKEND, e))?;
        if let Some(exact) = &self.exact {
            exact.remove(id)?;
        }
        Ok(true)
    }

    fn purge(&self, ids: &[u64]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        // Marked before (a removal that fails part-way leaves the mark) and after
        // (a save in between rebuilt before the removals): even for ids removed
        // before (a deleted fragment purged later), whose bytes may still lie in
        // freed slots.
        self.purged.store(true, Ordering::SeqCst);
        for &id in ids {
            self.remove(id)?;
        }
        self.purged.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn clear(&self) -> Result<()> {
        let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        *self.write() = Self::fresh(self.dim, &self.config)?;
        match &self.exact {
            Some(exact) => exact.clear(),
            None => Ok(()),
        }
    }

    fn contains(&self, id: u64) -> bool {
        self.read().contains(id)
    }

    fn vector(&self, id: u64, out: &mut Vec<f32>) -> Result<bool> {
        if let Some(exact) = &self.exact {
            return exact.vector(id, out);
        }
        out.clear();
        out.resize(self.dim, 0.0);
        let found = self
            .read()
            .get(id, out)
            .map_err(|e| Error::backend(BACKEND, e))?;
        if found == 0 {
            out.clear();
        }
        Ok(found > 0)
    }

    fn scan(
        &self,
        query: &[f32],
        k: usize,
        ids: &mut dyn Iterator<Item = u64>,
    ) -> Result<Vec<VectorHit>> {
        match &self.exact {
            Some(exact) => exact.scan(query, k, ids),
            None => scan_by_lookup(self, query, k, ids),
        }
    }

    fn partition(&self) -> Result<Option<Box<dyn VectorIndex>>> {
        Ok(Some(Box::new(Self::graph_only(self.dim, self.config)?)))
    }

    fn partition_min(&self) -> Option<u64> {
        self.config.partition_min
    }

    fn search(
        &self,
        query: &[f32],
        k: usize,
        admit: &Admit,
        effort: Effort,
    ) -> Result<Vec<VectorHit>> {
        let query = normalized(query, self.dim)?;
        if k == 0 {
            return Ok(Vec::new());
        }
        let count = effort.candidates.max(k);
        // No more admitted ids than candidates a walk would fetch: reading them is
        // exact and cheaper, where a walk through a graph of mostly refused nodes may
        // not reach them all.
        if let Admit::Only(ids) = admit
            && ids.len() <= count as u64
        {
            return self.scan(&query, k, &mut ids.iter());
        }
        let index = self.read();
        let matches = match admit {
            Admit::All => index.search(&query, count),
            Admit::Only(ids) => index.filtered_search(&query, count, |key| ids.contains(key)),
        }
        .map_err(|e| Error::backend(BACKEND, e))?;
        drop(index);
        if let Some(exact) = self
            .exact
            .as_ref()
            .filter(|_| self.config.quantization != Quantization::F32)
        {
            // Quantised distances steer the walk; the exact copies rank what it found.
            return exact.scan(&query, k, &mut matches.keys.iter().copied());
        }
        let mut hits: Vec<VectorHit> = matches
            .keys
            .iter()
            .zip(&matches.distances)
            .map(|(&id, &distance)| VectorHit {
                id,
                score: 1.0 - distance,
            })
            .collect();
        sort_hits(&mut hits);
        hits.truncate(k);
        Ok(hits)
    }

    fn save(&self, dir: &Path) -> Result<()> {
        let path = dir.join(FILE);
        let text = path
            .to_str()
            .ok_or_else(|| Error::InvalidInput("the index path is not valid UTF-8".into()))?;
        // Held through the save: a removal meanwhile would be written out.
        let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(exact) = &self.exact
            && self.purged.load(Ordering::SeqCst)
        {
            let rows = exact.rows();
            let index = Self::fresh(self.dim, &self.config)?;
            Self::reserve(&index, rows.len() + 1024, &self.config)?;
            let items: Vec<(u64, &[f32])> =
                rows.iter().map(|(id, v)| (*id, v.as_slice())).collect();
            add_all(&index, &items, self.config.threads)?;
            *self.write() = index;
            self.purged.store(false, Ordering::SeqCst);
        }
        self.read()
            .save(text)
            .map_err(|e| Error::io(&path, std::io::Error::other(e.to_string())))?;
        match &self.exact {
            Some(exact) => exact.save(dir),
            None => Ok(()),
        }
    }

    fn load(&self, dir: &Path) -> Result<()> {
        let path = dir.join(FILE);
        if !path.is_file() {
            return Err(Error::corrupt(&path, "the file is missing"));
        }
        let text = path
            .to_str()
            .ok_or_else(|| Error::InvalidInput("the index path is not valid UTF-8".into()))?;
        let meta = Index::metadata(text).map_err(|e| Error::corrupt(&path, e.to_string()))?;
        if meta.dimensions != self.dim as u64 {
            return Err(Error::corrupt(
                &path,
                format!(
                    "it holds {}-dimensional vectors, not {}",
                    meta.dimensions, self.dim
                ),
            ));
        }
        // usearch would load the file's quantization over the configured one.
        let options = options(self.dim, &self.config);
        if meta.quantization != options.quantization || meta.metric != options.metric {
            return Err(Error::corrupt(
                &path,
                format!(
                    "it stores {:?} vectors by {:?} distance, not the configured {:?} by {:?}",
                    meta.quantization, meta.metric, options.quantization, options.metric
                ),
            ));
        }
        let index = Index::new(&options).map_err(|e| Error::backend(BACKEND, e))?;
        index
            .load(text)
            .map_err(|e| Error::corrupt(&path, e.to_string()))?;
        let capacity = (index.size() + 1024).max(index.capacity());
        Self::reserve(&index, capacity, &self.config)?;
        let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(exact) = &self.exact {
            let copies = FlatIndex::new(self.dim);
            copies.load(dir)?;
            if copies.len() != index.size() {
                return Err(Error::corrupt(
                    &path,
                    "the graph and the exact copies disagree",
                ));
            }
            exact.load(dir)?;
        }
        *self.write() = index;
        Ok(())
    }
}
