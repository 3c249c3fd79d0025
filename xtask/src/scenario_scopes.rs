//! `cargo xtask scenario scopes`: Aegis-style crew, team and global scopes. Two crews in
//! one team and an agent outside it; the scout writes an observation (default: its crew),
//! a reasoning trace (default: the scout alone), a team note and a global note. Then the
//! trace helps the scout in a series of tasks, each a helpful vote; at the threshold it is
//! promoted to the crew by an explicit write through the write rule, recorded in the store's
//! audit chain. Reports who sees what before and after, the promotion, and the checker.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result, ensure};
use colmem_access::SystemPolicy;
use colmem_collab::{CollabConfig, Specialist};
use colmem_core::{
    AgentId, AuditEvent, Draft, Edge, FragmentId, Granularity, GroupId, GroupKind, Kind, Member,
    Principal, Scope, Timestamp, UserId,
};
use colmem_store::AuditStatus;
use serde::{Deserialize, Serialize};

use crate::scenario_report::{Block, Report, print_table};
use crate::scenario_world::{Wiring, load, wire};

const NAME: &str = "scopes";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CrewSpec {
    name: String,
    agents: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    start: String,
    user: String,
    /// A second user who may invoke every agent: what the first tells of themself
    /// stays theirs, while a crew's finding reaches the crew's agents for anyone.
    other_user: String,
    team: String,
    outsider: String,
    global_writers: Vec<String>,
    votes_to_promote: usize,
    tasks: usize,
    crews: Vec<CrewSpec>,
}

/// One written fragment and who could read it.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub fragment: String,
    pub kind: String,
    pub scope: String,
    /// Agents that see it before the promotion (`None`: written after).
    pub before: Option<Vec<String>>,
    pub after: Vec<String>,
    /// Agents through which the other user sees it, after the promotion.
    pub other_user: Vec<String>,
}

/// The promotion.
#[derive(Clone, Debug, Serialize)]
pub struct Promotion {
    pub votes: usize,
    pub promoted_at_task: usize,
    pub scope: String,
    /// The promoted copy names the trace as its parent.
    pub parent_is_trace: bool,
    /// The store's audit chain holds the promoted copy's write and verifies intact.
    pub audited: bool,
}

/// The JSON line.
#[derive(Clone, Debug, Serialize)]
pub struct Output {
    pub agents: Vec<String>,
    pub fragments: Vec<Row>,
    pub promotion: Promotion,
    pub violations: usize,
}

/// Which of `agents` see each fragment, serving `user`; every listing is a logged, audited read.
fn visibility(
    wiring: &Wiring,
    user: UserId,
    agents: &[AgentId],
) -> Result<BTreeMap<FragmentId, Vec<String>>> {
    let mut seen: BTreeMap<FragmentId, Vec<String>> = BTreeMap::new();
    for agent in agents {
        for fragment in wiring.collab.visible(user, *agent)? {
            seen.entry(fragment.id).or_default().push(agent.to_string());
        }
    }
    Ok(seen)
}

pub fn compute(root: &Path) -> Result<Output> {
    let f: Fixture = load(root, NAME)?;
    let user = UserId::new(&f.user)?;
    let other = UserId::new(&f.other_user)?;
    let team = GroupId::new(&f.team)?;
    let outsider = AgentId::new(&f.outsider)?;
    let mut agents = Vec::new();
    let mut principals = vec![
        Principal::User(user),
        Principal::User(other),
        Principal::Group(team, GroupKind::Team),
    ];
    let mut edges = Vec::new();
    let mut crews = Vec::new();
    for crew in &f.crews {
        let id = GroupId::new(&crew.name)?;
        crews.push(id);
        principals.push(Principal::Group(id, GroupKind::Crew));
        edges.push(Edge::Member {
            member: Member::Group(id),
            group: team,
        });
        for name in &crew.agents {
            let agent = AgentId::new(name)?;
            agents.push(agent);
            principals.push(Principal::Agent(agent));
            edges.push(Edge::Member {
                member: Member::Agent(agent),
                group: id,
            });
        }
    }
    agents.push(outsider);
    principals.push(Principal::Agent(outsider));
    for agent in &agents {
        for user in [user, other] {
            edges.push(Edge::Invoke {
                user,
                agent: *agent,
            });
        }
    }
    let scout = *agents.first().context("the fixture names no crew agents")?;
    let crew = *crews.first().context("the fixture names no crew")?;
    let team_members: Vec<Specialist> = agents
        .iter()
        .map(|a| Specialist::new(*a, format!("{a}"), Vec::new()))
        .collect();
    let system = SystemPolicy {
        global_writers: f
            .global_writers
            .iter()
            .map(|a| AgentId::new(a))
            .collect::<Result<_, _>>()?,
    };
    let mut wiring = wire(
        Timestamp::parse(&f.start)?,
        team_members,
        system,
        CollabConfig {
            votes_to_promote: f.votes_to_promote,
            ..CollabConfig::default()
        },
        None,
    )?;
    wiring.register(principals)?;
    wiring.grant(edges)?;
    wiring.clock.advance(60_000);

    let note = |text: &str, kind: Kind, scope: Option<Scope>| {
        let mut draft = Draft::new(text, Granularity::Fact, kind);
        draft.scope = scope;
        draft
    };
    let written = wiring.collab.write(
        user,
        scout,
        vec![
            note(
                "the east gate is unguarded after dusk",
                Kind::Observation,
                None,
            ),
            note(
                "plan: check the gate log before the patrol roster, it saves a round trip",
                Kind::Trace,
                None,
            ),
            note(
                "team briefing moves to 08:00",
                Kind::Observation,
                Some(Scope::Group(team)),
            ),
            note(
                "site-wide: badges expire on Friday",
                Kind::Observation,
                Some(Scope::Global),
            ),
            note(
                "operator: my night shifts end in March, then I move to days",
                Kind::Conversation,
                None,
            ),
        ],
    )?;
    let [observation, trace, team_note, global_note, personal] = written[..] else {
        anyhow::bail!("the scout's five notes were not all written");
    };
    let store = wiring.collab.store().clone();
    ensure!(
        store.get(observation)?.scope == Scope::Group(crew),
        "an observation's default scope is the writer's crew"
    );
    ensure!(
        store.get(trace)?.scope == Scope::Agent,
        "a trace's default scope is the writing agent"
    );
    ensure!(
        store.get(personal)?.scope == Scope::User,
        "what a user tells of themself stays with that user, whatever crews the agent is in"
    );
    wiring.clock.advance(60_000);
    let before = visibility(&wiring, user, &agents)?;

    let mut promoted = None;
    let mut promoted_at_task = 0;
    for task in 1..=f.tasks {
        wiring.clock.advance(60_000);
        if let Some(copy) = wiring.collab.vote_helpful(user, scout, trace, crew)? {
            promoted = Some(copy);
            promoted_at_task = task;
        }
    }
    let promoted =
        promoted.context("the trace was never promoted: check votes_to_promote and tasks")?;
    wiring.clock.advance(60_000);
    let after = visibility(&wiring, user, &agents)?;
    let others = visibility(&wiring, other, &agents)?;
    ensure!(
        !others.contains_key(&personal),
        "the other user read what the operator told of themself"
    );
    ensure!(
        others.get(&observation).is_some_and(|a| !a.is_empty()),
        "the crew's finding did not reach the crew's agents serving the other user"
    );

    let copy = store.get(promoted)?;
    let entries = store.audit_entries(0, usize::MAX)?;
    let write_logged = entries.iter().any(|e| {
        matches!(&e.event, AuditEvent::Write { fragments, .. } if fragments.iter().any(|(id, _)| *id == promoted))
    });
    let intact = matches!(store.verify_audit()?, AuditStatus::Intact { .. });
    let names = [
        (observation, "observation"),
        (trace, "trace"),
        (team_note, "team note"),
        (global_note, "global note"),
        (personal, "user's own words"),
        (promoted, "promoted trace"),
    ];
    let mut rows = Vec::new();
    for (id, name) in names {
        let fragment = store.get(id)?;
        rows.push(Row {
            fragment: name.to_owned(),
            kind: fragment.kind.as_str().to_owned(),
            scope: fragment.scope.to_string(),
            before: (id != promoted).then(|| before.get(&id).cloned().unwrap_or_default()),
            after: after.get(&id).cloned().unwrap_or_default(),
            other_user: others.get(&id).cloned().unwrap_or_default(),
        });
    }
    let violations = wiring.check()?.violations.len();
    let promotion = Promotion {
        votes: f.votes_to_promote,
        promoted_at_task,
        scope: copy.scope.to_string(),
        parent_is_trace: copy.provenance.source.parents == vec![trace],
        audited: write_logged && intact,
    };
    Ok(Output {
        agents: agents.iter().map(|a| a.to_string()).collect(),
        fragments: rows,
        promotion,
        violations,
    })
}

/// Which agents see each fragment: for the user before or after the promotion, or
/// for the other user after it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Seen {
    Before,
    After,
    OtherUser,
}

fn grid(output: &Output, when: Seen) -> Vec<Vec<String>> {
    output
        .fragments
        .iter()
        .filter(|r| when != Seen::Before || r.before.is_some())
        .map(|r| {
            let seen: BTreeSet<&String> = match when {
                Seen::Before => r.before.iter().flatten().collect(),
                Seen::After => r.after.iter().collect(),
                Seen::OtherUser => r.other_user.iter().collect(),
            };
            let mut row = vec![r.fragment.clone(), r.kind.clone(), r.scope.clone()];
            row.extend(output.agents.iter().map(|a| {
                if seen.contains(a) {
                    "yes".to_owned()
                } else {
                    "-".to_owned()
                }
            }));
            row
        })
        .collect()
}

pub fn run(root: &Path, json: bool) -> Result<()> {
    let output = compute(root)?;
    println!(
        "scenario {NAME}: crews in a team, an outsider, defaults by kind, and promotion by votes"
    );
    let mut header: Vec<String> = vec!["fragment".into(), "kind".into(), "scope".into()];
    header.extend(output.agents.iter().cloned());
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    println!("\nbefore the promotion (operator served by each agent):");
    let before = grid(&output, Seen::Before);
    print_table(&header_refs, &before);
    println!("\nafter the promotion:");
    let after = grid(&output, Seen::After);
    print_table(&header_refs, &after);
    println!("\nthe other user (visitor) served by each agent, after the promotion:");
    let others = grid(&output, Seen::OtherUser);
    print_table(&header_refs, &others);
    let p = &output.promotion;
    println!(
        "\npromotion: {} helpful votes → {} at task {}; parent is the trace: {}; audited: {}",
        p.votes, p.scope, p.promoted_at_task, p.parent_is_trace, p.audited
    );
    println!("violations: {}", output.violations);
    let report = Report {
        title: format!("scenario {NAME}"),
        blocks: vec![
            Block::Text(
                "crew-a (scout, analyst) and crew-b (planner, builder) form team-1; the auditor is outside it. \
                 Observations default to the writer's crew, traces to the writing agent, and what the operator \
                 tells of themself (kind conversation) to the operator alone: the visitor, who may invoke every agent, \
                 reads the crew's finding through its agents but never the operator's own words."
                    .into(),
            ),
            Block::Text("Before the promotion:".into()),
            Block::Table {
                header: header.clone(),
                rows: before,
            },
            Block::Text("After the promotion:".into()),
            Block::Table {
                header: header.clone(),
                rows: after,
            },
            Block::Text("The other user, after the promotion:".into()),
            Block::Table {
                header: header.clone(),
                rows: others,
            },
            Block::Bars {
                title: "agents that see each fragment".into(),
                y_label: "agents".into(),
                categories: output.fragments.iter().map(|r| r.fragment.clone()).collect(),
                series: vec![
                    (
                        "before".into(),
                        output
                            .fragments
                            .iter()
                            .map(|r| r.before.as_ref().map_or(0.0, |b| b.len() as f64))
                            .collect(),
                    ),
                    (
                        "after".into(),
                        output.fragments.iter().map(|r| r.after.len() as f64).collect(),
                    ),
                ],
            },
            Block::Text(format!(
                "Promotion: {} helpful votes promote the trace to {} at task {}; the copy names the trace as its parent ({}); \
                 its write is in the store's audit chain, which verifies intact ({}). Checker violations: {}.",
                p.votes, p.scope, p.promoted_at_task, p.parent_is_trace, p.audited, output.violations
            )),
        ],
    };
    report.publish(root, NAME, json, &output, output.violations)?;
    ensure!(p.audited, "the promotion is not in the audit chain");
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
