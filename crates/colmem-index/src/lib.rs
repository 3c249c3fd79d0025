//! colmem's derived search indexes.
//!
//! Two object-safe traits, [`VectorIndex`] and [`LexicalIndex`], with backends:
//! the exact [`FlatIndex`] and the in-memory [`MemoryBm25`] (always built), the
//! usearch [`HnswIndex`] (feature `usearch`) and the tantivy [`TantivyBm25`]
//! (feature `tantivy`). [`HybridIndex`] keeps them in step with the store's
//! [`ChangeFeed`](colmem_core::ChangeFeed), keeps [`AccessPostings`] so the set a
//! [`ReadFilter`](colmem_core::ReadFilter) admits is computed from roaring
//! bitmaps, plans each query (exact scan over the admitted list, or an HNSW walk
//! with the filter as its predicate) and fuses vector and BM25 ranks.
//!
//! The filter is always applied inside a search, never to a finished top-k.
//! Every backend runs the generic suites in [`conformance`].

mod admit;
#[cfg(feature = "tantivy")]
mod bm25;
pub mod conformance;
mod error;
mod flat;
mod granularity;
#[cfg(feature = "usearch")]
mod hnsw;
mod hybrid;
mod lemma;
mod lexical;
mod partition;
mod postings;
mod snapshot;
mod vector;

pub use admit::Admit;
#[cfg(feature = "tantivy")]
pub use bm25::TantivyBm25;
pub use error::{Error, Result};
pub use flat::FlatIndex;
#[cfg(feature = "usearch")]
pub use hnsw::{HnswConfig, HnswIndex, Quantization};
pub use hybrid::{
    CatchUp, FusionConfig, Hit, HybridConfig, HybridIndex, OpenReport, Plan, PlannerConfig, Query,
    Signal, Strategy,
};
pub use lemma::{base_form, singular};
pub use lexical::{LexicalHit, LexicalIndex, MemoryBm25, analyze};
pub use postings::AccessPostings;
pub use roaring::RoaringTreemap;
pub use vector::{Effort, VectorHit, VectorIndex, dot, normalized};
