//! Record and replay: a recorded session replays without a model, and unknown requests fail loudly.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use colmem_core::ErrorKind;
use colmem_llm::{
    Cassette, CassetteChat, CassetteEmbedder, ChatModel, ChatRequest, ChatResponse, Embedder,
    Error, JsonSchema, Message, OfflineEmbedder, Usage, complete_json,
};
use serde::Deserialize;
use serde_json::json;

use crate::suite::{check_chat, check_embedder};

/// A chat model that answers from a script, for recording.
#[derive(Debug)]
struct Scripted {
    answers: Mutex<VecDeque<String>>,
    json_schema: bool,
}

impl Scripted {
    fn new(answers: &[&str]) -> Arc<Self> {
        Arc::new(Scripted {
            answers: Mutex::new(answers.iter().map(|s| (*s).to_owned()).collect()),
            json_schema: false,
        })
    }
}

impl ChatModel for Scripted {
    fn id(&self) -> &str {
        "scripted"
    }

    fn supports_json_schema(&self) -> bool {
        self.json_schema
    }

    fn complete(&self, _request: &ChatRequest) -> colmem_llm::Result<ChatResponse> {
        let text = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .expect("the script ran out");
        Ok(ChatResponse {
            text,
            usage: Usage {
                prompt_tokens: 10,
                completion_tokens: 3,
            },
            finish_reason: None,
        })
    }
}

#[derive(Debug, PartialEq, Deserialize)]
struct Fact {
    subject: String,
    verb: String,
}

fn schema() -> JsonSchema {
    JsonSchema {
        name: "fact".into(),
        schema: json!({"type": "object"}),
        strict: false,
    }
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system("extract one fact"),
        Message::user(text),
    ])
    .temperature(0.0)
}

#[test]
fn a_recorded_session_replays_without_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cassettes/facts.jsonl");

    let recorded: Vec<(Fact, Usage)> = {
        let cassette = Cassette::record(&path).unwrap();
        let model = CassetteChat::recording(
            cassette.clone(),
            Scripted::new(&[
                "not json",
                r#"{"subject": "alice", "verb": "moved"}"#,
                r#"{"subject": "bob", "verb": "likes"}"#,
            ]),
        )
        .unwrap();
        vec![
            complete_json(&model, &ask("Alice moved to Berlin."), &schema()).unwrap(),
            complete_json(&model, &ask("Bob likes tea."), &schema()).unwrap(),
        ]
    };
    let lines = std::fs::read_to_string(&path).unwrap();
    assert_eq!(lines.lines().count(), 3, "the repair round is recorded too");

    let cassette = Cassette::replay(&path).unwrap();
    let model: Arc<dyn ChatModel> = Arc::new(CassetteChat::replaying(cassette).unwrap());
    assert_eq!(model.id(), "scripted");
    let replayed = vec![
        complete_json::<Fact>(model.as_ref(), &ask("Alice moved to Berlin."), &schema()).unwrap(),
        complete_json::<Fact>(model.as_ref(), &ask("Bob likes tea."), &schema()).unwrap(),
    ];
    assert_eq!(replayed, recorded);
    assert_eq!(replayed[0].1.total(), 26);

    // A request that was never recorded fails loudly, naming it.
    let err = model.complete(&ask("Carol hates rain.")).unwrap_err();
    assert!(
        matches!(&err, Error::NotRecorded { summary, .. } if summary.contains("Carol hates rain.")),
        "{err}"
    );
    assert!(err.to_string().contains("facts.jsonl"), "{err}");
    assert_eq!(err.kind(), ErrorKind::NotFound);
    // So does the same request at another temperature.
    assert!(matches!(
        model.complete(&ask("Bob likes tea.").temperature(0.7)),
        Err(Error::NotRecorded { .. })
    ));
}

#[test]
fn a_request_recorded_twice_replays_in_order_then_repeats_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("twice.jsonl");
    {
        let model = CassetteChat::recording(
            Cassette::record(&path).unwrap(),
            Scripted::new(&["one", "two"]),
        )
        .unwrap();
        model.complete(&ask("same")).unwrap();
        model.complete(&ask("same")).unwrap();
    }
    let model = CassetteChat::replaying(Cassette::replay(&path).unwrap()).unwrap();
    let answers: Vec<String> = (0..3)
        .map(|_| model.complete(&ask("same")).unwrap().text)
        .collect();
    assert_eq!(answers, ["one", "two", "two"]);
    check_chat_replay(&path);
}

fn check_chat_replay(path: &std::path::Path) {
    // The suite's own request was not recorded: it must fail, not invent an answer.
    let model = CassetteChat::replaying(Cassette::replay(path).unwrap()).unwrap();
    let err = model
        .complete(&ChatRequest::new(vec![Message::user("Say something.")]))
        .unwrap_err();
    assert!(matches!(err, Error::NotRecorded { .. }), "{err}");
}

#[test]
fn the_chat_suite_replays() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("suite.jsonl");
    {
        let model = CassetteChat::recording(
            Cassette::record(&path).unwrap(),
            Scripted::new(&["hello", "hello"]),
        )
        .unwrap();
        check_chat(&model);
    }
    check_chat(&CassetteChat::replaying(Cassette::replay(&path).unwrap()).unwrap());
}

#[test]
fn embeddings_record_and_replay_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("embed.jsonl");
    let offline = Arc::new(OfflineEmbedder::default());
    {
        let recording =
            CassetteEmbedder::recording(Cassette::record(&path).unwrap(), offline.clone()).unwrap();
        check_embedder(&recording);
    }
    let replaying = CassetteEmbedder::replaying(Cassette::replay(&path).unwrap()).unwrap();
    assert_eq!(replaying.id(), offline.id());
    assert_eq!(replaying.dim(), offline.dim());
    check_embedder(&replaying);
    let texts = [
        "Alice moved to Berlin in March.",
        "Bob prefers tea over coffee.",
    ];
    let err = replaying
        .embed(&texts[..1])
        .map(|_| ())
        .and_then(|()| replaying.embed(&["never seen"]).map(|_| ()));
    assert!(
        matches!(&err, Err(Error::NotRecorded { summary, .. }) if summary.contains("never seen")),
        "{err:?}"
    );
}

#[test]
fn bad_cassettes_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let missing = Cassette::replay(dir.path().join("missing.jsonl")).unwrap_err();
    assert!(matches!(missing, Error::Cassette { .. }), "{missing}");
    assert!(missing.to_string().contains("record it first"), "{missing}");

    let path = dir.path().join("broken.jsonl");
    std::fs::write(&path, "{\"kind\": \"chat\"}\n").unwrap();
    let err = Cassette::replay(&path).unwrap_err();
    assert!(err.to_string().contains("line 1"), "{err}");
    assert_eq!(err.kind(), ErrorKind::Corrupt);

    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let cassette = Cassette::replay(&empty).unwrap();
    assert!(CassetteChat::replaying(cassette.clone()).is_err());
    assert!(CassetteEmbedder::replaying(cassette.clone()).is_err());
    assert!(
        CassetteChat::recording(cassette, Scripted::new(&[])).is_err(),
        "a replay cassette does not record"
    );
}
