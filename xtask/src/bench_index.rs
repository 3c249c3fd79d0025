//! `cargo xtask bench index`: build time, memory, filtered recall and latency of
//! colmem-index's planned search at several selectivities, next to exact scans.
//!
//! Vectors are clustered (not uniform noise). Selectivity comes from real read
//! filters: every fragment is scoped to a group and written by that group's
//! agent; a reader in group `g10` (with its agent) sees 10% of the store, one in
//! `g1` sees 1%, one in `g01` 0.1%, and a reader in every group sees 100%.
//!
//! Two exact references are timed in the same run: the baseline, a flat
//! scan that scores all n vectors and applies the filter to each ("full-scan"),
//! and a scan over the admitted list alone ("scan-adm", the list given).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use colmem_core::{
    AgentId, Embedding, FilterParts, Fragment, FragmentId, FragmentMeta, Granularity, GroupId,
    IdSet, Kind, Provenance, ReadFilter, Scope, Source, StoredFragment, Timestamp, UserId,
    Validity,
};
use colmem_index::{
    Admit, Effort, HnswConfig, HnswIndex, HybridConfig, HybridIndex, PlannerConfig, Quantization,
    Query, Strategy, VectorIndex,
};

/// Arguments of `bench index`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchIndexArgs {
    /// Number of vectors.
    #[arg(long, default_value_t = 1_000_000)]
    pub n: usize,
    /// Dimension of each vector.
    #[arg(long, default_value_t = 384)]
    pub dim: usize,
    /// Queries timed per selectivity.
    #[arg(long, default_value_t = 200)]
    pub queries: usize,
    /// Queries of the exact flat-scan baseline per selectivity (it is slow).
    #[arg(long, default_value_t = 10)]
    pub baseline_queries: usize,
    /// HNSW connectivity (M).
    #[arg(long, default_value_t = 32)]
    pub connectivity: usize,
    /// HNSW beam width while building.
    #[arg(long, default_value_t = 128)]
    pub expansion_add: usize,
    /// The index-wide HNSW beam width of a search: a floor under every search's
    /// candidates (the planner asks for more through the result count).
    #[arg(long, default_value_t = 16)]
    pub expansion_search: usize,
    /// Candidates an HNSW search keeps at 100% selectivity.
    #[arg(long, default_value_t = 256)]
    pub candidates: usize,
    /// How HNSW candidates grow as selectivity `s` falls: `candidates · s^-growth`.
    #[arg(long, default_value_t = 0.25)]
    pub growth: f64,
    /// How the HNSW graph stores vectors: f32, f16 or i8 (walked on the
    /// quantised vectors, candidates re-ranked on exact f32 copies).
    #[arg(long, default_value = "i8")]
    pub quantization: String,
    /// A scope holding more vectors than this gets its own partition graph.
    #[arg(long, default_value_t = 5_000)]
    pub partition_min: u64,
    /// Scan exactly when the filter admits at most this many fragments.
    #[arg(long, default_value_t = 20_000)]
    pub exact_max: u64,
    /// Candidate counts whose recall and latency are also reported at 100%.
    #[arg(long, value_delimiter = ',', default_values_t = [128, 256, 512])]
    pub sweep: Vec<usize>,
    /// Number of clusters the vectors are drawn from (default √n, so a cluster
    /// holds √n vectors and gets harder to search exactly as n grows).
    #[arg(long)]
    pub clusters: Option<usize>,
    /// Print one JSON object as the last line.
    #[arg(long)]
    pub json: bool,
}

/// Untimed queries before each selectivity's timed ones, so caches are warm.
const WARM_UP: usize = 20;

/// Queries timed for the diagnostic walk of the main graph at each selectivity.
const WALK_QUERIES: usize = 50;

/// SplitMix64: fast, deterministic, good enough for synthetic data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Roughly normal: the sum of four uniforms, centred.
    fn gauss(&mut self) -> f32 {
        let mut s = 0.0;
        for _ in 0..4 {
            s += (self.next() >> 40) as f32 / (1u64 << 24) as f32;
        }
        (s - 2.0) * 1.732
    }
}

/// Clustered vectors: `clusters` random centres, each point a centre plus noise.
struct Clusters {
    centres: Vec<Vec<f32>>,
    spread: f32,
}

impl Clusters {
    fn new(clusters: usize, dim: usize, rng: &mut Rng) -> Self {
        let centres = (0..clusters)
            .map(|_| (0..dim).map(|_| rng.gauss()).collect())
            .collect();
        Clusters {
            centres,
            spread: 0.6,
        }
    }

    fn sample(&self, rng: &mut Rng) -> Vec<f32> {
        let centre = &self.centres[(rng.next() % self.centres.len() as u64) as usize];
        centre
            .iter()
            .map(|c| c + self.spread * rng.gauss())
            .collect()
    }
}

/// Which group a fragment is scoped to: 10%, 1%, 0.1%, the rest spread over filler groups.
fn group_of(rng: &mut Rng) -> usize {
    let r = rng.next() % 10_000;
    match r {
        0..1_000 => 0,     // g10
        1_000..1_100 => 1, // g1
        1_100..1_110 => 2, // g01
        _ => 3 + (r % 97) as usize,
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    colmem_index::dot(a, b)
}

fn normalise(v: &mut [f32]) {
    let n = dot(v, v).sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1e3
}

fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Exact top-k over `ids` (normalised vectors), best first.
fn exact_top(
    vectors: &[f32],
    dim: usize,
    query: &[f32],
    ids: impl Iterator<Item = usize>,
    k: usize,
) -> Vec<u64> {
    let mut scored: Vec<(f32, u64)> = ids
        .map(|i| (dot(query, &vectors[i * dim..(i + 1) * dim]), i as u64 + 1))
        .collect();
    let k = k.min(scored.len());
    if k == 0 {
        return Vec::new();
    }
    scored.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(k);
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, id)| id).collect()
}

/// The baseline: scores every one of the n vectors and applies the filter to
/// each, keeping the best `k` admitted (best first, ties by id).
fn full_scan(
    vectors: &[f32],
    dim: usize,
    query: &[f32],
    admits: impl Fn(usize) -> bool,
    k: usize,
) -> Vec<u64> {
    // Best first; `k` is small, so insertion into a sorted vector is cheapest.
    let mut top: Vec<(f32, u64)> = Vec::with_capacity(k + 1);
    for (i, row) in vectors.chunks_exact(dim).enumerate() {
        let score = dot(query, row);
        if !admits(i) {
            continue;
        }
        let id = i as u64 + 1;
        let better = |t: &(f32, u64)| t.0 > score || (t.0 == score && t.1 < id);
        if top.len() == k && top.last().is_none_or(&better) {
            continue;
        }
        let at = top.partition_point(better);
        top.insert(at, (score, id));
        top.truncate(k);
    }
    top.into_iter().map(|(_, id)| id).collect()
}

/// Runs the benchmark and prints a table (and JSON with `--json`).
pub fn run(args: &BenchIndexArgs) -> anyhow::Result<()> {
    let (n, dim) = (args.n, args.dim);
    anyhow::ensure!(n >= 1000 && dim >= 2, "use --n ≥ 1000 and --dim ≥ 2");
    let k = 10;
    let mut rng = Rng(0x5eed);
    let clusters = args.clusters.unwrap_or((n as f64).sqrt() as usize).max(1);
    let clusters = Clusters::new(clusters, dim, &mut rng);

    // Principals: groups g10, g1, g01 and 97 fillers, each with its own agent; 1000 users.
    let group_names: Vec<String> = ["g10", "g1", "g01"]
        .iter()
        .map(|s| s.to_string())
        .chain((0..97).map(|i| format!("gx{i}")))
        .collect();
    let groups: Vec<GroupId> = group_names
        .iter()
        .map(|g| GroupId::new(g))
        .collect::<Result<_, _>>()?;
    let agents: Vec<AgentId> = group_names
        .iter()
        .map(|g| AgentId::new(&format!("agent-{g}")))
        .collect::<Result<_, _>>()?;
    let users: Vec<UserId> = (0..1000)
        .map(|i| UserId::new(&format!("user-{i}")))
        .collect::<Result<_, _>>()?;
    let created = Timestamp::from_millis(1_000);

    // Data.
    let started = Instant::now();
    let mut vectors = Vec::with_capacity(n * dim);
    let mut metas: Vec<FragmentMeta> = Vec::with_capacity(n);
    for _ in 0..n {
        let mut v = clusters.sample(&mut rng);
        normalise(&mut v);
        vectors.extend_from_slice(&v);
        let g = group_of(&mut rng);
        metas.push(FragmentMeta {
            user: users[(rng.next() % users.len() as u64) as usize],
            scope: Scope::Group(groups[g]),
            agents: vec![agents[g]].into_boxed_slice(),
            resources: Box::new([]),
            created_at: created,
            superseded_at: None,
            deleted_at: None,
            validity: Validity::always(),
        });
    }
    let generate_s = started.elapsed().as_secs_f64();

    // Build.
    let quantization = match args.quantization.as_str() {
        "f32" => Quantization::F32,
        "f16" => Quantization::F16,
        "i8" => Quantization::I8,
        other => anyhow::bail!("--quantization is f32, f16 or i8, not {other}"),
    };
    let hnsw = HnswIndex::new(
        dim,
        HnswConfig {
            connectivity: args.connectivity,
            expansion_add: args.expansion_add,
            expansion_search: args.expansion_search,
            partition_min: Some(args.partition_min),
            quantization,
            ..HnswConfig::default()
        },
    )?;
    let simd = hnsw.hardware_acceleration();
    let vector: Arc<dyn VectorIndex> = Arc::new(hnsw);
    let index = HybridIndex::new(
        vector.clone(),
        None,
        HybridConfig {
            planner: PlannerConfig {
                exact_max: args.exact_max,
                base_candidates: args.candidates,
                growth: args.growth,
                exact_fraction: 0.0,
                ..PlannerConfig::default()
            },
            ..HybridConfig::default()
        },
    );
    let started = Instant::now();
    for start in (0..n).step_by(50_000) {
        let end = (start + 50_000).min(n);
        let batch: Vec<StoredFragment> = (start..end)
            .map(|i| stored(i, &metas[i], &vectors[i * dim..(i + 1) * dim]))
            .collect();
        index.put_many(&batch)?;
    }
    let build_s = started.elapsed().as_secs_f64();
    let rss = rss_mb();
    if !args.json {
        println!(
            "n={n} dim={dim}: generated in {generate_s:.1}s, built in {build_s:.1}s ({:.0} vectors/s, simd {simd}, {} partition graphs), rss {rss:.0} MB",
            n as f64 / build_s,
            index.partition_graphs()
        );
    }

    // Readers: selectivity from the groups (and agents) their filter admits.
    let now = Timestamp::from_millis(10_000);
    let filter_for = |gs: &[usize]| {
        ReadFilter::from_parts(FilterParts {
            user: users[0],
            agent: agents[gs[0]],
            now,
            agents: gs.iter().map(|&g| agents[g]).collect::<IdSet<_>>(),
            resources: IdSet::new(),
            groups: gs.iter().map(|&g| groups[g]).collect::<IdSet<_>>(),
        })
    };
    let all: Vec<usize> = (0..groups.len()).collect();
    let readers = [
        (1.0, filter_for(&all)),
        (0.1, filter_for(&[0])),
        (0.01, filter_for(&[1])),
        (0.001, filter_for(&[2])),
    ];

    let queries: Vec<Vec<f32>> = (0..args.queries.max(1))
        .map(|_| {
            let mut q = clusters.sample(&mut rng);
            normalise(&mut q);
            q
        })
        .collect();

    let mut rows = Vec::new();
    if !args.json {
        println!(
            "{:>11} {:>9} {:>9} {:>8} {:>9} {:>9} {:>12} {:>9} {:>15} {:>13}  plan",
            "selectivity",
            "admitted",
            "admit ms",
            "recall",
            "p50 ms",
            "p99 ms",
            "full-scan ms",
            "speed-up",
            "scan-adm p50 ms",
            "vs scan-adm"
        );
        println!(
            "{:>11} (the HNSW walk alone, whatever the plan: walk p50 ms, walk recall, candidates)",
            ""
        );
    }
    for (selectivity, filter) in &readers {
        // Warm up, then time the planned search.
        for q in queries.iter().take(WARM_UP) {
            index.search(
                &Query {
                    vector: Some(q),
                    text: None,
                    k,
                    granularities: &[],
                    begun_in: None,
                },
                filter,
            )?;
        }
        let mut times = Vec::with_capacity(queries.len());
        let mut results = Vec::with_capacity(queries.len());
        let mut plan = None;
        for q in &queries {
            let t = Instant::now();
            let hits = index.search(
                &Query {
                    vector: Some(q),
                    text: None,
                    k,
                    granularities: &[],
                    begun_in: None,
                },
                filter,
            )?;
            times.push(t.elapsed());
            plan = hits.first().map(|h| h.plan);
            results.push(hits.iter().map(|h| h.id.0).collect::<Vec<_>>());
        }
        times.sort();

        // Ground truth: exact top-k over the admitted list (and the cost of computing that list).
        let t = Instant::now();
        let admitted = index.admitted(filter);
        let admit_ms = t.elapsed().as_secs_f64() * 1e3;
        let admitted_idx: Vec<usize> = admitted.iter().map(|id| id as usize - 1).collect();
        let mut found = 0usize;
        let mut wanted = 0usize;
        let mut scan_times = Vec::new();
        let mut truths = Vec::with_capacity(queries.len());
        for (q, got) in queries.iter().zip(&results) {
            let t = Instant::now();
            let truth = exact_top(&vectors, dim, q, admitted_idx.iter().copied(), k);
            scan_times.push(t.elapsed());
            wanted += truth.len();
            found += truth.iter().filter(|id| got.contains(id)).count();
            truths.push(truth);
        }
        scan_times.sort();
        let recall = if wanted == 0 {
            1.0
        } else {
            found as f64 / wanted as f64
        };

        // The alternative plan: the HNSW walk with the admitted set as predicate,
        // with the planner's candidate count for this selectivity.
        let share = admitted.len() as f64 / n as f64;
        let planner = PlannerConfig::default();
        let size = (n as f64 / planner.reference_len as f64)
            .min(1.0)
            .powf(planner.size_growth);
        let walk_candidates = ((args.candidates as f64) * share.max(1e-9).powf(-args.growth) * size)
            .ceil()
            .clamp(planner.min_candidates as f64, planner.max_candidates as f64)
            as usize;
        let admit = if admitted.len() == n as u64 {
            Admit::All
        } else {
            Admit::only(admitted.clone())
        };
        // A selective walk is slow (that is the point): a few queries show it.
        let mut walk_times = Vec::with_capacity(WALK_QUERIES);
        let (mut walk_found, mut walk_wanted) = (0usize, 0usize);
        for (q, truth) in queries.iter().zip(&truths).take(WALK_QUERIES) {
            let t = Instant::now();
            let hits = vector.search(
                q,
                k,
                &admit,
                Effort {
                    candidates: walk_candidates,
                },
            )?;
            walk_times.push(t.elapsed());
            walk_wanted += truth.len();
            walk_found += truth
                .iter()
                .filter(|id| hits.iter().any(|h| h.id == **id))
                .count();
        }
        walk_times.sort();
        let walk_recall = if walk_wanted == 0 {
            1.0
        } else {
            walk_found as f64 / walk_wanted as f64
        };
        let walk_p50 = percentile(&walk_times, 0.5);

        // At 100%: how recall and latency trade against the candidates kept.
        let mut sweep = Vec::new();
        if admitted.len() == n as u64 {
            for &candidates in &args.sweep {
                let mut times = Vec::with_capacity(queries.len());
                let (mut found, mut wanted) = (0usize, 0usize);
                for (q, truth) in queries.iter().zip(&truths) {
                    let t = Instant::now();
                    let hits = vector.search(q, k, &Admit::All, Effort { candidates })?;
                    times.push(t.elapsed());
                    wanted += truth.len();
                    found += truth
                        .iter()
                        .filter(|id| hits.iter().any(|h| h.id == **id))
                        .count();
                }
                times.sort();
                let recall = found as f64 / wanted.max(1) as f64;
                let (p50, p99) = (percentile(&times, 0.5), percentile(&times, 0.99));
                if !args.json {
                    println!(
                        "{:>11} sweep: {candidates} candidates, recall {recall:.4}, p50 {p50:.3} ms, p99 {p99:.3} ms",
                        ""
                    );
                }
                sweep.push(serde_json::json!({
                    "candidates": candidates,
                    "recall_at_10": recall,
                    "p50_ms": p50,
                    "p99_ms": p99,
                }));
            }
        }

        // Baseline (the issue's): an exact flat scan of all n vectors, the filter
        // applied to each one; it must equal the ground truth.
        let mut exact_times = Vec::new();
        for (q, truth) in queries
            .iter()
            .zip(&truths)
            .take(args.baseline_queries.max(1))
        {
            let t = Instant::now();
            let top = full_scan(&vectors, dim, q, |i| filter.admits(&metas[i]), k);
            exact_times.push(t.elapsed());
            anyhow::ensure!(
                top == *truth,
                "the full scan and the admitted-list scan disagree at {:.1}%",
                selectivity * 100.0
            );
        }
        exact_times.sort();
        let (p50, p99, exact_p50, scan_p50) = (
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            percentile(&exact_times, 0.5),
            percentile(&scan_times, 0.5),
        );
        let plan_text = match plan.map(|p| p.strategy) {
            Some(Strategy::Hnsw { candidates }) => format!("hnsw({candidates})"),
            Some(Strategy::Partitioned {
                graphs,
                candidates,
                scanned,
            }) => format!("partitions({graphs}×{candidates}, +{scanned} scanned)"),
            Some(Strategy::ExactScan) => "exact-scan".into(),
            Some(Strategy::Empty) | None => "empty".into(),
        };
        if !args.json {
            println!(
                "{:>10.1}% {:>9} {:>9.3} {:>8.4} {:>9.3} {:>9.3} {:>12.1} {:>8.0}x {:>15.3} {:>12.1}x  {plan_text}",
                selectivity * 100.0,
                admitted.len(),
                admit_ms,
                recall,
                p50,
                p99,
                exact_p50,
                exact_p50 / p50.max(1e-9),
                scan_p50,
                scan_p50 / p50.max(1e-9)
            );
            println!(
                "{:>11} walk {walk_p50:.3} ms, recall {walk_recall:.4}, {walk_candidates} candidates",
                ""
            );
        }
        rows.push(serde_json::json!({
            "selectivity": selectivity,
            "admitted": admitted.len(),
            "admit_ms": admit_ms,
            "plan": plan_text,
            "recall_at_10": recall,
            "p50_ms": p50,
            "p99_ms": p99,
            "exact_p50_ms": exact_p50,
            "scan_admitted_p50_ms": scan_p50,
            "walk_p50_ms": walk_p50,
            "walk_recall_at_10": walk_recall,
            "walk_candidates": walk_candidates,
            "sweep": sweep,
        }));
    }
    if args.json {
        let out = serde_json::json!({
            "n": n,
            "dim": dim,
            "build_s": build_s,
            "rss_mb": rss,
            "quantization": args.quantization,
            "candidates": args.candidates,
            "partition_graphs": index.partition_graphs(),
            "rows": rows,
        });
        println!("{out}");
    }
    Ok(())
}

fn stored(i: usize, meta: &FragmentMeta, vector: &[f32]) -> StoredFragment {
    StoredFragment {
        fragment: Fragment {
            id: FragmentId(i as u64 + 1),
            key: None,
            content: String::new(),
            granularity: Granularity::Fact,
            kind: Kind::Observation,
            scope: meta.scope,
            provenance: Provenance {
                created_at: meta.created_at,
                user: meta.user,
                agents: meta.agents.iter().copied().collect::<BTreeSet<_>>(),
                resources: BTreeSet::new(),
                source: Source::default(),
            },
            validity: meta.validity,
            keywords: Vec::new(),
            superseded_at: None,
            superseded_by: None,
            deleted_at: None,
        },
        embedding: Some(Embedding {
            embedder: "bench".into(),
            vector: vector.to_vec(),
        }),
    }
}
