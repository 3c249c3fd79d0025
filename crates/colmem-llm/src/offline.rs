//! The offline embedder: deterministic feature hashing, no model files, no network.

use serde::{Deserialize, Serialize};

use crate::embed::{Embedder, normalize};
use crate::error::{Error, Result};

/// Bump when anything that changes the vectors changes (tokenisation, hashing, weights).
const VERSION: u32 = 1;

const WEIGHT_UNIGRAM: f32 = 1.0;
const WEIGHT_BIGRAM: f32 = 0.7;
const WEIGHT_CHAR: f32 = 0.3;

const SEED_UNIGRAM: u64 = 0x9e37_79b9_7f4a_7c15;
const SEED_BIGRAM: u64 = 0xc2b2_ae3d_27d4_eb4f;
const SEED_CHAR: u64 = 0x1656_67b1_9e37_79f9;

/// Batches at least this large are split across threads.
const PARALLEL_BATCH: usize = 2048;

/// Parameters of the [`OfflineEmbedder`].
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OfflineConfig {
    /// The vector length.
    pub dim: usize,
    /// The shortest character n-gram (counted with the word's `<` and `>` boundary marks).
    pub char_ngram_min: usize,
    /// The longest character n-gram.
    pub char_ngram_max: usize,
}

impl Default for OfflineConfig {
    fn default() -> Self {
        OfflineConfig {
            dim: 384,
            char_ngram_min: 3,
            char_ngram_max: 4,
        }
    }
}

/// colmem's default embedder: signed feature hashing of words, word pairs and character n-grams.
///
/// The text is lower-cased and split into words (runs of letters and digits). Each word, each
/// pair of adjacent words and each character n-gram of `<word>` is hashed (a fixed FNV-1a and
/// SplitMix64 mix, the same on every platform and release) to one of `dim` components and a sign;
/// a feature seen `tf` times adds `weight * (1 + ln tf)` (words 1.0, pairs 0.7, n-grams 0.3).
/// The vector is then scaled to unit length.
///
/// What it is good for: deterministic tests and scenarios, and a working default that needs no
/// files and runs at hundreds of thousands of short texts per second.
///
/// Its limits, honestly:
/// - it is lexical: texts are similar when they share words, word pairs or spelling; it knows no
///   synonyms or paraphrases ("car" and "automobile" are unrelated, "not good" is close to "good");
/// - it knows no language: no stemming beyond what shared n-grams give, no stop words, so frequent
///   words weigh as much as rare ones (there is no corpus to learn an idf from);
/// - hashing collides: different features share components, which adds noise that grows as `dim`
///   shrinks and texts grow;
/// - an empty text (or one with no letters or digits) gets the all-zero vector.
///
/// Its [`id`](Embedder::id) names the version of the scheme and its parameters, e.g.
/// `offline-hash-v1/d384/w1-2/c3-4`.
#[derive(Clone, Debug)]
pub struct OfflineEmbedder {
    config: OfflineConfig,
    id: String,
}

impl OfflineEmbedder {
    /// The weight of this embedder's signal in rank fusion, against BM25's 1.0: a lexical
    /// embedder adds little to BM25 and costs when it outweighs it. On LoCoMo evidence
    /// recall@10 (`cargo xtask eval locomo --vector-weight W`) the AMA pipeline scores
    /// 0.784 at 0, 0.783 at 0.1, 0.784 at 0.2, 0.785 at 0.3, 0.781 at 0.4 and 0.769 at
    /// 0.7; recall@5 and @25 also peak from 0.1 to 0.3. A semantic embedder (MiniLM)
    /// takes 1.0.
    pub const FUSION_WEIGHT: f64 = 0.3;

    /// An embedder with these parameters; refuses a zero dimension or an empty n-gram range.
    pub fn new(config: OfflineConfig) -> Result<Self> {
        if config.dim == 0 {
            return Err(Error::Config(
                "the offline embedder's dim must be at least 1".to_owned(),
            ));
        }
        if config.char_ngram_min == 0 || config.char_ngram_min > config.char_ngram_max {
            return Err(Error::Config(format!(
                "the offline embedder's character n-grams must satisfy 1 <= char_ngram_min <= char_ngram_max, got {}..={}",
                config.char_ngram_min, config.char_ngram_max
            )));
        }
        Ok(OfflineEmbedder {
            config,
            id: id_for(config),
        })
    }

    /// The parameters.
    pub fn config(&self) -> OfflineConfig {
        self.config
    }

    /// The vector of one text.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut features = Vec::with_capacity(64);
        self.features(text, &mut features);
        features.sort_unstable_by_key(|f| f.0);
        let mut vector = vec![0.0f32; self.config.dim];
        let mut i = 0;
        while i < features.len() {
            let (hash, weight) = features[i];
            let mut tf = 1u32;
            while i + (tf as usize) < features.len() && features[i + tf as usize].0 == hash {
                tf += 1;
            }
            i += tf as usize;
            let value = weight * (1.0 + (tf as f32).ln());
            let index = ((u128::from(hash) * self.config.dim as u128) >> 64) as usize;
            if hash & 1 == 0 {
                vector[index] += value;
            } else {
                vector[index] -= value;
            }
        }
        normalize(&mut vector);
        vector
    }

    fn features(&self, text: &str, out: &mut Vec<(u64, f32)>) {
        let mut word = String::with_capacity(32);
        let mut marked = String::with_capacity(34);
        let mut bounds: Vec<usize> = Vec::with_capacity(34);
        let mut previous: Option<u64> = None;
        let mut chars = text.chars().peekable();
        loop {
            word.clear();
            while let Some(&c) = chars.peek() {
                if c.is_alphanumeric() {
                    break;
                }
                chars.next();
            }
            while let Some(&c) = chars.peek() {
                if !c.is_alphanumeric() {
                    break;
                }
                if c.is_ascii() {
                    word.push(c.to_ascii_lowercase());
                } else {
                    word.extend(c.to_lowercase());
                }
                chars.next();
            }
            if word.is_empty() {
                break;
            }
            let h = fnv1a(word.as_bytes());
            out.push((mix(h ^ SEED_UNIGRAM), WEIGHT_UNIGRAM));
            if let Some(p) = previous {
                out.push((mix(p.rotate_left(29) ^ h ^ SEED_BIGRAM), WEIGHT_BIGRAM));
            }
            previous = Some(h);

            marked.clear();
            marked.push('<');
            marked.push_str(&word);
            marked.push('>');
            bounds.clear();
            bounds.extend(marked.char_indices().map(|(i, _)| i));
            bounds.push(marked.len());
            let chars_in_word = bounds.len() - 1;
            for n in self.config.char_ngram_min..=self.config.char_ngram_max.min(chars_in_word) {
                for start in 0..=chars_in_word - n {
                    let gram = &marked.as_bytes()[bounds[start]..bounds[start + n]];
                    out.push((mix(fnv1a(gram) ^ SEED_CHAR), WEIGHT_CHAR));
                }
            }
        }
    }
}

impl Default for OfflineEmbedder {
    fn default() -> Self {
        let config = OfflineConfig::default();
        OfflineEmbedder {
            config,
            id: id_for(config),
        }
    }
}

impl Embedder for OfflineEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.config.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        if texts.len() < PARALLEL_BATCH || threads < 2 {
            return Ok(texts.iter().map(|t| self.vector(t)).collect());
        }
        let chunk = texts.len().div_ceil(threads);
        let parts: Vec<Vec<Vec<f32>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = texts
                .chunks(chunk)
                .map(|part| scope.spawn(move || part.iter().map(|t| self.vector(t)).collect()))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join())
                .collect::<std::result::Result<_, _>>()
        })
        .map_err(|_| Error::Inference("an offline embedding thread panicked".to_owned()))?;
        Ok(parts.into_iter().flatten().collect())
    }
}

fn id_for(config: OfflineConfig) -> String {
    format!(
        "offline-hash-v{VERSION}/d{}/w1-2/c{}-{}",
        config.dim, config.char_ngram_min, config.char_ngram_max
    )
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// SplitMix64's finaliser: spreads FNV's weak low bits over the whole word.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn vectors_are_unit_length_and_deterministic() {
        let e = OfflineEmbedder::default();
        let v = e.vector("Alice moved to Berlin in March.");
        assert_eq!(v.len(), 384);
        assert!((cosine(&v, &v) - 1.0).abs() < 1e-5);
        assert_eq!(
            v,
            OfflineEmbedder::default().vector("Alice moved to Berlin in March.")
        );
    }

    #[test]
    fn similar_texts_are_closer_than_unrelated_ones() {
        let e = OfflineEmbedder::default();
        let a = e.vector("Alice moved to Berlin in March");
        let b = e.vector("alice moved to berlin");
        let c = e.vector("the quarterly revenue report is late");
        assert!(cosine(&a, &b) > 0.6, "{}", cosine(&a, &b));
        assert!(cosine(&a, &c) < 0.2, "{}", cosine(&a, &c));
        // Character n-grams tolerate a typo.
        let d = e.vector("Alice moved to Berlln in March");
        assert!(cosine(&a, &d) > cosine(&a, &c) + 0.4);
    }

    #[test]
    fn empty_and_symbol_only_texts_are_zero() {
        let e = OfflineEmbedder::default();
        assert!(e.vector("").iter().all(|x| *x == 0.0));
        assert!(e.vector(" -- !! ").iter().all(|x| *x == 0.0));
    }

    #[test]
    fn id_names_the_parameters_and_bad_ones_are_refused() {
        let config = OfflineConfig {
            dim: 64,
            char_ngram_min: 2,
            char_ngram_max: 5,
        };
        assert_eq!(
            OfflineEmbedder::new(config).unwrap().id(),
            "offline-hash-v1/d64/w1-2/c2-5"
        );
        assert_eq!(
            OfflineEmbedder::default().id(),
            "offline-hash-v1/d384/w1-2/c3-4"
        );
        assert!(OfflineEmbedder::new(OfflineConfig { dim: 0, ..config }).is_err());
        assert!(
            OfflineEmbedder::new(OfflineConfig {
                char_ngram_min: 4,
                char_ngram_max: 3,
                dim: 8
            })
            .is_err()
        );
    }

    #[test]
    fn large_batches_match_one_by_one() {
        let e = OfflineEmbedder::default();
        let texts: Vec<String> = (0..PARALLEL_BATCH + 7)
            .map(|i| format!("note {i} about ünïcode"))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let batch = e.embed(&refs).unwrap();
        assert_eq!(batch.len(), refs.len());
        for (text, v) in refs.iter().zip(&batch).step_by(97) {
            assert_eq!(v, &e.vector(text));
        }
    }

    proptest::proptest! {
        /// Any text gets a unit vector, or the zero vector when it has no letters or digits.
        #[test]
        fn vectors_are_unit_or_zero(text in ".{0,200}") {
            let v = OfflineEmbedder::default().vector(&text);
            let norm = cosine(&v, &v).sqrt();
            let has_words = text.chars().any(char::is_alphanumeric);
            proptest::prop_assert!(if has_words { (norm - 1.0).abs() < 1e-4 } else { norm == 0.0 }, "{}", norm);
        }
    }

    #[test]
    fn hashing_is_pinned() {
        // The vectors are stored: a change here silently breaks every index, so bump VERSION.
        assert_eq!(fnv1a(b"colmem"), 0x3104_cb87_d9d4_820a);
        let v = OfflineEmbedder::new(OfflineConfig {
            dim: 8,
            ..OfflineConfig::default()
        })
        .unwrap()
        .vector("pin");
        let rounded: Vec<i32> = v.iter().map(|x| (x * 1000.0).round() as i32).collect();
        assert_eq!(
            rounded,
            [-219, 0, 0, 219, 0, -951, 0, 0],
            "update the pinned vector only with a VERSION bump"
        );
    }
}
