//! colmem-llm's integration tests: the loopback HTTP server, cassettes, the embedders' shared suite
//! and (with the `local` feature) the local model against its reference vectors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cassette;
#[cfg(feature = "local")]
mod local;
mod loopback;
mod offline;
mod server;
mod suite;
