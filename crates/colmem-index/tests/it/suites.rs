//! Every backend runs the generic conformance suites.

use colmem_index::{FlatIndex, MemoryBm25, conformance};

#[test]
fn flat_index_conforms() {
    conformance::vector(&|dim| Box::new(FlatIndex::new(dim))).unwrap();
}

#[test]
fn memory_bm25_conforms() {
    conformance::lexical(&|| Box::new(MemoryBm25::new())).unwrap();
}

#[cfg(feature = "usearch")]
#[test]
fn usearch_hnsw_conforms_in_every_quantisation() {
    use colmem_index::{HnswConfig, HnswIndex, Quantization};
    for quantization in [Quantization::F32, Quantization::F16, Quantization::I8] {
        let config = HnswConfig {
            quantization,
            ..HnswConfig::default()
        };
        conformance::vector(&|dim| Box::new(HnswIndex::new(dim, config).unwrap()))
            .unwrap_or_else(|e| panic!("{quantization:?}: {e}"));
    }
}

#[cfg(feature = "tantivy")]
#[test]
fn tantivy_bm25_conforms() {
    conformance::lexical(&|| Box::new(colmem_index::TantivyBm25::new().unwrap())).unwrap();
}
