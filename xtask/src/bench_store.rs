//! `cargo xtask bench store`: batched insert throughput of the SQLite fragment
//! store (batches of 100 with 384-d embeddings) and the latency of a filtered
//! count and a filtered list under a realistic read filter.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::Result;
use colmem_core::{
    AgentId, Embedding, FilterParts, Granularity, GroupId, IdSet, Kind, NewFragment, Provenance,
    ReadFilter, ResourceId, Scope, Source, Timestamp, UserId, Validity,
};
use colmem_store::{FragmentStore, Interaction, ListQuery, Order, SqliteStore, StoreConfig};
use serde::Serialize;

#[derive(clap::Args, Debug)]
pub struct BenchStoreArgs {
    /// Fragments to insert.
    #[arg(long, default_value_t = 100_000)]
    pub n: usize,
    /// Filtered counts and lists to time.
    #[arg(long, default_value_t = 100)]
    pub queries: usize,
    /// Print one JSON object as the last line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Figures {
    n: usize,
    insert_per_s: f64,
    insert_wall_s: f64,
    /// Process CPU seconds (user + system) spent in the timed writes, when known:
    /// on a shared machine this, not wall time, says what the store costs.
    insert_cpu_s: Option<f64>,
    insert_per_cpu_s: Option<f64>,
    /// Latency of one write (one interaction of 100 fragments).
    write_p50_ms: f64,
    write_p99_ms: f64,
    write_max_ms: f64,
    /// Seconds the writes spent beyond the median write (checkpoints, page
    /// cache misses, other processes): what separates the wall rate from a
    /// steady one.
    write_excess_s: f64,
    /// Bytes the process handed to `write()` during the inserts (log and
    /// checkpoints), from `/proc/self/io`, when known.
    insert_written_bytes: Option<u64>,
    db_bytes: u64,
    filtered_count_p50_ms: f64,
    filtered_count_p99_ms: f64,
    filtered_list_p50_ms: f64,
    filtered_list_p99_ms: f64,
    mean_visible: f64,
}

const BATCH: usize = 100;
const DIM: usize = 384;
const USERS: usize = 100;
const AGENTS: usize = 32;
const RESOURCES: usize = 16;
const GROUPS: usize = 8;

struct World {
    users: Vec<UserId>,
    agents: Vec<AgentId>,
    resources: Vec<ResourceId>,
    groups: Vec<GroupId>,
}

impl World {
    fn new() -> Result<Self> {
        Ok(World {
            users: (0..USERS)
                .map(|i| UserId::new(&format!("su{i}")))
                .collect::<Result<_, _>>()?,
            agents: (0..AGENTS)
                .map(|i| AgentId::new(&format!("sa{i}")))
                .collect::<Result<_, _>>()?,
            resources: (0..RESOURCES)
                .map(|i| ResourceId::new(&format!("sr{i}")))
                .collect::<Result<_, _>>()?,
            groups: (0..GROUPS)
                .map(|i| GroupId::new(&format!("sg{i}")))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Fragment `i`: 40% user scope, 20% agent, 30% group, 10% global; half drawn from a resource.
    fn fragment(&self, i: usize, rng: &mut fastrand::Rng) -> NewFragment {
        let user = self.users[i % USERS];
        let mut agents = BTreeSet::from([self.agents[i % AGENTS]]);
        if i.is_multiple_of(5) {
            agents.insert(self.agents[(i / 7) % AGENTS]);
        }
        let resources = if i.is_multiple_of(2) {
            BTreeSet::from([self.resources[i % RESOURCES]])
        } else {
            BTreeSet::new()
        };
        let scope = match i % 10 {
            0..=3 => Scope::User,
            4 | 5 => Scope::Agent,
            6..=8 => Scope::Group(self.groups[i % GROUPS]),
            _ => Scope::Global,
        };
        NewFragment {
            key: Some(format!("{user}/topic-{}", i % 97)),
            content: format!(
                "fragment {i}: {user} talked about topic {} on day {} and said they prefer option {}",
                i % 97,
                i % 365,
                i % 13
            ),
            granularity: Granularity::Fact,
            kind: Kind::Observation,
            scope,
            provenance: Provenance {
                created_at: Timestamp::from_millis(1_000_000 + i as i64),
                user,
                agents,
                resources,
                source: Source {
                    session: Some(format!("s{}", i / BATCH)),
                    turns: vec![format!("D{}:{}", i / BATCH, i % BATCH)],
                    parents: Vec::new(),
                },
            },
            validity: Validity::always(),
            keywords: vec![format!("topic-{}", i % 97)],
            embedding: Some(Embedding {
                embedder: "bench-384".into(),
                vector: (0..DIM).map(|_| rng.f32() - 0.5).collect(),
            }),
        }
    }

    /// Reader `k`: one user through one agent that may use 8 of 32 agents' work,
    /// 8 of 16 resources, and belongs to 2 of 8 groups.
    fn reader(&self, k: usize) -> ReadFilter {
        let a = k % AGENTS;
        ReadFilter::from_parts(FilterParts {
            user: self.users[(k * 7) % USERS],
            agent: self.agents[a],
            now: Timestamp::MAX,
            agents: (0..8)
                .map(|j| self.agents[(a + j * 3) % AGENTS])
                .collect::<IdSet<_>>(),
            resources: (0..8)
                .map(|j| self.resources[(k + j * 2) % RESOURCES])
                .collect(),
            groups: (0..2).map(|j| self.groups[(k + j * 3) % GROUPS]).collect(),
        })
    }
}

/// Bytes this process has passed to `write()` so far (`wchar` in `/proc/self/io`; Linux).
fn written_bytes() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|line| line.strip_prefix("wchar:"))?
        .trim()
        .parse()
        .ok()
}

/// User + system CPU time of this process from `/proc/self/stat` (Linux; 100 ticks per second).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

fn percentile(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort();
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples.get(index).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

pub fn run(args: &BenchStoreArgs) -> Result<()> {
    let world = World::new()?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("bench.db");
    let store = SqliteStore::open(&path, StoreConfig::default())?;
    let mut rng = fastrand::Rng::with_seed(11);

    let (user, agent) = (world.users[0], world.agents[0]);
    // Interactions are generated a chunk at a time, outside the timed (and
    // CPU-metered) writes, so the figures are the store's alone.
    const CHUNK: usize = 100;
    let wall = Instant::now();
    let mut writing = Duration::ZERO;
    let mut cpu = Some(0.0);
    let written_before = written_bytes();
    let mut writes = Vec::with_capacity(args.n.div_ceil(BATCH));
    let (mut reported, mut reported_writing) = (0, Duration::ZERO);
    let mut i = 0;
    while i < args.n {
        let mut chunk = Vec::with_capacity(CHUNK);
        while i < args.n && chunk.len() < CHUNK {
            let end = (i + BATCH).min(args.n);
            chunk.push(Interaction {
                user,
                agent,
                fragments: (i..end).map(|j| world.fragment(j, &mut rng)).collect(),
                idempotency_key: Some(format!("batch-{i}")),
            });
            i = end;
        }
        let cpu_before = cpu_seconds();
        for interaction in &chunk {
            let start = Instant::now();
            store.write(interaction)?;
            let took = start.elapsed();
            writing += took;
            writes.push(took);
        }
        cpu = cpu
            .zip(cpu_before)
            .zip(cpu_seconds())
            .map(|((total, before), after)| total + after - before);
        if !args.json && (i.is_multiple_of(100_000) || i == args.n) {
            println!(
                "  {i} fragments, {:.0}/s overall, {:.0}/s over the last {}",
                i as f64 / writing.as_secs_f64(),
                (i - reported) as f64 / (writing - reported_writing).as_secs_f64(),
                i - reported
            );
            (reported, reported_writing) = (i, writing);
        }
    }
    let insert_wall_s = wall.elapsed().as_secs_f64();
    let insert_cpu_s = cpu;
    let insert_written_bytes = written_bytes()
        .zip(written_before)
        .map(|(after, before)| after - before);
    store.checkpoint()?;
    let db_bytes = std::fs::metadata(&path)?.len();

    let newest = ListQuery {
        limit: Some(50),
        order: Order::NewestFirst,
        ..ListQuery::default()
    };
    let (mut counts, mut lists) = (Vec::new(), Vec::new());
    let mut visible = 0u64;
    for k in 0..args.queries {
        let filter = world.reader(k);
        let start = Instant::now();
        visible += store.count(&filter, &ListQuery::default())?;
        counts.push(start.elapsed());
        let start = Instant::now();
        let page = store.list(&filter, &newest)?;
        lists.push(start.elapsed());
        anyhow::ensure!(
            page.iter().all(|f| filter.admits(&f.meta())),
            "the store returned a fragment the filter refuses"
        );
    }

    let write_p50_ms = percentile(&mut writes, 0.50);
    let write_excess_s = writes
        .iter()
        .map(|w| (w.as_secs_f64() - write_p50_ms / 1e3).max(0.0))
        .sum();
    let figures = Figures {
        n: args.n,
        insert_per_s: args.n as f64 / writing.as_secs_f64(),
        insert_wall_s,
        insert_cpu_s,
        insert_per_cpu_s: insert_cpu_s.map(|cpu| args.n as f64 / cpu),
        write_p50_ms,
        write_p99_ms: percentile(&mut writes, 0.99),
        write_max_ms: percentile(&mut writes, 1.0),
        write_excess_s,
        insert_written_bytes,
        db_bytes,
        filtered_count_p50_ms: percentile(&mut counts, 0.50),
        filtered_count_p99_ms: percentile(&mut counts, 0.99),
        filtered_list_p50_ms: percentile(&mut lists, 0.50),
        filtered_list_p99_ms: percentile(&mut lists, 0.99),
        mean_visible: visible as f64 / args.queries.max(1) as f64,
    };
    println!(
        "bench store: {} fragments in batches of {BATCH} with {DIM}-d embeddings",
        figures.n
    );
    println!(
        "  insert            {:>10.0} fragments/s ({:.1} s wall, {:.0} MiB on disk)",
        figures.insert_per_s,
        figures.insert_wall_s,
        figures.db_bytes as f64 / 1048576.0
    );
    if let (Some(cpu), Some(rate)) = (figures.insert_cpu_s, figures.insert_per_cpu_s) {
        println!("  insert per CPU    {rate:>10.0} fragments/s ({cpu:.1} s of process CPU)");
    }
    println!(
        "  one write of {BATCH}  p50 {:>8.2} ms   p99 {:>8.2} ms   max {:.0} ms   ({:.1} s beyond the median)",
        figures.write_p50_ms, figures.write_p99_ms, figures.write_max_ms, figures.write_excess_s
    );
    if let Some(bytes) = figures.insert_written_bytes {
        println!(
            "  written           {:>10.0} bytes per fragment (log and checkpoints)",
            bytes as f64 / figures.n.max(1) as f64
        );
    }
    println!(
        "  filtered count    p50 {:>8.2} ms   p99 {:>8.2} ms   ({:.0} visible on average)",
        figures.filtered_count_p50_ms, figures.filtered_count_p99_ms, figures.mean_visible
    );
    println!(
        "  filtered list 50  p50 {:>8.2} ms   p99 {:>8.2} ms",
        figures.filtered_list_p50_ms, figures.filtered_list_p99_ms
    );
    if args.json {
        println!("{}", serde_json::to_string(&figures)?);
    }
    Ok(())
}
