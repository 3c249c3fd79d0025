//! `cargo xtask scenario dynamic`: five users and five agents with one knowledge base each.
//! Invoke edges are added by seeded Bernoulli trials until there are 5, 10, 15, 20 and 25,
//! then removed back to 20, 15, 10 and 5; the same queries run at every stage, with shared
//! memory kept across stages. Reports per stage accuracy, agents used, resources used and
//! the access matrix; the independent checker must find no violation.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, ensure};
use colmem_access::SystemPolicy;
use colmem_collab::{AccessMatrix, CollabConfig, Resource, Sharing, Specialist, Summary};
use colmem_core::{AccessChange, AgentId, Edge, Principal, Timestamp, UserId};
use serde::{Deserialize, Serialize};

use crate::scenario_report::{Block, Report, print_table};
use crate::scenario_world::{Corpus, Question, domains, f3, load, round3, wire};

const NAME: &str = "dynamic";
const HOUR_MS: i64 = 3_600_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    seed: u64,
    start: String,
    users: usize,
    domains: Vec<String>,
    queries: usize,
    questions: usize,
    entities_per_domain: usize,
    stages: Vec<usize>,
    memory_min_coverage: f32,
    kb_min_coverage: f32,
    templates: Vec<String>,
}

/// One stage, as the JSON line reports it.
#[derive(Clone, Debug, Serialize)]
pub struct Stage {
    pub stage: usize,
    pub edges: usize,
    pub accuracy: f64,
    /// Distinct agents that answered a query at this stage.
    pub agents_used: usize,
    /// Distinct resources called at this stage.
    pub resources_used: usize,
    pub resource_calls: usize,
    /// Agent utilisation: distinct agents per query.
    pub agents_per_query: f64,
    /// Resource utilisation: tool calls per query.
    pub resource_calls_per_query: f64,
    pub memory_answers: usize,
    /// user → agents they may invoke at this stage.
    pub matrix: BTreeMap<String, Vec<String>>,
    /// user → agent → tool calls at this stage.
    pub calls: BTreeMap<String, BTreeMap<String, usize>>,
}

/// The JSON line.
#[derive(Clone, Debug, Serialize)]
pub struct Output {
    pub queries: usize,
    pub stages: Vec<Stage>,
    pub violations: usize,
}

pub fn compute(root: &Path) -> Result<Output> {
    let f: Fixture = load(root, NAME)?;
    let all = domains(root)?;
    let specs = f
        .domains
        .iter()
        .map(|name| {
            all.iter()
                .find(|d| &d.name == name)
                .cloned()
                .with_context(|| format!("domain {name} is not in domains.toml"))
        })
        .collect::<Result<Vec<_>>>()?;
    ensure!(
        specs.len() == f.users,
        "{NAME} pairs each of its {} users with one of as many domains",
        f.users
    );
    let mut rng = fastrand::Rng::with_seed(f.seed);
    let corpus = Corpus::generate(&specs, f.entities_per_domain, &mut rng);
    let kbs: Vec<Arc<dyn Resource>> = (0..specs.len())
        .map(|d| Ok(Arc::new(corpus.knowledge_base(d, f.kb_min_coverage)?) as Arc<dyn Resource>))
        .collect::<Result<_>>()?;

    // The same queries at every stage: each base question once, then paraphrased repeats.
    let mut pool = corpus.questions();
    rng.shuffle(&mut pool);
    ensure!(
        pool.len() >= f.questions,
        "too few questions in the corpus: raise entities_per_domain"
    );
    let base: Vec<Question> = pool[..f.questions].to_vec();
    let mut queries: Vec<(usize, Question, usize)> = (0..f.queries)
        .map(|i| {
            let q = if i < base.len() {
                base[i]
            } else {
                base[rng.usize(..base.len())]
            };
            (rng.usize(..f.users), q, rng.usize(..f.templates.len()))
        })
        .collect();
    rng.shuffle(&mut queries);

    let users: Vec<UserId> = (1..=f.users)
        .map(|i| UserId::new(&format!("user{i}")))
        .collect::<Result<_, _>>()?;
    let mut team = Vec::new();
    let mut principals: Vec<Principal> = users.iter().map(|u| Principal::User(*u)).collect();
    let mut access = Vec::new();
    for (spec, kb) in specs.iter().zip(&kbs) {
        let agent = AgentId::new(&spec.agent())?;
        team.push(Specialist::new(
            agent,
            spec.specialisation.clone(),
            vec![kb.clone()],
        ));
        principals.push(Principal::Agent(agent));
        principals.push(Principal::Resource(kb.id()));
        access.push(Edge::Access {
            agent,
            resource: kb.id(),
        });
    }
    let agents: Vec<AgentId> = team.iter().map(|s| s.id).collect();
    let system = SystemPolicy {
        global_writers: agents.iter().copied().collect(),
    };
    let mut wiring = wire(
        Timestamp::parse(&f.start)?,
        team,
        system,
        CollabConfig {
            sharing: Sharing::Shared,
            min_match: f.memory_min_coverage,
            ..CollabConfig::default()
        },
        None,
    )?;
    wiring.register(principals)?;
    wiring.grant(access)?;

    let n = f.users;
    let mut granted: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut stages = Vec::new();
    for (index, &target) in f.stages.iter().enumerate() {
        ensure!(
            target <= n * n,
            "a stage asks for {target} edges; there are only {} pairs",
            n * n
        );
        wiring.clock.advance(HOUR_MS);
        // Bernoulli trials over the pairs, in a seeded order, until the target is met.
        while granted.len() != target {
            let pair = (rng.usize(..n), rng.usize(..n));
            let adding = granted.len() < target;
            if rng.f64() < 0.5 || granted.contains(&pair) == adding {
                continue;
            }
            let edge = Edge::Invoke {
                user: users[pair.0],
                agent: agents[pair.1],
            };
            if adding {
                wiring
                    .collab
                    .apply(AccessChange::Grant { edge, until: None })?;
                granted.insert(pair);
            } else {
                wiring.collab.apply(AccessChange::Revoke { edge })?;
                granted.remove(&pair);
            }
        }
        let mut matrix = BTreeMap::new();
        for user in &users {
            let may = wiring.collab.permissions(*user)?;
            matrix.insert(
                user.to_string(),
                may.keys().map(|a| a.to_string()).collect(),
            );
        }
        let before = wiring.collab.events().len();
        let mut records = Vec::new();
        let mut answering = BTreeSet::new();
        for &(user, question, template) in &queries {
            let text = corpus.text(question, &f.templates[template]);
            let (outcome, record) = wiring.ask(
                users[user],
                &text,
                corpus.gold(question),
                Some(kbs[question.domain].as_ref()),
            )?;
            answering.extend(
                outcome
                    .answers
                    .iter()
                    .filter(|a| a.answer.is_some())
                    .map(|a| a.agent),
            );
            records.push(record);
        }
        let events = wiring.collab.events();
        let used = AccessMatrix::of(&events[before..]);
        let (_, resources) = used.used();
        let mut calls = BTreeMap::new();
        for (user, row) in &used.cells {
            let per_agent: BTreeMap<String, usize> = row
                .iter()
                .map(|(agent, cell)| (agent.to_string(), cell.tool_calls.values().sum()))
                .filter(|(_, c)| *c > 0)
                .collect();
            if !per_agent.is_empty() {
                calls.insert(user.to_string(), per_agent);
            }
        }
        let summary = Summary::of(&records);
        stages.push(Stage {
            stage: index + 1,
            edges: granted.len(),
            accuracy: round3(summary.accuracy),
            agents_used: answering.len(),
            resources_used: resources.len(),
            resource_calls: summary.resource_calls,
            agents_per_query: round3(summary.agents_per_query),
            resource_calls_per_query: round3(summary.resource_calls_per_query),
            memory_answers: summary.memory_answers,
            matrix,
            calls,
        });
    }
    Ok(Output {
        queries: queries.len(),
        stages,
        violations: wiring.check()?.violations.len(),
    })
}

pub fn run(root: &Path, json: bool) -> Result<()> {
    let output = compute(root)?;
    println!(
        "scenario {NAME}: 5 users, 5 agents with one knowledge base each, {} queries at every stage, shared memory kept across stages",
        output.queries
    );
    let header = [
        "stage",
        "edges",
        "accuracy",
        "agents used",
        "resources used",
        "resource calls",
        "agents/query",
        "calls/query",
        "memory answers",
    ];
    let rows: Vec<Vec<String>> = output
        .stages
        .iter()
        .map(|s| {
            vec![
                s.stage.to_string(),
                s.edges.to_string(),
                f3(s.accuracy),
                s.agents_used.to_string(),
                s.resources_used.to_string(),
                s.resource_calls.to_string(),
                f3(s.agents_per_query),
                f3(s.resource_calls_per_query),
                s.memory_answers.to_string(),
            ]
        })
        .collect();
    print_table(&header, &rows);
    let mut blocks = vec![
        Block::Text(
            "Invoke edges grow by seeded Bernoulli trials to 5, 10, 15, 20, 25 and shrink to 20, 15, 10, 5. \
             Each agent keeps its one knowledge base throughout; findings are shared and kept across stages, \
             and the read rule decides at each stage which of them a user's agents may reuse."
                .into(),
        ),
        Block::Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows,
        },
        Block::Lines {
            title: "per stage".into(),
            x_label: "stage".into(),
            y_label: "share of queries".into(),
            series: vec![
                (
                    "accuracy".into(),
                    output.stages.iter().map(|s| (s.stage as f64, s.accuracy)).collect(),
                ),
                (
                    "resource calls per query".into(),
                    output
                        .stages
                        .iter()
                        .map(|s| (s.stage as f64, s.resource_calls_per_query))
                        .collect(),
                ),
                (
                    "edges / 25".into(),
                    output.stages.iter().map(|s| (s.stage as f64, s.edges as f64 / 25.0)).collect(),
                ),
            ],
        },
    ];
    for stage in &output.stages {
        println!(
            "\nstage {} ({} edges): who may invoke whom",
            stage.stage, stage.edges
        );
        let matrix_rows: Vec<Vec<String>> = stage
            .matrix
            .iter()
            .map(|(user, agents)| {
                let calls = stage.calls.get(user);
                let used: Vec<String> = calls
                    .map(|c| c.iter().map(|(a, n)| format!("{a}:{n}")).collect())
                    .unwrap_or_default();
                vec![user.clone(), agents.join(","), used.join(" ")]
            })
            .collect();
        print_table(&["user", "may invoke", "tool calls"], &matrix_rows);
        blocks.push(Block::Text(format!(
            "Stage {} — {} edges.",
            stage.stage, stage.edges
        )));
        blocks.push(Block::Table {
            header: vec!["user".into(), "may invoke".into(), "tool calls".into()],
            rows: matrix_rows,
        });
    }
    println!("\nviolations: {}", output.violations);
    blocks.push(Block::Text(format!(
        "Checker violations: {}.",
        output.violations
    )));
    let report = Report {
        title: format!("scenario {NAME}"),
        blocks,
    };
    report.publish(root, NAME, json, &output, output.violations)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics() {
        insta::assert_json_snapshot!(compute(&crate::repo_root()).unwrap());
    }
}
