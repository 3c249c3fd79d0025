//! `cargo xtask scenario asymmetric`: the four roles of Collaborative Memory with the
//! paper's user→agent and agent→resource tables. Market, finance and logistics agents reach
//! their own knowledge base plus the strategic computation; the decision agent reaches all
//! four. Each user asks about the topics of their role; a finding is reusable only where the
//! read rule lets it through (its agents invocable by the reader's user, its resource usable
//! by the reading agent). Reports resource calls per user, shared against isolated, and the
//! checker's violations.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail, ensure};
use colmem_access::SystemPolicy;
use colmem_collab::{
    CollabConfig, Computation, QueryRecord, Resource, Sharing, Specialist, Summary, break_even,
};
use colmem_core::{AgentId, Edge, Principal, ResourceId, Timestamp, UserId};
use serde::{Deserialize, Serialize};

use crate::scenario_report::{Block, Report, print_table};
use crate::scenario_world::{Corpus, Question, domains, f3, load, round3, wire};

const NAME: &str = "asymmetric";
const STRATEGY: &str = "strategy";
const CALC: &str = "strategy-calc";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentSpec {
    id: String,
    specialisation: String,
    resources: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UserSpec {
    name: String,
    agents: Vec<String>,
    topics: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    seed: u64,
    start: String,
    queries_per_user: usize,
    entities_per_domain: usize,
    computations: usize,
    memory_min_coverage: f32,
    kb_min_coverage: f32,
    templates: Vec<String>,
    computation_templates: Vec<String>,
    agents: Vec<AgentSpec>,
    users: Vec<UserSpec>,
}

/// One query: a fact from a domain's knowledge base, or a break-even computation.
#[derive(Clone, Copy, Debug)]
enum Ask {
    Fact(Question),
    Compute { fixed: u32, margin: u32 },
}

/// One user's figures, as the JSON line reports them.
#[derive(Clone, Debug, Serialize)]
pub struct UserRow {
    pub user: String,
    pub agents: Vec<String>,
    pub queries: usize,
    pub shared_resource_calls: usize,
    pub isolated_resource_calls: usize,
    pub shared_accuracy: f64,
    pub isolated_accuracy: f64,
}

/// The JSON line.
#[derive(Clone, Debug, Serialize)]
pub struct Output {
    pub users: Vec<UserRow>,
    pub shared_resource_calls: usize,
    pub isolated_resource_calls: usize,
    pub violations: usize,
}

struct Setup {
    fixture: Fixture,
    corpus: Corpus,
    /// Domain name → index in the corpus.
    topics: BTreeMap<String, usize>,
    resources: BTreeMap<String, Arc<dyn Resource>>,
}

impl Setup {
    fn load(root: &Path) -> Result<Setup> {
        let fixture: Fixture = load(root, NAME)?;
        let all = domains(root)?;
        let mut wanted = Vec::new();
        for user in &fixture.users {
            for topic in &user.topics {
                if topic != STRATEGY && !wanted.contains(topic) {
                    wanted.push(topic.clone());
                }
            }
        }
        let specs = wanted
            .iter()
            .map(|name| {
                all.iter()
                    .find(|d| &d.name == name)
                    .cloned()
                    .with_context(|| format!("topic {name} is not a domain in domains.toml"))
            })
            .collect::<Result<Vec<_>>>()?;
        let corpus = Corpus::generate(
            &specs,
            fixture.entities_per_domain,
            &mut fastrand::Rng::with_seed(fixture.seed),
        );
        let mut resources: BTreeMap<String, Arc<dyn Resource>> = BTreeMap::new();
        for (d, spec) in specs.iter().enumerate() {
            resources.insert(
                spec.resource(),
                Arc::new(corpus.knowledge_base(d, fixture.kb_min_coverage)?),
            );
        }
        resources.insert(
            CALC.to_owned(),
            Arc::new(Computation::new(
                ResourceId::new(CALC)?,
                "break-even volume, fixed cost, unit margin: strategic computation",
                break_even,
            )),
        );
        let topics = wanted
            .into_iter()
            .enumerate()
            .map(|(i, t)| (t, i))
            .collect();
        Ok(Setup {
            fixture,
            corpus,
            topics,
            resources,
        })
    }

    fn text(&self, ask: Ask, template: usize) -> String {
        match ask {
            Ask::Fact(q) => {
                let t = &self.fixture.templates;
                self.corpus.text(q, &t[template % t.len()])
            }
            Ask::Compute { fixed, margin } => {
                let t = &self.fixture.computation_templates;
                t[template % t.len()]
                    .replace("{fixed}", &fixed.to_string())
                    .replace("{margin}", &margin.to_string())
            }
        }
    }

    fn gold(&self, ask: Ask) -> String {
        match ask {
            Ask::Fact(q) => self.corpus.gold(q).to_owned(),
            Ask::Compute { fixed, margin } => fixed.div_ceil(margin).to_string(),
        }
    }

    fn oracle(&self, ask: Ask) -> Option<&dyn Resource> {
        let name = match ask {
            Ask::Fact(q) => self.corpus.domains[q.domain].spec.resource(),
            Ask::Compute { .. } => CALC.to_owned(),
        };
        self.resources.get(&name).map(|r| r.as_ref())
    }

    /// Every user's queries in asking order (round robin): `(user index, ask, template)`.
    fn plan(&self) -> Result<Vec<(usize, Ask, usize)>> {
        let f = &self.fixture;
        let mut rng = fastrand::Rng::with_seed(f.seed.wrapping_add(1));
        let computations: Vec<Ask> = (0..f.computations)
            .map(|_| Ask::Compute {
                fixed: rng.u32(10..200) * 100,
                margin: rng.u32(3..60),
            })
            .collect();
        let questions = self.corpus.questions();
        let mut lists = Vec::new();
        for (u, user) in f.users.iter().enumerate() {
            let mut pool: Vec<Ask> = Vec::new();
            for topic in &user.topics {
                if topic == STRATEGY {
                    pool.extend(computations.iter().copied());
                } else {
                    let d = self.topics[topic];
                    pool.extend(
                        questions
                            .iter()
                            .filter(|q| q.domain == d)
                            .map(|q| Ask::Fact(*q)),
                    );
                }
            }
            ensure!(!pool.is_empty(), "user {} asks about nothing", user.name);
            rng.shuffle(&mut pool);
            let list: Vec<(usize, Ask, usize)> = (0..f.queries_per_user)
                .map(|j| (u, pool[j % pool.len()], rng.usize(..4)))
                .collect();
            lists.push(list);
        }
        let mut order = Vec::new();
        for j in 0..f.queries_per_user {
            for list in &lists {
                order.push(list[j]);
            }
        }
        Ok(order)
    }

    fn run_once(
        &self,
        sharing: Sharing,
        queries: &[(usize, Ask, usize)],
    ) -> Result<(Vec<QueryRecord>, usize)> {
        let f = &self.fixture;
        let users: Vec<UserId> = f
            .users
            .iter()
            .map(|u| UserId::new(&u.name))
            .collect::<Result<_, _>>()?;
        let mut principals: Vec<Principal> = users.iter().map(|u| Principal::User(*u)).collect();
        for name in self.resources.keys() {
            principals.push(Principal::Resource(ResourceId::new(name)?));
        }
        let mut team = Vec::new();
        let mut edges = Vec::new();
        for spec in &f.agents {
            let agent = AgentId::new(&spec.id)?;
            principals.push(Principal::Agent(agent));
            let mut tools = Vec::new();
            for name in &spec.resources {
                let Some(resource) = self.resources.get(name) else {
                    bail!(
                        "agent {} names resource {name}, which the fixture does not define",
                        spec.id
                    );
                };
                tools.push(resource.clone());
                edges.push(Edge::Access {
                    agent,
                    resource: resource.id(),
                });
            }
            team.push(Specialist::new(agent, spec.specialisation.clone(), tools));
        }
        for (user, spec) in users.iter().zip(&f.users) {
            for name in &spec.agents {
                edges.push(Edge::Invoke {
                    user: *user,
                    agent: AgentId::new(name)?,
                });
            }
        }
        let system = SystemPolicy {
            global_writers: team.iter().map(|s| s.id).collect(),
        };
        let mut wiring = wire(
            Timestamp::parse(&f.start)?,
            team,
            system,
            CollabConfig {
                sharing,
                min_match: f.memory_min_coverage,
                ..CollabConfig::default()
            },
            None,
        )?;
        wiring.register(principals)?;
        wiring.grant(edges)?;
        let mut records = Vec::new();
        for &(user, ask, template) in queries {
            let text = self.text(ask, template);
            let (_, record) = wiring.ask(users[user], &text, &self.gold(ask), self.oracle(ask))?;
            records.push(record);
        }
        Ok((records, wiring.check()?.violations.len()))
    }
}

/// Runs the scenario shared and isolated.
pub fn compute(root: &Path) -> Result<Output> {
    let setup = Setup::load(root)?;
    let queries = setup.plan()?;
    let (shared, v1) = setup.run_once(Sharing::Shared, &queries)?;
    let (isolated, v2) = setup.run_once(Sharing::Isolated, &queries)?;
    let mut users = Vec::new();
    for spec in &setup.fixture.users {
        let id = UserId::new(&spec.name)?;
        let of = |records: &[QueryRecord]| {
            let mine: Vec<QueryRecord> = records.iter().filter(|r| r.user == id).cloned().collect();
            Summary::of(&mine)
        };
        let (s, i) = (of(&shared), of(&isolated));
        users.push(UserRow {
            user: spec.name.clone(),
            agents: spec.agents.clone(),
            queries: s.queries,
            shared_resource_calls: s.resource_calls,
            isolated_resource_calls: i.resource_calls,
            shared_accuracy: round3(s.accuracy),
            isolated_accuracy: round3(i.accuracy),
        });
    }
    Ok(Output {
        users,
        shared_resource_calls: Summary::of(&shared).resource_calls,
        isolated_resource_calls: Summary::of(&isolated).resource_calls,
        violations: v1 + v2,
    })
}

pub fn run(root: &Path, json: bool) -> Result<()> {
    let output = compute(root)?;
    println!(
        "scenario {NAME}: four roles with the paper's user→agent and agent→resource tables; shared vs isolated findings"
    );
    let header = [
        "user",
        "may invoke",
        "queries",
        "calls shared",
        "calls isolated",
        "acc shared",
        "acc isolated",
    ];
    let rows: Vec<Vec<String>> = output
        .users
        .iter()
        .map(|u| {
            vec![
                u.user.clone(),
                u.agents.join(","),
                u.queries.to_string(),
                u.shared_resource_calls.to_string(),
                u.isolated_resource_calls.to_string(),
                f3(u.shared_accuracy),
                f3(u.isolated_accuracy),
            ]
        })
        .collect();
    print_table(&header, &rows);
    println!(
        "resource calls: {} shared, {} isolated; violations: {}",
        output.shared_resource_calls, output.isolated_resource_calls, output.violations
    );
    let report = Report {
        title: format!("scenario {NAME}"),
        blocks: vec![
            Block::Text(
                "researcher → market agent; analyst → finance and decision agents; logistics lead → logistics and finance agents; \
                 director → all four. Market, finance and logistics agents reach their own knowledge base and the strategic \
                 computation; the decision agent reaches all four resources."
                    .into(),
            ),
            Block::Table {
                header: header.iter().map(|h| h.to_string()).collect(),
                rows,
            },
            Block::Bars {
                title: "resource calls per user".into(),
                y_label: "resource calls".into(),
                categories: output.users.iter().map(|u| u.user.clone()).collect(),
                series: vec![
                    (
                        "shared".into(),
                        output.users.iter().map(|u| u.shared_resource_calls as f64).collect(),
                    ),
                    (
                        "isolated".into(),
                        output.users.iter().map(|u| u.isolated_resource_calls as f64).collect(),
                    ),
                ],
            },
            Block::Text(format!("Checker violations: {}.", output.violations)),
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
        insta::assert_json_snapshot!(compute(&crate::repo_root()).unwrap());
    }
}
