//! Every search path returns the exact filtered top-k (recall@10 ≥ 0.99) at
//! selectivities 100%, 10%, 1%, 0.1% and one item, and never anything outside the filter.

// Without usearch only the flat paths run; the HNSW helpers stay unused.
#![cfg_attr(not(feature = "usearch"), allow(dead_code))]

use std::sync::{Arc, OnceLock};

use colmem_core::{Granularity, ReadFilter, Scope, StoredFragment, Timestamp, Validity};
use colmem_index::{
    FlatIndex, FusionConfig, HybridConfig, HybridIndex, LexicalIndex, MemoryBm25, PlannerConfig,
    Query, Strategy, VectorIndex,
};
use proptest::prelude::*;

use crate::support::{
    Access, agent, clustered, fragment, group, oracle_top_k, reader, resource, user,
};

const N: usize = 4000;
const DIM: usize = 16;
const K: usize = 10;

const WORDS: &[&str] = &[
    "invoice", "garden", "travel", "budget", "recipe", "meeting", "deadline", "holiday", "printer",
    "contract", "river", "mountain", "doctor", "school", "football", "concert",
];

fn text(i: usize) -> String {
    format!(
        "note {} about the {} and {} {}",
        i,
        WORDS[i % WORDS.len()],
        WORDS[(i / 7) % WORDS.len()],
        WORDS[(i / 53) % WORDS.len()]
    )
}

/// Fragment `i`'s access: 10% in group "team", 1% in group "mid", 0.1% global
/// but drawn from a resource few agents may use, one global with its own agent
/// and resource, and the rest global but written by an agent few readers may invoke.
fn access(i: usize) -> Access {
    if i.is_multiple_of(10) {
        Access {
            user: user("u-fill"),
            scope: Scope::Group(group("team")),
            agents: vec![agent("a-team")],
            resources: vec![],
        }
    } else if i % 100 == 1 {
        Access {
            user: user("u-mid"),
            scope: Scope::Group(group("mid")),
            agents: vec![agent("a-mid")],
            resources: vec![],
        }
    } else if i % 1000 == 2 {
        Access {
            user: user("u-tiny"),
            scope: Scope::Global,
            agents: vec![agent("a-tiny")],
            resources: vec![resource("r-tiny")],
        }
    } else if i == 3 {
        Access {
            user: user("u-fill"),
            scope: Scope::Global,
            agents: vec![agent("a-one")],
            resources: vec![resource("r-one")],
        }
    } else {
        Access {
            user: user("u-fill"),
            scope: Scope::Global,
            agents: vec![agent("a-fill")],
            resources: vec![],
        }
    }
}

/// Fragment `i`'s granularity: 1% facts (half of them in group "team"), about
/// 14% episodes, 7% profiles, the rest raw turns.
fn granularity(i: usize) -> Granularity {
    if i.is_multiple_of(200) || i % 200 == 7 {
        Granularity::Fact
    } else if i % 7 == 3 {
        Granularity::Episode
    } else if i % 13 == 4 {
        Granularity::Profile
    } else {
        Granularity::RawTurn
    }
}

/// When fragment `i`'s world-time validity begins: one of 30 days, so a window of
/// days holds a share of every reader's fragments.
fn begins(i: usize) -> Timestamp {
    Timestamp::from_millis((i % 30) as i64 * DAY_MS)
}

const DAY_MS: i64 = 86_400_000;

fn corpus() -> &'static Vec<StoredFragment> {
    static CORPUS: OnceLock<Vec<StoredFragment>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        clustered(N, DIM, 24, 11)
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                let mut stored =
                    fragment(i as u64 + 1, &access(i), &text(i), Some(v), "test-embedder");
                stored.fragment.granularity = granularity(i);
                stored.fragment.validity = Validity::since(begins(i));
                stored
            })
            .collect()
    })
}

/// Whether `stored` is admitted by `filter` and has one of `granularities` (empty: any).
fn in_scope(stored: &StoredFragment, filter: &ReadFilter, granularities: &[Granularity]) -> bool {
    filter.admits(&stored.fragment.meta())
        && (granularities.is_empty() || granularities.contains(&stored.fragment.granularity))
}

/// The readers, each with the share of the corpus its filter admits.
fn readers() -> Vec<(&'static str, ReadFilter, usize)> {
    let all_agents = [
        agent("a-team"),
        agent("a-mid"),
        agent("a-tiny"),
        agent("a-one"),
        agent("a-fill"),
    ];
    vec![
        (
            "100%",
            reader(
                user("u-fill"),
                agent("a-fill"),
                &all_agents,
                &[resource("r-tiny"), resource("r-one")],
                &[group("team"), group("mid")],
                10_000,
            ),
            0,
        ),
        (
            "10%",
            reader(
                user("u-fill"),
                agent("a-team"),
                &[agent("a-team")],
                &[],
                &[group("team")],
                10_000,
            ),
            N / 10,
        ),
        (
            "1%",
            reader(
                user("u-mid"),
                agent("a-mid"),
                &[agent("a-mid")],
                &[],
                &[group("mid")],
                10_000,
            ),
            N / 100,
        ),
        (
            "0.1%",
            reader(
                user("u-tiny"),
                agent("a-tiny"),
                &[agent("a-tiny")],
                &[resource("r-tiny")],
                &[],
                10_000,
            ),
            N / 1000,
        ),
        (
            "one",
            reader(
                user("u-other"),
                agent("a-one"),
                &[agent("a-one")],
                &[resource("r-one")],
                &[],
                10_000,
            ),
            1,
        ),
    ]
}

fn build(
    vector: Arc<dyn VectorIndex>,
    lexical: Option<Arc<dyn LexicalIndex>>,
    planner: PlannerConfig,
    records: &[StoredFragment],
) -> HybridIndex {
    let config = HybridConfig {
        planner,
        ..HybridConfig::default()
    };
    build_with(vector, lexical, config, records)
}

fn build_with(
    vector: Arc<dyn VectorIndex>,
    lexical: Option<Arc<dyn LexicalIndex>>,
    config: HybridConfig,
    records: &[StoredFragment],
) -> HybridIndex {
    let index = HybridIndex::new(vector, lexical, config);
    for chunk in records.chunks(1000) {
        assert_eq!(index.put_many(chunk).unwrap(), 0);
    }
    index.commit().unwrap();
    index
}

fn always_exact() -> PlannerConfig {
    PlannerConfig {
        exact_max: u64::MAX,
        ..PlannerConfig::default()
    }
}

fn always_hnsw() -> PlannerConfig {
    PlannerConfig {
        exact_max: 0,
        exact_fraction: 0.0,
        ..PlannerConfig::default()
    }
}

fn planned() -> PlannerConfig {
    PlannerConfig {
        exact_max: 100,
        exact_fraction: 0.0,
        ..PlannerConfig::default()
    }
}

/// Checks one index on every reader: only admitted fragments, the exact count,
/// recall@10 ≥ 0.99 against the oracle, and the expected plan.
fn check_recall(name: &str, index: &HybridIndex, expect: impl Fn(u64) -> fn(&Strategy) -> bool) {
    check_recall_at_least(name, index, expect, 0.99);
}

fn check_recall_at_least(
    name: &str,
    index: &HybridIndex,
    expect: impl Fn(u64) -> fn(&Strategy) -> bool,
    floor: f64,
) {
    let records = corpus();
    let queries = clustered(40, DIM, 24, 99);
    for (label, filter, expected) in readers() {
        let admitted = index.admitted(&filter);
        let expected = if expected == 0 {
            N as u64
        } else {
            expected as u64
        };
        assert_eq!(admitted.len(), expected, "{name} {label}: admitted count");
        let mut found_total = 0usize;
        let mut truth_total = 0usize;
        for q in &queries {
            let hits = index
                .search(
                    &Query {
                        vector: Some(q),
                        text: None,
                        k: K,
                        granularities: &[],
                        begun_in: None,
                    },
                    &filter,
                )
                .unwrap();
            let truth = oracle_top_k(records, q, K, &filter);
            assert_eq!(hits.len(), truth.len(), "{name} {label}: result count");
            for hit in &hits {
                let meta = records[hit.id.0 as usize - 1].fragment.meta();
                assert!(
                    filter.admits(&meta),
                    "{name} {label}: {} is outside the filter",
                    hit.id
                );
                assert!(
                    expect(expected)(&hit.plan.strategy),
                    "{name} {label}: plan {:?}",
                    hit.plan
                );
                assert_eq!(hit.plan.admitted, expected);
                assert!(hit.vector.is_some() && hit.lexical.is_none());
            }
            truth_total += truth.len();
            found_total += truth
                .iter()
                .filter(|id| hits.iter().any(|h| h.id.0 == **id))
                .count();
        }
        let recall = found_total as f64 / truth_total as f64;
        assert!(
            recall >= floor,
            "{name} {label}: recall@10 {recall:.4} < {floor}"
        );
    }
}

fn is_exact(s: &Strategy) -> bool {
    *s == Strategy::ExactScan
}
fn is_hnsw(s: &Strategy) -> bool {
    matches!(s, Strategy::Hnsw { .. })
}

#[test]
fn the_flat_index_is_exact_at_every_selectivity() {
    let index = build(
        Arc::new(FlatIndex::new(DIM)),
        None,
        PlannerConfig::default(),
        corpus(),
    );
    check_recall("flat", &index, |_| is_exact);
}

#[cfg(feature = "usearch")]
mod hnsw {
    use super::*;
    use colmem_index::{HnswConfig, HnswIndex, Quantization};

    fn hnsw(quantization: Quantization) -> Arc<dyn VectorIndex> {
        Arc::new(
            HnswIndex::new(
                DIM,
                HnswConfig {
                    quantization,
                    // One build thread: the graph, and so the recall floor, is the
                    // same on every run (a parallel build's graph varies with timing).
                    threads: 1,
                    expansion_search: 128,
                    ..HnswConfig::default()
                },
            )
            .unwrap(),
        )
    }

    #[test]
    fn the_exact_scan_over_the_admitted_list_is_exact() {
        let index = build(hnsw(Quantization::F32), None, always_exact(), corpus());
        check_recall("scan", &index, |_| is_exact);
    }

    #[test]
    fn the_filtered_hnsw_walk_has_recall_at_every_selectivity() {
        let index = build(hnsw(Quantization::F32), None, always_hnsw(), corpus());
        check_recall("hnsw", &index, |_| is_hnsw);
    }

    #[test]
    fn the_planner_scans_small_sets_and_walks_large_ones() {
        let index = build(hnsw(Quantization::F32), None, planned(), corpus());
        check_recall("planned", &index, |admitted| {
            if admitted <= 100 { is_exact } else { is_hnsw }
        });
    }

    fn is_partitioned(s: &Strategy) -> bool {
        matches!(s, Strategy::Partitioned { scanned: 0, .. })
    }

    fn partitioned(min: u64) -> Arc<dyn VectorIndex> {
        Arc::new(
            HnswIndex::new(
                DIM,
                HnswConfig {
                    partition_min: Some(min),
                    // One build thread, as in `hnsw`: the graphs and their
                    // recall are the same on every run.
                    threads: 1,
                    // The few candidates of `planned_small_walks` would cost the
                    // main walk recall; the index-wide beam keeps it.
                    expansion_search: 256,
                    ..HnswConfig::default()
                },
            )
            .unwrap(),
        )
    }

    /// Scopes above 100 vectors ("team" and the global scope) get their own
    /// graph: the 10% reader walks the team graph, the 100% reader the main one.
    /// The planner of [`planned`] with walks cheap enough that a 400-vector
    /// partition is worth walking rather than scanning.
    fn planned_small_walks() -> PlannerConfig {
        PlannerConfig {
            base_candidates: 16,
            min_candidates: 16,
            ..planned()
        }
    }

    #[test]
    fn the_planner_walks_the_graph_of_a_scope_the_filter_admits_whole() {
        let index = build(partitioned(100), None, planned_small_walks(), corpus());
        assert_eq!(index.partition_graphs(), 2);
        check_recall("partitioned", &index, |admitted| match admitted {
            0..=100 => is_exact,
            a if a == N as u64 => is_hnsw,
            _ => is_partitioned,
        });
    }

    /// A fragment that moves to another scope moves to that scope's graph; one
    /// deleted leaves it; a large admitted remainder outside the graphs falls
    /// back to the main walk.
    #[test]
    fn partition_graphs_follow_scope_changes_and_deletions() {
        let records = corpus();
        let index = build(partitioned(100), None, planned_small_walks(), records);
        let (_, team, _) = readers().swap_remove(1);
        let target = &records[5];
        assert!(!team.admits(&target.fragment.meta()));
        let mut moved = target.clone();
        moved.fragment.scope = Scope::Group(group("team"));
        moved.fragment.provenance.agents = [agent("a-team")].into_iter().collect();
        index.update_meta(6, moved.fragment.meta()).unwrap();
        let query = Query {
            vector: Some(target.embedding.as_ref().unwrap().vector.as_slice()),
            text: None,
            k: K,
            granularities: &[],
            begun_in: None,
        };
        let hits = index.search(&query, &team).unwrap();
        assert!(is_partitioned(&hits[0].plan.strategy), "{:?}", hits[0].plan);
        assert_eq!(
            hits[0].id.0, 6,
            "the moved fragment is found in the team graph"
        );
        index.delete(6).unwrap();
        let hits = index.search(&query, &team).unwrap();
        assert!(hits.iter().all(|h| h.id.0 != 6));
        assert_eq!(hits.len(), K);
        // A reader of "team" and everything global: the global graph is admitted
        // whole but so is most of the index, so the main graph is walked.
        let (_, everyone, _) = readers().swap_remove(0);
        assert!(is_hnsw(&index.plan(&everyone).strategy));
    }

    /// Quantised vectors rank near-ties differently from the f32 oracle: a lower floor.
    #[test]
    fn quantised_graphs_keep_most_of_the_recall() {
        for (quantization, floor) in [(Quantization::F16, 0.95), (Quantization::I8, 0.9)] {
            let index = build(hnsw(quantization), None, planned(), corpus());
            let name = format!("{quantization:?}");
            check_recall_at_least(
                &name,
                &index,
                |admitted| if admitted <= 100 { is_exact } else { is_hnsw },
                floor,
            );
        }
    }

    #[test]
    fn candidates_grow_as_selectivity_falls() {
        let index = build(hnsw(Quantization::F32), None, always_hnsw(), corpus());
        let plans: Vec<_> = readers().iter().map(|(_, f, _)| index.plan(f)).collect();
        let candidates: Vec<usize> = plans
            .iter()
            .map(|p| match p.strategy {
                Strategy::Hnsw { candidates } => candidates,
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(
            candidates.windows(2).all(|w| w[0] <= w[1]),
            "{candidates:?}"
        );
        assert!(candidates[0] < candidates[2], "{candidates:?}");
    }
}

#[allow(unused_mut)]
fn lexical_backends() -> Vec<(&'static str, Arc<dyn LexicalIndex>)> {
    let mut backends: Vec<(&'static str, Arc<dyn LexicalIndex>)> =
        vec![("memory", Arc::new(MemoryBm25::new()))];
    #[cfg(feature = "tantivy")]
    backends.push((
        "tantivy",
        Arc::new(colmem_index::TantivyBm25::new().unwrap()),
    ));
    backends
}

#[test]
fn filtered_bm25_returns_the_exact_filtered_top_k() {
    let records = corpus();
    for (name, lexical) in lexical_backends() {
        let index = build(
            Arc::new(FlatIndex::new(DIM)),
            Some(lexical.clone()),
            PlannerConfig::default(),
            records,
        );
        for (label, filter, _) in readers() {
            for words in ["garden budget", "river doctor concert", "invoice"] {
                let hits = index
                    .search(
                        &Query {
                            vector: None,
                            text: Some(words),
                            k: K,
                            granularities: &[],
                            begun_in: None,
                        },
                        &filter,
                    )
                    .unwrap();
                // Oracle: the unfiltered ranking cut to the admitted ones.
                let all = lexical.search(words, N, &colmem_index::Admit::All).unwrap();
                let truth: Vec<u64> = all
                    .iter()
                    .filter(|h| filter.admits(&records[h.id as usize - 1].fragment.meta()))
                    .take(K)
                    .map(|h| h.id)
                    .collect();
                let got: Vec<u64> = hits.iter().map(|h| h.id.0).collect();
                assert_eq!(got.len(), truth.len(), "{name} {label} {words}");
                let mut a = got.clone();
                let mut b = truth.clone();
                a.sort();
                b.sort();
                // Ties in BM25 score may order differently; the set must match unless tied at the cut.
                let overlap = a.iter().filter(|x| b.contains(x)).count();
                assert!(
                    overlap + 1 >= a.len(),
                    "{name} {label} {words}: {got:?} vs {truth:?}"
                );
                assert!(
                    hits.iter()
                        .all(|h| h.lexical.is_some() && h.vector.is_none())
                );
            }
        }
    }
}

#[test]
fn hybrid_results_fuse_ranks_and_explain_them() {
    let records = corpus();
    for score_share in [0.0, 1.0] {
        for (name, lexical) in lexical_backends() {
            fuse_and_explain(records, name, lexical, score_share);
        }
    }
}

fn fuse_and_explain(
    records: &[StoredFragment],
    name: &str,
    lexical: Arc<dyn LexicalIndex>,
    score_share: f64,
) {
    {
        let index = build_with(
            Arc::new(FlatIndex::new(DIM)),
            Some(lexical),
            HybridConfig {
                fusion: FusionConfig {
                    score_share,
                    ..FusionConfig::default()
                },
                ..HybridConfig::default()
            },
            records,
        );
        let (_, filter, _) = &readers()[1];
        let target = &records[500]; // i = 500: in group "team", which this reader sees
        assert!(filter.admits(&target.fragment.meta()));
        let vector = target.embedding.as_ref().unwrap().vector.clone();
        let words = target.fragment.content.clone();
        let hits = index
            .search(
                &Query {
                    vector: Some(&vector),
                    text: Some(&words),
                    k: K,
                    granularities: &[],
                    begun_in: None,
                },
                filter,
            )
            .unwrap();
        assert_eq!(hits.len(), K, "{name}");
        assert_eq!(
            hits[0].id, target.fragment.id,
            "{name}: the fragment matching both signals ranks first"
        );
        let config = index.config().fusion;
        let best = (config.vector_weight + config.lexical_weight) / (config.rrf_k + 1.0);
        assert!(
            (hits[0].fused - best).abs() < 1e-12,
            "{name}: first in both signals, it gets the whole of both weights"
        );
        for hit in &hits {
            if score_share == 0.0 {
                // Reciprocal-rank fusion: the rank alone decides.
                let mut fused = 0.0;
                if let Some(v) = hit.vector {
                    fused += config.vector_weight / (config.rrf_k + v.rank as f64);
                }
                if let Some(l) = hit.lexical {
                    fused += config.lexical_weight / (config.rrf_k + l.rank as f64);
                }
                assert!(
                    (fused - hit.fused).abs() < 1e-12,
                    "{name}: fused score is the sum of its signals"
                );
            } else {
                // Normalised scores: each signal adds at most its weight's share.
                let most = hit.vector.map_or(0.0, |_| config.vector_weight)
                    + hit.lexical.map_or(0.0, |_| config.lexical_weight);
                assert!(
                    (0.0..=most / (config.rrf_k + 1.0) + 1e-12).contains(&hit.fused),
                    "{name}: {} outside its signals' bounds",
                    hit.fused
                );
            }
            assert!(filter.admits(&records[hit.id.0 as usize - 1].fragment.meta()));
        }
        assert!(hits.windows(2).all(|w| w[0].fused >= w[1].fused));
        // Zero lexical weight: the ranking is the vector ranking.
        let vector_only = index
            .search(
                &Query {
                    vector: Some(&vector),
                    text: None,
                    k: K,
                    granularities: &[],
                    begun_in: None,
                },
                filter,
            )
            .unwrap();
        assert_eq!(vector_only[0].id, target.fragment.id);
    }
}

#[test]
fn a_query_needs_a_signal_and_an_empty_filter_returns_nothing() {
    let index = build(
        Arc::new(FlatIndex::new(DIM)),
        None,
        PlannerConfig::default(),
        &corpus()[..100],
    );
    let (_, filter, _) = &readers()[1];
    assert!(
        index
            .search(
                &Query {
                    vector: None,
                    text: None,
                    k: 3,
                    granularities: &[],
                    begun_in: None,
                },
                filter
            )
            .is_err()
    );
    let nobody = reader(user("nobody"), agent("nobody"), &[], &[], &[], 10_000);
    let q = vec![0.5; DIM];
    assert!(
        index
            .search(
                &Query {
                    vector: Some(&q),
                    text: None,
                    k: 3,
                    granularities: &[],
                    begun_in: None,
                },
                &nobody
            )
            .unwrap()
            .is_empty()
    );
    assert_eq!(index.plan(&nobody).strategy, Strategy::Empty);
}

fn shared_hybrid() -> &'static HybridIndex {
    static INDEX: OnceLock<HybridIndex> = OnceLock::new();
    INDEX.get_or_init(|| {
        #[cfg(feature = "usearch")]
        let vector: Arc<dyn VectorIndex> = Arc::new(
            colmem_index::HnswIndex::new(DIM, colmem_index::HnswConfig::default()).unwrap(),
        );
        #[cfg(not(feature = "usearch"))]
        let vector: Arc<dyn VectorIndex> = Arc::new(FlatIndex::new(DIM));
        let lexical = lexical_backends().pop().map(|(_, l)| l);
        build(vector, lexical, planned(), corpus())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn nothing_outside_the_filter_is_ever_returned(
        u in 0usize..4, a in 0usize..5, agents in 0u8..32, resources in 0u8..4, groups in 0u8..4,
        q in 0usize..N, words in 0usize..16, k in 1usize..40, kinds in 0u8..32,
        window in proptest::option::of((0i64..32, 1i64..10)),
    ) {
        let users = [user("u-fill"), user("u-mid"), user("u-tiny"), user("u-other")];
        let all_agents = [agent("a-team"), agent("a-mid"), agent("a-tiny"), agent("a-one"), agent("a-fill")];
        let pick = |mask: u8, n: usize| (0..n).filter(move |i| mask & (1 << i) != 0);
        let filter = reader(
            users[u],
            all_agents[a],
            &pick(agents, 5).map(|i| all_agents[i]).collect::<Vec<_>>(),
            &pick(resources, 2).map(|i| [resource("r-tiny"), resource("r-one")][i]).collect::<Vec<_>>(),
            &pick(groups, 2).map(|i| [group("team"), group("mid")][i]).collect::<Vec<_>>(),
            10_000,
        );
        let granularities: Vec<Granularity> = pick(kinds, 5).map(|i| Granularity::ALL[i]).collect();
        let records = corpus();
        let vector = records[q].embedding.as_ref().unwrap().vector.clone();
        let index = shared_hybrid();
        // Days [first, first + days): the window may start before or run past the corpus.
        let begun_in = window.map(|(first, days)| {
            Validity::new(
                Timestamp::from_millis((first - 1) * DAY_MS),
                Some(Timestamp::from_millis((first - 1 + days) * DAY_MS)),
            )
            .unwrap()
        });
        let query = Query { vector: Some(&vector), text: Some(WORDS[words]), k, granularities: &granularities, begun_in };
        let hits = index.search(&query, &filter).unwrap();
        let wanted = |r: &StoredFragment| {
            in_scope(r, &filter, &granularities)
                && begun_in.is_none_or(|w| w.contains(r.fragment.validity.from()))
        };
        let admitted = records.iter().filter(|r| wanted(r)).count();
        if begun_in.is_none() {
            prop_assert_eq!(index.admitted_in(&filter, &granularities).len(), admitted as u64);
        }
        prop_assert_eq!(hits.len(), k.min(admitted));
        for hit in hits {
            prop_assert_eq!(hit.plan.admitted, admitted as u64);
            prop_assert!(wanted(&records[hit.id.0 as usize - 1]));
        }
    }
}

/// The exact top-k by cosine among fragments admitted by `filter` with one of `granularities`.
fn oracle_in(query: &[f32], filter: &ReadFilter, granularities: &[Granularity]) -> Vec<u64> {
    let mut scored: Vec<(f32, u64)> = corpus()
        .iter()
        .filter(|r| in_scope(r, filter, granularities))
        .map(|r| {
            let v = &r.embedding.as_ref().unwrap().vector;
            (crate::support::cosine(query, v), r.fragment.id.0)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    scored.into_iter().take(K).map(|(_, id)| id).collect()
}

/// Narrowed to facts (1% of the corpus) under the 100% and 10% readers, every
/// vector path returns the facts' true top-k: the narrowing is inside the search.
fn check_granularity_recall(name: &str, index: &HybridIndex, floor: f64) {
    let facts = [Granularity::Fact];
    let queries = clustered(40, DIM, 24, 99);
    for (label, filter, _) in readers().into_iter().take(2) {
        let expected = corpus()
            .iter()
            .filter(|r| in_scope(r, &filter, &facts))
            .count() as u64;
        assert!(expected >= K as u64, "{name} {label}: {expected} facts");
        assert_eq!(index.admitted_in(&filter, &facts).len(), expected);
        assert_eq!(index.plan_in(&filter, &facts).admitted, expected);
        let (mut found, mut wanted) = (0usize, 0usize);
        for q in &queries {
            let query = Query {
                vector: Some(q),
                text: None,
                k: K,
                granularities: &facts,
                begun_in: None,
            };
            let hits = index.search(&query, &filter).unwrap();
            let truth = oracle_in(q, &filter, &facts);
            assert_eq!(hits.len(), K, "{name} {label}: a post-filter would starve");
            for hit in &hits {
                let record = &corpus()[hit.id.0 as usize - 1];
                assert!(
                    in_scope(record, &filter, &facts),
                    "{name} {label}: {}",
                    hit.id
                );
                assert_eq!(hit.plan.admitted, expected);
            }
            wanted += truth.len();
            found += truth
                .iter()
                .filter(|id| hits.iter().any(|h| h.id.0 == **id))
                .count();
        }
        let recall = found as f64 / wanted as f64;
        assert!(
            recall >= floor,
            "{name} {label}: recall@10 {recall:.4} < {floor}"
        );
    }
}

#[test]
fn a_rare_granularity_gets_its_exact_top_k_from_the_flat_index() {
    let index = build(
        Arc::new(FlatIndex::new(DIM)),
        None,
        PlannerConfig::default(),
        corpus(),
    );
    check_granularity_recall("flat", &index, 1.0);
}

#[cfg(feature = "usearch")]
#[test]
fn a_rare_granularity_gets_its_top_k_from_every_hnsw_plan() {
    use colmem_index::{HnswConfig, HnswIndex};
    for (name, planner, floor) in [
        ("planned", PlannerConfig::default(), 1.0),
        ("scan", always_exact(), 1.0),
        // Forcing the walk onto a set this small (0.1% of the corpus under the 10%
        // reader) is what the planner avoids; given a candidate budget that grows as
        // steeply as the selectivity falls, the walk must still find the true top-k.
        // (usearch builds in parallel, so the graph differs between runs: the budget
        // keeps the floor robust to that.)
        (
            "hnsw",
            PlannerConfig {
                growth: 0.5,
                max_candidates: 2048,
                ..always_hnsw()
            },
            0.99,
        ),
    ] {
        let vector: Arc<dyn VectorIndex> =
            Arc::new(HnswIndex::new(DIM, HnswConfig::default()).unwrap());
        let index = build(vector, None, planner, corpus());
        check_granularity_recall(name, &index, floor);
        let (_, everyone, _) = &readers()[0];
        let plan = index.plan_in(everyone, &[Granularity::Fact]);
        if name == "planned" {
            assert_eq!(
                plan.strategy,
                Strategy::ExactScan,
                "a small narrowed set is scanned"
            );
        }
    }
}

#[test]
fn a_rare_granularity_gets_its_exact_bm25_top_k() {
    let records = corpus();
    let facts = [Granularity::Fact];
    for (name, lexical) in lexical_backends() {
        let index = build(
            Arc::new(FlatIndex::new(DIM)),
            Some(lexical.clone()),
            PlannerConfig::default(),
            records,
        );
        for (label, filter, _) in readers().into_iter().take(2) {
            for words in ["note", "garden budget", "river doctor concert"] {
                let query = Query {
                    vector: None,
                    text: Some(words),
                    k: K,
                    granularities: &facts,
                    begun_in: None,
                };
                let hits = index.search(&query, &filter).unwrap();
                let all = lexical.search(words, N, &colmem_index::Admit::All).unwrap();
                let in_facts: Vec<&colmem_index::LexicalHit> = all
                    .iter()
                    .filter(|h| in_scope(&records[h.id as usize - 1], &filter, &facts))
                    .collect();
                let truth: Vec<u64> = in_facts.iter().take(K).map(|h| h.id).collect();
                assert_eq!(hits.len(), truth.len(), "{name} {label} {words}");
                assert!(!hits.is_empty(), "{name} {label} {words}: no fact matched");
                for hit in &hits {
                    let record = &records[hit.id.0 as usize - 1];
                    assert!(in_scope(record, &filter, &facts), "{name} {label} {words}");
                }
                // Equal BM25 scores may order differently at the cut: compare scores.
                let got: Vec<f32> = hits.iter().map(|h| h.lexical.unwrap().score).collect();
                let want: Vec<f32> = in_facts.iter().take(K).map(|h| h.score).collect();
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() <= 1e-4 * w.abs().max(1.0),
                        "{name} {label} {words}: {got:?} vs {want:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_huge_k_returns_what_the_filter_admits_and_no_more() {
    let records = corpus();
    let index = build(
        Arc::new(FlatIndex::new(DIM)),
        Some(Arc::new(MemoryBm25::new())),
        planned(),
        records,
    );
    for (name, filter, _) in readers() {
        let admitted = records
            .iter()
            .filter(|r| filter.admits(&r.fragment.meta()))
            .count();
        let query = Query {
            vector: Some(records[0].embedding.as_ref().unwrap().vector.as_slice()),
            text: Some(&records[0].fragment.content),
            k: usize::MAX,
            granularities: &[],
            begun_in: None,
        };
        let hits = index.search(&query, &filter).unwrap();
        assert!(
            hits.len() <= admitted,
            "{name}: {} > {admitted}",
            hits.len()
        );
        assert!(hits.iter().all(|h| {
            records
                .iter()
                .find(|r| r.fragment.id == h.id)
                .is_some_and(|r| filter.admits(&r.fragment.meta()))
        }));
    }
}
