//! Model clients for colmem: the `ChatModel` and `Embedder` traits and their implementations.
//!
//! - [`ChatModel`]: messages in, text and [`Usage`] out; [`complete_json`] adds JSON-structured
//!   answers (a schema for servers that take one, extraction and one repair round for the rest).
//! - [`Embedder`]: texts in, vectors out, under a stable [`id`](Embedder::id) stored with every
//!   embedding. [`OfflineEmbedder`] is the default: deterministic, no files, no network.
//! - [`OpenAiChat`] and [`OpenAiEmbedder`] speak the OpenAI-compatible protocol to a hosted API,
//!   vLLM, the llama.cpp server or Ollama, with timeouts and bounded retries.
//! - `LocalEmbedder` (cargo feature `local`) runs a sentence-transformers model such as
//!   all-MiniLM-L6-v2 on the CPU with candle.
//! - [`Cassette`], [`CassetteChat`] and [`CassetteEmbedder`] record model calls once and replay
//!   them, so tests never need a live model.
//! - [`TokenCounter`] counts tokens for budgets: a real tokenizer when one is configured
//!   (`TokenizerCounter`, feature `local`), else [`ApproxTokenCounter`].
//!
//! Every call blocks the calling thread: colmem's roles are synchronous library code. Async
//! callers run model calls on a blocking thread (`tokio::task::spawn_blocking`); the HTTP client
//! must not be created or dropped inside an async task.
//!
//! This crate knows nothing of fragments, access or storage beyond `colmem-core`'s
//! [`Embedding`](colmem_core::Embedding) and [`ErrorKind`](colmem_core::ErrorKind).

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod cassette;
mod chat;
mod embed;
mod error;
mod http;
#[cfg(feature = "local")]
mod local;
mod offline;
mod structured;
mod tokens;

pub use cassette::{Cassette, CassetteChat, CassetteEmbedder, CassetteMode, canonical_hash};
pub use chat::{ChatModel, ChatRequest, ChatResponse, JsonSchema, Message, Role, Usage};
pub use embed::Embedder;
pub use error::{Error, Result};
pub use http::{
    ChatServerConfig, EmbeddingServerConfig, EndpointConfig, OpenAiChat, OpenAiEmbedder,
};
#[cfg(feature = "local")]
pub use local::{LocalEmbedder, LocalModelConfig};
pub use offline::{OfflineConfig, OfflineEmbedder};
pub use structured::{complete_json, extract_json, fill_prompt};
#[cfg(feature = "local")]
pub use tokens::TokenizerCounter;
pub use tokens::{ApproxTokenCounter, TokenCounter};
