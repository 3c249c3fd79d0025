//! Configuration errors and inputs over their limits exit 3, naming what to change,
//! before anything is written.

use crate::Env;

/// A vector length no index can hold is a configuration error naming the key, not
/// a failure to reserve memory.
#[test]
fn a_dimension_out_of_range_exits_3_naming_the_key() {
    let mut env = Env::new();
    env.vars
        .push(("COLMEM_EMBEDDER__DIM".into(), "4000000000".into()));
    let err = env.fails(&["init"], 3);
    assert!(
        err.contains("COLMEM_EMBEDDER__DIM") && err.contains("[embedder] dim = 4000000000"),
        "{err}"
    );
    assert!(!env.dir.join("colmem.db").exists(), "nothing was created");
    env.vars.clear();
    env.ok(&["init"]);
    std::fs::write(env.dir.join("colmem.toml"), "[embedder]\ndim = 1e30\n").unwrap();
    let err = env.fails(&["audit", "tail"], 3);
    assert!(
        err.contains("[embedder] dim = 1e30 is out of range"),
        "{err}"
    );
}

/// A turn over `[pipeline] max_turn_bytes` (the store could hold it) is refused with
/// exit 3, by `remember` and by `import`, and nothing is written.
#[test]
fn a_turn_over_max_turn_bytes_exits_3_and_writes_nothing() {
    let env = Env::with_alice();
    std::fs::write(
        env.dir.join("colmem.toml"),
        "[store]\nmax_value_bytes = 1048576\n",
    )
    .unwrap();
    // The store's change sequence, its audit log and its access events.
    let head = || {
        let db = rusqlite::Connection::open(env.dir.join("colmem.db")).unwrap();
        let count = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).unwrap() };
        [
            count("SELECT coalesce(max(seq), 0) FROM changes"),
            count("SELECT count(*) FROM audit"),
            count("SELECT count(*) FROM access_events"),
        ]
    };
    let before = head();
    let long = "I planted tomatoes on the balcony today. ".repeat(300 * 1024 / 41 + 1);
    assert!(long.len() > 300 * 1024);
    // One turn on standard input (an argument cannot be that long).
    let out = env.run_with(
        &["remember", "--user", "alice", "--agent", "helper"],
        Some(&format!("{long}\n")),
    );
    assert_eq!(out.code, 3, "{out:?}");
    assert!(
        out.stderr.contains("turn 1 of 1 is")
            && out
                .stderr
                .contains("over [pipeline] max_turn_bytes = 262144")
            && out.stderr.contains("nothing was remembered"),
        "{}",
        out.stderr
    );
    let out = env.run_with(
        &["remember", "--user", "alice", "--agent", "helper"],
        Some(&format!("a short first line\n{long}\n")),
    );
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains("turn 2 of 2"), "{out:?}");
    let file = env.path("long.json");
    let locomo = serde_json::json!([{
        "sample_id": "conv-9",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "Hello there."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": long}
            ]
        }
    }]);
    std::fs::write(&file, locomo.to_string()).unwrap();
    let err = env.fails(&["import", "locomo", file.to_str().unwrap()], 3);
    assert!(
        err.contains("turn D1:2 of conversation conv-9")
            && err.contains("[pipeline] max_turn_bytes")
            && err.contains("nothing was imported"),
        "{err}"
    );
    assert_eq!(head(), before, "nothing was written");
    // The smaller limit decides: under the default value limit, that one is named.
    std::fs::write(env.dir.join("colmem.toml"), "").unwrap();
    let err = env.fails(&["import", "locomo", file.to_str().unwrap()], 3);
    assert!(
        err.contains("over [store] max_value_bytes = 65536"),
        "{err}"
    );
}
