//! `cargo xtask scenario access`: the dynamic-permission example of Collaborative
//! Memory replayed on the access kernel.
//!
//! Five users and five agents, one resource per agent. At setup every user may invoke
//! every agent, and each agent writes one global fact drawn from its resource and one
//! user-scoped note per user. Then every invoke edge is revoked, and edges come back by
//! seeded Bernoulli trials until there are 5, 10, 15, 20 and 25, and go away again down
//! to 20, 15, 10 and 5. At each stage the logical clock moves on and the scenario prints
//! which fragments each user can see through the agents they may invoke then.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, ensure};
use colmem_access::{AccessGraph, Context, SystemPolicy};
use colmem_core::{
    AccessChange, AccessEvent, AgentId, Clock, Draft, Edge, Fragment, FragmentId, Granularity,
    Kind, LogicalClock, Principal, ResourceId, Scope, Timestamp, UserId,
};
use serde::Serialize;

const N: usize = 5;
const STAGES: [usize; 9] = [5, 10, 15, 20, 25, 20, 15, 10, 5];
const SEED: u64 = 20_260_301;

#[derive(Serialize)]
struct Stage {
    stage: usize,
    at: String,
    edges: usize,
    /// user → agents they may invoke.
    invoke: BTreeMap<String, Vec<String>>,
    /// user → ids of fragments visible through any of their agents.
    visible: BTreeMap<String, Vec<u64>>,
}

#[derive(Serialize)]
struct Report {
    users: usize,
    agents: usize,
    fragments: usize,
    stages: Vec<Stage>,
    violations: usize,
}

pub fn run(json: bool) -> Result<()> {
    let report = replay()?;
    print_table(&report);
    if json {
        println!("{}", serde_json::to_string(&report)?);
    }
    ensure!(
        report.violations == 0,
        "{} visibility violations",
        report.violations
    );
    Ok(())
}

fn replay() -> Result<Report> {
    let users: Vec<UserId> = (1..=N)
        .map(|i| UserId::new(&format!("user{i}")))
        .collect::<Result<_, _>>()?;
    let agents: Vec<AgentId> = (1..=N)
        .map(|i| AgentId::new(&format!("agent{i}")))
        .collect::<Result<_, _>>()?;
    let resources: Vec<ResourceId> = (1..=N)
        .map(|i| ResourceId::new(&format!("resource{i}")))
        .collect::<Result<_, _>>()?;

    let clock = LogicalClock::new(Timestamp::parse("2026-03-01T09:00:00Z")?);
    let mut graph = AccessGraph::new();
    let log = |graph: &mut AccessGraph, change: AccessChange| {
        graph.apply(AccessEvent {
            at: clock.now(),
            change,
        })
    };
    for p in users
        .iter()
        .map(|u| Principal::User(*u))
        .chain(agents.iter().map(|a| Principal::Agent(*a)))
        .chain(resources.iter().map(|r| Principal::Resource(*r)))
    {
        log(&mut graph, AccessChange::Register { principal: p })?;
    }
    for (agent, resource) in agents.iter().zip(&resources) {
        log(
            &mut graph,
            AccessChange::Grant {
                edge: Edge::Access {
                    agent: *agent,
                    resource: *resource,
                },
                until: None,
            },
        )?;
    }
    let invoke = |u: UserId, a: AgentId| Edge::Invoke { user: u, agent: a };
    for u in &users {
        for a in &agents {
            log(
                &mut graph,
                AccessChange::Grant {
                    edge: invoke(*u, *a),
                    until: None,
                },
            )?;
        }
    }

    // Setup: each agent writes through the write rule while it may.
    clock.advance(60_000);
    let system = SystemPolicy {
        global_writers: agents.iter().copied().collect(),
    };
    let mut fragments: Vec<Fragment> = Vec::new();
    for (i, (agent, resource)) in agents.iter().zip(&resources).enumerate() {
        let mut fact = Draft::new(
            format!("{resource} says fact #{i}"),
            Granularity::Fact,
            Kind::Observation,
        );
        fact.scope = Some(Scope::Global);
        fact.resources.insert(*resource);
        let mut drafts = vec![(users[0], fact)];
        for u in &users {
            let mut note = Draft::new(
                format!("{u} told {agent} a preference"),
                Granularity::Fact,
                Kind::Observation,
            );
            note.scope = Some(Scope::User);
            drafts.push((*u, note));
        }
        for (u, draft) in drafts {
            let ctx = Context::new(u, *agent, &clock);
            let new = graph.authorize_write(&ctx, draft, &system)?;
            let id = FragmentId(fragments.len() as u64 + 1);
            fragments.push(Fragment {
                id,
                key: new.key,
                content: new.content,
                granularity: new.granularity,
                kind: new.kind,
                scope: new.scope,
                provenance: new.provenance,
                validity: new.validity,
                keywords: new.keywords,
                superseded_at: None,
                superseded_by: None,
                deleted_at: None,
            });
        }
    }

    clock.advance(60_000);
    for u in &users {
        for a in &agents {
            log(
                &mut graph,
                AccessChange::Revoke {
                    edge: invoke(*u, *a),
                },
            )?;
        }
    }

    let mut rng = fastrand::Rng::with_seed(SEED);
    let mut granted: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut stages = Vec::new();
    let mut violations = 0;
    for (stage, &target) in STAGES.iter().enumerate() {
        clock.advance(3_600_000);
        // Bernoulli trials over the pairs, in a seeded order, until the target is met.
        while granted.len() != target {
            let pair = (rng.usize(..N), rng.usize(..N));
            let adding = granted.len() < target;
            if rng.f64() < 0.5 || granted.contains(&pair) == adding {
                continue;
            }
            let edge = invoke(users[pair.0], agents[pair.1]);
            if adding {
                log(&mut graph, AccessChange::Grant { edge, until: None })?;
                granted.insert(pair);
            } else {
                log(&mut graph, AccessChange::Revoke { edge })?;
                granted.remove(&pair);
            }
        }
        let now = clock.now();
        let mut invoke_map = BTreeMap::new();
        let mut visible = BTreeMap::new();
        for (ui, u) in users.iter().enumerate() {
            let allowed = graph.invocable(*u, now)?;
            let mut seen = BTreeSet::new();
            for a in &allowed {
                let ctx = Context::new(*u, *a, &clock);
                let filter = graph.compile(&ctx)?;
                for f in &fragments {
                    let admitted = filter.admits(&f.meta());
                    if admitted != graph.can_read(&ctx, f) {
                        violations += 1;
                    }
                    if admitted {
                        seen.insert(f.id.0);
                    }
                }
            }
            // Independent check: a user sees exactly the global fact and their own note of each agent they may invoke.
            let expected: BTreeSet<u64> = (0..N)
                .filter(|ai| granted.contains(&(ui, *ai)))
                .flat_map(|ai| {
                    let base = (ai * (N + 1)) as u64;
                    [base + 1, base + 2 + ui as u64]
                })
                .collect();
            if seen != expected {
                violations += 1;
            }
            invoke_map.insert(
                u.to_string(),
                allowed.iter().map(|a| a.to_string()).collect(),
            );
            visible.insert(u.to_string(), seen.into_iter().collect());
        }
        stages.push(Stage {
            stage: stage + 1,
            at: now.to_string(),
            edges: granted.len(),
            invoke: invoke_map,
            visible,
        });
    }
    Ok(Report {
        users: N,
        agents: N,
        fragments: fragments.len(),
        stages,
        violations,
    })
}

fn print_table(report: &Report) {
    println!(
        "scenario access: {} users, {} agents, {} fragments (a global fact and a note per user from each agent)",
        report.users, report.agents, report.fragments
    );
    for stage in &report.stages {
        println!(
            "\nstage {} at {}: {} invoke edges",
            stage.stage, stage.at, stage.edges
        );
        println!(
            "  {:<7} {:<40} {:>7}  fragments",
            "user", "may invoke", "visible"
        );
        for (user, agents) in &stage.invoke {
            let ids = &stage.visible[user];
            let list: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
            println!(
                "  {:<7} {:<40} {:>7}  {}",
                user,
                agents.join(","),
                ids.len(),
                list.join(" ")
            );
        }
    }
    println!("\nviolations: {}", report.violations);
}
