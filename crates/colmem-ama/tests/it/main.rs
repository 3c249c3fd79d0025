//! Integration tests of colmem-ama: the pipeline end to end, and the model-backed roles
//! on recorded cassettes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod llm;
mod pipeline;
