//! Errors of the model clients: what went wrong with a model, a server, a cassette or model files.

use std::path::PathBuf;

use colmem_core::ErrorKind;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong talking to a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value is missing or out of range.
    #[error("invalid model configuration: {0}")]
    Config(String),
    /// The configuration names an API-key variable that is not set.
    #[error(
        "the environment variable {var} holding the model server's API key is not set; export it, or remove api_key_env for a server that needs no key"
    )]
    MissingApiKey {
        /// The variable's name.
        var: String,
    },
    /// The server refused the request as malformed (400, 413, 422 and other 4xx not listed below).
    #[error(
        "the model server at {url} rejected the request ({status}): {message}; check the model name, the prompt length and the request options"
    )]
    BadRequest {
        /// The endpoint.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The server's own message.
        message: String,
    },
    /// The server refused the credentials (401, 403).
    #[error(
        "the model server at {url} refused the credentials ({status}): {message}; check the API key in the variable named by api_key_env"
    )]
    Unauthorized {
        /// The endpoint.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The server's own message.
        message: String,
    },
    /// The endpoint or the model does not exist (404).
    #[error(
        "the model server at {url} answered 404: {message}; check base_url (it usually ends in /v1) and the model name"
    )]
    NotFound {
        /// The endpoint.
        url: String,
        /// The server's own message.
        message: String,
    },
    /// The server kept answering 429 until the retries ran out.
    #[error(
        "the model server at {url} is rate limiting (429) after {attempts} attempts: {message}; lower the request rate or raise max_retries"
    )]
    RateLimited {
        /// The endpoint.
        url: String,
        /// How many requests were sent.
        attempts: u32,
        /// The server's own message.
        message: String,
    },
    /// The server kept failing (5xx) until the retries ran out.
    #[error(
        "the model server at {url} failed with {status} after {attempts} attempts: {message}; check the server's logs"
    )]
    Server {
        /// The endpoint.
        url: String,
        /// The last HTTP status.
        status: u16,
        /// How many requests were sent.
        attempts: u32,
        /// The server's own message.
        message: String,
    },
    /// The server did not answer within the timeout until the retries ran out.
    #[error(
        "the model server at {url} did not answer within {timeout_ms} ms after {attempts} attempts; raise timeout_ms or check the server"
    )]
    Timeout {
        /// The endpoint.
        url: String,
        /// The configured timeout.
        timeout_ms: u64,
        /// How many requests were sent.
        attempts: u32,
    },
    /// The connection failed or broke off (refused, reset, truncated body) until the retries ran out.
    #[error(
        "could not talk to the model server at {url} after {attempts} attempts: {message}; check that it is running and that base_url is right"
    )]
    Connection {
        /// The endpoint.
        url: String,
        /// How many requests were sent.
        attempts: u32,
        /// What the transport reported.
        message: String,
    },
    /// A successful response whose body is not what the OpenAI protocol promises.
    #[error(
        "the model server at {url} sent a malformed response: {message}; check that it speaks the OpenAI-compatible protocol"
    )]
    MalformedResponse {
        /// The endpoint.
        url: String,
        /// What is wrong with it.
        message: String,
    },
    /// The model's answer holds no JSON value of the requested shape, even after one repair round.
    #[error(
        "the model did not produce the requested JSON after {attempts} attempts ({reason}); its last answer began {excerpt:?}; use a stronger model or a server that supports JSON schemas"
    )]
    UnparseableJson {
        /// How many completions were asked for.
        attempts: u32,
        /// Why the last answer did not parse.
        reason: String,
        /// The start of the last answer.
        excerpt: String,
    },
    /// An embedder returned vectors of another length than configured.
    #[error(
        "the embedder {embedder} returned {got}-dimensional vectors but {expected} are configured; set dim = {got}"
    )]
    DimensionMismatch {
        /// The embedder's id.
        embedder: String,
        /// The configured dimension.
        expected: usize,
        /// What came back.
        got: usize,
    },
    /// On replay, a request that the cassette does not hold.
    #[error(
        "request {hash} ({summary}) is not in the cassette {path}; record the cassette again against a real model"
    )]
    NotRecorded {
        /// The cassette.
        path: PathBuf,
        /// The request's canonical hash.
        hash: String,
        /// A short description of the request.
        summary: String,
    },
    /// A cassette file that cannot be read or written, or does not parse.
    #[error("cassette {path}: {message}")]
    Cassette {
        /// The cassette.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Model files that are missing or do not load.
    #[error("cannot load the model in {dir}: {message}")]
    ModelFiles {
        /// The model directory.
        dir: PathBuf,
        /// What went wrong, and what to do.
        message: String,
    },
    /// The local model failed while running.
    #[error("the local model failed: {0}; please report it")]
    Inference(String),
}

impl Error {
    /// The broad class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Config(_)
            | Error::MissingApiKey { .. }
            | Error::BadRequest { .. }
            | Error::DimensionMismatch { .. } => ErrorKind::InvalidInput,
            Error::RateLimited { .. } => ErrorKind::Busy,
            Error::Unauthorized { .. }
            | Error::NotFound { .. }
            | Error::Server { .. }
            | Error::Timeout { .. }
            | Error::Connection { .. }
            | Error::MalformedResponse { .. }
            | Error::UnparseableJson { .. }
            | Error::ModelFiles { .. } => ErrorKind::Unavailable,
            Error::NotRecorded { .. } => ErrorKind::NotFound,
            Error::Cassette { .. } => ErrorKind::Corrupt,
            Error::Inference(_) => ErrorKind::Internal,
        }
    }
}
