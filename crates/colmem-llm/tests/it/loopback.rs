//! The HTTP client against the scripted loopback server: retries, failures, batching, structured output.

use std::time::{Duration, Instant};

use colmem_core::ErrorKind;
use colmem_llm::{
    ChatModel, ChatRequest, ChatServerConfig, Embedder, EmbeddingServerConfig, EndpointConfig,
    Error, JsonSchema, Message, OpenAiChat, OpenAiEmbedder, complete_json,
};
use serde::Deserialize;
use serde_json::json;

use crate::server::{ECHO_DIM, Reply, Server, completion};
use crate::suite::{check_chat, check_embedder};

const TIMEOUT_MS: u64 = 300;

fn endpoint(server: &Server, max_retries: u32) -> EndpointConfig {
    EndpointConfig {
        base_url: server.base_url(),
        api_key_env: None,
        timeout_ms: TIMEOUT_MS,
        connect_timeout_ms: TIMEOUT_MS,
        max_retries,
        backoff_ms: 10,
        max_backoff_ms: 2_000,
    }
}

fn chat(server: &Server, max_retries: u32) -> OpenAiChat {
    OpenAiChat::new(ChatServerConfig {
        endpoint: endpoint(server, max_retries),
        model: "test-model".into(),
        json_schema: false,
    })
    .unwrap()
}

fn hello() -> ChatRequest {
    ChatRequest::new(vec![Message::system("be brief"), Message::user("hello")])
        .temperature(0.0)
        .max_tokens(16)
}

fn ok(text: &str) -> Reply {
    Reply::Status(200, completion(text, 12, 5))
}

fn slow() -> Reply {
    Reply::Slow(Duration::from_secs(5), completion("too late", 1, 1))
}

fn error_body(message: &str) -> String {
    json!({"error": {"message": message, "type": "invalid_request_error"}}).to_string()
}

/// Runs one chat call against `script`; returns the outcome, the requests the server saw, and the time taken.
fn run(script: Vec<Reply>, max_retries: u32) -> (colmem_llm::Result<String>, usize, Duration) {
    let server = Server::start(script);
    let model = chat(&server, max_retries);
    let start = Instant::now();
    let outcome = model.complete(&hello()).map(|r| r.text);
    let elapsed = start.elapsed();
    // Nothing may hang: every call ends well within its retries' worth of timeouts and waits.
    assert!(
        elapsed < Duration::from_secs(4),
        "the call took {elapsed:?}"
    );
    (outcome, server.seen().len(), elapsed)
}

#[test]
fn a_200_returns_text_usage_and_sends_the_request() {
    let server = Server::start(vec![ok("hi there")]);
    let mut config = ChatServerConfig {
        endpoint: endpoint(&server, 2),
        model: "test-model".into(),
        json_schema: false,
    };
    // Cargo sets CARGO_PKG_NAME for the test process: a variable that is surely there.
    config.endpoint.api_key_env = Some("CARGO_PKG_NAME".into());
    let model = OpenAiChat::new(config).unwrap();
    let response = model.complete(&hello()).unwrap();
    assert_eq!(response.text, "hi there");
    assert_eq!(
        (
            response.usage.prompt_tokens,
            response.usage.completion_tokens
        ),
        (12, 5)
    );
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));

    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].authorization.as_deref(), Some("Bearer colmem-llm"));
    let body = &seen[0].body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}])
    );
    assert_eq!(body["temperature"], json!(0.0));
    assert_eq!(body["max_tokens"], json!(16));
    assert!(body.get("response_format").is_none());
}

#[test]
fn a_429_is_retried_after_retry_after() {
    let limited = Reply::WithHeaders(
        429,
        vec![("retry-after", "1".into())],
        error_body("slow down"),
    );
    let (outcome, requests, elapsed) = run(vec![limited, ok("done")], 2);
    assert_eq!(outcome.unwrap(), "done");
    assert_eq!(requests, 2);
    assert!(
        elapsed >= Duration::from_secs(1),
        "Retry-After: 1 was not honoured: {elapsed:?}"
    );
}

#[test]
fn a_429_asking_for_too_long_a_wait_fails_at_once() {
    let limited = Reply::WithHeaders(
        429,
        vec![("retry-after", "120".into())],
        error_body("come back later"),
    );
    let (outcome, requests, _) = run(vec![limited, ok("never")], 3);
    let err = outcome.unwrap_err();
    assert!(
        matches!(&err, Error::RateLimited { attempts: 1, message, .. } if message == "come back later"),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::Busy);
    assert_eq!(requests, 1);
}

#[test]
fn a_500_is_retried_until_the_retries_run_out() {
    let failing = || Reply::Status(500, error_body("boom"));
    let (outcome, requests, _) = run(vec![failing(), ok("recovered")], 2);
    assert_eq!(outcome.unwrap(), "recovered");
    assert_eq!(requests, 2);

    let (outcome, requests, _) = run(vec![failing(), failing(), failing(), ok("too late")], 2);
    let err = outcome.unwrap_err();
    assert!(
        matches!(&err, Error::Server { status: 500, attempts: 3, message, .. } if message == "boom"),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(requests, 3);
}

#[test]
fn malformed_json_fails_without_a_retry() {
    let (outcome, requests, _) = run(
        vec![Reply::Status(200, "{\"choices\": [".into()), ok("x")],
        3,
    );
    assert!(
        matches!(outcome, Err(Error::MalformedResponse { .. })),
        "{outcome:?}"
    );
    assert_eq!(requests, 1);

    // JSON, but not a completion.
    let (outcome, requests, _) = run(vec![Reply::Status(200, "{\"choices\": []}".into())], 3);
    assert!(
        matches!(outcome, Err(Error::MalformedResponse { .. })),
        "{outcome:?}"
    );
    assert_eq!(requests, 1);
}

#[test]
fn a_slow_answer_times_out_and_is_retried() {
    let (outcome, requests, elapsed) = run(vec![slow(), ok("fast")], 1);
    assert_eq!(outcome.unwrap(), "fast");
    assert_eq!(requests, 2);
    assert!(elapsed >= Duration::from_millis(TIMEOUT_MS));

    let (outcome, requests, _) = run(vec![slow(), slow()], 1);
    let err = outcome.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Timeout {
                attempts: 2,
                timeout_ms: TIMEOUT_MS,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(requests, 2);
}

#[test]
fn a_truncated_body_is_retried() {
    let cut = || Reply::Truncated(completion("cut short", 1, 1));
    let (outcome, requests, _) = run(vec![cut(), ok("whole")], 1);
    assert_eq!(outcome.unwrap(), "whole");
    assert_eq!(requests, 2);

    let (outcome, requests, _) = run(vec![cut(), cut()], 1);
    assert!(
        matches!(outcome, Err(Error::Connection { attempts: 2, .. })),
        "{outcome:?}"
    );
    assert_eq!(requests, 2);
}

#[test]
fn the_scripted_sequence_in_turn() {
    // 200; then 429, 500 and malformed JSON (which ends the call); then slow, truncated and 200.
    let server = Server::start(vec![
        ok("first"),
        Reply::WithHeaders(429, vec![("retry-after", "0".into())], error_body("busy")),
        Reply::Status(500, error_body("boom")),
        Reply::Status(200, "not json at all".into()),
        slow(),
        Reply::Truncated(completion("cut", 1, 1)),
        ok("last"),
    ]);
    let model = chat(&server, 3);
    let start = Instant::now();
    assert_eq!(model.complete(&hello()).unwrap().text, "first");
    assert!(matches!(
        model.complete(&hello()),
        Err(Error::MalformedResponse { .. })
    ));
    assert_eq!(server.seen().len(), 4);
    assert_eq!(model.complete(&hello()).unwrap().text, "last");
    assert_eq!(server.seen().len(), 7);
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn client_errors_carry_the_servers_message_and_are_not_retried() {
    let check = |status: u16, expect: &dyn Fn(&Error) -> bool, kind: ErrorKind| {
        let message = format!("server says {status}");
        let (outcome, requests, _) = run(
            vec![Reply::Status(status, error_body(&message)), ok("x")],
            3,
        );
        let err = outcome.unwrap_err();
        assert!(expect(&err), "{status}: {err:?}");
        assert!(err.to_string().contains(&message), "{err}");
        assert_eq!(err.kind(), kind);
        assert_eq!(requests, 1, "{status} was retried");
    };
    check(
        400,
        &|e| matches!(e, Error::BadRequest { status: 400, .. }),
        ErrorKind::InvalidInput,
    );
    check(
        401,
        &|e| matches!(e, Error::Unauthorized { status: 401, .. }),
        ErrorKind::Unavailable,
    );
    check(
        404,
        &|e| matches!(e, Error::NotFound { .. }),
        ErrorKind::Unavailable,
    );
    check(
        422,
        &|e| matches!(e, Error::BadRequest { status: 422, .. }),
        ErrorKind::InvalidInput,
    );
}

#[test]
fn a_refused_connection_is_retried_then_reported() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = OpenAiChat::new(ChatServerConfig {
        endpoint: EndpointConfig {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            ..EndpointConfig::new("")
        }
        .with_fast_retries(),
        model: "m".into(),
        json_schema: false,
    })
    .unwrap();
    let err = model.complete(&hello()).unwrap_err();
    assert!(
        matches!(err, Error::Connection { attempts: 3, .. }),
        "{err}"
    );
}

trait FastRetries {
    fn with_fast_retries(self) -> Self;
}

impl FastRetries for EndpointConfig {
    fn with_fast_retries(mut self) -> Self {
        self.timeout_ms = TIMEOUT_MS;
        self.connect_timeout_ms = TIMEOUT_MS;
        self.max_retries = 2;
        self.backoff_ms = 10;
        self
    }
}

fn embedder(server: &Server, batch_size: usize, dim: usize) -> OpenAiEmbedder {
    OpenAiEmbedder::new(EmbeddingServerConfig {
        endpoint: endpoint(server, 1),
        model: "embed-model".into(),
        dim,
        batch_size,
    })
    .unwrap()
}

#[test]
fn embeddings_are_batched_and_kept_in_order() {
    let server = Server::start(vec![Reply::EmbedEcho; 3]);
    let e = embedder(&server, 2, ECHO_DIM);
    let texts = ["one", "two", "three", "four", "five"];
    let vectors = e.embed(&texts).unwrap();
    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    assert!(
        seen.iter()
            .all(|s| s.path == "/v1/embeddings" && s.body["model"] == "embed-model")
    );
    let inputs: Vec<_> = seen.iter().map(|s| s.body["input"].clone()).collect();
    assert_eq!(
        inputs,
        vec![
            json!(["one", "two"]),
            json!(["three", "four"]),
            json!(["five"])
        ]
    );
    let offline = colmem_llm::OfflineEmbedder::new(colmem_llm::OfflineConfig {
        dim: ECHO_DIM,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(vectors, offline.embed(&texts).unwrap());
    assert!(e.embed(&[]).unwrap().is_empty());
    assert_eq!(server.seen().len(), 3, "an empty batch sends nothing");
}

#[test]
fn embeddings_out_of_order_and_of_the_wrong_length() {
    let shuffled = json!({"data": [
        {"index": 1, "embedding": [0.0, 1.0]},
        {"index": 0, "embedding": [1.0, 0.0]},
    ]});
    let server = Server::start(vec![Reply::Status(200, shuffled.to_string())]);
    let vectors = embedder(&server, 8, 2).embed(&["a", "b"]).unwrap();
    assert_eq!(vectors, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);

    let server = Server::start(vec![Reply::EmbedEcho]);
    let err = embedder(&server, 8, 3).embed(&["a"]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DimensionMismatch {
                expected: 3,
                got: ECHO_DIM,
                ..
            }
        ),
        "{err}"
    );

    let short = json!({"data": [{"index": 0, "embedding": [1.0, 0.0]}]});
    let server = Server::start(vec![Reply::Status(200, short.to_string())]);
    let err = embedder(&server, 8, 2).embed(&["a", "b"]).unwrap_err();
    assert!(matches!(err, Error::MalformedResponse { .. }), "{err}");
}

#[test]
fn the_http_embedder_passes_the_suite() {
    let server = Server::start(vec![Reply::EmbedEcho; 16]);
    check_embedder(&embedder(&server, 3, ECHO_DIM));
}

#[test]
fn the_http_chat_model_passes_the_suite() {
    let server = Server::start(vec![ok("an answer"); 4]);
    check_chat(&chat(&server, 0));
}

#[derive(Debug, PartialEq, Deserialize)]
struct Verdict {
    relevant: bool,
    reason: String,
}

fn verdict_schema() -> JsonSchema {
    JsonSchema {
        name: "verdict".into(),
        schema: json!({
            "type": "object",
            "properties": {"relevant": {"type": "boolean"}, "reason": {"type": "string"}},
            "required": ["relevant", "reason"],
            "additionalProperties": false,
        }),
        strict: true,
    }
}

#[test]
fn json_schema_goes_to_servers_that_support_it() {
    let server = Server::start(vec![ok(r#"{"relevant": true, "reason": "same topic"}"#)]);
    let model = OpenAiChat::new(ChatServerConfig {
        endpoint: endpoint(&server, 0),
        model: "m".into(),
        json_schema: true,
    })
    .unwrap();
    let (verdict, usage): (Verdict, _) =
        complete_json(&model, &hello(), &verdict_schema()).unwrap();
    assert_eq!(
        verdict,
        Verdict {
            relevant: true,
            reason: "same topic".into()
        }
    );
    assert_eq!(usage.total(), 17);
    let body = &server.seen()[0].body;
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["name"], "verdict");
    assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    assert_eq!(
        body["response_format"]["json_schema"]["schema"],
        verdict_schema().schema
    );
    assert_eq!(
        body["messages"].as_array().unwrap().len(),
        2,
        "no instruction is added"
    );
}

#[test]
fn json_is_extracted_and_repaired_for_servers_without_schemas() {
    // Prose around a fenced object: extracted on the first try.
    let server = Server::start(vec![ok(
        "Sure.\n```json\n{\"relevant\": false, \"reason\": \"other topic\"}\n```\nAnything else?",
    )]);
    let (verdict, _): (Verdict, _) =
        complete_json(&chat(&server, 0), &hello(), &verdict_schema()).unwrap();
    assert_eq!(
        verdict,
        Verdict {
            relevant: false,
            reason: "other topic".into()
        }
    );
    let body = &server.seen()[0].body;
    assert!(body.get("response_format").is_none());
    let instruction = body["messages"][2]["content"].as_str().unwrap();
    assert!(
        instruction.contains("JSON schema") && instruction.contains("\"relevant\""),
        "{instruction}"
    );

    // Unusable, then repaired: two calls, the usage of both.
    let server = Server::start(vec![
        ok("I think it is relevant."),
        ok(r#"{"relevant": true, "reason": "fixed"}"#),
    ]);
    let (verdict, usage): (Verdict, _) =
        complete_json(&chat(&server, 0), &hello(), &verdict_schema()).unwrap();
    assert_eq!(verdict.reason, "fixed");
    assert_eq!(usage.total(), 34);
    let repair = &server.seen()[1].body["messages"];
    let n = repair.as_array().unwrap().len();
    assert_eq!(
        repair[n - 2],
        json!({"role": "assistant", "content": "I think it is relevant."})
    );
    assert!(
        repair[n - 1]["content"]
            .as_str()
            .unwrap()
            .contains("could not be used")
    );

    // Still unusable after the repair: a typed error, no third call.
    let server = Server::start(vec![ok("yes"), ok(r#"{"relevant": "maybe"}"#), ok("{}")]);
    let err = complete_json::<Verdict>(&chat(&server, 0), &hello(), &verdict_schema()).unwrap_err();
    assert!(
        matches!(&err, Error::UnparseableJson { attempts: 2, excerpt, .. } if excerpt.contains("maybe")),
        "{err}"
    );
    assert_eq!(server.seen().len(), 2);
}
