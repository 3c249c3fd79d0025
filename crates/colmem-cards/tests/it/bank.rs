//! The bank end to end over SQLite: learning changes later compositions, merges stay
//! bounded, uninformative failures teach nothing, and reads follow time.

use colmem_access::SystemPolicy;
use colmem_cards::{
    BankConfig, Budget, CardBounds, Error, Form, ReadConfig, TaskContext, WriteConfig,
};
use colmem_core::{AgentId, CardSign, Scope};

use crate::{World, trajectory};

const CRATES: &str =
    "A warehouse holds 17 parcels and each crate carries 5 parcels. How many crates are needed?";

#[test]
fn a_failure_becomes_a_warning_that_later_compositions_show() {
    let world = World::new(BankConfig::default());
    let task = TaskContext::new(
        "A depot holds 23 parcels and each crate carries 4 parcels. How many crates are needed?",
    );
    let filter = world.graph.compile(&world.ctx()).unwrap();
    let before = world
        .bank
        .compose(&filter, &task, &Budget::new(300))
        .unwrap();
    assert!(before.cards.is_empty());
    assert_eq!(before.text, "");

    let report = world.learn(&[trajectory("t1", CRATES, "floor", "ceil", false)]);
    assert_eq!(report.reflections.len(), 1);
    assert_eq!(report.written.len(), 1);
    assert_eq!(
        report.reflections[0].wrong_behaviour,
        "chose rounding=floor"
    );

    let filter = world.graph.compile(&world.ctx()).unwrap();
    let after = world
        .bank
        .compose(&filter, &task, &Budget::new(300))
        .unwrap();
    assert_eq!(after.cards.len(), 1);
    assert_eq!(after.cards[0].sign, CardSign::Negative);
    assert!(
        after
            .text
            .contains("Avoid: avoid rounding=floor; use rounding=ceil instead"),
        "{}",
        after.text
    );
    assert!(after.report.tokens_used <= 300);
}

#[test]
fn uninformative_failures_are_rejected() {
    let world = World::new(BankConfig::default());
    let mut infra = trajectory("t1", CRATES, "floor", "ceil", false);
    infra.outcome.infrastructure_error = true;
    let mut empty = trajectory("t2", CRATES, "floor", "ceil", false);
    empty.steps.clear();
    let mut no_choice = trajectory("t3", CRATES, "floor", "ceil", false);
    no_choice.steps.truncate(1);
    let report = world.learn(&[infra, empty, no_choice]);
    assert_eq!(report.rejected, 3);
    assert!(report.written.is_empty());
}

#[test]
fn merges_keep_cards_bounded_however_long_the_run() {
    let bounds = CardBounds::default();
    let world = World::new(BankConfig::default());
    for i in 0..30 {
        let task = format!(
            "A warehouse holds {} parcels and each crate carries {} parcels. How many crates are needed for shipment {i}?",
            10 + i,
            3 + i % 4
        );
        world.learn(&[trajectory(&format!("t{i}"), &task, "floor", "ceil", false)]);
    }
    let filter = world.graph.compile(&world.ctx()).unwrap();
    let cards = world.bank.visible_cards(&filter).unwrap();
    assert!(!cards.is_empty());
    assert!(
        cards.len() < 10,
        "near-duplicates were not merged: {} cards",
        cards.len()
    );
    for card in &cards {
        assert!(card.length() <= bounds.max_length());
        assert!(card.sources.len() <= bounds.sources);
        assert!(card.triggers.len() <= bounds.triggers);
    }
    assert!(
        cards.iter().any(|c| c.sources.len() > 1),
        "no card was merged"
    );
    assert!(
        cards
            .iter()
            .any(|c| c.fragment.provenance.source.parents.len() == 1)
    );
}

#[test]
fn contradicting_cards_are_linked_and_never_composed_together() {
    let world = World::new(BankConfig::default());
    world.learn(&[
        trajectory("t1", CRATES, "floor", "ceil", false),
        trajectory(
            "t2",
            "A warehouse holds 17 parcels and each crate carries 5 parcels. How many crates are full?",
            "floor",
            "ceil",
            true,
        ),
    ]);
    let filter = world.graph.compile(&world.ctx()).unwrap();
    let cards = world.bank.visible_cards(&filter).unwrap();
    assert_eq!(cards.len(), 2);
    let ids: Vec<_> = cards.iter().map(|c| c.id).collect();
    let edges = world.store_edges(&ids);
    assert!(
        edges
            .iter()
            .any(|e| e.relation == colmem_core::CardRelation::Conflicts)
    );
    let composed = world
        .bank
        .compose(&filter, &TaskContext::new(CRATES), &Budget::new(400))
        .unwrap();
    assert_eq!(composed.cards.len(), 1, "{:?}", composed.report);
    assert_eq!(composed.report.pruned.len(), 1);
}

#[test]
fn a_small_budget_falls_back_to_compact_forms_and_skips_what_does_not_fit() {
    let world = World::new(BankConfig::default());
    world.learn(&[trajectory("t1", CRATES, "floor", "ceil", false)]);
    let filter = world.graph.compile(&world.ctx()).unwrap();
    let task = TaskContext::new(CRATES);
    let full = world
        .bank
        .compose(&filter, &task, &Budget::new(400))
        .unwrap();
    assert_eq!(full.cards[0].form, Form::Full);
    let compact_budget = Budget {
        tokens: 40,
        planner: 0.0,
        executor: 1.0,
        evaluator: 0.0,
    };
    let compact = world.bank.compose(&filter, &task, &compact_budget).unwrap();
    assert_eq!(compact.cards.len(), 1);
    assert_eq!(compact.cards[0].form, Form::Compact);
    assert!(compact.report.tokens_used <= 40);
    let none = world.bank.compose(&filter, &task, &Budget::new(5)).unwrap();
    assert!(none.cards.is_empty());
    assert_eq!(none.report.skipped.len(), 1);
    assert_eq!(none.report.tokens_used, 0);
}

#[test]
fn a_task_never_sees_cards_written_after_it() {
    let world = World::new(BankConfig::default());
    let early = world.graph.compile(&world.ctx()).unwrap();
    world.learn(&[trajectory("t1", CRATES, "floor", "ceil", false)]);
    let task = TaskContext::new(CRATES);
    assert!(
        world
            .bank
            .compose(&early, &task, &Budget::new(300))
            .unwrap()
            .cards
            .is_empty()
    );
    let late = world.graph.compile(&world.ctx()).unwrap();
    assert_eq!(
        world
            .bank
            .compose(&late, &task, &Budget::new(300))
            .unwrap()
            .cards
            .len(),
        1
    );
}

impl World {
    fn store_edges(&self, ids: &[colmem_core::FragmentId]) -> Vec<colmem_core::CardEdge> {
        use colmem_store::FragmentStore;
        self.store.card_edges(ids).unwrap()
    }
}

#[test]
fn sections_follow_the_needs_and_the_role_split() {
    let world = World::new(BankConfig::default());
    world.learn(&[trajectory("t1", CRATES, "floor", "ceil", false)]);
    let filter = world.graph.compile(&world.ctx()).unwrap();
    // "check … exactly" calls for evaluation; the bare question does not.
    let checking = TaskContext::new(
        "Check exactly: a warehouse holds 17 parcels and each crate carries 5 parcels. How many crates are needed?",
    );
    let with_evaluation = world
        .bank
        .compose(&filter, &checking, &Budget::new(400))
        .unwrap();
    assert!(
        with_evaluation.text.contains("## Evaluator"),
        "{}",
        with_evaluation.text
    );
    let plain = world
        .bank
        .compose(&filter, &TaskContext::new(CRATES), &Budget::new(400))
        .unwrap();
    assert!(!plain.text.contains("## Evaluator"), "{}", plain.text);
    // With no share for the evaluator, the full form does not fit: the compact one does.
    let no_evaluator = Budget {
        evaluator: 0.0,
        executor: 0.65,
        ..Budget::new(400)
    };
    let split = world
        .bank
        .compose(&filter, &checking, &no_evaluator)
        .unwrap();
    assert_eq!(split.cards.len(), 1);
    assert_eq!(split.cards[0].form, Form::Compact);
    assert!(!split.text.contains("## Evaluator"));
    assert!(split.text.contains("## Executor"));
}

#[test]
fn a_writer_outside_the_global_writers_never_closes_a_global_card() {
    let mut world = World::new(BankConfig::default());
    let plain = AgentId::new("plain-agent").unwrap();
    world.add_agent(plain);
    world.system = SystemPolicy {
        global_writers: [world.agent].into(),
    };
    let failure = |id: &str| trajectory(id, CRATES, "floor", "ceil", false);
    let global = world
        .learn_as(world.agent, Some(Scope::Global), &[failure("t1")])
        .written[0];
    // The same lesson through an agent that may not write Global: a card of its own.
    let report = world.learn_as(plain, Some(Scope::User), &[failure("t2")]);
    assert_eq!((report.merged, report.written.len()), (0, 1));
    let filter = world.graph.compile(&world.ctx()).unwrap();
    let cards = world.bank.visible_cards(&filter).unwrap();
    assert!(
        cards
            .iter()
            .any(|c| c.id == global && c.fragment.scope == Scope::Global),
        "the Global card was closed"
    );
    // A global writer merges the same lesson into it, and the merge stays Global.
    let report = world.learn_as(world.agent, Some(Scope::Global), &[failure("t3")]);
    assert_eq!(report.merged, 1);
    let filter = world.graph.compile(&world.ctx()).unwrap();
    let merged = world.bank.visible_cards(&filter).unwrap();
    assert!(merged.iter().all(|c| c.id != global));
    assert!(
        merged
            .iter()
            .any(|c| report.written.contains(&c.id) && c.fragment.scope == Scope::Global)
    );
}

/// DESIGN section 4: a card passes the write policy of the scope it is written in. A
/// Global card gets the shared part (e-mails redacted by default), a `User` one the
/// private part (kept whole), a blocked one is not written; the mandatory redaction
/// holds everywhere. Before, every card was written as drafted.
#[test]
fn cards_pass_the_write_policy_of_their_scope() {
    let mut world = World::new(BankConfig::default());
    world.system = SystemPolicy {
        global_writers: [world.agent].into(),
    };
    let mut policies = colmem_access::WritePolicies {
        mandatory: vec![colmem_access::Redaction::Names(vec!["Zoltan".to_owned()])],
        ..colmem_access::WritePolicies::default()
    };
    policies.system.private.transforms = vec![colmem_access::Transform::Block {
        pattern: "(?i)secret".to_owned(),
    }];
    world.policies = Some(
        colmem_access::WritePolicySet::new(policies, colmem_access::PseudonymKey::new([3; 32]))
            .unwrap(),
    );
    let task = "Zoltan at ops@example.com holds 17 parcels and each crate carries 5 parcels. \
                How many crates are needed?";
    let sections = |scope: Scope, id: &str| -> Vec<String> {
        let report = world.learn_as(
            world.agent,
            Some(scope),
            &[trajectory(id, task, "floor", "ceil", false)],
        );
        assert_eq!(report.written.len(), 1, "{report:?}");
        let card =
            colmem_store::FragmentStore::card(world.store.as_ref(), report.written[0]).unwrap();
        let f = card.fields;
        vec![
            card.fragment.content,
            f.task,
            f.trigger,
            f.applicability,
            f.plan,
            f.execution,
            f.evaluation,
        ]
    };
    let global = sections(Scope::Global, "t1");
    assert!(global.iter().any(|s| s.contains("[email]")), "{global:?}");
    assert!(
        global
            .iter()
            .all(|s| !s.contains("ops@example.com") && !s.contains("Zoltan")),
        "{global:?}"
    );
    let private = sections(Scope::User, "t2");
    assert!(
        private.iter().any(|s| s.contains("ops@example.com")),
        "{private:?}"
    );
    assert!(private.iter().all(|s| !s.contains("Zoltan")), "{private:?}");

    let secret = "The secret depot holds 9 parcels and each crate carries 4. How many crates?";
    let report = world.learn_as(
        world.agent,
        Some(Scope::User),
        &[trajectory("t3", secret, "floor", "ceil", false)],
    );
    assert_eq!(
        (report.written.len(), report.withheld),
        (0, 1),
        "{report:?}"
    );
}

/// A merger that, while merging, lets another writer close (or purge) the card
/// merged into.
#[derive(Debug)]
struct ClosedMeanwhile {
    store: std::sync::OnceLock<std::sync::Arc<colmem_store::SqliteStore>>,
    user: colmem_core::UserId,
    agent: AgentId,
    purge: bool,
}

impl colmem_cards::Merger for ClosedMeanwhile {
    fn merge(
        &self,
        existing: &colmem_cards::Card,
        candidate: &colmem_cards::CardDraft,
    ) -> colmem_cards::Result<colmem_cards::CardDraft> {
        use colmem_store::FragmentStore as _;
        if let Some(store) = self.store.get() {
            if self.purge {
                store.purge(&colmem_store::Purge {
                    admin: "root".into(),
                    fragment: existing.id,
                })?;
            } else {
                store.delete(&colmem_store::Delete {
                    user: self.user,
                    agent: self.agent,
                    fragment: existing.id,
                })?;
            }
        }
        colmem_cards::OfflineMerger.merge(existing, candidate)
    }
}

#[test]
fn a_card_closed_while_a_lesson_merges_into_it_leaves_the_lesson_a_card_of_its_own() {
    for purge in [false, true] {
        let merger = std::sync::Arc::new(ClosedMeanwhile {
            store: std::sync::OnceLock::new(),
            user: colmem_core::UserId::new("cards-user").unwrap(),
            agent: AgentId::new("cards-agent").unwrap(),
            purge,
        });
        let roles = colmem_cards::Roles {
            merger: merger.clone(),
            ..colmem_cards::Roles::offline()
        };
        let world = World::with_roles(BankConfig::default(), roles);
        let failure = |id: &str| trajectory(id, CRATES, "floor", "ceil", false);
        let first = world.learn(&[failure("t1")]).written[0];
        merger.store.set(world.store.clone()).unwrap();
        let report = world
            .try_learn_as(world.agent, None, &[failure("t2")])
            .unwrap();
        assert_eq!((report.merged, report.written.len()), (0, 1), "{report:?}");
        assert_ne!(report.written[0], first);
    }
}

#[test]
fn a_score_or_a_setting_that_is_not_a_number_is_refused() {
    let world = World::new(BankConfig::default());
    for score in [f32::NAN, f32::INFINITY, -0.5, 1.5] {
        let mut t = trajectory("t1", CRATES, "floor", "ceil", true);
        t.outcome.score = score;
        let err = world.try_learn_as(world.agent, None, &[t]).unwrap_err();
        assert!(matches!(err, Error::Trajectory { .. }), "{score}: {err}");
    }
    let filter = world.graph.compile(&world.ctx()).unwrap();
    assert!(world.bank.visible_cards(&filter).unwrap().is_empty());

    let read = ReadConfig {
        recency_half_life: f32::NAN,
        ..ReadConfig::default()
    };
    assert!(read.validate().is_err());
    let read = ReadConfig {
        min_score: f32::NAN,
        ..ReadConfig::default()
    };
    assert!(read.validate().is_err());
    let mut write = WriteConfig::default();
    write.admission.threshold = f32::NAN;
    assert!(write.validate().is_err());
    let mut write = WriteConfig::default();
    write.bounds.section_chars = 0;
    assert!(write.validate().is_err());
    assert!(WriteConfig::default().validate().is_ok() && ReadConfig::default().validate().is_ok());
}
