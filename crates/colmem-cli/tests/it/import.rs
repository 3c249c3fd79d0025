//! `import` widens access only when told to: without `--grant`, a conversation whose
//! user or invoke edge is missing (never granted, or revoked) is refused before
//! anything is written, naming what is missing.

use crate::Env;

/// A synthetic LoCoMo file: one conversation whose sample id is `sample_id`.
fn conversation(sample_id: &str) -> String {
    format!(
        r#"[{{"sample_id": "{sample_id}", "conversation": {{
            "speaker_a": "Ines", "speaker_b": "Tomas",
            "session_1_date_time": "9:00 am on 3 March, 2024",
            "session_1": [
                {{"speaker": "Ines", "dia_id": "D1:1", "text": "I keep bees on the allotment behind the station."}},
                {{"speaker": "Tomas", "dia_id": "D1:2", "text": "How many hives do you have now?"}}
            ]}}}}]"#
    )
}

/// The number of audit entries: whatever is written is audited.
fn audited(env: &Env) -> u64 {
    let status = env.json(&["audit", "verify", "--json"]);
    status["entries"].as_u64().unwrap()
}

#[test]
fn an_import_does_not_undo_a_revocation_unless_told_to_grant() {
    let env = Env::with_alice();
    env.ok(&["principal", "add", "agent", "assistant"]);
    env.ok(&["grant", "invoke", "--user", "alice", "--agent", "assistant"]);
    env.ok(&[
        "revoke",
        "invoke",
        "--user",
        "alice",
        "--agent",
        "assistant",
    ]);
    let file = env.path("alice.json");
    std::fs::write(&file, conversation("alice")).unwrap();
    let (export, entries) = (env.ok(&["export"]), audited(&env));

    let err = env.fails(&["import", "locomo", file.to_str().unwrap()], 5);
    assert!(
        err.contains("alice") && err.contains("assistant") && err.contains("--grant"),
        "the refusal names the edge and the way to grant it: {err}"
    );
    assert!(err.contains("nothing was imported"), "{err}");
    assert_eq!(env.ok(&["export"]), export, "nothing was written");
    assert_eq!(audited(&env), entries, "nothing was recorded");
    env.fails(
        &["recall", "--user", "alice", "--agent", "assistant", "bees"],
        5,
    );

    // Told to grant, the import grants the edge (audited as a grant) and says so.
    let out = env.ok(&["import", "locomo", "--grant", file.to_str().unwrap()]);
    assert!(
        out.contains("granted") && out.contains("alice") && out.contains("assistant"),
        "{out}"
    );
    let tail = env.ok(&["audit", "tail", "-n", "100"]);
    assert_eq!(
        tail.matches("grant invoke(alice, assistant)").count(),
        2,
        "the first grant and the import's: {tail}"
    );
    let hits = crate::recall_contents(&env, "alice", "assistant", "bees");
    assert!(hits.iter().any(|h| h.contains("bees")), "{hits:?}");
}

#[test]
fn an_import_without_grant_refuses_a_conversation_whose_principals_are_missing() {
    let env = Env::new();
    env.ok(&["init"]);
    let file = env.path("new.json");
    std::fs::write(&file, conversation("newcomer")).unwrap();
    // Neither the user nor the agent exists: not found, both named.
    let err = env.fails(&["import", "locomo", file.to_str().unwrap()], 4);
    assert!(
        err.contains("newcomer") && err.contains("assistant") && err.contains("--grant"),
        "{err}"
    );
    assert_eq!(env.ok(&["export"]), "", "nothing was written");
    assert_eq!(audited(&env), 0, "nothing was recorded");
    // Registered and granted beforehand, the import needs no --grant.
    env.ok(&["principal", "add", "user", "newcomer"]);
    env.ok(&["principal", "add", "agent", "assistant"]);
    env.fails(&["import", "locomo", file.to_str().unwrap()], 5);
    env.ok(&[
        "grant",
        "invoke",
        "--user",
        "newcomer",
        "--agent",
        "assistant",
    ]);
    let out = env.ok(&["import", "locomo", file.to_str().unwrap()]);
    assert!(!out.contains("granted"), "{out}");
    assert!(out.contains("imported 1 conversation(s)"), "{out}");
}
