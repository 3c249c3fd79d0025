//! The loop end to end on an in-memory store: memory first with tool fallback, the read
//! rule deciding what a finding reaches, promotion by votes, and the independent checker.

use std::sync::Arc;

use colmem_access::SystemPolicy;
use colmem_ama::{Pipeline, PipelineConfig, Roles};
use colmem_collab::{
    Checker, CollabConfig, Collaboration, Computation, Document, Event, KnowledgeBase,
    OfflineCoordinator, Resource, SelectionConfig, Sharing, Source, Specialist, break_even,
};
use colmem_core::{
    AccessChange, AgentId, Draft, Edge, Granularity, GroupId, GroupKind, Kind, LogicalClock,
    Member, Principal, ResourceId, Scope, Timestamp, UserId,
};
use colmem_index::{FlatIndex, HybridConfig, HybridIndex, MemoryBm25};
use colmem_llm::{Embedder, OfflineConfig, OfflineEmbedder};
use colmem_store::{FragmentStore, SqliteStore, StoreConfig};

struct World {
    clock: Arc<LogicalClock>,
    collab: Collaboration,
}

fn user(name: &str) -> UserId {
    UserId::new(name).unwrap()
}
fn agent(name: &str) -> AgentId {
    AgentId::new(name).unwrap()
}
fn resource(name: &str) -> ResourceId {
    ResourceId::new(name).unwrap()
}

fn finance_kb() -> Arc<dyn Resource> {
    let docs = [("Valmora", "AA"), ("Tessel", "BB"), ("Korrin", "CCC")]
        .into_iter()
        .map(|(entity, value)| Document {
            text: format!("The credit rating of {entity} is {value}."),
            answer: value.into(),
        })
        .collect();
    Arc::new(KnowledgeBase::new(resource("finance-kb"), "credit rating", docs).unwrap())
}

fn market_kb() -> Arc<dyn Resource> {
    let docs = vec![Document {
        text: "The main competitor of Valmora is Corvix.".into(),
        answer: "Corvix".into(),
    }];
    Arc::new(KnowledgeBase::new(resource("market-kb"), "main competitor", docs).unwrap())
}

/// alice and bob; finance-agent (finance-kb, strategy-calc) and market-agent (market-kb);
/// alice may invoke finance-agent, bob both.
fn world(sharing: Sharing) -> World {
    let clock = Arc::new(LogicalClock::new(
        Timestamp::parse("2026-04-01T09:00:00Z").unwrap(),
    ));
    let store: Arc<dyn FragmentStore> = Arc::new(
        SqliteStore::open_in_memory(StoreConfig {
            clock: clock.clone(),
            ..StoreConfig::default()
        })
        .unwrap(),
    );
    let embedder: Arc<dyn Embedder> =
        Arc::new(OfflineEmbedder::new(OfflineConfig::default()).unwrap());
    let index = Arc::new(HybridIndex::new(
        Arc::new(FlatIndex::new(embedder.dim())),
        Some(Arc::new(MemoryBm25::new())),
        HybridConfig::default(),
    ));
    let pipeline = Arc::new(Pipeline::new(
        store.clone(),
        index,
        embedder,
        Roles::offline(),
        PipelineConfig::default(),
    ));
    let calc: Arc<dyn Resource> = Arc::new(Computation::new(
        resource("strategy-calc"),
        "break-even volume fixed cost unit margin",
        break_even,
    ));
    let team = vec![
        Specialist::new(
            agent("finance-agent"),
            "finance: credit rating, break-even volume",
            vec![finance_kb(), calc],
        ),
        Specialist::new(
            agent("market-agent"),
            "market: main competitor",
            vec![market_kb()],
        ),
    ];
    let system = SystemPolicy {
        global_writers: [agent("finance-agent"), agent("market-agent")].into(),
    };
    let mut collab = Collaboration::new(
        pipeline,
        store,
        system,
        clock.clone(),
        team,
        Box::new(OfflineCoordinator::new(SelectionConfig::default())),
        CollabConfig {
            sharing,
            ..CollabConfig::default()
        },
    )
    .unwrap();
    let principals = [
        Principal::User(user("alice")),
        Principal::User(user("bob")),
        Principal::Agent(agent("finance-agent")),
        Principal::Agent(agent("market-agent")),
        Principal::Resource(resource("finance-kb")),
        Principal::Resource(resource("market-kb")),
        Principal::Resource(resource("strategy-calc")),
    ];
    for principal in principals {
        collab.apply(AccessChange::Register { principal }).unwrap();
    }
    let edges = [
        Edge::Invoke {
            user: user("alice"),
            agent: agent("finance-agent"),
        },
        Edge::Invoke {
            user: user("bob"),
            agent: agent("finance-agent"),
        },
        Edge::Invoke {
            user: user("bob"),
            agent: agent("market-agent"),
        },
        Edge::Access {
            agent: agent("finance-agent"),
            resource: resource("finance-kb"),
        },
        Edge::Access {
            agent: agent("finance-agent"),
            resource: resource("strategy-calc"),
        },
        Edge::Access {
            agent: agent("market-agent"),
            resource: resource("market-kb"),
        },
    ];
    for edge in edges {
        collab
            .apply(AccessChange::Grant { edge, until: None })
            .unwrap();
    }
    clock.advance(1_000);
    World { clock, collab }
}

fn check(collab: &Collaboration, events: &[Event]) -> colmem_collab::CheckReport {
    let checker = Checker::new(&collab.store().access_events().unwrap())
        .with_global_writers(collab.system().global_writers.iter().copied());
    checker.check(events, &|id| collab.store().get(id).ok())
}

#[test]
fn memory_first_reuses_a_shared_finding_across_users() {
    let w = world(Sharing::Shared);
    let first = w
        .collab
        .ask(user("alice"), "What is the credit rating of Valmora?")
        .unwrap();
    assert_eq!(first.answer.as_deref(), Some("AA"));
    assert_eq!(first.tool_calls, 1);
    assert!(matches!(first.answers[0].source, Source::Tool { .. }));
    w.clock.advance(1_000);
    let second = w
        .collab
        .ask(user("bob"), "Which credit rating does Valmora have?")
        .unwrap();
    assert_eq!(second.answer.as_deref(), Some("AA"));
    assert_eq!(second.tool_calls, 0, "a paraphrase is answered from memory");
    assert!(second.from_memory());
    // Another entity is not the same question: the tool is called.
    let third = w
        .collab
        .ask(user("bob"), "What is the credit rating of Tessel?")
        .unwrap();
    assert_eq!(third.answer.as_deref(), Some("BB"));
    assert_eq!(third.tool_calls, 1);
    let report = check(&w.collab, &w.collab.events());
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert_eq!(report.tool_calls, 2);
    assert!(report.returned > 0);
}

/// The shared loop under write policies whose shared part blocks `pattern`.
fn shared_blocking(pattern: &str) -> Collaboration {
    let mut config = colmem_access::WritePolicies::default();
    config.system.shared.transforms = vec![colmem_access::Transform::Block {
        pattern: pattern.to_owned(),
    }];
    let policies =
        colmem_access::WritePolicySet::new(config, colmem_access::PseudonymKey::new([5; 32]))
            .unwrap();
    world(Sharing::Shared).collab.with_write_policies(policies)
}

/// Under write policies a shared finding's keywords are drawn from the query as the
/// shared part writes it: a query the shared part blocks gives none (its other words
/// each pass the policy alone, and were kept).
#[test]
fn a_shared_findings_keywords_pass_the_write_policy() {
    let collab = shared_blocking("(?i)confidential");
    let first = collab
        .ask(
            user("alice"),
            "Confidential: what is the credit rating of Valmora?",
        )
        .unwrap();
    assert_eq!(first.answer.as_deref(), Some("AA"));
    let written: Vec<colmem_core::FragmentId> = collab
        .events()
        .into_iter()
        .flat_map(|e| match e {
            Event::MemoryWrite { written, .. } => written,
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(written.len(), 1);
    let finding = collab.store().get(written[0]).unwrap();
    assert_eq!(finding.scope, Scope::Global);
    assert!(finding.content.contains("Valmora"), "{finding:?}");
    assert!(finding.keywords.is_empty(), "{finding:?}");
}

/// A finding the write policy withholds from its scope is answered, not remembered:
/// the query does not fail after the tool has answered it.
#[test]
fn a_withheld_finding_is_answered_and_not_remembered() {
    let collab = shared_blocking("(?i)valmora");
    let outcome = collab
        .ask(user("alice"), "What is the credit rating of Valmora?")
        .unwrap();
    assert_eq!(outcome.answer.as_deref(), Some("AA"));
    assert!(
        collab
            .events()
            .iter()
            .all(|e| !matches!(e, Event::MemoryWrite { .. }))
    );
}

#[test]
fn isolated_memory_is_not_reused_by_another_user() {
    let w = world(Sharing::Isolated);
    w.collab
        .ask(user("alice"), "What is the credit rating of Valmora?")
        .unwrap();
    w.clock.advance(1_000);
    let bob = w
        .collab
        .ask(user("bob"), "Which credit rating does Valmora have?")
        .unwrap();
    assert_eq!(bob.answer.as_deref(), Some("AA"));
    assert_eq!(bob.tool_calls, 1);
    let alice = w
        .collab
        .ask(user("alice"), "Tell me the credit rating of Valmora.")
        .unwrap();
    assert_eq!(alice.tool_calls, 0, "a user reuses their own findings");
}

#[test]
fn the_coordinator_never_reaches_an_agent_the_user_may_not_invoke() {
    let w = world(Sharing::Shared);
    let outcome = w
        .collab
        .ask(user("alice"), "Who is the main competitor of Valmora?")
        .unwrap();
    assert!(!outcome.agents.contains(&agent("market-agent")));
    assert_eq!(outcome.answer, None);
    assert_eq!(outcome.tool_calls, 0);
    let bob = w
        .collab
        .ask(user("bob"), "Who is the main competitor of Valmora?")
        .unwrap();
    assert_eq!(bob.agents, vec![agent("market-agent")]);
    assert_eq!(bob.answer.as_deref(), Some("Corvix"));
}

#[test]
fn a_revoked_resource_hides_its_findings_and_stops_its_calls() {
    let mut w = world(Sharing::Shared);
    w.collab
        .ask(user("alice"), "What is the credit rating of Valmora?")
        .unwrap();
    w.clock.advance(1_000);
    w.collab
        .apply(AccessChange::Revoke {
            edge: Edge::Access {
                agent: agent("finance-agent"),
                resource: resource("finance-kb"),
            },
        })
        .unwrap();
    w.clock.advance(1_000);
    let outcome = w
        .collab
        .ask(user("bob"), "Which credit rating does Valmora have?")
        .unwrap();
    assert_eq!(
        outcome.answer, None,
        "rule 4 hides the finding, and the tool is not usable"
    );
    assert_eq!(outcome.tool_calls, 0);
    let report = check(&w.collab, &w.collab.events());
    assert!(report.violations.is_empty(), "{:?}", report.violations);
}

#[test]
fn the_checker_catches_an_injected_forbidden_read_and_tool_call() {
    let w = world(Sharing::Shared);
    w.collab
        .ask(user("alice"), "What is the credit rating of Valmora?")
        .unwrap();
    let finding = w
        .collab
        .events()
        .iter()
        .find_map(|e| match e {
            Event::MemoryWrite { written, .. } => written.first().copied(),
            _ => None,
        })
        .unwrap();
    let mut events = w.collab.events();
    assert!(check(&w.collab, &events).violations.is_empty());
    let at = w.clock.advance(1_000);
    // market-agent may serve bob but may not use finance-kb, which the finding came from.
    events.push(Event::MemoryRead {
        at,
        user: user("bob"),
        agent: agent("market-agent"),
        returned: vec![finding],
    });
    let report = check(&w.collab, &events);
    assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
    assert!(report.violations[0].reason.contains("finance-kb"));
    // alice may not invoke market-agent at all.
    events.push(Event::ToolCall {
        at,
        user: user("alice"),
        agent: agent("market-agent"),
        resource: resource("market-kb"),
    });
    // The finding did not exist before it was written.
    events.push(Event::MemoryRead {
        at: Timestamp::parse("2026-04-01T08:00:00Z").unwrap(),
        user: user("bob"),
        agent: agent("finance-agent"),
        returned: vec![finding],
    });
    assert_eq!(check(&w.collab, &events).violations.len(), 3);
}

#[test]
fn a_helpful_private_trace_is_promoted_to_the_crew_by_votes() {
    let mut w = world(Sharing::Shared);
    let crew = GroupId::new("crew-loop").unwrap();
    w.collab
        .apply(AccessChange::Register {
            principal: Principal::Group(crew, GroupKind::Crew),
        })
        .unwrap();
    for a in ["finance-agent", "market-agent"] {
        w.collab
            .apply(AccessChange::Grant {
                edge: Edge::Member {
                    member: Member::Agent(agent(a)),
                    group: crew,
                },
                until: None,
            })
            .unwrap();
    }
    w.clock.advance(1_000);
    let trace = w
        .collab
        .write(
            user("bob"),
            agent("finance-agent"),
            vec![Draft::new(
                "check the auditor before the rating",
                Granularity::Fact,
                Kind::Trace,
            )],
        )
        .unwrap()[0];
    let seen_by = |a: &str| {
        w.collab
            .visible(user("bob"), agent(a))
            .unwrap()
            .iter()
            .any(|f| f.content.contains("auditor before"))
    };
    assert!(seen_by("finance-agent"));
    assert!(!seen_by("market-agent"), "a trace stays with its agent");
    // market-agent cannot even vote for what it cannot read.
    assert!(
        w.collab
            .vote_helpful(user("bob"), agent("market-agent"), trace, crew)
            .is_err()
    );
    let mut promoted = None;
    for _ in 0..3 {
        w.clock.advance(1_000);
        promoted = w
            .collab
            .vote_helpful(user("bob"), agent("finance-agent"), trace, crew)
            .unwrap();
    }
    let promoted = promoted.expect("the third vote promotes");
    // Once promoted to the crew, a fourth vote promotes nothing again.
    w.clock.advance(1_000);
    assert_eq!(
        w.collab
            .vote_helpful(user("bob"), agent("finance-agent"), trace, crew)
            .unwrap(),
        None
    );
    let copy = w.collab.store().get(promoted).unwrap();
    assert_eq!(copy.scope, Scope::Group(crew));
    assert_eq!(copy.provenance.source.parents, vec![trace]);
    assert!(seen_by("market-agent"));
    let report = check(&w.collab, &w.collab.events());
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert!(
        w.collab
            .events()
            .iter()
            .any(|e| matches!(e, Event::Promotion { votes: 3, .. }))
    );
}
