//! `cargo xtask fuzz`: runs each fuzz target of `fuzz/` (cargo fuzz, libFuzzer,
//! without a sanitizer: the pinned stable toolchain cannot build one) for a while, and
//! prints what it did. The test below replays every committed corpus file through
//! the same functions, so CI needs no fuzzer.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;

/// Executions after which a target stops, if its time has not run out first.
const MAX_RUNS: u64 = 10_000_000;

/// The targets, in the order they run: one per parser of untrusted input.
const TARGETS: [&str; 8] = [
    "locomo",
    "trajectories",
    "config",
    "time",
    "names",
    "redact",
    "codec",
    "snapshot",
];

#[derive(Args, Debug)]
pub struct FuzzArgs {
    /// Minutes per target (each stops sooner at 10 million executions).
    #[arg(long, default_value_t = 1.0)]
    minutes: f64,
    /// Run only this target.
    #[arg(long)]
    target: Option<String>,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

/// What one target's run did.
#[derive(Serialize, Debug, PartialEq)]
struct Run {
    target: String,
    executions: u64,
    execs_per_second: u64,
    seconds: u64,
    crashes: usize,
    /// Where the inputs that crashed were written.
    artifacts: Vec<PathBuf>,
}

/// `cargo xtask fuzz`.
pub fn run(root: &Path, args: &FuzzArgs) -> Result<()> {
    if args.minutes.is_nan() || args.minutes <= 0.0 || args.minutes.is_infinite() {
        bail!("--minutes must be a positive number of minutes");
    }
    let targets: Vec<&str> = match &args.target {
        Some(t) if TARGETS.contains(&t.as_str()) => vec![t.as_str()],
        Some(t) => bail!(
            "no fuzz target is named {t:?}: try one of {}",
            TARGETS.join(", ")
        ),
        None => TARGETS.to_vec(),
    };
    install_cargo_fuzz()?;
    // `cargo fuzz build` takes one target, or none for all.
    let status = cargo_fuzz(root)
        .args(["build", "-s", "none"])
        .args(args.target.as_deref())
        .status()
        .context("building the fuzz targets")?;
    if !status.success() {
        bail!("cargo fuzz build failed");
    }
    let seconds = (args.minutes * 60.0).round().max(1.0) as u64;
    let mut runs = Vec::new();
    for target in targets {
        eprintln!("fuzz: {target} for up to {seconds} s or {MAX_RUNS} executions");
        runs.push(run_target(root, target, seconds)?);
    }
    print_table(&runs);
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&serde_json::json!({ "fuzz": runs }))?
        );
    }
    let crashed: usize = runs.iter().map(|r| r.crashes).sum();
    if crashed > 0 {
        bail!(
            "{crashed} crash(es): the inputs are listed above; add each to fuzz/corpus/<target>/ once fixed"
        );
    }
    Ok(())
}

fn cargo_fuzz(root: &Path) -> Command {
    let mut command = crate::cargo();
    command.arg("fuzz").current_dir(root);
    command
}

/// Installs cargo-fuzz from crates.io when `cargo fuzz` is missing.
fn install_cargo_fuzz() -> Result<()> {
    let present = crate::cargo()
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if present {
        return Ok(());
    }
    eprintln!("fuzz: installing cargo-fuzz");
    let status = crate::cargo()
        .args(["install", "cargo-fuzz", "--locked"])
        .status()
        .context("running cargo install cargo-fuzz")?;
    if !status.success() {
        bail!("cargo install cargo-fuzz --locked failed");
    }
    Ok(())
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn run_target(root: &Path, target: &str, seconds: u64) -> Result<Run> {
    let fuzz = root.join("fuzz");
    // New inputs go to a scratch corpus; the committed one is only read.
    let scratch = fuzz.join("target/corpus").join(target);
    let artifacts = fuzz.join("artifacts").join(target);
    for dir in [&scratch, &artifacts] {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let before = files_in(&artifacts);
    let log_path = fuzz.join("target").join(format!("{target}.log"));
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    let started = Instant::now();
    let status = cargo_fuzz(root)
        .args(["run", "-s", "none", target])
        .arg(&scratch)
        .arg(fuzz.join("corpus").join(target))
        .arg("--")
        .arg(format!("-runs={MAX_RUNS}"))
        .arg(format!("-max_total_time={seconds}"))
        .arg("-timeout=30")
        .arg("-print_final_stats=1")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .stdout(log.try_clone()?)
        .stderr(log)
        .status()
        .with_context(|| format!("running cargo fuzz run {target}"))?;
    let elapsed = started.elapsed();
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    let found: Vec<PathBuf> = files_in(&artifacts)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    let mut run = summarise(target, &text, elapsed);
    run.crashes = found.len();
    if !status.success() && found.is_empty() {
        bail!(
            "cargo fuzz run {target} failed without writing a crashing input: see {}",
            log_path.display()
        );
    }
    run.artifacts = found;
    Ok(run)
}

/// Executions and their rate from libFuzzer's output: its final statistics, else its
/// last status line (`#N … exec/s: R …`).
fn summarise(target: &str, log: &str, elapsed: Duration) -> Run {
    let stat = |name: &str| {
        log.lines()
            .filter_map(|l| l.strip_prefix(name))
            .filter_map(|rest| rest.trim().parse::<u64>().ok())
            .next_back()
    };
    let last_status = log
        .lines()
        .filter(|l| l.starts_with('#'))
        .filter_map(|l| {
            let runs = l[1..].split_whitespace().next()?.parse::<u64>().ok()?;
            let rate = l
                .split("exec/s: ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(|r| r.parse::<u64>().ok())
                .unwrap_or(0);
            Some((runs, rate))
        })
        .next_back();
    let executions = stat("stat::number_of_executed_units:")
        .or(last_status.map(|s| s.0))
        .unwrap_or(0);
    let execs_per_second = stat("stat::average_exec_per_sec:")
        .or(last_status.map(|s| s.1))
        .unwrap_or(0);
    Run {
        target: target.to_owned(),
        executions,
        execs_per_second,
        seconds: elapsed.as_secs(),
        crashes: 0,
        artifacts: Vec::new(),
    }
}

fn print_table(runs: &[Run]) {
    println!(
        "{:<14} {:>12} {:>9} {:>8} {:>8} {:>9}",
        "target", "executions", "exec/s", "seconds", "crashes", "10M"
    );
    for r in runs {
        println!(
            "{:<14} {:>12} {:>9} {:>8} {:>8} {:>9}",
            r.target,
            r.executions,
            r.execs_per_second,
            r.seconds,
            r.crashes,
            if r.executions >= MAX_RUNS {
                "reached"
            } else {
                "not yet"
            }
        );
        for a in &r.artifacts {
            println!("  crashing input: {}", a.display());
        }
    }
}

/// The fuzz targets' functions, compiled here for the corpus test.
#[cfg(test)]
#[path = "../../fuzz/src/lib.rs"]
mod harness;

#[cfg(test)]
mod tests {
    use super::*;

    fn fuzz_dir() -> PathBuf {
        crate::repo_root().join("fuzz")
    }

    #[test]
    fn the_target_lists_agree() {
        let harness: Vec<&str> = harness::TARGETS.iter().map(|(n, _)| *n).collect();
        assert_eq!(harness, TARGETS, "xtask runs every target of the harness");
        let mut built: Vec<String> = files_in(&fuzz_dir().join("fuzz_targets"))
            .iter()
            .filter_map(|p| p.file_stem()?.to_str().map(str::to_owned))
            .collect();
        built.sort();
        let mut expected: Vec<String> = TARGETS.iter().map(|t| (*t).to_owned()).collect();
        expected.sort();
        assert_eq!(built, expected, "one file in fuzz/fuzz_targets per target");
    }

    /// Every committed corpus file, through the function its target calls: a crash
    /// found once stays fixed.
    #[test]
    fn every_corpus_file_replays_without_a_crash() {
        let mut total = 0u64;
        for (target, run) in harness::TARGETS {
            let files = files_in(&fuzz_dir().join("corpus").join(target));
            assert!(!files.is_empty(), "fuzz/corpus/{target} holds no seed");
            for file in files {
                let bytes = std::fs::read(&file).unwrap();
                total += bytes.len() as u64;
                run(&bytes);
            }
        }
        assert!(
            total <= 20 << 20,
            "the corpora hold {total} bytes, over 20 MB"
        );
    }

    #[test]
    fn statistics_are_read_from_libfuzzer_output() {
        let log = "#2\tINITED cov: 10 ft: 10 corp: 1/1b exec/s: 0 rss: 30Mb\n\
                   #524288\tpulse  cov: 90 ft: 200 corp: 30/1Kb lim: 4 exec/s: 17476 rss: 40Mb\n\
                   Done 600000 runs in 31 second(s)\n\
                   stat::number_of_executed_units: 600000\n\
                   stat::average_exec_per_sec:     19354\n";
        let run = summarise("time", log, Duration::from_secs(31));
        assert_eq!((run.executions, run.execs_per_second), (600_000, 19_354));
        // A crash ends the run before the final statistics.
        let crashed = "#1024\tNEW    cov: 50 ft: 60 corp: 9/90b exec/s: 512 rss: 31Mb\n\
                       thread '<unnamed>' panicked at src/lib.rs:1:1\n==1== ERROR: libFuzzer: deadly signal\n";
        let run = summarise("time", crashed, Duration::from_secs(2));
        assert_eq!((run.executions, run.execs_per_second), (1024, 512));
    }
}
