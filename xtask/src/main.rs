//! `cargo xtask`: colmem's automation — scenarios, benchmarks, tidy checks and the CI entry.
//!
//! Benchmarks always run an optimised build: when this binary was built without
//! optimisations, `bench` re-runs itself through `cargo run --release`.

mod ama_harness;
mod bench_access;
mod bench_embed;
mod bench_index;
mod bench_store;
mod comam;
mod eval_locomo;
mod eval_updates;
mod fetch_model;
mod fuzz;
mod scenario_access;
mod scenario_asymmetric;
mod scenario_cards;
mod scenario_dynamic;
mod scenario_fully;
mod scenario_report;
mod scenario_scopes;
mod scenario_world;
mod tidy;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "cargo xtask", about = "colmem's automation")]
struct Cli {
    #[command(subcommand)]
    command: Task,
}

#[derive(Subcommand, Debug)]
enum Task {
    /// Run a scenario and print its table.
    Scenario {
        /// The scenario: access, fully-collaborative, asymmetric, dynamic, scopes, cards, or all.
        name: String,
        /// Print one JSON object as the last line.
        #[arg(long)]
        json: bool,
    },
    /// Measure performance (always an optimised build).
    Bench {
        #[command(subcommand)]
        bench: Bench,
    },
    /// Measure quality on data sets (always an optimised build).
    Eval {
        #[command(subcommand)]
        eval: Eval,
    },
    /// Put a local embedding model's files in models/ (skips files already there).
    FetchModel(fetch_model::FetchModelArgs),
    /// CoMAM on LoCoMo: trajectories, rewards, credit, JSONL groups for a GRPO trainer,
    /// and a training-free choice of role configurations (always an optimised build).
    Comam(comam::ComamArgs),
    /// Run each fuzz target (cargo fuzz, no sanitizer) for N minutes or 10 million
    /// executions, and print executions, executions per second and crashes.
    Fuzz(fuzz::FuzzArgs),
    /// Check that crate dependencies follow the stack in DESIGN section 1.
    Tidy,
    /// The test command of README.md, run by CI: fetches the local model if missing, then
    /// runs every test of the workspace with every feature.
    Test,
}

#[derive(Subcommand, Debug)]
enum Bench {
    /// Admission cost of the compiled read filter.
    Access(bench_access::BenchAccessArgs),
    /// Embedding throughput: offline embedder; local model with --features local-model.
    Embed(bench_embed::BenchEmbedArgs),
    /// Batched inserts and filtered reads of the SQLite fragment store.
    Store(bench_store::BenchStoreArgs),
    /// Build time, memory, filtered recall and latency of the planned index search.
    Index(bench_index::BenchIndexArgs),
}

#[derive(Subcommand, Debug)]
enum Eval {
    /// Evidence recall of the AMA pipeline on LoCoMo, with a BM25 baseline and ablations.
    Locomo(eval_locomo::EvalLocomoArgs),
    /// The knowledge-update suite: current state, past state and forgetting.
    Updates(eval_updates::EvalUpdatesArgs),
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<ExitCode> {
    let cli = Cli::parse();
    let root = repo_root();
    match cli.command {
        Task::Scenario { name, json } => match name.as_str() {
            "access" => scenario_access::run(json)?,
            "cards" => scenario_cards::run(json)?,
            "fully-collaborative" => scenario_fully::run(&root, json)?,
            "asymmetric" => scenario_asymmetric::run(&root, json)?,
            "dynamic" => scenario_dynamic::run(&root, json)?,
            "scopes" => scenario_scopes::run(&root, json)?,
            "all" => {
                scenario_access::run(json)?;
                scenario_fully::run(&root, json)?;
                scenario_asymmetric::run(&root, json)?;
                scenario_dynamic::run(&root, json)?;
                scenario_scopes::run(&root, json)?;
                scenario_cards::run(json)?;
            }
            other => bail!(
                "unknown scenario {other:?}: try access, fully-collaborative, asymmetric, dynamic, scopes, cards or all"
            ),
        },
        Task::Bench { bench } => {
            if cfg!(debug_assertions) {
                return rerun_optimised();
            }
            match bench {
                Bench::Access(args) => bench_access::run(&args)?,
                Bench::Embed(args) => bench_embed::run(&args)?,
                Bench::Store(args) => bench_store::run(&args)?,
                Bench::Index(args) => bench_index::run(&args)?,
            }
        }
        Task::Eval { eval } => {
            if cfg!(debug_assertions) {
                return rerun_optimised();
            }
            match eval {
                Eval::Locomo(args) => eval_locomo::run(&args)?,
                Eval::Updates(args) => eval_updates::run(&args)?,
            }
        }
        Task::FetchModel(args) => fetch_model::run(&args)?,
        Task::Comam(args) => {
            if cfg!(debug_assertions) {
                return rerun_optimised();
            }
            comam::run(&args)?
        }
        Task::Fuzz(args) => fuzz::run(&root, &args)?,
        Task::Tidy => tidy::run(&root)?,
        Task::Test => return test(&root),
    }
    Ok(ExitCode::SUCCESS)
}

/// The repository root (the parent of `xtask/`).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Runs the same xtask command line again from an optimised build.
fn rerun_optimised() -> Result<ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut command = cargo();
    command.args(["run", "--quiet", "--release", "--package", "xtask"]);
    if cfg!(feature = "local-model") {
        command.args(["--features", "local-model"]);
    }
    let status = command
        .arg("--")
        .args(&args)
        .current_dir(repo_root())
        .status()
        .context("running the optimised build of xtask")?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn test(root: &Path) -> Result<ExitCode> {
    // What a fresh machine lacks: the local model the local-embedder test checks.
    fetch_model::run(&fetch_model::FetchModelArgs {
        model: fetch_model::ModelName::Minilm,
        dir: None,
    })?;
    let status = cargo()
        .args([
            "test",
            "--workspace",
            "--all-features",
            "--locked",
            "--no-fail-fast",
        ])
        .current_dir(root)
        .status()
        .context("running cargo test")?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
