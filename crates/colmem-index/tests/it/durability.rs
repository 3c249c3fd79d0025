//! Indexes persist the last applied change, catch up from the feed on open, and
//! rebuild when a file is missing, truncated or damaged, or the embedder changed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use colmem_core::{Granularity, ReadFilter, Scope, View};
use colmem_index::{
    FlatIndex, HybridConfig, HybridIndex, LexicalIndex, MemoryBm25, OpenReport, Query, VectorIndex,
};

use crate::support::{Access, MemFeed, agent, clustered, fragment, reader, user};

const DIM: usize = 8;

fn access() -> Access {
    Access {
        user: user("d-user"),
        scope: Scope::User,
        agents: vec![agent("d-agent")],
        resources: vec![],
    }
}

fn filter() -> ReadFilter {
    reader(
        user("d-user"),
        agent("d-agent"),
        &[agent("d-agent")],
        &[],
        &[],
        10_000,
    )
}

fn feed_with(n: usize, embedder: &str) -> MemFeed {
    let feed = MemFeed::default();
    for (i, v) in clustered(n, DIM, 4, 5).into_iter().enumerate() {
        let text = format!("entry {i} about {}", ["apples", "boats", "clouds"][i % 3]);
        feed.put(fragment(i as u64 + 1, &access(), &text, Some(v), embedder));
    }
    feed
}

type Backends = (Arc<dyn VectorIndex>, Option<Arc<dyn LexicalIndex>>);

#[allow(unused_mut)]
fn backends_list() -> Vec<(&'static str, fn() -> Backends)> {
    let mut list: Vec<(&'static str, fn() -> Backends)> = vec![("flat+memory", || {
        (
            Arc::new(FlatIndex::new(DIM)),
            Some(Arc::new(MemoryBm25::new())),
        )
    })];
    #[cfg(all(feature = "usearch", feature = "tantivy"))]
    list.push(("hnsw+tantivy", || {
        (
            Arc::new(
                colmem_index::HnswIndex::new(DIM, colmem_index::HnswConfig::default()).unwrap(),
            ),
            Some(Arc::new(colmem_index::TantivyBm25::new().unwrap())),
        )
    }));
    list
}

fn open(
    dir: &Path,
    make: fn() -> Backends,
    embedder: Option<&str>,
    feed: &MemFeed,
) -> (HybridIndex, OpenReport) {
    let (vector, lexical) = make();
    let config = HybridConfig {
        embedder: embedder.map(str::to_owned),
        ..HybridConfig::default()
    };
    HybridIndex::open(dir, vector, lexical, config, feed).unwrap()
}

fn ids(index: &HybridIndex, text: &str, view: View) -> Vec<u64> {
    let mut ids: Vec<u64> = index
        .search(
            &Query {
                vector: None,
                text: Some(text),
                k: 100,
                granularities: &[],
                begun_in: None,
            },
            &filter().with_view(view),
        )
        .unwrap()
        .iter()
        .map(|h| h.id.0)
        .collect();
    ids.sort();
    ids
}

/// The hits of a vector search over every version, up to 100.
fn vector_hits(index: &HybridIndex, vector: &[f32]) -> Vec<colmem_index::Hit> {
    index
        .search(
            &Query {
                vector: Some(vector),
                text: None,
                k: 100,
                granularities: &[],
                begun_in: None,
            },
            &filter().with_view(View::AllVersions),
        )
        .unwrap()
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p)
            } else {
                out.push(p)
            }
        }
    }
    out.sort();
    out
}

fn data_files(dir: &Path, part: &str) -> Vec<PathBuf> {
    files(dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(part) && !p.ends_with("manifest.json"))
        .filter(|p| {
            !p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".tantivy-")
        })
        .collect()
}

#[test]
fn open_builds_then_restores_and_catches_up_on_every_op() {
    for (name, make) in backends_list() {
        let dir = tempfile::tempdir().unwrap();
        let feed = feed_with(60, "emb-1");
        let (index, report) = open(dir.path(), make, Some("emb-1"), &feed);
        assert!(!report.restored, "{name}: first open builds");
        assert_eq!(report.catch_up.indexed, 60);
        assert_eq!(index.seq(), 60);
        let apples = ids(&index, "apples", View::Current);
        assert_eq!(apples.len(), 20, "{name}");
        drop(index);

        let (index, report) = open(dir.path(), make, Some("emb-1"), &feed);
        assert!(report.restored, "{name}: {:?}", report.rebuild_reason);
        assert_eq!(report.catch_up.changes, 0);
        assert_eq!(
            ids(&index, "apples", View::Current),
            apples,
            "{name}: restored answers alike"
        );
        drop(index);

        // Changes while closed: a new fact, a supersession, a deletion, a purge.
        feed.put(fragment(
            100,
            &access(),
            "entry 100 about apples and zeppelins",
            Some(vec![0.3; DIM]),
            "emb-1",
        ));
        feed.supersede(1, 2_000);
        feed.delete(4, 2_000);
        feed.purge(7);
        feed.put(fragment(
            101,
            &access(),
            "a quokka",
            Some(vec![0.1; DIM]),
            "emb-1",
        ));
        feed.purge(101);
        let (index, report) = open(dir.path(), make, Some("emb-1"), &feed);
        assert!(report.restored, "{name}");
        assert_eq!(report.catch_up.changes, 6, "{name}");
        assert_eq!(index.seq(), 66);
        let now = ids(&index, "apples", View::Current);
        assert!(now.contains(&100), "{name}: the new fact is indexed");
        assert!(
            !now.contains(&1),
            "{name}: the superseded version is not current"
        );
        assert!(
            !now.contains(&4) && !now.contains(&7),
            "{name}: deleted and purged are gone"
        );
        assert_eq!(now.len(), 20 + 1 - 3, "{name}");
        let history = ids(&index, "apples", View::AllVersions);
        assert!(
            history.contains(&1) && !history.contains(&4),
            "{name}: history keeps superseded, never deleted"
        );
        assert!(
            ids(&index, "quokka", View::AllVersions).is_empty(),
            "{name}"
        );
        let hits = vector_hits(&index, &[0.1; DIM]);
        assert!(
            hits.iter().all(|h| ![4, 7, 101].contains(&h.id.0)),
            "{name}: no vector of dropped fragments"
        );
        // Purged text lies in no snapshot file.
        for file in files(dir.path()) {
            let bytes = std::fs::read(&file).unwrap();
            assert!(
                !bytes.windows(6).any(|w| w == b"quokka"),
                "{name}: purged text in {}",
                file.display()
            );
        }
    }
}

#[test]
fn a_purged_vector_lies_in_no_snapshot_file() {
    // Of unit length, so normalising (once by the index, again by a partition
    // graph copying from it) leaves the bytes as they are.
    let mut quokka = vec![0.0f32; DIM];
    quokka[..4].copy_from_slice(&[0.5, -0.5, 0.5, -0.5]);
    let as_bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let patterns = [as_bytes(&quokka)];
    let held = |dir: &Path| {
        files(dir).into_iter().find(|file| {
            let bytes = std::fs::read(file).unwrap();
            patterns
                .iter()
                .any(|p| bytes.windows(p.len()).any(|w| w == p.as_slice()))
        })
    };
    let mut list = backends_list();
    #[cfg(feature = "usearch")]
    list.push(("hnsw with a partition graph", || {
        let config = colmem_index::HnswConfig {
            partition_min: Some(10),
            ..colmem_index::HnswConfig::default()
        };
        (
            Arc::new(colmem_index::HnswIndex::new(DIM, config).unwrap()),
            None,
        )
    }));
    // Purged at once, or deleted first (its vector removed then) and purged later.
    for ((name, make), deleted_first) in list
        .into_iter()
        .flat_map(|backend| [(backend, false), (backend, true)])
    {
        let dir = tempfile::tempdir().unwrap();
        let feed = feed_with(30, "emb-1");
        let (index, _) = open(dir.path(), make, Some("emb-1"), &feed);
        feed.put(fragment(
            101,
            &access(),
            "a quokka",
            Some(quokka.clone()),
            "emb-1",
        ));
        index.catch_up(&feed).unwrap();
        index.persist().unwrap();
        assert!(
            held(dir.path()).is_some(),
            "{name}: the snapshot holds the vector"
        );
        if deleted_first {
            feed.delete(101, 2_000);
            index.catch_up(&feed).unwrap();
            index.persist().unwrap();
        }
        feed.purge(101);
        index.catch_up(&feed).unwrap();
        index.persist().unwrap();
        if let Some(file) = held(dir.path()) {
            panic!(
                "{name} (deleted first: {deleted_first}): a purged vector in {}",
                file.display()
            );
        }
        drop(index);
        let (index, report) = open(dir.path(), make, Some("emb-1"), &feed);
        assert!(report.restored, "{name}: {:?}", report.rebuild_reason);
        let hits = vector_hits(&index, &[0.5; DIM]);
        assert_eq!(hits.len(), 30, "{name}: every other vector is kept");
    }
}

fn damage_and_reopen(damage: impl Fn(&Path)) {
    for (name, make) in backends_list() {
        let dir = tempfile::tempdir().unwrap();
        let feed = feed_with(40, "emb-1");
        let (index, _) = open(dir.path(), make, Some("emb-1"), &feed);
        let before = ids(&index, "boats", View::Current);
        let q = vec![0.2; DIM];
        let vector_before: Vec<u64> = index
            .search(
                &Query {
                    vector: Some(&q),
                    text: None,
                    k: 5,
                    granularities: &[],
                    begun_in: None,
                },
                &filter(),
            )
            .unwrap()
            .iter()
            .map(|h| h.id.0)
            .collect();
        drop(index);
        damage(dir.path());
        let (index, report) = open(dir.path(), make, Some("emb-1"), &feed);
        assert!(
            !report.restored,
            "{name}: a damaged snapshot must be rebuilt"
        );
        assert!(report.rebuild_reason.is_some());
        assert_eq!(report.catch_up.indexed, 40, "{name}");
        assert_eq!(
            ids(&index, "boats", View::Current),
            before,
            "{name}: rebuilt answers alike"
        );
        let vector_after: Vec<u64> = index
            .search(
                &Query {
                    vector: Some(&q),
                    text: None,
                    k: 5,
                    granularities: &[],
                    begun_in: None,
                },
                &filter(),
            )
            .unwrap()
            .iter()
            .map(|h| h.id.0)
            .collect();
        assert_eq!(vector_after, vector_before, "{name}");
        drop(index);
        let (_, report) = open(dir.path(), make, Some("emb-1"), &feed);
        assert!(
            report.restored,
            "{name}: the rebuilt snapshot is whole again"
        );
    }
}

#[test]
fn a_deleted_vector_file_is_rebuilt() {
    damage_and_reopen(|dir| {
        for f in data_files(dir, "vector") {
            std::fs::remove_file(f).unwrap();
        }
    });
}

#[test]
fn a_deleted_index_directory_is_rebuilt() {
    damage_and_reopen(|dir| std::fs::remove_dir_all(dir.join("current")).unwrap());
}

#[test]
fn a_truncated_lexical_file_is_rebuilt() {
    damage_and_reopen(|dir| {
        let files = data_files(dir, "lexical");
        let largest = files
            .iter()
            .max_by_key(|p| std::fs::metadata(p).unwrap().len())
            .unwrap();
        let len = std::fs::metadata(largest).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(largest)
            .unwrap()
            .set_len(len / 2)
            .unwrap();
    });
}

#[test]
fn corrupted_bytes_are_rebuilt() {
    damage_and_reopen(|dir| {
        for part in ["vector", "postings"] {
            let file = data_files(dir, part).into_iter().next().unwrap();
            let mut bytes = std::fs::read(&file).unwrap();
            let mid = bytes.len() / 2;
            bytes[mid] ^= 0x5a;
            std::fs::write(&file, bytes).unwrap();
        }
    });
}

#[test]
fn a_damaged_manifest_is_rebuilt() {
    damage_and_reopen(|dir| {
        std::fs::write(dir.join("current").join("manifest.json"), b"{not json").unwrap()
    });
}

#[test]
fn a_new_embedder_forces_a_rebuild() {
    let (_, make) = backends_list()[0];
    let dir = tempfile::tempdir().unwrap();
    let feed = feed_with(20, "emb-1");
    let (_, report) = open(dir.path(), make, Some("emb-1"), &feed);
    assert_eq!(report.catch_up.skipped_vectors, 0);
    let (index, report) = open(dir.path(), make, Some("emb-2"), &feed);
    assert!(!report.restored);
    assert!(report.rebuild_reason.unwrap().contains("embedder"));
    // The store still holds emb-1 vectors: they are not mixed into an emb-2 index.
    assert_eq!(report.catch_up.skipped_vectors, 20);
    assert_eq!(index.vector_index().len(), 0);
    assert_eq!(
        ids(&index, "apples", View::Current).len(),
        7,
        "text search still works"
    );
}

#[test]
fn an_index_ahead_of_its_store_starts_over() {
    let (_, make) = backends_list()[0];
    let dir = tempfile::tempdir().unwrap();
    let (_, _) = open(dir.path(), make, None, &feed_with(30, "emb-1"));
    let smaller = feed_with(10, "emb-1");
    let (index, report) = open(dir.path(), make, None, &smaller);
    assert!(!report.restored);
    assert!(report.rebuild_reason.unwrap().contains("no change 30"));
    assert_eq!(index.len(), 10);
    assert_eq!(report.catch_up.indexed, 10);
}

/// Puts fragments `ids` about zebras into `feed`.
fn put_zebras(feed: &MemFeed, ids: std::ops::Range<u64>) {
    for (id, v) in ids.clone().zip(clustered(ids.count(), DIM, 4, 7)) {
        let text = format!("entry {id} about zebras");
        feed.put(fragment(id, &access(), &text, Some(v), "emb-1"));
    }
}

#[test]
fn a_snapshot_of_another_store_is_rebuilt() {
    for (name, make) in backends_list() {
        let dir = tempfile::tempdir().unwrap();
        drop(open(dir.path(), make, None, &feed_with(30, "emb-1")));
        // Another store, as long: the same ids and sequence numbers, other fragments.
        let other = MemFeed::default();
        put_zebras(&other, 1..31);
        let (index, report) = open(dir.path(), make, None, &other);
        assert!(!report.restored, "{name}");
        assert!(
            report.rebuild_reason.unwrap().contains("another store"),
            "{name}"
        );
        assert_eq!(ids(&index, "zebras", View::Current).len(), 30, "{name}");
        assert!(ids(&index, "apples", View::Current).is_empty(), "{name}");
    }
}

#[test]
fn a_backup_written_on_past_the_snapshot_is_rebuilt() {
    let (_, make) = backends_list()[0];
    let dir = tempfile::tempdir().unwrap();
    let feed = feed_with(30, "emb-1");
    drop(open(dir.path(), make, None, &feed));
    // A backup taken at change 30 is this store: the snapshot is restored.
    let (_, report) = open(dir.path(), make, None, &feed.backup(30));
    assert!(report.restored, "{:?}", report.rebuild_reason);
    // One taken at change 10 and written on past 30 holds other fragments 11..=30.
    let restored = feed.backup(10);
    put_zebras(&restored, 11..36);
    let (index, report) = open(dir.path(), make, None, &restored);
    assert!(!report.restored);
    assert!(report.rebuild_reason.unwrap().contains("written on"));
    assert_eq!(ids(&index, "zebras", View::Current).len(), 25);
    assert_eq!(ids(&index, "apples", View::Current).len(), 4);
}

/// A feed of `n` fragments: every tenth a fact, every third an episode, the rest raw turns.
fn mixed_feed(n: usize) -> MemFeed {
    let feed = MemFeed::default();
    for (i, v) in clustered(n, DIM, 4, 9).into_iter().enumerate() {
        let text = format!("entry {i} about {}", ["apples", "boats", "clouds"][i % 3]);
        let mut stored = fragment(i as u64 + 1, &access(), &text, Some(v), "emb-1");
        stored.fragment.granularity = if i.is_multiple_of(10) {
            Granularity::Fact
        } else if i.is_multiple_of(3) {
            Granularity::Episode
        } else {
            Granularity::RawTurn
        };
        feed.put(stored);
    }
    feed
}

fn fact_ids(index: &HybridIndex, text: Option<&str>, vector: Option<&[f32]>) -> Vec<u64> {
    let query = Query {
        vector,
        text,
        k: 100,
        granularities: &[Granularity::Fact],
        begun_in: None,
    };
    let mut ids: Vec<u64> = index
        .search(&query, &filter())
        .unwrap()
        .iter()
        .map(|h| h.id.0)
        .collect();
    ids.sort();
    ids
}

#[test]
fn granularity_postings_survive_a_snapshot_and_follow_the_feed() {
    for (name, make) in backends_list() {
        let dir = tempfile::tempdir().unwrap();
        let feed = mixed_feed(60);
        let facts: Vec<u64> = (0..60).step_by(10).map(|i| i as u64 + 1).collect();
        let q = vec![0.2; DIM];
        let (index, _) = open(dir.path(), make, Some("emb-1"), &feed);
        assert_eq!(fact_ids(&index, None, Some(&q)), facts, "{name}");
        assert_eq!(fact_ids(&index, Some("entry"), None), facts, "{name}");
        let episodes = index.admitted_in(&filter(), &[Granularity::Episode]).len();
        assert_eq!(episodes, 18, "{name}");
        drop(index);

        let (index, report) = open(dir.path(), make, Some("emb-1"), &feed);
        assert!(report.restored, "{name}: {:?}", report.rebuild_reason);
        assert_eq!(fact_ids(&index, None, Some(&q)), facts, "{name}: restored");
        assert_eq!(fact_ids(&index, Some("entry"), None), facts, "{name}");
        assert_eq!(
            index.admitted_in(&filter(), &[Granularity::Episode]).len(),
            episodes
        );
        drop(index);

        // While closed: fragment 2 is rewritten as a fact, fact 11 is deleted, fact 21 purged.
        let mut rewritten = fragment(
            2,
            &access(),
            "entry 1 about boats",
            Some(vec![0.3; DIM]),
            "emb-1",
        );
        rewritten.fragment.granularity = Granularity::Fact;
        feed.put(rewritten);
        feed.delete(11, 2_000);
        feed.purge(21);
        let (index, report) = open(dir.path(), make, Some("emb-1"), &feed);
        assert!(report.restored, "{name}");
        let now = vec![1, 2, 31, 41, 51];
        assert_eq!(fact_ids(&index, None, Some(&q)), now, "{name}: caught up");
        assert_eq!(fact_ids(&index, Some("entry"), None), now, "{name}");
        let raw = index.admitted_in(&filter(), &[Granularity::RawTurn]);
        assert!(
            !raw.contains(2),
            "{name}: a rewritten fragment leaves its old list"
        );
        drop(index);
        let (index, report) = open(dir.path(), make, Some("emb-1"), &feed);
        assert!(report.restored, "{name}");
        assert_eq!(
            fact_ids(&index, None, Some(&q)),
            now,
            "{name}: restored again"
        );
    }
}

#[test]
fn a_snapshot_of_an_older_format_is_rebuilt() {
    let (_, make) = backends_list()[0];
    let dir = tempfile::tempdir().unwrap();
    let feed = mixed_feed(30);
    drop(open(dir.path(), make, Some("emb-1"), &feed));
    let manifest = dir.path().join("current").join("manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let format = json["format"]
        .as_u64()
        .expect("the manifest names its format");
    json["format"] = (format - 1).into();
    std::fs::write(&manifest, json.to_string()).unwrap();
    std::fs::remove_file(dir.path().join("current").join("granularity.bin")).unwrap();
    let (index, report) = open(dir.path(), make, Some("emb-1"), &feed);
    assert!(!report.restored);
    assert!(report.rebuild_reason.unwrap().contains("format"));
    assert_eq!(index.admitted_in(&filter(), &[Granularity::Fact]).len(), 3);
}

/// A snapshot of vectors quantised otherwise than the index is configured is rebuilt,
/// not loaded in the file's quantisation.
#[cfg(feature = "usearch")]
#[test]
fn a_snapshot_of_another_quantisation_is_rebuilt() {
    fn f32() -> Backends {
        (
            Arc::new(
                colmem_index::HnswIndex::new(DIM, colmem_index::HnswConfig::default()).unwrap(),
            ),
            Some(Arc::new(MemoryBm25::new())),
        )
    }
    fn i8() -> Backends {
        let config = colmem_index::HnswConfig {
            quantization: colmem_index::Quantization::I8,
            ..colmem_index::HnswConfig::default()
        };
        (
            Arc::new(colmem_index::HnswIndex::new(DIM, config).unwrap()),
            Some(Arc::new(MemoryBm25::new())),
        )
    }
    let dir = tempfile::tempdir().unwrap();
    let feed = feed_with(30, "emb-1");
    drop(open(dir.path(), f32, Some("emb-1"), &feed));
    let (index, report) = open(dir.path(), i8, Some("emb-1"), &feed);
    assert!(!report.restored);
    let reason = report.rebuild_reason.unwrap();
    assert!(reason.contains("I8"), "{reason}");
    assert_eq!(index.vector_index().len(), 30);
    let (_, report) = open(dir.path(), i8, Some("emb-1"), &feed);
    assert!(report.restored, "{:?}", report.rebuild_reason);
}

/// Partition graphs are saved with the snapshot and restored; a damaged one
/// makes the index rebuild, graphs included.
#[cfg(feature = "usearch")]
#[test]
fn partition_graphs_survive_a_reopen_and_a_damaged_one_is_rebuilt() {
    fn make() -> Backends {
        let config = colmem_index::HnswConfig {
            partition_min: Some(10),
            ..colmem_index::HnswConfig::default()
        };
        (
            Arc::new(colmem_index::HnswIndex::new(DIM, config).unwrap()),
            None,
        )
    }
    let dir = tempfile::tempdir().unwrap();
    let feed = feed_with(200, "emb-1");
    let (index, _) = open(dir.path(), make, Some("emb-1"), &feed);
    assert_eq!(
        index.partition_graphs(),
        1,
        "the reader's own scope has a graph"
    );
    drop(index);
    let (index, report) = open(dir.path(), make, Some("emb-1"), &feed);
    assert!(report.restored, "{:?}", report.rebuild_reason);
    assert_eq!(index.partition_graphs(), 1);
    drop(index);
    let graph = dir
        .path()
        .join("current")
        .join("partitions")
        .join("0")
        .join("hnsw.usearch");
    let mut bytes = std::fs::read(&graph).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&graph, bytes).unwrap();
    let (index, report) = open(dir.path(), make, Some("emb-1"), &feed);
    assert!(!report.restored);
    assert_eq!(index.partition_graphs(), 1);
    assert_eq!(index.len(), 200);
}
