//! The model-backed roles on a committed cassette, recorded once through a scripted
//! loopback server (`COLMEM_RECORD_CASSETTES=1 cargo test -p colmem-cards` records it again).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use colmem_cards::llm::{
    LlmAdmitter, LlmAggregator, LlmMerger, LlmNeedsProfiler, LlmReflector, LlmRelationJudge,
};
use colmem_cards::{
    Admitter, Aggregator, Card, CardDraft, Error, Merger, NeedsProfiler, Reflector, RelationJudge,
    TaskContext,
};
use colmem_core::{
    CardFields, CardRelation, CardSign, Fragment, FragmentId, Granularity, Kind, Provenance, Scope,
    Source, Timestamp, UserId, Validity,
};
use colmem_llm::{Cassette, CassetteChat, ChatModel, ChatServerConfig, EndpointConfig, OpenAiChat};
use serde_json::{Value, json};

use crate::server::Server;
use crate::trajectory;

const TASK: &str =
    "A warehouse holds 17 parcels and each crate carries 5 parcels. How many crates are needed?";

fn cassette() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cassettes/roles.jsonl")
}

fn sections(execution: &str) -> Value {
    json!({
        "task": TASK,
        "trigger": "crates needed for parcels",
        "applicability": "tasks that ask how many containers are needed",
        "plan": "settle the rounding before dividing",
        "execution": execution,
        "evaluation": "the count must hold every parcel",
        "triggers": ["crates", "parcels", "needed"]
    })
}

/// The scripted answers, in the order `exercise` asks.
fn answers() -> Vec<String> {
    let mut reflect = json!({
        "informative": true,
        "root_cause": "rounding down left parcels without a crate",
        "wrong_behaviour": "chose rounding=floor",
        "correction": "use rounding=ceil",
        "lesson": "count containers by rounding up",
    });
    reflect["card"] = sections("avoid rounding=floor; use rounding=ceil instead");
    let mut aggregated = sections("use rounding=ceil");
    aggregated["sources"] = json!(["ok-1"]);
    vec![
        // Reflection: prose first, then the JSON after the repair prompt.
        "The cause is clear: the agent rounded down.".to_owned(),
        format!("```json\n{reflect}\n```"),
        json!({"cards": [aggregated]}).to_string(),
        json!({"coverage": 1.0, "consistency": 0.9, "evidence": 0.8, "utility": 0.7}).to_string(),
        sections("avoid rounding=floor; round up with rounding=ceil").to_string(),
        json!({"relation": "conflicts", "weight": 0.9}).to_string(),
        json!({"relation": "constrains", "weight": 0.5}).to_string(),
        json!({"applicability": 0.2, "plan": 0.5, "execution": 1.0, "evaluation": 0.4}).to_string(),
        // Needs, twice unusable: the role gives up with a typed error.
        "no idea".to_owned(),
        "still no idea".to_owned(),
    ]
}

fn card(id: u64, execution: &str, sign: CardSign) -> Card {
    let fields = CardFields {
        task: TASK.to_owned(),
        trigger: "crates parcels".to_owned(),
        applicability: "tasks about crates".to_owned(),
        plan: "settle the rounding".to_owned(),
        execution: execution.to_owned(),
        evaluation: "check the count".to_owned(),
        sign,
    };
    Card {
        id: FragmentId(id),
        fields,
        triggers: ["crate", "parcel"].iter().map(|s| s.to_string()).collect(),
        credibility: 0.6,
        round: 1,
        sources: vec![format!("t{id}")],
        embedding: Vec::new(),
        fragment: Fragment {
            id: FragmentId(id),
            key: None,
            content: String::new(),
            granularity: Granularity::Card,
            kind: Kind::Observation,
            scope: Scope::User,
            provenance: Provenance {
                created_at: Timestamp::from_millis(0),
                user: UserId::new("llm-user").unwrap(),
                agents: BTreeSet::new(),
                resources: BTreeSet::new(),
                source: Source::default(),
            },
            validity: Validity::always(),
            keywords: Vec::new(),
            superseded_at: None,
            superseded_by: None,
            deleted_at: None,
        },
    }
}

/// Runs every role once on `model` and checks what each returns.
fn exercise(model: Arc<dyn ChatModel>) {
    let failure = trajectory("fail-1", TASK, "floor", "ceil", false);
    let reflection = LlmReflector::new(model.clone())
        .reflect(&failure)
        .unwrap()
        .unwrap();
    assert_eq!(reflection.wrong_behaviour, "chose rounding=floor");
    assert_eq!(reflection.card.fields.sign, CardSign::Negative);
    assert_eq!(reflection.card.sources, vec!["fail-1"]);
    assert!(reflection.card.triggers.contains("crate"));

    let success = trajectory("ok-1", TASK, "ceil", "floor", true);
    let drafts = LlmAggregator::new(model.clone())
        .aggregate(&[&success])
        .unwrap();
    assert_eq!(drafts.len(), 1);
    assert_eq!(drafts[0].fields.sign, CardSign::Positive);
    assert_eq!(drafts[0].evidence, 1.0);

    let assessment = LlmAdmitter::new(model.clone()).assess(&drafts[0]).unwrap();
    assert!((assessment.reliability - 0.9).abs() < 1e-5);
    assert_eq!(assessment.utility, 0.7);

    let stored = card(1, "avoid rounding=floor", CardSign::Negative);
    let merged: CardDraft = LlmMerger::new(model.clone())
        .merge(&stored, &reflection.card)
        .unwrap();
    assert_eq!(merged.fields.sign, CardSign::Negative);
    assert_eq!(merged.sources, vec!["t1", "fail-1"]);

    let judge = LlmRelationJudge::new(model.clone());
    let other = card(2, "use rounding=floor", CardSign::Positive);
    assert_eq!(
        judge.relate(&stored, &other, 0.8).unwrap(),
        Some((CardRelation::Conflicts, 0.9))
    );
    assert!(matches!(
        judge.relate(&other, &stored, 0.8),
        Err(Error::InvalidAnswer { role: "relate", .. })
    ));

    let profiler = LlmNeedsProfiler::new(model);
    let needs = profiler.profile(&TaskContext::new(TASK)).unwrap();
    assert_eq!(needs.execution, 1.0);
    assert_eq!(needs.applicability, 0.2);
    assert!(matches!(
        profiler.profile(&TaskContext::new("Check the fence posts.")),
        Err(Error::Model { role: "needs", .. })
    ));
}

#[test]
fn model_roles_replay_from_the_committed_cassette() {
    let replay = Cassette::replay(cassette()).unwrap();
    exercise(Arc::new(CassetteChat::replaying(replay).unwrap()));
}

#[test]
fn the_committed_cassette_matches_a_fresh_recording() {
    let server = Server::start(answers());
    let mut endpoint = EndpointConfig::new(server.base_url());
    endpoint.max_retries = 0;
    let chat = OpenAiChat::new(ChatServerConfig {
        endpoint,
        model: "scripted".to_owned(),
        json_schema: false,
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("roles.jsonl");
    {
        let recording = Cassette::record(&path).unwrap();
        exercise(Arc::new(
            CassetteChat::recording(recording, Arc::new(chat)).unwrap(),
        ));
    }
    let fresh = std::fs::read_to_string(&path).unwrap();
    if std::env::var_os("COLMEM_RECORD_CASSETTES").is_some() {
        std::fs::write(cassette(), &fresh).unwrap();
    }
    let committed = std::fs::read_to_string(cassette()).unwrap_or_default();
    let lines = |s: &str| -> Vec<Value> {
        s.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    assert_eq!(
        lines(&fresh),
        lines(&committed),
        "the prompts changed: record again with COLMEM_RECORD_CASSETTES=1 cargo test -p colmem-cards"
    );
}

#[test]
fn a_relation_without_a_weight_or_a_card_without_a_trigger_is_refused() {
    let mut untriggered = sections("use rounding=ceil");
    untriggered["trigger"] = json!(" ");
    let server = Server::start(vec![
        json!({"relation": "supports"}).to_string(),
        json!({"relation": "none"}).to_string(),
        untriggered.to_string(),
    ]);
    let mut endpoint = EndpointConfig::new(server.base_url());
    endpoint.max_retries = 0;
    let model: Arc<dyn ChatModel> = Arc::new(
        OpenAiChat::new(ChatServerConfig {
            endpoint,
            model: "scripted".to_owned(),
            json_schema: false,
        })
        .unwrap(),
    );
    let judge = LlmRelationJudge::new(model.clone());
    let (a, b) = (
        card(1, "use rounding=ceil", CardSign::Positive),
        card(2, "use rounding=floor", CardSign::Positive),
    );
    assert!(matches!(
        judge.relate(&a, &b, 0.8),
        Err(Error::InvalidAnswer { role: "relate", .. })
    ));
    // "None" needs no weight.
    assert_eq!(judge.relate(&a, &b, 0.8).unwrap(), None);
    let draft = CardDraft {
        fields: a.fields.clone(),
        triggers: a.triggers.clone(),
        sources: vec!["t9".to_owned()],
        evidence: 1.0,
    };
    assert!(matches!(
        LlmMerger::new(model).merge(&a, &draft),
        Err(Error::InvalidAnswer { .. })
    ));
}
