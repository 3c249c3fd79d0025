//! Integration tests of colmem-index: backend conformance, access postings
//! against the read rule, filtered recall of every search path, durability.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::type_complexity)]

mod durability;
mod postings;
mod search;
mod suites;
mod support;
