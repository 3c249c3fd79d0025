//! `explain`: a session learns whether it may read a fragment and, only when it may,
//! why; a fragment hidden from it and an id that does not exist look alike. The
//! administrator's `explain --admin` keeps the full explanation. Every explain, and
//! every read refused as forbidden, is audited.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::Env;

/// The ids a `remember --json` run reports under `field`.
fn ids(value: &Value, field: &str) -> Vec<String> {
    value[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| match v {
            Value::Object(pair) => pair["old"].to_string(),
            id => id.to_string(),
        })
        .collect()
}

fn remember(env: &Env, user: &str, agent: &str, text: &str) -> Value {
    env.json(&["remember", "--user", user, "--agent", agent, "--json", text])
}

/// alice's session through helper, with one fragment hidden from it for each reason
/// the read rule has, and the condition that hides it.
fn hidden_from_alice() -> (Env, Vec<(&'static str, String, &'static str)>) {
    let env = Env::with_alice();
    env.ok(&["principal", "add", "agent", "second"]);
    env.ok(&["principal", "add", "resource", "ledger"]);
    env.ok(&["grant", "invoke", "--user", "bob", "--agent", "helper"]);
    env.ok(&["grant", "invoke", "--user", "alice", "--agent", "second"]);
    env.ok(&[
        "grant",
        "access",
        "--agent",
        "helper",
        "--resource",
        "ledger",
    ]);
    let mut rows = Vec::new();

    let bobs = remember(&env, "bob", "helper", "I keep a red kayak in the garage.");
    rows.push(("another user's", ids(&bobs, "written")[0].clone(), "scope"));

    let seconds = remember(&env, "alice", "second", "My locker code is 4512.");
    env.ok(&["revoke", "invoke", "--user", "alice", "--agent", "second"]);
    rows.push((
        "made by a revoked agent",
        ids(&seconds, "written")[0].clone(),
        "agents",
    ));

    {
        let memory = colmem::Memory::open(&env.dir, colmem::Config::default()).unwrap();
        let session = memory
            .session(
                colmem::UserId::new("alice").unwrap(),
                colmem::AgentId::new("helper").unwrap(),
            )
            .unwrap();
        let mut draft = colmem::Draft::new(
            "The ledger shows the rent is paid until May.",
            colmem::Granularity::Fact,
            colmem::Kind::Observation,
        );
        draft
            .resources
            .insert(colmem::ResourceId::new("ledger").unwrap());
        let written = session.write(vec![draft], None).unwrap();
        rows.push((
            "drawn from a resource not allowed",
            written[0].to_string(),
            "resources",
        ));
    }
    env.ok(&[
        "revoke",
        "access",
        "--agent",
        "helper",
        "--resource",
        "ledger",
    ]);

    remember(&env, "alice", "helper", "My address is 12 Elm Street.");
    let forgot = remember(&env, "alice", "helper", "Please forget my address.");
    let deleted = ids(&forgot, "deleted");
    assert!(!deleted.is_empty(), "{forgot}");
    rows.push(("deleted", deleted[0].clone(), "version"));

    remember(&env, "alice", "helper", "I live in Porto.");
    let moved = remember(&env, "alice", "helper", "I moved to Lisbon last week.");
    let superseded = ids(&moved, "superseded");
    assert!(!superseded.is_empty(), "{moved}");
    rows.push(("superseded", superseded[0].clone(), "version"));
    (env, rows)
}

/// What a run shows: exit code, standard output and standard error.
fn shown(env: &Env, args: &[&str]) -> (i32, String, String) {
    let out = env.run(args);
    (out.code, out.stdout, out.stderr)
}

#[test]
fn a_hidden_fragment_and_a_missing_id_look_alike_to_a_session() {
    let (env, rows) = hidden_from_alice();
    let session = ["explain", "--user", "alice", "--agent", "helper"];
    let explain = |extra: &[&str], id: &str| shown(&env, &[&session[..], extra, &[id]].concat());
    let missing = explain(&[], "999999");
    let missing_json = explain(&["--json"], "999999");
    assert_eq!(missing.0, 0, "{missing:?}");
    for (reason, id, _) in &rows {
        assert_eq!(explain(&[], id), missing, "a fragment {reason} (id {id})");
        assert_eq!(
            explain(&["--json"], id),
            missing_json,
            "a fragment {reason} (id {id})"
        );
    }
    // What the session may read, it is told about, condition by condition.
    let own = remember(&env, "alice", "helper", "I play the oboe.");
    let own = ids(&own, "written")[0].clone();
    let (code, out, _) = explain(&[], &own);
    assert_eq!(code, 0);
    assert!(
        out.contains("is visible") && out.contains("every condition holds"),
        "{out}"
    );

    // A session that may not be: forbidden, naming the invoke condition alone, for
    // any id.
    let outsider = |id: &str| {
        shown(
            &env,
            &["explain", "--user", "alice", "--agent", "outsider", id],
        )
    };
    let refused = outsider("999999");
    assert_eq!(refused.0, 5, "{refused:?}");
    assert!(
        refused.2.contains("may not invoke agent outsider"),
        "{refused:?}"
    );
    for id in rows
        .iter()
        .map(|(_, id, _)| id.as_str())
        .chain([own.as_str()])
    {
        assert_eq!(outsider(id), refused, "id {id}");
    }
}

#[test]
fn the_administrator_is_told_the_deciding_condition() {
    let (env, rows) = hidden_from_alice();
    let admin = ["explain", "--admin", "--user", "alice", "--agent", "helper"];
    for (reason, id, condition) in &rows {
        let value = env.json(&[&admin[..], &["--json", id]].concat());
        assert_eq!(value["visible"], false, "{reason}: {value}");
        assert_eq!(value["deciding"], *condition, "{reason}: {value}");
        let out = env.ok(&[&admin[..], &[id.as_str()]].concat());
        assert!(
            out.contains(&format!("the {condition} condition decides")),
            "{reason}: {out}"
        );
    }
    let err = env.fails(&[&admin[..], &["999999"]].concat(), 4);
    assert!(err.contains("999999"), "{err}");
    // The administrator may explain a context whose user may not invoke the agent.
    let out = env.ok(&[
        "explain", "--admin", "--user", "alice", "--agent", "outsider", &rows[0].1,
    ]);
    assert!(out.contains("the invoke condition decides"), "{out}");
}

#[test]
fn explains_and_denied_reads_are_audited() {
    let env = Env::with_alice();
    let written = remember(
        &env,
        "alice",
        "helper",
        "My passport is in the blue drawer.",
    );
    let id = ids(&written, "written")[0].clone();
    let entries = |kind: &str| -> Vec<Value> {
        env.ok(&["audit", "tail", "-n", "1000", "--json"])
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["event"]["type"] == kind)
            .map(|e| e["event"].clone())
            .collect()
    };
    assert!(entries("denied").is_empty() && entries("explain").is_empty());
    for read in ["recall", "answer"] {
        env.fails(
            &[read, "--user", "alice", "--agent", "outsider", "passport"],
            5,
        );
    }
    env.fails(
        &[
            "history",
            "--user",
            "alice",
            "--agent",
            "outsider",
            "alice/home",
        ],
        5,
    );
    env.fails(
        &["explain", "--user", "alice", "--agent", "outsider", &id],
        5,
    );
    let denied = entries("denied");
    assert_eq!(denied.len(), 4, "{denied:?}");
    assert!(
        denied
            .iter()
            .all(|e| e["user"] == "alice" && e["agent"] == "outsider"),
        "{denied:?}"
    );
    env.ok(&["explain", "--user", "alice", "--agent", "helper", &id]);
    env.ok(&["explain", "--user", "alice", "--agent", "helper", "999999"]);
    env.ok(&[
        "explain", "--admin", "--user", "bob", "--agent", "helper", &id,
    ]);
    let explained = entries("explain");
    let seen: BTreeSet<(String, String, String, bool)> = explained
        .iter()
        .map(|e| {
            (
                e["user"].as_str().unwrap().to_owned(),
                e["agent"].as_str().unwrap().to_owned(),
                e["fragment"].to_string(),
                e["admin"].as_bool().unwrap(),
            )
        })
        .collect();
    let expected: BTreeSet<(String, String, String, bool)> = [
        ("alice", "helper", id.as_str(), false),
        ("alice", "helper", "999999", false),
        ("bob", "helper", id.as_str(), true),
    ]
    .into_iter()
    .map(|(u, a, f, admin)| (u.to_owned(), a.to_owned(), f.to_owned(), admin))
    .collect();
    assert_eq!(seen, expected, "{explained:?}");
    // Audit entries hold ids, never text.
    let tail = env.ok(&["audit", "tail", "-n", "1000", "--json"]);
    assert!(!tail.contains("passport"), "{tail}");
    assert!(env.ok(&["audit", "verify"]).starts_with("intact"));
}
