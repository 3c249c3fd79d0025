//! The hybrid searcher: access postings, a vector and a lexical index kept in
//! step with the store's change feed, a planner that puts the read filter inside
//! every search, and reciprocal rank fusion of the two signals.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use colmem_core::{
    Change, ChangeFeed, ChangeOp, FragmentId, FragmentMeta, Granularity, ReadFilter,
    StoredFragment, Validity,
};
use roaring::RoaringTreemap;

use crate::admit::Admit;
use crate::error::{Error, Result};
use crate::granularity::GranularityPostings;
use crate::lexical::LexicalIndex;
use crate::partition::{Cover, PartKey, Partitions};
use crate::postings::AccessPostings;
use crate::snapshot::{self, Manifest};
use crate::vector::{Effort, VectorHit, VectorIndex, sort_hits};

/// When to scan exactly and how hard to search the graph otherwise.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct PlannerConfig {
    /// Scan exactly when the filter admits at most this many fragments…
    pub exact_max: u64,
    /// …or at most this share of all fragments.
    pub exact_fraction: f64,
    /// Candidates an HNSW search keeps when the filter admits everything of a
    /// graph of `reference_len` vectors or more.
    pub base_candidates: usize,
    /// How candidates grow as selectivity `s` falls: `base · s^-growth`.
    pub growth: f64,
    /// The most candidates an HNSW search keeps.
    pub max_candidates: usize,
    /// The graph size `base_candidates` is meant for.
    pub reference_len: u64,
    /// How candidates shrink for a smaller graph of `len` vectors:
    /// `· (len / reference_len)^size_growth`. The beam a walk needs for the same
    /// recall grows with the graph (on the clustered 384-d bench data: 64
    /// candidates reach recall 1.0 at 10k, 128 reach 0.9999 at 100k).
    pub size_growth: f64,
    /// The fewest candidates an HNSW search keeps (never fewer than `k`).
    pub min_candidates: usize,
}

impl Default for PlannerConfig {
    fn default() -> Self {
        PlannerConfig {
            exact_max: 20_000,
            exact_fraction: 0.02,
            base_candidates: 256,
            growth: 0.25,
            max_candidates: 512,
            reference_len: 1_000_000,
            size_growth: 0.3,
            min_candidates: 32,
        }
    }
}

/// How the vector and BM25 signals are fused.
///
/// A hit at rank `r` of a signal whose scores, min–max normalised over that
/// signal's hits, give it `n` adds
/// `weight · ((1 − score_share) / (rrf_k + r) + score_share · n / (rrf_k + 1))`:
/// reciprocal-rank fusion at `score_share` 0, a convex combination of
/// normalised scores at 1, on the same scale either way.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct FusionConfig {
    /// The reciprocal-rank-fusion constant.
    pub rrf_k: f64,
    /// The share of each signal's weight given by its normalised score rather
    /// than its rank. Scores keep how far apart hits are, which ranks lose
    /// (LoCoMo evidence recall@10: 0.730 → 0.737 with the offline embedder,
    /// 0.738 → 0.762 with MiniLM, from 0 to 1).
    pub score_share: f64,
    /// Weight of the vector signal.
    pub vector_weight: f64,
    /// Weight of the BM25 signal.
    pub lexical_weight: f64,
    /// How deep each signal is read when both are fused (at least `k`).
    pub depth: usize,
}

impl Default for FusionConfig {
    fn default() -> Self {
        FusionConfig {
            rrf_k: 60.0,
            score_share: 1.0,
            vector_weight: 1.0,
            lexical_weight: 1.0,
            depth: 50,
        }
    }
}

impl FusionConfig {
    /// What each hit of one signal, best first, adds to its fused score before
    /// the signal's weight: its rank's share and its normalised score's share.
    /// Equal scores all normalise to 1; a score that is not a number to 0.
    pub fn contributions(&self, scores: &[f32]) -> Vec<f64> {
        let (min, max) = scores
            .iter()
            .map(|&s| f64::from(s))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| {
                (lo.min(s), hi.max(s))
            });
        scores
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                let normalised = if max > min {
                    (f64::from(s) - min) / (max - min)
                } else {
                    1.0
                };
                // A score that is not a number ranks by its position alone.
                let normalised = if normalised.is_finite() {
                    normalised
                } else {
                    0.0
                };
                (1.0 - self.score_share) / (self.rrf_k + (i + 1) as f64)
                    + self.score_share * normalised / (self.rrf_k + 1.0)
            })
            .collect()
    }
}

/// Settings of a [`HybridIndex`].
#[derive(Clone, PartialEq, Debug, Default)]
pub struct HybridConfig {
    /// The planner.
    pub planner: PlannerConfig,
    /// Rank fusion.
    pub fusion: FusionConfig,
    /// The embedder whose vectors this index holds; `None` adopts the first one seen.
    /// Opening a snapshot made by another embedder rebuilds it.
    pub embedder: Option<String>,
}

/// How a search was carried out.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Strategy {
    /// The filter admits nothing: no search ran.
    Empty,
    /// An exact scan over the admitted list (or an exact backend).
    ExactScan,
    /// An HNSW walk with the filter as its predicate.
    Hnsw {
        /// Candidates the walk kept.
        candidates: usize,
    },
    /// Walks of the graphs of the few large scopes the filter admits most of,
    /// with the filter as their predicate, merged with an exact scan of the
    /// admitted fragments outside them.
    Partitioned {
        /// Partition graphs walked.
        graphs: usize,
        /// The most candidates a walk of one of the graphs kept.
        candidates: usize,
        /// Admitted fragments scanned exactly.
        scanned: u64,
    },
}

/// The plan that produced a result.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Plan {
    /// How the vector signal was searched.
    pub strategy: Strategy,
    /// How many fragments the filter admits, counted from posting lists.
    pub admitted: u64,
    /// How many fragments the index holds.
    pub total: u64,
}

/// One signal's contribution to a hit.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Signal {
    /// 1-based rank within the signal.
    pub rank: usize,
    /// The signal's own score (cosine similarity, BM25).
    pub score: f32,
}

/// One search result with the scores that explain its rank.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Hit {
    /// The fragment.
    pub id: FragmentId,
    /// The fused score.
    pub fused: f64,
    /// The vector signal, if the fragment was among its results.
    pub vector: Option<Signal>,
    /// The BM25 signal, if the fragment was among its results.
    pub lexical: Option<Signal>,
    /// The plan that produced it.
    pub plan: Plan,
}

/// A search request: a vector, a text, or both.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Query<'a> {
    /// The query embedding.
    pub vector: Option<&'a [f32]>,
    /// The query text for BM25.
    pub text: Option<&'a str>,
    /// How many results.
    pub k: usize,
    /// Only fragments of these granularities; empty means every granularity.
    /// Like the read filter, the narrowing happens inside the search (the plan
    /// counts the narrowed set), so a rare granularity still gets its true top-k.
    pub granularities: &'a [Granularity],
    /// Only fragments whose world-time validity begins in this interval (what was
    /// told on a day or in a month), narrowed inside the search like `granularities`.
    pub begun_in: Option<Validity>,
}

/// What opening an index did.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct OpenReport {
    /// Whether a snapshot was restored (else the index was rebuilt from the feed).
    pub restored: bool,
    /// Why the snapshot was not used.
    pub rebuild_reason: Option<String>,
    /// What catching up did.
    pub catch_up: CatchUp,
}

/// What catching up from the change feed did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct CatchUp {
    /// Changes read.
    pub changes: usize,
    /// Fragments (re)indexed.
    pub indexed: usize,
    /// Fragments whose metadata was refreshed.
    pub refreshed: usize,
    /// Fragments dropped (deleted or purged).
    pub dropped: usize,
    /// Vectors skipped: another embedder or another dimension.
    pub skipped_vectors: usize,
    /// The sequence applied last.
    pub seq: u64,
}

#[derive(Debug)]
struct State {
    postings: AccessPostings,
    granularity: GranularityPostings,
    partitions: Partitions,
    seq: u64,
    /// The stamp of change `seq` (0 before any change).
    stamp: u64,
    embedder: Option<String>,
}

impl State {
    /// The fragments `filter` admits, narrowed to `granularities` (empty: all) and
    /// to those whose validity begins in `begun_in`, if given.
    fn admitted_in(
        &self,
        filter: &ReadFilter,
        granularities: &[Granularity],
        begun_in: Option<&Validity>,
    ) -> RoaringTreemap {
        let mut admitted = self.postings.admitted(filter);
        if let Some(narrowing) = self.granularity.narrowing(granularities) {
            admitted &= narrowing;
        }
        if let Some(interval) = begun_in {
            admitted &= self.postings.begun_in(interval);
        }
        admitted
    }
}

/// Vector + BM25 search over fragments with the read filter inside both.
#[derive(Debug)]
pub struct HybridIndex {
    vector: Arc<dyn VectorIndex>,
    lexical: Option<Arc<dyn LexicalIndex>>,
    config: HybridConfig,
    dir: Option<PathBuf>,
    state: RwLock<State>,
    /// Held for a whole catch-up: two at once could apply a record loaded before a
    /// delete after the delete was applied, and bring the fragment back for good.
    catching_up: Mutex<()>,
}

const CATCH_UP_BATCH: usize = 4096;
const GRANULARITY_FILE: &str = "granularity.bin";
const PARTITIONS_DIR: &str = "partitions";

/// What one candidate of an HNSW walk costs, in rows of an exact scan over an
/// admitted list (measured on 384-d vectors at 100k and 1M: 9 to 15 rows).
const WALK_ROWS: f64 = 15.0;

/// What one batch of changes asks of the indexes.
#[derive(Default)]
struct Batch {
    index: Vec<StoredFragment>,
    refresh: Vec<(u64, FragmentMeta, Granularity)>,
    drop: Vec<u64>,
    purge: Vec<u64>,
}

fn text_of(stored: &StoredFragment) -> String {
    let fragment = &stored.fragment;
    let mut text = fragment.content.clone();
    for keyword in &fragment.keywords {
        text.push(' ');
        text.push_str(keyword);
    }
    text
}

impl HybridIndex {
    /// An index held in memory only.
    pub fn new(
        vector: Arc<dyn VectorIndex>,
        lexical: Option<Arc<dyn LexicalIndex>>,
        config: HybridConfig,
    ) -> Self {
        let embedder = config.embedder.clone();
        HybridIndex {
            vector,
            lexical,
            config,
            dir: None,
            catching_up: Mutex::new(()),
            state: RwLock::new(State {
                postings: AccessPostings::new(),
                granularity: GranularityPostings::default(),
                partitions: Partitions::default(),
                seq: 0,
                stamp: 0,
                embedder,
            }),
        }
    }

    /// Opens the index kept in `dir`: restores its snapshot if it is whole, made
    /// by the configured embedder and of `feed`'s history (its last change's stamp;
    /// else starts empty), catches up from `feed`, and writes a fresh snapshot.
    pub fn open(
        dir: &Path,
        vector: Arc<dyn VectorIndex>,
        lexical: Option<Arc<dyn LexicalIndex>>,
        config: HybridConfig,
        feed: &dyn ChangeFeed,
    ) -> Result<(Self, OpenReport)> {
        let (mut index, report) = HybridIndex::load(dir, vector, lexical, config, feed)?;
        index.dir = Some(dir.to_path_buf());
        index.persist()?;
        Ok((index, report))
    }

    /// [`HybridIndex::open`] without writing to `dir`, then or later: it keeps no
    /// directory, so [`HybridIndex::persist`] does nothing. For a process that
    /// shares `dir` with others that read it while one that writes it waits.
    pub fn load(
        dir: &Path,
        vector: Arc<dyn VectorIndex>,
        lexical: Option<Arc<dyn LexicalIndex>>,
        config: HybridConfig,
        feed: &dyn ChangeFeed,
    ) -> Result<(Self, OpenReport)> {
        let index = HybridIndex::new(vector, lexical, config);
        let mut rebuild_reason = index.restore(dir).err();
        if rebuild_reason.is_none() {
            rebuild_reason = index.strays_from(feed)?;
        }
        if rebuild_reason.is_some() {
            index.reset()?;
        }
        let catch_up = index.catch_up(feed)?;
        Ok((
            index,
            OpenReport {
                restored: rebuild_reason.is_none(),
                rebuild_reason,
                catch_up,
            },
        ))
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Why the restored snapshot is not of `feed`'s history, if it is not: the change
    /// it applied last must be the feed's change of that sequence, stamp and all. A
    /// snapshot made from another store would hold that store's fragments under ids
    /// this store gives to others, with their access, and miss this store's changes.
    fn strays_from(&self, feed: &dyn ChangeFeed) -> Result<Option<String>> {
        let (seq, stamp) = {
            let state = self.read();
            (state.seq, state.stamp)
        };
        if seq == 0 {
            return Ok(None);
        }
        let found = feed.changes_after(seq - 1, 1)?.into_iter().next();
        Ok(match found {
            Some(change) if change.seq == seq && change.stamp == stamp => None,
            Some(change) if change.seq == seq => Some(format!(
                "the store's change {seq} is not the one the snapshot applied last: the \
                 snapshot was made from another store, or from this one before a backup \
                 of it was restored and written on"
            )),
            _ => Some(format!(
                "the store has no change {seq}, the last the snapshot applied: the store \
                 is older than the snapshot (restored from a backup?) or another store"
            )),
        })
    }

    /// Loads the current snapshot; the error says why it cannot be used.
    fn restore(&self, dir: &Path) -> std::result::Result<(), String> {
        let (current, manifest) = snapshot::verify(dir).map_err(|e| e.to_string())?;
        if manifest.dim != self.vector.dim() || manifest.vector_backend != self.vector.name() {
            return Err(format!(
                "the snapshot holds a {}-dimensional {} index, not a {}-dimensional {}",
                manifest.dim,
                manifest.vector_backend,
                self.vector.dim(),
                self.vector.name()
            ));
        }
        if manifest.lexical_backend.as_deref() != self.lexical.as_ref().map(|l| l.name()) {
            return Err("the snapshot was made with another lexical backend".into());
        }
        if let (Some(want), Some(have)) = (&self.config.embedder, &manifest.embedder)
            && want != have
        {
            return Err(format!(
                "the embedder changed from {have} to {want}; vectors must be recomputed"
            ));
        }
        let postings =
            AccessPostings::load(&current.join("postings.json")).map_err(|e| e.to_string())?;
        let granularity = GranularityPostings::load(&current.join(GRANULARITY_FILE))
            .map_err(|e| e.to_string())?;
        if granularity.ids() != *postings.ids() {
            return Err("the granularity postings do not cover the same fragments".into());
        }
        self.vector
            .load(&current.join("vector"))
            .map_err(|e| e.to_string())?;
        let partitions = Partitions::load(
            &current.join(PARTITIONS_DIR),
            &postings,
            &*self.vector,
            self.partition_min(),
        )
        .map_err(|e| e.to_string())?;
        if let Some(lexical) = &self.lexical {
            lexical
                .load(&current.join("lexical"))
                .map_err(|e| e.to_string())?;
        }
        let mut state = self.write();
        state.postings = postings;
        state.granularity = granularity;
        state.partitions = partitions;
        state.seq = manifest.seq;
        state.stamp = manifest.stamp;
        state.embedder = self.config.embedder.clone().or(manifest.embedder);
        Ok(())
    }

    /// Forgets everything, back to sequence 0.
    fn reset(&self) -> Result<()> {
        let mut state = self.write();
        self.vector.clear()?;
        if let Some(lexical) = &self.lexical {
            lexical.clear()?;
        }
        state.postings = AccessPostings::new();
        state.granularity = GranularityPostings::default();
        state.partitions.clear();
        state.seq = 0;
        state.stamp = 0;
        state.embedder = self.config.embedder.clone();
        Ok(())
    }

    /// Writes a snapshot into the index directory (no-op for an in-memory index).
    pub fn persist(&self) -> Result<()> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        // No snapshot holds a removed (purged) vector: the partition graphs that
        // held one are rebuilt (searches go on meanwhile), until none does under
        // the read lock the save holds.
        let mut tries = 0;
        let state = loop {
            let state = self.read();
            if !state.partitions.holds_purged() {
                break state;
            }
            tries += 1;
            if tries > 3 {
                // Changes keep coming: rebuild with them held off.
                drop(state);
                let mut state = self.write();
                let rebuilt = state.partitions.rebuild_purged(&*self.vector)?;
                state.partitions.install(rebuilt);
                continue;
            }
            let rebuilt = state.partitions.rebuild_purged(&*self.vector)?;
            drop(state);
            self.write().partitions.install(rebuilt);
        };
        let next = snapshot::begin(dir)?;
        state.postings.save(&next.join("postings.json"))?;
        state.granularity.save(&next.join(GRANULARITY_FILE))?;
        state.partitions.save(&next.join(PARTITIONS_DIR))?;
        let vector_dir = next.join("vector");
        std::fs::create_dir_all(&vector_dir).map_err(|e| Error::io(&vector_dir, e))?;
        self.vector.save(&vector_dir)?;
        if let Some(lexical) = &self.lexical {
            let lexical_dir = next.join("lexical");
            std::fs::create_dir_all(&lexical_dir).map_err(|e| Error::io(&lexical_dir, e))?;
            lexical.save(&lexical_dir)?;
        }
        let manifest = Manifest {
            format: snapshot::FORMAT,
            seq: state.seq,
            stamp: state.stamp,
            embedder: state.embedder.clone(),
            dim: self.vector.dim(),
            vector_backend: self.vector.name().to_owned(),
            lexical_backend: self.lexical.as_ref().map(|l| l.name().to_owned()),
            files: BTreeMap::new(),
        };
        snapshot::commit(dir, &next, manifest)
    }

    /// The last change sequence applied.
    pub fn seq(&self) -> u64 {
        self.read().seq
    }

    /// The number of fragments indexed.
    pub fn len(&self) -> u64 {
        self.read().postings.len()
    }

    /// Whether no fragment is indexed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The vector index.
    pub fn vector_index(&self) -> &Arc<dyn VectorIndex> {
        &self.vector
    }

    /// The lexical index.
    pub fn lexical_index(&self) -> Option<&Arc<dyn LexicalIndex>> {
        self.lexical.as_ref()
    }

    /// The settings.
    pub fn config(&self) -> &HybridConfig {
        &self.config
    }

    /// Applies every change of `feed` after the last applied sequence, in batches.
    pub fn catch_up(&self, feed: &dyn ChangeFeed) -> Result<CatchUp> {
        let _one_at_a_time = self
            .catching_up
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut report = CatchUp {
            seq: self.seq(),
            ..CatchUp::default()
        };
        loop {
            let changes = feed.changes_after(report.seq, CATCH_UP_BATCH)?;
            let Some(&Change {
                seq: last, stamp, ..
            }) = changes.last()
            else {
                break;
            };
            report.changes += changes.len();
            // The feed returns current records, so each fragment's final state in
            // the batch is what the index must reflect; the ops say what to refresh.
            let mut ops: HashMap<u64, (bool, bool)> = HashMap::new();
            for change in &changes {
                let entry = ops.entry(change.fragment.0).or_default();
                match change.op {
                    ChangeOp::Put => entry.0 = true,
                    ChangeOp::Purge => entry.1 = true,
                    ChangeOp::Meta | ChangeOp::Delete => {}
                }
            }
            let mut ids: Vec<FragmentId> = ops.keys().map(|&id| FragmentId(id)).collect();
            ids.sort();
            let loaded = feed.load(&ids)?;
            let mut records: HashMap<u64, StoredFragment> =
                loaded.into_iter().map(|s| (s.fragment.id.0, s)).collect();
            let mut batch = Batch::default();
            {
                let state = self.read();
                for id in ids {
                    let (put, purge) = ops.get(&id.0).copied().unwrap_or_default();
                    match records.remove(&id.0) {
                        None => batch.purge.push(id.0),
                        Some(record) if record.fragment.deleted_at.is_some() => {
                            if purge {
                                batch.purge.push(id.0);
                            } else {
                                batch.drop.push(id.0);
                            }
                        }
                        Some(record) => {
                            if put || state.postings.meta(id.0).is_none() {
                                batch.index.push(record);
                            } else {
                                batch.refresh.push((
                                    id.0,
                                    record.fragment.meta(),
                                    record.fragment.granularity,
                                ));
                            }
                        }
                    }
                }
            }
            self.apply_batch(&mut report, batch)?;
            {
                let mut state = self.write();
                state.seq = last;
                state.stamp = stamp;
            }
            report.seq = last;
        }
        Ok(report)
    }

    fn apply_batch(&self, report: &mut CatchUp, batch: Batch) -> Result<()> {
        report.indexed += batch.index.len();
        report.skipped_vectors += self.put_many(&batch.index)?;
        report.refreshed += batch.refresh.len();
        {
            let mut state = self.write();
            let min_size = self.partition_min();
            for (id, meta, granularity) in batch.refresh {
                state
                    .partitions
                    .refresh(id, &meta, &*self.vector, min_size)?;
                state.postings.upsert(id, meta);
                state.granularity.insert(id, granularity);
            }
        }
        report.dropped += batch.drop.len() + batch.purge.len();
        for &id in &batch.drop {
            self.delete(id)?;
        }
        self.purge(&batch.purge)?;
        self.commit()
    }

    /// Indexes (or re-indexes) fragments: metadata, text and embedding. Returns
    /// how many embeddings were skipped (another embedder or dimension).
    /// Text becomes searchable at the next [`HybridIndex::commit`].
    pub fn put_many(&self, records: &[StoredFragment]) -> Result<usize> {
        let mut state = self.write();
        let mut vectors: Vec<(u64, &[f32])> = Vec::with_capacity(records.len());
        let mut placed: Vec<(u64, Option<PartKey>)> = Vec::with_capacity(records.len());
        let mut skipped = 0;
        for stored in records {
            let id = stored.fragment.id.0;
            let mut keep_vector = false;
            if let Some(embedding) = &stored.embedding {
                if state.embedder.is_none() {
                    state.embedder = Some(embedding.embedder.clone());
                }
                keep_vector = state.embedder.as_deref() == Some(embedding.embedder.as_str())
                    && embedding.dim() == self.vector.dim();
                if keep_vector {
                    vectors.push((id, &embedding.vector));
                } else {
                    skipped += 1;
                }
            }
            if !keep_vector {
                self.vector.remove(id)?;
            }
            placed.push((
                id,
                keep_vector.then(|| PartKey::of(&stored.fragment.meta())),
            ));
            if let Some(lexical) = &self.lexical {
                lexical.insert(id, &text_of(stored))?;
            }
            state.postings.upsert(id, stored.fragment.meta());
            state.granularity.insert(id, stored.fragment.granularity);
        }
        self.vector.insert_batch(&vectors)?;
        let min_size = self.partition_min();
        state.partitions.place(&placed, &*self.vector, min_size)?;
        Ok(skipped)
    }

    /// Indexes one fragment (see [`HybridIndex::put_many`]).
    pub fn put(&self, stored: &StoredFragment) -> Result<usize> {
        self.put_many(std::slice::from_ref(stored))
    }

    /// Refreshes the access metadata of a fragment already indexed (a fragment
    /// not indexed is left alone: index it with [`HybridIndex::put`]). Fails
    /// only when moving its vector to another scope's partition graph fails.
    pub fn update_meta(&self, id: u64, meta: FragmentMeta) -> Result<()> {
        let mut state = self.write();
        if state.postings.meta(id).is_some() {
            let min_size = self.partition_min();
            state
                .partitions
                .refresh(id, &meta, &*self.vector, min_size)?;
            state.postings.upsert(id, meta);
        }
        Ok(())
    }

    /// Drops a fragment from every index: it is never returned again.
    pub fn delete(&self, id: u64) -> Result<()> {
        let mut state = self.write();
        state.postings.remove(id);
        state.granularity.remove(id);
        state.partitions.remove(id)?;
        self.vector.remove(id)?;
        if let Some(lexical) = &self.lexical {
            lexical.remove(id)?;
        }
        Ok(())
    }

    /// Forgets fragments entirely: their text is gone from the lexical index files too.
    pub fn purge(&self, ids: &[u64]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut state = self.write();
        for &id in ids {
            state.postings.remove(id);
            state.granularity.remove(id);
        }
        state.partitions.purge(ids)?;
        self.vector.purge(ids)?;
        if let Some(lexical) = &self.lexical {
            lexical.purge(ids)?;
        }
        Ok(())
    }

    /// Makes every text written so far searchable.
    pub fn commit(&self) -> Result<()> {
        match &self.lexical {
            Some(lexical) => lexical.commit(),
            None => Ok(()),
        }
    }

    /// The fragments `filter` admits, from the posting lists.
    pub fn admitted(&self, filter: &ReadFilter) -> RoaringTreemap {
        self.read().postings.admitted(filter)
    }

    /// The fragments `filter` admits among those of `granularities` (empty: every
    /// granularity): the set a [`Query`] with these granularities searches.
    pub fn admitted_in(
        &self,
        filter: &ReadFilter,
        granularities: &[Granularity],
    ) -> RoaringTreemap {
        self.read().admitted_in(filter, granularities, None)
    }

    /// Scopes holding more vectors than this get a partition graph (the backend's setting).
    fn partition_min(&self) -> Option<u64> {
        self.vector.partition_min()
    }

    /// Candidates an HNSW walk keeps when its filter admits a share `share` of
    /// its graph of `len` vectors.
    fn candidates_for(&self, share: f64, len: u64) -> usize {
        let planner = &self.config.planner;
        let boost = share.max(1e-9).powf(-planner.growth);
        let size = (len as f64 / planner.reference_len.max(1) as f64)
            .min(1.0)
            .powf(planner.size_growth);
        let candidates = (planner.base_candidates as f64 * boost * size).ceil() as usize;
        candidates.clamp(
            planner.min_candidates.min(planner.max_candidates),
            planner.max_candidates.max(1),
        )
    }

    /// The estimated cost of an HNSW walk whose filter admits a share `share`
    /// of its graph of `len` vectors, in rows of an exact scan: the walk visits
    /// about `candidates / share` nodes, each costing about [`WALK_ROWS`] rows.
    fn walk_cost(&self, share: f64, len: u64) -> f64 {
        WALK_ROWS * self.candidates_for(share, len) as f64 / share.max(1e-9)
    }

    /// The plan for an admitted set (and the partition cover it uses, if any):
    /// the walks of partition graphs with the remainder scanned when their
    /// estimated cost is below both the exact scan's and the main walk's; else
    /// an exact scan of a small set and a walk of the main graph otherwise.
    fn plan_for(
        &self,
        state: &State,
        filter: &ReadFilter,
        admitted: &RoaringTreemap,
    ) -> (Plan, Option<Cover>) {
        let planner = &self.config.planner;
        let count = admitted.len();
        let total = state.postings.len();
        let plan = |strategy| Plan {
            strategy,
            admitted: count,
            total,
        };
        if count == 0 {
            return (plan(Strategy::Empty), None);
        }
        if self.vector.is_exact() {
            return (plan(Strategy::ExactScan), None);
        }
        let share = count as f64 / total.max(1) as f64;
        let walk = self.walk_cost(share, total);
        let reachable = |key: PartKey| match key {
            PartKey::Global => true,
            PartKey::Group(group) => filter.groups().contains(group),
            PartKey::User(user) => user == filter.user(),
        };
        let cover = state.partitions.cover(
            admitted,
            reachable,
            |share, len| self.walk_cost(share, len),
            walk.min(count as f64),
        );
        if let Some(cover) = cover {
            let most = cover
                .parts
                .iter()
                .map(|p| self.candidates_for(p.share, p.graph.len() as u64))
                .max()
                .unwrap_or(0);
            let strategy = Strategy::Partitioned {
                graphs: cover.parts.len(),
                candidates: most,
                scanned: cover.rest.len(),
            };
            return (plan(strategy), Some(cover));
        }
        let small =
            count <= planner.exact_max || (count as f64) <= planner.exact_fraction * total as f64;
        if small {
            return (plan(Strategy::ExactScan), None);
        }
        let strategy = Strategy::Hnsw {
            candidates: self.candidates_for(share, total),
        };
        (plan(strategy), None)
    }

    /// The plan a search under `filter` would use.
    pub fn plan(&self, filter: &ReadFilter) -> Plan {
        self.plan_in(filter, &[])
    }

    /// The plan a search under `filter` narrowed to `granularities` would use.
    pub fn plan_in(&self, filter: &ReadFilter, granularities: &[Granularity]) -> Plan {
        let state = self.read();
        let admitted = state.admitted_in(filter, granularities, None);
        self.plan_for(&state, filter, &admitted).0
    }

    /// The number of partition graphs (scopes large enough to have their own).
    pub fn partition_graphs(&self) -> usize {
        self.read().partitions.graphs()
    }

    /// The vector signal over the partition graphs of `cover` and its exact remainder.
    fn search_partitions(
        &self,
        vector: &[f32],
        depth: usize,
        admit: &Admit,
        cover: &Cover,
    ) -> Result<Vec<VectorHit>> {
        let mut hits = self.vector.scan(vector, depth, &mut cover.rest.iter())?;
        for part in &cover.parts {
            let candidates = self
                .candidates_for(part.share, part.graph.len() as u64)
                .max(depth);
            let effort = Effort { candidates };
            // Every candidate the walk found, re-ranked on the main index's exact
            // vectors (a partition graph may hold quantised ones).
            let found = part.graph.search(vector, candidates, admit, effort)?;
            hits.extend(
                self.vector
                    .scan(vector, depth, &mut found.iter().map(|h| h.id))?,
            );
        }
        // Partitions are disjoint and the remainder lies outside them: no id repeats.
        sort_hits(&mut hits);
        hits.truncate(depth);
        Ok(hits)
    }

    /// The top `query.k` fragments `filter` admits, fused from the vector and
    /// BM25 signals; each hit carries its per-signal scores and the plan.
    pub fn search(&self, query: &Query<'_>, filter: &ReadFilter) -> Result<Vec<Hit>> {
        if query.vector.is_none() && query.text.is_none() {
            return Err(Error::InvalidInput(
                "a query needs a vector, a text, or both".into(),
            ));
        }
        let (admitted, plan, cover) = {
            let state = self.read();
            let admitted = state.admitted_in(filter, query.granularities, query.begun_in.as_ref());
            let (plan, cover) = self.plan_for(&state, filter, &admitted);
            (admitted, plan, cover)
        };
        if plan.strategy == Strategy::Empty || query.k == 0 {
            return Ok(Vec::new());
        }
        let both = query.vector.is_some() && query.text.is_some() && self.lexical.is_some();
        // No search returns more than the filter admits: a huge `k` is no allocation.
        let admitted_count = usize::try_from(plan.admitted).unwrap_or(usize::MAX);
        let k = query.k.min(admitted_count);
        let depth = if both {
            k.max(self.config.fusion.depth).min(admitted_count)
        } else {
            k
        };
        // The backends always get the admitted set, even when it held every fragment:
        // a catch-up may add another reader's fragment to them once the lock is let go.
        let admitted = Arc::new(admitted);
        let admit = Admit::Only(admitted.clone());
        let vector_hits = match query.vector {
            None => Vec::new(),
            Some(vector) => match plan.strategy {
                Strategy::Partitioned { .. } if let Some(cover) = &cover => {
                    self.search_partitions(vector, depth, &admit, cover)?
                }
                Strategy::Hnsw { candidates } => {
                    self.vector
                        .search(vector, depth, &admit, Effort { candidates })?
                }
                _ if self.vector.is_exact() => {
                    self.vector
                        .search(vector, depth, &admit, Effort::default_for(depth))?
                }
                _ => self.vector.scan(vector, depth, &mut admitted.iter())?,
            },
        };
        let lexical_hits = match (query.text, &self.lexical) {
            (Some(text), Some(lexical)) => lexical.search(text, depth, &admit)?,
            _ => Vec::new(),
        };
        let fusion = &self.config.fusion;
        let mut hits: HashMap<u64, Hit> = HashMap::new();
        let blank = |id: u64| Hit {
            id: FragmentId(id),
            fused: 0.0,
            vector: None,
            lexical: None,
            plan,
        };
        // Each signal in turn, vector first: its ranked ids and scores, its weight and
        // the hit's slot for it.
        type Ranked = Vec<(u64, f32)>;
        type Slot = fn(&mut Hit) -> &mut Option<Signal>;
        let signals: [(Ranked, f64, Slot); 2] = [
            (
                vector_hits.iter().map(|h| (h.id, h.score)).collect(),
                fusion.vector_weight,
                |hit| &mut hit.vector,
            ),
            (
                lexical_hits.iter().map(|h| (h.id, h.score)).collect(),
                fusion.lexical_weight,
                |hit| &mut hit.lexical,
            ),
        ];
        for (ranked, weight, slot) in signals {
            let scores: Vec<f32> = ranked.iter().map(|&(_, score)| score).collect();
            for (i, (&(id, score), part)) in
                ranked.iter().zip(fusion.contributions(&scores)).enumerate()
            {
                let hit = hits.entry(id).or_insert_with(|| blank(id));
                *slot(hit) = Some(Signal { rank: i + 1, score });
                hit.fused += weight * part;
            }
        }
        let mut hits: Vec<Hit> = hits.into_values().collect();
        hits.sort_by(|a, b| {
            b.fused
                .total_cmp(&a.fused)
                .then_with(|| {
                    let rank = |h: &Hit| h.vector.map_or(usize::MAX, |s| s.rank);
                    rank(a).cmp(&rank(b))
                })
                .then_with(|| a.id.cmp(&b.id))
        });
        hits.truncate(k);
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::FusionConfig;

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn ranks_scores_and_their_mix_fuse_on_one_scale() {
        let scores = [1.0, 0.5, 0.0];
        let ranks = FusionConfig {
            rrf_k: 1.0,
            score_share: 0.0,
            ..FusionConfig::default()
        };
        assert!(close(
            &ranks.contributions(&scores),
            &[1.0 / 2.0, 1.0 / 3.0, 1.0 / 4.0]
        ));
        let by_score = FusionConfig {
            score_share: 1.0,
            ..ranks
        };
        // min–max: the best gets what rank 1 gets, the worst nothing.
        assert!(close(&by_score.contributions(&scores), &[0.5, 0.25, 0.0]));
        let mixed = FusionConfig {
            score_share: 0.5,
            ..ranks
        };
        assert!(close(
            &mixed.contributions(&scores),
            &[0.5, (1.0 / 3.0 + 0.25) / 2.0, 1.0 / 8.0]
        ));
    }

    #[test]
    fn equal_scores_are_all_best_and_a_nan_counts_for_nothing() {
        let by_score = FusionConfig {
            rrf_k: 1.0,
            score_share: 1.0,
            ..FusionConfig::default()
        };
        assert!(close(&by_score.contributions(&[0.3, 0.3]), &[0.5, 0.5]));
        let parts = by_score.contributions(&[0.8, f32::NAN, 0.2]);
        assert!(close(&parts, &[0.5, 0.0, 0.0]), "{parts:?}");
        assert!(by_score.contributions(&[]).is_empty());
    }
}
