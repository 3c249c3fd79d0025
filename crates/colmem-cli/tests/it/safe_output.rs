//! Text that would steer a terminal (ANSI CSI and OSC sequences, BEL) or hide and
//! reorder what it shows (bidirectional overrides, zero-width characters), stored by
//! bob through a crew agent alice may read and by alice herself, or given on the
//! command line, reaches no standard output or error of any command raw. The
//! commands are walked from the program's own clap tree: one the test does not
//! know how to run fails it.

use clap::CommandFactory as _;
use serde_json::Value;

use crate::Env;

/// CSI (clear screen, red), OSC (window title) ended by BEL, an 8-bit CSI, bidi
/// overrides and isolates, zero-width characters, a line separator and a line feed.
const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{1b}[31m \u{9b}1m \u{202e}evil\u{202c} \u{2066}iso\u{2069} zero\u{200b}width\u{feff}\u{2060}\u{200f} line\u{2028}sep\u{2029}\r\nend";

/// The characters no output may hold raw: controls but the line feed, bidi
/// controls, zero-width characters, the line and paragraph separators.
fn raw_unsafe(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n')
                || matches!(
                    c,
                    '\u{61c}'
                        | '\u{200b}'..='\u{200f}'
                        | '\u{2028}'..='\u{202e}'
                        | '\u{2060}'
                        | '\u{2066}'..='\u{2069}'
                        | '\u{feff}'
                )
        })
        .collect()
}

/// Every leaf command of the program, as the words that name it (`audit tail`).
fn leaf_commands() -> Vec<String> {
    fn walk(command: &clap::Command, path: &str, out: &mut Vec<String>) {
        let mut leaf = true;
        for sub in command.get_subcommands() {
            if sub.get_name() == "help" {
                continue;
            }
            leaf = false;
            let name = format!("{path} {}", sub.get_name());
            walk(sub, name.trim(), out);
        }
        if leaf {
            out.push(path.to_owned());
        }
    }
    let mut out = Vec::new();
    walk(&colmem_cli::Cli::command(), "", &mut out);
    out
}

/// alice and bob served by agents of one crew: what bob tells scout for the crew
/// (`--scope group:crew`) alice (who may invoke scout too) reads through helper.
fn crew() -> Env {
    let env = Env::with_alice();
    for args in [
        &["principal", "add", "agent", "scout"][..],
        &["principal", "add", "group", "crew"],
        &["principal", "add", "resource", "wiki"],
        &["grant", "member", "--group", "crew", "--agent", "helper"],
        &["grant", "member", "--group", "crew", "--agent", "scout"],
        &["grant", "invoke", "--user", "bob", "--agent", "scout"],
        &["grant", "invoke", "--user", "alice", "--agent", "scout"],
    ] {
        env.ok(args);
    }
    env.ok(&[
        "remember",
        "--scope",
        "group:crew",
        "--user",
        "bob",
        "--agent",
        "scout",
        &format!("Bob's lunch today is soup {HOSTILE}"),
    ]);
    env.ok(&[
        "remember",
        "--user",
        "alice",
        "--agent",
        "helper",
        &format!("My home is in Lisbon {HOSTILE}"),
    ]);
    let trajectories = env.path("hostile.jsonl");
    let task = format!("A van carries 4 crates {HOSTILE}. How many vans carry 31 crates?");
    let line = serde_json::json!({
        "id": format!("t{HOSTILE}"),
        "task": task,
        "round": 1,
        "steps": [{"action": format!("divide 31 by 4 {HOSTILE}"), "decision": {"name": format!("rounding{HOSTILE}"), "chosen": "floor", "alternatives": ["ceil"]}}],
        "outcome": {"score": 0.0, "success": false, "feedback": format!("wrong {HOSTILE}")},
    });
    std::fs::write(&trajectories, format!("{line}\n")).unwrap();
    env.ok(&[
        "cards",
        "learn",
        "--user",
        "bob",
        "--agent",
        "scout",
        "--scope",
        "group:crew",
        trajectories.to_str().unwrap(),
    ]);
    env
}

/// A LoCoMo file whose sample id, speakers and words are hostile.
fn hostile_locomo(env: &Env) -> String {
    let file = env.path("hostile-locomo.json");
    let value = serde_json::json!([{
        "sample_id": format!("conv{HOSTILE}"),
        "conversation": {
            "speaker_a": format!("Ann{HOSTILE}"),
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": format!("Ann{HOSTILE}"), "dia_id": "D1:1", "text": format!("I went sailing {HOSTILE}")},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "How was it?"}
            ]
        }
    }]);
    std::fs::write(&file, value.to_string()).unwrap();
    file.to_str().unwrap().to_owned()
}

/// The ways the test runs each leaf command but `init`: what shows stored text, and
/// what echoes hostile input (most of it refused). `bobs` is a fragment of bob's
/// alice reads, `key` the subject key of alice's own hostile fact.
fn invocations(env: &Env, command: &str, bobs: &str, key: &str) -> Vec<Vec<String>> {
    let own = |args: &[&str]| args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    let hostile_path = |name: &str| {
        env.path(&format!("{name}{HOSTILE}"))
            .to_str()
            .unwrap()
            .to_owned()
    };
    let alice = ["--user", "alice", "--agent", "helper"];
    let with_alice = |rest: &[&str]| {
        let mut args = Vec::new();
        args.extend(alice.iter().map(|a| (*a).to_owned()));
        args.extend(rest.iter().map(|a| (*a).to_owned()));
        args
    };
    let prefixed = |words: &str, rest: Vec<String>| {
        let mut args: Vec<String> = words.split(' ').map(str::to_owned).collect();
        args.extend(rest);
        args
    };
    match command {
        "principal add" => vec![
            own(&["principal", "add", "user", "carol"]),
            own(&["principal", "add", "user", HOSTILE]),
            own(&["principal", "add", HOSTILE, "dave"]),
        ],
        "grant invoke" => vec![
            own(&["grant", "invoke", "--user", "carol", "--agent", "helper"]),
            own(&[
                "grant", "invoke", "--user", "carol", "--agent", "helper", "--at", HOSTILE,
            ]),
        ],
        "grant access" => vec![
            own(&["grant", "access", "--agent", "scout", "--resource", "wiki"]),
            own(&["grant", "access", "--agent", HOSTILE, "--resource", "wiki"]),
        ],
        "grant member" => vec![
            own(&["grant", "member", "--group", "crew", "--agent", "outsider"]),
            own(&["grant", "member", "--group", HOSTILE, "--agent", "outsider"]),
        ],
        "revoke invoke" => vec![
            own(&["revoke", "invoke", "--user", "carol", "--agent", "helper"]),
            own(&[
                "revoke", "invoke", "--user", "carol", "--agent", "helper", "--at", HOSTILE,
            ]),
        ],
        "revoke access" => vec![
            own(&["revoke", "access", "--agent", "scout", "--resource", "wiki"]),
            own(&[
                "revoke",
                "access",
                "--agent",
                "scout",
                "--resource",
                HOSTILE,
            ]),
        ],
        "revoke member" => vec![
            own(&["revoke", "member", "--group", "crew", "--agent", "outsider"]),
            own(&[
                "revoke",
                "member",
                "--group",
                "crew",
                "--member-group",
                HOSTILE,
            ]),
        ],
        "remember" => vec![
            prefixed("remember", with_alice(&[&format!("I like tea {HOSTILE}")])),
            prefixed("remember", with_alice(&["--said-at", HOSTILE, "tea"])),
            prefixed("remember", with_alice(&["--scope", HOSTILE, "tea"])),
            prefixed(
                "remember",
                with_alice(&["--speaker", HOSTILE, "--listener", HOSTILE, "I like cake"]),
            ),
        ],
        "recall" => vec![
            prefixed("recall", with_alice(&["lunch", "soup"])),
            prefixed("recall", with_alice(&["--all-versions", "home", "Lisbon"])),
            prefixed("recall", with_alice(&[HOSTILE])),
            prefixed("recall", with_alice(&["--as-of", HOSTILE, "lunch"])),
        ],
        "answer" => vec![
            prefixed(
                "answer",
                with_alice(&["what", "is", "bob's", "lunch", "today?"]),
            ),
            prefixed("answer", with_alice(&["where", "is", "alice's", "home?"])),
            prefixed("answer", with_alice(&[&format!("zzz {HOSTILE}")])),
        ],
        "history" => vec![
            prefixed("history", with_alice(&[key])),
            prefixed("history", with_alice(&[HOSTILE])),
        ],
        "cards compose" => vec![
            prefixed(
                "cards compose",
                with_alice(&["A van carries 4 crates. How many vans carry 31 crates?"]),
            ),
            prefixed(
                "cards compose",
                with_alice(&[
                    "--condition",
                    HOSTILE,
                    "A van carries 4 crates. How many vans carry 31 crates?",
                ]),
            ),
            prefixed("cards compose", with_alice(&[&format!("zzz {HOSTILE}")])),
        ],
        "cards learn" => {
            let bad = env.path("bad.jsonl");
            std::fs::write(&bad, format!("{{\"{HOSTILE}\": 1}}\n")).unwrap();
            vec![
                prefixed("cards learn", with_alice(&[bad.to_str().unwrap()])),
                prefixed("cards learn", with_alice(&[&hostile_path("missing")])),
                prefixed(
                    "cards learn",
                    with_alice(&["--scope", HOSTILE, bad.to_str().unwrap()]),
                ),
            ]
        }
        "audit tail" => vec![own(&["audit", "tail", "-n", "100"])],
        "audit verify" => vec![
            own(&["audit", "verify"]),
            own(&["audit", "verify", "--head", HOSTILE]),
        ],
        "audit head" => vec![own(&["audit", "head"])],
        "audit matrix" => vec![own(&["audit", "matrix"])],
        "audit who-could-see" => vec![
            own(&["audit", "who-could-see", bobs]),
            own(&["audit", "who-could-see", HOSTILE]),
            own(&["audit", "who-could-see", bobs, "--at", HOSTILE]),
        ],
        "import locomo" => vec![
            own(&["import", "locomo", &hostile_locomo(env)]),
            own(&["import", "locomo", "--grant", &hostile_locomo(env)]),
            own(&["import", "locomo", &hostile_path("missing")]),
            own(&["import", "locomo", "--agent", HOSTILE, &hostile_locomo(env)]),
        ],
        "reindex" => vec![own(&["reindex"])],
        // Dry runs: the fragments stay for the commands after.
        "forget" => vec![
            prefixed("forget", with_alice(&["--dry-run", "--key", key])),
            prefixed("forget", with_alice(&["--dry-run", "--query", "my home"])),
            prefixed("forget", with_alice(&["--dry-run", "--query", HOSTILE])),
            prefixed("forget", with_alice(&["--dry-run", "--id", HOSTILE])),
            prefixed("forget", with_alice(&["--dry-run", "--id", bobs])),
        ],
        "purge" => vec![
            own(&["purge", "--dry-run", "--user", "alice"]),
            own(&["purge", "--dry-run", "--user", HOSTILE]),
            own(&["purge", "--dry-run", "--id", HOSTILE]),
            own(&["purge", "--dry-run", "--deleted-before", HOSTILE]),
        ],
        "retention" => vec![prefixed("retention", with_alice(&[]))],
        "explain" => vec![
            prefixed("explain", with_alice(&[bobs])),
            prefixed("explain", with_alice(&["--admin", bobs])),
            own(&["explain", "--user", "alice", "--agent", "outsider", bobs]),
            prefixed("explain", with_alice(&[HOSTILE])),
        ],
        "export" => vec![
            own(&["export", "--output", &hostile_path("export")]),
            own(&["export", "--output", &hostile_path("export")]),
        ],
        "backup" => vec![
            own(&["backup", &hostile_path("backup")]),
            own(&["backup", &hostile_path("backup")]),
        ],
        other => panic!(
            "the test does not know how to run `colmem {other}`: add the ways it prints stored or given text to `invocations`"
        ),
    }
}

/// The id of a fragment bob stored through scout that alice reads through helper.
fn bobs_fragment(env: &Env) -> String {
    let recall = env.json(&[
        "recall", "--user", "alice", "--agent", "helper", "--json", "bob's", "lunch",
    ]);
    let hit = recall["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["user"] == "bob")
        .unwrap_or_else(|| panic!("alice reads nothing of bob's: {recall}"));
    hit["id"].to_string()
}

/// The subject key of alice's own hostile fact.
fn alices_key(env: &Env) -> String {
    let recall = env.json(&[
        "recall", "--user", "alice", "--agent", "helper", "--json", "home", "Lisbon",
    ]);
    recall["hits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["user"] == "alice")
        .find_map(|h| h["key"].as_str().filter(|k| k.starts_with("alice/")))
        .unwrap_or_else(|| panic!("alice's home has no key: {recall}"))
        .to_owned()
}

#[test]
fn no_command_prints_stored_or_given_text_raw() {
    let env = crew();
    // A data directory whose path is hostile: `init` names it.
    let mut odd = Env::new();
    odd.dir = odd.path(&format!("data{HOSTILE}"));
    let (bobs, key) = (bobs_fragment(&env), alices_key(&env));
    let commands = leaf_commands();
    assert!(commands.len() > 20, "{commands:?}");
    let mut shown_escaped = Vec::new();
    let mut leaks = Vec::new();
    for command in &commands {
        let runs = if command == "init" {
            vec![
                (&odd, vec!["init".to_owned()]),
                (&odd, vec!["init".to_owned()]),
            ]
        } else {
            invocations(&env, command, &bobs, &key)
                .into_iter()
                .map(|args| (&env, args))
                .collect()
        };
        for (env, args) in runs {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = env.run(&args);
            for (stream, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
                let raw = raw_unsafe(text);
                if !raw.is_empty() {
                    leaks.push(format!("colmem {args:?} {stream} holds {raw:?}:\n{text}"));
                }
                if text.contains("\\u{1b}") {
                    shown_escaped.push(command.clone());
                }
            }
            // Nothing crashed on the way.
            assert!(!out.stderr.contains("panicked"), "{args:?}: {out:?}");
        }
    }
    assert!(leaks.is_empty(), "{}", leaks.join("\n\n"));
    // The hostile text did reach the commands that show stored text, escaped.
    for command in [
        "recall",
        "answer",
        "history",
        "cards compose",
        "forget",
        "init",
        "backup",
    ] {
        assert!(
            shown_escaped.iter().any(|c| c == command),
            "`colmem {command}` never showed the hostile text: {shown_escaped:?}"
        );
    }
}

/// A line break in stored text stays inside its table cell.
#[test]
fn a_line_break_in_stored_text_keeps_the_table_whole() {
    let env = Env::with_alice();
    env.ok(&[
        "remember",
        "--user",
        "alice",
        "--agent",
        "helper",
        "My favourite tea is sencha\nID  SCORE  forged row",
    ]);
    let table = env.ok(&[
        "recall", "--user", "alice", "--agent", "helper", "sencha", "tea",
    ]);
    let rows: Vec<&str> = table.lines().collect();
    assert!(rows[0].starts_with("ID"), "{table}");
    assert!(
        rows[1..]
            .iter()
            .all(|row| row.chars().next().is_some_and(|c| c.is_ascii_digit())),
        "a row that is not a fragment's:\n{table}"
    );
    assert!(table.contains("sencha\\nID  SCORE  forged row"), "{table}");
    let json: Value = env.json(&[
        "recall", "--user", "alice", "--agent", "helper", "--json", "sencha",
    ]);
    assert!(
        json.to_string().contains("sencha\\nID"),
        "JSON keeps serde's escapes: {json}"
    );
}
