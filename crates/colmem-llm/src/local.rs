//! A local sentence-embedding model: a BERT-style transformer run on the CPU with candle.
//!
//! The model is loaded from a directory holding `config.json`, `tokenizer.json` and
//! `model.safetensors` (as sentence-transformers models such as all-MiniLM-L6-v2 ship them;
//! `cargo xtask fetch-model minilm` puts that one in `models/minilm`). Embeddings match
//! sentence-transformers: token embeddings of the last layer, mean-pooled over the attention
//! mask, then L2-normalised.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use serde::Deserialize;
use tokenizers::Tokenizer;

use crate::embed::{Embedder, normalize};
use crate::error::{Error, Result};
use crate::tokens::TokenizerCounter;

/// Where the model is and how to run it.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalModelConfig {
    /// The directory holding `config.json`, `tokenizer.json` and `model.safetensors`.
    pub dir: PathBuf,
    /// Longer texts are truncated to this many tokens; `None` takes `max_seq_length` from the
    /// directory's `sentence_bert_config.json`, else the model's `max_position_embeddings`.
    #[serde(default)]
    pub max_seq_len: Option<usize>,
    /// How many texts one forward pass carries.
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
}

fn default_batch_size() -> usize {
    32
}

impl LocalModelConfig {
    /// The model in `dir` with the default settings.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        LocalModelConfig {
            dir: dir.into(),
            max_seq_len: None,
            batch_size: default_batch_size(),
        }
    }
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

/// A sentence-embedding model run locally on the CPU.
pub struct LocalEmbedder {
    model: BertModel,
    tokenizer: Arc<Tokenizer>,
    device: Device,
    pad_id: u32,
    max_seq_len: usize,
    batch_size: usize,
    dim: usize,
    id: String,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("id", &self.id)
            .field("max_seq_len", &self.max_seq_len)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

impl LocalEmbedder {
    /// Loads the model; fails with a message saying how to get the files when they are missing.
    pub fn load(config: &LocalModelConfig) -> Result<Self> {
        let dir = &config.dir;
        let files_error = |message: String| Error::ModelFiles {
            dir: dir.clone(),
            message,
        };
        if config.batch_size == 0 {
            return Err(Error::Config(
                "the local model's batch_size must be at least 1".to_owned(),
            ));
        }
        let read = |name: &str| -> Result<Vec<u8>> {
            std::fs::read(dir.join(name)).map_err(|e| {
                files_error(format!(
                    "cannot read {name} ({e}); run `cargo xtask fetch-model minilm` to fetch all-MiniLM-L6-v2 into models/minilm, or point dir at a directory holding config.json, tokenizer.json and model.safetensors"
                ))
            })
        };
        let config_bytes = read("config.json")?;
        let tokenizer_bytes = read("tokenizer.json")?;
        let weights = read("model.safetensors")?;

        let bert: BertConfig = serde_json::from_slice(&config_bytes)
            .map_err(|e| files_error(format!("config.json is not a BERT configuration ({e})")))?;
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes)
            .map_err(|e| files_error(format!("tokenizer.json does not load ({e})")))?;
        let max_seq_len = match config.max_seq_len {
            Some(n) => n,
            None => sentence_bert_max_len(dir).unwrap_or(bert.max_position_embeddings),
        }
        .min(bert.max_position_embeddings)
        .max(1);
        // Padding is done per batch below; truncation follows max_seq_len.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: max_seq_len,
                ..tokenizers::TruncationParams::default()
            }))
            .map_err(|e| files_error(format!("cannot truncate to {max_seq_len} tokens ({e})")))?;

        let digest = {
            let mut hasher = blake3::Hasher::new();
            for part in [&config_bytes, &tokenizer_bytes, &weights] {
                hasher.update(&(part.len() as u64).to_le_bytes());
                hasher.update(part);
            }
            hasher.finalize().to_hex()[..12].to_owned()
        };
        let device = Device::Cpu;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|e| files_error(format!("model.safetensors does not load ({e})")))?;
        let model = BertModel::load(vb, &bert).map_err(|e| {
            files_error(format!(
                "model.safetensors does not hold the BERT weights config.json describes ({e})"
            ))
        })?;
        let name = dir
            .file_name()
            .map_or_else(|| "model".to_owned(), |n| n.to_string_lossy().into_owned());
        let id = format!(
            "local/{name}-{digest}/d{}/mean-l2/t{max_seq_len}",
            bert.hidden_size
        );
        Ok(LocalEmbedder {
            model,
            tokenizer: Arc::new(tokenizer),
            device,
            pad_id: u32::try_from(bert.pad_token_id).unwrap_or(0),
            max_seq_len,
            batch_size: config.batch_size,
            dim: bert.hidden_size,
            id,
        })
    }

    /// A token counter using this model's tokenizer.
    pub fn token_counter(&self) -> TokenizerCounter {
        TokenizerCounter::new(&self.tokenizer)
    }

    /// The most tokens of a text the model sees; the rest is cut off.
    pub fn max_seq_len(&self) -> usize {
        self.max_seq_len
    }

    /// Mean-pooled, normalised vectors of texts already tokenised, padded to the longest.
    fn forward(&self, encodings: &[&tokenizers::Encoding]) -> candle_core::Result<Vec<Vec<f32>>> {
        let n = encodings.len();
        let len = encodings.iter().map(|e| e.len()).max().unwrap_or(0).max(1);
        let mut ids = Vec::with_capacity(n * len);
        let mut types = Vec::with_capacity(n * len);
        let mut mask = Vec::with_capacity(n * len);
        for e in encodings {
            let pad = len - e.len();
            ids.extend_from_slice(e.get_ids());
            ids.extend(std::iter::repeat_n(self.pad_id, pad));
            types.extend_from_slice(e.get_type_ids());
            types.extend(std::iter::repeat_n(0u32, pad));
            mask.extend_from_slice(e.get_attention_mask());
            mask.extend(std::iter::repeat_n(0u32, pad));
        }
        let ids = Tensor::from_vec(ids, (n, len), &self.device)?;
        let types = Tensor::from_vec(types, (n, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (n, len), &self.device)?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        let weights = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&weights)?.sum(1)?;
        let counts = weights.sum(1)?.clamp(1e-9f32, f32::MAX)?;
        let mut vectors = summed.broadcast_div(&counts)?.to_vec2::<f32>()?;
        vectors.iter_mut().for_each(|v| normalize(v));
        Ok(vectors)
    }
}

fn sentence_bert_max_len(dir: &Path) -> Option<usize> {
    let bytes = std::fs::read(dir.join("sentence_bert_config.json")).ok()?;
    serde_json::from_slice::<SentenceBertConfig>(&bytes)
        .ok()?
        .max_seq_length
}

impl Embedder for LocalEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    /// Tokenises every text, runs them through the model in batches of similar length (less
    /// padding), and returns the vectors in the callers' order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| Error::Inference(format!("tokenising failed ({e})")))?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());
        let mut vectors: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(self.batch_size) {
            let batch: Vec<&tokenizers::Encoding> = chunk.iter().map(|&i| &encodings[i]).collect();
            let out = self
                .forward(&batch)
                .map_err(|e| Error::Inference(e.to_string()))?;
            for (&i, v) in chunk.iter().zip(out) {
                vectors[i] = v;
            }
        }
        Ok(vectors)
    }
}
