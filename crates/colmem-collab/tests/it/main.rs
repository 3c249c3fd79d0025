//! Integration tests of colmem-collab (one test binary).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod collaboration;
mod coordinator;
mod loopback;
