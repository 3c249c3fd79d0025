//! The `ChatModel` trait and the values it exchanges: messages in, text and token usage out.

use std::fmt;
use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// Who wrote a message.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions that frame the conversation.
    System,
    /// The caller's turn.
    User,
    /// The model's turn.
    Assistant,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        })
    }
}

/// One message of a conversation.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// What it says.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message {
            role: Role::System,
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// A JSON schema the answer must follow, sent as `response_format: {type: json_schema, …}`
/// to servers that support it.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct JsonSchema {
    /// A short name for the schema (letters, digits, `_` and `-`), required by the protocol.
    pub name: String,
    /// The schema itself.
    pub schema: serde_json::Value,
    /// Ask the server to follow the schema exactly (OpenAI's `strict`).
    #[serde(default)]
    pub strict: bool,
}

/// What to ask a chat model.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation so far; the model answers the last message.
    pub messages: Vec<Message>,
    /// Sampling temperature; `None` leaves the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// The most tokens the answer may have; `None` leaves the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// A schema for the answer. Only models whose [`ChatModel::supports_json_schema`] is true
    /// pass it on; the others ignore it (use [`complete_json`](crate::complete_json), which
    /// falls back to instructions, extraction and a repair round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<JsonSchema>,
}

impl ChatRequest {
    /// A request with these messages and the server's defaults for everything else.
    pub fn new(messages: Vec<Message>) -> Self {
        ChatRequest {
            messages,
            ..ChatRequest::default()
        }
    }

    /// Sets the temperature.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the answer's token limit.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }
}

/// Tokens spent by one or more completions.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
}

impl Usage {
    /// Prompt and completion tokens together.
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

impl Add for Usage {
    type Output = Usage;

    fn add(self, other: Usage) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens + other.prompt_tokens,
            completion_tokens: self.completion_tokens + other.completion_tokens,
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        *self = *self + other;
    }
}

/// A model's answer.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The text of the answer.
    pub text: String,
    /// Tokens spent.
    pub usage: Usage,
    /// Why the model stopped (`stop`, `length`, …), when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
}

/// A chat model: messages in, text out.
///
/// Calls block the calling thread until the answer is there (or the retries run out). colmem's
/// roles are synchronous library code, so a blocking call is the simplest contract; async callers
/// run it on a blocking thread (`tokio::task::spawn_blocking`), as they do for SQLite.
pub trait ChatModel: Send + Sync + fmt::Debug {
    /// A stable name for the model and where it runs, recorded in cassettes.
    fn id(&self) -> &str;

    /// Whether the model receives [`ChatRequest::response_format`] and constrains its answer to it.
    fn supports_json_schema(&self) -> bool {
        false
    }

    /// Answers the conversation.
    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse>;
}
