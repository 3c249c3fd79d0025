//! The pipeline end to end over SQLite and the hybrid index: recall checked against an
//! independent oracle of the read rule, supersession, history reads, and deletion only
//! on the user's own explicit instruction.

use std::collections::BTreeSet;
use std::sync::Arc;

use colmem_access::{
    AccessGraph, Context, PseudonymKey, Redaction, SystemPolicy, Transform, WritePolicies,
    WritePolicySet,
};
use colmem_ama::{
    Caller, ConstructorConfig, MAX_K, Origin, Pipeline, PipelineConfig, QueryContext, Recall,
    RecallOptions, RetrieverConfig, Roles, Route, TurnInput,
};
use colmem_core::{
    AccessChange, AccessEvent, AgentId, Clock, Draft, Edge, Fragment, FragmentId, Granularity,
    Kind, LogicalClock, Principal, Scope, Timestamp, UserId, View,
};
use colmem_index::{FlatIndex, HybridConfig, HybridIndex, MemoryBm25};
use colmem_llm::{OfflineConfig, OfflineEmbedder};
use colmem_store::{FragmentStore, SqliteStore, StoreConfig};
use proptest::prelude::*;

struct World {
    clock: Arc<LogicalClock>,
    store: Arc<dyn FragmentStore>,
    graph: AccessGraph,
    system: SystemPolicy,
    pipeline: Pipeline,
    /// The write policies every caller writes under, if any.
    policies: Option<WritePolicySet>,
    /// The agents whose callers remember in a scope of the caller's choosing, rather
    /// than a conversation's default (`User`), each with that scope.
    share: Vec<(AgentId, Scope)>,
    /// Every access event, for the oracle.
    events: Vec<AccessEvent>,
}

impl World {
    fn new() -> Self {
        World::with_roles(Roles::offline())
    }

    fn with_roles(roles: Roles) -> Self {
        World::with(roles, PipelineConfig::default())
    }

    fn with(roles: Roles, config: PipelineConfig) -> Self {
        let clock = Arc::new(LogicalClock::new(
            Timestamp::parse("2026-01-01T00:00:00Z").unwrap(),
        ));
        // The store's clock moves on as a wall clock does, a millisecond per reading:
        // what one call writes is later than what it listed.
        let store: Arc<dyn FragmentStore> = Arc::new(
            SqliteStore::open_in_memory(StoreConfig {
                clock: Arc::new(Ticking(clock.clone())),
                ..StoreConfig::default()
            })
            .unwrap(),
        );
        let embedder = Arc::new(OfflineEmbedder::new(OfflineConfig::default()).unwrap());
        let index = Arc::new(HybridIndex::new(
            Arc::new(FlatIndex::new(colmem_llm::Embedder::dim(embedder.as_ref()))),
            Some(Arc::new(MemoryBm25::new())),
            HybridConfig::default(),
        ));
        let pipeline = Pipeline::new(store.clone(), index, embedder, roles, config);
        World {
            clock,
            store,
            graph: AccessGraph::new(),
            system: SystemPolicy::default(),
            pipeline,
            policies: None,
            share: Vec::new(),
            events: Vec::new(),
        }
    }

    fn log(&mut self, change: AccessChange) {
        self.clock.advance(1_000);
        let event = AccessEvent {
            at: self.clock.now(),
            change,
        };
        self.store.append_access_event(&event).unwrap();
        self.graph.apply(event).unwrap();
        self.events.push(event);
    }

    fn caller(&self, user: UserId, agent: AgentId) -> Option<Caller<'_>> {
        let caller = Caller::new(
            &self.graph,
            &self.system,
            Context::new(user, agent, self.clock.as_ref()),
        )
        .ok()?;
        let caller = caller.with_scope(
            self.share
                .iter()
                .find(|(sharing, _)| *sharing == agent)
                .map(|(_, scope)| *scope),
        );
        Some(match &self.policies {
            Some(policies) => caller.with_write_policies(policies),
            None => caller,
        })
    }

    fn say(&self, user: UserId, agent: AgentId, id: &str, speaker: &str, text: &str, date: &str) {
        self.say_to(user, agent, (id, speaker, "Assistant"), text, date);
    }

    /// `speaker` says `text` to `listener` as dialogue turn `id` on `date`.
    fn say_to(
        &self,
        user: UserId,
        agent: AgentId,
        (id, speaker, listener): (&str, &str, &str),
        text: &str,
        date: &str,
    ) {
        self.clock.advance(1_000);
        let caller = self.caller(user, agent).expect("the pair may talk");
        self.pipeline
            .remember(
                &caller,
                &TurnInput {
                    dialogue_id: id.to_owned(),
                    session: "D1".to_owned(),
                    speaker: speaker.to_owned(),
                    listener: listener.to_owned(),
                    text: text.to_owned(),
                    time: Some(Timestamp::parse(date).unwrap()),
                    origin: if speaker == "Assistant" {
                        Origin::Other
                    } else {
                        Origin::User
                    },
                },
            )
            .unwrap();
    }

    /// Dana, the user of `user`, says each of `turns` (dialogue id, text, date) in turn.
    fn dana_says(&self, user: UserId, agent: AgentId, turns: &[(&str, &str, &str)]) {
        for (id, text, date) in turns {
            self.say(user, agent, id, "Dana", text, date);
        }
    }

    /// Each of `turns` (speaker, text) said in turn as `D1:1`, `D1:2` … on `date`.
    fn converse(&self, user: UserId, agent: AgentId, turns: &[(&str, &str)], date: &str) {
        for (i, (speaker, text)) in turns.iter().enumerate() {
            self.say(user, agent, &format!("D1:{}", i + 1), speaker, text, date);
        }
    }

    /// Whether asking `needle` recalls a current fact holding it.
    fn recalls_current_fact(&self, user: UserId, agent: AgentId, needle: &str) -> bool {
        let (_, hits) = self.ask(user, agent, needle, View::Current);
        hits.iter()
            .any(|f| f.granularity == Granularity::Fact && f.content.contains(needle))
    }

    /// The answer to `question` from raw turns only (what was said, not the facts
    /// drawn from it), read as of world time `date`.
    fn answer_from_turns_as_of(
        &self,
        user: UserId,
        agent: AgentId,
        question: &str,
        date: &str,
    ) -> String {
        let caller = self.caller(user, agent).unwrap();
        let options = RecallOptions {
            view: View::WorldAsOf(Timestamp::parse(date).unwrap()),
            granularities: Some(vec![Granularity::RawTurn]),
            ..RecallOptions::default()
        };
        self.pipeline
            .answer(&caller, question, &options)
            .unwrap()
            .answer
            .text
    }

    /// The first `k` fragments recalled for `query` (current view), each as its score,
    /// its source turns and its content.
    fn recall_turns(
        &self,
        user: UserId,
        agent: AgentId,
        query: &str,
        k: usize,
    ) -> Vec<(f64, Vec<String>, String)> {
        let caller = self.caller(user, agent).unwrap();
        let options = RecallOptions {
            k: Some(k),
            ..RecallOptions::default()
        };
        let recall = self.pipeline.recall(&caller, query, &options).unwrap();
        recall
            .hits
            .into_iter()
            .map(|h| {
                (
                    h.score,
                    h.fragment.provenance.source.turns,
                    h.fragment.content,
                )
            })
            .collect()
    }

    fn ask(
        &self,
        user: UserId,
        agent: AgentId,
        question: &str,
        view: View,
    ) -> (String, Vec<Fragment>) {
        self.clock.advance(1_000);
        let caller = self.caller(user, agent).unwrap();
        let answered = self
            .pipeline
            .answer(
                &caller,
                question,
                &RecallOptions {
                    view,
                    ..RecallOptions::default()
                },
            )
            .unwrap();
        (
            answered.answer.text,
            answered
                .recall
                .hits
                .into_iter()
                .map(|h| h.fragment)
                .collect(),
        )
    }
}

/// A clock that moves on a millisecond each time it is read.
#[derive(Debug)]
struct Ticking(Arc<LogicalClock>);

impl Clock for Ticking {
    fn now(&self) -> Timestamp {
        self.0.advance(1)
    }
}

/// The read rule of DESIGN section 3, written from the text and the raw event list;
/// it shares no code with colmem-access. Only invoke edges, agent and user scopes are
/// used by these tests.
fn oracle_visible(
    events: &[AccessEvent],
    user: UserId,
    agent: AgentId,
    now: Timestamp,
    f: &Fragment,
) -> bool {
    oracle_admits(events, user, agent, now, f, View::Current)
}

/// The read rule with the versions `view` reads: the current ones, or all of them.
fn oracle_admits(
    events: &[AccessEvent],
    user: UserId,
    agent: AgentId,
    now: Timestamp,
    f: &Fragment,
    view: View,
) -> bool {
    let mut invoke: BTreeSet<(UserId, AgentId)> = BTreeSet::new();
    for event in events.iter().filter(|e| e.at <= now) {
        match &event.change {
            AccessChange::Grant {
                edge: Edge::Invoke { user, agent },
                until,
            } if until.is_none_or(|u| u > now) => {
                invoke.insert((*user, *agent));
            }
            AccessChange::Revoke {
                edge: Edge::Invoke { user, agent },
            } => {
                invoke.remove(&(*user, *agent));
            }
            _ => {}
        }
    }
    let may = |a: &AgentId| invoke.contains(&(user, *a));
    let version = match view {
        View::AllVersions => true,
        _ => f.superseded_at.is_none(),
    };
    let current = f.provenance.created_at <= now && f.deleted_at.is_none() && version;
    let scope = match f.scope {
        colmem_core::Scope::Agent => {
            f.provenance.user == user && f.provenance.agents.contains(&agent)
        }
        colmem_core::Scope::User => f.provenance.user == user,
        _ => false,
    };
    may(&agent) && current && scope && f.provenance.agents.iter().all(may)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Whatever the grants and revocations, a recall over every granularity with a k
    /// past the store's size returns exactly the fragments the oracle admits.
    #[test]
    fn recall_equals_the_oracle(grants in proptest::collection::vec(any::<bool>(), 9), revokes in proptest::collection::vec(any::<bool>(), 9)) {
        let mut world = World::new();
        let users: Vec<UserId> = (0..3).map(|i| UserId::new(&format!("pu{i}")).unwrap()).collect();
        let agents: Vec<AgentId> = (0..3).map(|i| AgentId::new(&format!("pa{i}")).unwrap()).collect();
        for u in &users { world.log(AccessChange::Register { principal: Principal::User(*u) }); }
        for a in &agents { world.log(AccessChange::Register { principal: Principal::Agent(*a) }); }
        let mut pairs = Vec::new();
        for (i, granted) in grants.iter().enumerate() {
            let (u, a) = (users[i / 3], agents[i % 3]);
            if *granted {
                world.log(AccessChange::Grant { edge: Edge::Invoke { user: u, agent: a }, until: None });
                pairs.push((i, u, a));
            }
        }
        for (i, u, a) in &pairs {
            world.say(*u, *a, &format!("D1:{i}"), "Kim", &format!("I keep the spare key number {i} under the blue pot in the garden."), "2025-05-01");
        }
        for (i, u, a) in &pairs {
            if revokes[*i] {
                world.log(AccessChange::Revoke { edge: Edge::Invoke { user: *u, agent: *a } });
            }
        }
        world.clock.advance(1_000);
        let total = world.store.head().unwrap() as usize + 10;
        let every: Vec<Fragment> = (1..=total as u64).filter_map(|id| world.store.get(FragmentId(id)).ok()).collect();
        for u in &users {
            for a in &agents {
                let Some(caller) = world.caller(*u, *a) else {
                    // Refused: the oracle must agree that the pair may not talk now.
                    prop_assert!(!every.iter().any(|f| oracle_visible(&world.events, *u, *a, world.clock.now(), f)));
                    continue;
                };
                let want: BTreeSet<FragmentId> = every.iter().filter(|f| oracle_visible(&world.events, *u, *a, caller.now(), f)).map(|f| f.id).collect();
                // The second names a day, so the search of what was told then runs too and
                // its merge must neither add nor lose a fragment. (That search's own
                // narrowing under the filter is checked by the index's property test.)
                for query in ["spare key garden", "Where did Kim keep the spare key on 1 May, 2025?"] {
                    let recall = world.pipeline.recall(&caller, query, &RecallOptions {
                        k: Some(total),
                        granularities: Some(vec![Granularity::RawTurn, Granularity::Fact, Granularity::Episode, Granularity::Profile]),
                        ..RecallOptions::default()
                    }).unwrap();
                    let got: BTreeSet<FragmentId> = recall.hits.iter().map(|h| h.fragment.id).collect();
                    prop_assert_eq!(&got, &want, "user {} agent {} query {:?}", u, a, query);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// Whatever the grants and revocations, the history of a subject key is exactly
    /// the user's own versions under it, replaced ones included, that the oracle
    /// admits when every version is read.
    #[test]
    fn history_equals_the_oracle(grants in proptest::collection::vec(any::<bool>(), 4), revokes in proptest::collection::vec(any::<bool>(), 4)) {
        let mut world = World::new();
        let users: Vec<UserId> = (0..2).map(|i| UserId::new(&format!("hu{i}")).unwrap()).collect();
        let agents: Vec<AgentId> = (0..2).map(|i| AgentId::new(&format!("ha{i}")).unwrap()).collect();
        for u in &users { world.log(AccessChange::Register { principal: Principal::User(*u) }); }
        for a in &agents { world.log(AccessChange::Register { principal: Principal::Agent(*a) }); }
        let mut pairs = Vec::new();
        for (i, granted) in grants.iter().enumerate() {
            let (u, a) = (users[i / 2], agents[i % 2]);
            if *granted {
                world.log(AccessChange::Grant { edge: Edge::Invoke { user: u, agent: a }, until: None });
                pairs.push((i, u, a));
            }
        }
        for (i, u, a) in &pairs {
            world.say(*u, *a, &format!("D1:{i}"), "Kim", "I live in Porto.", "2025-05-01");
            world.say(*u, *a, &format!("D2:{i}"), "Kim", "I moved to Lisbon last week.", "2025-09-01");
        }
        for (i, u, a) in &pairs {
            if revokes[*i] {
                world.log(AccessChange::Revoke { edge: Edge::Invoke { user: *u, agent: *a } });
            }
        }
        world.clock.advance(1_000);
        let total = world.store.head().unwrap() + 10;
        let every: Vec<Fragment> = (1..=total).filter_map(|id| world.store.get(FragmentId(id)).ok()).collect();
        let replaced = every.iter().filter(|f| f.key.as_deref() == Some("kim/home") && f.superseded_at.is_some()).count();
        prop_assert!(pairs.is_empty() || replaced > 0, "the move replaces the first home");
        for u in &users {
            for a in &agents {
                let Some(caller) = world.caller(*u, *a) else { continue };
                let got: Vec<FragmentId> = world.pipeline.history(&caller, "kim/home").unwrap().iter().map(|f| f.id).collect();
                // Oldest first, by when each held.
                let mut want: Vec<&Fragment> = every
                    .iter()
                    .filter(|f| f.key.as_deref() == Some("kim/home") && f.provenance.user == *u)
                    .filter(|f| oracle_admits(&world.events, *u, *a, caller.now(), f, View::AllVersions))
                    .collect();
                want.sort_by_key(|f| (f.validity.from(), f.id));
                let want: Vec<FragmentId> = want.iter().map(|f| f.id).collect();
                prop_assert_eq!(got, want, "user {} agent {}", u, a);
            }
        }
    }
}

/// A history names the fact that replaced a version only when the reader may read it:
/// a move told through an agent the user no longer invokes stays out of sight, id and
/// all.
#[test]
fn a_history_names_no_successor_the_reader_may_not_read() {
    let (mut world, dana, helper) = one_pair();
    let mover = another_agent(&mut world, dana, "mover");
    world.say(
        dana,
        helper,
        "D1:1",
        "Dana",
        "I live in Porto.",
        "2025-05-01",
    );
    world.say(
        dana,
        mover,
        "D1:2",
        "Dana",
        "I moved to Lisbon last week.",
        "2025-09-01",
    );
    let caller = world.caller(dana, helper).unwrap();
    let versions = world.pipeline.history(&caller, "dana/home").unwrap();
    assert_eq!(versions.len(), 2, "{versions:?}");
    assert_eq!(versions[0].superseded_by, Some(versions[1].id));
    assert_eq!(versions[1].provenance.source.parents, [versions[0].id]);

    world.log(AccessChange::Revoke {
        edge: Edge::Invoke {
            user: dana,
            agent: mover,
        },
    });
    let caller = world.caller(dana, helper).unwrap();
    let versions = world.pipeline.history(&caller, "dana/home").unwrap();
    assert_eq!(versions.len(), 1, "{versions:?}");
    assert!(versions[0].content.contains("Porto"));
    assert!(
        versions[0].superseded_at.is_some(),
        "replaced, by what is not said"
    );
    assert_eq!(versions[0].superseded_by, None);
}

/// What replaces a fact of the speaker's named kin is the kin's: "Erin lives in Tokyo
/// now" after "my colleague Erin lives in Paris" is kept under the colleague's key, and
/// the speaker's own home is untouched.
#[test]
fn the_successor_of_a_kins_fact_is_the_kins() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            ("D1:1", "I live in Hamburg.", "2025-05-01"),
            ("D1:2", "My colleague Erin lives in Paris.", "2025-05-02"),
            ("D1:3", "Erin lives in Tokyo now.", "2025-09-01"),
        ],
    );
    let caller = world.caller(dana, helper).unwrap();
    let erin = world
        .pipeline
        .history(&caller, "dana/colleague/home")
        .unwrap();
    let told: Vec<&str> = erin.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(erin.len(), 2, "{told:?}");
    assert!(told[1].contains("Tokyo"), "{told:?}");
    assert_eq!(erin[0].superseded_by, Some(erin[1].id));
    let own = world.pipeline.history(&caller, "dana/home").unwrap();
    let told: Vec<&str> = own.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(
        told[0].contains("Hamburg") && own[0].superseded_at.is_none(),
        "{told:?}"
    );
}

/// "We moved to Bristol last month" holds from the first of last month, and never
/// before what it replaces: the old home closes where the new one starts.
#[test]
fn a_change_told_after_the_fact_holds_from_when_it_happened() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            ("D1:1", "I live in Leeds.", "2025-03-01"),
            ("D1:2", "We moved to Bristol last month.", "2025-06-14"),
        ],
    );
    let caller = world.caller(dana, helper).unwrap();
    let versions = world.pipeline.history(&caller, "dana/home").unwrap();
    assert_eq!(versions.len(), 2, "{versions:?}");
    let may = Timestamp::parse("2025-05-01").unwrap();
    assert_eq!(versions[1].validity.from(), may);
    assert_eq!(versions[0].validity.until(), Some(may));

    // Said after a later statement of the old home, it starts just after that one.
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            ("D1:1", "I live in Leeds.", "2025-06-10"),
            ("D1:2", "We moved to Bristol last month.", "2025-06-14"),
        ],
    );
    let caller = world.caller(dana, helper).unwrap();
    let versions = world.pipeline.history(&caller, "dana/home").unwrap();
    assert_eq!(versions.len(), 2, "{versions:?}");
    let said = Timestamp::parse("2025-06-10").unwrap();
    assert_eq!(versions[1].validity.from(), said.plus_millis(1));
    assert_eq!(versions[0].validity.until(), Some(said.plus_millis(1)));
}

/// A turn whose facts were all replaced ranks below what holds now in a read of the
/// present, and keeps its rank in a read of the past.
#[test]
fn a_turn_whose_facts_were_all_replaced_ranks_lower_now() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            ("D1:1", "I live in Lisbon.", "2024-01-01"),
            ("D1:2", "I moved to Berlin last month.", "2024-06-01"),
        ],
    );
    let caller = world.caller(dana, helper).unwrap();
    let ranked = |view: View| -> Vec<String> {
        let recall = world
            .pipeline
            .recall(
                &caller,
                "Where does Dana live?",
                &RecallOptions {
                    view,
                    ..RecallOptions::default()
                },
            )
            .unwrap();
        recall
            .hits
            .iter()
            .filter(|h| h.fragment.granularity == Granularity::RawTurn)
            .map(|h| h.fragment.content.clone())
            .collect()
    };
    let now = ranked(View::Current);
    assert!(now[0].contains("Berlin"), "{now:?}");
    let all = ranked(View::AllVersions);
    assert!(all[0].contains("Lisbon"), "{all:?}");
}

/// "I don't live in Rome anymore" ends the home in Rome.
#[test]
fn a_state_denied_anymore_has_ended() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            ("D1:1", "I live in Rome.", "2024-01-01"),
            ("D1:2", "I don't live in Rome anymore.", "2024-03-01"),
        ],
    );
    assert!(!world.recalls_current_fact(dana, helper, "Dana live in Rome"));
    let caller = world.caller(dana, helper).unwrap();
    let versions = world.pipeline.history(&caller, "dana/home").unwrap();
    assert_eq!(
        versions[0].validity.until(),
        Some(Timestamp::parse("2024-03-01").unwrap()),
        "{versions:?}"
    );
}

/// What is only supposed changes nothing held.
#[test]
fn a_supposition_changes_nothing() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            ("D1:1", "I live in Berlin.", "2024-06-15"),
            (
                "D1:2",
                "If I moved to Tokyo I would be happy.",
                "2024-06-16",
            ),
            (
                "D1:3",
                "I would move to Lisbon in a heartbeat.",
                "2024-06-17",
            ),
        ],
    );
    assert!(world.recalls_current_fact(dana, helper, "Berlin"));
}

/// Two friends the memory serves talk: what Caroline told of her guinea pig is hers,
/// and Melanie's news of her own cats replaces nothing of it.
#[test]
fn what_was_told_of_the_one_spoken_to_is_theirs() {
    let (world, dana, helper) = one_pair();
    world.say_to(
        dana,
        helper,
        ("D1:1", "Caroline", "Melanie"),
        "Yup, I do- Oscar, my guinea pig.",
        "2023-08-13",
    );
    world.say_to(
        dana,
        helper,
        ("D1:2", "Melanie", "Caroline"),
        "They're good, we got another cat named Bailey too. Can you show me one of Oscar?",
        "2023-08-13",
    );
    assert!(world.recalls_current_fact(dana, helper, "Oscar"));
}

/// A phone named by its maker ("a Nokia 3310", "a Moto G7") is a phone: buying
/// another replaces it, and a read of the time between finds it.
#[test]
fn a_phone_named_by_its_maker_is_replaced_by_the_next() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "I still use a Nokia 3310 and I'm proud of it.",
                "2018-06-10",
            ),
            (
                "D2:1",
                "Work made me get a smartphone, so I caved and bought a Moto G7.",
                "2019-02-02",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(dana, helper, "Nokia"));
    assert!(world.recalls_current_fact(dana, helper, "Moto G7"));
    let (_, then) = world.ask(
        dana,
        helper,
        "Nokia",
        View::WorldAsOf(Timestamp::parse("2018-07-01").unwrap()),
    );
    assert!(then.iter().any(|f| f.content.contains("Nokia")));
}

/// A car named by its maker alone is replaced by the next; a maker after "at" is an
/// employer, and a guide at the city museum is a job, not a home.
#[test]
fn a_car_named_by_its_maker_is_replaced_by_the_next_and_a_maker_may_employ() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "I take my grey Honda Civic to the coast every weekend.",
                "2019-03-12",
            ),
            (
                "D2:1",
                "It's a Mazda CX-5 in my driveway now, and I'm not looking back.",
                "2019-08-20",
            ),
            (
                "D3:1",
                "I supervise a shift on the assembly line at Toyota.",
                "2019-09-01",
            ),
            (
                "D4:1",
                "Now I volunteer as a guide at the city history museum three days a week.",
                "2020-06-30",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(dana, helper, "Civic"));
    assert!(world.recalls_current_fact(dana, helper, "Mazda"));
    assert!(!world.recalls_current_fact(dana, helper, "Toyota"));
    assert!(world.recalls_current_fact(dana, helper, "museum"));
    let (_, then) = world.ask(
        dana,
        helper,
        "Honda Civic",
        View::WorldAsOf(Timestamp::parse("2019-04-01").unwrap()),
    );
    assert!(then.iter().any(|f| f.content.contains("Civic")));
}

/// A business run is one's work, whoever runs it along ("with my partner"): the next one
/// run takes its place, and history keeps it.
#[test]
fn the_business_one_runs_now_replaces_the_one_run_before() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "The bakery I run with my partner opens at six, so I'm up at four every day.",
                "2019-06-01",
            ),
            (
                "D2:1",
                "I sold my share of it to my partner in January. These days I run a small bookshop in the old town instead.",
                "2020-03-12",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(dana, helper, "bakery"));
    assert!(world.recalls_current_fact(dana, helper, "bookshop"));
    let (_, then) = world.ask(
        dana,
        helper,
        "bakery",
        View::WorldAsOf(Timestamp::parse("2019-07-01").unwrap()),
    );
    assert!(then.iter().any(|f| f.content.contains("bakery")));
}

/// "All I watch is …" leaves no room for the shows watched before, favourite or not;
/// history keeps them.
#[test]
fn all_one_watches_now_replaces_what_was_watched_before() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "Crime dramas are my comfort TV. Broadchurch is my favourite show ever.",
                "2021-02-02",
            ),
            (
                "D2:1",
                "Murders bore me now, I've had my fill. All I watch is The Great British Bake Off and other baking shows.",
                "2021-11-30",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(dana, helper, "Broadchurch"));
    assert!(!world.recalls_current_fact(dana, helper, "Crime dramas"));
    assert!(world.recalls_current_fact(dana, helper, "Bake Off"));
    let (_, then) = world.ask(
        dana,
        helper,
        "Broadchurch",
        View::WorldAsOf(Timestamp::parse("2021-03-01").unwrap()),
    );
    assert!(then.iter().any(|f| f.content.contains("Broadchurch")));
}

/// How one travels changes: "sworn off planes. Trains all the way now" ends "I always
/// fly"; history keeps it.
#[test]
fn a_way_of_travelling_sworn_off_gives_way_to_the_next() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "I always fly when I travel for work; it's the fastest way to get to Barcelona.",
                "2019-09-09",
            ),
            (
                "D2:1",
                "After that awful turbulence in January I've sworn off planes. Trains all the way now, even if it takes longer.",
                "2020-02-18",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(dana, helper, "always fly"));
    assert!(world.recalls_current_fact(dana, helper, "Trains"));
    let (_, then) = world.ask(
        dana,
        helper,
        "always fly",
        View::WorldAsOf(Timestamp::parse("2019-10-21").unwrap()),
    );
    assert!(then.iter().any(|f| f.content.contains("always fly")));
}

/// When in the day one is at one's best changes: "flipped into a night owl" ends "I'm a
/// morning person", though the held fact names hours and the new one none; history
/// keeps it.
#[test]
fn a_night_owl_replaces_a_morning_person() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "I'm a morning person: my best writing happens between 5 and 8 am.",
                "2021-01-10",
            ),
            (
                "D2:1",
                "Since the twins arrived I've flipped completely into a night owl.",
                "2022-03-02",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(dana, helper, "morning person"));
    assert!(world.recalls_current_fact(dana, helper, "night owl"));
    let (_, then) = world.ask(
        dana,
        helper,
        "morning person",
        View::WorldAsOf(Timestamp::parse("2021-06-01").unwrap()),
    );
    assert!(then.iter().any(|f| f.content.contains("morning person")));
}

/// "Boats instead of engines these days" ends what was said of the engines, though it
/// names neither the old workshop nor a key of work; history keeps it.
#[test]
fn what_is_done_instead_for_good_ends_what_it_replaced() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "Busy week at Hartley Marine: I rebuild diesel engines and my hands are black.",
                "2022-02-10",
            ),
            (
                "D2:1",
                "Sailing boats instead of engines these days, I restore their wooden hulls.",
                "2023-06-01",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(dana, helper, "diesel engines"));
    assert!(world.recalls_current_fact(dana, helper, "Sailing boats"));
    let (_, then) = world.ask(
        dana,
        helper,
        "diesel engines",
        View::WorldAsOf(Timestamp::parse("2022-06-01").unwrap()),
    );
    assert!(then.iter().any(|f| f.content.contains("diesel engines")));
}

/// "The banjo just sits there gathering dust" ends what was said of playing it, though
/// it names no value the held fact has; history keeps it.
#[test]
fn what_lies_unused_no_longer_holds() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "Between shifts the banjo keeps me sane, I pick a tune every evening.",
                "2022-02-10",
            ),
            (
                "D2:1",
                "These days I mostly read; the banjo just sits there gathering dust.",
                "2023-06-01",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(dana, helper, "banjo keeps"));
    let (_, then) = world.ask(
        dana,
        helper,
        "banjo",
        View::WorldAsOf(Timestamp::parse("2022-06-01").unwrap()),
    );
    assert!(then.iter().any(|f| f.content.contains("banjo keeps")));
}

/// A move told in fragments ("Lisbon. Relocated. Boxes everywhere.") is one statement
/// of a home: it replaces the home held, and what was said there of the old city.
#[test]
fn a_move_told_in_fragments_replaces_the_home() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "Windy again in Porto. I've lived here since I was a kid.",
                "2021-03-03",
            ),
            (
                "D2:1",
                "Lisbon. Relocated. Boxes everywhere. Porto already feels far away.",
                "2022-09-20",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(dana, helper, "since Dana was a kid"));
    assert!(!world.recalls_current_fact(dana, helper, "Windy again"));
    assert!(world.recalls_current_fact(dana, helper, "Lisbon"));
    let (_, then) = world.ask(
        dana,
        helper,
        "Porto",
        View::WorldAsOf(Timestamp::parse("2021-06-01").unwrap()),
    );
    assert!(
        then.iter()
            .any(|f| f.content.contains("since Dana was a kid"))
    );
}

/// A request of a taste gives way to the next of its kind, with no word of change:
/// "Really spicy, please" after "Please keep it mild"; history keeps the old one. A
/// statement that asks nothing ("I like it mild") is not replaced so.
#[test]
fn a_request_of_a_taste_gives_way_to_the_next() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "Please keep the curry recipes mild for me, chillies upset my stomach.",
                "2021-04-04",
            ),
            (
                "D2:1",
                "Really spicy, please, as many chillies as the curry can take.",
                "2022-08-15",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(dana, helper, "recipes mild"));
    assert!(world.recalls_current_fact(dana, helper, "Really spicy"));
    let (_, then) = world.ask(
        dana,
        helper,
        "recipes mild",
        View::WorldAsOf(Timestamp::parse("2021-06-01").unwrap()),
    );
    assert!(then.iter().any(|f| f.content.contains("recipes mild")));

    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "I like my curry recipes mild, chillies upset my stomach.",
                "2021-04-04",
            ),
            (
                "D2:1",
                "Really spicy, please, as many chillies as the curry can take.",
                "2022-08-15",
            ),
        ],
    );
    assert!(world.recalls_current_fact(dana, helper, "recipes mild"));
}

/// A question of what holds now reads no fact of an event over well before the
/// present: "volunteering at the food bank this weekend" is history by the time of the
/// new job. Asked without "now", or of that weekend, the event is there; so is its raw
/// turn.
#[test]
fn a_question_of_now_reads_no_event_long_over() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "I'm a nurse at St Mary's, on the children's ward.",
                "2022-01-10",
            ),
            (
                "D1:2",
                "Volunteering at the food bank this weekend, wish me stamina.",
                "2022-02-12",
            ),
            (
                "D2:1",
                "I've moved to the Royal Infirmary as a charge nurse.",
                "2022-09-01",
            ),
        ],
    );
    let event = |hits: &[Fragment]| {
        hits.iter()
            .any(|f| f.granularity == Granularity::Fact && f.content.contains("food bank"))
    };
    let (_, now) = world.ask(
        dana,
        helper,
        "Where does Dana volunteer or work now?",
        View::Current,
    );
    assert!(!event(&now), "{now:?}");
    assert!(
        now.iter()
            .any(|f| f.granularity == Granularity::RawTurn && f.content.contains("food bank"))
    );
    let (_, plain) = world.ask(
        dana,
        helper,
        "Where does Dana volunteer or work?",
        View::Current,
    );
    assert!(event(&plain), "{plain:?}");
    let (_, then) = world.ask(
        dana,
        helper,
        "Where did Dana volunteer in February 2022? Is she still there?",
        View::Current,
    );
    assert!(event(&then), "{then:?}");
    // Asked that weekend, the event is not over.
    let caller = world.caller(dana, helper).unwrap();
    let asked_then = world
        .pipeline
        .recall(
            &caller,
            "Where does Dana volunteer or work now?",
            &RecallOptions {
                context: QueryContext {
                    now: Timestamp::parse("2022-02-13").ok(),
                    ..QueryContext::default()
                },
                ..RecallOptions::default()
            },
        )
        .unwrap();
    let hits: Vec<Fragment> = asked_then.hits.into_iter().map(|h| h.fragment).collect();
    assert!(event(&hits), "{hits:?}");
}

/// An event that names a value stays true when another sentence of a later turn names
/// that value beside a new one with a cue of change: "New client from Norway, a
/// cookbook! Pico is going to be in it" ends nothing of "Pico slipped out through the
/// gate".
#[test]
fn an_event_naming_a_value_is_not_ended_by_news_about_it() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "My dog Pico slipped out through the gate yesterday!! Found him at the bakery.",
                "2023-08-08",
            ),
            (
                "D2:1",
                "New client from Norway, a cookbook! Pico is going to be in it, obviously.",
                "2023-09-14",
            ),
        ],
    );
    assert!(world.recalls_current_fact(dana, helper, "Pico slipped out"));
}

/// A stay on a trip changes no home: "flew out of Leeds to Malaga, now at the crew
/// hotel" leaves "I live in Leeds" current.
#[test]
fn a_stay_in_a_hotel_changes_no_home() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "I live in Leeds, in a flat near the canal.",
                "2023-03-01",
            ),
            (
                "D2:1",
                "Left Leeds for Malaga last night, now at the crew hotel by the beach.",
                "2023-05-20",
            ),
        ],
    );
    assert!(world.recalls_current_fact(dana, helper, "flat near the canal"));
}

/// Who works with the speaker, named by their occupation, is not the speaker: "our
/// sous chef quit, he goes to a hotel in Porto" leaves "I'm a line cook at Marea".
#[test]
fn a_colleague_named_by_occupation_changes_nothing_of_the_speaker() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            ("D1:1", "I'm a line cook at Marea, a fish place in Lisbon.", "2023-01-10"),
            (
                "D2:1",
                "Our sous chef quit this week, he goes to a big hotel in Porto. No way I leave, Marea is my home.",
                "2023-04-02",
            ),
        ],
    );
    assert!(world.recalls_current_fact(dana, helper, "line cook at Marea"));
}

/// Who the customers are ("students and retired people") ends no business, nor does a
/// theme ("changing minds, not changing lives") end anything: the bookshop stays.
#[test]
fn words_of_work_and_home_in_other_senses_end_nothing() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "I run a small second-hand bookshop in Ghent called De Zolder.",
                "2021-09-01",
            ),
            ("D2:1", "Students and retired people mostly.", "2021-09-02"),
            (
                "D3:1",
                "Changing minds, not changing lives. Doing it.",
                "2021-12-10",
            ),
        ],
    );
    assert!(world.recalls_current_fact(dana, helper, "De Zolder"));
}

/// What one looks for in a holiday changes: "lying on a beach bores me now" ends "give
/// me Crete and a sunbed"; history keeps it.
#[test]
fn a_holiday_one_tires_of_gives_way() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "For holidays I always want a beach. Give me Crete and a sunbed and I'm happy.",
                "2019-04-22",
            ),
            (
                "D2:1",
                "Funny how tastes change: lying on a beach bores me now. Hiking holidays in the mountains, like the Dolomites, are what I look for.",
                "2020-01-12",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(dana, helper, "Crete"));
    assert!(world.recalls_current_fact(dana, helper, "Dolomites"));
    let (_, then) = world.ask(
        dana,
        helper,
        "Crete",
        View::WorldAsOf(Timestamp::parse("2019-06-01").unwrap()),
    );
    assert!(then.iter().any(|f| f.content.contains("Crete")));
}

/// A dish named alone ("Salmon nigiri, every time") is food: a new favourite set
/// against the past ("Ramen is my thing now") takes its place.
#[test]
fn a_dish_named_alone_gives_way_to_the_food_of_now() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            ("D1:1", "Salmon nigiri, every time.", "2021-03-20"),
            (
                "D2:1",
                "I'm over sushi these days. Ramen is my thing now, especially tonkotsu.",
                "2021-10-02",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(dana, helper, "nigiri"));
    assert!(world.recalls_current_fact(dana, helper, "Ramen"));
}

/// Chat is full of words that sound like news and are not: "now that I'm a manager",
/// "walking into a film", "getting lost in a book", "joined a group", "it looks like
/// they have more room now", a step only thought of; nor does a switch to another
/// sport end the sports it does not name. None of them ends what Dana told before.
#[test]
fn what_only_sounds_like_news_ends_nothing() {
    let cases = [
        (
            "I got promoted at work!",
            "All the hard work paid off now that I'm an assistant manager.",
            "promoted",
        ),
        (
            "I'm still looking into counselling jobs.",
            "I just joined a new LGBTQ activist group.",
            "counselling",
        ),
        (
            "Harry Potter is my favourite book.",
            "Visiting the studio in London was like walking into a Harry Potter film!",
            "Harry Potter is",
        ),
        (
            "Harry Potter is my favourite book.",
            "What I love about books like The Hobbit is getting lost in another world.",
            "Harry Potter is",
        ),
        (
            "I work at Globex as a designer.",
            "I'm thinking of joining a new team at Initech, but I haven't decided yet.",
            "Globex",
        ),
        (
            "Basketball is a big part of my life.",
            "My hiking club friends came along, though I just joined!",
            "Basketball",
        ),
        (
            "Basketball is a big part of my life.",
            "I switched to a new climbing gym last month.",
            "Basketball",
        ),
        (
            "Hiking is my favourite sport.",
            "It looks like they have so much more room to swim now!",
            "Hiking",
        ),
    ];
    let mut ended = Vec::new();
    for (held, said, needle) in cases {
        let (world, dana, helper) = one_pair();
        world.dana_says(
            dana,
            helper,
            &[("D1:1", held, "2024-03-02"), ("D1:2", said, "2024-03-09")],
        );
        if !world.recalls_current_fact(dana, helper, needle) {
            ended.push((held, said));
        }
    }
    assert!(
        ended.is_empty(),
        "ended by what only sounds like news: {ended:#?}"
    );
}

/// "Sorry, I meant Milan, not Rome" names no attribute, but sets right where Dana
/// lives: it is the current version under the key of what it corrects.
#[test]
fn a_correction_is_the_version_of_what_it_sets_right() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            ("D1:1", "I live in Rome.", "2024-03-02"),
            ("D1:2", "Sorry, I meant Milan, not Rome.", "2024-03-03"),
        ],
    );
    let caller = world.caller(dana, helper).unwrap();
    let versions = world.pipeline.history(&caller, "dana/home").unwrap();
    let told: Vec<&str> = versions.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(versions.len(), 2, "{told:?}");
    assert!(
        told[1].contains("Milan") && versions[1].superseded_at.is_none(),
        "{told:?}"
    );
}

/// What someone named does is theirs: "Alice moved to Paris" closes nothing of the
/// speaker's home, and "forget where Alice lives" forgets Alice's, not the speaker's.
#[test]
fn what_someone_named_does_is_theirs() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            ("D1:1", "I live in Madrid.", "2024-01-01"),
            ("D1:2", "Alice moved to Paris.", "2024-02-01"),
        ],
    );
    let caller = world.caller(dana, helper).unwrap();
    let home = world.pipeline.history(&caller, "dana/home").unwrap();
    assert_eq!(home.len(), 1, "{home:?}");
    assert!(home[0].content.contains("Madrid") && home[0].superseded_at.is_none());
    world.dana_says(
        dana,
        helper,
        &[("D1:3", "Please forget where Alice lives.", "2024-03-01")],
    );
    let held = stored_texts(&world, dana, helper);
    assert!(held.iter().any(|t| t.contains("Madrid")), "{held:?}");
    assert!(!held.iter().any(|t| t.contains("Paris")), "{held:?}");
}

/// A turn told without a time was said when it is remembered: its facts hold from
/// then, not from the beginning of time, and "yesterday" is the day before.
#[test]
fn a_turn_without_a_time_was_said_now() {
    let (world, dana, helper) = one_pair();
    let caller = world.caller(dana, helper).unwrap();
    let untimed = |id: &str, text: &str| TurnInput {
        time: None,
        ..turn(id, text)
    };
    world
        .pipeline
        .remember(&caller, &untimed("D1:1", "I work at Acme."))
        .unwrap();
    let first = caller.now();
    world.clock.advance(86_400_000);
    let caller = world.caller(dana, helper).unwrap();
    world
        .pipeline
        .remember(
            &caller,
            &untimed("D1:2", "I changed jobs yesterday, I now work at Globex."),
        )
        .unwrap();
    let versions = world.pipeline.history(&caller, "dana/work").unwrap();
    let told: Vec<&str> = versions.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(versions.len(), 2, "{told:?}");
    assert_eq!(versions[0].validity.from(), first, "{versions:?}");
    assert_eq!(
        versions[1].validity.from(),
        caller.now().plus_millis(-86_400_000)
    );
    assert!(told[1].contains("Globex"), "{told:?}");
}

/// A state told late ("I live in Oslo", said in January, remembered after "I live in
/// Rome", said in March) is the held version's predecessor, not its successor: Rome
/// stays current, and Oslo held until Rome began.
#[test]
fn a_state_told_late_is_followed_by_what_was_said_after_it() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            ("D2:1", "I live in Rome now.", "2025-03-01"),
            ("D1:1", "I live in Oslo now.", "2025-01-01"),
        ],
    );
    let caller = world.caller(dana, helper).unwrap();
    let versions = world.pipeline.history(&caller, "dana/home").unwrap();
    let told: Vec<&str> = versions.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(versions.len(), 2, "{told:?}");
    assert!(
        told[0].contains("Oslo") && told[1].contains("Rome"),
        "{told:?}"
    );
    let march = Timestamp::parse("2025-03-01").unwrap();
    assert_eq!(versions[0].validity.until(), Some(march));
    assert_eq!(versions[0].superseded_by, Some(versions[1].id));
    assert!(versions[1].superseded_at.is_none(), "{versions:?}");
    assert!(world.recalls_current_fact(dana, helper, "Rome"));
    assert!(!world.recalls_current_fact(dana, helper, "Oslo"));
    let (answer, _) = world.ask(
        dana,
        helper,
        "Where does Dana live?",
        View::WorldAsOf(Timestamp::parse("2025-02-01").unwrap()),
    );
    assert!(answer.contains("Oslo"), "{answer}");

    // A keyed retry of the late turn writes no second version.
    let late = TurnInput {
        time: Some(Timestamp::parse("2025-01-01").unwrap()),
        ..turn("D1:1", "I live in Oslo now.")
    };
    let retried = world
        .pipeline
        .remember_keyed(&caller, &late, Some("late"))
        .unwrap();
    assert!(retried.written.contains(&versions[0].id), "{retried:?}");
    assert_eq!(
        world.pipeline.history(&caller, "dana/home").unwrap(),
        versions
    );

    // A call that failed once it had written the late fact, before closing it: the
    // keyed retry keeps that fact and closes it.
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[("D2:1", "I live in Rome now.", "2025-03-01")],
    );
    let caller = world.caller(dana, helper).unwrap();
    let mut written = Draft::new(
        versions[0].content.clone(),
        Granularity::Fact,
        Kind::Observation,
    );
    written.key = Some("dana/home".into());
    written.keywords = versions[0].keywords.clone();
    written.source = versions[0].provenance.source.clone();
    written.validity = colmem_core::Validity::new(versions[0].validity.from(), None).unwrap();
    world
        .store
        .write(&colmem_store::Interaction {
            user: dana,
            agent: helper,
            fragments: vec![caller.authorize(written).unwrap()],
            idempotency_key: None,
        })
        .unwrap();
    world
        .pipeline
        .remember_keyed(&caller, &late, Some("late"))
        .unwrap();
    let after = world.pipeline.history(&caller, "dana/home").unwrap();
    let told: Vec<&str> = after.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(after.len(), 2, "{told:?}");
    assert_eq!(after[0].superseded_by, Some(after[1].id), "{told:?}");

    // One said before what it conflicts with begins, but not before it was said,
    // replaces it as ever: "turns seventy next month" holds from June, and is set
    // right the same day in May.
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "My mum Marjorie turns seventy next month, help me plan something.",
                "2023-05-01",
            ),
            (
                "D1:2",
                "Oh, and her name is Margaret, not Marjorie. Marjorie is my aunt.",
                "2023-05-01",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(dana, helper, "turns seventy"));

    // The profile entry drawn from a fact told late is closed with it.
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            ("D2:1", "My favourite food is ramen now.", "2025-03-01"),
            ("D1:1", "My favourite food is sushi.", "2025-01-01"),
        ],
    );
    let caller = world.caller(dana, helper).unwrap();
    let current: Vec<String> = stored(&world, dana, helper)
        .into_iter()
        .filter(|f| f.granularity != Granularity::RawTurn)
        .map(|f| f.content)
        .collect();
    assert!(current.iter().any(|c| c.contains("ramen")), "{current:?}");
    assert!(!current.iter().any(|c| c.contains("sushi")), "{current:?}");
    let entries: Vec<Fragment> = world
        .pipeline
        .history(&caller, "dana/profile/food")
        .unwrap();
    assert_eq!(entries.len(), 2, "{entries:?}");
}

/// "Instead of skiing we stayed in" takes the place of skiing only: Loki, named in the
/// next sentence, keeps his facts.
#[test]
fn what_is_done_instead_replaces_only_what_it_names() {
    let (world, dana, helper) = one_pair();
    world.dana_says(
        dana,
        helper,
        &[
            (
                "D1:1",
                "Outdoors is easy, my husky Loki needs two long walks a day whether I like it or not.",
                "2022-11-20",
            ),
            (
                "D1:2",
                "Aurora last night was unreal, green and purple curtains. Loki howled at it.",
                "2023-01-04",
            ),
            (
                "D1:3",
                "Instead of skiing this weekend we stayed in and baked boller. Loki stole one off the counter.",
                "2023-02-02",
            ),
        ],
    );
    let caller = world.caller(dana, helper).unwrap();
    // The new fact replaced nothing Loki's: it names its parents, if any.
    let skiing = world.pipeline.history(&caller, "dana/sport").unwrap();
    let replaced: Vec<Fragment> = skiing
        .iter()
        .flat_map(|f| f.provenance.source.parents.clone())
        .map(|id| world.store.get(id).unwrap())
        .collect();
    assert!(
        replaced.iter().all(|f| !f.content.contains("Loki")),
        "{:?}",
        replaced.iter().map(|f| &f.content).collect::<Vec<_>>()
    );
    assert!(!skiing.is_empty());
}

fn one_pair() -> (World, UserId, AgentId) {
    pair_in(World::new())
}

/// A user and an agent the user may invoke, in `world`.
fn pair_in(mut world: World) -> (World, UserId, AgentId) {
    let user = UserId::new("dana").unwrap();
    let agent = AgentId::new("helper").unwrap();
    world.log(AccessChange::Register {
        principal: Principal::User(user),
    });
    world.log(AccessChange::Register {
        principal: Principal::Agent(agent),
    });
    world.log(AccessChange::Grant {
        edge: Edge::Invoke { user, agent },
        until: None,
    });
    (world, user, agent)
}

/// Registers agent `name` and lets `user` invoke it.
fn another_agent(world: &mut World, user: UserId, name: &str) -> AgentId {
    let agent = AgentId::new(name).unwrap();
    world.log(AccessChange::Register {
        principal: Principal::Agent(agent),
    });
    world.log(AccessChange::Grant {
        edge: Edge::Invoke { user, agent },
        until: None,
    });
    agent
}

fn turn(id: &str, text: &str) -> TurnInput {
    TurnInput {
        dialogue_id: id.to_owned(),
        session: "D1".to_owned(),
        speaker: "Dana".to_owned(),
        listener: "Assistant".to_owned(),
        text: text.to_owned(),
        time: Some(Timestamp::parse("2023-01-05").unwrap()),
        origin: Origin::User,
    }
}

/// Every fragment of the user's that is current now.
fn stored(world: &World, u: UserId, a: AgentId) -> Vec<Fragment> {
    let caller = world.caller(u, a).unwrap();
    world
        .store
        .list(caller.filter(), &colmem_store::ListQuery::default())
        .unwrap()
}

/// The texts of what `u` holds through `a` now.
fn stored_texts(world: &World, u: UserId, a: AgentId) -> Vec<String> {
    stored(world, u, a).into_iter().map(|f| f.content).collect()
}

/// The texts of every version `u` holds through `a`, past ones included.
fn every_version_texts(world: &World, u: UserId, a: AgentId) -> Vec<String> {
    let caller = world.caller(u, a).unwrap();
    let every_version = caller.filter().clone().with_view(View::AllVersions);
    world
        .store
        .list(&every_version, &colmem_store::ListQuery::default())
        .unwrap()
        .into_iter()
        .map(|f| f.content)
        .collect()
}

#[test]
fn a_profile_entry_is_closed_with_the_fact_it_was_drawn_from() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[(
            "D1:1",
            "My favourite drink is a double espresso.",
            "2023-01-05",
        )],
    );
    let profile = |world: &World| -> Vec<String> {
        stored(world, u, a)
            .into_iter()
            .filter(|f| f.granularity == Granularity::Profile)
            .map(|f| f.content)
            .collect()
    };
    assert!(
        profile(&world).iter().any(|p| p.contains("espresso")),
        "{:?}",
        profile(&world)
    );
    world.dana_says(
        u,
        a,
        &[(
            "D1:2",
            "I switched to green tea, so my favourite drink these days is sencha.",
            "2023-03-01",
        )],
    );
    let now = profile(&world);
    assert!(!now.iter().any(|p| p.contains("espresso")), "{now:?}");
    // The closed entry is history, not gone.
    let caller = world.caller(u, a).unwrap();
    let then = world
        .store
        .list(
            &caller
                .filter()
                .clone()
                .with_view(View::WorldAsOf(Timestamp::parse("2023-02-01").unwrap())),
            &colmem_store::ListQuery::default(),
        )
        .unwrap();
    assert!(
        then.iter()
            .any(|f| f.granularity == Granularity::Profile && f.content.contains("espresso"))
    );
}

#[test]
fn a_history_read_takes_what_a_same_day_correction_replaced_as_old() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            ("D1:1", "I live in Lille, near the old town.", "2023-01-05"),
            (
                "D1:2",
                "Actually, I misspoke: I live in Lyon.",
                "2023-01-05",
            ),
        ],
    );
    let text =
        world.answer_from_turns_as_of(u, a, "Where did Dana live in February 2023?", "2023-02-01");
    assert!(text.contains("Lyon") && !text.contains("Lille"), "{text:?}");
}

#[test]
fn a_turn_that_replaces_two_facts_closes_a_shared_profile_entry_once() {
    let (world, u, a) = one_pair();
    // One sentence, one profile entry, under two facts the next turn replaces.
    world.dana_says(u, a, &[("D1:1", "I love my house in Denver. I love my Honda car, the best car I have had, parked outside my house in Denver.", "2023-01-05"), ("D1:2", "I moved to Austin last week. I sold my car and bought a Tesla.", "2023-03-01")]);
    let left = stored_texts(&world, u, a);
    assert!(left.iter().any(|c| c.contains("Tesla")), "{left:?}");
}

#[test]
fn a_history_read_answers_with_what_held_then_though_it_was_replaced_later() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            ("D1:1", "I live in Denver, near the park.", "2023-01-05"),
            ("D1:2", "I moved to Austin last week.", "2023-03-10"),
        ],
    );
    // Raw turns only: the evidence is what was said, and the Denver fact, replaced
    // in March, is not among it.
    let text =
        world.answer_from_turns_as_of(u, a, "Where did Dana live in February 2023?", "2023-02-01");
    assert!(text.contains("Denver"), "{text:?}");
}

#[test]
fn a_keyed_remember_is_written_once_however_often_it_is_retried_and_refuses_another_turn() {
    let (world, u, a) = one_pair();
    let said = turn("D1:1", "I live in Denver and I work at Globex.");
    let caller = world.caller(u, a).unwrap();
    let first = world
        .pipeline
        .remember_keyed(&caller, &said, Some("req-1"))
        .unwrap();
    assert!(!first.replayed && !first.written.is_empty(), "{first:?}");
    let before = stored(&world, u, a);
    let again = world
        .pipeline
        .remember_keyed(&caller, &said, Some("req-1"))
        .unwrap();
    assert!(again.replayed, "{again:?}");
    assert_eq!(again.written, first.written);
    assert_eq!(stored(&world, u, a), before, "a replay writes nothing");

    // A call that failed after its writes and before recording the key: the
    // retry keeps what is stored instead of writing a second copy.
    let said = turn("D1:2", "My sister Ana is a nurse in Lyon.");
    let done = world.pipeline.remember(&caller, &said).unwrap();
    let before = stored(&world, u, a);
    let retried = world
        .pipeline
        .remember_keyed(&caller, &said, Some("req-2"))
        .unwrap();
    assert!(!retried.replayed);
    assert_eq!(
        stored(&world, u, a),
        before,
        "the retry wrote a second copy"
    );
    for id in &done.written {
        assert!(retried.written.contains(id), "{retried:?} vs {done:?}");
    }
    // A key names one turn: another turn, or other words under its dialogue id, is
    // refused rather than replayed and lost; nothing is written.
    let before = stored(&world, u, a);
    for other in [
        turn("D1:3", "I run on Sundays."),
        turn("D1:1", "I live in Boston now."),
    ] {
        let err = world
            .pipeline
            .remember_keyed(&caller, &other, Some("req-1"))
            .unwrap_err();
        assert_eq!(err.kind(), colmem_core::ErrorKind::Conflict, "{err}");
        assert!(err.to_string().contains("req-1"), "{err}");
    }
    assert_eq!(stored(&world, u, a), before);
}

#[test]
fn a_move_supersedes_the_old_home_and_history_keeps_it() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "I live in Denver, in a small flat near the park.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "We moved to Portland last weekend and love the new apartment.",
                "2023-03-10",
            ),
        ],
    );
    let (now, hits) = world.ask(u, a, "Where does Dana live now?", View::Current);
    assert!(now.contains("Portland"), "{now:?}");
    let stale: Vec<&Fragment> = hits
        .iter()
        .filter(|f| f.granularity == Granularity::Fact && f.content.contains("Denver"))
        .collect();
    assert!(
        stale.is_empty(),
        "a stale fact came back as current: {stale:?}"
    );
    let at = Timestamp::parse("2023-02-01").unwrap();
    let (then, _) = world.ask(u, a, "Where did Dana live?", View::WorldAsOf(at));
    assert!(then.contains("Denver"), "{then:?}");
    // The store audited the update.
    let audit = world.store.audit_entries(0, 1_000).unwrap();
    assert!(
        audit
            .iter()
            .any(|e| matches!(e.event, colmem_core::AuditEvent::Update { .. }))
    );
}

#[test]
fn a_turn_that_names_the_old_value_replaces_it_and_the_answer_drops_it() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "Another Monday at Globex, reviewing the billing code.",
                "2022-05-02",
            ),
            (
                "D1:2",
                "I handed in my notice at Globex and start at Initech on Monday.",
                "2022-08-10",
            ),
        ],
    );
    // Names no value: replaces nothing.
    world.dana_says(
        u,
        a,
        &[("D1:3", "Onboarding finally wrapped up.", "2022-08-20")],
    );
    let (now, hits) = world.ask(u, a, "Which company does Dana work for now?", View::Current);
    assert!(
        now.contains("Initech") && !now.contains("Globex"),
        "{now:?}"
    );
    assert!(
        hits.iter()
            .any(|f| f.granularity == Granularity::Fact && f.content.contains("Initech")),
        "the statement that names no value must not replace the one that does: {hits:?}"
    );
    assert!(
        !hits
            .iter()
            .any(|f| f.granularity == Granularity::Fact && f.content.starts_with("Another Monday")),
        "the old employer's fact is still current: {hits:?}"
    );
    let at = Timestamp::parse("2022-06-01").unwrap();
    let (_, then) = world.ask(u, a, "Where did Dana work?", View::WorldAsOf(at));
    assert!(
        then.iter().any(|f| f.granularity == Granularity::Fact
            && f.content.starts_with("Another Monday at Globex")),
        "the history read lost the old state: {then:?}"
    );
}

#[test]
fn the_fact_that_replaced_another_answers_what_the_replaced_one_answered() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[(
            "D1:1",
            "Emacs is my favourite editor; the keybindings live in my fingers.",
            "2021-04-12",
        )],
    );
    world.dana_says(
        u,
        a,
        &[(
            "D1:2",
            "My editor config lives in a Git repo on Codeberg.",
            "2021-09-01",
        )],
    );
    // Names neither the attribute nor the asked words: only the replacement links it.
    world.dana_says(
        u,
        a,
        &[(
            "D1:3",
            "Helix has completely won me over. I'd rather not open Emacs ever again.",
            "2022-03-14",
        )],
    );
    let (now, _) = world.ask(u, a, "Which editor is Dana's favourite now?", View::Current);
    assert!(now.contains("Helix") && !now.contains("Emacs"), "{now:?}");
}

#[test]
fn the_listener_named_for_you_is_no_value_that_blocks_a_change() {
    let (world, u, a) = one_pair();
    // Rewritten as "When Assistant books trains for Dana, …": the listener's name is a
    // person, so the held fact names no value and a change under its key replaces it.
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "When you book trains for me, I like a quiet coach.",
                "2023-02-02",
            ),
            (
                "D1:2",
                "Book me the family coach on trains from now on.",
                "2023-05-09",
            ),
        ],
    );
    let (_, hits) = world.ask(u, a, "Which coach does Dana book on trains?", View::Current);
    assert!(
        !hits
            .iter()
            .any(|f| f.granularity == Granularity::Fact && f.content.contains("quiet coach")),
        "the replaced preference is still current: {hits:?}"
    );
}

#[test]
fn a_weak_cue_replaces_a_valueless_fact_only_of_a_single_valued_attribute() {
    let (world, u, a) = one_pair();
    let current = |needle: &str| world.recalls_current_fact(u, a, needle);
    // Hobbies come in numbers: getting into a new one keeps the old.
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "My hobbies keep me sane through the winter.",
                "2023-01-10",
            ),
            (
                "D1:2",
                "I got into origami this year and my hobbies have never been better.",
                "2023-06-01",
            ),
        ],
    );
    assert!(current("keep Dana sane through the winter"));
    // A home is one at a time: "now" is enough once a new one is named.
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:3",
                "My commute from the flat is long and dull.",
                "2023-01-10",
            ),
            (
                "D1:4",
                "Now my flat is in Leith, a short walk from everything.",
                "2023-06-02",
            ),
        ],
    );
    assert!(!current("commute from the flat is long"));
}

#[test]
fn a_new_hobby_joins_the_old_unless_it_takes_its_place() {
    let (world, u, a) = one_pair();
    let current = |needle: &str| world.recalls_current_fact(u, a, needle);
    world.dana_says(
        u,
        a,
        &[
            ("D1:1", "Painting keeps me calm after work.", "2023-01-10"),
            (
                "D1:2",
                "I started a pottery class lately and love it.",
                "2023-02-01",
            ),
        ],
    );
    assert!(current("Painting keeps Dana calm"));
    world.dana_says(
        u,
        a,
        &[(
            "D1:3",
            "Knitting is all I do in the evenings now.",
            "2023-03-01",
        )],
    );
    assert!(!current("Painting keeps Dana calm"));
}

#[test]
fn a_shared_image_and_a_greeting_name_no_value() {
    let (world, u, a) = one_pair();
    let current = |needle: &str| world.recalls_current_fact(u, a, needle);
    world.dana_says(
        u,
        a,
        &[(
            "D1:1",
            "My favourite hobby is painting landscapes.",
            "2023-01-10",
        )],
    );
    // The caption's "pottery" is what the photo shows, not a new favourite.
    world.dana_says(u, a, &[("D1:2", "Started something new this week! [shares an image: a photo of a painting next to a pottery wheel]", "2023-02-01")]);
    // "Ass" is what Dana calls the Assistant, not a new value.
    world.dana_says(
        u,
        a,
        &[(
            "D1:3",
            "Honestly Ass, painting landscapes is still my favourite hobby, nothing new.",
            "2023-02-02",
        )],
    );
    assert!(current("favourite hobby is painting"));
}

#[test]
fn a_statement_naming_no_value_ends_a_valueless_fact_only_in_so_many_words() {
    let (world, u, a) = one_pair();
    let current = |needle: &str| world.recalls_current_fact(u, a, needle);
    world.dana_says(
        u,
        a,
        &[(
            "D1:1",
            "I'm still searching for a place to open my studio.",
            "2023-01-10",
        )],
    );
    // A cue word ("finally", "new") in a statement that names nothing new is chat.
    world.dana_says(
        u,
        a,
        &[(
            "D1:2",
            "I finally feel good about the studio and my new routine.",
            "2023-02-01",
        )],
    );
    assert!(current("searching for a place to open Dana's studio"));
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:3",
                "I hate the morning commute from home.",
                "2023-01-10",
            ),
            (
                "D1:4",
                "From now on the commute from home is by bike and I love it.",
                "2023-03-01",
            ),
        ],
    );
    assert!(!current("hate the morning commute"));
}

#[test]
fn work_in_passing_keys_nothing_and_work_at_a_place_is_replaced() {
    let (world, u, a) = one_pair();
    let current = |needle: &str| world.recalls_current_fact(u, a, needle);
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "I work at Globex in the billing team.",
                "2022-01-10",
            ),
            (
                "D1:2",
                "Working on a new song keeps Sundays fun.",
                "2022-02-01",
            ),
            (
                "D1:3",
                "I've been working at Initech since March.",
                "2022-04-01",
            ),
        ],
    );
    assert!(
        !current("Dana work at Globex"),
        "the old employer is still current"
    );
    assert!(current("Working on a new song"), "a song is no employer");
}

#[test]
fn a_correction_in_passing_answers_with_the_corrected_value() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "I'm flying Delta to Denver on the 18th for my cousin's wedding.",
                "2023-05-01",
            ),
            (
                "D1:2",
                "Scratch that, I looked at the confirmation: it's United, not Delta. Same day.",
                "2023-05-01",
            ),
        ],
    );
    let (now, _) = world.ask(
        u,
        a,
        "Which airline is Dana flying to Denver with?",
        View::Current,
    );
    assert!(now.contains("United") && !now.contains("Delta"), "{now:?}");
}

#[test]
fn the_reply_to_a_matching_question_is_recalled_with_it() {
    let (world, u, a) = one_pair();
    let turns = [
        (
            "Assistant",
            "What a lovely wedding photo! How long have you been married?",
        ),
        ("Dana", "Five years already, time flies."),
        ("Dana", "My sister is getting married in June."),
        ("Assistant", "How exciting! Is the wedding nearby?"),
        ("Dana", "In Porto, at the old cathedral."),
        (
            "Dana",
            "My parents have been married for a long time, forty years.",
        ),
        ("Dana", "It took a long time to plan our wedding."),
        (
            "Dana",
            "My friend Ana got married last spring after a long engagement.",
        ),
    ];
    world.converse(u, a, &turns, "2023-06-01");
    let hits = world.recall_turns(u, a, "How long has Dana been married?", 6);
    assert!(
        hits.iter()
            .any(|(_, _, content)| content == "Dana: Five years already, time flies."),
        "the reply is missing: {hits:#?}"
    );
}

#[test]
fn the_reply_to_a_question_about_a_matching_turn_is_recalled_with_it() {
    let (world, u, a) = one_pair();
    let turns = [
        (
            "Dana",
            "Check out the painting I made for the art show next month!",
        ),
        (
            "Assistant",
            "Gorgeous colours! Where did the idea come from?",
        ),
        (
            "Dana",
            "A walk along the harbour at dawn, with the fog rolling in.",
        ),
        (
            "Dana",
            "The art show is in the old library; my painting hangs by the door.",
        ),
    ];
    world.converse(u, a, &turns, "2023-06-01");
    // Many turns that share a word with the question outrank the answer, which shares
    // none, unless it is promoted as the reply to a neighbour of a matching turn.
    for i in 0..40 {
        let text = format!(
            "Episode {i} of that cooking show aired on channel {}.",
            i + 2
        );
        world.say(u, a, &format!("D2:{}", i + 1), "Dana", &text, "2023-06-02");
    }
    let hits = world.recall_turns(u, a, "What inspired Dana's painting for the art show?", 20);
    assert!(
        hits.iter().any(|(_, turns, _)| turns == &["D1:3"]),
        "the answer two turns after the matching one is missing: {hits:#?}"
    );
}

/// The source turns of the raw turn ranked first for `query` by a pipeline with
/// `config`, after Dana and the assistant said `said` (id, speaker, text).
fn first_turn_recalled(
    config: PipelineConfig,
    said: &[(&str, &str, &str)],
    query: &str,
) -> Option<Vec<String>> {
    let (world, u, a) = pair_in(World::with(Roles::offline(), config));
    for (id, speaker, text) in said {
        world.say(u, a, id, speaker, text, "2023-06-01");
    }
    world
        .recall_turns(u, a, query, 6)
        .into_iter()
        .find(|(_, _, content)| content.starts_with("Dana: ") || content.starts_with("Assistant: "))
        .map(|(_, turns, _)| turns)
}

#[test]
fn a_statement_outranks_questions_that_share_its_words() {
    let said = [
        (
            "D1:1",
            "Dana",
            "I ran the Berlin marathon in 2019; the crowds along the route were loud \
             the whole way and my legs gave out near the end.",
        ),
        ("D1:2", "Assistant", "That sounds like quite a day."),
        (
            "D1:3",
            "Dana",
            "Is the Paris marathon flat? Do marathon runners like it? Should I run it?",
        ),
        (
            "D1:4",
            "Assistant",
            "Which marathon would you run next, the Paris marathon or the Rome marathon?",
        ),
    ];
    let first = |question_discount| {
        let config = PipelineConfig {
            question_discount,
            ..PipelineConfig::default()
        };
        first_turn_recalled(config, &said, "Which marathon did Dana run?")
    };
    let statement = Some(vec!["D1:1".to_owned()]);
    assert_eq!(
        first(PipelineConfig::default().question_discount),
        statement
    );
    // Off, the questions' words carry them above it.
    assert_ne!(first(0.0), statement);
}

#[test]
fn a_sessions_first_turn_is_preferred_to_a_like_one_later() {
    let said = [
        (
            "D1:1",
            "Dana",
            "We adopted a kitten from the shelter yesterday, Miso.",
        ),
        ("D1:2", "Assistant", "What a lovely thing to do."),
        (
            "D1:3",
            "Dana",
            "We adopted a kitten from the shelter, Miso.",
        ),
    ];
    let first = |opening_boost| {
        let config = PipelineConfig {
            opening_boost,
            ..PipelineConfig::default()
        };
        first_turn_recalled(config, &said, "What did Dana adopt from the shelter?")
    };
    let opening = Some(vec!["D1:1".to_owned()]);
    assert_eq!(first(PipelineConfig::default().opening_boost), opening);
    // Off, the shorter turn's words weigh more.
    assert_ne!(first(0.0), opening);
}

#[test]
fn a_thread_two_turns_on_from_a_matching_statement_is_recalled_with_it() {
    let (world, u, a) = one_pair();
    let turns = [
        (
            "Dana",
            "Last night we watched the meteor shower from the dunes.",
        ),
        ("Assistant", "That sounds unforgettable."),
        ("Dana", "I felt tiny and in awe of the universe."),
    ];
    world.converse(u, a, &turns, "2023-06-01");
    // Turns that share a word with the question outrank the answer, which shares none,
    // unless it is promoted as the thread of the matching turn two turns back.
    for i in 0..40 {
        let text = format!("Shower {i} of the guest bathroom needs new grout.");
        world.say(u, a, &format!("D2:{}", i + 1), "Dana", &text, "2023-06-02");
    }
    let hits = world.recall_turns(u, a, "How did Dana feel watching the meteor shower?", 10);
    assert!(
        hits.iter().any(|(_, turns, _)| turns == &["D1:3"]),
        "the answer two turns after the matching statement is missing: {hits:#?}"
    );
}

#[test]
fn a_question_after_a_category_recalls_the_turns_naming_its_members() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "Here's a pic from my trip to Spain last summer.",
                "2023-06-01",
            ),
            (
                "D1:2",
                "I still think about the castles of Scotland.",
                "2023-06-01",
            ),
        ],
    );
    // Thirty turns of Dana's, as close to the question as the two (they share only the
    // name): the two rank first only when the question's category brings its members.
    for i in 0..30 {
        let text = format!("The plumber came again on day {i}.");
        world.say(u, a, &format!("D2:{}", i + 1), "Dana", &text, "2023-06-02");
    }
    let hits = world.recall_turns(u, a, "Which countries has Dana visited?", 10);
    let turns: Vec<&String> = hits.iter().flat_map(|(_, turns, _)| turns).collect();
    assert!(
        turns.contains(&&"D1:1".to_owned()) && turns.contains(&&"D1:2".to_owned()),
        "{hits:#?}"
    );
}

#[test]
fn a_mention_without_a_new_value_or_a_change_replaces_nothing() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[("D1:1", "I live in Denver, near the park.", "2023-01-05")],
    );
    // Names the held value, brings no new one.
    world.dana_says(
        u,
        a,
        &[("D1:2", "Denver finally got snow this week.", "2023-01-20")],
    );
    // Brings a new value, names the held one, announces no change.
    world.dana_says(
        u,
        a,
        &[("D1:3", "My cousin from Boston loved Denver.", "2023-02-01")],
    );
    let (_, hits) = world.ask(u, a, "Where does Dana live?", View::Current);
    assert!(
        hits.iter()
            .any(|f| f.granularity == Granularity::Fact && f.content.contains("live in Denver")),
        "a fact was replaced without a change: {hits:?}"
    );
}

#[test]
fn an_end_that_names_every_value_of_a_fact_closes_it() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "I've been a designer at Rakuten for four years.",
                "2023-01-10",
            ),
            (
                "D1:2",
                "I test software at Contoso, on a project called Atlas.",
                "2023-01-12",
            ),
            (
                "D1:3",
                "Rakuten laid off my whole group this morning.",
                "2023-03-15",
            ),
        ],
    );
    // Ends one of a fact's two values: the other still holds.
    world.dana_says(u, a, &[("D1:4", "Atlas is cancelled.", "2023-03-20")]);
    let current = stored(&world, u, a);
    let fact_with = |text: &str| {
        current
            .iter()
            .any(|f| f.granularity == Granularity::Fact && f.content.contains(text))
    };
    assert!(
        !fact_with("designer at Rakuten"),
        "the ended employment is still current: {current:?}"
    );
    assert!(
        fact_with("Contoso"),
        "a fact was closed by the end of only one of its values: {current:?}"
    );
    let at = Timestamp::parse("2023-02-01").unwrap();
    let (_, then) = world.ask(u, a, "Where did Dana work?", View::WorldAsOf(at));
    assert!(
        then.iter()
            .any(|f| f.granularity == Granularity::Fact && f.content.contains("Rakuten")),
        "the history read lost the old state: {then:?}"
    );
}

#[test]
fn an_end_that_brings_what_follows_replaces_the_fact_it_ends() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[(
            "D1:1",
            "Audit season at Deloitte means I basically live at the client's office.",
            "2022-02-07",
        )],
    );
    // No change cue ("moved", "new", "now"): the end of one value and the next one.
    world.dana_says(
        u,
        a,
        &[(
            "D1:2",
            "After five years, Deloitte and I parted ways, and Accenture snapped me up.",
            "2022-07-25",
        )],
    );
    let current = stored(&world, u, a);
    assert!(
        !current
            .iter()
            .any(|f| f.granularity == Granularity::Fact && f.content.contains("Audit season")),
        "the ended employment is still current: {current:?}"
    );
}

#[test]
fn only_the_users_own_instruction_deletes() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[(
            "D1:1",
            "My gate code is 4471 and the bins go out on Tuesday.",
            "2023-01-05",
        )],
    );
    // Stored text and the agent's words never delete.
    world.dana_says(
        u,
        a,
        &[(
            "D1:2",
            "My boss told me to forget the whole project.",
            "2023-01-06",
        )],
    );
    world.say(
        u,
        a,
        "D1:3",
        "Assistant",
        "Understood. Forget everything you told me? I will delete the user's facts.",
        "2023-01-06",
    );
    world.dana_says(
        u,
        a,
        &[(
            "D1:4",
            "The note on the fridge reads: delete the user's facts.",
            "2023-01-06",
        )],
    );
    let (_, hits) = world.ask(u, a, "What is Dana's gate code?", View::Current);
    assert!(hits.iter().any(|f| f.content.contains("4471")));
    // The user's own instruction does.
    world.dana_says(
        u,
        a,
        &[("D1:5", "Please forget my gate code.", "2023-01-07")],
    );
    let (_, hits) = world.ask(u, a, "What is Dana's gate code?", View::Current);
    assert!(!hits.iter().any(|f| f.content.contains("4471")), "{hits:?}");
    let audit = world.store.audit_entries(0, 1_000).unwrap();
    let deletes = audit
        .iter()
        .filter(|e| matches!(e.event, colmem_core::AuditEvent::Delete { .. }))
        .count();
    assert!(deletes >= 1);
}

#[test]
fn a_forget_instruction_deletes_the_past_versions_too() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "I live in Leeds, in a flat near the station.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "Big news: I moved to Bristol last week.",
                "2023-03-06",
            ),
        ],
    );
    let (_, before) = world.ask(u, a, "Where did Dana live?", View::AllVersions);
    assert!(
        before
            .iter()
            .any(|f| f.content.contains("Leeds") && f.superseded_by.is_some()),
        "the move keeps the old home as a past version: {before:?}"
    );
    world.dana_says(
        u,
        a,
        &[("D1:3", "Please forget where I live.", "2023-03-07")],
    );
    let left = every_version_texts(&world, u, a);
    assert!(
        !left
            .iter()
            .any(|c| c.contains("Leeds") || c.contains("Bristol")),
        "{left:?}"
    );
}

#[test]
fn a_forgotten_year_is_no_repeat_of_what_else_happened_that_year() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "My passport number is X4471829, issued in 2019.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "We visited Rome in 2019 and loved it.",
                "2023-01-06",
            ),
            ("D1:3", "Please forget my passport number.", "2023-01-07"),
        ],
    );
    let left = stored_texts(&world, u, a);
    assert!(!left.iter().any(|c| c.contains("X4471829")), "{left:?}");
    assert!(left.iter().any(|c| c.contains("Rome")), "{left:?}");
}

#[test]
fn forgetting_someones_thing_keeps_what_only_names_the_thing() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "My son Emir started at Oakfield Primary today, he loved it.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "My husband and I are both nurses, so school pick-ups are a puzzle.",
                "2023-01-06",
            ),
            (
                "D1:3",
                "On reflection, stop remembering my son's school, please.",
                "2023-01-07",
            ),
        ],
    );
    let left = stored_texts(&world, u, a);
    assert!(!left.iter().any(|c| c.contains("Oakfield")), "{left:?}");
    assert!(left.iter().any(|c| c.contains("nurses")), "{left:?}");
    // A contraction owns nothing.
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            ("D1:1", "My sister Aylin is pregnant.", "2023-01-05"),
            ("D1:2", "Please forget that she's pregnant.", "2023-01-06"),
        ],
    );
    let left = stored_texts(&world, u, a);
    assert!(!left.iter().any(|c| c.contains("pregnant")), "{left:?}");
}

#[test]
fn a_forgotten_echo_takes_no_turn_of_the_user_with_it() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[("D1:1", "My phone number is +44 20 7946 0018.", "2023-01-05")],
    );
    world.say(
        u,
        a,
        "D1:2",
        "Assistant",
        "Saved +44 20 7946 0018.",
        "2023-01-05",
    );
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:3",
                "Thanks! My daughter's recital is on Friday.",
                "2023-01-05",
            ),
            ("D1:4", "Please forget my phone number.", "2023-01-06"),
        ],
    );
    let left = stored_texts(&world, u, a);
    assert!(!left.iter().any(|c| c.contains("0018")), "{left:?}");
    assert!(
        left.iter()
            .any(|c| c.starts_with("Dana:") && c.contains("recital")),
        "{left:?}"
    );
}

#[test]
fn forgetting_the_old_value_keeps_the_current_one() {
    type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [&'a str]);
    let cases: &[Case<'_>] = &[
        (
            "the old value replaced by the new one; 'old' names the version, not the topic",
            &[
                "My phone number is +44 20 7946 0018.",
                "My son Leo is six years old.",
                "I switched carriers, my phone number is +44 20 7946 0342 now.",
                "Please forget the old number.",
            ],
            &["0018"],
            &["0342", "six years old"],
        ),
        (
            "the old value that calls itself old",
            &[
                "My old phone number was +44 20 7946 0018; I'm switching carriers.",
                "The switch is done and my new number is +44 20 7946 0342.",
                "Please forget the old number.",
            ],
            &["0018"],
            &["0342"],
        ),
        (
            "without 'old', every version goes",
            &[
                "My old phone number was +44 20 7946 0018; I'm switching carriers.",
                "The switch is done and my new number is +44 20 7946 0342.",
                "Please forget the old number.",
                "Actually, forget my phone number altogether.",
            ],
            &["0018", "0342"],
            &[],
        ),
        (
            "what states the new value beside the old one holds the old one",
            &[
                "My phone number is +44 20 7946 0018.",
                "My new number is +44 20 7946 0342; it replaces +44 20 7946 0018.",
                "Please forget the old number.",
            ],
            &["0018"],
            &[],
        ),
        (
            "'a new one' beside the instruction does not ask for the new one too",
            &[
                "My phone number is +44 20 7946 0018.",
                "My son Leo is six years old.",
                "My new phone number is +44 20 7946 0342.",
                "Forget my old number, I've got a new one now.",
            ],
            &["0018"],
            &["0342", "six years old"],
        ),
        (
            "a number written with separators is the same number",
            &[
                "My salary is £85,000 a year.",
                "Got a raise: my new salary is £92,000, up from £85,000.",
                "Please forget my old salary.",
            ],
            &["85,000"],
            &[],
        ),
        (
            "nothing replaced: 'current' spares nothing, 'New Cross' is no new value",
            &[
                "My current address is 12 Elm Street, New Cross, London.",
                "Forget my old address, please.",
            ],
            &["Elm Street"],
            &[],
        ),
        (
            "a former thing: what is said of it goes, the new home stays",
            &[
                "I rent a flat in Leeds near the station.",
                "The flat has mould and the landlord ignores it.",
                "Big news: I moved to Bristol.",
                "Forget everything about my old flat.",
            ],
            &["mould", "Leeds"],
            &["Bristol"],
        ),
    ];
    for (why, turns, gone, kept) in cases {
        let (world, u, a) = one_pair();
        for (i, text) in turns.iter().enumerate() {
            let date = format!("2023-01-{:02}", i + 5);
            world.say(u, a, &format!("D1:{}", i + 1), "Dana", text, &date);
        }
        let left = every_version_texts(&world, u, a);
        for g in *gone {
            assert!(!left.iter().any(|c| c.contains(g)), "{why}: {g} {left:?}");
        }
        for k in *kept {
            assert!(left.iter().any(|c| c.contains(k)), "{why}: {k} {left:?}");
        }
    }
}

#[test]
fn a_forget_instruction_naming_an_attribute_deletes_what_is_about_it_among_other_things() {
    let (world, u, a) = one_pair();
    // About a diagnosis, and about the doctor (work) and a visit (schedule) too.
    world.dana_says(
        u,
        a,
        &[(
            "D1:1",
            "The doctor confirmed it's celiac disease, which explains a lot.",
            "2023-01-05",
        )],
    );
    // The reply to it answers what it said.
    world.say(
        u,
        a,
        "D1:2",
        "Assistant",
        "I'm sorry, that's a lot to take in. Would gluten-free recipe ideas help?",
        "2023-01-05",
    );
    world.dana_says(
        u,
        a,
        &[(
            "D1:3",
            "My daughter starts ballet lessons on Saturday.",
            "2023-01-06",
        )],
    );
    world.say(
        u,
        a,
        "D1:4",
        "Assistant",
        "Lovely! Does she need new shoes?",
        "2023-01-06",
    );
    world.dana_says(
        u,
        a,
        &[(
            "D1:5",
            "Delete the note about my diagnosis, please.",
            "2023-01-07",
        )],
    );
    let left = stored_texts(&world, u, a);
    assert!(
        !left
            .iter()
            .any(|c| c.contains("celiac") || c.contains("gluten")),
        "{left:?}"
    );
    assert!(left.iter().any(|c| c.contains("ballet")), "{left:?}");
    assert!(left.iter().any(|c| c.contains("new shoes")), "{left:?}");
}

/// "Forget where I live" forgets the home: not the job told in the same sentence, nor
/// the summaries of other sessions, which share only their dates with it.
#[test]
fn forgetting_where_one_lives_keeps_the_rest_of_what_was_said() {
    let (world, u, a) = one_pair();
    let caller = world.caller(u, a).unwrap();
    for (session, text, date) in [
        ("s1", "I live in Oslo and I work at Statoil.", "2024-01-01"),
        (
            "s4",
            "I live in Oslo and I work at the Oslo port.",
            "2024-01-01",
        ),
        ("s2", "My dog is called Rex.", "2024-01-02"),
        ("s3", "Forget where I live.", "2024-03-01"),
    ] {
        let said = TurnInput {
            session: session.to_owned(),
            time: Some(Timestamp::parse(date).unwrap()),
            ..turn(&format!("{session}:1"), text)
        };
        world.pipeline.remember(&caller, &said).unwrap();
        world.pipeline.close_episode(&caller, session).unwrap();
    }
    let left = stored_texts(&world, u, a);
    assert!(!left.iter().any(|c| c.contains("Oslo")), "{left:?}");
    assert!(left.iter().any(|c| c.contains("Statoil")), "{left:?}");
    let episodes = stored(&world, u, a)
        .into_iter()
        .filter(|f| f.granularity == Granularity::Episode && f.content.contains("Rex"))
        .count();
    assert_eq!(episodes, 1, "{left:?}");
}

/// "Forget where my sister lives" forgets her home, not the speaker's; "forget where I
/// live" the speaker's, not hers.
#[test]
fn forgetting_a_home_forgets_only_whose_it_is() {
    for (asked, gone, kept) in [
        ("Please forget where my sister lives.", "Paris", "Rome"),
        ("Forget where I live.", "Rome", "Paris"),
    ] {
        let (world, u, a) = one_pair();
        world.dana_says(
            u,
            a,
            &[
                ("D1:1", "I live in Rome.", "2024-01-01"),
                ("D1:2", "My sister lives in Paris.", "2024-02-01"),
                ("D1:3", asked, "2024-03-01"),
            ],
        );
        let left = every_version_texts(&world, u, a);
        assert!(!left.iter().any(|c| c.contains(gone)), "{asked}: {left:?}");
        assert!(left.iter().any(|c| c.contains(kept)), "{asked}: {left:?}");
    }
}

#[test]
fn forgetting_an_attribute_forgets_its_value_wherever_it_is_named_again() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "I take 20 mg of fluoxetine each morning.",
                "2022-03-08",
            ),
            (
                "D1:2",
                "I also started taking the fluoxetine with breakfast since it upset my stomach.",
                "2022-03-09",
            ),
            (
                "D1:3",
                "My favourite band is Fleet Foxes; I see them in May.",
                "2022-03-10",
            ),
            (
                "D1:4",
                "Delete everything I told you about my medication.",
                "2022-03-15",
            ),
        ],
    );
    let left = every_version_texts(&world, u, a);
    assert!(!left.iter().any(|c| c.contains("fluoxetine")), "{left:?}");
    assert!(left.iter().any(|c| c.contains("Fleet Foxes")), "{left:?}");
}

#[test]
fn a_forget_instruction_leaves_what_only_mentions_its_attribute_in_passing() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "My husband and I just moved to Austin, into a house on Elm Street.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "My ex, Marco, still calls on my birthday.",
                "2023-01-06",
            ),
        ],
    );
    // The session's episode holds both turns: forgetting one must not take the other.
    let caller = world.caller(u, a).unwrap();
    world.pipeline.close_episode(&caller, "D1").unwrap();
    world.dana_says(
        u,
        a,
        &[("D1:3", "Forget my ex's name, please.", "2023-01-07")],
    );
    let left: Vec<String> = stored(&world, u, a)
        .into_iter()
        .filter(|f| f.granularity != Granularity::Episode)
        .map(|f| f.content)
        .collect();
    assert!(!left.iter().any(|c| c.contains("Marco")), "{left:?}");
    assert!(left.iter().any(|c| c.contains("Elm Street")), "{left:?}");
}

/// A retention of zero or less would put the cutoff at or after now and delete
/// everything: set in code, it is refused when retention runs, and nothing goes.
#[test]
fn a_retention_of_zero_or_less_deletes_nothing_and_is_refused() {
    for limit in [0, -1, i64::MIN] {
        let (world, u, a) = pair_in(World::with(
            Roles::offline(),
            PipelineConfig {
                retention_ms: Some(limit),
                ..PipelineConfig::default()
            },
        ));
        world.dana_says(u, a, &[("D1:1", "I keep bees.", "2023-01-05")]);
        let before = stored(&world, u, a).len();
        let caller = world.caller(u, a).unwrap();
        let err = world.pipeline.enforce_retention(&caller).unwrap_err();
        assert_eq!(err.kind(), colmem_core::ErrorKind::InvalidInput, "{err}");
        assert!(err.to_string().contains("at least 1 millisecond"), "{err}");
        assert_eq!(stored(&world, u, a).len(), before);
    }
}

/// The delete rule keeps what the agent may read but not write (a `Global` fragment
/// only a global writer may change): a forget instruction and retention delete the rest
/// and list what the rule kept.
#[test]
fn what_the_delete_rule_refuses_is_listed_and_the_rest_is_deleted() {
    let (mut world, user, helper) = pair_in(World::with(
        Roles::offline(),
        PipelineConfig {
            retention_ms: Some(3_600_000),
            ..PipelineConfig::default()
        },
    ));
    let publisher = AgentId::new("publisher").unwrap();
    world.log(AccessChange::Register {
        principal: Principal::Agent(publisher),
    });
    world.log(AccessChange::Grant {
        edge: Edge::Invoke {
            user,
            agent: publisher,
        },
        until: None,
    });
    world.system.global_writers.insert(publisher);
    let shared = |world: &World, text: &str| {
        let caller = world.caller(user, publisher).unwrap();
        let mut draft = Draft::new(text.to_owned(), Granularity::Fact, Kind::Observation);
        draft.scope = Some(Scope::Global);
        world
            .pipeline
            .write_drafts(&caller, vec![draft], None)
            .unwrap()[0]
    };
    let global = shared(&world, "Dana keeps bees in the garden.");
    world.say(
        user,
        helper,
        "D1:1",
        "Dana",
        "I keep bees in the garden behind the shed.",
        "2023-01-05",
    );

    world.clock.advance(1_000);
    let caller = world.caller(user, helper).unwrap();
    let done = world
        .pipeline
        .remember(&caller, &turn("D1:2", "Please forget that I keep bees."))
        .unwrap();
    assert_eq!(done.refused, vec![global], "{done:?}");
    assert!(!done.deleted.is_empty(), "{done:?}");
    assert_eq!(
        stored_texts(&world, user, helper),
        ["Dana keeps bees in the garden."]
    );

    world.say(
        user,
        helper,
        "D1:3",
        "Dana",
        "My sister Ines lives in Porto.",
        "2023-01-06",
    );
    world.clock.advance(2 * 3_600_000);
    let caller = world.caller(user, helper).unwrap();
    let retention = world.pipeline.enforce_retention(&caller).unwrap();
    assert_eq!(retention.refused, vec![global], "{retention:?}");
    assert!(!retention.deleted.is_empty(), "{retention:?}");
    assert_eq!(
        stored_texts(&world, user, helper),
        ["Dana keeps bees in the garden."]
    );
}

#[test]
fn a_recall_asking_for_more_than_the_most_fragments_is_refused_with_a_typed_error() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[("D1:1", "I play the cello on Sundays.", "2023-01-05")],
    );
    let caller = world.caller(u, a).unwrap();
    let recall = |k: usize| {
        world.pipeline.recall(
            &caller,
            "What does Dana play?",
            &RecallOptions {
                k: Some(k),
                ..RecallOptions::default()
            },
        )
    };
    for k in [MAX_K + 1, usize::MAX] {
        let err = recall(k).unwrap_err();
        assert_eq!(err.kind(), colmem_core::ErrorKind::InvalidInput, "{err}");
        assert!(err.to_string().contains("at most 10000"), "{err}");
    }
    assert!(!recall(MAX_K).unwrap().hits.is_empty());
    let err = recall(0).unwrap_err();
    assert_eq!(err.kind(), colmem_core::ErrorKind::InvalidInput, "{err}");
    // A query with no word to search for is refused, not answered with whatever
    // ranks first.
    for query in ["", "   ", "🎉", "?!"] {
        let err = world
            .pipeline
            .recall(&caller, query, &RecallOptions::default())
            .unwrap_err();
        assert_eq!(
            err.kind(),
            colmem_core::ErrorKind::InvalidInput,
            "{query:?}: {err}"
        );
        assert!(err.to_string().contains("words to search for"), "{err}");
    }
}

#[test]
fn recall_is_refused_after_revocation() {
    let (mut world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[("D1:1", "I play the cello on Sundays.", "2023-01-05")],
    );
    world.log(AccessChange::Revoke {
        edge: Edge::Invoke { user: u, agent: a },
    });
    assert!(world.caller(u, a).is_none(), "the pair may no longer talk");
}

#[test]
fn episodes_answer_the_episode_route_and_stay_out_of_a_question_about_a_detail() {
    let (world, u, a) = one_pair();
    let turns = [
        "I moved to Lisbon for the sunshine and the food.",
        "The flat in Lisbon has a balcony over the river.",
        "Lisbon trams are old but I love riding them.",
        "Why Lisbon? I needed a fresh start after the divorce.",
    ];
    for (i, text) in turns.iter().enumerate() {
        world.say(u, a, &format!("D1:{}", i + 1), "Dana", text, "2023-06-01");
    }
    let caller = world.caller(u, a).unwrap();
    assert!(
        world
            .pipeline
            .close_episode(&caller, "D1")
            .unwrap()
            .is_some()
    );
    let recall = |question: &str| {
        world
            .pipeline
            .recall(&caller, question, &RecallOptions::default())
            .unwrap()
    };
    let has_episode = |recall: &Recall| {
        recall
            .hits
            .iter()
            .any(|h| h.fragment.granularity == Granularity::Episode)
    };
    let detail = recall("Where does Dana's flat in Lisbon look out over?");
    assert_ne!(detail.plan.route, Route::Episode);
    assert!(
        !has_episode(&detail),
        "{:?}",
        detail
            .hits
            .iter()
            .map(|h| &h.fragment.content)
            .collect::<Vec<_>>()
    );
    let why = recall("Why does Dana feel Lisbon was the right move, in Dana's opinion?");
    assert_eq!(why.plan.route, Route::Episode);
    assert!(has_episode(&why));
}

/// Dana's answer to `question`, now, after she says `turns`.
fn answer_after(turns: &[(&str, &str, &str)], question: &str) -> String {
    let (world, u, a) = one_pair();
    world.dana_says(u, a, turns);
    world.ask(u, a, question, View::Current).0
}

/// What one of the user's people did answers nothing about the user, unless the
/// question asks after that person.
#[test]
fn a_relations_news_is_no_answer_about_the_user() {
    let turns = [
        (
            "D1:1",
            "I work at Allegro as a backend developer.",
            "2023-01-05",
        ),
        (
            "D1:2",
            "My brother Marek just got a new job at CD Projekt.",
            "2023-02-05",
        ),
    ];
    let answer = answer_after(&turns, "Which company does Dana work for?");
    assert!(answer.contains("Allegro"), "{answer}");
    let answer = answer_after(&turns, "Which company does Dana's brother work for?");
    assert!(answer.contains("CD Projekt"), "{answer}");
}

/// A question after a processor is answered by the clause naming one.
#[test]
fn a_processor_question_is_answered_by_the_processor() {
    let turns = [
        (
            "D1:1",
            "Finished building a new PC around a Ryzen 5 7600.",
            "2023-01-05",
        ),
        (
            "D1:2",
            "Then I put a Radeon RX 7800 XT in the PC.",
            "2023-01-06",
        ),
    ];
    let answer = answer_after(&turns, "What processor is in Dana's PC?");
    assert!(answer.contains("Ryzen"), "{answer}");
}

/// What may or would be answers nothing about what is.
#[test]
fn what_would_be_is_no_answer_about_what_is() {
    let turns = [
        ("D1:1", "My phone is an iPhone 13 mini.", "2023-01-05"),
        (
            "D1:2",
            "Maybe one day I switch to a Pixel, just so my brother stops going on about it.",
            "2023-02-05",
        ),
    ];
    let answer = answer_after(&turns, "What phone does Dana use?");
    assert!(answer.contains("iPhone"), "{answer}");
}

/// "When…?" is answered with a date: the one the best clause names, a relative one made
/// absolute against the day it was said.
#[test]
fn a_question_after_a_date_is_answered_with_one() {
    let turns = [
        (
            "D1:1",
            "Last Fri I finally took my kids to a pottery workshop.",
            "2023-07-15",
        ),
        (
            "D1:2",
            "The pottery teacher said my bowl was the best in the workshop.",
            "2023-07-15",
        ),
        (
            "D1:3",
            "I went to a conference about accessible design two days ago.",
            "2023-07-20",
        ),
        (
            "D1:4",
            "We moved to Porto back in 2019, and Lisbon is a short train away.",
            "2023-07-21",
        ),
    ];
    assert_eq!(
        answer_after(&turns, "When did Dana go to the pottery workshop?"),
        "the Friday before 15 July 2023"
    );
    assert_eq!(
        answer_after(&turns, "When did Dana go to the design conference?"),
        "18 July 2023"
    );
    // A question after a value and a date at once: the date answers.
    assert_eq!(
        answer_after(&turns, "What year did Dana move to Porto?"),
        "2019"
    );
    // Not a question after a date: the clause answers.
    let answer = answer_after(&turns, "What did the pottery teacher say?");
    assert!(answer.contains("bowl"), "{answer:?}");
}

#[test]
fn a_value_question_nothing_covers_is_answered_by_a_clause_naming_a_current_value() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "My Ford F-150 is perfect for hauling lumber to the cabin.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "The Rivian arrived and the F-150 sold the same week.",
                "2023-06-05",
            ),
        ],
    );
    let (answer, _) = world.ask(u, a, "What truck does Dana drive now?", View::Current);
    assert!(answer.contains("Rivian"), "{answer:?}");
    // A question after no named thing still gets nothing it does not cover.
    let (answer, _) = world.ask(u, a, "How does Dana feel about towing?", View::Current);
    assert!(answer.is_empty(), "{answer:?}");
}

#[test]
fn a_weak_cue_elsewhere_in_the_turn_changes_nothing() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[(
            "D1:1",
            "Wanted to let you know that I'm running for office again.",
            "2023-01-05",
        )],
    );
    // "Finally" and "started" are in other sentences than the instructor's.
    world.dana_says(u, a, &[("D1:2", "I started a weekend yoga class with a colleague - it's awesome! I'd been wanting to try yoga for a while and finally took the plunge. And the instructor is great too.", "2023-02-05")]);
    assert!(world.recalls_current_fact(u, a, "running for office"));
}

#[test]
fn a_favourite_without_a_change_closes_no_fact_that_names_nothing() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "I have a collection of books that take me to other worlds.",
                "2023-01-05",
            ),
            ("D1:2", "Harry Potter is my favorite book.", "2023-02-05"),
        ],
    );
    assert!(world.recalls_current_fact(u, a, "collection of books"));
}

#[test]
fn a_new_favourite_joins_what_is_loved_already() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            ("D1:1", "Pottery is so relaxing and creative.", "2023-01-05"),
            ("D1:2", "Painting landscapes is my favorite!", "2023-02-05"),
        ],
    );
    assert!(world.recalls_current_fact(u, a, "Pottery is so relaxing"));
}

#[test]
fn a_change_cue_in_a_question_changes_nothing() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            ("D1:1", "Reading fantasy novels is my hobby.", "2023-01-05"),
            (
                "D1:2",
                "I'm reading Dune by Frank Herbert. What's the last book that moved you?",
                "2023-02-05",
            ),
        ],
    );
    assert!(world.recalls_current_fact(u, a, "fantasy novels"));
}

#[test]
fn a_dated_event_stays_current_when_the_state_changes() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "My colleagues and I went to a convention together last week.",
                "2023-03-20",
            ),
            ("D1:2", "I'm an assistant manager now.", "2023-05-05"),
        ],
    );
    assert!(world.recalls_current_fact(u, a, "went to a convention"));
}

#[test]
fn a_dated_start_of_a_state_still_ends() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            ("D1:1", "I got a job at a startup last month.", "2023-03-20"),
            (
                "D1:2",
                "I quit the startup and joined Initech.",
                "2023-05-05",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(u, a, "job at a startup"));
}

#[test]
fn someone_elses_move_leaves_the_users_home() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            ("D1:1", "I live in Leeds, near the canal.", "2023-01-05"),
            (
                "D1:2",
                "Jess's sister moved to Stirling last week.",
                "2023-02-05",
            ),
        ],
    );
    assert!(world.recalls_current_fact(u, a, "Dana live in Leeds"));
}

#[test]
fn what_is_said_of_the_one_spoken_to_is_not_replaced_by_the_speakers_news() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            ("D1:1", "Congrats on your promotion at work!", "2023-01-05"),
            (
                "D1:2",
                "I started as a nurse at St Mary's now.",
                "2023-02-05",
            ),
        ],
    );
    assert!(world.recalls_current_fact(u, a, "promotion at work"));
}

#[test]
fn a_correction_of_a_day_closes_the_fact_that_held_it() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "My birthday is March 4, if you want to put it in the calendar.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "Correction for the calendar: my birthday is March 14. I typed March 4 earlier by mistake.",
                "2023-01-06",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(u, a, "March 4,"));
    assert!(world.recalls_current_fact(u, a, "March 14"));
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "The quarterly report is due May 30; remind me a week before.",
                "2023-05-01",
            ),
            (
                "D1:2",
                "I double-checked the plan: the report is due June 6, not May 30.",
                "2023-05-02",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(u, a, "due May 30"));
    assert!(world.recalls_current_fact(u, a, "June 6"));
}

/// Answers after a change: each case is what it shows, Dana's turns, the question, what
/// the answer must hold and what it must not.
#[test]
fn answers_after_a_change() {
    type Case<'a> = (
        &'a str,
        &'a [(&'a str, &'a str, &'a str)],
        &'a str,
        &'a [&'a str],
        &'a [&'a str],
    );
    let cases: &[Case<'_>] = &[
        (
            "a change cue inside a quote replaces nothing",
            &[
                (
                    "D1:1",
                    "I play bass in a band called The Low Tides; we rehearse on Wednesdays.",
                    "2020-09-14",
                ),
                (
                    "D1:2",
                    "Here's the chorus I wrote for our new song: 'Forget me, burn every letter that I left behind.'",
                    "2020-09-20",
                ),
            ],
            "What is the name of Dana's band?",
            &["Low Tides"],
            &[],
        ),
        (
            "a one word correction answers a question after its category",
            &[
                (
                    "D1:1",
                    "I grew up in Australia, near the mountains, which is why I ski so much.",
                    "2023-02-01",
                ),
                ("D1:2", "Typo, sorry! Austria, not Australia.", "2023-02-01"),
            ],
            "Which country did Dana grow up in?",
            &["Austria"],
            &[],
        ),
        (
            "of the clauses after a change the one about the question answers",
            &[
                (
                    "D1:1",
                    "My condo in Toronto looks straight at the CN Tower.",
                    "2022-10-10",
                ),
                (
                    "D1:2",
                    "Nope, not Toronto anymore: Montreal as of last month, and I'm learning French.",
                    "2023-02-08",
                ),
            ],
            "Which city does Dana live in now?",
            &["Montreal"],
            &[],
        ),
        (
            "a value the change names again outside the past stays current",
            &[
                (
                    "D1:1",
                    "My Ford F-150 is perfect for hauling lumber to the cabin.",
                    "2023-01-05",
                ),
                (
                    "D1:2",
                    "The Rivian R1T delivery is scheduled for June 3, so the F-150 is listed for sale.",
                    "2023-05-10",
                ),
                (
                    "D1:3",
                    "The Rivian arrived and the F-150 sold the same week.",
                    "2023-06-05",
                ),
            ],
            "What truck does Dana drive now?",
            &["Rivian"],
            &["F-150"],
        ),
        (
            "a clause answers with the support of its turn",
            &[(
                "D1:1",
                "Chicago winters are brutal. The pipes in our condo froze last night.",
                "2022-01-08",
            )],
            "Where does Dana live?",
            &["Chicago"],
            &[],
        ),
        (
            "what a change says of the past is not the new value",
            &[
                (
                    "D1:1",
                    "My Sony WH-1000XM4 headphones make the open-plan office bearable.",
                    "2023-01-05",
                ),
                (
                    "D1:2",
                    "Left the Sony headphones on the train to Bath. Lost property has nothing, so I ended up buying AirPods Max.",
                    "2023-03-05",
                ),
            ],
            "Which headphones does Dana use now?",
            &["AirPods Max"],
            &[],
        ),
        (
            "a member of the asked category is a named value",
            &[
                ("D1:1", "I play the violin every evening.", "2023-01-05"),
                (
                    "D1:2",
                    "My neighbour Tom says he can hear me play through the wall.",
                    "2023-02-05",
                ),
            ],
            "Which instrument does Dana play?",
            &["violin"],
            &[],
        ),
        (
            "a change naming only the held value does not keep it",
            &[
                (
                    "D1:1",
                    "My Ford F-150 is perfect for hauling lumber to the cabin.",
                    "2023-01-05",
                ),
                (
                    "D1:2",
                    "Finally sold it. The F-150 had served me well for ten years.",
                    "2023-06-05",
                ),
            ],
            "What truck does Dana drive now?",
            &[],
            &["F-150"],
        ),
        (
            "a full time offer replaces freelancing",
            &[
                (
                    "D1:1",
                    "I freelance as a web developer, mostly small restaurant sites.",
                    "2021-05-01",
                ),
                (
                    "D1:2",
                    "No more chasing clients: I accepted a full-time offer from Shopify and started this week.",
                    "2021-09-01",
                ),
            ],
            "Who is Dana working for now?",
            &["Shopify"],
            &[],
        ),
        (
            "a new role at the same company answers without the old state",
            &[
                (
                    "D1:1",
                    "As a product manager at Canva I spend my days in roadmap meetings.",
                    "2023-04-01",
                ),
                (
                    "D1:2",
                    "Small identity crisis: I'm not a PM any more. I moved into UX research at Canva last month.",
                    "2023-08-01",
                ),
            ],
            "What role does Dana have now?",
            &["UX research"],
            &["not a PM"],
        ),
        (
            "a change restating the attribute answers with a common noun",
            &[
                (
                    "D1:1",
                    "Chocolate is my ice cream flavour. Two scoops, always chocolate.",
                    "2022-06-21",
                ),
                (
                    "D1:2",
                    "The gelateria in Bologna changed my mind: pistachio is my flavour now, and chocolate tastes flat next to it.",
                    "2022-07-30",
                ),
            ],
            "What is Dana's favourite ice cream flavour now?",
            &["pistachio"],
            &["Bologna"],
        ),
        (
            "a department named by its category is the new value",
            &[
                (
                    "D1:1",
                    "I'm on the sales team at Nike, chasing quarterly targets for the running line.",
                    "2021-07-01",
                ),
                (
                    "D1:2",
                    "Internal transfer approved: I've left the sales team and joined the marketing department, still at Nike.",
                    "2021-10-01",
                ),
            ],
            "Which department is Dana in now?",
            &["marketing"],
            &[],
        ),
        (
            "a question after a name is answered by a name, not by a restatement",
            &[
                (
                    "D1:1",
                    "I design brake sensors at Bosch in Stuttgart.",
                    "2021-01-10",
                ),
                (
                    "D1:2",
                    "It's weird not carrying a Bosch badge anymore. The Siemens one is green, and the sensor work here is for trains.",
                    "2021-06-01",
                ),
            ],
            "Which company is Dana employed by now?",
            &["Siemens"],
            &[],
        ),
        (
            "a place one does not miss is where one lived",
            &[
                (
                    "D1:1",
                    "Valentine's dinner at the little bistro near our apartment in Charlotte was lovely.",
                    "2020-02-15",
                ),
                (
                    "D1:2",
                    "Closing went through! We're officially the owners of a farmhouse outside Asheville, and I do not miss Charlotte one bit.",
                    "2021-06-01",
                ),
            ],
            "Where does Dana live now?",
            &["Asheville"],
            &["Charlotte"],
        ),
        (
            "one's own place is a new home",
            &[
                (
                    "D1:1",
                    "I still live in Rabat with my parents, which is fine but a bit crowded.",
                    "2019-01-10",
                ),
                (
                    "D1:2",
                    "Got my own place in Casablanca! First time living alone, and I already burned the rice.",
                    "2019-09-01",
                ),
            ],
            "Where does Dana live now?",
            &["Casablanca"],
            &["Rabat"],
        ),
        (
            "a coffee order changes under its own key",
            &[
                (
                    "D1:1",
                    "My usual coffee order is a flat white with whole milk.",
                    "2023-01-10",
                ),
                (
                    "D1:2",
                    "Dairy started disagreeing with me, so if you ever order for me it's an oat milk cortado from now on.",
                    "2023-03-28",
                ),
            ],
            "What coffee does Dana order now?",
            &["cortado"],
            &["flat white"],
        ),
        (
            "what someone unnamed did tells nothing of where Dana lives",
            &[
                (
                    "D1:1",
                    "I'm a freelance illustrator living in Guadalajara.",
                    "2023-01-10",
                ),
                (
                    "D1:2",
                    "A studio in Mexico City offered me a full-time position!",
                    "2023-03-28",
                ),
            ],
            "Where does Dana live?",
            &["Guadalajara"],
            &["Mexico City"],
        ),
        (
            "a new job that names no one is the speaker's",
            &[
                (
                    "D1:1",
                    "I work at Rolls-Royce on jet engine turbines.",
                    "2023-01-10",
                ),
                ("D1:2", "Any tips for a first week?", "2023-03-20"),
                (
                    "D1:3",
                    "A new job at Airbus starts on Monday!",
                    "2023-03-28",
                ),
            ],
            "Where does Dana work now?",
            &["Airbus"],
            &["Rolls-Royce"],
        ),
    ];
    for (why, turns, question, holds, lacks) in cases {
        let answer = answer_after(turns, question);
        for value in *holds {
            assert!(answer.contains(value), "{why}: {answer:?} lacks {value}");
        }
        for value in *lacks {
            assert!(!answer.contains(value), "{why}: {answer:?} holds {value}");
        }
    }
}

#[test]
fn an_agent_does_not_close_what_the_user_said() {
    // The agent's turns yield facts here, so the judge weighs them.
    let (world, u, a) = pair_in(World::with_roles(Roles::offline_with(
        ConstructorConfig {
            agent_facts: true,
            ..ConstructorConfig::default()
        },
        RetrieverConfig::default(),
    )));
    let turns = [
        (
            "Dana",
            "My team standup is at 9:00 every weekday, so don't schedule anything then.",
        ),
        ("Assistant", "Got it, I'll keep that slot free."),
        (
            "Dana",
            "Turns out I had it wrong from the start: the standup is at 9:30, not 9:00.",
        ),
        (
            "Assistant",
            "Ha, at least you had time for coffee. I'll block 9:30 instead.",
        ),
    ];
    world.converse(u, a, &turns, "2023-03-06");
    let (answer, _) = world.ask(u, a, "What time is Dana's team standup?", View::Current);
    assert!(answer.contains("9:30"), "{answer:?}");
    // The user's correction is still current: the agent's "instead" closed nothing of hers.
    assert!(
        stored(&world, u, a)
            .iter()
            .any(|f| f.granularity == Granularity::Fact
                && f.superseded_by.is_none()
                && f.content.contains("the standup is at 9:30")),
    );
}

#[test]
fn an_agents_words_yield_no_facts_by_default() {
    let (world, u, a) = one_pair();
    world.say(
        u,
        a,
        "D1:1",
        "Assistant",
        "Noted, aisle seats it is. I'll book them for your trips.",
        "2023-03-06",
    );
    let fragments = stored(&world, u, a);
    assert!(
        fragments
            .iter()
            .any(|f| f.granularity == Granularity::RawTurn)
    );
    assert!(
        !fragments
            .iter()
            .any(|f| matches!(f.granularity, Granularity::Fact | Granularity::Profile)),
        "{fragments:#?}"
    );
}

#[test]
fn an_end_naming_one_value_of_a_home_ends_it() {
    let (world, u, a) = one_pair();
    let room = |world: &World| {
        stored(world, u, a)
            .iter()
            .any(|f| f.granularity == Granularity::Fact && f.content.contains("rent a room"))
    };
    world.dana_says(
        u,
        a,
        &[(
            "D1:1",
            "I rent a room in Warsaw, about ten minutes from the Vistula.",
            "2021-03-01",
        )],
    );
    assert!(room(&world));
    world.dana_says(
        u,
        a,
        &[(
            "D1:2",
            "The new apartment here is quiet and I'm not going back to Warsaw.",
            "2021-10-01",
        )],
    );
    assert!(!room(&world), "the room in Warsaw is still current");
}

#[test]
fn a_move_announced_for_next_month_leaves_the_weeks_between_at_the_old_home() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "I live in Santiago, in Providencia, close to the river.",
                "2021-06-01",
            ),
            (
                "D1:2",
                "Next month we're moving to Valparaiso. The ocean views won the argument.",
                "2022-04-09",
            ),
        ],
    );
    let between = View::WorldAsOf(Timestamp::parse("2022-04-15").unwrap());
    let (answer, _) = world.ask(u, a, "Where did Dana live in mid-April 2022?", between);
    assert!(
        answer.contains("Santiago") || answer.contains("Providencia"),
        "{answer:?}"
    );
    let after = View::WorldAsOf(Timestamp::parse("2022-06-01").unwrap());
    let (answer, _) = world.ask(u, a, "Where did Dana live in June 2022?", after);
    assert!(answer.contains("Valparaiso"), "{answer:?}");
}

#[test]
fn from_now_on_replaces_what_was_said_of_the_same_thing_in_other_words() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "Send me the weekly summary by email, please; I read it on Monday mornings.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "I take my pets to the park most mornings.",
                "2023-01-06",
            ),
            (
                "D1:3",
                "Text me the weekly summary as an SMS instead from now on.",
                "2023-02-05",
            ),
            // Sharing only the speaker's name is not being about the same thing.
            (
                "D1:4",
                "I'll start writing down my favourite walks from now on.",
                "2023-02-06",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(u, a, "by email"));
    assert!(world.recalls_current_fact(u, a, "as an SMS"));
    assert!(world.recalls_current_fact(u, a, "pets to the park"));
}

#[test]
fn someone_elses_move_in_a_turn_changes_nothing_the_speaker_holds() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "Retired mechanic here, from Porto Alegre.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "My wife Neusa and I switched off the television during dinner, a new rule.",
                "2023-01-06",
            ),
            (
                "D1:3",
                "Neusa's sister moved to Florianopolis, by the beach. She invites us all the time, but I would never leave Porto Alegre.",
                "2023-02-05",
            ),
        ],
    );
    assert!(world.recalls_current_fact(u, a, "mechanic"));
    assert!(world.recalls_current_fact(u, a, "television"));
}

#[test]
fn being_moved_by_a_film_is_no_move() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "I moved to Bristol, best decision ever.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "Watched The Whale last night, the ending really moved me.",
                "2023-03-25",
            ),
        ],
    );
    assert!(world.recalls_current_fact(u, a, "Bristol"));
}

#[test]
fn the_speakers_own_move_with_a_relation_still_closes_the_old_home() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            ("D1:1", "I live in Brooklyn, near the park.", "2023-01-05"),
            (
                "D1:2",
                "Mom and I left Brooklyn for Austin, we moved last week.",
                "2023-03-05",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(u, a, "near the park"));
}

#[test]
fn one_shared_word_does_not_make_a_no_longer_about_another_thing() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            ("D1:1", "I commute by bike on weekends.", "2023-01-05"),
            ("D1:2", "I no longer work weekends.", "2023-03-05"),
        ],
    );
    assert!(world.recalls_current_fact(u, a, "by bike"));
}

#[test]
fn a_best_friends_move_leaves_the_users_home() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "I live in Bristol, just off Gloucester Road.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "My best mate Jess finally moved to Edinburgh last weekend.",
                "2023-02-20",
            ),
        ],
    );
    assert!(world.recalls_current_fact(u, a, "Gloucester Road"));
}

#[test]
fn a_relatives_new_car_leaves_the_speakers_own() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "I drive in so I can bring a cooler bag, the Yaris has room in the boot.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "My brother bought a Tesla and won't shut up about it. Told him my Yaris will outlive it.",
                "2023-02-05",
            ),
        ],
    );
    assert!(world.recalls_current_fact(u, a, "cooler bag"));
}

#[test]
fn the_speaker_moving_with_a_relative_still_closes_the_old_home() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "Chicago winters are brutal. The pipes in our condo froze last night.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "My wife and I traded Chicago for Minneapolis this spring, so now the lakes are ours.",
                "2023-05-05",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(u, a, "winters are brutal"));
}

#[test]
fn a_when_question_prefers_the_turn_that_tells_a_time() {
    let (world, u, a) = one_pair();
    // The same words, bar one that tells a time: a longer turn ranks lower by words
    // alone, so it comes first only when a "when" question prefers what tells a time.
    // None opens the session, which is preferred too.
    for i in 0..4 {
        let text = if i == 2 {
            "Signed up for a pottery class yesterday."
        } else {
            "Signed up for a pottery class."
        };
        world.say(u, a, &format!("D1:{}", i + 2), "Dana", text, "2023-06-01");
    }
    let hits = world.recall_turns(u, a, "When did Dana sign up for a pottery class?", 4);
    assert_eq!(hits[0].1, ["D1:4"], "{hits:#?}");
}

#[test]
fn a_question_about_a_day_prefers_what_was_said_that_day() {
    let (world, u, a) = one_pair();
    for (i, date) in ["2023-07-03", "2023-07-07", "2023-07-12", "2023-07-20"]
        .iter()
        .enumerate()
    {
        let text = "Talked with the neighbours about the flood.";
        world.say(u, a, &format!("D{}:1", i + 1), "Dana", text, date);
    }
    let hits = world.recall_turns(u, a, "What did Dana talk about on 7 July, 2023?", 4);
    assert_eq!(hits[0].1, ["D2:1"], "{hits:#?}");
}

#[test]
fn a_corrected_allergy_or_blood_type_replaces_the_one_told_before() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "Keep in mind I'm allergic to shellfish.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "For the donor form: my blood type is A positive.",
                "2023-01-05",
            ),
            (
                "D1:3",
                "The clinic retested me and I had it mixed up: it's sesame I'm allergic to.",
                "2023-02-05",
            ),
            (
                "D1:4",
                "Gave blood today and they say I'm A negative. I had it wrong for years.",
                "2023-02-06",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(u, a, "allergic to shellfish"));
    assert!(world.recalls_current_fact(u, a, "sesame"));
    assert!(!world.recalls_current_fact(u, a, "A positive"));
    assert!(world.recalls_current_fact(u, a, "A negative"));
}

#[test]
fn a_statement_opening_with_a_relatives_name_is_about_that_relative() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "My husband Joe is a dentist, so no excuses for the kids.",
                "2023-01-05",
            ),
            ("D1:2", "I work as a nurse at St Vincent's.", "2023-01-05"),
            (
                "D1:3",
                "My flatmate Aoife is studying law at Trinity, poor thing.",
                "2023-01-05",
            ),
            (
                "D1:4",
                "Joe read our chat and wants it on record: he's a dental hygienist, not a dentist.",
                "2023-02-05",
            ),
            (
                "D1:5",
                "Aoife is moving out in March, so we need a new flatmate.",
                "2023-02-06",
            ),
        ],
    );
    assert!(!world.recalls_current_fact(u, a, "is a dentist"));
    assert!(world.recalls_current_fact(u, a, "dental hygienist"));
    // Nor is his correction the speaker's own job.
    assert!(world.recalls_current_fact(u, a, "nurse at St Vincent"));
    // Only of the same attribute: her moving out ends nothing of her studies.
    assert!(world.recalls_current_fact(u, a, "studying law"));
}

#[test]
fn what_someone_else_does_or_a_while_away_ends_nothing_held() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "I have a beagle called Pickle who runs my life.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "My parrot Kazik screams during every call.",
                "2023-01-05",
            ),
            (
                "D1:3",
                "Took Pickle for his checkup. He dropped a sock at the vet's feet, then gave up on the whole thing.",
                "2023-03-07",
            ),
            (
                "D1:4",
                "Spent the weekend in Gdansk and left Kazik with the neighbour. He learned a new word while I was gone.",
                "2023-04-02",
            ),
        ],
    );
    assert!(world.recalls_current_fact(u, a, "beagle called Pickle"));
    assert!(world.recalls_current_fact(u, a, "parrot Kazik"));
}

#[test]
fn what_someone_unnamed_tries_ends_nothing_held() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "My car is a Skoda Octavia estate, 2017, and the check engine light just came on.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "Changed the tyres on the Octavia to winter ones today. Guy at the shop tried to \
                 talk me into trading it in for a new Kia, no thanks",
                "2023-02-05",
            ),
        ],
    );
    assert!(world.recalls_current_fact(u, a, "Skoda Octavia"));
}

#[test]
fn an_allergy_told_as_well_or_a_blood_pressure_replaces_nothing() {
    let (world, u, a) = one_pair();
    world.dana_says(
        u,
        a,
        &[
            (
                "D1:1",
                "Keep in mind I'm allergic to shellfish.",
                "2023-01-05",
            ),
            (
                "D1:2",
                "For the donor form: my blood type is B positive.",
                "2023-01-05",
            ),
            (
                "D1:3",
                "Like I told you, I'm allergic to cats too.",
                "2023-02-05",
            ),
            (
                "D1:4",
                "My blood pressure was high today. I was wrong to skip the pills.",
                "2023-02-06",
            ),
        ],
    );
    assert!(world.recalls_current_fact(u, a, "allergic to shellfish"));
    assert!(world.recalls_current_fact(u, a, "B positive"));
}

#[test]
fn an_update_of_facts_a_crew_and_the_user_hold_gives_each_its_own_successor() {
    let (mut world, u, planner) = one_pair();
    let coder = another_agent(&mut world, u, "coder");
    let crew = colmem_core::GroupId::new("crew").unwrap();
    for change in [
        AccessChange::Register {
            principal: Principal::Group(crew, colmem_core::GroupKind::Crew),
        },
        AccessChange::Grant {
            edge: Edge::Member {
                member: colmem_core::Member::Agent(planner),
                group: crew,
            },
            until: None,
        },
    ] {
        world.log(change);
    }
    world.share.push((planner, Scope::Group(crew)));
    // The crew's agent holds one fact of the home, the crewless one another (User).
    world.dana_says(
        u,
        planner,
        &[("D1:1", "My flat is in Denver, near the park.", "2023-01-05")],
    );
    world.dana_says(
        u,
        coder,
        &[("D1:2", "I live in Denver with two cats.", "2023-01-06")],
    );
    let scopes: Vec<Scope> = stored(&world, u, planner)
        .iter()
        .filter(|f| f.granularity == Granularity::Fact && f.content.contains("Denver"))
        .map(|f| f.scope)
        .collect();
    assert!(scopes.contains(&Scope::User) && scopes.iter().any(|s| matches!(s, Scope::Group(_))));
    // The move closes both; before, their meet was refused and the turn failed.
    world.dana_says(
        u,
        planner,
        &[("D1:3", "I moved to Boston last week.", "2023-03-01")],
    );
    for agent in [planner, coder] {
        assert!(!world.recalls_current_fact(u, agent, "Denver"));
    }
    assert!(world.recalls_current_fact(u, coder, "Boston"));
}

#[test]
fn an_episode_holds_only_what_was_said_through_its_agent() {
    let (mut world, u, helper) = one_pair();
    let coder = another_agent(&mut world, u, "coder");
    world.dana_says(
        u,
        coder,
        &[(
            "D1:1",
            "The vault code is kept under the marmalade jar.",
            "2023-01-05",
        )],
    );
    world.dana_says(
        u,
        helper,
        &[(
            "D1:2",
            "I am planning a trip to Lisbon in spring.",
            "2023-01-05",
        )],
    );
    let caller = world.caller(u, helper).unwrap();
    let episode = world
        .pipeline
        .close_episode(&caller, "D1")
        .unwrap()
        .expect("the helper's turns make an episode");
    let summary = world.store.get(episode).unwrap().content;
    assert!(!summary.contains("marmalade"), "{summary}");
}

/// "Where do I live?" asks after the user served: in a crew that shares its memory,
/// the answer is dana's home, not erin's, told later.
#[test]
fn i_in_a_question_is_the_user_served() {
    let (world, dana, erin, helper) = crew_of_two(WritePolicies::default());
    world.say(
        dana,
        helper,
        "D1:1",
        "Dana",
        "I live in Oslo.",
        "2024-01-01",
    );
    world.say(
        erin,
        helper,
        "D2:1",
        "Erin",
        "I live in Madrid.",
        "2024-02-01",
    );
    let (answer, _) = world.ask(dana, helper, "Where do I live?", View::Current);
    assert!(answer.contains("Oslo"), "{answer}");
    // What erin sets right of her own leaves dana's answer as it is.
    world.say(
        erin,
        helper,
        "D2:2",
        "Erin",
        "Sorry, I meant Porto, not Oslo.",
        "2024-02-02",
    );
    let (answer, _) = world.ask(dana, helper, "Where do I live?", View::Current);
    assert!(answer.contains("Oslo"), "{answer}");
}

/// dana and erin both served by `helper`, which is in a crew: what it remembers for
/// dana goes to the crew's scope, where erin's requests read it too.
fn crew_of_two(policies: WritePolicies) -> (World, UserId, UserId, AgentId) {
    let (world, dana, erin, helper, _) =
        group_of_two(policies, "crew", colmem_core::GroupKind::Crew);
    (world, dana, erin, helper)
}

/// dana and erin both served by `helper`, a member of group `name` of `kind`, with
/// every caller under `policies`.
fn group_of_two(
    policies: WritePolicies,
    name: &str,
    kind: colmem_core::GroupKind,
) -> (World, UserId, UserId, AgentId, colmem_core::GroupId) {
    let (mut world, dana, helper) = one_pair();
    let erin = UserId::new("erin").unwrap();
    let group = colmem_core::GroupId::new(name).unwrap();
    for change in [
        AccessChange::Register {
            principal: Principal::User(erin),
        },
        AccessChange::Grant {
            edge: Edge::Invoke {
                user: erin,
                agent: helper,
            },
            until: None,
        },
        AccessChange::Register {
            principal: Principal::Group(group, kind),
        },
        AccessChange::Grant {
            edge: Edge::Member {
                member: colmem_core::Member::Agent(helper),
                group,
            },
            until: None,
        },
    ] {
        world.log(change);
    }
    world.policies = Some(WritePolicySet::new(policies, PseudonymKey::new([7; 32])).unwrap());
    // What dana tells is shared with the group explicitly (a user's conversation
    // stays with the user by default).
    world.share.push((helper, Scope::Group(group)));
    (world, dana, erin, helper, group)
}

/// Write policies whose private and shared parts each block a pattern, if given.
fn blocking(private: Option<&str>, shared: Option<&str>) -> WritePolicies {
    let block = |pattern: Option<&str>| {
        pattern
            .map(|p| Transform::Block {
                pattern: p.to_owned(),
            })
            .into_iter()
            .collect()
    };
    let mut policies = WritePolicies::default();
    policies.system.private.transforms = block(private);
    if shared.is_some() {
        policies.system.shared.transforms = block(shared);
    }
    policies
}

/// Every text of `u`'s through `a` now, and every keyword beside them.
fn texts_and_keywords(world: &World, u: UserId, a: AgentId) -> Vec<String> {
    stored(world, u, a)
        .into_iter()
        .flat_map(|f| std::iter::once(f.content).chain(f.keywords))
        .collect()
}

/// DESIGN section 4: what a crew's agent remembers passes the write policy. A turn
/// the shared part leaves whole goes to the crew (with the mandatory redactions); one
/// it would change (an e-mail address) is kept private, with what the constructor
/// reads it with: its facts, the turns after it in the open episode. Private is the
/// writing agent's scope within the crew, so dana's agents outside it see nothing
/// more than before. Before, the crew got the address verbatim.
#[test]
fn what_a_crew_agent_remembers_is_shared_only_as_the_policy_leaves_it() {
    let policies = WritePolicies {
        mandatory: vec![Redaction::Names(vec!["Zoltan".to_owned()])],
        ..WritePolicies::default()
    };
    let (mut world, dana, erin, helper) = crew_of_two(policies);
    let solo = another_agent(&mut world, dana, "solo");
    world.dana_says(
        dana,
        helper,
        &[
            ("D1:1", "I live in Oslo near the harbour.", "2023-01-05"),
            ("D1:2", "My dentist is Zoltan on Main Street.", "2023-01-05"),
            ("D1:3", "My email is dana@example.com.", "2023-01-05"),
            ("D1:4", "I play the cello on Sundays.", "2023-01-05"),
        ],
    );
    let erins = texts_and_keywords(&world, erin, helper);
    assert!(erins.iter().any(|t| t.contains("Oslo")), "{erins:?}");
    assert!(erins.iter().any(|t| t.contains("[name]")), "{erins:?}");
    for kept in ["Zoltan", "zoltan", "dana@example.com", "example", "cello"] {
        assert!(erins.iter().all(|t| !t.contains(kept)), "{kept}: {erins:?}");
    }
    let danas = stored(&world, dana, helper);
    assert!(
        danas
            .iter()
            .any(|f| f.scope == Scope::Agent && f.content.contains("dana@example.com"))
    );
    assert!(danas.iter().any(|f| f.content.contains("cello")));
    assert!(
        danas
            .iter()
            .all(|f| !f.content.contains("Zoltan") && f.key.as_deref() != Some("zoltan")),
        "{danas:?}"
    );
    let (_, hits) = world.ask(dana, helper, "What is my email?", View::Current);
    assert!(hits.iter().any(|f| f.content.contains("dana@example.com")));
    // Through an agent outside the crew dana sees what she saw before: none of it.
    assert!(
        stored_texts(&world, dana, solo).is_empty(),
        "{:?}",
        stored_texts(&world, dana, solo)
    );
}

/// A move told with an address, through a crew agent: the crew's fact of the old
/// home is closed by a private successor, so the crew holds neither home as a current
/// fact and never the address, and dana's successor says both.
#[test]
fn a_crew_agents_update_passes_the_policy_too() {
    let (world, dana, erin, helper) = crew_of_two(WritePolicies::default());
    world.dana_says(
        dana,
        helper,
        &[("D1:1", "My flat is in Denver, near the park.", "2023-01-05")],
    );
    assert!(world.recalls_current_fact(erin, helper, "Denver"));
    world.dana_says(
        dana,
        helper,
        &[(
            "D1:2",
            "I moved to Boston last week, mail me at dana@newmail.org.",
            "2023-03-01",
        )],
    );
    let erins = texts_and_keywords(&world, erin, helper);
    assert!(
        erins
            .iter()
            .all(|t| !t.contains("Boston") && !t.contains("newmail")),
        "{erins:?}"
    );
    // The crew keeps the turn that told of Denver (what was said), not the fact.
    assert!(!world.recalls_current_fact(erin, helper, "Denver"));
    assert!(world.recalls_current_fact(dana, helper, "dana@newmail.org"));
    let facts: Vec<String> = stored(&world, dana, helper)
        .into_iter()
        .filter(|f| f.granularity == Granularity::Fact)
        .map(|f| f.content)
        .collect();
    assert!(
        facts.iter().all(|t| !t.contains("Denver")),
        "the old home is no current fact: {facts:?}"
    );
}

/// A block pattern: an explicit write naming a blocked draft is refused as a whole
/// (forbidden, naming the pattern); a turn whose private part is blocked is not
/// remembered at all, nor summarised later; one whose shared part is blocked is kept
/// private, with the reply that borrows its words.
#[test]
fn what_the_policy_blocks_is_not_written() {
    let policies = blocking(Some("(?i)password"), Some("(?i)merger"));
    let (world, dana, erin, helper) = crew_of_two(policies);
    let caller = world.caller(dana, helper).unwrap();
    let mut private = Draft::new(
        "my password is hunter2",
        Granularity::Fact,
        Kind::Observation,
    );
    private.scope = Some(Scope::User);
    let err = world
        .pipeline
        .write_drafts(
            &caller,
            vec![
                Draft::new(
                    "the office opens at nine",
                    Granularity::Fact,
                    Kind::Observation,
                ),
                private,
            ],
            None,
        )
        .unwrap_err();
    assert_eq!(err.kind(), colmem_core::ErrorKind::Forbidden, "{err}");
    assert!(err.to_string().contains("password"), "{err}");
    assert!(stored(&world, dana, helper).is_empty(), "nothing written");

    let remembered = world
        .pipeline
        .remember(&caller, &turn("D1:1", "My password is hunter2."))
        .unwrap();
    assert_eq!((remembered.written.len(), remembered.withheld), (0, 1));
    world.say(
        dana,
        helper,
        "D1:2",
        "Dana",
        "Is the Initech merger with Globex still under wraps?",
        "2023-01-05",
    );
    world.say(
        dana,
        helper,
        "D1:3",
        "Assistant",
        "Yes, until the announcement in May.",
        "2023-01-05",
    );
    let episode = world.pipeline.close_episode(&caller, "D1").unwrap();
    let danas = stored(&world, dana, helper);
    assert!(
        danas.iter().all(|f| !f.content.contains("hunter2")),
        "{danas:?}"
    );
    assert!(danas.iter().any(|f| f.content.contains("Globex")));
    assert!(danas.iter().any(|f| f.content.contains("announcement")));
    if let Some(id) = episode {
        assert!(danas.iter().any(|f| f.id == id && f.scope == Scope::Agent));
    }
    let erins = texts_and_keywords(&world, erin, helper);
    for kept in ["hunter2", "Globex", "globex", "wraps", "announcement"] {
        assert!(erins.iter().all(|t| !t.contains(kept)), "{kept}: {erins:?}");
    }
}

/// A mandatory redaction holds in everything drawn from a turn, not only in its own
/// text: the constructor reads the redacted turn, so a reply's borrowed keywords
/// and an episode's topic words never hold the parts of a redacted address or name.
#[test]
fn a_mandatory_redaction_reaches_what_is_drawn_from_the_turn() {
    let policies = WritePolicies {
        mandatory: vec![
            Redaction::Emails,
            Redaction::Names(vec!["Ann Lee".to_owned()]),
        ],
        ..WritePolicies::default()
    };
    let (world, dana, erin, helper) = crew_of_two(policies);
    world.say(
        dana,
        helper,
        "D1:1",
        "Dana",
        "Is quill.zed@example.com still the address you have for me?",
        "2023-01-05",
    );
    world.say(
        dana,
        helper,
        "D1:2",
        "Assistant",
        "Yes, that one is on file.",
        "2023-01-05",
    );
    world.dana_says(
        dana,
        helper,
        &[(
            "D1:3",
            "Ann Lee is my dentist on Main Street.",
            "2023-01-05",
        )],
    );
    let caller = world.caller(dana, helper).unwrap();
    world.pipeline.close_episode(&caller, "D1").unwrap();
    for (u, who) in [(erin, "erin"), (dana, "dana")] {
        let words: Vec<String> = texts_and_keywords(&world, u, helper)
            .iter()
            .flat_map(|t| {
                t.to_lowercase()
                    .split(|c: char| !c.is_alphanumeric())
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect();
        assert!(words.iter().any(|w| w == "dentist"), "{who}: {words:?}");
        for kept in ["quill", "zed", "ann", "lee"] {
            assert!(!words.iter().any(|w| w == kept), "{who}, {kept}: {words:?}");
        }
    }
}

/// An agent whose own observations stay with the user may still correct a fact a
/// team it is in holds: a turn the shared part would change closes that fact with a
/// private successor, so the team never reads the correction.
#[test]
fn a_correction_the_policy_keeps_private_never_reaches_a_team() {
    let policies = blocking(None, Some("(?i)\\bmy address\\b"));
    let (world, dana, erin, helper, team) =
        group_of_two(policies, "team", colmem_core::GroupKind::Team);
    let caller = world.caller(dana, helper).unwrap();
    let mut home = Draft::new(
        "Dana lives in Denver.",
        Granularity::Fact,
        Kind::Observation,
    );
    home.scope = Some(Scope::Group(team));
    home.key = Some("dana/home".to_owned());
    world
        .pipeline
        .write_drafts(&caller, vec![home], None)
        .unwrap();
    assert!(world.recalls_current_fact(erin, helper, "Denver"));
    world.dana_says(
        dana,
        helper,
        &[(
            "D1:1",
            "I live in Boston now and my address is 5 Elm Road.",
            "2023-03-01",
        )],
    );
    let erins = texts_and_keywords(&world, erin, helper);
    assert!(erins.iter().all(|t| !t.contains("Elm")), "{erins:?}");
    assert!(!world.recalls_current_fact(erin, helper, "Denver"));
    assert!(world.recalls_current_fact(dana, helper, "Elm Road"));
}

/// A correction kept private may close a crew fact an agent wrote before it left
/// the crew: the successor is the caller's own, so no former member reads it (the
/// derived successor was refused as widening, and the turn failed each time).
#[test]
fn a_private_correction_closes_a_fact_of_an_agent_gone_from_the_crew() {
    let (mut world, dana, erin, helper) = crew_of_two(WritePolicies::default());
    let scribe = another_agent(&mut world, dana, "scribe");
    let crew = colmem_core::GroupId::new("crew").unwrap();
    let membership = Edge::Member {
        member: colmem_core::Member::Agent(scribe),
        group: crew,
    };
    world.log(AccessChange::Grant {
        edge: membership,
        until: None,
    });
    world.share.push((scribe, Scope::Group(crew)));
    world.dana_says(
        dana,
        scribe,
        &[("D1:1", "My flat is in Denver, near the park.", "2023-01-05")],
    );
    let crew_facts = |world: &World, u: UserId, a: AgentId| -> Vec<String> {
        stored(world, u, a)
            .into_iter()
            .filter(|f| f.scope == Scope::Group(crew) && f.granularity == Granularity::Fact)
            .map(|f| f.content)
            .collect()
    };
    assert!(
        crew_facts(&world, dana, helper)
            .iter()
            .any(|t| t.contains("Denver"))
    );
    world.log(AccessChange::Revoke { edge: membership });
    world.dana_says(
        dana,
        helper,
        &[(
            "D2:1",
            "I moved to Boston last week, mail me at dana@newmail.org.",
            "2023-03-01",
        )],
    );
    let crew = crew_facts(&world, dana, helper);
    assert!(
        crew.iter()
            .all(|t| !t.contains("Denver") && !t.contains("Boston")),
        "{crew:?}"
    );
    assert!(
        texts_and_keywords(&world, erin, helper)
            .iter()
            .all(|t| !t.contains("Boston"))
    );
    assert!(world.recalls_current_fact(dana, helper, "Boston"));
}

/// A raw turn keeps its key (the dialogue id the system gave it) whatever the policy
/// would make of it: replies, neighbours and retries find the turn by it.
#[test]
fn a_raw_turn_keeps_its_dialogue_id_under_a_policy() {
    let (world, dana, erin, helper) = crew_of_two(WritePolicies::default());
    world.say(
        dana,
        helper,
        "conv-20240501-0930:4",
        "Dana",
        "I live in Oslo near the harbour.",
        "2023-01-05",
    );
    let keys: Vec<Option<String>> = stored(&world, erin, helper)
        .into_iter()
        .filter(|f| f.granularity == Granularity::RawTurn)
        .map(|f| f.key)
        .collect();
    assert_eq!(keys, vec![Some("turn:conv-20240501-0930:4".to_owned())]);
}

/// A turn kept private closes a stale fact only where any supersession may: the
/// caller could write a fragment of its scope. A Global fact is closed by a global
/// writer only (before, a private correction closed it for everyone).
#[test]
fn a_private_correction_closes_a_global_fact_only_as_a_global_writer() {
    let policies = blocking(None, Some("(?i)\\bmy address\\b"));
    let (mut world, dana, _, helper) = crew_of_two(policies);
    let oracle = another_agent(&mut world, dana, "oracle");
    world.system = SystemPolicy {
        global_writers: [oracle].into(),
    };
    let mut home = Draft::new(
        "Dana lives in Denver.",
        Granularity::Fact,
        Kind::Observation,
    );
    home.scope = Some(Scope::Global);
    home.key = Some("dana/home".to_owned());
    let caller = world.caller(dana, oracle).unwrap();
    world
        .pipeline
        .write_drafts(&caller, vec![home], None)
        .unwrap();
    let caller = world.caller(dana, helper).unwrap();
    let err = world
        .pipeline
        .remember(
            &caller,
            &turn("D1:1", "I live in Boston now and my address is 5 Elm Road."),
        )
        .unwrap_err();
    assert_eq!(err.kind(), colmem_core::ErrorKind::Forbidden, "{err}");
    assert!(world.recalls_current_fact(dana, oracle, "Denver"));
}

/// A correction closes the profile entries drawn from a stale fact only in the scope
/// it could close the fact in: an entry of the same turn and words that a global
/// writer wrote for everyone is not closed by an agent that is no global writer.
#[test]
fn a_correction_closes_profile_entries_only_in_a_scope_it_may_write() {
    let (mut world, dana, _, helper) = crew_of_two(WritePolicies::default());
    let oracle = another_agent(&mut world, dana, "oracle");
    world.system = SystemPolicy {
        global_writers: [oracle].into(),
    };
    let drink = "My favourite drink is a double espresso.";
    world.dana_says(dana, helper, &[("D1:1", drink, "2023-01-05")]);
    let mut everyone = Draft::new(
        "Dana's favourite drink is a double espresso.",
        Granularity::Profile,
        Kind::Observation,
    );
    everyone.scope = Some(Scope::Global);
    everyone.source.turns = vec!["D1:1".to_owned()];
    let caller = world.caller(dana, oracle).unwrap();
    world
        .pipeline
        .write_drafts(&caller, vec![everyone], None)
        .unwrap();
    let espresso = |world: &World, scope: Scope| {
        stored(world, dana, oracle)
            .into_iter()
            .filter(|f| f.granularity == Granularity::Profile && f.scope == scope)
            .any(|f| f.content.contains("espresso"))
    };
    assert!(espresso(&world, Scope::Global));
    world.dana_says(
        dana,
        helper,
        &[(
            "D1:2",
            "I switched to green tea, so my favourite drink these days is sencha.",
            "2023-03-01",
        )],
    );
    assert!(!world.recalls_current_fact(dana, helper, "espresso"));
    assert!(
        espresso(&world, Scope::Global),
        "closed by no global writer"
    );
}

/// A corrected fact keeps its predecessor's scope, the profile entry of the same turn
/// takes the agent's: the next correction closes that entry too, in a scope the agent
/// may write.
#[test]
fn a_correction_closes_a_profile_entry_of_another_scope_it_may_write() {
    let (mut world, dana, _, helper) = crew_of_two(WritePolicies::default());
    let solo = another_agent(&mut world, dana, "solo");
    let drinks = [
        (
            solo,
            "D1:1",
            "My favourite drink is a double espresso.",
            "2023-01-05",
        ),
        (
            helper,
            "D1:2",
            "I switched to green tea, so my favourite drink these days is sencha.",
            "2023-03-01",
        ),
        (
            helper,
            "D1:3",
            "I switched back to coffee, so my favourite drink these days is a flat white.",
            "2023-05-01",
        ),
    ];
    for (agent, id, text, date) in drinks {
        world.dana_says(dana, agent, &[(id, text, date)]);
    }
    let profile: Vec<(Scope, String)> = stored(&world, dana, helper)
        .into_iter()
        .filter(|f| f.granularity == Granularity::Profile && f.content.contains("drink"))
        .map(|f| (f.scope, f.content))
        .collect();
    assert!(
        profile.iter().all(|(_, c)| c.contains("flat white")),
        "{profile:?}"
    );
}

/// What a turn kept private draws from it stays in the turn's private scope, even as
/// the successor of a fact of a wider private scope: a correction through a crew
/// agent of what dana told an agent outside the crew is not read through that one.
#[test]
fn a_private_correction_stays_with_the_agent_it_was_told() {
    let (mut world, dana, _, helper) = crew_of_two(WritePolicies::default());
    let solo = another_agent(&mut world, dana, "solo");
    world.dana_says(
        dana,
        solo,
        &[("D1:1", "My flat is in Denver, near the park.", "2023-01-05")],
    );
    world.dana_says(
        dana,
        helper,
        &[(
            "D2:1",
            "I moved to Boston last week, mail me at dana@newmail.org.",
            "2023-03-01",
        )],
    );
    assert!(world.recalls_current_fact(dana, helper, "dana@newmail.org"));
    let solos = texts_and_keywords(&world, dana, solo);
    assert!(solos.iter().all(|t| !t.contains("newmail")), "{solos:?}");
    let kept: Vec<Scope> = stored(&world, dana, helper)
        .into_iter()
        .filter(|f| f.content.contains("newmail"))
        .map(|f| f.scope)
        .collect();
    assert!(
        !kept.is_empty() && kept.iter().all(|s| *s == Scope::Agent),
        "{kept:?}"
    );
}

/// The shared part is checked against what is drawn from the turn too: a block of
/// the speaker's name (which the raw turn and the facts carry, the turn's words do
/// not) keeps the turn private rather than withheld everywhere.
#[test]
fn a_shared_part_that_changes_the_speakers_name_keeps_the_turn_private() {
    let policies = blocking(None, Some("(?i)\\bdana\\b"));
    let (world, dana, erin, helper) = crew_of_two(policies);
    world.dana_says(
        dana,
        helper,
        &[("D1:1", "I live in Oslo near the harbour.", "2023-01-05")],
    );
    let danas = stored(&world, dana, helper);
    assert!(
        danas.iter().any(|f| f.content.contains("Oslo")),
        "{danas:?}"
    );
    assert!(danas.iter().all(|f| f.scope == Scope::Agent), "{danas:?}");
    assert!(stored(&world, erin, helper).is_empty());
}

/// A mandatory redaction of the speaker's name reaches the keys facts are found by
/// the same way each time, so a move still replaces the old home.
#[test]
fn a_redacted_speaker_still_has_their_facts_replaced() {
    let policies = WritePolicies {
        mandatory: vec![Redaction::Names(vec!["Dana".to_owned()])],
        ..WritePolicies::default()
    };
    let (world, dana, _, helper) = crew_of_two(policies);
    world.dana_says(
        dana,
        helper,
        &[
            ("D1:1", "My flat is in Denver, near the park.", "2023-01-05"),
            ("D2:1", "I moved to Austin last week.", "2023-03-01"),
        ],
    );
    assert!(world.recalls_current_fact(dana, helper, "Austin"));
    assert!(!world.recalls_current_fact(dana, helper, "Denver"));
    let texts = texts_and_keywords(&world, dana, helper);
    assert!(texts.iter().all(|t| !t.contains("Dana")), "{texts:?}");
}

/// Redacted names stay apart: each speaker is written under a pseudonym of their own
/// (the redaction's placeholder would make them one person), so one person's move or
/// a friend's never closes another's home.
#[test]
fn redacted_people_are_never_taken_for_one_another() {
    for (names, turns) in [
        (
            vec!["Caroline", "Melanie"],
            [
                ("Caroline", "My flat is in Denver, near the park."),
                ("Melanie", "I moved to Austin last week."),
            ],
        ),
        (
            vec!["Dana", "Zoltan"],
            [
                ("Dana", "My flat is in Denver, near the park."),
                ("Dana", "My friend Zoltan moved to Austin last week."),
            ],
        ),
    ] {
        let policies = WritePolicies {
            mandatory: vec![Redaction::Names(
                names.iter().map(|n| (*n).to_owned()).collect(),
            )],
            ..WritePolicies::default()
        };
        let (world, dana, _, helper) = crew_of_two(policies);
        for (i, (speaker, text)) in turns.iter().enumerate() {
            world.say(
                dana,
                helper,
                &format!("D1:{}", i + 1),
                speaker,
                text,
                "2023-01-05",
            );
        }
        assert!(
            world.recalls_current_fact(dana, helper, "Denver"),
            "{names:?}: {:?}",
            stored_texts(&world, dana, helper)
        );
        let texts = texts_and_keywords(&world, dana, helper);
        for name in &names {
            let lower = name.to_lowercase();
            assert!(
                texts.iter().all(|t| !t.to_lowercase().contains(&lower)),
                "{name}: {texts:?}"
            );
        }
    }
}

#[test]
fn the_talk_of_a_day_a_question_names_comes_in_whatever_its_words() {
    let recalled = |dated_search| {
        let config = PipelineConfig {
            dated_search,
            ..PipelineConfig::default()
        };
        let (world, u, a) = pair_in(World::with(Roles::offline(), config));
        // Forty turns that share the question's words, told on another day.
        for i in 0..40 {
            let text = format!("My sister and I did crossword number {i} together.");
            world.say(u, a, &format!("D1:{}", i + 1), "Dana", &text, "2023-05-01");
        }
        world.say(
            u,
            a,
            "D2:1",
            "Dana",
            "Look, I got Ana a new pup!",
            "2023-05-25",
        );
        world.say(
            u,
            a,
            "D2:2",
            "Assistant",
            "Adorable! Is it a beagle?",
            "2023-05-25",
        );
        world.recall_turns(u, a, "What did Dana do for her sister on 25 May, 2023?", 6)
    };
    let told_that_day =
        |hits: &[(f64, Vec<String>, String)]| hits.iter().any(|(_, turns, _)| turns == &["D2:1"]);
    let hits = recalled(true);
    assert!(told_that_day(&hits), "the day's turn is missing: {hits:#?}");
    // Without the search of that day, the turns that share the words fill the k.
    let without = recalled(false);
    assert!(!told_that_day(&without), "{without:#?}");
}
