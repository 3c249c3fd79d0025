//! Integration tests of the access kernel.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod oracle;
mod policies;
mod rules;
