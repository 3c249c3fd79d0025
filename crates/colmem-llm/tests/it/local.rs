//! The local model (feature `local`) against reference vectors from an independent float64 forward pass.

use std::path::PathBuf;

use colmem_llm::{Embedder, LocalEmbedder, LocalModelConfig, TokenCounter};
use serde::Deserialize;

use crate::suite::check_embedder;

#[derive(Deserialize)]
struct Reference {
    items: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    text: String,
    tokens: usize,
    embedding: Vec<f32>,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The model directory: `COLMEM_MINILM_DIR`, else `<repo>/models/minilm`. Missing files fail the test.
fn load() -> LocalEmbedder {
    let dir = std::env::var_os("COLMEM_MINILM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("models/minilm"));
    assert!(
        dir.join("model.safetensors").is_file(),
        "the all-MiniLM-L6-v2 model is not in {}: run `cargo xtask fetch-model minilm` (or set COLMEM_MINILM_DIR to a directory holding config.json, tokenizer.json and model.safetensors)",
        dir.display()
    );
    LocalEmbedder::load(&LocalModelConfig::new(dir)).unwrap()
}

#[test]
fn minilm_matches_the_reference_vectors() {
    let path = repo().join("../shared/data/minilm-reference.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read the reference vectors {}: {e}", path.display()));
    let reference: Reference = serde_json::from_str(&text).unwrap();
    assert_eq!(reference.items.len(), 5);

    let model = load();
    assert_eq!(model.dim(), 384);
    assert!(model.id().starts_with("local/minilm-"), "{}", model.id());
    let texts: Vec<&str> = reference.items.iter().map(|i| i.text.as_str()).collect();
    // In one padded batch, and each alone.
    let batch = model.embed(&texts).unwrap();
    let mut worst = 0.0f32;
    for (item, got) in reference.items.iter().zip(&batch) {
        let alone = model.embed_one(&item.text).unwrap().vector;
        for vector in [got, &alone] {
            assert_eq!(vector.len(), item.embedding.len());
            let diff = vector
                .iter()
                .zip(&item.embedding)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            worst = worst.max(diff);
            assert!(
                diff <= 1e-4,
                "{:?}: a component differs by {diff}",
                item.text
            );
        }
        // The reference counts [CLS] and [SEP]; the counter does not.
        assert_eq!(
            model.token_counter().count(&item.text) + 2,
            item.tokens,
            "{:?}",
            item.text
        );
    }
    eprintln!("local model: max abs diff vs reference {worst:e}");
}

#[test]
fn minilm_passes_the_suite() {
    check_embedder(&load());
}

#[test]
fn a_missing_model_says_how_to_fetch_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = LocalEmbedder::load(&LocalModelConfig::new(dir.path())).unwrap_err();
    assert!(
        err.to_string().contains("cargo xtask fetch-model minilm"),
        "{err}"
    );
}
