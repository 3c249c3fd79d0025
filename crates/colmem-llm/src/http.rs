//! The OpenAI-compatible HTTP client: `/chat/completions` and `/embeddings` on any server that speaks it.
//!
//! Works with hosted OpenAI-style APIs, vLLM, the llama.cpp server and Ollama (see
//! `docs/models.md` for a configuration of each). The client blocks (reqwest's blocking client
//! with rustls) and follows one retry policy for both endpoints:
//!
//! | what happens | what the client does |
//! |---|---|
//! | 2xx with a body that parses | returns it |
//! | 2xx with a body that is not the protocol's JSON | fails at once: [`Error::MalformedResponse`] |
//! | 429 | retries after `Retry-After` (or `retry-after-ms`), else after the backoff; [`Error::RateLimited`] when retries run out, or at once if the server asks for a wait longer than `max_backoff_ms` |
//! | 408, 5xx | retries (honouring `Retry-After` the same way); then [`Error::Server`] |
//! | timeout (`timeout_ms` for the whole exchange) | retries; then [`Error::Timeout`] |
//! | refused, reset or truncated connection | retries; then [`Error::Connection`] |
//! | 401, 403 | fails at once: [`Error::Unauthorized`] with the server's message |
//! | 404 | fails at once: [`Error::NotFound`] with the server's message |
//! | other 4xx | fails at once: [`Error::BadRequest`] with the server's message |
//!
//! At most `1 + max_retries` requests are sent. The backoff before retry `n` (from 0) is drawn
//! uniformly from `[d/2, d]` with `d = min(max_backoff_ms, backoff_ms * 2^n)` (equal jitter).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::blocking::{Client, Response};
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::chat::{ChatModel, ChatRequest, ChatResponse, Usage};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::tokens::{ApproxTokenCounter, TokenCounter};

/// How much of an unstructured error body an error quotes.
const MESSAGE_CHARS: usize = 500;

/// Where a server is and how patiently to talk to it.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct EndpointConfig {
    /// The API's base URL, up to and including the version: `https://api.openai.com/v1`,
    /// `http://127.0.0.1:8000/v1` (vLLM), `http://127.0.0.1:8080/v1` (llama.cpp),
    /// `http://127.0.0.1:11434/v1` (Ollama).
    pub base_url: String,
    /// The name of the environment variable holding the API key, sent as a bearer token;
    /// `None` for servers that need no key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The longest one request may take, from connecting to the last byte of the answer.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// The longest connecting may take.
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// How many times a failed request is sent again (429, 408, 5xx, timeouts, broken connections).
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// The first backoff; it doubles with each retry.
    #[serde(default = "default_backoff_ms")]
    pub backoff_ms: u64,
    /// The longest wait before a retry; a `Retry-After` asking for more fails at once.
    #[serde(default = "default_max_backoff_ms")]
    pub max_backoff_ms: u64,
}

fn default_timeout_ms() -> u64 {
    60_000
}
fn default_connect_timeout_ms() -> u64 {
    10_000
}
fn default_max_retries() -> u32 {
    3
}
fn default_backoff_ms() -> u64 {
    500
}
fn default_max_backoff_ms() -> u64 {
    30_000
}
fn default_batch_size() -> usize {
    64
}

impl EndpointConfig {
    /// A configuration for `base_url` with the default timeouts and retries.
    pub fn new(base_url: impl Into<String>) -> Self {
        EndpointConfig {
            base_url: base_url.into(),
            api_key_env: None,
            timeout_ms: default_timeout_ms(),
            connect_timeout_ms: default_connect_timeout_ms(),
            max_retries: default_max_retries(),
            backoff_ms: default_backoff_ms(),
            max_backoff_ms: default_max_backoff_ms(),
        }
    }
}

/// A chat model behind an OpenAI-compatible `/chat/completions`. Read from one table
/// holding the endpoint's keys beside its own; a key of neither is refused.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(from = "ChatTable")]
pub struct ChatServerConfig {
    /// The server (written as keys of the table itself).
    #[serde(flatten)]
    pub endpoint: EndpointConfig,
    /// The model name the server knows (`gpt-4o-mini`, `Qwen/Qwen2.5-7B-Instruct`, `llama3.1`).
    pub model: String,
    /// Whether the server honours `response_format: {type: json_schema}`; when false,
    /// [`complete_json`](crate::complete_json) asks for JSON in the prompt and extracts it.
    pub json_schema: bool,
}

/// An embedding model behind an OpenAI-compatible `/embeddings`. Read from one table
/// holding the endpoint's keys beside its own; a key of neither is refused.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(from = "EmbeddingTable")]
pub struct EmbeddingServerConfig {
    /// The server (written as keys of the table itself).
    #[serde(flatten)]
    pub endpoint: EndpointConfig,
    /// The model name the server knows.
    pub model: String,
    /// The length of the model's vectors (384 for all-MiniLM-L6-v2, 1536 for text-embedding-3-small);
    /// a server returning another length is an error.
    pub dim: usize,
    /// How many texts one request carries (64 when not given).
    pub batch_size: usize,
}

/// The keys of a server's table, shared by [`ChatTable`] and [`EmbeddingTable`]: each
/// lists the endpoint's keys beside its own in one flat struct, so that serde refuses an
/// unknown key (it cannot beside a flattened table) and its errors name the key and line.
macro_rules! server_table {
    ($(#[$meta:meta])* struct $name:ident { $($(#[$field_meta:meta])* $field:ident: $ty:ty,)* }) => {
        $(#[$meta])*
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct $name {
            base_url: String,
            #[serde(default)]
            api_key_env: Option<String>,
            #[serde(default = "default_timeout_ms")]
            timeout_ms: u64,
            #[serde(default = "default_connect_timeout_ms")]
            connect_timeout_ms: u64,
            #[serde(default = "default_max_retries")]
            max_retries: u32,
            #[serde(default = "default_backoff_ms")]
            backoff_ms: u64,
            #[serde(default = "default_max_backoff_ms")]
            max_backoff_ms: u64,
            $($(#[$field_meta])* $field: $ty,)*
        }

        impl $name {
            fn endpoint(&self) -> EndpointConfig {
                EndpointConfig {
                    base_url: self.base_url.clone(),
                    api_key_env: self.api_key_env.clone(),
                    timeout_ms: self.timeout_ms,
                    connect_timeout_ms: self.connect_timeout_ms,
                    max_retries: self.max_retries,
                    backoff_ms: self.backoff_ms,
                    max_backoff_ms: self.max_backoff_ms,
                }
            }
        }
    };
}

server_table! {
    /// [`ChatServerConfig`] as written.
    struct ChatTable {
        model: String,
        #[serde(default)]
        json_schema: bool,
    }
}

impl From<ChatTable> for ChatServerConfig {
    fn from(table: ChatTable) -> Self {
        ChatServerConfig {
            endpoint: table.endpoint(),
            model: table.model,
            json_schema: table.json_schema,
        }
    }
}

server_table! {
    /// [`EmbeddingServerConfig`] as written.
    struct EmbeddingTable {
        model: String,
        dim: usize,
        #[serde(default = "default_batch_size")]
        batch_size: usize,
    }
}

impl From<EmbeddingTable> for EmbeddingServerConfig {
    fn from(table: EmbeddingTable) -> Self {
        EmbeddingServerConfig {
            endpoint: table.endpoint(),
            model: table.model,
            dim: table.dim,
            batch_size: table.batch_size,
        }
    }
}

/// The transport both models share: one blocking client, one retry policy.
struct Endpoint {
    config: EndpointConfig,
    client: Client,
    api_key: Option<String>,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("config", &self.config)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

/// A failed attempt, and whether another may succeed.
enum Attempt {
    Retry {
        error: Error,
        wait: Option<Duration>,
    },
    Fail(Error),
}

impl Endpoint {
    fn new(config: EndpointConfig) -> Result<Self> {
        let base = config.base_url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::Config(format!(
                "base_url {:?} must start with http:// or https://, e.g. http://127.0.0.1:8000/v1",
                config.base_url
            )));
        }
        if config.timeout_ms == 0 {
            return Err(Error::Config("timeout_ms must be at least 1".to_owned()));
        }
        let api_key = match &config.api_key_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(key) if !key.trim().is_empty() => Some(key.trim().to_owned()),
                _ => return Err(Error::MissingApiKey { var: var.clone() }),
            },
        };
        let client = Client::builder()
            .timeout(Duration::from_millis(config.timeout_ms))
            .connect_timeout(Duration::from_millis(config.connect_timeout_ms.max(1)))
            .user_agent(concat!("colmem/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Endpoint {
            config,
            client,
            api_key,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.config.base_url.trim_end_matches('/'))
    }

    /// POSTs `body` to `path` under the retry policy and returns the parsed answer.
    fn post(&self, path: &str, body: &Value) -> Result<Value> {
        let url = self.url(path);
        let bytes = serde_json::to_vec(body)
            .map_err(|e| Error::Config(format!("cannot encode the request: {e}")))?;
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let outcome = self.attempt(&url, &bytes, attempt);
            let (error, wait) = match outcome {
                Ok(value) => return Ok(value),
                Err(Attempt::Fail(error)) => return Err(error),
                Err(Attempt::Retry { error, wait }) => (error, wait),
            };
            if attempt > self.config.max_retries {
                return Err(error);
            }
            let max = Duration::from_millis(self.config.max_backoff_ms);
            let wait = match wait {
                Some(asked) if asked > max => return Err(error),
                Some(asked) => asked,
                None => backoff(
                    self.config.backoff_ms,
                    self.config.max_backoff_ms,
                    attempt - 1,
                ),
            };
            std::thread::sleep(wait);
        }
    }

    fn attempt(&self, url: &str, body: &[u8], attempts: u32) -> Result<Value, Attempt> {
        let mut request = self
            .client
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let transport = |e: reqwest::Error| {
            if e.is_timeout() {
                Error::Timeout {
                    url: url.to_owned(),
                    timeout_ms: self.config.timeout_ms,
                    attempts,
                }
            } else {
                Error::Connection {
                    url: url.to_owned(),
                    attempts,
                    message: error_chain(&e),
                }
            }
        };
        let response: Response = request.send().map_err(|e| Attempt::Retry {
            error: transport(e),
            wait: None,
        })?;
        let status = response.status().as_u16();
        let wait = retry_after(response.headers());
        let bytes = response.bytes().map_err(|e| Attempt::Retry {
            error: transport(e),
            wait: None,
        })?;
        if (200..300).contains(&status) {
            return serde_json::from_slice(&bytes).map_err(|e| {
                Attempt::Fail(Error::MalformedResponse {
                    url: url.to_owned(),
                    message: format!("the body is not JSON ({e})"),
                })
            });
        }
        let message = server_message(&bytes);
        let url = url.to_owned();
        Err(match status {
            429 => Attempt::Retry {
                error: Error::RateLimited {
                    url,
                    attempts,
                    message,
                },
                wait,
            },
            408 | 500..=599 => Attempt::Retry {
                error: Error::Server {
                    url,
                    status,
                    attempts,
                    message,
                },
                wait,
            },
            401 | 403 => Attempt::Fail(Error::Unauthorized {
                url,
                status,
                message,
            }),
            404 => Attempt::Fail(Error::NotFound { url, message }),
            _ => Attempt::Fail(Error::BadRequest {
                url,
                status,
                message,
            }),
        })
    }
}

/// The error and its sources on one line ("error sending request: connection closed …").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

/// The wait a server asks for: `retry-after-ms`, or `Retry-After` in seconds.
///
/// An HTTP-date `Retry-After` is not understood and falls back to the backoff.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let value = headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    number("retry-after").map(Duration::from_secs_f64)
}

/// The server's own words from an error body, in the shapes OpenAI, vLLM, llama.cpp and Ollama use.
fn server_message(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        let found = value
            .pointer("/error/message")
            .or_else(|| value.get("error"))
            .or_else(|| value.get("message"))
            .or_else(|| value.get("detail"));
        if let Some(Value::String(s)) = found {
            return s.clone();
        }
        if let Some(found) = found {
            return found.to_string();
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        "(no message)".to_owned()
    } else {
        text.chars().take(MESSAGE_CHARS).collect()
    }
}

/// The wait before retry `n`: uniform in `[d/2, d]`, `d = min(max, base * 2^n)`.
fn backoff(base_ms: u64, max_ms: u64, n: u32) -> Duration {
    let d = base_ms.saturating_mul(1u64 << n.min(32)).min(max_ms);
    let half = d / 2;
    Duration::from_millis(half + random() % (d - half + 1))
}

/// A SplitMix64 stream seeded from the clock: jitter needs no cryptographic randomness.
fn random() -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut z = STATE.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed) ^ nanos;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A chat model served over the OpenAI-compatible protocol.
#[derive(Debug)]
pub struct OpenAiChat {
    endpoint: Endpoint,
    model: String,
    json_schema: bool,
    id: String,
}

impl OpenAiChat {
    /// A client for this server; reads the API key from the environment now.
    pub fn new(config: ChatServerConfig) -> Result<Self> {
        if config.model.trim().is_empty() {
            return Err(Error::Config(
                "the chat model's name is empty; set model".to_owned(),
            ));
        }
        let id = format!("openai-compatible/{}", config.model);
        Ok(OpenAiChat {
            endpoint: Endpoint::new(config.endpoint)?,
            model: config.model,
            json_schema: config.json_schema,
            id,
        })
    }

    fn body(&self, request: &ChatRequest) -> Value {
        let mut body = json!({ "model": self.model, "messages": request.messages });
        if let Some(t) = request.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(n) = request.max_tokens {
            body["max_tokens"] = json!(n);
        }
        if let (true, Some(schema)) = (self.json_schema, &request.response_format) {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": { "name": schema.name, "schema": schema.schema, "strict": schema.strict },
            });
        }
        body
    }
}

#[derive(Deserialize)]
struct CompletionBody {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<UsageBody>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct UsageBody {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

impl ChatModel for OpenAiChat {
    fn id(&self) -> &str {
        &self.id
    }

    fn supports_json_schema(&self) -> bool {
        self.json_schema
    }

    /// Sends the request; a server that reports no usage gets the [`ApproxTokenCounter`]'s estimate.
    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let path = "chat/completions";
        let value = self.endpoint.post(path, &self.body(request))?;
        let malformed = |message: String| Error::MalformedResponse {
            url: self.endpoint.url(path),
            message,
        };
        let body: CompletionBody = serde_json::from_value(value)
            .map_err(|e| malformed(format!("not a chat completion ({e})")))?;
        let choice = body
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| malformed("the completion has no choices".to_owned()))?;
        let text = match (choice.message.content, choice.message.refusal) {
            (Some(text), _) => text,
            (None, Some(refusal)) => {
                return Err(malformed(format!("the model refused: {refusal}")));
            }
            (None, None) => return Err(malformed("the completion has no content".to_owned())),
        };
        let usage = match body.usage {
            Some(u) => Usage {
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
            },
            None => {
                let prompt: usize = request
                    .messages
                    .iter()
                    .map(|m| ApproxTokenCounter.count(&m.content) + 4)
                    .sum();
                Usage {
                    prompt_tokens: prompt as u64,
                    completion_tokens: ApproxTokenCounter.count(&text) as u64,
                }
            }
        };
        Ok(ChatResponse {
            text,
            usage,
            finish_reason: choice.finish_reason,
        })
    }
}

/// An embedding model served over the OpenAI-compatible protocol.
#[derive(Debug)]
pub struct OpenAiEmbedder {
    endpoint: Endpoint,
    model: String,
    dim: usize,
    batch_size: usize,
    id: String,
}

impl OpenAiEmbedder {
    /// A client for this server; reads the API key from the environment now.
    pub fn new(config: EmbeddingServerConfig) -> Result<Self> {
        if config.model.trim().is_empty() {
            return Err(Error::Config(
                "the embedding model's name is empty; set model".to_owned(),
            ));
        }
        if config.dim == 0 || config.batch_size == 0 {
            return Err(Error::Config(
                "the embedding model's dim and batch_size must be at least 1".to_owned(),
            ));
        }
        let id = format!("openai-compatible/{}/d{}", config.model, config.dim);
        Ok(OpenAiEmbedder {
            endpoint: Endpoint::new(config.endpoint)?,
            model: config.model,
            dim: config.dim,
            batch_size: config.batch_size,
            id,
        })
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let path = "embeddings";
        let value = self
            .endpoint
            .post(path, &json!({ "model": self.model, "input": texts }))?;
        let malformed = |message: String| Error::MalformedResponse {
            url: self.endpoint.url(path),
            message,
        };
        let body: EmbeddingsBody = serde_json::from_value(value)
            .map_err(|e| malformed(format!("not an embeddings response ({e})")))?;
        if body.data.len() != texts.len() {
            return Err(malformed(format!(
                "{} vectors came back for {} texts",
                body.data.len(),
                texts.len()
            )));
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (position, item) in body.data.into_iter().enumerate() {
            let index = item.index.unwrap_or(position);
            if item.embedding.len() != self.dim {
                return Err(Error::DimensionMismatch {
                    embedder: self.id.clone(),
                    expected: self.dim,
                    got: item.embedding.len(),
                });
            }
            match slots.get_mut(index) {
                Some(slot @ None) => *slot = Some(item.embedding),
                _ => {
                    return Err(malformed(format!(
                        "vector index {index} is out of range or repeated"
                    )));
                }
            }
        }
        slots
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| malformed("a text got no vector".to_owned()))
    }
}

#[derive(Deserialize)]
struct EmbeddingsBody {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl Embedder for OpenAiEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    /// Sends the texts `batch_size` at a time, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch_size) {
            vectors.extend(self.embed_batch(batch)?);
        }
        Ok(vectors)
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_stops_at_the_cap() {
        for n in 0..6 {
            let d = (100u64 << n).min(1000);
            for _ in 0..20 {
                let wait = backoff(100, 1000, n).as_millis() as u64;
                assert!(
                    wait >= d / 2 && wait <= d,
                    "retry {n}: {wait} ms not in [{}, {d}]",
                    d / 2
                );
            }
        }
        assert!(backoff(100, 1000, 200) <= Duration::from_millis(1000));
    }

    #[test]
    fn retry_after_headers() {
        let check = |pairs: &[(&'static str, &'static str)], expect: Option<u64>| {
            let mut headers = HeaderMap::new();
            for (k, v) in pairs {
                headers.insert(*k, HeaderValue::from_static(v));
            }
            assert_eq!(
                retry_after(&headers).map(|d| d.as_millis() as u64),
                expect,
                "{pairs:?}"
            );
        };
        check(&[], None);
        check(&[("retry-after", "2")], Some(2000));
        check(&[("retry-after", "0.5")], Some(500));
        check(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")], None);
        check(&[("retry-after", "-1")], None);
        check(
            &[("retry-after", "2"), ("retry-after-ms", "150")],
            Some(150),
        );
    }

    #[test]
    fn server_messages() {
        let check = |body: &str, expect: &str| assert_eq!(server_message(body.as_bytes()), expect);
        check(
            r#"{"error": {"message": "bad key", "type": "auth"}}"#,
            "bad key",
        );
        check(r#"{"error": "model 'x' not found"}"#, "model 'x' not found");
        check(r#"{"object": "error", "message": "too long"}"#, "too long");
        check(r#"{"detail": "nope"}"#, "nope");
        check("plain text", "plain text");
        check("", "(no message)");
    }

    #[test]
    fn configuration_is_checked_up_front() {
        let chat = |base: &str, model: &str| {
            OpenAiChat::new(ChatServerConfig {
                endpoint: EndpointConfig::new(base),
                model: model.to_owned(),
                json_schema: false,
            })
        };
        assert!(matches!(chat("localhost:8000", "m"), Err(Error::Config(_))));
        assert!(matches!(
            chat("http://localhost:8000/v1", " "),
            Err(Error::Config(_))
        ));
        let mut endpoint = EndpointConfig::new("http://127.0.0.1:1/v1");
        endpoint.api_key_env = Some("COLMEM_LLM_TEST_SURELY_UNSET_KEY".to_owned());
        let err = OpenAiChat::new(ChatServerConfig {
            endpoint,
            model: "m".to_owned(),
            json_schema: false,
        })
        .unwrap_err();
        assert!(
            matches!(&err, Error::MissingApiKey { var } if var == "COLMEM_LLM_TEST_SURELY_UNSET_KEY")
        );
    }

    #[test]
    fn config_reads_from_json_with_defaults() {
        let config: EmbeddingServerConfig = serde_json::from_str(
            r#"{"base_url": "http://127.0.0.1:11434/v1", "model": "all-minilm", "dim": 384}"#,
        )
        .unwrap();
        assert_eq!(config.batch_size, 64);
        assert_eq!(config.endpoint.max_retries, 3);
        assert_eq!(config.endpoint.api_key_env, None);
        let config: ChatServerConfig = serde_json::from_str(
            r#"{"base_url": "http://127.0.0.1:8000/v1", "model": "qwen", "timeout_ms": 5}"#,
        )
        .unwrap();
        assert_eq!((config.endpoint.timeout_ms, config.json_schema), (5, false));
    }

    #[test]
    fn a_key_of_neither_the_endpoint_nor_the_model_is_refused() {
        let chat = serde_json::from_str::<ChatServerConfig>(
            r#"{"base_url": "http://127.0.0.1:8000/v1", "model": "qwen", "timeout_mss": 5}"#,
        );
        assert!(chat.unwrap_err().to_string().contains("timeout_mss"));
        let embedder = serde_json::from_str::<EmbeddingServerConfig>(
            r#"{"base_url": "http://127.0.0.1:8000/v1", "model": "m", "dim": 8, "batchsize": 2}"#,
        );
        assert!(embedder.unwrap_err().to_string().contains("batchsize"));
    }
}
