//! Property tests: the budget is never exceeded, conflicting cards are never composed
//! together, expansion never crosses a conflict edge, and a reader sees exactly the
//! cards that an oracle written here from DESIGN section 3 allows, created before it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use colmem_access::{AccessGraph, Context};
use colmem_cards::read::{self, ReadInput};
use colmem_cards::{
    BankConfig, Budget, Card, CardBank, CardGraph, Needs, ReadConfig, Roles, TaskContext,
};
use colmem_core::{
    AccessChange, AccessEvent, AgentId, CardEdge, CardFields, CardRelation, CardSign, Edge,
    Fragment, FragmentId, Granularity, GroupId, GroupKind, Kind, LogicalClock, Member, NewFragment,
    Principal, Provenance, ResourceId, Scope, Source, Timestamp, UserId, Validity,
};
use colmem_llm::{ApproxTokenCounter, OfflineConfig, OfflineEmbedder, TokenCounter};
use colmem_store::{CardWrite, FragmentStore, SqliteStore, StoreConfig};
use proptest::prelude::*;

const WORDS: [&str; 8] = [
    "crate", "parcel", "fence", "post", "speed", "price", "day", "carton",
];
const CONDITIONS: [&str; 2] = ["both ends count", "partial loads allowed"];

#[derive(Clone, Debug)]
struct CardSpec {
    words: Vec<usize>,
    vector: Vec<f32>,
    negative: bool,
    decision: usize,
    value: usize,
    precondition: Option<usize>,
    credibility: f32,
    long: usize,
}

fn card_spec() -> impl Strategy<Value = CardSpec> {
    (
        prop::collection::vec(0..WORDS.len(), 1..4),
        prop::collection::vec(-1.0f32..1.0, 6),
        any::<bool>(),
        0..2usize,
        0..2usize,
        prop::option::of(0..CONDITIONS.len()),
        0.0f32..1.0,
        0..40usize,
    )
        .prop_map(
            |(words, vector, negative, decision, value, precondition, credibility, long)| {
                CardSpec {
                    words,
                    vector,
                    negative,
                    decision,
                    value,
                    precondition,
                    credibility,
                    long,
                }
            },
        )
}

fn fragment(id: u64) -> Fragment {
    Fragment {
        id: FragmentId(id),
        key: None,
        content: String::new(),
        granularity: Granularity::Card,
        kind: Kind::Observation,
        scope: Scope::Global,
        provenance: Provenance {
            created_at: Timestamp::from_millis(0),
            user: UserId::new("props-user").unwrap(),
            agents: BTreeSet::new(),
            resources: BTreeSet::new(),
            source: Source::default(),
        },
        validity: Validity::always(),
        keywords: Vec::new(),
        superseded_at: None,
        superseded_by: None,
        deleted_at: None,
    }
}

fn fields(spec: &CardSpec) -> CardFields {
    let topic: Vec<&str> = spec.words.iter().map(|w| WORDS[*w]).collect();
    let name = ["rounding", "endpoint"][spec.decision];
    let value = ["low", "high"][spec.value];
    let verb = if spec.negative { "avoid" } else { "use" };
    let applicability = match spec.precondition {
        Some(p) => format!(
            "tasks about {}; only when {}",
            topic.join(" "),
            CONDITIONS[p]
        ),
        None => format!("tasks about {}", topic.join(" ")),
    };
    CardFields {
        task: topic.join(" "),
        trigger: topic.join(" "),
        applicability,
        plan: format!("settle {name} first {}", "with care ".repeat(spec.long)),
        execution: format!("{verb} {name}={value}"),
        evaluation: format!("check the {} result", topic.join(" ")),
        sign: if spec.negative {
            CardSign::Negative
        } else {
            CardSign::Positive
        },
    }
}

fn card(id: u64, spec: &CardSpec) -> Card {
    Card {
        id: FragmentId(id),
        fields: fields(spec),
        triggers: spec.words.iter().map(|w| WORDS[*w].to_owned()).collect(),
        credibility: spec.credibility,
        round: 0,
        sources: vec![format!("t{id}")],
        embedding: spec.vector.clone(),
        fragment: fragment(id),
    }
}

fn relation(kind: usize) -> CardRelation {
    match kind {
        0 => CardRelation::Supports,
        1 => CardRelation::Satisfies,
        2 => CardRelation::Conflicts,
        _ => CardRelation::Constrains {
            precondition: CONDITIONS[kind % 2].to_owned(),
        },
    }
}

fn edges_of(raw: &[(usize, usize, usize, f32)], n: usize) -> Vec<CardEdge> {
    raw.iter()
        .filter(|(a, b, _, _)| a % n != b % n)
        .map(|(a, b, kind, weight)| CardEdge {
            from: FragmentId((a % n) as u64 + 1),
            to: FragmentId((b % n) as u64 + 1),
            relation: relation(*kind),
            weight: *weight,
        })
        .collect()
}

fn raw_edges() -> impl Strategy<Value = Vec<(usize, usize, usize, f32)>> {
    prop::collection::vec((0..40usize, 0..40usize, 0..4usize, 0.0f32..1.0), 0..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn compositions_respect_the_budget_and_never_hold_both_sides_of_a_conflict(
        specs in prop::collection::vec(card_spec(), 1..16),
        raw in raw_edges(),
        task_words in prop::collection::vec(0..WORDS.len(), 1..4),
        task_vector in prop::collection::vec(-1.0f32..1.0, 6),
        live in prop::collection::vec(any::<bool>(), 2),
        tokens in 0usize..300,
        shares in (0.0f32..1.0, 0.0f32..1.0, 0.0f32..1.0),
        top_k in 1usize..8,
        hops in 0usize..4,
    ) {
        let cards: Vec<Card> = specs.iter().enumerate().map(|(i, s)| card(i as u64 + 1, s)).collect();
        let edges = edges_of(&raw, cards.len());
        let graph = CardGraph::new(cards.iter().map(|c| c.id), &edges);
        let task = TaskContext {
            task: task_words.iter().map(|w| WORDS[*w]).collect::<Vec<_>>().join(" "),
            live: CONDITIONS.iter().zip(&live).filter(|(_, on)| **on).map(|(c, _)| c.to_string()).collect(),
            round: 0,
        };
        let budget = Budget { tokens, planner: shares.0, executor: shares.1, evaluator: shares.2 };
        let config = ReadConfig { top_k, hops, min_score: 0.0, ..ReadConfig::default() };
        let counter = ApproxTokenCounter;
        let input = ReadInput {
            task: &task,
            embedding: &task_vector,
            needs: Needs::ALL,
            budget: &budget,
            config: &config,
            counter: &counter,
        };
        let composition = read::compose(&cards, &graph, &input);
        prop_assert!(composition.report.tokens_used <= tokens);
        if !composition.text.is_empty() {
            prop_assert!(counter.count(&composition.text) <= tokens);
        }
        let conflicts: BTreeSet<(FragmentId, FragmentId)> = edges
            .iter()
            .filter(|e| e.relation == CardRelation::Conflicts)
            .flat_map(|e| [(e.from, e.to), (e.to, e.from)])
            .collect();
        let directives = |id: FragmentId| {
            cards.iter().find(|c| c.id == id).map(|c| c.directives()).unwrap_or_default()
        };
        for a in &composition.cards {
            prop_assert!(composition.report.expanded.contains(&a.id));
            for b in &composition.cards {
                prop_assert!(!conflicts.contains(&(a.id, b.id)), "{:?} and {:?} conflict", a.id, b.id);
                // Nor do two composed cards contradict, edge or none.
                let contradict = directives(a.id)
                    .iter()
                    .any(|d| directives(b.id).iter().any(|e| d.contradicts(e)));
                prop_assert!(!contradict, "{:?} and {:?} contradict", a.id, b.id);
            }
        }
        for id in &composition.report.retrieved {
            prop_assert!(composition.report.expanded.contains(id));
        }
    }

    #[test]
    fn expansion_never_crosses_a_conflict_edge(
        n in 1usize..16,
        raw in raw_edges(),
        seeds in prop::collection::vec(0usize..16, 1..4),
        hidden in prop::collection::vec(0usize..16, 0..4),
        hops in 0usize..5,
        live in any::<bool>(),
    ) {
        let ids: Vec<FragmentId> = (1..=n as u64).map(FragmentId).collect();
        let edges = edges_of(&raw, n);
        let without: Vec<CardEdge> = edges.iter().filter(|e| e.relation != CardRelation::Conflicts).cloned().collect();
        let with_graph = CardGraph::new(ids.clone(), &edges);
        let without_graph = CardGraph::new(ids.clone(), &without);
        let visible: BTreeSet<FragmentId> = ids.iter().copied().filter(|id| !hidden.contains(&(id.0 as usize))).collect();
        let seeds: Vec<FragmentId> = seeds.iter().map(|s| FragmentId((s % n) as u64 + 1)).collect();
        let is_live = move |p: &str| live && p == CONDITIONS[0];
        let reached = with_graph.expand(&seeds, &visible, hops, &is_live);
        // Removing every conflict edge changes nothing: expansion never used one.
        prop_assert_eq!(&reached, &without_graph.expand(&seeds, &visible, hops, &is_live));
        // Each card reached at hop h > 0 has a passable, non-conflict edge from one reached at h − 1.
        let hop_of: BTreeMap<FragmentId, usize> = reached.iter().copied().collect();
        for (id, hop) in &reached {
            prop_assert!(visible.contains(id));
            prop_assert!(*hop <= hops);
            if *hop == 0 {
                prop_assert!(seeds.contains(id));
                continue;
            }
            let linked = edges.iter().any(|e| {
                let passable = match &e.relation {
                    CardRelation::Conflicts => false,
                    CardRelation::Constrains { precondition } => is_live(precondition),
                    _ => true,
                };
                let other = if e.to == *id { e.from } else if e.from == *id { e.to } else { return false };
                passable && hop_of.get(&other) == Some(&(hop - 1))
            });
            prop_assert!(linked, "{id:?} at hop {hop} has no passable edge from hop {}", hop - 1);
        }
    }
}

// The read-rule oracle: DESIGN section 3, written here from the test's own record of
// grants, sharing no code with colmem-access or ReadFilter.

#[derive(Clone, Debug)]
struct Grants {
    invoke: BTreeSet<(usize, usize)>,
    access: BTreeSet<(usize, usize)>,
    member: BTreeSet<usize>,
}

#[derive(Clone, Debug)]
struct StoredSpec {
    user: usize,
    agents: BTreeSet<usize>,
    resources: BTreeSet<usize>,
    scope: usize,
    created: i64,
}

const BASE: i64 = 10_000;

fn oracle(g: &Grants, u: usize, a: usize, t: i64, c: &StoredSpec) -> bool {
    let created_ok = BASE + c.created <= t;
    let scope_ok = match c.scope {
        0 => c.user == u && c.agents.contains(&a),
        1 => c.user == u,
        2 => g.member.contains(&a),
        _ => true,
    };
    let agents_ok = c.agents.iter().all(|x| g.invoke.contains(&(u, *x)));
    let resources_ok = c.resources.iter().all(|r| g.access.contains(&(a, *r)));
    created_ok && scope_ok && agents_ok && resources_ok
}

fn stored_spec() -> impl Strategy<Value = StoredSpec> {
    (
        0..2usize,
        prop::collection::btree_set(0..3usize, 1..3),
        prop::collection::btree_set(0..2usize, 0..2),
        0..4usize,
        1i64..100,
    )
        .prop_map(|(user, agents, resources, scope, created)| StoredSpec {
            user,
            agents,
            resources,
            scope,
            created,
        })
}

fn grants() -> impl Strategy<Value = Grants> {
    (
        prop::collection::btree_set((0..2usize, 0..3usize), 0..6),
        prop::collection::btree_set((0..3usize, 0..2usize), 0..6),
        prop::collection::btree_set(0..3usize, 0..3),
    )
        .prop_map(|(invoke, access, member)| Grants {
            invoke,
            access,
            member,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn a_reader_sees_exactly_the_cards_the_oracle_allows_and_none_from_its_future(
        g in grants(),
        specs in prop::collection::vec(stored_spec(), 1..10),
        times in prop::collection::vec(0i64..110, 1..3),
    ) {
        let users: Vec<UserId> = (0..2).map(|i| UserId::new(&format!("oracle-user{i}")).unwrap()).collect();
        let agents: Vec<AgentId> = (0..3).map(|i| AgentId::new(&format!("oracle-agent{i}")).unwrap()).collect();
        let resources: Vec<ResourceId> = (0..2).map(|i| ResourceId::new(&format!("oracle-res{i}")).unwrap()).collect();
        let group = GroupId::new("oracle-crew").unwrap();

        let mut graph = AccessGraph::new();
        let at = Timestamp::from_millis(BASE);
        let mut changes: Vec<AccessChange> = Vec::new();
        changes.extend(users.iter().map(|u| AccessChange::Register { principal: Principal::User(*u) }));
        changes.extend(agents.iter().map(|a| AccessChange::Register { principal: Principal::Agent(*a) }));
        changes.extend(resources.iter().map(|r| AccessChange::Register { principal: Principal::Resource(*r) }));
        changes.push(AccessChange::Register { principal: Principal::Group(group, GroupKind::Crew) });
        for (u, a) in &g.invoke {
            changes.push(AccessChange::Grant { edge: Edge::Invoke { user: users[*u], agent: agents[*a] }, until: None });
        }
        for (a, r) in &g.access {
            changes.push(AccessChange::Grant { edge: Edge::Access { agent: agents[*a], resource: resources[*r] }, until: None });
        }
        for a in &g.member {
            changes.push(AccessChange::Grant { edge: Edge::Member { member: Member::Agent(agents[*a]), group }, until: None });
        }
        for change in changes {
            graph.apply(AccessEvent { at, change }).unwrap();
        }

        let clock = Arc::new(LogicalClock::new(Timestamp::from_millis(BASE + 200)));
        let store = Arc::new(SqliteStore::open_in_memory(StoreConfig { clock, ..StoreConfig::default() }).unwrap());
        let embedder = Arc::new(OfflineEmbedder::new(OfflineConfig { dim: 64, ..OfflineConfig::default() }).unwrap());
        let mut ids: BTreeMap<FragmentId, usize> = BTreeMap::new();
        for (i, s) in specs.iter().enumerate() {
            let spec = CardSpec {
                words: vec![i % WORDS.len()],
                vector: Vec::new(),
                negative: i % 2 == 0,
                decision: i % 2,
                value: (i / 2) % 2,
                precondition: None,
                credibility: 0.5,
                long: 0,
            };
            let scope = match s.scope {
                0 => Scope::Agent,
                1 => Scope::User,
                2 => Scope::Group(group),
                _ => Scope::Global,
            };
            let writer = agents[*s.agents.iter().next().unwrap()];
            let receipt = store.write_card(&CardWrite {
                user: users[s.user],
                agent: writer,
                fragment: NewFragment {
                    key: None,
                    content: format!("card {i}"),
                    granularity: Granularity::Card,
                    kind: Kind::Observation,
                    scope,
                    provenance: Provenance {
                        created_at: Timestamp::from_millis(BASE + s.created),
                        user: users[s.user],
                        agents: s.agents.iter().map(|a| agents[*a]).collect(),
                        resources: s.resources.iter().map(|r| resources[*r]).collect(),
                        source: Source::default(),
                    },
                    validity: Validity::always(),
                    keywords: vec!["strategy".to_owned()],
                    embedding: None,
                },
                fields: fields(&spec),
                replaces: None,
                idempotency_key: None,
            }).unwrap();
            ids.insert(receipt.ids[0], i);
        }
        let config = BankConfig {
            read: ReadConfig { min_score: 0.0, top_k: 64, ..ReadConfig::default() },
            ..BankConfig::default()
        };
        let bank = CardBank::new(store, embedder, Arc::new(ApproxTokenCounter), Roles::offline(), config).unwrap();
        for t in times {
            let now = BASE + t;
            let reader_clock = LogicalClock::new(Timestamp::from_millis(now));
            for (u, a) in &g.invoke {
                let ctx = Context::new(users[*u], agents[*a], &reader_clock);
                let filter = graph.compile(&ctx).unwrap();
                let composition = bank.compose(&filter, &TaskContext::new("strategy"), &Budget::new(10_000)).unwrap();
                let allowed: BTreeSet<FragmentId> = ids
                    .iter()
                    .filter(|(_, i)| oracle(&g, *u, *a, now, &specs[**i]))
                    .map(|(id, _)| *id)
                    .collect();
                let seen: BTreeSet<FragmentId> = composition.report.retrieved.iter().copied().collect();
                prop_assert_eq!(&seen, &allowed, "reader ({}, {}) at +{}", u, a, t);
                for id in composition.report.expanded.iter().chain(composition.cards.iter().map(|c| &c.id)) {
                    prop_assert!(allowed.contains(id));
                }
            }
        }
    }
}
