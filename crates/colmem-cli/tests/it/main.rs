//! Runs the real `colmem` binary against temporary data directories: every
//! command, forbidden reads, the second-writer lock, and bad input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

#[cfg(target_os = "linux")]
mod crash;
mod erasure;
mod explain;
mod import;
mod limits;
#[cfg(unix)]
mod private_files;
mod safe_output;

/// What one run of the binary did.
#[derive(Debug)]
struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

/// A data directory and the environment the binary runs in.
struct Env {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    vars: Vec<(String, String)>,
    /// The umask commands run under (set by a shell), else the test process's.
    umask: Option<&'static str>,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        Env {
            _tmp: tmp,
            dir,
            vars: Vec::new(),
            umask: None,
        }
    }

    /// A fresh directory with alice served by helper (and an agent she may not invoke).
    fn with_alice() -> Env {
        let env = Env::new();
        env.ok(&["init"]);
        env.ok(&["principal", "add", "user", "alice"]);
        env.ok(&["principal", "add", "user", "bob"]);
        env.ok(&["principal", "add", "agent", "helper"]);
        env.ok(&["principal", "add", "agent", "outsider"]);
        env.ok(&["grant", "invoke", "--user", "alice", "--agent", "helper"]);
        env
    }

    fn path(&self, name: &str) -> PathBuf {
        self._tmp.path().join(name)
    }

    fn run_with(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut command = match self.umask {
            Some(umask) => {
                let mut shell = Command::new("sh");
                shell
                    .arg("-c")
                    .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
                    .arg(env!("CARGO_BIN_EXE_colmem"));
                shell
            }
            None => Command::new(env!("CARGO_BIN_EXE_colmem")),
        };
        command
            .arg("--dir")
            .arg(&self.dir)
            .args(args)
            .env_remove("COLMEM_DIR")
            .env_remove("COLMEM_CONFIG")
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &self.vars {
            command.env(k, v);
        }
        let mut child = command.spawn().unwrap();
        if let Some(input) = stdin {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
        }
        let out = child.wait_with_output().unwrap();
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, None)
    }

    /// Runs and expects success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(out.code, 0, "colmem {args:?} failed: {out:?}");
        out.stdout
    }

    /// Runs and expects exit code `code`; returns stderr.
    fn fails(&self, args: &[&str], code: i32) -> String {
        let out = self.run(args);
        assert_eq!(out.code, code, "colmem {args:?}: {out:?}");
        assert!(out.stderr.starts_with("error: "), "{out:?}");
        out.stderr
    }

    /// alice tells helper `text`; returns stdout.
    fn alice_tells_helper(&self, text: &str) -> String {
        self.ok(&["remember", "--user", "alice", "--agent", "helper", text])
    }

    /// A run killed after remembering `turn` under `key` as `user` served by `agent`:
    /// the turn is stored, its open episode dies with the memory.
    fn killed_after(&self, user: &str, agent: &str, turn: &colmem::TurnInput, key: &str) {
        let memory = colmem::Memory::open(&self.dir, colmem::Config::default()).unwrap();
        let done = memory
            .session(
                colmem::UserId::new(user).unwrap(),
                colmem::AgentId::new(agent).unwrap(),
            )
            .unwrap()
            .remember_keyed(turn, Some(key))
            .unwrap();
        assert!(!done.written.is_empty());
    }

    /// The turns of each exported episode.
    fn episode_turns(&self) -> Vec<Vec<String>> {
        self.ok(&["export"])
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|f| f["granularity"] == "episode")
            .map(|f| serde_json::from_value(f["provenance"]["source"]["turns"].clone()).unwrap())
            .collect()
    }

    fn json(&self, args: &[&str]) -> Value {
        let stdout = self.ok(args);
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    }
}

/// A reader that goes away (`colmem export | head -1`) ends the command quietly, with
/// success: no panic, no error. The output is larger than a pipe holds, so the command
/// must meet the closed pipe.
#[test]
fn a_reader_that_goes_away_ends_the_command_quietly() {
    let env = Env::with_alice();
    let lines: String = (0..300)
        .map(|i| format!("Day {i}: I repotted the basil and the tomatoes on the balcony.\n"))
        .collect();
    let out = env.run_with(
        &["remember", "--user", "alice", "--agent", "helper"],
        Some(&lines),
    );
    assert_eq!(out.code, 0, "{out:?}");
    // `export` writes through its own buffer, the other commands through `output::text`;
    // both end in `exit::closed_pipe`.
    assert!(
        env.ok(&["export"]).len() > 1 << 16,
        "the export writes more than a pipe holds"
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_colmem"))
        .arg("--dir")
        .arg(&env.dir)
        .arg("export")
        .env_remove("COLMEM_DIR")
        .env_remove("COLMEM_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(done.status.code(), Some(0), "{stderr}");
}

fn recall_contents(env: &Env, user: &str, agent: &str, query: &str) -> Vec<String> {
    let value = env.json(&["recall", "--user", user, "--agent", agent, "--json", query]);
    value["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["content"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn init_is_idempotent_and_writes_a_commented_configuration() {
    let env = Env::new();
    assert!(env.ok(&["init"]).contains("initialised"));
    assert!(env.ok(&["init"]).contains("already"));
    let config = std::fs::read_to_string(env.dir.join("colmem.toml")).unwrap();
    assert!(config.contains("# [embedder]"), "{config}");
    assert!(env.dir.join("colmem.db").is_file());
}

#[test]
fn a_keyed_remember_run_twice_writes_once() {
    let env = Env::with_alice();
    let args = [
        "remember",
        "--user",
        "alice",
        "--agent",
        "helper",
        "--idempotency-key",
        "req-7",
        "--json",
        "I moved to Porto and I work at Initech.",
    ];
    let first = env.json(&args);
    assert_eq!(first["replayed"], false, "{first}");
    let written = first["written"].as_array().unwrap().clone();
    assert!(!written.is_empty(), "{first}");
    let count = |env: &Env| {
        env.json(&[
            "recall",
            "--user",
            "alice",
            "--agent",
            "helper",
            "--json",
            "-k",
            "50",
            "Porto Initech",
        ])["hits"]
            .as_array()
            .unwrap()
            .len()
    };
    let before = count(&env);
    let again = env.json(&args);
    assert_eq!(again["replayed"], true, "{again}");
    assert_eq!(count(&env), before, "a replay writes nothing");
    // The replay names the fragments of the turn, not of the episode it closed.
    for id in again["written"].as_array().unwrap() {
        assert!(written.contains(id), "{again} vs {first}");
    }
    // As text, a replay says so and writes nothing.
    let text_args: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
    let out = env.ok(&text_args);
    assert!(
        out.contains("replayed 1 turn(s)") && out.contains("nothing written"),
        "{out}"
    );
    // Other words under the key are refused, not lost behind a replay.
    let mut other = text_args.clone();
    *other.last_mut().unwrap() = "I moved to Lisbon.";
    let err = env.fails(&other, 6);
    assert!(err.contains("req-7") && err.contains("fresh key"), "{err}");
    // It names the key as given and the turn that differs, not the key of the turn.
    assert!(
        !err.contains("req-7#") && err.contains("turn 1 of 1"),
        "{err}"
    );
    assert_eq!(count(&env), before);
    // An empty key is no key.
    let mut empty_key = text_args.clone();
    empty_key[6] = "";
    env.fails(&empty_key, 2);
}

#[test]
fn a_keyed_remember_run_again_after_a_kill_summarises_every_line() {
    let env = Env::with_alice();
    // A run of two lines under key k, killed after the first.
    let turn = colmem::TurnInput {
        dialogue_id: "cli:k#1".into(),
        session: "cli".into(),
        speaker: "alice".into(),
        listener: "helper".into(),
        text: "I adopted a greyhound called Juno.".into(),
        time: None,
        origin: colmem::Origin::User,
    };
    env.killed_after("alice", "helper", &turn, "k#1");
    let input = "I adopted a greyhound called Juno.\nJuno sleeps on the sofa all day.\n";
    let args: Vec<&str> = "remember --user alice --agent helper --idempotency-key k"
        .split(' ')
        .collect();
    let out = env.run_with(&args, Some(input));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(env.episode_turns(), [["cli:k#1", "cli:k#2"]]);
}

#[test]
fn remember_writes_every_line_or_none() {
    let env = Env::with_alice();
    let recalled = |env: &Env| recall_contents(env, "alice", "helper", "line fine three").len();
    let before = recalled(&env);
    // Blank words are nothing to remember.
    for blank in ["", "   "] {
        let err = env.fails(
            &["remember", "--user", "alice", "--agent", "helper", blank],
            3,
        );
        assert!(err.contains("nothing to remember"), "{err}");
    }
    // One line over the limit: none is written, and the message says so.
    let input = format!("line one is fine\n{}\nline three\n", "x".repeat(70_000));
    let out = env.run_with(
        &["remember", "--user", "alice", "--agent", "helper"],
        Some(&input),
    );
    assert_eq!(out.code, 3, "{out:?}");
    assert!(
        out.stderr.contains("turn 2 of 3") && out.stderr.contains("nothing was remembered"),
        "{out:?}"
    );
    assert_eq!(recalled(&env), before);
}

#[test]
fn remember_then_recall_as_a_table_and_as_json() {
    let env = Env::with_alice();
    let out = env.alice_tells_helper("My favourite food is ramen and I live in Lisbon.");
    assert!(out.contains("fragment(s) written"), "{out}");
    let stdin = "I adopted a dog named Pixel last spring.\n\nMy sister works as a nurse.\n";
    let out = env.run_with(
        &[
            "remember", "--user", "alice", "--agent", "helper", "--json", "-",
        ],
        Some(stdin),
    );
    assert_eq!(out.code, 0, "{out:?}");
    let written: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(written["turns"], 2, "blank lines are skipped: {written}");
    assert!(!written["written"].as_array().unwrap().is_empty());

    let table = env.ok(&[
        "recall", "--user", "alice", "--agent", "helper", "what", "food", "does", "alice", "like",
    ]);
    assert!(table.starts_with("ID"), "{table}");
    assert!(table.contains("ramen"), "{table}");
    let contents = recall_contents(&env, "alice", "helper", "dog named Pixel");
    assert!(contents.iter().any(|c| c.contains("Pixel")), "{contents:?}");
    let value = env.json(&[
        "recall", "--user", "alice", "--agent", "helper", "--json", "-k", "1", "ramen",
    ]);
    assert_eq!(value["hits"][0]["user"], "alice", "{value}");
    assert!(
        value["hits"][0]["content"]
            .as_str()
            .unwrap()
            .contains("ramen")
    );
}

/// Full mode: the answer is the current state, a past world time answers with the
/// past one, a question the evidence does not hold gets none, and the read is audited
/// and refused as a recall is.
#[test]
fn answer_gives_the_current_state_and_says_when_nothing_answers() {
    let env = Env::with_alice();
    let ask = |extra: &[&str], question: &str| {
        let mut args = vec!["answer", "--user", "alice", "--agent", "helper"];
        args.extend_from_slice(extra);
        args.push(question);
        env.ok(&args)
    };
    for (said_at, text) in [
        ("2023-01-10", "I live in Porto."),
        ("2023-06-02", "I moved to Lisbon last week."),
    ] {
        env.ok(&[
            "remember",
            "--user",
            "alice",
            "--agent",
            "helper",
            "--said-at",
            said_at,
            text,
        ]);
    }
    let now = ask(&[], "Which city does alice live in now?");
    let first = now.lines().next().unwrap();
    assert!(
        first.contains("Lisbon") && !first.contains("Porto"),
        "{now}"
    );
    assert!(now.contains("drawn from: "), "{now}");
    assert!(now.contains("evidence read:"), "{now}");
    let then = ask(
        &["--world-as-of", "2023-03-01"],
        "Which city does alice live in?",
    );
    assert!(then.lines().next().unwrap().contains("Porto"), "{then}");
    let none = ask(&[], "What is the capital of Peru?");
    assert!(none.starts_with("no answer: "), "{none}");

    let value = env.json(&[
        "answer",
        "--user",
        "alice",
        "--agent",
        "helper",
        "--json",
        "Which city does alice live in now?",
    ]);
    assert!(
        value["answer"].as_str().unwrap().contains("Lisbon"),
        "{value}"
    );
    let drawn = value["drawn_from"][0].as_u64().unwrap();
    assert!(
        value["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["id"] == drawn),
        "{value}"
    );
    let tail = env.ok(&["audit", "tail", "-n", "1"]);
    assert!(
        tail.contains("read") && tail.contains(&drawn.to_string()),
        "{tail}"
    );

    // The history of where alice lives: Porto, replaced by Lisbon.
    let key = value["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == drawn)
        .unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(key, "alice/home");
    let history = env.json(&[
        "history", "--user", "alice", "--agent", "helper", "--json", &key,
    ]);
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2, "{history}");
    assert!(
        versions[0]["content"].as_str().unwrap().contains("Porto"),
        "{history}"
    );
    assert_eq!(versions[0]["superseded_by"], versions[1]["id"], "{history}");
    assert_eq!(
        versions[0]["valid_until"], versions[1]["valid_from"],
        "{history}"
    );
    let table = env.ok(&["history", "--user", "alice", "--agent", "helper", &key]);
    assert!(
        table.starts_with("ID") && table.contains("Lisbon"),
        "{table}"
    );
    env.fails(&["history", "--user", "bob", "--agent", "helper", &key], 5);

    env.fails(
        &[
            "answer",
            "--user",
            "alice",
            "--agent",
            "outsider",
            "where does alice live",
        ],
        5,
    );
    env.fails(
        &[
            "answer", "--user", "alice", "--agent", "helper", "-k", "0", "where",
        ],
        3,
    );
}

#[test]
fn a_forbidden_recall_exits_5_and_a_revocation_takes_effect_on_the_next_read() {
    let env = Env::with_alice();
    env.alice_tells_helper("My passport number is in the blue drawer.");
    let err = env.fails(
        &[
            "recall", "--user", "alice", "--agent", "outsider", "passport",
        ],
        5,
    );
    assert!(
        err.contains("forbidden") && err.contains("outsider"),
        "{err}"
    );
    let err = env.fails(
        &[
            "remember",
            "--user",
            "bob",
            "--agent",
            "helper",
            "hello there",
        ],
        5,
    );
    assert!(err.contains("ask an administrator"), "{err}");
    assert!(!recall_contents(&env, "alice", "helper", "passport").is_empty());
    // A revocation dated ahead is scheduled, and says so: the edge holds until then.
    let out = env.ok(&[
        "revoke",
        "invoke",
        "--user",
        "alice",
        "--agent",
        "helper",
        "--at",
        "2999-01-01",
    ]);
    assert!(
        out.starts_with("scheduled:") && out.contains("2999"),
        "{out}"
    );
    assert!(!recall_contents(&env, "alice", "helper", "passport").is_empty());
    let out = env.ok(&["revoke", "invoke", "--user", "alice", "--agent", "helper"]);
    assert!(out.starts_with("revoked"), "{out}");
    env.fails(
        &["recall", "--user", "alice", "--agent", "helper", "passport"],
        5,
    );
}

/// A clock that once ran ahead blocks no revocation: now is held at the last
/// record, and the revocation, dated there, takes effect on the next read.
#[test]
fn a_revocation_after_the_clock_ran_ahead_takes_effect_at_once() {
    let mut env = Env::with_alice();
    env.alice_tells_helper("My passport is in the blue drawer.");
    env.vars
        .push(("COLMEM_CLOCK__KIND".into(), "logical".into()));
    env.vars
        .push(("COLMEM_CLOCK__START".into(), "2099-06-01".into()));
    env.ok(&["grant", "invoke", "--user", "bob", "--agent", "helper"]);
    env.vars.clear();
    // Back on the system clock, decades earlier.
    let out = env.ok(&["revoke", "invoke", "--user", "alice", "--agent", "helper"]);
    assert!(
        out.starts_with("revoked") && out.contains("2099-06-01"),
        "{out}"
    );
    env.fails(
        &["recall", "--user", "alice", "--agent", "helper", "passport"],
        5,
    );
    env.vars
        .push(("COLMEM_CLOCK__KIND".into(), "logical".into()));
    env.vars
        .push(("COLMEM_CLOCK__START".into(), "2100-01-01".into()));
    env.fails(
        &["recall", "--user", "alice", "--agent", "helper", "passport"],
        5,
    );
}

#[test]
fn knowledge_follows_the_agents_that_made_it() {
    let env = Env::with_alice();
    env.ok(&["principal", "add", "agent", "second"]);
    env.ok(&["grant", "invoke", "--user", "alice", "--agent", "second"]);
    env.ok(&[
        "remember",
        "--user",
        "alice",
        "--agent",
        "second",
        "I keep my bicycle in the garage.",
    ]);
    assert!(
        recall_contents(&env, "alice", "helper", "bicycle garage")
            .iter()
            .any(|c| c.contains("bicycle"))
    );
    // Once alice may no longer invoke `second`, what it made is hidden from her other agents too.
    env.ok(&["revoke", "invoke", "--user", "alice", "--agent", "second"]);
    let contents = recall_contents(&env, "alice", "helper", "bicycle garage");
    assert!(
        contents.iter().all(|c| !c.contains("bicycle")),
        "{contents:?}"
    );
}

#[test]
fn a_second_writer_gets_a_clear_error_while_readers_still_work() {
    let env = Env::with_alice();
    env.alice_tells_helper("The meeting is on Friday.");
    let holder = colmem::Memory::open(&env.dir, colmem::Config::default()).unwrap();
    let remember = |text| ["remember", "--user", "alice", "--agent", "helper", text];
    let err = env.fails(&remember("More words."), 7);
    assert!(
        err.contains("in use by another colmem process") && err.contains("lock"),
        "{err}"
    );
    env.fails(
        &["grant", "invoke", "--user", "bob", "--agent", "helper"],
        7,
    );
    // Audits, exports and backups read beside the writer; a recall waits for it.
    assert!(env.ok(&["audit", "verify"]).starts_with("intact"));
    assert!(!env.ok(&["export"]).is_empty());
    let recall = ["recall", "--user", "alice", "--agent", "helper", "meeting"];
    env.fails(&recall, 7);
    drop(holder);
    env.alice_tells_helper("More words.");
    // Recalls share the directory with each other (here with a process recalling
    // through the library), and hold off a writer meanwhile.
    let reader = colmem::Memory::open_shared(&env.dir, colmem::Config::default()).unwrap();
    assert!(env.ok(&recall).contains("Friday"));
    assert!(env.ok(&recall).contains("Friday"));
    let err = env.fails(&remember("Even more words."), 7);
    assert!(err.contains("(pid "), "the holder's pid is named: {err}");
    // Told to wait, a writer waits for the readers to finish.
    let letting_go = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        drop(reader);
    });
    let mut env = env;
    env.vars
        .push(("COLMEM_STORE__LOCK_WAIT_MS".into(), "10000".into()));
    env.ok(&remember("Even more words."));
    letting_go.join().unwrap();
}

#[test]
fn grants_with_at_and_until_and_backdated_events() {
    let env = Env::with_alice();
    env.ok(&["principal", "add", "resource", "wiki"]);
    env.ok(&[
        "principal",
        "add",
        "group",
        "crew-1",
        "--group-kind",
        "crew",
    ]);
    env.ok(&[
        "grant",
        "access",
        "--agent",
        "helper",
        "--resource",
        "wiki",
        "--until",
        "2999-01-01",
    ]);
    env.ok(&["grant", "member", "--group", "crew-1", "--agent", "helper"]);
    // A setup run twice: the second grant is already held and records nothing.
    let grants = || {
        env.ok(&["audit", "tail", "-n", "100"])
            .matches("grant member")
            .count()
    };
    assert_eq!(grants(), 1);
    let again = env.ok(&["grant", "member", "--group", "crew-1", "--agent", "helper"]);
    assert!(
        again.contains("already granted") && again.contains("nothing recorded"),
        "{again}"
    );
    assert_eq!(grants(), 1);
    let err = env.fails(
        &["grant", "invoke", "--user", "carol", "--agent", "helper"],
        4,
    );
    assert!(
        err.contains("unknown user") && err.contains("carol"),
        "{err}"
    );
    env.fails(&["principal", "add", "user", "alice"], 6);
    // A grant dated in the future takes effect then: not yet.
    env.ok(&[
        "grant",
        "invoke",
        "--user",
        "bob",
        "--agent",
        "helper",
        "--at",
        "2999-01-01",
    ]);
    env.fails(
        &["recall", "--user", "bob", "--agent", "helper", "anything"],
        5,
    );
    // History is not rewritten: an event dated before now is refused.
    let err = env.fails(
        &[
            "revoke",
            "member",
            "--group",
            "crew-1",
            "--agent",
            "helper",
            "--at",
            "2000-01-01",
        ],
        3,
    );
    assert!(err.contains("before now"), "{err}");
    // The scheduled grant holds up no change dated now: the agent is cut off at once.
    env.ok(&["revoke", "member", "--group", "crew-1", "--agent", "helper"]);
    // Gone from now on: nothing is left to revoke.
    let err = env.fails(
        &["revoke", "member", "--group", "crew-1", "--agent", "helper"],
        6,
    );
    assert!(err.contains("nothing to revoke"), "{err}");
}

#[test]
fn audit_tail_verify_matrix_and_who_could_see() {
    let env = Env::with_alice();
    let written = env.json(&[
        "remember",
        "--user",
        "alice",
        "--agent",
        "helper",
        "--json",
        "My favourite colour is green.",
    ]);
    let first = written["written"][0].as_u64().unwrap().to_string();
    recall_contents(&env, "alice", "helper", "favourite colour");

    let tail = env.ok(&["audit", "tail", "-n", "3"]);
    assert_eq!(
        tail.lines().count(),
        4,
        "a header and three entries: {tail}"
    );
    assert!(
        tail.contains("read") && tail.contains("alice via helper"),
        "{tail}"
    );
    let lines = env.ok(&["audit", "tail", "--json", "-n", "100"]);
    let entries: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(entries.iter().any(|e| e["event"]["type"] == "write"));
    assert!(
        entries
            .windows(2)
            .all(|w| w[0]["seq"].as_u64() < w[1]["seq"].as_u64())
    );

    let verify = env.json(&["audit", "verify", "--json"]);
    assert_eq!(verify["intact"], true);
    assert_eq!(verify["entries"].as_u64().unwrap() as usize, entries.len());

    let matrix = env.json(&["audit", "matrix", "--json"]);
    let cell = &matrix["cells"][0];
    assert_eq!(
        (cell["user"].as_str(), cell["agent"].as_str()),
        (Some("alice"), Some("helper"))
    );
    assert_eq!(cell["reads"], 1, "{matrix}");
    assert!(cell["fragments_written"].as_u64().unwrap() >= 1);
    assert!(env.ok(&["audit", "matrix"]).contains("(all)"));

    let who = env.json(&["audit", "who-could-see", "--json", &first]);
    let readers = who["readers"].as_array().unwrap();
    assert_eq!(readers.len(), 1, "{who}");
    assert_eq!(readers[0]["user"], "alice");
    let before = env.ok(&["audit", "who-could-see", &first, "--at", "2000-01-01"]);
    assert!(before.contains("nobody"), "{before}");
}

#[test]
fn a_damaged_audit_chain_exits_9() {
    let env = Env::with_alice();
    env.alice_tells_helper("Something to audit here.");
    // Edit an entry behind colmem's back: its hash no longer matches.
    let raw = rusqlite::Connection::open(env.dir.join("colmem.db")).unwrap();
    raw.execute("UPDATE audit SET at = at + 1 WHERE seq = 2", [])
        .unwrap();
    drop(raw);
    let out = env.run(&["audit", "verify"]);
    assert_eq!(out.code, 9, "{out:?}");
    assert!(out.stdout.contains("broken at seq"), "{out:?}");
}

/// `audit verify` checks the store against the chain and, given `--head`, the chain
/// against a head published elsewhere; `audit head` prints the head to publish.
#[test]
fn audit_verify_cross_checks_the_store_and_a_published_head() {
    let env = Env::with_alice();
    env.alice_tells_helper("My favourite colour is green.");
    recall_contents(&env, "alice", "helper", "favourite colour");
    let head = env.json(&["audit", "head", "--json"]);
    let seq = head["seq"].as_u64().unwrap();
    let hash = head["hash"].as_str().unwrap().to_owned();
    let text = env.ok(&["audit", "head"]);
    assert!(
        text.contains(&hash) && text.contains(&format!("seq {seq}")),
        "{text}"
    );
    env.ok(&["audit", "verify", "--head", &hash]);
    // Still in the chain after more entries.
    recall_contents(&env, "alice", "helper", "favourite colour");
    let verify = env.json(&["audit", "verify", "--json", "--head", &hash]);
    assert_eq!(verify["intact"], true, "{verify}");
    assert_eq!(verify["published_seq"], seq, "{verify}");
    let err = env.fails(&["audit", "verify", "--head", "cafe"], 3);
    assert!(err.contains("64 hex digits"), "{err}");

    // Rewritten: the two reads dropped and the head row moved back to match. The
    // chain holds on its own; only the published head tells.
    let raw = rusqlite::Connection::open(env.dir.join("colmem.db")).unwrap();
    raw.execute_batch(&format!(
        "DELETE FROM audit WHERE seq >= {seq};
         UPDATE audit_head SET seq = {seq} - 1, hash = (SELECT hash FROM audit WHERE seq = {seq} - 1);"
    ))
    .unwrap();
    env.ok(&["audit", "verify"]);
    let out = env.run(&["audit", "verify", "--head", &hash]);
    assert_eq!(out.code, 9, "{out:?}");
    assert!(
        out.stdout.contains(&hash) && out.stdout.contains("published"),
        "{out:?}"
    );

    // Every audit row deleted, while the store holds fragments and access events.
    raw.execute_batch("DELETE FROM audit; DELETE FROM audit_head; DELETE FROM audit_anchor;")
        .unwrap();
    drop(raw);
    let out = env.run(&["audit", "verify"]);
    assert_eq!(out.code, 9, "{out:?}");
    assert!(out.stdout.contains("empty"), "{out:?}");
    let out = env.run(&["audit", "verify", "--json"]);
    assert_eq!(out.code, 9, "{out:?}");
    let verdict: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(verdict["intact"], false, "{verdict}");
    assert_eq!(verdict["problem"], "empty_chain", "{verdict}");
    assert!(verdict["fragments"].as_u64().unwrap() > 0, "{verdict}");
}

#[test]
fn explain_names_the_deciding_condition() {
    let env = Env::with_alice();
    let written = env.json(&[
        "remember",
        "--user",
        "alice",
        "--agent",
        "helper",
        "--json",
        "I work as a carpenter in Porto.",
    ]);
    let id = written["written"][0].as_u64().unwrap().to_string();
    let out = env.ok(&["explain", "--user", "alice", "--agent", "helper", &id]);
    assert!(
        out.contains("is visible") && out.contains("every condition holds"),
        "{out}"
    );
    let out = env.ok(&[
        "explain", "--admin", "--user", "alice", "--agent", "outsider", &id,
    ]);
    assert!(out.contains("the invoke condition decides"), "{out}");
    env.ok(&["grant", "invoke", "--user", "bob", "--agent", "helper"]);
    let value = env.json(&[
        "explain", "--admin", "--user", "bob", "--agent", "helper", "--json", &id,
    ]);
    assert_eq!(value["visible"], false);
    assert_eq!(value["deciding"], "scope", "{value}");
    env.fails(
        &[
            "explain", "--admin", "--user", "alice", "--agent", "helper", "999999",
        ],
        4,
    );
    env.fails(
        &[
            "explain",
            "--user",
            "alice",
            "--agent",
            "helper",
            "not-a-number",
        ],
        3,
    );
}

#[test]
fn export_writes_every_fragment_as_json_lines_and_backup_copies_the_store() {
    let env = Env::with_alice();
    env.alice_tells_helper("I play the cello on Sundays.");
    let lines = env.ok(&["export"]);
    let fragments: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!fragments.is_empty());
    assert!(fragments.iter().all(|f| f["provenance"]["user"] == "alice"));
    assert!(fragments.iter().all(|f| f.get("embedding").is_none()));
    let file = env.path("export.jsonl");
    env.ok(&["export", "--vectors", "--output", file.to_str().unwrap()]);
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.lines().count(), fragments.len());
    assert!(text.contains("\"embedder\""));
    // A file that cannot be created is unavailable (8), not a bug of the program (1).
    let nowhere = env.path("no-such-dir").join("export.jsonl");
    let err = env.fails(&["export", "--output", nowhere.to_str().unwrap()], 8);
    assert!(err.contains("cannot create"), "{err}");
    // An export never overwrites (3), and leaves nothing of itself beside the file.
    let err = env.fails(&["export", "--output", file.to_str().unwrap()], 3);
    assert!(err.contains("never overwrites"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    let beside: Vec<_> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name.to_string_lossy().starts_with(".tmp"))
        .collect();
    assert!(beside.is_empty(), "{beside:?}");

    let copy = env.path("copy");
    std::fs::create_dir(&copy).unwrap();
    let dest = copy.join("colmem.db");
    let out = env.ok(&["backup", dest.to_str().unwrap()]);
    assert!(out.contains("backed up"), "{out}");
    let err = env.fails(&["backup", dest.to_str().unwrap()], 3);
    assert!(err.contains("never overwrites"), "{err}");
    // The copy is a whole memory: its audit chain verifies and it answers recalls.
    let restored = Env {
        _tmp: tempfile::tempdir().unwrap(),
        dir: copy,
        vars: Vec::new(),
        umask: None,
    };
    assert!(restored.ok(&["audit", "verify"]).starts_with("intact"));
    assert!(
        recall_contents(&restored, "alice", "helper", "cello")
            .iter()
            .any(|c| c.contains("cello"))
    );
}

const LOCOMO: &str = r#"[
  {
    "sample_id": "conv-1",
    "conversation": {
      "speaker_a": "Caroline",
      "speaker_b": "Melanie",
      "session_1_date_time": "1:56 pm on 8 May, 2023",
      "session_1": [
        {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to the LGBTQ support group yesterday."},
        {"speaker": "Melanie", "dia_id": "D1:2", "text": "That sounds wonderful, how was the pottery class?"}
      ],
      "session_2_date_time": "10:00 am on 9 May, 2023",
      "session_2": [
        {"speaker": "Caroline", "dia_id": "D2:1", "text": "I am researching adoption agencies this week."}
      ]
    },
    "observation": {"session_1_observation": {"Caroline": [["Caroline owns a zeppelinobservation", "D1:1"]]}},
    "session_summary": {"session_1_summary": "Caroline summarysecret went somewhere."},
    "event_summary": {"events_session_1": {"Caroline": ["eventsecret happened"]}},
    "qa": [{"question": "What did Caroline research?", "answer": "qasecret adoption agencies", "evidence": ["D2:1"], "category": 1}]
  }
]"#;

#[test]
fn import_locomo_reads_dialogue_turns_only() {
    let env = Env::new();
    env.ok(&["init"]);
    let file = env.path("locomo.json");
    std::fs::write(&file, LOCOMO).unwrap();
    let out = env.ok(&["import", "locomo", "--grant", file.to_str().unwrap()]);
    assert!(
        out.contains("imported 1 conversation(s), 3 turn(s)"),
        "{out}"
    );
    let contents = recall_contents(&env, "conv-1", "assistant", "adoption agencies");
    assert!(
        contents.iter().any(|c| c.contains("adoption")),
        "{contents:?}"
    );
    let export = env.ok(&["export"]);
    // Run again (as after a failure), the import stores no turn twice.
    let turn = "I am researching adoption agencies this week.";
    env.ok(&["import", "locomo", file.to_str().unwrap()]);
    assert_eq!(
        env.ok(&["export"]).matches(turn).count(),
        export.matches(turn).count(),
        "a turn imported twice is stored once"
    );
    // Sample ids alike but for a character are two users, in one file or two: the
    // conversations never mix.
    let one = LOCOMO.trim().trim_start_matches('[').trim_end_matches(']');
    for (name, id) in [("spaced.json", "conv 1"), ("underscored.json", "conv_1")] {
        let file = env.path(name);
        std::fs::write(
            &file,
            format!(
                "[{}]",
                one.replace("\"conv-1\"", &format!("{id:?}"))
                    .replace("adoption", "skydiving")
            ),
        )
        .unwrap();
        env.ok(&["import", "locomo", "--grant", file.to_str().unwrap()]);
    }
    for user in ["conv_20_1", "conv_5f_1"] {
        let contents = recall_contents(&env, user, "assistant", "researching agencies");
        assert!(
            contents.iter().any(|c| c.contains("skydiving")),
            "{user}: {contents:?}"
        );
        assert!(
            !contents.iter().any(|c| c.contains("adoption")),
            "{user}: {contents:?}"
        );
    }
    let contents = recall_contents(&env, "conv-1", "assistant", "researching agencies");
    assert!(
        !contents.iter().any(|c| c.contains("skydiving")),
        "{contents:?}"
    );
    // A turn over the value limit is refused before anything is written.
    let long = env.path("long.json");
    std::fs::write(
        &long,
        format!(
            "[{}]",
            one.replace("\"conv-1\"", "\"conv-9\"")
                .replace("adoption", &"x".repeat(70_000))
        ),
    )
    .unwrap();
    let err = env.fails(&["import", "locomo", long.to_str().unwrap()], 3);
    assert!(err.contains("nothing was imported"), "{err}");
    env.fails(
        &["recall", "--user", "conv-9", "--agent", "assistant", "x"],
        4,
    );
    let none = env.path("none.json");
    std::fs::write(&none, "[]").unwrap();
    assert!(
        env.ok(&["import", "locomo", none.to_str().unwrap()])
            .contains("nothing imported")
    );
    for secret in [
        "zeppelinobservation",
        "summarysecret",
        "eventsecret",
        "qasecret",
    ] {
        assert!(!export.contains(secret), "{secret} was imported");
    }
    let bad = env.path("bad.json");
    std::fs::write(&bad, "{\"not\": \"a list\"}").unwrap();
    let err = env.fails(&["import", "locomo", bad.to_str().unwrap()], 3);
    assert!(err.contains("not a LoCoMo file"), "{err}");
}

#[test]
fn an_import_run_again_after_a_kill_summarises_the_turns_stored_before_it() {
    let env = Env::new();
    env.ok(&["init"]);
    // A run killed after the first turn of session 1.
    env.ok(&["principal", "add", "user", "conv-1"]);
    env.ok(&["principal", "add", "agent", "assistant"]);
    env.ok(&[
        "grant",
        "invoke",
        "--user",
        "conv-1",
        "--agent",
        "assistant",
    ]);
    let turn = colmem::TurnInput {
        dialogue_id: "conv-1:D1:1".into(),
        session: "conv-1:S1".into(),
        speaker: "Caroline".into(),
        listener: "Melanie".into(),
        text: "I went to the LGBTQ support group yesterday.".into(),
        time: None,
        origin: colmem::Origin::Other,
    };
    env.killed_after("conv-1", "assistant", &turn, "import:conv-1:D1:1");
    let file = env.path("locomo.json");
    std::fs::write(&file, LOCOMO).unwrap();
    env.ok(&["import", "locomo", file.to_str().unwrap()]);
    let episodes = env.episode_turns();
    let first = episodes
        .iter()
        .find(|turns| turns.iter().any(|t| t == "conv-1:D1:2"))
        .expect("session 1 has an episode");
    assert_eq!(first, &["conv-1:D1:1", "conv-1:D1:2"], "{episodes:?}");
    // Run again, the import summarises nothing twice.
    env.ok(&["import", "locomo", file.to_str().unwrap()]);
    assert_eq!(env.episode_turns(), episodes);
}

#[test]
fn retention_deletes_what_is_older_than_the_configured_limit() {
    let mut env = Env::with_alice();
    env.alice_tells_helper("I collect vintage typewriters.");
    let party = ["--user", "alice", "--agent", "helper"];
    let err = env.fails(&[&["retention"][..], &party].concat(), 3);
    assert!(err.contains("retention_ms"), "{err}");
    // A limit of zero or less would delete everything: it is refused.
    env.vars
        .push(("COLMEM_PIPELINE__RETENTION_MS".into(), "-1".into()));
    let err = env.fails(&[&["retention"][..], &party].concat(), 3);
    assert!(
        err.contains("[pipeline] retention_ms = -1 is out of range: give a whole number from 1"),
        "{err}"
    );
    env.vars.pop();
    assert!(!recall_contents(&env, "alice", "helper", "typewriters").is_empty());
    env.vars
        .push(("COLMEM_PIPELINE__RETENTION_MS".into(), "3600000".into()));
    let kept = env.json(&[&["retention"][..], &party, &["--json"]].concat());
    assert_eq!(kept["deleted"], serde_json::json!([]), "{kept}");
    assert!(!recall_contents(&env, "alice", "helper", "typewriters").is_empty());
    env.vars.pop();
    env.vars
        .push(("COLMEM_PIPELINE__RETENTION_MS".into(), "1".into()));
    std::thread::sleep(std::time::Duration::from_millis(20));
    let done = env.json(&[&["retention"][..], &party, &["--json"]].concat());
    assert!(!done["deleted"].as_array().unwrap().is_empty(), "{done}");
    assert_eq!(done["refused"], serde_json::json!([]), "{done}");
    assert!(recall_contents(&env, "alice", "helper", "typewriters").is_empty());
}

#[test]
fn reindex_re_embeds_after_the_embedder_changed() {
    let mut env = Env::with_alice();
    env.alice_tells_helper("I collect vintage typewriters.");
    env.vars.push(("COLMEM_EMBEDDER__DIM".into(), "64".into()));
    let out = env.ok(&["reindex"]);
    assert!(out.contains("d64"), "{out}");
    let reembedded: u64 = out
        .split(", ")
        .find_map(|part| part.strip_suffix(" re-embedded"))
        .unwrap()
        .parse()
        .unwrap();
    assert!(reembedded > 0, "{out}");
    let again = env.ok(&["reindex"]);
    assert!(again.contains(", 0 re-embedded"), "{again}");
    assert!(
        recall_contents(&env, "alice", "helper", "typewriters")
            .iter()
            .any(|c| c.contains("typewriters"))
    );
}

/// Two failed attempts that rounded down where they should have rounded up, and a
/// success.
const TRAJECTORIES: &str = r#"{"id":"t1","task":"A warehouse holds 47 parcels and each crate carries 5 parcels. How many crates are needed to ship all the parcels?","round":1,"steps":[{"action":"divide 47 by 5"},{"action":"round the quotient","decision":{"name":"rounding","chosen":"floor","alternatives":["ceil"]}}],"outcome":{"score":0.0,"success":false,"feedback":"wrong answer"}}
{"id":"t2","task":"A school trip takes 31 pupils in vans that carry 4 pupils each. How many vans are needed for all the pupils?","round":1,"steps":[{"action":"divide 31 by 4"},{"action":"round the quotient","decision":{"name":"rounding","chosen":"floor","alternatives":["ceil"]}}],"outcome":{"score":0.0,"success":false,"feedback":"wrong answer"}}

{"id":"t3","task":"A farm packs 50 eggs into cartons of 6 eggs. How many cartons are completely filled?","round":1,"steps":[{"action":"divide 50 by 6"},{"action":"round","decision":{"name":"rounding","chosen":"floor","alternatives":["ceil"]}}],"outcome":{"score":1.0,"success":true}}
"#;

/// Cards learned from a file of trajectories are composed for a like task, in the
/// scope asked for only; a file with one bad line teaches nothing.
#[test]
fn cards_learned_from_trajectories_are_composed_within_their_scope() {
    let env = Env::with_alice();
    env.ok(&["grant", "invoke", "--user", "alice", "--agent", "outsider"]);
    let task = "A printer must print 75 pages and each cartridge lasts 8 pages. How many cartridges are needed?";
    let compose = |agent: &str| {
        env.ok(&[
            "cards", "compose", "--user", "alice", "--agent", agent, task,
        ])
    };

    let bad = env.path("bad.jsonl");
    std::fs::write(&bad, format!("{TRAJECTORIES}{{\"id\": 4}}\n")).unwrap();
    let bad = bad.to_str().unwrap();
    let err = env.fails(
        &[
            "cards", "learn", "--user", "alice", "--agent", "helper", bad,
        ],
        3,
    );
    assert!(
        err.contains("line 5 of") && err.contains("nothing was learned"),
        "{err}"
    );
    assert!(compose("helper").starts_with("no strategy card"));

    let out = env.run_with(
        &[
            "cards", "learn", "--user", "alice", "--agent", "helper", "--scope", "agent", "--json",
            "-",
        ],
        Some(TRAJECTORIES),
    );
    assert_eq!(out.code, 0, "{out:?}");
    let report: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(report["trajectories"], 3, "{report}");
    assert!(
        !report["written"].as_array().unwrap().is_empty(),
        "{report}"
    );
    let cards = compose("helper");
    assert!(cards.contains("rounding=ceil"), "{cards}");
    assert!(
        compose("outsider").starts_with("no strategy card"),
        "agent scope"
    );

    env.fails(
        &[
            "cards", "learn", "--user", "alice", "--agent", "helper", "--scope", "users", "-",
        ],
        3,
    );
    let out = env.run_with(
        &["cards", "learn", "--user", "bob", "--agent", "helper", "-"],
        Some(TRAJECTORIES),
    );
    assert_eq!(out.code, 5, "bob may not invoke helper: {out:?}");
    // A typo in a field, a score out of range, a task without words: refused, naming
    // the line.
    for (bad, why) in [
        (
            r#"{"id":"x","task":"t t","round":1,"steps":[],"outcome":{"score":0.5,"success":true},"condtions":[]}"#,
            "condtions",
        ),
        (
            r#"{"id":"x","task":"t t","round":1,"steps":[],"outcome":{"score":1.5,"success":true}}"#,
            "score 1.5",
        ),
        (
            r#"{"id":"x","task":" ? ","round":1,"steps":[],"outcome":{"score":0.5,"success":true}}"#,
            "no words",
        ),
    ] {
        let out = env.run_with(
            &[
                "cards", "learn", "--user", "alice", "--agent", "helper", "-",
            ],
            Some(bad),
        );
        assert_eq!(out.code, 3, "{out:?}");
        assert!(
            out.stderr.contains("line 1 of standard input") && out.stderr.contains(why),
            "{out:?}"
        );
    }
    let err = env.fails(
        &[
            "cards", "learn", "--user", "alice", "--agent", "helper", "--scope", "group:", "-",
        ],
        3,
    );
    assert!(err.contains("invalid"), "{err}");
}

/// A card learned under a condition is composed only where the task names it, and
/// the reason is said when no card is shown.
#[test]
fn a_card_learned_under_a_condition_applies_where_it_is_named() {
    let env = Env::with_alice();
    let line = TRAJECTORIES.lines().next().unwrap().replacen(
        r#""round":1"#,
        r#""round":1,"conditions":["whole crates only"]"#,
        1,
    );
    let line = format!(
        "{line}\n{}\n",
        TRAJECTORIES.lines().nth(1).unwrap().replacen(
            r#""round":1"#,
            r#""round":1,"conditions":["whole crates only"]"#,
            1,
        )
    );
    let out = env.run_with(
        &[
            "cards", "learn", "--user", "alice", "--agent", "helper", "-",
        ],
        Some(&line),
    );
    assert_eq!(out.code, 0, "{out:?}");
    let task = "A printer must print 75 pages and each cartridge lasts 8 pages. How many cartridges are needed?";
    let compose = |extra: &[&str]| {
        let mut args = vec!["cards", "compose", "--user", "alice", "--agent", "helper"];
        args.extend_from_slice(extra);
        args.push(task);
        env.ok(&args)
    };
    let unnamed = compose(&[]);
    assert!(unnamed.contains("--condition"), "{unnamed}");
    let named = compose(&["--condition", "whole crates only"]);
    assert!(named.contains("rounding=ceil"), "{named}");
    let tight = compose(&["--condition", "whole crates only", "--budget", "3"]);
    assert!(tight.contains("raise --budget"), "{tight}");
    env.fails(
        &[
            "cards", "compose", "--user", "alice", "--agent", "helper", "--budget", "0", task,
        ],
        3,
    );
}

#[test]
fn cards_compose_reports_when_no_card_applies() {
    let env = Env::with_alice();
    let out = env.ok(&[
        "cards", "compose", "--user", "alice", "--agent", "helper", "plan", "a", "trip",
    ]);
    assert!(out.contains("no strategy card"), "{out}");
    let value = env.json(&[
        "cards", "compose", "--user", "alice", "--agent", "helper", "--json", "--budget", "64",
        "plan",
    ]);
    assert_eq!(value["budget"], 64);
    assert_eq!(value["cards"].as_array().unwrap().len(), 0);
    env.fails(
        &[
            "cards", "compose", "--user", "alice", "--agent", "outsider", "plan",
        ],
        5,
    );
}

#[test]
fn bad_input_is_refused_with_what_to_do() {
    let env = Env::new();
    let err = env.fails(&["recall", "--user", "a", "--agent", "b", "q"], 4);
    assert!(err.contains("colmem init"), "{err}");
    env.ok(&["init"]);
    env.fails(&["recall", "--user", "ghost", "--agent", "b", "q"], 4);
    let err = env.fails(&["grant", "invoke", "--user", "ghost", "--agent", "b"], 4);
    assert!(err.contains("principal add user ghost"), "{err}");
    let err = env.fails(
        &["principal", "add", "user", "bob", "--group-kind", "team"],
        3,
    );
    assert!(err.contains("for groups only"), "{err}");
    let err = env.fails(&["principal", "add", "user", "has space"], 3);
    assert!(err.contains("invalid user id"), "{err}");
    let err = env.fails(
        &[
            "grant",
            "invoke",
            "--user",
            "x",
            "--agent",
            "y",
            "--at",
            "tomorrow-ish",
        ],
        3,
    );
    assert!(err.contains("RFC 3339"), "{err}");
    env.fails(&["remember", "--user", "a", "--agent", "b"], 3);

    std::fs::write(
        env.dir.join("colmem.toml"),
        "[retriever]\nk_min = 3\nk_mni = 4\n",
    )
    .unwrap();
    let err = env.fails(&["audit", "tail"], 3);
    assert!(err.contains("line 3") && err.contains("k_mni"), "{err}");
    std::fs::write(env.dir.join("colmem.toml"), "[store\n").unwrap();
    env.fails(&["audit", "tail"], 3);
    std::fs::write(env.dir.join("colmem.toml"), "").unwrap();
    let mut env = env;
    env.vars
        .push(("COLMEM_PIPELINE__ROUNDZ".into(), "1".into()));
    let err = env.fails(&["audit", "tail"], 3);
    assert!(err.contains("COLMEM_PIPELINE__ROUNDZ"), "{err}");
    env.vars.clear();
    let missing = env.path("missing.toml");
    env.fails(&["--config", missing.to_str().unwrap(), "audit", "tail"], 8);

    let usage = env.run(&["recall"]);
    assert_eq!(usage.code, 2, "{usage:?}");
}

/// The four turns a new user tried (issue "a write path that never loses or leaks"):
/// the move answers Porto, the job survives forgetting the budget told beside it, the
/// food preference survives the move, every fragment is personal (`user` scope), and
/// bob, who may invoke both crew agents, reads none of it.
#[test]
fn four_turns_of_a_new_user_neither_lose_nor_leak() {
    let env = Env::with_alice();
    env.ok(&["principal", "add", "agent", "planner"]);
    env.ok(&[
        "principal",
        "add",
        "group",
        "kitchen",
        "--group-kind",
        "crew",
    ]);
    for agent in ["helper", "planner"] {
        env.ok(&["grant", "member", "--group", "kitchen", "--agent", agent]);
        env.ok(&["grant", "invoke", "--user", "bob", "--agent", agent]);
    }
    env.alice_tells_helper("My favourite food is ramen and I live in Lisbon.");
    env.alice_tells_helper(
        "I work as a nurse at Santa Maria hospital. My monthly budget for rent is 900 euros.",
    );
    env.alice_tells_helper("We moved to Porto last week.");
    env.alice_tells_helper("Please forget what I said about my budget.");
    let answer = |q: &str| {
        env.json(&[
            "answer", "--user", "alice", "--agent", "helper", "--json", q,
        ])["answer"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let home = answer("where do I live now?");
    assert!(home.contains("Porto") && !home.contains("Lisbon"), "{home}");
    assert!(answer("where do I work?").contains("nurse"));
    assert!(answer("what is my favourite food?").contains("ramen"));
    let export: Vec<Value> = env
        .ok(&["export"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|f: &Value| f["deleted_at"].is_null())
        .collect();
    assert!(!export.is_empty());
    for f in &export {
        assert_eq!(f["scope"], "user", "{f}");
        assert!(!f["content"].as_str().unwrap().contains("900"), "{f}");
    }
    for agent in ["helper", "planner"] {
        for query in ["rent", "nurse", "Lisbon Porto", "ramen"] {
            assert!(
                recall_contents(&env, "bob", agent, query).is_empty(),
                "bob through {agent} read alice's {query}"
            );
        }
    }
    // The same session shares only when asked, and only where it may write.
    env.ok(&[
        "remember",
        "--user",
        "alice",
        "--agent",
        "helper",
        "--scope",
        "group:kitchen",
        "The kitchen's fridge code is 4471.",
    ]);
    assert!(!recall_contents(&env, "bob", "planner", "fridge code").is_empty());
    env.ok(&["principal", "add", "group", "hall", "--group-kind", "crew"]);
    env.fails(
        &[
            "remember",
            "--user",
            "alice",
            "--agent",
            "helper",
            "--scope",
            "group:hall",
            "The hall's door code is 1234.",
        ],
        5,
    );
}

/// `colmem forget`: a dry run lists and keeps; then by query, key and everything.
#[test]
fn forget_lists_on_a_dry_run_then_forgets_what_it_selects() {
    let env = Env::with_alice();
    env.alice_tells_helper(
        "I work as a nurse at Santa Maria hospital. My monthly budget for groceries is 900 euros.",
    );
    env.alice_tells_helper("My car is a blue Honda Civic.");
    let party = ["--user", "alice", "--agent", "helper"];
    let dry = env.json(
        &[
            &["forget"][..],
            &party,
            &["--query", "my budget", "--dry-run", "--json"],
        ]
        .concat(),
    );
    assert_eq!(dry["dry_run"], true);
    assert!(dry["deleted"].as_array().unwrap().is_empty());
    assert!(
        !recall_contents(&env, "alice", "helper", "budget groceries")
            .iter()
            .all(|c| !c.contains("900"))
    );
    let done = env.json(&[&["forget"][..], &party, &["--query", "my budget", "--json"]].concat());
    assert!(!done["deleted"].as_array().unwrap().is_empty(), "{done}");
    let left = recall_contents(&env, "alice", "helper", "nurse budget groceries car");
    assert!(left.iter().all(|c| !c.contains("900")), "{left:?}");
    assert!(left.iter().any(|c| c.contains("nurse")), "{left:?}");
    // Exactly one way to select.
    env.fails(&[&["forget"][..], &party].concat(), 2);
    let all = env.ok(&[&["forget"][..], &party, &["--all"]].concat());
    assert!(all.starts_with("forgot "), "{all}");
    assert!(recall_contents(&env, "alice", "helper", "nurse car Honda").is_empty());
}
