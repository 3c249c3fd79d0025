//! Integration tests of the access kernel.

mod oracle;
mod policies;
mod rules;
