//! Generic conformance suites: every [`VectorIndex`] and [`LexicalIndex`]
//! backend, ours or a researcher's, runs the same checks.
//!
//! Each suite takes a factory for fresh, empty indexes and returns the first
//! failed check as an `Err` (a test returns it with `?`):
//!
//! ```
//! use colmem_index::{FlatIndex, conformance};
//! conformance::vector(&|dim| Box::new(FlatIndex::new(dim)))?;
//! # Ok::<(), conformance::Failure>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::admit::Admit;
use crate::lexical::LexicalIndex;
use crate::vector::{Effort, VectorHit, VectorIndex, dot, normalized};
use colmem_core::ErrorKind;

/// A failed conformance check.
pub type Failure = String;

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<(), Failure> {
    if ok { Ok(()) } else { Err(what()) }
}

fn io<T, E: std::fmt::Display>(what: &str, r: Result<T, E>) -> Result<T, Failure> {
    r.map_err(|e| format!("{what}: {e}"))
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Result<Self, Failure> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = std::env::temp_dir().join(format!(
            "colmem-conformance-{tag}-{}-{n}-{nanos}",
            std::process::id()
        ));
        io("create a scratch directory", std::fs::create_dir_all(&path))?;
        Ok(Scratch(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A deterministic pseudo-random stream (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

/// `n` clustered vectors of `dim` components, keyed 1..=n.
fn corpus(n: usize, dim: usize, seed: u64) -> Vec<(u64, Vec<f32>)> {
    let mut rng = Rng(seed);
    let centres: Vec<Vec<f32>> = (0..8)
        .map(|_| (0..dim).map(|_| rng.unit()).collect())
        .collect();
    (0..n)
        .map(|i| {
            let centre = &centres[i % centres.len()];
            let v = centre.iter().map(|c| c + 0.35 * rng.unit()).collect();
            (i as u64 + 1, v)
        })
        .collect()
}

fn exact(data: &[(u64, Vec<f32>)], query: &[f32], k: usize, admit: &Admit) -> Vec<u64> {
    let dim = query.len();
    let Ok(q) = normalized(query, dim) else {
        return Vec::new();
    };
    let mut scored: Vec<(f32, u64)> = data
        .iter()
        .filter(|(id, _)| admit.contains(*id))
        .filter_map(|(id, v)| normalized(v, dim).ok().map(|v| (dot(&q, &v), *id)))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    scored.into_iter().take(k).map(|(_, id)| id).collect()
}

fn recall(found: &[VectorHit], truth: &[u64]) -> f64 {
    if truth.is_empty() {
        return 1.0;
    }
    let hits = truth
        .iter()
        .filter(|id| found.iter().any(|h| h.id == **id))
        .count();
    hits as f64 / truth.len() as f64
}

/// The vector-index suite. `factory(dim)` returns a fresh, empty index.
pub fn vector(factory: &dyn Fn(usize) -> Box<dyn VectorIndex>) -> Result<(), Failure> {
    const DIM: usize = 12;
    const K: usize = 10;
    let index = factory(DIM);
    ensure(index.dim() == DIM && index.is_empty(), || {
        "a fresh index has the requested dimension and no vector".into()
    })?;
    let query = corpus(1, DIM, 99).remove(0).1;
    let empty = io(
        "search an empty index",
        index.search(&query, K, &Admit::All, Effort::default_for(K)),
    )?;
    ensure(empty.is_empty(), || "an empty index returns nothing".into())?;

    let data = corpus(600, DIM, 7);
    let rows: Vec<(u64, &[f32])> = data.iter().map(|(id, v)| (*id, v.as_slice())).collect();
    io("insert a batch", index.insert_batch(&rows[..300]))?;
    for (id, v) in &rows[300..] {
        io("insert", index.insert(*id, v))?;
    }
    ensure(index.len() == 600, || {
        format!("600 vectors inserted, len is {}", index.len())
    })?;
    ensure(index.contains(1) && !index.contains(10_000), || {
        "contains reports membership".into()
    })?;

    let mut buffer = Vec::new();
    let held = io("read a vector", index.vector(5, &mut buffer))?;
    let norm = dot(&buffer, &buffer).sqrt();
    ensure(held && (norm - 1.0).abs() < 0.02, || {
        format!("a held vector is returned normalised (norm {norm})")
    })?;

    let queries = corpus(20, DIM, 1234);
    let filters: Vec<(&str, Admit)> = vec![
        ("all", Admit::All),
        (
            "every 10th",
            Admit::from_ids((1..=600).filter(|i| i % 10 == 0)),
        ),
        ("three", Admit::from_ids([17, 301, 555])),
        ("one", Admit::from_ids([42])),
        ("none", Admit::from_ids([])),
        ("absent ids", Admit::from_ids([9_999, 10_000])),
    ];
    for (name, admit) in &filters {
        let mut total = 0.0;
        for (_, q) in &queries {
            let found = io(
                "search",
                index.search(q, K, admit, Effort { candidates: 64 }),
            )?;
            let truth = exact(&data, q, K, admit);
            ensure(found.iter().all(|h| admit.contains(h.id)), || {
                format!("filter {name}: a result outside the filter was returned")
            })?;
            ensure(found.len() == truth.len(), || {
                format!(
                    "filter {name}: {} results where {} were admitted",
                    found.len(),
                    truth.len()
                )
            })?;
            ensure(found.windows(2).all(|w| w[0].score >= w[1].score), || {
                format!("filter {name}: results are not best first")
            })?;
            total += recall(&found, &truth);
        }
        let mean = total / queries.len() as f64;
        let floor = if index.is_exact() { 1.0 } else { 0.95 };
        ensure(mean >= floor, || {
            format!("filter {name}: recall@{K} {mean:.3} < {floor}")
        })?;
    }

    // An explicit scan is exact whatever the backend.
    let ids = [3u64, 8, 13, 21, 34, 55, 89, 144, 233, 377, 9_999];
    let scanned = io("scan", index.scan(&query, 5, &mut ids.iter().copied()))?;
    let truth = exact(&data, &query, 5, &Admit::from_ids(ids));
    ensure(
        scanned.iter().map(|h| h.id).collect::<Vec<_>>() == truth,
        || "scan over a list returns its exact top-k".into(),
    )?;

    // Replacing moves a vector; removing hides it.
    let target = data[100].1.clone();
    io("replace", index.insert(7, &target))?;
    ensure(index.len() == 600, || "replacing keeps the count".into())?;
    let found = io(
        "search",
        index.search(
            &target,
            2,
            &Admit::from_ids([7, 101]),
            Effort::default_for(2),
        ),
    )?;
    ensure(
        found.len() == 2 && (found[0].score - found[1].score).abs() < 0.02,
        || "a replaced vector is found at its new place".into(),
    )?;
    ensure(io("remove", index.remove(7))?, || {
        "remove reports a held vector".into()
    })?;
    ensure(!io("remove again", index.remove(7))?, || {
        "remove reports an absent vector".into()
    })?;
    let found = io(
        "search",
        index.search(&target, 600, &Admit::All, Effort { candidates: 600 }),
    )?;
    ensure(
        !found.iter().any(|h| h.id == 7) && index.len() == 599,
        || "a removed vector is never returned".into(),
    )?;

    let wrong = index.insert(1, &[1.0, 2.0]);
    ensure(
        wrong
            .as_ref()
            .is_err_and(|e| e.kind() == ErrorKind::InvalidInput),
        || "a vector of the wrong dimension is refused as invalid input".into(),
    )?;

    // Save and load round-trip; damage is reported, not trusted.
    let scratch = Scratch::new("vector")?;
    io("save", index.save(&scratch.0))?;
    let copy = factory(DIM);
    io("load", copy.load(&scratch.0))?;
    ensure(copy.len() == 599, || {
        format!("a loaded copy holds {} vectors, not 599", copy.len())
    })?;
    for (_, q) in queries.iter().take(5) {
        let a = io(
            "search",
            index.search(q, K, &Admit::All, Effort { candidates: 64 }),
        )?;
        let b = io(
            "search",
            copy.search(q, K, &Admit::All, Effort { candidates: 64 }),
        )?;
        ensure(
            recall(&b, &a.iter().map(|h| h.id).collect::<Vec<_>>()) >= 0.9,
            || "a loaded copy answers like the original".into(),
        )?;
    }
    io("insert after load", copy.insert(5_000, &query))?;
    truncate_largest(&scratch.0)?;
    ensure(factory(DIM).load(&scratch.0).is_err(), || {
        "loading a truncated file fails".into()
    })?;
    let missing = Scratch::new("vector-missing")?;
    ensure(factory(DIM).load(&missing.0).is_err(), || {
        "loading an empty directory fails".into()
    })?;

    io("clear", index.clear())?;
    ensure(index.is_empty(), || "clear forgets every vector".into())?;
    Ok(())
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Failure> {
    for entry in io("list", std::fs::read_dir(dir))? {
        let path = io("list", entry)?.path();
        if path.is_dir() {
            files_under(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

fn truncate_largest(dir: &Path) -> Result<(), Failure> {
    let mut files = Vec::new();
    files_under(dir, &mut files)?;
    let largest = files
        .iter()
        .max_by_key(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .ok_or_else(|| "save wrote no file".to_string())?;
    let len = io("stat", std::fs::metadata(largest))?.len();
    let file = io(
        "open",
        std::fs::OpenOptions::new().write(true).open(largest),
    )?;
    io("truncate", file.set_len(len / 2))
}

fn lexical_ids(hits: &[crate::lexical::LexicalHit]) -> Vec<u64> {
    hits.iter().map(|h| h.id).collect()
}

/// The lexical-index suite. `factory()` returns a fresh, empty index.
pub fn lexical(factory: &dyn Fn() -> Box<dyn LexicalIndex>) -> Result<(), Failure> {
    let index = factory();
    ensure(index.is_empty(), || "a fresh index is empty".into())?;
    let docs: [(u64, &str); 6] = [
        (1, "The cats sat on the warm mat"),
        (2, "A dog chased the cat across the garden"),
        (3, "Quarterly revenue grew in the northern region"),
        (4, "Revenue forecasts for the northern region were revised"),
        (5, "Gardens need water in summer"),
        (6, "the and of to in"),
    ];
    for (id, text) in docs {
        io("insert", index.insert(id, text))?;
    }
    io("commit", index.commit())?;
    ensure(index.len() == 6, || {
        format!("6 documents, len is {}", index.len())
    })?;

    let found = io("search", index.search("CAT", 10, &Admit::All))?;
    let ids = lexical_ids(&found);
    ensure(
        ids.len() == 2 && ids.contains(&1) && ids.contains(&2),
        || format!("'CAT' matches both cat documents (lowercasing, plural stemming): {ids:?}"),
    )?;
    let found = io("search", index.search("garden", 10, &Admit::All))?;
    ensure(lexical_ids(&found).contains(&5), || {
        "'garden' matches 'Gardens' (stemming)".into()
    })?;
    let found = io(
        "search",
        index.search("where did the cats sit", 10, &Admit::All),
    )?;
    ensure(lexical_ids(&found).first() == Some(&1), || {
        "'sit' matches 'sat' (irregular verbs in their base form)".into()
    })?;
    io("insert", index.insert(7, "Here's a pic of my fave biz"))?;
    io("commit", index.commit())?;
    let found = io(
        "search",
        index.search("a picture of her favourite business", 10, &Admit::All),
    )?;
    ensure(lexical_ids(&found) == vec![7], || {
        "'picture', 'favourite' and 'business' match 'pic', 'fave' and 'biz' (short forms in full)"
            .into()
    })?;
    io(
        "insert",
        index.insert(8, "They're tough kids, like my dad; see the pics"),
    )?;
    io("commit", index.commit())?;
    let found = io(
        "search",
        index.search("her children and father", 10, &Admit::All),
    )?;
    ensure(lexical_ids(&found) == vec![8], || {
        "'children' and 'father' match 'kids' and 'dad' (irregular plurals and short forms)".into()
    })?;
    let found = io("search", index.search("pictures", 10, &Admit::All))?;
    ensure(lexical_ids(&found).contains(&8), || {
        "'pictures' matches 'pics' (a plural short form, stemmed as its full form)".into()
    })?;
    let found = io("search", index.search("the of and", 10, &Admit::All))?;
    ensure(found.is_empty(), || {
        "a query of stop words matches nothing".into()
    })?;
    let found = io("search", index.search("northern revenue", 10, &Admit::All))?;
    ensure(
        lexical_ids(&found).len() == 2 && found[0].score >= found[1].score,
        || "results come best first".into(),
    )?;
    let found = io("search", index.search("revenue", 10, &Admit::from_ids([4])))?;
    ensure(lexical_ids(&found) == vec![4], || {
        "the filter narrows lexical results".into()
    })?;

    // The filter is applied while collecting: admitted low scorers still fill k.
    let base = 100u64;
    for i in 0..60u64 {
        let text = if i < 57 {
            "apple apple apple pie"
        } else {
            "apple with a long tail of many other words here"
        };
        io("insert", index.insert(base + i, text))?;
    }
    io("commit", index.commit())?;
    let admit = Admit::from_ids([base + 57, base + 58, base + 59, 3]);
    let found = io("search", index.search("apple", 3, &admit))?;
    let mut ids = lexical_ids(&found);
    ids.sort();
    ensure(ids == vec![base + 57, base + 58, base + 59], || {
        format!("a selective filter still returns its top-k, not a starved post-filter: {ids:?}")
    })?;

    // Replace, remove, purge.
    io("replace", index.insert(5, "Orchards need water"))?;
    io("remove", index.remove(1))?;
    io("commit", index.commit())?;
    let found = io("search", index.search("cat garden", 10, &Admit::All))?;
    ensure(lexical_ids(&found) == vec![2], || {
        format!(
            "replaced and removed documents are not returned: {:?}",
            lexical_ids(&found)
        )
    })?;
    io("insert", index.insert(7, "zanzibarian secret passphrase"))?;
    io("commit", index.commit())?;
    ensure(
        !io("search", index.search("zanzibarian", 1, &Admit::All))?.is_empty(),
        || "a fresh document is found".into(),
    )?;
    io("purge", index.purge(&[7]))?;
    ensure(
        io("search", index.search("zanzibarian", 1, &Admit::All))?.is_empty(),
        || "a purged document is not found".into(),
    )?;

    let scratch = Scratch::new("lexical")?;
    io("save", index.save(&scratch.0))?;
    let mut files = Vec::new();
    files_under(&scratch.0, &mut files)?;
    for file in &files {
        let bytes = io("read", std::fs::read(file))?;
        ensure(!bytes.windows(10).any(|w| w == b"zanzibaria"), || {
            format!("purged text still lies in {}", file.display())
        })?;
    }
    let copy = factory();
    io("load", copy.load(&scratch.0))?;
    let a = io("search", index.search("apple revenue", 20, &Admit::All))?;
    let b = io("search", copy.search("apple revenue", 20, &Admit::All))?;
    ensure(lexical_ids(&a) == lexical_ids(&b), || {
        "a loaded copy answers like the original".into()
    })?;
    io("insert after load", copy.insert(8, "more apples"))?;
    io("commit after load", copy.commit())?;
    truncate_largest(&scratch.0)?;
    let damaged = factory();
    let outcome = damaged
        .load(&scratch.0)
        .and_then(|()| damaged.search("apple revenue", 20, &Admit::All));
    ensure(outcome.is_err(), || "loading a truncated file fails".into())?;

    io("clear", index.clear())?;
    ensure(index.is_empty(), || "clear forgets every document".into())?;
    Ok(())
}
