//! The [`VectorIndex`] trait: cosine nearest neighbours with the filter inside the search.

use std::fmt;
use std::path::Path;

use crate::admit::Admit;
use crate::error::{Error, Result};

/// One vector match: a fragment and its cosine similarity to the query.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct VectorHit {
    /// The fragment id.
    pub id: u64,
    /// Cosine similarity in `[-1, 1]`; higher is closer.
    pub score: f32,
}

/// How hard an approximate search should look.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Effort {
    /// How many candidates the search keeps while it walks (at least `k`).
    /// Exact backends ignore it.
    pub candidates: usize,
}

impl Effort {
    /// Keep exactly `k` candidates: the backend's default effort.
    pub fn default_for(k: usize) -> Self {
        Effort { candidates: k }
    }
}

/// A vector index over fragment ids, cosine similarity.
///
/// Every method takes `&self`: implementations synchronise internally so one
/// index can be shared as `Arc<dyn VectorIndex>` by readers and the writer.
/// Vectors are normalised by the index; callers pass raw embeddings.
pub trait VectorIndex: Send + Sync + fmt::Debug {
    /// A short name for plans and reports (`"flat"`, `"usearch-hnsw"`).
    fn name(&self) -> &'static str;

    /// The dimension of every vector.
    fn dim(&self) -> usize;

    /// The number of vectors held.
    fn len(&self) -> usize;

    /// Whether the index holds no vector.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether [`VectorIndex::search`] is exact (returns the true filtered top-k).
    fn is_exact(&self) -> bool;

    /// Adds or replaces the vector of fragment `id`.
    fn insert(&self, id: u64, vector: &[f32]) -> Result<()>;

    /// Adds or replaces many vectors; backends may do it in parallel.
    fn insert_batch(&self, items: &[(u64, &[f32])]) -> Result<()> {
        for (id, vector) in items {
            self.insert(*id, vector)?;
        }
        Ok(())
    }

    /// Forgets the vector of fragment `id`; returns whether it was held.
    fn remove(&self, id: u64) -> Result<bool>;

    /// Forgets the vectors of `ids` for good (purged fragments): no later save may
    /// hold a byte of them, nor of vectors removed earlier under these ids. A
    /// backend that keeps a removed vector's bytes (usearch does) drops them by
    /// its next save; one that frees them on removal needs only the default.
    fn purge(&self, ids: &[u64]) -> Result<()> {
        for &id in ids {
            self.remove(id)?;
        }
        Ok(())
    }

    /// Forgets every vector.
    fn clear(&self) -> Result<()>;

    /// Whether fragment `id` has a vector.
    fn contains(&self, id: u64) -> bool;

    /// Copies the (normalised) vector of `id` into `out`; returns whether it was held.
    fn vector(&self, id: u64, out: &mut Vec<f32>) -> Result<bool>;

    /// The `k` admitted vectors closest to `query`, best first. The filter is
    /// applied inside the search: an approximate backend walks its graph with
    /// the predicate, so it never returns fewer than `k` because of it.
    fn search(
        &self,
        query: &[f32],
        k: usize,
        admit: &Admit,
        effort: Effort,
    ) -> Result<Vec<VectorHit>>;

    /// The exact top-`k` among `ids`: a scan over an explicit admitted list.
    fn scan(
        &self,
        query: &[f32],
        k: usize,
        ids: &mut dyn Iterator<Item = u64>,
    ) -> Result<Vec<VectorHit>> {
        scan_by_lookup(self, query, k, ids)
    }

    /// A new empty index of the same backend and settings, holding a partition
    /// of the vectors (the fragments of one large scope), which the planner
    /// walks when a filter admits most of that partition and little else.
    /// `None` (the default) when the backend has no use for partitions.
    fn partition(&self) -> Result<Option<Box<dyn VectorIndex>>> {
        Ok(None)
    }

    /// How many vectors a scope holds at least (exclusive) before it gets a
    /// [`VectorIndex::partition`] graph; `None` (the default): never.
    fn partition_min(&self) -> Option<u64> {
        None
    }

    /// Writes the index into the empty directory `dir`.
    fn save(&self, dir: &Path) -> Result<()>;

    /// Replaces the contents with what [`VectorIndex::save`] wrote into `dir`;
    /// a missing, truncated or damaged file is an [`Error::Corrupt`] or [`Error::Io`].
    fn load(&self, dir: &Path) -> Result<()>;
}

/// The exact top-`k` among `ids`, fetching each vector through [`VectorIndex::vector`].
pub(crate) fn scan_by_lookup<V: VectorIndex + ?Sized>(
    index: &V,
    query: &[f32],
    k: usize,
    ids: &mut dyn Iterator<Item = u64>,
) -> Result<Vec<VectorHit>> {
    let query = normalized(query, index.dim())?;
    let mut top = TopK::new(k);
    let mut buffer = Vec::with_capacity(index.dim());
    for id in ids {
        if index.vector(id, &mut buffer)? {
            top.push(id, dot(&query, &buffer));
        }
    }
    Ok(top.into_sorted())
}

/// The dot product of two equally long slices.
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight independent accumulators let the compiler vectorise the loop.
    let mut acc = [0.0f32; 8];
    let chunks_a = a.chunks_exact(8);
    let chunks_b = b.chunks_exact(8);
    let tail: f32 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (ca, cb) in chunks_a.zip(chunks_b) {
        for i in 0..8 {
            acc[i] += ca[i] * cb[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `vector` scaled to unit length (a zero vector stays zero); checks the dimension.
pub fn normalized(vector: &[f32], dim: usize) -> Result<Vec<f32>> {
    if vector.len() != dim {
        return Err(Error::Dimension {
            expected: dim,
            got: vector.len(),
        });
    }
    if vector.iter().any(|x| !x.is_finite()) {
        return Err(Error::InvalidInput(
            "a vector has a NaN or infinite component; check the embedder".into(),
        ));
    }
    let norm = dot(vector, vector).sqrt();
    Ok(if norm > 0.0 {
        vector.iter().map(|x| x / norm).collect()
    } else {
        vector.to_vec()
    })
}

/// A bounded best-k collector; ties broken by the smaller id so results are deterministic.
#[derive(Debug)]
pub(crate) struct TopK {
    k: usize,
    heap: std::collections::BinaryHeap<Entry>,
}

/// A heap entry ordered so the heap's top is the *worst* kept hit.
#[derive(Debug, PartialEq)]
struct Entry(f32, u64);

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Worse = lower score, then larger id.
        other
            .0
            .total_cmp(&self.0)
            .then_with(|| self.1.cmp(&other.1))
    }
}

impl TopK {
    pub(crate) fn new(k: usize) -> Self {
        TopK {
            k,
            heap: std::collections::BinaryHeap::with_capacity(k + 1),
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, id: u64, score: f32) {
        if self.k == 0 {
            return;
        }
        let entry = Entry(score, id);
        if self.heap.len() < self.k {
            self.heap.push(entry);
        } else if self.heap.peek().is_some_and(|worst| entry < *worst) {
            self.heap.pop();
            self.heap.push(entry);
        }
    }

    pub(crate) fn into_sorted(self) -> Vec<VectorHit> {
        // `into_sorted_vec` is ascending by `Ord`, i.e. best first here.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|Entry(score, id)| VectorHit { id, score })
            .collect()
    }
}

/// Sorts hits best first, ties by id.
pub(crate) fn sort_hits(hits: &mut [VectorHit]) {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn top_k_keeps_the_best_and_breaks_ties_by_id() {
        let mut top = TopK::new(3);
        for (id, score) in [(5, 0.1), (1, 0.9), (7, 0.5), (2, 0.5), (9, 0.95), (3, 0.5)] {
            top.push(id, score);
        }
        let ids: Vec<u64> = top.into_sorted().iter().map(|h| h.id).collect();
        assert_eq!(ids, vec![9, 1, 2]);
    }

    #[test]
    fn dot_matches_the_naive_sum() {
        let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..19).map(|i| 1.0 - i as f32 * 0.1).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-4);
    }

    #[test]
    fn normalising_checks_dimension_and_finiteness() {
        assert!(matches!(
            normalized(&[1.0, 2.0], 3),
            Err(Error::Dimension {
                expected: 3,
                got: 2
            })
        ));
        assert!(normalized(&[f32::NAN, 1.0], 2).is_err());
        let v = normalized(&[3.0, 4.0], 2).unwrap();
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
    }
}
