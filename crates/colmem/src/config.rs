//! [`Config`]: everything `Memory::open` needs besides the directory, read from a
//! TOML file with `COLMEM_…` environment overrides. `docs/config.md` documents
//! every key.
//!
//! An override names a key path in upper case with `__` between levels:
//! `COLMEM_RETRIEVER__K_MIN=8` sets `[retriever] k_min = 8`,
//! `COLMEM_EMBEDDER__KIND=openai` sets `[embedder] kind`. The value is read as a
//! TOML value when it is one (`8`, `true`, `"x"`, `[1, 2]`), else as a string.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use colmem_access::ReadPolicy;
use colmem_ama::{ConstructorConfig, LlmRoleConfig, PipelineConfig, RetrieverConfig};
use colmem_cards::BankConfig;
use colmem_core::{AgentId, Timestamp};
use colmem_llm::{ChatServerConfig, EmbeddingServerConfig, OfflineConfig};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

mod ranges;

pub use ranges::{KEY_RANGES, KeyRange, key_range};

/// Environment variables with the `COLMEM_` prefix that are not configuration keys.
pub const NOT_CONFIG_VARS: &[&str] = &["COLMEM_DIR", "COLMEM_CONFIG"];

/// The prefix of configuration overrides.
pub const ENV_PREFIX: &str = "COLMEM_";

/// The file name `colmem init` writes and `Memory::open` callers read by default.
pub const CONFIG_FILE: &str = "colmem.toml";

/// The whole configuration. Every section is optional; the defaults run offline.
/// It serialises as it is written (an absent key as `None`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Where "now" comes from.
    pub clock: ClockConfig,
    /// The embedder: offline (default), a local model directory, or an OpenAI-compatible server.
    pub embedder: EmbedderConfig,
    /// An OpenAI-compatible chat model; when given, the AMA and ConMem roles are the
    /// model-backed ones. `None` runs the offline, rule-based roles.
    pub chat: Option<ChatServerConfig>,
    /// Sampling settings of the model-backed roles (used only with `[chat]`).
    pub roles: LlmRoleConfig,
    /// Write and read policies and the system policy.
    pub policy: PolicyConfig,
    /// The constructor role's thresholds.
    pub constructor: ConstructorConfig,
    /// The retriever role's thresholds (k and routing).
    pub retriever: RetrieverConfig,
    /// The AMA pipeline: judge retry rounds (`K_r`), which granularities are stored, retention.
    pub pipeline: PipelineConfig,
    /// ConMem strategy cards: the read path (scoring, MMR, expansion, composition) and
    /// the write path (admission, merging). A key left out keeps its default.
    pub cards: BankConfig,
    /// The index planner and rank fusion.
    pub index: IndexConfig,
    /// The SQLite store.
    pub store: StoreSettings,
}

/// The clock every read and write takes its time from.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(from = "ClockTable", into = "ClockTable")]
pub enum ClockConfig {
    /// The system's wall clock (production).
    #[default]
    System,
    /// A logical clock that moves only when told to (scenarios and tests). It starts at
    /// `start`, or at the latest moment the store recorded anything if that is
    /// later (not at the date of a change scheduled for later).
    Logical {
        /// The first moment: RFC 3339, a date, or milliseconds since the epoch.
        start: Timestamp,
    },
}

/// A [`ClockConfig`] as written. Its `system` kind is a struct, not a unit: serde
/// refuses no unknown key beside the tag of a unit variant.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum ClockTable {
    System {},
    Logical {
        #[serde(deserialize_with = "timestamp", serialize_with = "rfc3339")]
        start: Timestamp,
    },
}

impl From<ClockConfig> for ClockTable {
    fn from(config: ClockConfig) -> Self {
        match config {
            ClockConfig::System => ClockTable::System {},
            ClockConfig::Logical { start } => ClockTable::Logical { start },
        }
    }
}

/// A time as it is written: RFC 3339.
fn rfc3339<S: Serializer>(time: &Timestamp, serializer: S) -> std::result::Result<S::Ok, S::Error> {
    serializer.collect_str(time)
}

impl From<ClockTable> for ClockConfig {
    fn from(table: ClockTable) -> Self {
        match table {
            ClockTable::System {} => ClockConfig::System,
            ClockTable::Logical { start } => ClockConfig::Logical { start },
        }
    }
}

/// Which embedder turns text into vectors, by its `kind` key (`offline` when absent).
#[derive(Clone, PartialEq, Debug)]
pub enum EmbedderConfig {
    /// The deterministic offline embedder (no files, no network).
    Offline(OfflineConfig),
    /// A sentence-transformers model in a directory, run on the CPU (build with the
    /// `local` feature).
    Local(LocalEmbedderConfig),
    /// An OpenAI-compatible `/embeddings` server.
    Openai(EmbeddingServerConfig),
}

impl Default for EmbedderConfig {
    fn default() -> Self {
        EmbedderConfig::Offline(OfflineConfig::default())
    }
}

/// An [`EmbedderConfig`] as written: its `kind` beside its settings.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum EmbedderTable<'a> {
    Offline(&'a OfflineConfig),
    Local(&'a LocalEmbedderConfig),
    Openai(&'a EmbeddingServerConfig),
}

impl Serialize for EmbedderConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            EmbedderConfig::Offline(c) => EmbedderTable::Offline(c),
            EmbedderConfig::Local(c) => EmbedderTable::Local(c),
            EmbedderConfig::Openai(c) => EmbedderTable::Openai(c),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for EmbedderConfig {
    /// Reads `kind` (default `offline`, so an override of one offline key needs no
    /// `kind`), then the rest of the table as that kind's settings.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut table = toml::Table::deserialize(deserializer)?;
        let kind = match table.remove("kind") {
            None => "offline".to_owned(),
            Some(toml::Value::String(kind)) => kind,
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "embedder kind must be \"offline\", \"local\" or \"openai\", not {other}"
                )));
            }
        };
        let rest = toml::Value::Table(table);
        let settings = |e: toml::de::Error| {
            D::Error::custom(format!("embedder of kind {kind:?}: {}", e.message()))
        };
        match kind.as_str() {
            "offline" => rest
                .try_into()
                .map(EmbedderConfig::Offline)
                .map_err(settings),
            "local" => rest.try_into().map(EmbedderConfig::Local).map_err(settings),
            "openai" => rest
                .try_into()
                .map(EmbedderConfig::Openai)
                .map_err(settings),
            other => Err(D::Error::custom(format!(
                "unknown embedder kind {other:?}: use \"offline\", \"local\" or \"openai\""
            ))),
        }
    }
}

/// A local embedding model.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalEmbedderConfig {
    /// The directory with `config.json`, `tokenizer.json` and `model.safetensors`.
    pub dir: PathBuf,
    /// Truncate texts to this many tokens; by default the model's own limit.
    #[serde(default)]
    pub max_seq_len: Option<usize>,
    /// Texts per forward pass.
    #[serde(default = "local_batch")]
    pub batch_size: usize,
}

fn local_batch() -> usize {
    32
}

/// Policies: who may write globally and what reads show.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Agents allowed to write `Global` fragments.
    pub global_writers: BTreeSet<AgentId>,
    /// Narrowing and redaction of what reads show.
    pub read: ReadPolicy,
    /// How [`Session::share`](crate::Session::share) splits an interaction into a
    /// private and a shared part: per system, agent, user and (user, agent) pair, the
    /// most specific winning; mandatory redactions always apply.
    pub write: colmem_access::WritePolicies,
}

/// The hybrid index: when to scan exactly, how hard to search HNSW, how to fuse.
#[derive(Clone, Copy, PartialEq, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IndexConfig {
    /// Scan exactly when the filter admits at most this many fragments…
    pub exact_max: u64,
    /// …or at most this share of all fragments.
    pub exact_fraction: f64,
    /// HNSW candidates when the filter admits everything of a graph of
    /// `reference_len` vectors or more.
    pub base_candidates: usize,
    /// Candidate growth as selectivity `s` falls: `base · s^-growth`.
    pub growth: f64,
    /// The most HNSW candidates.
    pub max_candidates: usize,
    /// The graph size `base_candidates` is meant for.
    pub reference_len: u64,
    /// Candidates shrink for a smaller graph: `· (len / reference_len)^size_growth`.
    pub size_growth: f64,
    /// The fewest HNSW candidates.
    pub min_candidates: usize,
    /// The reciprocal-rank-fusion constant (a finite number, 0 or more).
    #[serde(deserialize_with = "non_negative")]
    pub rrf_k: f64,
    /// The share of each signal's weight given by its min–max normalised score
    /// rather than its rank: 0 is reciprocal-rank fusion, 1 a convex combination.
    #[serde(deserialize_with = "share")]
    pub score_share: f64,
    /// Weight of the vector signal (a finite number, 0 or more).
    #[serde(deserialize_with = "non_negative")]
    pub vector_weight: f64,
    /// Weight of the BM25 signal (a finite number, 0 or more).
    #[serde(deserialize_with = "non_negative")]
    pub lexical_weight: f64,
    /// How deep each signal is read before fusion (at least 1).
    #[serde(deserialize_with = "fusion_depth")]
    pub depth: usize,
}

impl Default for IndexConfig {
    fn default() -> Self {
        let planner = colmem_index::PlannerConfig::default();
        let fusion = colmem_index::FusionConfig::default();
        IndexConfig {
            exact_max: planner.exact_max,
            exact_fraction: planner.exact_fraction,
            base_candidates: planner.base_candidates,
            growth: planner.growth,
            max_candidates: planner.max_candidates,
            reference_len: planner.reference_len,
            size_growth: planner.size_growth,
            min_candidates: planner.min_candidates,
            rrf_k: fusion.rrf_k,
            score_share: fusion.score_share,
            // The default embedder is the offline hash embedder, a weaker signal than
            // BM25 (see its `FUSION_WEIGHT`). Raise it for a semantic embedder.
            vector_weight: colmem_llm::OfflineEmbedder::FUSION_WEIGHT,
            lexical_weight: fusion.lexical_weight,
            depth: fusion.depth,
        }
    }
}

impl IndexConfig {
    /// The index crate's planner settings.
    pub fn planner(&self) -> colmem_index::PlannerConfig {
        colmem_index::PlannerConfig {
            exact_max: self.exact_max,
            exact_fraction: self.exact_fraction,
            base_candidates: self.base_candidates,
            growth: self.growth,
            max_candidates: self.max_candidates,
            reference_len: self.reference_len,
            size_growth: self.size_growth,
            min_candidates: self.min_candidates,
        }
    }

    /// The index crate's fusion settings.
    pub fn fusion(&self) -> colmem_index::FusionConfig {
        colmem_index::FusionConfig {
            rrf_k: self.rrf_k,
            score_share: self.score_share,
            vector_weight: self.vector_weight,
            lexical_weight: self.lexical_weight,
            depth: self.depth,
        }
    }
}

/// SQLite settings.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreSettings {
    /// How long to retry while the database is busy, in milliseconds.
    pub busy_deadline_ms: u64,
    /// How long an open waits for the data directory's lock held by another process,
    /// in milliseconds; 0 (the default) refuses at once with `Error::Locked`.
    pub lock_wait_ms: u64,
    /// The largest text value, in bytes.
    pub max_value_bytes: usize,
    /// A cap on the database's size in pages (SQLite's `max_page_count`, pages of
    /// 8 KiB): past it a write fails as on a full disk and changes nothing; 0: no cap.
    pub max_pages: u64,
    /// `true`: every commit survives a power cut (`synchronous=FULL`).
    pub durable_commits: bool,
    /// How long a deleted fragment's text (content, key, keywords, embedding, card)
    /// is kept after its deletion, in milliseconds, before it is erased; 0 (the
    /// default) erases it at once. See [`Memory::erase`](crate::Memory::erase).
    pub purge_deleted_after: u64,
}

impl Default for StoreSettings {
    fn default() -> Self {
        StoreSettings {
            busy_deadline_ms: 10_000,
            lock_wait_ms: 0,
            max_value_bytes: 64 * 1024,
            max_pages: 0,
            durable_commits: false,
            purge_deleted_after: 0,
        }
    }
}

/// A share: a number from 0 to 1.
fn share<'de, D: Deserializer<'de>>(deserializer: D) -> std::result::Result<f64, D::Error> {
    let value = f64::deserialize(deserializer)?;
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(serde::de::Error::custom(format!(
            "a share is a number from 0 to 1, not {value}"
        )))
    }
}

/// A weight or constant of rank fusion: `nan`, `inf` or a negative number would turn
/// every fused score into a non-number or invert the ranking.
fn non_negative<'de, D: Deserializer<'de>>(deserializer: D) -> std::result::Result<f64, D::Error> {
    let value = f64::deserialize(deserializer)?;
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(serde::de::Error::custom(format!(
            "a fusion weight or constant is a finite number, 0 or more, not {value}"
        )))
    }
}

fn fusion_depth<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<usize, D::Error> {
    let value = usize::deserialize(deserializer)?;
    if value >= 1 {
        Ok(value)
    } else {
        Err(serde::de::Error::custom(
            "the fusion depth is at least 1, not 0",
        ))
    }
}

fn timestamp<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Timestamp, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Millis(i64),
        Text(String),
    }
    match Raw::deserialize(deserializer)? {
        Raw::Millis(ms) => Timestamp::parse(&ms.to_string()).map_err(serde::de::Error::custom),
        Raw::Text(text) => Timestamp::parse(&text).map_err(serde::de::Error::custom),
    }
}

impl Config {
    /// Parses a configuration from TOML text; `origin` names it in errors (a path).
    /// Errors name the key (and the line, but for a number out of its range:
    /// [`KEY_RANGES`]).
    pub fn from_toml(text: &str, origin: &str) -> Result<Config> {
        let malformed = |e: toml::de::Error| Error::ConfigFile {
            path: origin.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        };
        let table: toml::Table = text.parse().map_err(malformed)?;
        ranges::check(&table).map_err(|out| Error::ConfigFile {
            path: origin.to_owned(),
            message: out.message,
        })?;
        let config: Config = toml::from_str(text).map_err(malformed)?;
        config.check()?;
        Ok(config)
    }

    /// Refuses settings that parse but cannot work together: a retriever whose k
    /// bounds are out of order.
    fn check(&self) -> Result<()> {
        let r = &self.retriever;
        if !(1 <= r.k_min && r.k_min <= r.k_base && r.k_base <= r.k_max) {
            return Err(Error::InvalidConfig(format!(
                "[retriever] needs 1 <= k_min <= k_base <= k_max, not k_min = {}, k_base = {}, k_max = {}",
                r.k_min, r.k_base, r.k_max
            )));
        }
        Ok(())
    }

    /// Reads `path` (the defaults if it does not exist and `required` is false),
    /// then applies the `COLMEM_…` overrides from `vars`.
    pub fn load(
        path: &Path,
        required: bool,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config> {
        let origin = path.display().to_string();
        let text = match std::fs::read(path) {
            Ok(bytes) => String::from_utf8(bytes).map_err(|e| Error::ConfigFile {
                path: origin.clone(),
                message: format!("not UTF-8 text ({e})"),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => String::new(),
            Err(source) => {
                return Err(Error::Io {
                    what: "cannot read the configuration file",
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        // Parse the file on its own first, so its errors carry its line numbers.
        Config::from_toml(&text, &origin)?;
        let mut table: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| Error::ConfigFile {
                    path: origin.clone(),
                    message: e.to_string(),
                })?;
        let mut applied = Vec::new();
        for (var, value) in vars {
            if let Some(path) = override_path(&var) {
                set_path(&mut table, &path, parse_value(&value));
                applied.push(var);
            }
        }
        if applied.is_empty() {
            return Config::from_toml(&text, &origin);
        }
        ranges::check(&table).map_err(|out| Error::ConfigEnv {
            // The variable that set the key: the file's values were checked above.
            vars: applied
                .iter()
                .find(|var| override_path(var).as_ref() == Some(&out.path))
                .map_or_else(|| applied.join(", "), Clone::clone),
            message: out.message,
        })?;
        let config: Config =
            toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| Error::ConfigEnv {
                    vars: applied.join(", "),
                    message: e.to_string().trim_end().to_owned(),
                })?;
        config.check()?;
        Ok(config)
    }

    /// [`Config::load`] with the process's environment.
    pub fn load_with_env(path: &Path, required: bool) -> Result<Config> {
        Config::load(path, required, std::env::vars())
    }
}

/// The key path an override variable names, or `None` if it is not an override.
fn override_path(var: &str) -> Option<Vec<String>> {
    let rest = var.strip_prefix(ENV_PREFIX)?;
    if rest.is_empty() || NOT_CONFIG_VARS.contains(&var) {
        return None;
    }
    Some(rest.split("__").map(|part| part.to_lowercase()).collect())
}

/// A value as TOML if it parses as one, else as a string.
fn parse_value(raw: &str) -> toml::Value {
    let wrapped = format!("v = {raw}");
    match wrapped.parse::<toml::Table>() {
        Ok(mut table) => table
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(raw.to_owned())),
        Err(_) => toml::Value::String(raw.to_owned()),
    }
}

fn set_path(table: &mut toml::Table, path: &[String], value: toml::Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = table;
    for key in parents {
        let entry = current
            .entry(key.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        let toml::Value::Table(next) = entry else {
            return;
        };
        current = next;
    }
    current.insert(last.clone(), value);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn load_text(text: &str, env: &[(&str, &str)]) -> Result<Config> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("colmem.toml");
        std::fs::write(&path, text).unwrap();
        Config::load(&path, true, vars(env))
    }

    #[test]
    fn an_empty_file_is_the_offline_default() {
        let config = load_text("", &[]).unwrap();
        assert_eq!(config.clock, ClockConfig::System);
        assert!(matches!(config.embedder, EmbedderConfig::Offline(_)));
        assert!(config.chat.is_none());
        assert_eq!(config.pipeline.rounds, 2);
    }

    #[test]
    fn every_section_parses() {
        let config = load_text(
            r#"
            [clock]
            kind = "logical"
            start = "2026-01-01T00:00:00Z"

            [embedder]
            kind = "openai"
            base_url = "http://127.0.0.1:8000/v1"
            model = "bge-small"
            dim = 384
            api_key_env = "MY_KEY"

            [chat]
            base_url = "http://127.0.0.1:8000/v1"
            model = "qwen"

            [roles]
            temperature = 0.2

            [policy]
            global_writers = ["librarian"]
            [policy.read]
            top_k_per_tier = 3
            redact = [{ type = "emails" }, { type = "names", names = ["Ada"] }]

            [retriever]
            k_min = 7

            [pipeline]
            rounds = 4

            [index]
            exact_max = 100

            [store]
            durable_commits = true
            "#,
            &[],
        )
        .unwrap();
        assert_eq!(
            config.clock,
            ClockConfig::Logical {
                start: Timestamp::parse("2026-01-01").unwrap()
            }
        );
        let EmbedderConfig::Openai(server) = &config.embedder else {
            panic!("{:?}", config.embedder)
        };
        assert_eq!(server.endpoint.api_key_env.as_deref(), Some("MY_KEY"));
        assert_eq!(config.chat.unwrap().model, "qwen");
        assert_eq!(config.roles.temperature, Some(0.2));
        assert_eq!(config.policy.read.top_k_per_tier, Some(3));
        assert_eq!(config.policy.read.redact.len(), 2);
        assert_eq!(config.policy.global_writers.len(), 1);
        assert_eq!(config.retriever.k_min, 7);
        assert_eq!(config.pipeline.rounds, 4);
        assert_eq!(config.index.planner().exact_max, 100);
        assert!(config.store.durable_commits);
    }

    #[test]
    fn every_configuration_the_docs_show_is_read() {
        let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        let mut blocks = 0;
        for name in ["config.md", "models.md"] {
            let text = std::fs::read_to_string(docs.join(name)).unwrap();
            for block in text.split("```toml\n").skip(1) {
                let (toml, _) = block.split_once("```").unwrap();
                if let Err(err) = Config::from_toml(toml, name) {
                    panic!("{name}: {err}\n{toml}");
                }
                blocks += 1;
            }
        }
        assert_eq!(blocks, 6, "a TOML block was added or lost");
    }

    #[test]
    fn a_misspelt_key_is_refused_in_every_section() {
        let sections = [
            "[clock]\nkind = \"system\"\n",
            "[embedder]\n",
            "[embedder]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\ndim = 8\n",
            "[embedder]\nkind = \"local\"\ndir = \"models/minilm\"\n",
            "[chat]\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\n",
            "[roles]\n",
            "[policy]\n",
            "[policy.read]\n",
            "[policy.write]\n",
            "[policy.write.system]\n",
            "[policy.write.system.private]\n",
            "[policy.write.agents.helper]\n",
            "[[policy.write.pairs]]\nuser = \"ada\"\nagent = \"helper\"\n",
            "[constructor]\n",
            "[retriever]\n",
            "[pipeline]\n",
            "[pipeline.store]\n",
            "[cards]\n",
            "[cards.read]\n",
            "[cards.read.weights]\n",
            "[cards.write]\n",
            "[cards.write.admission]\n",
            "[cards.write.bounds]\n",
            "[index]\n",
            "[store]\n",
        ];
        let accepted: Vec<String> = sections
            .iter()
            .filter_map(|section| {
                if let Err(err) = load_text(section, &[]) {
                    return Some(format!("{section}(refused as written: {err})"));
                }
                let text = format!("{section}no_such_key = 1\n");
                match load_text(&text, &[]) {
                    Ok(_) => Some(text),
                    Err(err) if err.to_string().contains("no_such_key") => None,
                    Err(err) => Some(format!("{text}(refused for another reason: {err})")),
                }
            })
            .collect();
        assert!(
            accepted.is_empty(),
            "misspelt keys accepted in:\n{}",
            accepted.join("\n")
        );
        // Nor does a redaction or a transform take a key it does not know.
        for list in [
            "[policy.read]\nredact = [{ type = \"emails\", nmes = [\"Ada\"] }]\n",
            "[policy.write.system.shared]\ntransforms = [{ type = \"block\", patern = \"x\" }]\n",
            "[policy.write.system.shared]\ntransforms = [{ type = \"anonymise_users\", users = [\"bob\"] }]\n",
        ] {
            assert!(load_text(list, &[]).is_err(), "accepted: {list}");
        }
        // A key left out of a [cards] section keeps its default.
        let config = load_text("[cards.read]\ntop_k = 8\n", &[]).unwrap();
        assert_eq!(config.cards.read.top_k, 8);
        assert_eq!(
            config.cards.read.mmr_lambda,
            colmem_cards::ReadConfig::default().mmr_lambda
        );
    }

    #[test]
    fn errors_name_the_key_and_the_line() {
        let err = load_text("[retriever]\nk_min = 3\nk_mni = 4\n", &[]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("line 3") && text.contains("k_mni"), "{text}");
        let err = load_text("[pipeline]\nrounds = \"many\"\n", &[]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("line 2") && text.contains("rounds"), "{text}");
        let err = load_text("[clock]\nkind = \"logical\"\nstart = \"soon\"\n", &[]).unwrap_err();
        assert!(err.to_string().contains("invalid time"), "{err}");
        let err = load_text("[embedder]\nkind = \"offline\"\ndimm = 3\n", &[]).unwrap_err();
        assert!(err.to_string().contains("dimm"), "{err}");
        // The model servers' tables too, their endpoint's keys included.
        for (line, named) in [
            ("json_schema = \"yes\"", "json_schema"),
            ("timeout = 5", "timeout_ms"),
        ] {
            let text = load_text(
                &format!("[chat]\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\n{line}\n"),
                &[],
            )
            .unwrap_err()
            .to_string();
            assert!(text.contains("line 4") && text.contains(named), "{text}");
        }
        let err = load_text("[embedder]\nkind = \"quantum\"\n", &[]).unwrap_err();
        assert!(err.to_string().contains("unknown embedder kind"), "{err}");
        let err = load_text("[index]\nscore_share = 1.5\n", &[]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("score_share") && text.contains("from 0 to 1"),
            "{text}"
        );
        assert_eq!(
            load_text("[pipeline]\nquestion_discount = 0.0\n", &[])
                .unwrap()
                .pipeline
                .question_discount,
            0.0
        );
        assert_eq!(
            load_text("[pipeline]\ncontext_width = 3\n", &[])
                .unwrap()
                .pipeline
                .context_width,
            3
        );
        // A number out of its key's range is refused as written, naming the key.
        for (text, expected) in [
            (
                "[index]\nvector_weight = nan\n",
                "[index] vector_weight = NaN is out of range: give a number from 0 to 1000",
            ),
            (
                "[index]\nlexical_weight = -1.0\n",
                "[index] lexical_weight = -1.0 is out of range",
            ),
            (
                "[index]\nrrf_k = inf\n",
                "[index] rrf_k = inf is out of range",
            ),
            (
                "[index]\ndepth = 0\n",
                "[index] depth = 0 is out of range: give a whole number from 1 to 100000",
            ),
            (
                "[pipeline]\ncontext_width = 50\n",
                "[pipeline] context_width = 50 is out of range: give a whole number from 0 to 8",
            ),
            (
                "[pipeline]\nquestion_discount = 1.5\n",
                "[pipeline] question_discount = 1.5 is out of range: give a number from 0 to 1",
            ),
            (
                "[pipeline]\nopening_boost = -2.0\n",
                "[pipeline] opening_boost = -2.0 is out of range",
            ),
            (
                "[pipeline]\nspeaker_boost = -0.5\n",
                "[pipeline] speaker_boost = -0.5 is out of range",
            ),
            (
                "[pipeline]\nday_boost = inf\n",
                "[pipeline] day_boost = inf is out of range",
            ),
            (
                "[pipeline]\nreply_weight = 2.0\n",
                "[pipeline] reply_weight = 2.0 is out of range",
            ),
            (
                "[pipeline]\ncontext_weight = -0.1\n",
                "[pipeline] context_weight = -0.1 is out of range",
            ),
            (
                "[pipeline]\nretention_ms = -1\n",
                "[pipeline] retention_ms = -1 is out of range: give a whole number from 1 to",
            ),
            (
                "[pipeline]\nretention_ms = 0\n",
                "[pipeline] retention_ms = 0 is out of range",
            ),
            (
                "[store]\nmax_value_bytes = 0\n",
                "[store] max_value_bytes = 0 is out of range: give a whole number from 1024 to",
            ),
            (
                "[embedder]\ndim = 4000000000\n",
                "[embedder] dim = 4000000000 is out of range: give a whole number from 1 to 8192",
            ),
            (
                "[embedder]\ndim = 2.5\n",
                "[embedder] dim = 2.5 is out of range: give a whole number",
            ),
        ] {
            let err = load_text(text, &[]).unwrap_err();
            assert!(err.to_string().contains(expected), "{text}: {err}");
        }
        assert_eq!(
            load_text("[pipeline]\nretention_ms = 3600000\n", &[])
                .unwrap()
                .pipeline
                .retention_ms,
            Some(3_600_000)
        );
        let err = load_text("[store\n", &[]).unwrap_err();
        assert!(matches!(err, Error::ConfigFile { .. }), "{err}");
    }

    #[test]
    fn environment_overrides_win_and_are_typed() {
        let config = load_text(
            "[retriever]\nk_min = 3\n",
            &[
                ("COLMEM_RETRIEVER__K_MIN", "9"),
                ("COLMEM_PIPELINE__ROUNDS", "0"),
                ("COLMEM_EMBEDDER__KIND", "offline"),
                ("COLMEM_EMBEDDER__DIM", "64"),
                ("COLMEM_DIR", "/ignored"),
                ("OTHER", "x"),
            ],
        )
        .unwrap();
        assert_eq!(config.retriever.k_min, 9);
        assert_eq!(config.pipeline.rounds, 0);
        let EmbedderConfig::Offline(offline) = config.embedder else {
            panic!()
        };
        assert_eq!(offline.dim, 64);
        let config = load_text("", &[("COLMEM_EMBEDDER__DIM", "32")]).unwrap();
        assert!(matches!(config.embedder, EmbedderConfig::Offline(o) if o.dim == 32));
        // An override out of its key's range names the variable and the key.
        let err = load_text(
            "",
            &[
                ("COLMEM_RETRIEVER__K_MIN", "2"),
                ("COLMEM_EMBEDDER__DIM", "4000000000"),
            ],
        )
        .unwrap_err();
        assert!(matches!(err, Error::ConfigEnv { .. }), "{err}");
        assert!(
            err.to_string()
                .contains("(COLMEM_EMBEDDER__DIM): [embedder] dim = 4000000000 is out of range"),
            "{err}"
        );
        let err = load_text("", &[("COLMEM_PIPELINE__ROUNDZ", "1")]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("COLMEM_PIPELINE__ROUNDZ") && text.contains("roundz"),
            "{text}"
        );
    }

    #[test]
    fn the_documented_example_parses() {
        let doc = include_str!("../../../docs/config.md");
        let example = doc
            .split("```toml\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .unwrap();
        let config = Config::from_toml(example, "docs/config.md").unwrap();
        assert!(matches!(config.clock, ClockConfig::Logical { .. }));
        assert!(matches!(config.embedder, EmbedderConfig::Openai(_)));
        assert!(!config.pipeline.store.profile);
        assert!(config.chat.unwrap().json_schema);
    }

    #[test]
    fn a_missing_file_is_the_default_unless_required() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("none.toml");
        assert!(Config::load(&path, false, Vec::new()).is_ok());
        assert!(matches!(
            Config::load(&path, true, Vec::new()),
            Err(Error::Io { .. })
        ));
    }

    #[test]
    fn settings_that_cannot_work_together_are_refused() {
        for (text, env, says) in [
            (
                "[retriever]\nk_min = 50\nk_max = 5\n",
                &[][..],
                "k_min <= k_base <= k_max",
            ),
            ("", &[("COLMEM_RETRIEVER__K_BASE", "99")][..], "k_base = 99"),
        ] {
            let err = load_text(text, env).unwrap_err();
            assert!(matches!(err, Error::InvalidConfig(_)), "{text:?}: {err}");
            assert!(err.to_string().contains(says), "{text:?}: {err}");
            assert_eq!(err.kind(), colmem_core::ErrorKind::InvalidInput);
        }
        assert!(Config::from_toml("[retriever]\nk_max = 2\n", "test").is_err());
    }

    #[test]
    fn a_file_that_is_not_utf8_is_a_malformed_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("colmem.toml");
        std::fs::write(&path, b"[store]\n\xff\xfe = 1\n").unwrap();
        let err = Config::load(&path, true, vars(&[])).unwrap_err();
        assert!(matches!(err, Error::ConfigFile { .. }), "{err}");
        assert!(err.to_string().contains("not UTF-8"), "{err}");
        assert_eq!(err.kind(), colmem_core::ErrorKind::InvalidInput);
    }
}

#[cfg(test)]
mod write_policy_tests {
    use super::*;

    #[test]
    fn write_policies_parse_from_toml() {
        let config = Config::from_toml(
            r#"
[policy.write]
mandatory = [{ type = "phones" }]
[policy.write.system.shared]
transforms = [{ type = "redact", redact = { type = "emails" } }, { type = "anonymise_users" }, { type = "block", pattern = "secret" }]
"#,
            "test",
        )
        .unwrap();
        assert_eq!(config.policy.write.mandatory.len(), 1);
        assert_eq!(config.policy.write.system.shared.transforms.len(), 3);
        assert!(Config::from_toml("[policy.write]\nbogus = 1\n", "test").is_err());
    }
}
