//! The coordinators: offline lexical choice, and a chat model that may only choose among
//! the authorised candidates, replayed from a cassette recorded through a loopback server.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use colmem_collab::{
    Coordinator, Error, LlmCoordinator, OfflineCoordinator, OutOfSet, Selection, SelectionConfig,
    Specialist,
};
use colmem_core::AgentId;
use colmem_llm::{
    Cassette, CassetteChat, ChatModel, ChatServerConfig, EndpointConfig, OfflineConfig,
    OfflineEmbedder, OpenAiChat,
};

use crate::loopback::Loopback;

fn team() -> Vec<Specialist> {
    [
        (
            "finance-agent",
            "finance: credit rating, revenue band, leverage ratio, auditor",
        ),
        (
            "logistics-agent",
            "logistics: carrier, warehouse, shipping lane, delivery lead time",
        ),
        (
            "market-agent",
            "market research: market share, main competitor, customer segment",
        ),
    ]
    .into_iter()
    .map(|(id, spec)| Specialist::new(AgentId::new(id).unwrap(), spec, Vec::new()))
    .collect()
}

fn pick<'a>(team: &'a [Specialist], ids: &[&str]) -> Vec<&'a Specialist> {
    team.iter()
        .filter(|s| ids.contains(&s.id.as_str()))
        .collect()
}

fn names(selection: &Selection) -> Vec<&'static str> {
    selection.agents.iter().map(|a| a.as_str()).collect()
}

#[test]
fn the_offline_coordinator_matches_specialisations_within_the_candidates() {
    let team = team();
    let all = pick(&team, &["finance-agent", "logistics-agent", "market-agent"]);
    let coordinator = OfflineCoordinator::new(SelectionConfig::default());
    let chosen = coordinator
        .select("Which carrier serves the Orvane warehouse?", &all)
        .unwrap();
    assert_eq!(names(&chosen), ["logistics-agent"]);
    // The best match is not authorised: it cannot be chosen, whatever the score.
    let without = pick(&team, &["finance-agent", "market-agent"]);
    let chosen = coordinator
        .select("Which carrier serves the Orvane warehouse?", &without)
        .unwrap();
    assert!(!names(&chosen).contains(&"logistics-agent"));
    assert_eq!(
        coordinator.select("anything", &[]).unwrap(),
        Selection::default()
    );
    // Nothing in common and no embedder: nobody is chosen.
    assert!(
        coordinator
            .select("zzz qqq", &all)
            .unwrap()
            .agents
            .is_empty()
    );
}

#[test]
fn the_offline_coordinator_can_choose_several_and_use_embeddings() {
    let team = team();
    let all = pick(&team, &["finance-agent", "logistics-agent", "market-agent"]);
    let wide = OfflineCoordinator::new(SelectionConfig {
        max_agents: 3,
        min_share: 0.0,
    });
    let chosen = wide.select("credit rating and carrier", &all).unwrap();
    assert_eq!(chosen.agents.len(), 2, "{chosen:?}");
    let embedder = Arc::new(OfflineEmbedder::new(OfflineConfig::default()).unwrap());
    let with_embeddings =
        OfflineCoordinator::new(SelectionConfig::default()).with_embedder(embedder);
    // "competitors" shares no analysed term with any specialisation ("competitor" does),
    // but shares character n-grams with the market agent's.
    let chosen = with_embeddings.select("competitors", &all).unwrap();
    assert_eq!(names(&chosen), ["market-agent"]);
}

/// What the scripted model answers, in order, for the recorded requests.
const ANSWERS: [&str; 3] = [
    r#"{"agents": ["finance-agent"]}"#,
    r#"{"agents": ["logistics-agent"]}"#,
    r#"{"agents": ["hr-agent"]}"#,
];

struct Case {
    query: &'static str,
    candidates: &'static [&'static str],
}

const CASES: [Case; 3] = [
    Case {
        query: "What is the credit rating of Valmora?",
        candidates: &["finance-agent", "logistics-agent", "market-agent"],
    },
    // logistics-agent is not authorised for this user: the model names it anyway.
    Case {
        query: "Which carrier serves the Orvane warehouse?",
        candidates: &["finance-agent", "market-agent"],
    },
    // hr-agent does not exist at all.
    Case {
        query: "Which shipping lane does Keltra use?",
        candidates: &["finance-agent", "logistics-agent"],
    },
];

fn cassette_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/cassettes/coordinator.jsonl")
}

/// Runs every case against `model`, with out-of-set answers falling back.
fn run_cases(
    model: Arc<dyn ChatModel>,
    out_of_set: OutOfSet,
) -> Vec<colmem_collab::Result<Selection>> {
    let team = team();
    let coordinator = LlmCoordinator::new(model, 1, out_of_set);
    CASES
        .iter()
        .map(|case| coordinator.select(case.query, &pick(&team, case.candidates)))
        .collect()
}

/// Records the cases through a real HTTP client talking to a loopback server.
fn record(path: &Path) {
    let server = Loopback::start(ANSWERS.iter().map(|a| a.to_string()).collect());
    let chat = OpenAiChat::new(ChatServerConfig {
        endpoint: EndpointConfig::new(server.base_url()),
        model: "coordinator-test".into(),
        json_schema: true,
    })
    .unwrap();
    let cassette = Cassette::record(path).unwrap();
    let model = CassetteChat::recording(cassette, Arc::new(chat)).unwrap();
    let results = run_cases(Arc::new(model), OutOfSet::Refuse);
    assert_eq!(server.served(), ANSWERS.len());
    assert!(results[0].is_ok());
}

#[test]
fn the_committed_cassette_is_what_the_loopback_recording_gives() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("coordinator.jsonl");
    record(&fresh);
    let fresh = std::fs::read_to_string(&fresh).unwrap();
    if std::env::var_os("COLMEM_RECORD").is_some() {
        std::fs::write(cassette_path(), &fresh).unwrap();
    }
    let committed = std::fs::read_to_string(cassette_path()).unwrap();
    assert_eq!(
        committed, fresh,
        "the committed cassette is stale: run this test with COLMEM_RECORD=1"
    );
}

fn replayed() -> Arc<dyn ChatModel> {
    Arc::new(CassetteChat::replaying(Cassette::replay(cassette_path()).unwrap()).unwrap())
}

#[test]
fn the_model_chooses_only_among_authorised_agents() {
    let results = run_cases(replayed(), OutOfSet::Refuse);
    assert_eq!(names(results[0].as_ref().unwrap()), ["finance-agent"]);
    for result in &results[1..] {
        assert!(
            matches!(result, Err(Error::OutOfSet { .. })),
            "an out-of-set answer is a typed error: {result:?}"
        );
    }
    let results = run_cases(replayed(), OutOfSet::Fallback);
    let first = results[0].as_ref().unwrap();
    assert!(!first.fell_back);
    let unauthorised = results[1].as_ref().unwrap();
    assert!(unauthorised.fell_back);
    assert!(!names(unauthorised).contains(&"logistics-agent"));
    let unknown = results[2].as_ref().unwrap();
    assert!(unknown.fell_back);
    assert_eq!(names(unknown), ["logistics-agent"], "the offline choice");
}
