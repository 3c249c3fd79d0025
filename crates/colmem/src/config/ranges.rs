//! The range of every numeric key of the configuration, checked on the values as
//! written (in `colmem.toml` or a `COLMEM_…` override) before they are read into
//! [`Config`](super::Config): a value out of its range is a configuration error
//! naming the key, never a failure later (an index that cannot reserve memory).

/// The values one numeric key admits.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct KeyRange {
    /// The key's path, its tables joined by dots (`embedder.dim`; the same key of
    /// every embedder kind, of `[chat]` and of `[embedder]` alike).
    pub key: &'static str,
    /// The least value.
    pub min: f64,
    /// Whether `min` itself is refused (a half-life is above 0).
    pub min_exclusive: bool,
    /// The greatest value.
    pub max: f64,
    /// Whether the key takes whole numbers only.
    pub whole: bool,
}

impl KeyRange {
    /// A whole number from `min` to `max`.
    const fn whole(key: &'static str, min: u64, max: u64) -> KeyRange {
        KeyRange {
            key,
            min: min as f64,
            min_exclusive: false,
            max: max as f64,
            whole: true,
        }
    }

    /// A number from `min` to `max`.
    const fn number(key: &'static str, min: f64, max: f64) -> KeyRange {
        KeyRange {
            key,
            min,
            min_exclusive: false,
            max,
            whole: false,
        }
    }

    /// A number above `min`, at most `max`.
    const fn above(key: &'static str, min: f64, max: f64) -> KeyRange {
        KeyRange {
            min_exclusive: true,
            ..KeyRange::number(key, min, max)
        }
    }

    /// Whether `value` is in the range (a whole number, if the key takes those).
    pub fn admits(&self, value: f64) -> bool {
        let above_min = if self.min_exclusive {
            value > self.min
        } else {
            value >= self.min
        };
        above_min && value <= self.max && (!self.whole || value.fract() == 0.0)
    }

    /// What the key takes, as an instruction.
    fn describe(&self) -> String {
        if self.whole {
            format!("give a whole number from {} to {}", self.min, self.max)
        } else if self.min_exclusive {
            format!("give a number above {}, at most {}", self.min, self.max)
        } else {
            format!("give a number from {} to {}", self.min, self.max)
        }
    }
}

/// A millisecond count of one hour.
const HOUR_MS: u64 = 3_600_000;
/// The longest retention: a hundred years, in milliseconds.
const CENTURY_MS: u64 = 36_525 * 24 * HOUR_MS;
/// The longest vectors any embedding model gives (and the index holds).
const MAX_DIM: u64 = 8192;
/// The largest text a value or a turn may be: 64 MiB.
const MAX_TEXT_BYTES: u64 = 64 << 20;

/// Every numeric key and its range. The facade's integration test walks the
/// configuration type (serialised) for numeric keys missing here.
pub const KEY_RANGES: &[KeyRange] = &[
    // [embedder] (offline, local and openai) and [chat]: model sizes and endpoints.
    KeyRange::whole("embedder.dim", 1, MAX_DIM),
    KeyRange::whole("embedder.char_ngram_min", 1, 16),
    KeyRange::whole("embedder.char_ngram_max", 1, 16),
    KeyRange::whole("embedder.max_seq_len", 1, MAX_DIM),
    KeyRange::whole("embedder.batch_size", 1, 4096),
    KeyRange::whole("embedder.timeout_ms", 1, HOUR_MS),
    KeyRange::whole("embedder.connect_timeout_ms", 1, HOUR_MS),
    KeyRange::whole("embedder.max_retries", 0, 100),
    KeyRange::whole("embedder.backoff_ms", 0, HOUR_MS),
    KeyRange::whole("embedder.max_backoff_ms", 0, HOUR_MS),
    KeyRange::whole("chat.timeout_ms", 1, HOUR_MS),
    KeyRange::whole("chat.connect_timeout_ms", 1, HOUR_MS),
    KeyRange::whole("chat.max_retries", 0, 100),
    KeyRange::whole("chat.backoff_ms", 0, HOUR_MS),
    KeyRange::whole("chat.max_backoff_ms", 0, HOUR_MS),
    // [roles]: the OpenAI protocol's temperatures.
    KeyRange::number("roles.temperature", 0.0, 2.0),
    KeyRange::whole("roles.max_tokens", 1, 1_000_000),
    // [policy.read]
    KeyRange::whole("policy.read.top_k_per_tier", 1, 10_000),
    KeyRange::number("policy.read.min_score", 0.0, 100.0),
    // [constructor]
    KeyRange::whole("constructor.episode_window", 1, 1000),
    KeyRange::number("constructor.topic_shift_overlap", 0.0, 1.0),
    KeyRange::whole("constructor.topic_span", 1, 100),
    KeyRange::whole("constructor.summary_sentences", 1, 100),
    KeyRange::whole("constructor.min_fact_words", 0, 100),
    // [retriever]
    KeyRange::whole("retriever.k_min", 1, 1000),
    KeyRange::whole("retriever.k_base", 1, 1000),
    KeyRange::whole("retriever.k_max", 1, 1000),
    KeyRange::number("retriever.episode_threshold", 0.0, 1.0),
    KeyRange::number("retriever.raw_threshold", 0.0, 1.0),
    // [pipeline]
    KeyRange::whole("pipeline.rounds", 0, 16),
    KeyRange::whole("pipeline.retention_ms", 1, CENTURY_MS),
    KeyRange::whole("pipeline.max_turn_bytes", 1, MAX_TEXT_BYTES),
    KeyRange::whole("pipeline.neighbours", 0, 16),
    KeyRange::number("pipeline.relevance_weight", 0.0, 100.0),
    KeyRange::number("pipeline.route_boost", 0.0, 100.0),
    KeyRange::number("pipeline.speaker_boost", 0.0, 100.0),
    KeyRange::number("pipeline.reply_weight", 0.0, 1.0),
    KeyRange::number("pipeline.time_boost", 0.0, 100.0),
    KeyRange::number("pipeline.day_boost", 0.0, 100.0),
    KeyRange::number("pipeline.when_boost", 0.0, 100.0),
    KeyRange::number("pipeline.context_weight", 0.0, 1.0),
    // At most the pipeline's `MAX_CONTEXT_WIDTH`.
    KeyRange::whole("pipeline.context_width", 0, 8),
    KeyRange::number("pipeline.question_discount", 0.0, 1.0),
    KeyRange::number("pipeline.opening_boost", 0.0, 100.0),
    // [cards.read]
    KeyRange::number("cards.read.weights.cosine", 0.0, 1.0),
    KeyRange::number("cards.read.weights.keyword", 0.0, 1.0),
    KeyRange::number("cards.read.weights.support", 0.0, 1.0),
    KeyRange::number("cards.read.weights.credibility", 0.0, 1.0),
    KeyRange::number("cards.read.weights.recency", 0.0, 1.0),
    KeyRange::number("cards.read.min_score", 0.0, 1.0),
    KeyRange::whole("cards.read.top_k", 1, 1000),
    KeyRange::number("cards.read.mmr_lambda", 0.0, 1.0),
    KeyRange::whole("cards.read.hops", 0, 16),
    KeyRange::number("cards.read.duplicate_similarity", 0.0, 1.0),
    KeyRange::above("cards.read.recency_half_life", 0.0, 1e6),
    KeyRange::number("cards.read.section_need", 0.0, 1.0),
    KeyRange::whole("cards.read.compact_chars", 1, 100_000),
    // [cards.write]
    KeyRange::number("cards.write.admission.reliability", 0.0, 1.0),
    KeyRange::number("cards.write.admission.novelty", 0.0, 1.0),
    KeyRange::number("cards.write.admission.recency", 0.0, 1.0),
    KeyRange::number("cards.write.admission.utility", 0.0, 1.0),
    KeyRange::number("cards.write.admission.threshold", 0.0, 1.0),
    KeyRange::number("cards.write.merge_similarity", 0.0, 1.0),
    KeyRange::whole("cards.write.bounds.section_chars", 1, 100_000),
    KeyRange::whole("cards.write.bounds.triggers", 0, 1000),
    KeyRange::whole("cards.write.bounds.sources", 0, 1000),
    KeyRange::whole("cards.write.relation_candidates", 0, 1000),
    KeyRange::above("cards.write.recency_half_life", 0.0, 1e6),
    // [index]
    KeyRange::whole("index.exact_max", 0, 1_000_000_000),
    KeyRange::number("index.exact_fraction", 0.0, 1.0),
    KeyRange::whole("index.base_candidates", 1, 1_000_000),
    KeyRange::number("index.growth", 0.0, 10.0),
    KeyRange::whole("index.max_candidates", 1, 10_000_000),
    KeyRange::whole("index.reference_len", 1, 1_000_000_000_000),
    KeyRange::number("index.size_growth", 0.0, 10.0),
    KeyRange::whole("index.min_candidates", 1, 1_000_000),
    KeyRange::number("index.rrf_k", 0.0, 1e6),
    KeyRange::number("index.score_share", 0.0, 1.0),
    KeyRange::number("index.vector_weight", 0.0, 1000.0),
    KeyRange::number("index.lexical_weight", 0.0, 1000.0),
    KeyRange::whole("index.depth", 1, 100_000),
    // [store]
    KeyRange::whole("store.busy_deadline_ms", 0, HOUR_MS),
    KeyRange::whole("store.lock_wait_ms", 0, 24 * HOUR_MS),
    KeyRange::whole("store.max_value_bytes", 1024, MAX_TEXT_BYTES),
    // 0: no cap; at most what SQLite can count (max_page_count).
    KeyRange::whole("store.max_pages", 0, 4_294_967_294),
    KeyRange::whole("store.purge_deleted_after", 0, CENTURY_MS),
];

/// The range of `key` (its tables joined by dots), if it is a numeric key.
pub fn key_range(key: &str) -> Option<&'static KeyRange> {
    KEY_RANGES.iter().find(|range| range.key == key)
}

/// A value out of its key's range.
#[derive(Debug)]
pub(super) struct OutOfRange {
    /// The key's path, one part per table.
    pub path: Vec<String>,
    /// The key, its value and what it takes.
    pub message: String,
}

/// Checks every numeric value of `table` that names a key of [`KEY_RANGES`].
pub(super) fn check(table: &toml::Table) -> Result<(), OutOfRange> {
    walk(table, &mut Vec::new())
}

fn walk(table: &toml::Table, path: &mut Vec<String>) -> Result<(), OutOfRange> {
    for (name, value) in table {
        path.push(name.clone());
        let number = match value {
            toml::Value::Table(inner) => {
                walk(inner, path)?;
                None
            }
            toml::Value::Integer(i) => Some((*i as f64, i.to_string())),
            toml::Value::Float(f) => Some((*f, format!("{f:?}"))),
            _ => None,
        };
        if let Some((number, written)) = number
            && let Some(range) = key_range(&path.join("."))
            && !range.admits(number)
        {
            let (tables, key) = path.split_at(path.len() - 1);
            return Err(OutOfRange {
                path: path.clone(),
                message: format!(
                    "[{}] {} = {written} is out of range: {}",
                    tables.join("."),
                    key[0],
                    range.describe()
                ),
            });
        }
        path.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_admits_its_bounds_and_nothing_past_them() {
        let dim = key_range("embedder.dim").unwrap();
        for (value, admitted) in [
            (1.0, true),
            (8192.0, true),
            (0.0, false),
            (8193.0, false),
            (4e9, false),
            (2.5, false),
            (f64::NAN, false),
        ] {
            assert_eq!(dim.admits(value), admitted, "{value}");
        }
        let half_life = key_range("cards.read.recency_half_life").unwrap();
        assert!(!half_life.admits(0.0) && half_life.admits(0.5));
        assert!(!half_life.admits(f64::INFINITY));
        assert!(key_range("embedder.kind").is_none());
    }

    #[test]
    fn the_defaults_are_in_range() {
        let defaults = toml::Table::try_from(crate::Config::default()).unwrap();
        check(&defaults).unwrap();
    }

    #[test]
    fn each_key_is_listed_once() {
        let mut keys: Vec<&str> = KEY_RANGES.iter().map(|r| r.key).collect();
        keys.sort_unstable();
        let len = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), len);
    }

    #[test]
    fn the_message_names_the_key_its_value_and_what_it_takes() {
        let table: toml::Table = "[cards.read.weights]\ncosine = 1e30\n".parse().unwrap();
        let err = check(&table).unwrap_err();
        assert_eq!(err.path, ["cards", "read", "weights", "cosine"]);
        assert_eq!(
            err.message,
            "[cards.read.weights] cosine = 1e30 is out of range: give a number from 0 to 1"
        );
        let table: toml::Table = "[embedder]\ndim = 4000000000\n".parse().unwrap();
        assert_eq!(
            check(&table).unwrap_err().message,
            "[embedder] dim = 4000000000 is out of range: give a whole number from 1 to 8192"
        );
    }
}
