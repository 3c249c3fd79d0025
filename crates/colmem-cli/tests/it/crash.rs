//! Crashes and full disks, against the real binary: `colmem import locomo` and
//! `colmem remember` killed with SIGKILL at seeded, uniformly drawn moments of their
//! run, and imports that run out of space part-way (a file-size limit, the store's
//! page limit). Every file is made up here: no text from a real data set.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Env, Output};

/// SIGKILLs that land in a run (runs that end before their drawn moment do not count).
const KILLS: usize = 100;
/// The seed of the kill moments, unless `COLMEM_CRASH_SEED` gives another.
const SEED: u64 = 0x00C0_FFEE_2026;
/// Turns in one killed import (one LoCoMo session) and lines in one killed remember.
const IMPORT_TURNS: u32 = 8;
const REMEMBER_TURNS: u32 = 4;
/// Unkilled runs of each kind timed before the kills.
const MEASURED_RUNS: usize = 3;

/// SplitMix64: the same draws for the same seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n.max(1)
    }
}

/// A data directory in memory (`/dev/shm`) where there is one, else a temporary one.
/// A SIGKILL loses nothing the kernel was given, synced or not (only a power cut
/// does), so a tmpfs tests the same crashes and spares the runs a loaded disk's syncs.
fn env_in_memory() -> Env {
    let shm = std::path::Path::new("/dev/shm");
    let tmp = tempfile::tempdir_in(shm)
        .or_else(|_| tempfile::tempdir())
        .unwrap();
    let mut env = Env::new();
    env.dir = tmp.path().join("data");
    env._tmp = tmp;
    env
}

/// The binary on `env`'s directory, as `Env::run_with` starts it.
fn command(env: &Env, args: &[String]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_colmem"));
    command
        .arg("--dir")
        .arg(&env.dir)
        .args(args)
        .env_remove("COLMEM_DIR")
        .env_remove("COLMEM_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in &env.vars {
        command.env(k, v);
    }
    command
}

fn spawn(mut command: Command, stdin: Option<&str>) -> Child {
    let mut child = command.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    if let Some(input) = stdin {
        // Smaller than a pipe holds: the write never waits for the child.
        pipe.write_all(input.as_bytes()).unwrap();
    }
    drop(pipe);
    child
}

fn finish(child: Child) -> Output {
    let out = child.wait_with_output().unwrap();
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// One LoCoMo session of `turns` turns between Ana and Ben, as a file of one
/// conversation (`sample_id`), each turn holding a word of its own (`zq{k}t{i}`).
fn locomo(sample_id: &str, sessions: &[u32], turns: u32) -> (String, Vec<(String, String)>) {
    let places = [
        "harbour", "orchard", "library", "market", "quarry", "bakery",
    ];
    let mut conversation = serde_json::Map::new();
    conversation.insert("speaker_a".into(), "Ana".into());
    conversation.insert("speaker_b".into(), "Ben".into());
    let mut tokens = Vec::new();
    for &k in sessions {
        let date = format!("10:00 am on {} May, 2023", 1 + k % 28);
        conversation.insert(format!("session_{k}_date_time"), date.into());
        let dialogue: Vec<Value> = (1..=turns)
            .map(|t| {
                let token = format!("zq{k}t{t}");
                let dia_id = format!("D{k}:{t}");
                let text = format!(
                    "On Sunday I walked to the {} with my cousin and we saw {token} there.",
                    places[(t as usize) % places.len()]
                );
                tokens.push((dia_id.clone(), token));
                serde_json::json!({
                    "speaker": if t % 2 == 1 { "Ana" } else { "Ben" },
                    "dia_id": dia_id,
                    "text": text,
                })
            })
            .collect();
        conversation.insert(format!("session_{k}"), dialogue.into());
    }
    let file = serde_json::json!([{"sample_id": sample_id, "conversation": conversation}]);
    (file.to_string(), tokens)
}

/// The stored raw turns: (id, content, user, first agent).
fn raw_turns(env: &Env) -> Vec<(u64, String, String, String)> {
    env.ok(&["export"])
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|f| f["granularity"] == "raw_turn" && f["deleted_at"].is_null())
        .map(|f| {
            (
                f["id"].as_u64().unwrap(),
                f["content"].as_str().unwrap().to_owned(),
                f["provenance"]["user"].as_str().unwrap().to_owned(),
                f["provenance"]["agents"][0].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The made-up words (`zq…`) of a text.
fn tokens_of(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.starts_with("zq"))
}

/// How many stored raw turns hold each made-up word.
fn token_counts(turns: &[(u64, String, String, String)]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for (_, content, _, _) in turns {
        for token in tokens_of(content) {
            *counts.entry(token.to_owned()).or_default() += 1;
        }
    }
    counts
}

/// After a crash or a failure: the audit chain verifies (the store opens read-only),
/// no turn is stored twice, every acknowledged turn is stored, and a recall (which
/// opens the store for writing and catches the index up) finds the newest stored turn.
fn check_store(env: &Env, acknowledged: &BTreeSet<String>, context: &str) {
    let verify = env.run(&["audit", "verify"]);
    assert!(
        verify.code == 0 && verify.stdout.starts_with("intact"),
        "{context}: audit verify: {verify:?}"
    );
    let turns = raw_turns(env);
    let counts = token_counts(&turns);
    for (token, n) in &counts {
        assert_eq!(
            *n, 1,
            "{context}: the turn with {token} is stored {n} times"
        );
    }
    for token in acknowledged {
        assert!(
            counts.contains_key(token),
            "{context}: the acknowledged turn with {token} is lost"
        );
    }
    let Some((id, content, user, agent)) = turns.iter().max_by_key(|t| t.0) else {
        return;
    };
    let token = tokens_of(content).next().unwrap();
    let recall = env.json(&[
        "recall", "--user", user, "--agent", agent, "--json", "-k", "10", token,
    ]);
    let found: Vec<u64> = recall["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_u64().unwrap())
        .collect();
    assert!(
        found.contains(id),
        "{context}: the index did not catch up: a recall of {token} misses the newest turn {id} (found {found:?})"
    );
}

/// Where in SQLite's write path a stopped process is, from the locks it holds on
/// the shared-memory file `colmem.db-shm` (as `/proc/locks` lists them): its byte
/// 120 is the WAL write lock, held from `BEGIN IMMEDIATE` to the end of the commit
/// or rollback (and by a truncating checkpoint, which also holds byte 121).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Landed {
    Outside,
    Transaction,
    Checkpoint,
}

fn landed(pid: u32, shm: &std::path::Path) -> Landed {
    let Ok(inode) = std::fs::metadata(shm).map(|m| m.ino()) else {
        return Landed::Outside;
    };
    let locks = std::fs::read_to_string("/proc/locks").unwrap();
    let mut held = BTreeSet::new();
    for line in locks.lines().filter(|l| !l.contains("->")) {
        // "1: POSIX  ADVISORY  WRITE 4242 fe:00:123456 120 120"
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 8 || fields[1] != "POSIX" || fields[3] != "WRITE" {
            continue;
        }
        let file_inode = fields[5].rsplit(':').next().unwrap_or("");
        if fields[4] == pid.to_string() && file_inode == inode.to_string() {
            held.insert(fields[6].to_owned());
        }
    }
    match (held.contains("120"), held.contains("121")) {
        (_, true) => Landed::Checkpoint,
        (true, false) => Landed::Transaction,
        (false, false) => Landed::Outside,
    }
}

/// Stops the child (SIGSTOP), so that what it holds is what it holds when killed.
#[allow(unsafe_code)]
fn stop(child: &Child) {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: `kill` has no memory effects; the child is not yet reaped, so its pid
    // still names it.
    let done = unsafe { libc::kill(pid, libc::SIGSTOP) };
    assert_eq!(done, 0, "{}", std::io::Error::last_os_error());
}

/// One run to kill: the command, its standard input, the made-up words of its turns.
struct Job {
    args: Vec<String>,
    stdin: Option<String>,
    tokens: Vec<String>,
}

fn import_job(env: &Env, k: u32, grant: bool) -> Job {
    let (text, tokens) = locomo("crash", &[k], IMPORT_TURNS);
    let file = env.path(&format!("session-{k}.json"));
    std::fs::write(&file, text).unwrap();
    let mut args: Vec<String> = ["import", "locomo", file.to_str().unwrap()]
        .map(String::from)
        .to_vec();
    if grant {
        args.push("--grant".into());
    }
    Job {
        args,
        stdin: None,
        tokens: tokens.into_iter().map(|(_, t)| t).collect(),
    }
}

fn remember_job(k: u32) -> Job {
    let tokens: Vec<String> = (1..=REMEMBER_TURNS).map(|t| format!("zq{k}t{t}")).collect();
    let lines: String = tokens
        .iter()
        .map(|t| format!("My neighbour lent me a ladder called {t} for the roof.\n"))
        .collect();
    let args = [
        "remember",
        "--user",
        "rem",
        "--agent",
        "helper",
        "--idempotency-key",
        &format!("crash-{k}"),
    ]
    .map(String::from)
    .to_vec();
    Job {
        args,
        stdin: Some(lines),
        tokens,
    }
}

/// Run `k`: an import (`which` 0) or a remember (1).
fn job(env: &Env, which: usize, k: u32, grant: bool) -> Job {
    if which == 0 {
        import_job(env, k, grant)
    } else {
        remember_job(k)
    }
}

/// Runs `job` to the end; it must succeed.
fn complete(env: &Env, job: &Job, what: &str) -> Duration {
    let start = Instant::now();
    let out = finish(spawn(command(env, &job.args), job.stdin.as_deref()));
    let took = start.elapsed();
    assert_eq!(out.code, 0, "{what}: {:?}: {out:?}", job.args);
    took
}

/// The SIGKILL test: import and remember alternate, each killed at a moment drawn
/// uniformly over the time an unkilled run of it took. After each kill the store is
/// checked ([`check_store`]), then the killed command is run again as a client would
/// retry it (same file, same idempotency key): it must succeed, and its turns are then
/// acknowledged. At the end every turn is stored exactly once.
///
/// A kill lands inside a transaction when the process, stopped just before the kill,
/// holds SQLite's WAL write lock ([`landed`]); the count is printed, as is the count
/// of kills that left a non-empty write-ahead log for the next open to recover.
#[test]
fn killed_imports_and_remembers_lose_no_acknowledged_turn() {
    let started = Instant::now();
    let seed = std::env::var("COLMEM_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    let mut rng = Rng(seed);
    let env = env_in_memory();
    env.ok(&["init"]);
    // Principals and grants first, so an import needs no grant of its own.
    for args in [
        &["principal", "add", "user", "crash"][..],
        &["principal", "add", "agent", "assistant"],
        &["grant", "invoke", "--user", "crash", "--agent", "assistant"],
        &["principal", "add", "user", "rem"],
        &["principal", "add", "agent", "helper"],
        &["grant", "invoke", "--user", "rem", "--agent", "helper"],
    ] {
        env.ok(args);
    }
    let grant = env.ok(&["import", "locomo", "--help"]).contains("--grant");
    let mut acknowledged = BTreeSet::new();
    let mut attempted = BTreeSet::new();
    // The unkilled runs whose time the kill moments are drawn over: the longest of a
    // few, so that the draws cover a whole run on a machine whose load changes.
    let mut k = 0;
    let mut durations = [Duration::ZERO; 2];
    for _ in 0..MEASURED_RUNS {
        for (which, duration) in durations.iter_mut().enumerate() {
            let job = job(&env, which, k, grant);
            k += 1;
            *duration = (*duration).max(complete(&env, &job, "an unkilled run"));
            acknowledged.extend(job.tokens.iter().cloned());
            attempted.extend(job.tokens.iter().cloned());
        }
    }
    let shm = env.dir.join("colmem.db-shm");
    let wal = env.dir.join("colmem.db-wal");
    let (mut kills, mut runs, mut finished) = ([0usize; 2], 0usize, 0usize);
    let (mut in_transaction, mut in_checkpoint, mut hot_wal) = (0, 0, 0);
    while kills.iter().sum::<usize>() < KILLS {
        assert!(
            runs < 4 * KILLS,
            "seed {seed}: {runs} runs, only {kills:?} killed: runs keep ending before their moment"
        );
        let which = runs % 2;
        runs += 1;
        let job = job(&env, which, k, grant);
        k += 1;
        attempted.extend(job.tokens.iter().cloned());
        let span = durations[which].as_nanos().try_into().unwrap_or(u64::MAX);
        let delay = Duration::from_nanos(rng.below(span));
        let mut child = spawn(command(&env, &job.args), job.stdin.as_deref());
        std::thread::sleep(delay);
        let context = format!(
            "seed {seed}, run {runs} ({:?}, killed at {delay:?})",
            job.args[0]
        );
        if child.try_wait().unwrap().is_some() {
            // It ended before its moment: its receipt acknowledges its turns.
            let out = finish(child);
            assert_eq!(out.code, 0, "{context}: {out:?}");
            finished += 1;
            acknowledged.extend(job.tokens.iter().cloned());
            continue;
        }
        stop(&child);
        match landed(child.id(), &shm) {
            Landed::Transaction => in_transaction += 1,
            Landed::Checkpoint => in_checkpoint += 1,
            Landed::Outside => {}
        }
        child.kill().unwrap();
        child.wait().unwrap();
        kills[which] += 1;
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
            hot_wal += 1;
        }
        check_store(&env, &acknowledged, &context);
        // The client retries: the same file, the same key.
        complete(&env, &job, &format!("{context}: the retry"));
        acknowledged.extend(job.tokens.iter().cloned());
    }
    check_store(&env, &acknowledged, &format!("seed {seed}: at the end"));
    assert_eq!(acknowledged, attempted, "every run was retried to the end");
    let stored = token_counts(&raw_turns(&env));
    assert_eq!(
        stored.keys().cloned().collect::<BTreeSet<_>>(),
        attempted,
        "seed {seed}: every turn is stored, once"
    );
    eprintln!(
        "crash test (seed {seed}): {} SIGKILLs ({} of `import locomo`, {} of `remember`), {in_transaction} inside a write transaction (WAL write lock held), {in_checkpoint} inside a checkpoint, {hot_wal} left a non-empty write-ahead log; {finished} runs ended before their drawn moment; unkilled runs took {:?} (import of {IMPORT_TURNS} turns) and {:?} (remember of {REMEMBER_TURNS}); {} turns stored once each; {:?} in all",
        kills[0] + kills[1],
        kills[0],
        kills[1],
        durations[0],
        durations[1],
        stored.len(),
        started.elapsed(),
    );
}

/// A file-size limit for the child (`RLIMIT_FSIZE`), with SIGXFSZ ignored so that a
/// write past it fails with `EFBIG` instead of killing the process.
#[allow(unsafe_code)]
fn limit_file_size(command: &mut Command, bytes: u64) {
    let limit = libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    };
    // SAFETY: the closure runs in the forked child before exec; it only makes two
    // async-signal-safe system calls and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0
                || libc::signal(libc::SIGXFSZ, libc::SIG_IGN) == libc::SIG_ERR
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A directory where `full` may invoke `assistant`, and a LoCoMo file of 160 turns.
fn full_disk_setup() -> (Env, String, Vec<(String, String)>) {
    let env = env_in_memory();
    env.ok(&["init"]);
    env.ok(&["principal", "add", "user", "full"]);
    env.ok(&["principal", "add", "agent", "assistant"]);
    env.ok(&["grant", "invoke", "--user", "full", "--agent", "assistant"]);
    let (text, turns) = locomo("full", &[1, 2], 80);
    let file = env.path("full.json");
    std::fs::write(&file, text).unwrap();
    (env, file.to_str().unwrap().to_owned(), turns)
}

fn import_args(env: &Env, file: &str) -> Vec<String> {
    let mut args: Vec<String> = ["import", "locomo", file].map(String::from).to_vec();
    if env.ok(&["import", "locomo", "--help"]).contains("--grant") {
        args.push("--grant".into());
    }
    args
}

/// An import that ran out of space part-way: exit 8 with a message that says what to
/// do (`hint`), every turn before the one it names stored, the store whole; run again
/// with room, it stores every turn exactly once.
fn check_full_import(env: &Env, out: &Output, file: &str, turns: &[(String, String)], hint: &str) {
    assert_eq!(out.code, 8, "{out:?}");
    assert!(
        out.stderr.starts_with("error: ") && out.stderr.contains(hint),
        "{out:?}"
    );
    assert!(
        out.stderr.contains("running the import again skips them"),
        "{out:?}"
    );
    // "importing turn D1:12 of conversation full": the turns before it are acknowledged.
    let failed = out
        .stderr
        .split("importing turn ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no turn named: {out:?}"));
    let at = turns
        .iter()
        .position(|(id, _)| id == failed)
        .unwrap_or_else(|| panic!("{failed} is not a turn of the file"));
    assert!(
        at > 0,
        "not one turn fitted: the test's limit is too tight ({out:?})"
    );
    let acknowledged: BTreeSet<String> = turns[..at].iter().map(|(_, t)| t.clone()).collect();
    check_store(env, &acknowledged, &format!("after {hint}"));
    // Run again with room: every turn, once.
    let again = env.run(
        &import_args(env, file)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(again.code, 0, "{again:?}");
    let all: BTreeSet<String> = turns.iter().map(|(_, t)| t.clone()).collect();
    check_store(env, &all, "the import run again");
    let stored = token_counts(&raw_turns(env));
    assert_eq!(stored.keys().cloned().collect::<BTreeSet<_>>(), all);
}

#[test]
fn an_import_past_the_file_size_limit_exits_8_and_loses_no_acknowledged_turn() {
    let (env, file, turns) = full_disk_setup();
    // The write-ahead log grows by several 8 KiB pages a turn: a few turns fit in
    // 1 MiB, never 160.
    let mut command = command(&env, &import_args(&env, &file));
    limit_file_size(&mut command, 1 << 20);
    let out = finish(spawn(command, None));
    eprintln!("past the file-size limit: {}", out.stderr.trim());
    check_full_import(&env, &out, &file, &turns, "file-size limit (ulimit -f)");
}

#[test]
fn an_import_past_the_page_limit_exits_8_and_loses_no_acknowledged_turn() {
    let (mut env, file, turns) = full_disk_setup();
    let pages: i64 = rusqlite::Connection::open(env.dir.join("colmem.db"))
        .unwrap()
        .query_row("PRAGMA page_count", [], |row| row.get(0))
        .unwrap();
    // A few turns fit in 24 more pages, never 160.
    env.vars
        .push(("COLMEM_STORE__MAX_PAGES".into(), (pages + 24).to_string()));
    let out = env.run(
        &import_args(&env, &file)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    eprintln!("past the page limit: {}", out.stderr.trim());
    env.vars.pop();
    check_full_import(&env, &out, &file, &turns, "max_pages");
}
