//! `cargo xtask scenario fully-collaborative`: five users, six domain agents each with its
//! own knowledge base, every user allowed every agent. Queries overlap across users at the
//! fixture's rates (overlapping queries are paraphrases, so memory must be retrieved, not
//! looked up); each overlap runs once with shared findings and once isolated. Reports
//! accuracy and resource calls per query over the query index, wrong reuse, and the
//! checker's violations.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Result, ensure};
use colmem_access::SystemPolicy;
use colmem_collab::{CollabConfig, QueryRecord, Resource, Sharing, Specialist, Summary};
use colmem_core::{AgentId, Edge, Principal, ResourceId, Timestamp, UserId};
use serde::{Deserialize, Serialize};

use crate::scenario_report::{Block, Report, print_table};
use crate::scenario_world::{
    Corpus, Question, Wiring, domains, f3, load, round3, running_mean, wire,
};

const NAME: &str = "fully-collaborative";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    seed: u64,
    start: String,
    users: usize,
    queries_per_user: usize,
    entities_per_domain: usize,
    overlaps: Vec<f64>,
    memory_min_coverage: f32,
    kb_min_coverage: f32,
    templates: Vec<String>,
}

/// One overlap level, as the JSON line reports it.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub overlap: f64,
    pub shared_resource_calls: usize,
    pub isolated_resource_calls: usize,
    pub reduction: f64,
    pub shared_accuracy: f64,
    pub isolated_accuracy: f64,
}

/// The JSON line.
#[derive(Clone, Debug, Serialize)]
pub struct Output {
    pub rows: Vec<Row>,
    pub violations: usize,
}

/// Everything measured at one overlap.
#[derive(Clone, Debug)]
pub struct Level {
    pub overlap: f64,
    pub shared: Vec<QueryRecord>,
    pub isolated: Vec<QueryRecord>,
}

/// The users' queries at `overlap`, in asking order: `(user index, question, template)`.
fn plan(
    fixture: &Fixture,
    corpus: &Corpus,
    level: usize,
    overlap: f64,
) -> Result<Vec<(usize, Question, usize)>> {
    let mut rng = fastrand::Rng::with_seed(fixture.seed.wrapping_add(level as u64));
    let mut pool = corpus.questions();
    rng.shuffle(&mut pool);
    let q = fixture.queries_per_user;
    let shared = (overlap * q as f64).round() as usize;
    let unique = q - shared;
    ensure!(
        pool.len() >= shared + fixture.users * unique,
        "the corpus has {} questions, too few for {} users × {q} queries: raise entities_per_domain",
        pool.len(),
        fixture.users
    );
    let t = fixture.templates.len();
    let mut lists: Vec<Vec<(usize, Question, usize)>> = Vec::new();
    for user in 0..fixture.users {
        let mut list: Vec<(usize, Question, usize)> = pool[..shared]
            .iter()
            .enumerate()
            .map(|(j, question)| (user, *question, (user + j) % t))
            .collect();
        let start = shared + user * unique;
        for question in &pool[start..start + unique] {
            list.push((user, *question, rng.usize(..t)));
        }
        rng.shuffle(&mut list);
        lists.push(list);
    }
    let mut order = Vec::new();
    for j in 0..q {
        for list in &lists {
            order.push(list[j]);
        }
    }
    Ok(order)
}

fn run_once(
    fixture: &Fixture,
    corpus: &Corpus,
    kbs: &[Arc<dyn Resource>],
    sharing: Sharing,
    queries: &[(usize, Question, usize)],
) -> Result<(Vec<QueryRecord>, usize)> {
    let users: Vec<UserId> = (1..=fixture.users)
        .map(|i| UserId::new(&format!("user{i}")))
        .collect::<Result<_, _>>()?;
    let mut team = Vec::new();
    let mut principals: Vec<Principal> = users.iter().map(|u| Principal::User(*u)).collect();
    let mut edges = Vec::new();
    for (domain, kb) in corpus.domains.iter().zip(kbs) {
        let agent = AgentId::new(&domain.spec.agent())?;
        let resource: ResourceId = kb.id();
        team.push(Specialist::new(
            agent,
            domain.spec.specialisation.clone(),
            vec![kb.clone()],
        ));
        principals.push(Principal::Agent(agent));
        principals.push(Principal::Resource(resource));
        edges.push(Edge::Access { agent, resource });
        for user in &users {
            edges.push(Edge::Invoke { user: *user, agent });
        }
    }
    let system = SystemPolicy {
        global_writers: team.iter().map(|s| s.id).collect(),
    };
    let mut wiring: Wiring = wire(
        Timestamp::parse(&fixture.start)?,
        team,
        system,
        CollabConfig {
            sharing,
            min_match: fixture.memory_min_coverage,
            ..CollabConfig::default()
        },
        None,
    )?;
    wiring.register(principals)?;
    wiring.grant(edges)?;
    let mut records = Vec::new();
    for &(user, question, template) in queries {
        let text = corpus.text(question, &fixture.templates[template]);
        let (_, record) = wiring.ask(
            users[user],
            &text,
            corpus.gold(question),
            Some(kbs[question.domain].as_ref()),
        )?;
        records.push(record);
    }
    Ok((records, wiring.check()?.violations.len()))
}

/// Runs every overlap level, shared and isolated.
pub fn compute(root: &Path) -> Result<(Output, Vec<Level>)> {
    let fixture: Fixture = load(root, NAME)?;
    let specs = domains(root)?;
    ensure!(specs.len() >= 6, "{NAME} needs six domains in domains.toml");
    let corpus = Corpus::generate(
        &specs[..6],
        fixture.entities_per_domain,
        &mut fastrand::Rng::with_seed(fixture.seed),
    );
    let kbs: Vec<Arc<dyn Resource>> = (0..corpus.domains.len())
        .map(|d| {
            Ok(Arc::new(corpus.knowledge_base(d, fixture.kb_min_coverage)?) as Arc<dyn Resource>)
        })
        .collect::<Result<_>>()?;
    let mut rows = Vec::new();
    let mut levels = Vec::new();
    let mut violations = 0;
    for (level, &overlap) in fixture.overlaps.iter().enumerate() {
        let queries = plan(&fixture, &corpus, level, overlap)?;
        let (shared, v1) = run_once(&fixture, &corpus, &kbs, Sharing::Shared, &queries)?;
        let (isolated, v2) = run_once(&fixture, &corpus, &kbs, Sharing::Isolated, &queries)?;
        violations += v1 + v2;
        let s = Summary::of(&shared);
        let i = Summary::of(&isolated);
        rows.push(Row {
            overlap,
            shared_resource_calls: s.resource_calls,
            isolated_resource_calls: i.resource_calls,
            reduction: round3(if i.resource_calls == 0 {
                0.0
            } else {
                1.0 - s.resource_calls as f64 / i.resource_calls as f64
            }),
            shared_accuracy: round3(s.accuracy),
            isolated_accuracy: round3(i.accuracy),
        });
        levels.push(Level {
            overlap,
            shared,
            isolated,
        });
    }
    Ok((Output { rows, violations }, levels))
}

fn table(levels: &[Level]) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let header = vec![
        "overlap",
        "queries",
        "calls/q shared",
        "calls/q isolated",
        "reduction",
        "acc shared",
        "acc isolated",
        "memory answers",
        "wrong reuse",
    ];
    let rows = levels
        .iter()
        .map(|l| {
            let s = Summary::of(&l.shared);
            let i = Summary::of(&l.isolated);
            let reduction = if i.resource_calls == 0 {
                0.0
            } else {
                1.0 - s.resource_calls as f64 / i.resource_calls as f64
            };
            vec![
                format!("{:.0}%", l.overlap * 100.0),
                s.queries.to_string(),
                f3(s.resource_calls_per_query),
                f3(i.resource_calls_per_query),
                format!("{:.1}%", reduction * 100.0),
                f3(s.accuracy),
                f3(i.accuracy),
                s.memory_answers.to_string(),
                (s.wrong_reuse + i.wrong_reuse).to_string(),
            ]
        })
        .collect();
    (header, rows)
}

fn series(
    levels: &[Level],
    shared: bool,
    value: fn(&QueryRecord) -> f64,
) -> Vec<(String, Vec<(f64, f64)>)> {
    levels
        .iter()
        .map(|l| {
            let records = if shared { &l.shared } else { &l.isolated };
            (
                format!("{:.0}% overlap", l.overlap * 100.0),
                running_mean(records.iter().map(value)),
            )
        })
        .collect()
}

pub fn run(root: &Path, json: bool) -> Result<()> {
    let (output, levels) = compute(root)?;
    println!(
        "scenario {NAME}: 5 users, 6 domain agents (one knowledge base each); shared vs isolated findings"
    );
    let (header, rows) = table(&levels);
    print_table(&header, &rows);
    println!("violations: {}", output.violations);
    let calls = |r: &QueryRecord| r.tool_calls as f64;
    let correct = |r: &QueryRecord| if r.correct { 1.0 } else { 0.0 };
    let report = Report {
        title: format!("scenario {NAME}"),
        blocks: vec![
            Block::Text(
                "Five users and six domain agents, each with its own BM25 knowledge base; every user may invoke every agent. \
                 Overlapping queries are paraphrases asked by every user. Shared: findings are global; isolated: each user's own."
                    .into(),
            ),
            Block::Table {
                header: header.iter().map(|h| h.to_string()).collect(),
                rows,
            },
            Block::Text(format!("Checker violations: {}.", output.violations)),
            Block::Lines {
                title: "shared memory: resource calls per query (running mean)".into(),
                x_label: "query index".into(),
                y_label: "calls per query".into(),
                series: series(&levels, true, calls),
            },
            Block::Lines {
                title: "isolated memory: resource calls per query (running mean)".into(),
                x_label: "query index".into(),
                y_label: "calls per query".into(),
                series: series(&levels, false, calls),
            },
            Block::Lines {
                title: "shared memory: accuracy (running mean)".into(),
                x_label: "query index".into(),
                y_label: "accuracy".into(),
                series: series(&levels, true, correct),
            },
            Block::Lines {
                title: "isolated memory: accuracy (running mean)".into(),
                x_label: "query index".into(),
                y_label: "accuracy".into(),
                series: series(&levels, false, correct),
            },
        ],
    };
    report.publish(root, NAME, json, &output, output.violations)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics() {
        let (output, levels) = compute(&crate::repo_root()).unwrap();
        let wrong_reuse: Vec<usize> = levels
            .iter()
            .map(|l| Summary::of(&l.shared).wrong_reuse + Summary::of(&l.isolated).wrong_reuse)
            .collect();
        insta::assert_json_snapshot!(serde_json::json!({
            "output": output,
            "wrong_reuse": wrong_reuse,
        }));
    }
}
