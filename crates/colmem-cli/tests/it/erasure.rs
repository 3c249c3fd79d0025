//! Erasure that really erases: after a spoken forget, a retention run, `colmem
//! forget` and a purge, the words are in no file of the data directory (database, its log, index files), in
//! no backup made afterwards and in no export.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::Env;

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// The files among `files` whose bytes hold `marker`, in any case.
fn holding(files: &[PathBuf], marker: &str) -> Vec<PathBuf> {
    let marker = marker.to_ascii_lowercase();
    files
        .iter()
        .filter(|file| {
            let bytes = std::fs::read(file).unwrap().to_ascii_lowercase();
            bytes.windows(marker.len()).any(|w| w == marker.as_bytes())
        })
        .cloned()
        .collect()
}

/// The data directory's files, plus a backup and an export made now (named `stage`).
fn everything_on_disk(env: &Env, stage: &str) -> Vec<PathBuf> {
    let backup = env.path(&format!("{stage}.db"));
    env.ok(&["backup", backup.to_str().unwrap()]);
    let export = env.path(&format!("{stage}.jsonl"));
    env.ok(&["export", "--vectors", "--output", export.to_str().unwrap()]);
    let mut files = files_under(&env.dir);
    files.extend([backup, export]);
    files
}

/// `forgotten` is in no file; `kept` (said and not forgotten) is still in the database.
fn check(env: &Env, stage: &str, forgotten: &[&str], kept: &str) {
    let files = everything_on_disk(env, stage);
    for marker in forgotten {
        let found = holding(&files, marker);
        assert!(
            found.is_empty(),
            "{stage}: {marker:?} still lies in {found:?}"
        );
    }
    let database = env.dir.join("colmem.db");
    assert_eq!(
        holding(&[database], kept).len(),
        1,
        "{stage}: {kept:?}, not forgotten, is in the database"
    );
}

fn remember_json(env: &Env, user: &str, text: &str) -> Value {
    env.json(&[
        "remember", "--user", user, "--agent", "helper", "--json", text,
    ])
}

#[test]
fn forgotten_retained_and_purged_words_leave_every_file() {
    let mut env = Env::with_alice();
    env.ok(&["grant", "invoke", "--user", "bob", "--agent", "helper"]);
    env.alice_tells_helper("I bake Fennimore loaves on Fridays.");

    env.alice_tells_helper("My address is 12 Quillfeather Lane.");
    assert!(holding(&everything_on_disk(&env, "said"), "quillfeather").len() >= 3);
    let forget = remember_json(&env, "alice", "Please forget my address.");
    let forgotten = forget["deleted"].as_array().unwrap().clone();
    assert!(!forgotten.is_empty(), "{forget}");
    check(&env, "forgotten", &["quillfeather"], "fennimore");
    // The export shows what was forgotten as a tombstone without its words.
    let export = std::fs::read_to_string(env.path("forgotten.jsonl")).unwrap();
    let tombstones: Vec<Value> = export
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|f| forgotten.contains(&f["id"]))
        .collect();
    assert_eq!(tombstones.len(), forgotten.len(), "{export}");
    for tomb in &tombstones {
        assert!(!tomb["deleted_at"].is_null(), "{tomb}");
        assert_eq!(tomb["content"], "", "{tomb}");
        assert_eq!(tomb["provenance"]["user"], "alice", "{tomb}");
        assert!(tomb.get("embedding").is_none(), "{tomb}");
    }

    // Retention: everything alice said before now goes, Fennimore too.
    env.alice_tells_helper("My axolotl is called Zorbulon.");
    std::thread::sleep(std::time::Duration::from_millis(20));
    env.vars
        .push(("COLMEM_PIPELINE__RETENTION_MS".into(), "10".into()));
    let retention = env.json(&[
        "retention",
        "--user",
        "alice",
        "--agent",
        "helper",
        "--json",
    ]);
    env.vars.pop();
    assert!(
        !retention["deleted"].as_array().unwrap().is_empty(),
        "{retention}"
    );
    env.alice_tells_helper("I grow Marrowvale tomatoes.");
    check(
        &env,
        "retained",
        &["quillfeather", "zorbulon", "fennimore"],
        "marrowvale",
    );

    // An explicit erasure.
    env.alice_tells_helper("My cat is called Pellinore.");
    let forgot = env.json(&[
        "forget", "--user", "alice", "--agent", "helper", "--query", "my cat", "--json",
    ]);
    assert!(
        !forgot["deleted"].as_array().unwrap().is_empty(),
        "{forgot}"
    );
    check(
        &env,
        "erased",
        &["quillfeather", "zorbulon", "fennimore", "pellinore"],
        "marrowvale",
    );

    // A purge, by the operator: bob's every fragment.
    env.ok(&[
        "remember",
        "--user",
        "bob",
        "--agent",
        "helper",
        "My locker code is Grimblewick.",
    ]);
    let dry = env.json(&["purge", "--user", "bob", "--dry-run", "--json"]);
    let listed = dry["fragments"].as_array().unwrap().clone();
    assert!(!listed.is_empty(), "{dry}");
    assert_eq!(dry["dry_run"], true, "{dry}");
    assert!(
        !holding(&everything_on_disk(&env, "dry"), "grimblewick").is_empty(),
        "a dry run purges nothing"
    );
    let purged = env.json(&["purge", "--user", "bob", "--json"]);
    assert_eq!(purged["fragments"].as_array().unwrap(), &listed, "{purged}");
    check(
        &env,
        "purged",
        &[
            "quillfeather",
            "zorbulon",
            "fennimore",
            "pellinore",
            "grimblewick",
        ],
        "marrowvale",
    );
    let export = std::fs::read_to_string(env.path("purged.jsonl")).unwrap();
    assert!(
        export.lines().all(|line| !line.contains("\"bob\"")),
        "{export}"
    );
    assert!(env.ok(&["audit", "verify"]).starts_with("intact"));
}
