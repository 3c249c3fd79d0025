//! `cargo xtask bench access`: the cost of admitting one fragment through a compiled
//! `ReadFilter`, next to evaluating the rule directly with `can_read`.

use std::hint::black_box;
use std::time::Instant;

use anyhow::Result;
use colmem_access::{AccessGraph, Context};
use colmem_core::{
    AccessChange, AccessEvent, AgentId, Edge, Fragment, FragmentId, Granularity, GroupId,
    GroupKind, Kind, LogicalClock, Member, Principal, Provenance, ResourceId, Scope, Source,
    Timestamp, UserId, Validity,
};
use serde::Serialize;

#[derive(clap::Args, Debug)]
pub struct BenchAccessArgs {
    /// Fragments to admit.
    #[arg(long, default_value_t = 1_000_000)]
    n: usize,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Figures {
    admit_ns_per_fragment: f64,
    can_read_ns_per_fragment: f64,
    compile_us: f64,
    fragments: usize,
    admitted: usize,
}

const USERS: usize = 1_000;
const AGENTS: usize = 200;
const RESOURCES: usize = 100;
const GROUPS: usize = 40;

pub fn run(args: &BenchAccessArgs) -> Result<()> {
    let mut rng = fastrand::Rng::with_seed(7);
    let users: Vec<UserId> = (0..USERS)
        .map(|i| UserId::new(&format!("bu{i}")))
        .collect::<Result<_, _>>()?;
    let agents: Vec<AgentId> = (0..AGENTS)
        .map(|i| AgentId::new(&format!("ba{i}")))
        .collect::<Result<_, _>>()?;
    let resources: Vec<ResourceId> = (0..RESOURCES)
        .map(|i| ResourceId::new(&format!("br{i}")))
        .collect::<Result<_, _>>()?;
    let groups: Vec<GroupId> = (0..GROUPS)
        .map(|i| GroupId::new(&format!("bg{i}")))
        .collect::<Result<_, _>>()?;

    let at = Timestamp::from_millis(1_000);
    let mut graph = AccessGraph::new();
    let mut apply = |change| graph.apply(AccessEvent { at, change });
    for p in users
        .iter()
        .map(|u| Principal::User(*u))
        .chain(agents.iter().map(|a| Principal::Agent(*a)))
        .chain(resources.iter().map(|r| Principal::Resource(*r)))
        .chain(groups.iter().map(|g| Principal::Group(*g, GroupKind::Crew)))
    {
        apply(AccessChange::Register { principal: p })?;
    }
    for u in &users {
        for _ in 0..20 {
            let edge = Edge::Invoke {
                user: *u,
                agent: agents[rng.usize(..AGENTS)],
            };
            apply(AccessChange::Grant { edge, until: None }).ok();
        }
    }
    for a in &agents {
        for _ in 0..30 {
            let edge = Edge::Access {
                agent: *a,
                resource: resources[rng.usize(..RESOURCES)],
            };
            apply(AccessChange::Grant { edge, until: None }).ok();
        }
        let edge = Edge::Member {
            member: Member::Agent(*a),
            group: groups[rng.usize(..GROUPS)],
        };
        apply(AccessChange::Grant { edge, until: None })?;
    }
    for i in 1..GROUPS {
        let edge = Edge::Member {
            member: Member::Group(groups[i - 1]),
            group: groups[i],
        };
        if rng.bool() {
            apply(AccessChange::Grant { edge, until: None })?;
        }
    }

    let reader_user = users[0];
    let reader_agent = *graph
        .invocable(reader_user, at)?
        .iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("reader has no agent"))?;
    let fragments: Vec<Fragment> = (0..args.n)
        .map(|i| {
            // Half the fragments belong to the reader, so every condition gets exercised.
            let user = if rng.bool() {
                reader_user
            } else {
                users[rng.usize(..USERS)]
            };
            let scope = match rng.u8(..4) {
                0 => Scope::Agent,
                1 => Scope::User,
                2 => Scope::Group(groups[rng.usize(..GROUPS)]),
                _ => Scope::Global,
            };
            Fragment {
                id: FragmentId(i as u64),
                key: None,
                content: String::new(),
                granularity: Granularity::Fact,
                kind: Kind::Observation,
                scope,
                provenance: Provenance {
                    created_at: Timestamp::from_millis(rng.i64(0..1_200)),
                    user,
                    agents: (0..rng.usize(1..3))
                        .map(|_| agents[rng.usize(..AGENTS)])
                        .collect(),
                    resources: (0..rng.usize(0..3))
                        .map(|_| resources[rng.usize(..RESOURCES)])
                        .collect(),
                    source: Source::default(),
                },
                validity: Validity::always(),
                keywords: Vec::new(),
                superseded_at: None,
                superseded_by: None,
                deleted_at: None,
            }
        })
        .collect();
    let metas: Vec<_> = fragments.iter().map(Fragment::meta).collect();

    let clock = LogicalClock::new(at);
    let ctx = Context::new(reader_user, reader_agent, &clock);
    let started = Instant::now();
    let rounds = 100;
    for _ in 0..rounds {
        black_box(graph.compile(black_box(&ctx))?);
    }
    let compile_us = started.elapsed().as_secs_f64() * 1e6 / rounds as f64;
    let filter = graph.compile(&ctx)?;

    // Warm up, then time three passes and keep the fastest.
    let mut admitted = metas.iter().filter(|m| filter.admits(m)).count();
    let mut best = f64::MAX;
    for _ in 0..3 {
        let started = Instant::now();
        admitted = metas.iter().filter(|m| filter.admits(black_box(m))).count();
        best = best.min(started.elapsed().as_secs_f64());
    }
    let admit_ns = best * 1e9 / metas.len().max(1) as f64;

    let sample = fragments.len().min(20_000);
    let started = Instant::now();
    let direct = fragments[..sample]
        .iter()
        .filter(|f| graph.can_read(&ctx, black_box(f)))
        .count();
    let can_read_ns = started.elapsed().as_secs_f64() * 1e9 / sample.max(1) as f64;
    let filtered = metas[..sample].iter().filter(|m| filter.admits(m)).count();
    anyhow::ensure!(
        direct == filtered,
        "can_read and admits disagree: {direct} vs {filtered}"
    );

    let figures = Figures {
        admit_ns_per_fragment: admit_ns,
        can_read_ns_per_fragment: can_read_ns,
        compile_us,
        fragments: metas.len(),
        admitted,
    };
    println!(
        "bench access: {} users, {} agents, {} resources, {} groups",
        USERS, AGENTS, RESOURCES, GROUPS
    );
    println!("{:<34} {:>14}", "measure", "value");
    println!("{:<34} {:>14}", "fragments", figures.fragments);
    println!("{:<34} {:>14}", "admitted", figures.admitted);
    println!(
        "{:<34} {:>14.1}",
        "ReadFilter::admits (ns/fragment)", figures.admit_ns_per_fragment
    );
    println!(
        "{:<34} {:>14.1}",
        "can_read (ns/fragment)", figures.can_read_ns_per_fragment
    );
    println!(
        "{:<34} {:>14.1}",
        "compile (µs/request)", figures.compile_us
    );
    if args.json {
        println!("{}", serde_json::to_string(&figures)?);
    }
    Ok(())
}
