//! Integration tests of colmem-index: backend conformance, access postings
//! against the read rule, filtered recall of every search path, durability.

mod durability;
mod postings;
mod search;
mod suites;
mod support;
