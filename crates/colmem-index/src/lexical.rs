//! The [`LexicalIndex`] trait (BM25 over fragment text, the filter inside the
//! collection) and [`MemoryBm25`], a small in-memory implementation that is
//! always built: the reference for the conformance suite and the lexical side
//! of a build without tantivy.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde::{Deserialize, Serialize};

use crate::admit::Admit;
use crate::error::{Error, Result};
use crate::lemma::normal_form;
use crate::vector::{TopK, VectorHit};

/// One lexical match: a fragment and its BM25 score.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct LexicalHit {
    /// The fragment id.
    pub id: u64,
    /// The BM25 score; higher is better. Only comparable within one query.
    pub score: f32,
}

/// A full-text index over fragment ids, ranked by BM25.
///
/// Writes become searchable after [`LexicalIndex::commit`]. Every method takes
/// `&self`; implementations synchronise internally.
pub trait LexicalIndex: Send + Sync + fmt::Debug {
    /// A short name for plans and reports (`"memory-bm25"`, `"tantivy-bm25"`).
    fn name(&self) -> &'static str;

    /// The number of searchable documents.
    fn len(&self) -> usize;

    /// Whether no document is searchable.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds or replaces the text of fragment `id`.
    fn insert(&self, id: u64, text: &str) -> Result<()>;

    /// Removes fragment `id` from results (after the next commit).
    fn remove(&self, id: u64) -> Result<()>;

    /// Removes fragments and commits, and makes sure their text no longer lies in
    /// any index file (merging segments and collecting garbage where needed).
    fn purge(&self, ids: &[u64]) -> Result<()>;

    /// Forgets every document.
    fn clear(&self) -> Result<()>;

    /// Makes every write so far searchable.
    fn commit(&self) -> Result<()>;

    /// The `k` admitted documents that best match `query`, best first. The filter
    /// is applied while documents are collected, before the top-k is cut.
    fn search(&self, query: &str, k: usize, admit: &Admit) -> Result<Vec<LexicalHit>>;

    /// Commits and writes the index into the empty directory `dir`.
    fn save(&self, dir: &Path) -> Result<()>;

    /// Replaces the contents with what [`LexicalIndex::save`] wrote into `dir`.
    fn load(&self, dir: &Path) -> Result<()>;
}

/// English stop words dropped by [`analyze`].
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// A light English analyzer: split on non-alphanumerics, lowercase, drop stop
/// words, write chat's short forms in full ("biz" → "business"), take
/// irregular verbs and plurals to their base form ("bought" → "buy", "kids" →
/// "child") and then strip
/// common inflections (`-ing`, `-ed`, `-es`, `-s`).
pub fn analyze(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && w.len() <= 40)
        .map(str::to_lowercase)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .map(|w| stem(normal_form(&w).unwrap_or(&w)))
        .collect()
}

fn stem(word: &str) -> String {
    for suffix in ["ing", "ed", "es", "s"] {
        if let Some(base) = word.strip_suffix(suffix)
            && base.chars().count() >= 3
            && !base.ends_with('s')
        {
            return base.to_owned();
        }
    }
    word.to_owned()
}

const K1: f32 = 1.2;
const B: f32 = 0.75;
const FILE: &str = "bm25.json";

#[derive(Debug, Default, Serialize, Deserialize)]
struct Docs {
    /// Per document: its terms with frequencies, and its length in terms.
    docs: HashMap<u64, (Vec<(String, u32)>, u32)>,
    #[serde(skip)]
    postings: HashMap<String, HashMap<u64, u32>>,
    #[serde(skip)]
    total_len: u64,
}

impl Docs {
    fn remove(&mut self, id: u64) {
        if let Some((terms, len)) = self.docs.remove(&id) {
            self.total_len -= u64::from(len);
            for (term, _) in terms {
                if let Some(list) = self.postings.get_mut(&term) {
                    list.remove(&id);
                    if list.is_empty() {
                        self.postings.remove(&term);
                    }
                }
            }
        }
    }

    fn insert(&mut self, id: u64, terms: Vec<(String, u32)>, len: u32) {
        self.remove(id);
        for (term, tf) in &terms {
            self.postings
                .entry(term.clone())
                .or_default()
                .insert(id, *tf);
        }
        self.total_len += u64::from(len);
        self.docs.insert(id, (terms, len));
    }

    fn reindex(&mut self) {
        let docs = std::mem::take(&mut self.docs);
        self.postings.clear();
        self.total_len = 0;
        for (id, (terms, len)) in docs {
            self.insert(id, terms, len);
        }
    }
}

/// BM25 over an in-memory inverted index with the light [`analyze`]r. Writes are
/// searchable at once; `commit` is a no-op.
#[derive(Debug, Default)]
pub struct MemoryBm25 {
    docs: RwLock<Docs>,
}

impl MemoryBm25 {
    /// An empty index.
    pub fn new() -> Self {
        MemoryBm25::default()
    }

    fn read(&self) -> RwLockReadGuard<'_, Docs> {
        self.docs.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Docs> {
        self.docs.write().unwrap_or_else(|p| p.into_inner())
    }
}

impl LexicalIndex for MemoryBm25 {
    fn name(&self) -> &'static str {
        "memory-bm25"
    }

    fn len(&self) -> usize {
        self.read().docs.len()
    }

    fn insert(&self, id: u64, text: &str) -> Result<()> {
        let words = analyze(text);
        let len = u32::try_from(words.len()).unwrap_or(u32::MAX);
        let mut counts: HashMap<String, u32> = HashMap::new();
        for word in words {
            *counts.entry(word).or_default() += 1;
        }
        let mut terms: Vec<(String, u32)> = counts.into_iter().collect();
        terms.sort();
        self.write().insert(id, terms, len);
        Ok(())
    }

    fn remove(&self, id: u64) -> Result<()> {
        self.write().remove(id);
        Ok(())
    }

    fn purge(&self, ids: &[u64]) -> Result<()> {
        let mut docs = self.write();
        for &id in ids {
            docs.remove(id);
        }
        Ok(())
    }

    fn clear(&self) -> Result<()> {
        *self.write() = Docs::default();
        Ok(())
    }

    fn commit(&self) -> Result<()> {
        Ok(())
    }

    fn search(&self, query: &str, k: usize, admit: &Admit) -> Result<Vec<LexicalHit>> {
        let docs = self.read();
        let n = docs.docs.len() as f32;
        if n == 0.0 || k == 0 {
            return Ok(Vec::new());
        }
        let avg_len = docs.total_len as f32 / n;
        let mut terms = analyze(query);
        terms.sort();
        terms.dedup();
        let mut scores: HashMap<u64, f32> = HashMap::new();
        for term in &terms {
            let Some(list) = docs.postings.get(term) else {
                continue;
            };
            let df = list.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for (&id, &tf) in list {
                if !admit.contains(id) {
                    continue;
                }
                let len = docs.docs.get(&id).map_or(avg_len, |(_, l)| *l as f32);
                let tf = tf as f32;
                let norm = tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg_len.max(1e-6)));
                *scores.entry(id).or_default() += idf * norm;
            }
        }
        let mut top = TopK::new(k);
        for (id, score) in scores {
            top.push(id, score);
        }
        Ok(top
            .into_sorted()
            .into_iter()
            .map(|VectorHit { id, score }| LexicalHit { id, score })
            .collect())
    }

    fn save(&self, dir: &Path) -> Result<()> {
        let path = dir.join(FILE);
        let bytes = serde_json::to_vec(&*self.read())
            .map_err(|e| Error::corrupt(&path, format!("cannot encode: {e}")))?;
        std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))
    }

    fn load(&self, dir: &Path) -> Result<()> {
        let path = dir.join(FILE);
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let mut docs: Docs =
            serde_json::from_slice(&bytes).map_err(|e| Error::corrupt(&path, e.to_string()))?;
        docs.reindex();
        *self.write() = docs;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_analyzer_lowercases_drops_stop_words_and_stems() {
        assert_eq!(
            analyze("The Cats were RUNNING to the gardens"),
            vec!["cat", "were", "runn", "garden"]
        );
    }
}
