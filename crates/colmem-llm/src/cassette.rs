//! Record and replay of model calls in JSON-lines cassettes, so tests of model-backed roles are deterministic.
//!
//! A [`Cassette`] is a file with one JSON object per line, one line per call:
//!
//! ```text
//! {"kind":"chat","model":"openai-compatible/gpt-4o-mini","json_schema":false,"hash":"…","request":{…},"response":{…}}
//! {"kind":"embed","model":"offline-hash-v1/d384/w1-2/c3-4","dim":384,"hash":"…","texts":[…],"vectors":[[…]]}
//! ```
//!
//! Recording wraps a real model ([`CassetteChat::recording`], [`CassetteEmbedder::recording`])
//! and appends each successful call; errors are passed through and not recorded. Replaying
//! ([`CassetteChat::replaying`], [`CassetteEmbedder::replaying`]) needs no model: it answers
//! each request from the cassette, matched by a canonical hash of the model id and the request
//! (JSON with sorted keys, hashed with BLAKE3), and fails with [`Error::NotRecorded`] naming any
//! request it does not hold. A request recorded several times is answered in the recorded order,
//! and with the last answer once those run out.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::chat::{ChatModel, ChatRequest, ChatResponse, Role};
use crate::embed::Embedder;
use crate::error::{Error, Result};

/// How many characters of a request an error quotes.
const SUMMARY_CHARS: usize = 80;

/// One line of a cassette.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Entry {
    Chat {
        model: String,
        json_schema: bool,
        hash: String,
        request: ChatRequest,
        response: ChatResponse,
    },
    Embed {
        model: String,
        dim: usize,
        hash: String,
        texts: Vec<String>,
        vectors: Vec<Vec<f32>>,
    },
}

/// Whether a cassette is being written or read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CassetteMode {
    /// Calls go to the real model and are appended to the file.
    Record,
    /// Calls are answered from the file; nothing reaches a model.
    Replay,
}

/// Answers recorded for one request hash, and how many were handed out.
#[derive(Debug, Default)]
struct Answers {
    entries: Vec<Entry>,
    served: usize,
}

/// A JSON-lines file of recorded model calls, shared by the models that record into it or replay from it.
pub struct Cassette {
    path: PathBuf,
    mode: CassetteMode,
    writer: Mutex<Option<BufWriter<File>>>,
    answers: Mutex<HashMap<String, Answers>>,
    /// Chat models in the file: id → whether it took JSON schemas.
    chat_models: BTreeMap<String, bool>,
    /// Embedders in the file: id → dimension.
    embedders: BTreeMap<String, usize>,
}

impl fmt::Debug for Cassette {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cassette")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .finish()
    }
}

impl Cassette {
    /// Starts recording into `path`, replacing any cassette there (parent directories are created).
    pub fn record(path: impl AsRef<Path>) -> Result<Arc<Self>> {
        let path = path.as_ref().to_path_buf();
        let failed = |e: std::io::Error| Error::Cassette {
            path: path.clone(),
            message: format!("cannot create it ({e}); check the directory's permissions"),
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(failed)?;
        }
        let file = File::create(&path).map_err(failed)?;
        Ok(Arc::new(Cassette {
            path,
            mode: CassetteMode::Record,
            writer: Mutex::new(Some(BufWriter::new(file))),
            answers: Mutex::new(HashMap::new()),
            chat_models: BTreeMap::new(),
            embedders: BTreeMap::new(),
        }))
    }

    /// Loads `path` for replay.
    pub fn replay(path: impl AsRef<Path>) -> Result<Arc<Self>> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|e| Error::Cassette {
            path: path.clone(),
            message: format!("cannot open it ({e}); record it first against a real model"),
        })?;
        let mut answers: HashMap<String, Answers> = HashMap::new();
        let mut chat_models = BTreeMap::new();
        let mut embedders = BTreeMap::new();
        for (number, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|e| Error::Cassette {
                path: path.clone(),
                message: format!("cannot read line {} ({e})", number + 1),
            })?;
            if line.trim().is_empty() {
                continue;
            }
            let entry: Entry = serde_json::from_str(&line).map_err(|e| Error::Cassette {
                path: path.clone(),
                message: format!(
                    "line {} is not a cassette entry ({e}); record it again",
                    number + 1
                ),
            })?;
            let hash = match &entry {
                Entry::Chat {
                    model,
                    json_schema,
                    hash,
                    ..
                } => {
                    chat_models.insert(model.clone(), *json_schema);
                    hash.clone()
                }
                Entry::Embed {
                    model, dim, hash, ..
                } => {
                    embedders.insert(model.clone(), *dim);
                    hash.clone()
                }
            };
            answers.entry(hash).or_default().entries.push(entry);
        }
        Ok(Arc::new(Cassette {
            path,
            mode: CassetteMode::Replay,
            writer: Mutex::new(None),
            answers: Mutex::new(answers),
            chat_models,
            embedders,
        }))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Recording or replaying.
    pub fn mode(&self) -> CassetteMode {
        self.mode
    }

    fn append(&self, entry: &Entry) -> Result<()> {
        let failed = |e: String| Error::Cassette {
            path: self.path.clone(),
            message: format!("cannot append to it ({e})"),
        };
        let line = serde_json::to_string(entry).map_err(|e| failed(e.to_string()))?;
        let mut writer = lock(&self.writer);
        let writer = writer
            .as_mut()
            .ok_or_else(|| failed("it was opened for replay".to_owned()))?;
        writeln!(writer, "{line}")
            .and_then(|()| writer.flush())
            .map_err(|e| failed(e.to_string()))
    }

    /// The next recorded answer for `hash`.
    fn answer(&self, hash: &str, summary: impl FnOnce() -> String) -> Result<Entry> {
        let mut answers = lock(&self.answers);
        let not_recorded = || Error::NotRecorded {
            path: self.path.clone(),
            hash: hash.to_owned(),
            summary: summary(),
        };
        let Some(found) = answers.get_mut(hash) else {
            return Err(not_recorded());
        };
        let index = found.served.min(found.entries.len().saturating_sub(1));
        found.served += 1;
        found.entries.get(index).cloned().ok_or_else(not_recorded)
    }

    fn single<'a, T>(
        &self,
        models: &'a BTreeMap<String, T>,
        what: &str,
    ) -> Result<(&'a String, &'a T)> {
        let mut iter = models.iter();
        match (iter.next(), iter.next()) {
            (Some(only), None) => Ok(only),
            (None, _) => Err(Error::Cassette {
                path: self.path.clone(),
                message: format!("it holds no {what} calls; record them first"),
            }),
            (Some(_), Some(_)) => Err(Error::Cassette {
                path: self.path.clone(),
                message: format!(
                    "it holds calls of several {what} models ({}); name the one to replay",
                    models.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            }),
        }
    }
}

/// Locks a mutex; a poisoned one still holds consistent data here (every write is one statement).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The canonical hash of a value: BLAKE3 of its JSON with object keys sorted, first 16 bytes in hex.
pub fn canonical_hash(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    write(&map[key], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut text = String::new();
    write(value, &mut text);
    blake3::hash(text.as_bytes()).to_hex()[..32].to_owned()
}

fn chat_hash(model: &str, request: &ChatRequest) -> Result<String> {
    let request = serde_json::to_value(request)
        .map_err(|e| Error::Inference(format!("cannot encode a chat request ({e})")))?;
    Ok(canonical_hash(
        &serde_json::json!({ "kind": "chat", "model": model, "request": request }),
    ))
}

fn embed_hash(model: &str, texts: &[&str]) -> String {
    canonical_hash(&serde_json::json!({ "kind": "embed", "model": model, "texts": texts }))
}

fn excerpt(text: &str) -> String {
    let mut s: String = text.chars().take(SUMMARY_CHARS).collect();
    if text.chars().count() > SUMMARY_CHARS {
        s.push('…');
    }
    s
}

/// A chat model that records into, or replays from, a [`Cassette`].
#[derive(Debug)]
pub struct CassetteChat {
    cassette: Arc<Cassette>,
    inner: Option<Arc<dyn ChatModel>>,
    id: String,
    json_schema: bool,
}

impl CassetteChat {
    /// Passes calls to `inner` and records them.
    pub fn recording(cassette: Arc<Cassette>, inner: Arc<dyn ChatModel>) -> Result<Self> {
        if cassette.mode != CassetteMode::Record {
            return Err(Error::Cassette {
                path: cassette.path.clone(),
                message: "it was opened for replay; open it with Cassette::record to record"
                    .to_owned(),
            });
        }
        Ok(CassetteChat {
            id: inner.id().to_owned(),
            json_schema: inner.supports_json_schema(),
            inner: Some(inner),
            cassette,
        })
    }

    /// Answers from the cassette, as the one chat model recorded in it.
    pub fn replaying(cassette: Arc<Cassette>) -> Result<Self> {
        let (id, json_schema) = cassette.single(&cassette.chat_models, "chat")?;
        let (id, json_schema) = (id.clone(), *json_schema);
        Self::replay_as(cassette, id, json_schema)
    }

    /// Answers from the cassette, as the chat model `id` recorded in it.
    pub fn replaying_model(cassette: Arc<Cassette>, id: &str) -> Result<Self> {
        let json_schema = *cassette
            .chat_models
            .get(id)
            .ok_or_else(|| Error::Cassette {
                path: cassette.path.clone(),
                message: format!("it holds no calls of the chat model {id}; record them first"),
            })?;
        Self::replay_as(cassette, id.to_owned(), json_schema)
    }

    fn replay_as(cassette: Arc<Cassette>, id: String, json_schema: bool) -> Result<Self> {
        if cassette.mode != CassetteMode::Replay {
            return Err(Error::Cassette {
                path: cassette.path.clone(),
                message: "it was opened for recording; open it with Cassette::replay to replay"
                    .to_owned(),
            });
        }
        Ok(CassetteChat {
            cassette,
            inner: None,
            id,
            json_schema,
        })
    }
}

impl ChatModel for CassetteChat {
    fn id(&self) -> &str {
        &self.id
    }

    fn supports_json_schema(&self) -> bool {
        self.json_schema
    }

    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let hash = chat_hash(&self.id, request)?;
        if let Some(inner) = &self.inner {
            let response = inner.complete(request)?;
            self.cassette.append(&Entry::Chat {
                model: self.id.clone(),
                json_schema: self.json_schema,
                hash,
                request: request.clone(),
                response: response.clone(),
            })?;
            return Ok(response);
        }
        let summary = || {
            let last = request.messages.last();
            format!(
                "chat with {}, {} messages, last {}: {:?}",
                self.id,
                request.messages.len(),
                last.map_or(Role::User, |m| m.role),
                excerpt(last.map_or("", |m| m.content.as_str()))
            )
        };
        match self.cassette.answer(&hash, summary)? {
            Entry::Chat { response, .. } => Ok(response),
            Entry::Embed { .. } => Err(Error::Cassette {
                path: self.cassette.path.clone(),
                message: format!(
                    "entry {hash} is an embedding call where a chat call was expected"
                ),
            }),
        }
    }
}

/// An embedder that records into, or replays from, a [`Cassette`].
#[derive(Debug)]
pub struct CassetteEmbedder {
    cassette: Arc<Cassette>,
    inner: Option<Arc<dyn Embedder>>,
    id: String,
    dim: usize,
}

impl CassetteEmbedder {
    /// Passes calls to `inner` and records them.
    pub fn recording(cassette: Arc<Cassette>, inner: Arc<dyn Embedder>) -> Result<Self> {
        if cassette.mode != CassetteMode::Record {
            return Err(Error::Cassette {
                path: cassette.path.clone(),
                message: "it was opened for replay; open it with Cassette::record to record"
                    .to_owned(),
            });
        }
        Ok(CassetteEmbedder {
            id: inner.id().to_owned(),
            dim: inner.dim(),
            inner: Some(inner),
            cassette,
        })
    }

    /// Answers from the cassette, as the one embedder recorded in it.
    pub fn replaying(cassette: Arc<Cassette>) -> Result<Self> {
        let (id, dim) = cassette.single(&cassette.embedders, "embedding")?;
        let (id, dim) = (id.clone(), *dim);
        Self::replay_as(cassette, id, dim)
    }

    /// Answers from the cassette, as the embedder `id` recorded in it.
    pub fn replaying_model(cassette: Arc<Cassette>, id: &str) -> Result<Self> {
        let dim = *cassette.embedders.get(id).ok_or_else(|| Error::Cassette {
            path: cassette.path.clone(),
            message: format!("it holds no calls of the embedder {id}; record them first"),
        })?;
        Self::replay_as(cassette, id.to_owned(), dim)
    }

    fn replay_as(cassette: Arc<Cassette>, id: String, dim: usize) -> Result<Self> {
        if cassette.mode != CassetteMode::Replay {
            return Err(Error::Cassette {
                path: cassette.path.clone(),
                message: "it was opened for recording; open it with Cassette::replay to replay"
                    .to_owned(),
            });
        }
        Ok(CassetteEmbedder {
            cassette,
            inner: None,
            id,
            dim,
        })
    }
}

impl Embedder for CassetteEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let hash = embed_hash(&self.id, texts);
        if let Some(inner) = &self.inner {
            let vectors = inner.embed(texts)?;
            self.cassette.append(&Entry::Embed {
                model: self.id.clone(),
                dim: self.dim,
                hash,
                texts: texts.iter().map(|t| (*t).to_owned()).collect(),
                vectors: vectors.clone(),
            })?;
            return Ok(vectors);
        }
        let summary = || {
            format!(
                "embed {} texts with {}, first: {:?}",
                texts.len(),
                self.id,
                excerpt(texts.first().copied().unwrap_or(""))
            )
        };
        match self.cassette.answer(&hash, summary)? {
            Entry::Embed { vectors, .. } => Ok(vectors),
            Entry::Chat { .. } => Err(Error::Cassette {
                path: self.cassette.path.clone(),
                message: format!(
                    "entry {hash} is a chat call where an embedding call was expected"
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn canonical_hash_ignores_key_order_but_not_values() {
        let a = json!({"b": 1, "a": [1, {"y": 2, "x": "s"}]});
        let b = json!({"a": [1, {"x": "s", "y": 2}], "b": 1});
        let c = json!({"a": [1, {"x": "s", "y": 3}], "b": 1});
        assert_eq!(canonical_hash(&a), canonical_hash(&b));
        assert_ne!(canonical_hash(&a), canonical_hash(&c));
        assert_eq!(canonical_hash(&a).len(), 32);
    }
}
