//! The index benchmark of `cargo xtask bench index`, runnable on its own:
//! `cargo run --release -p colmem-index --example bench_index -- --n 100000`.

#[path = "../../../xtask/src/bench_index.rs"]
mod bench_index;

use clap::Parser;

/// Benchmarks colmem-index's planned, filtered search.
#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: bench_index::BenchIndexArgs,
}

fn main() -> anyhow::Result<()> {
    bench_index::run(&Cli::parse().args)
}
