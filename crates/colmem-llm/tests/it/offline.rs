//! The offline embedder through the shared suite.

use colmem_llm::{OfflineConfig, OfflineEmbedder};

use crate::suite::check_embedder;

#[test]
fn the_offline_embedder_passes_the_suite() {
    check_embedder(&OfflineEmbedder::default());
    check_embedder(
        &OfflineEmbedder::new(OfflineConfig {
            dim: 32,
            char_ngram_min: 2,
            char_ngram_max: 5,
        })
        .unwrap(),
    );
}
