//! `cargo xtask`: colmem's automation.
fn main() {}
