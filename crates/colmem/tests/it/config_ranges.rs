//! Every numeric key of the configuration, found by walking the configuration type
//! itself (serialised), has a range; a value out of it (negative, zero where that
//! is invalid, huge, not a number) is refused when the configuration is read, in
//! `colmem.toml` and in a `COLMEM_…` override alike, as invalid input naming the key.

use colmem::{Config, ErrorKind, key_range};
use serde_json::Value;

/// Configurations whose serialisation holds every key: the default, and each
/// section the default leaves out (`[chat]`) or holds one kind of (`[embedder]`),
/// written with only the keys they cannot do without.
const BASES: &[&str] = &[
    "",
    "[chat]\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\n",
    "[embedder]\nkind = \"local\"\ndir = \"models/minilm\"\n",
    "[embedder]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\ndim = 8\n",
];

/// A leaf of a serialised configuration: its path, and whether it holds a number
/// (else it is `None`).
struct Leaf {
    path: Vec<String>,
    numeric: bool,
}

fn leaves(value: &Value, path: &mut Vec<String>, out: &mut Vec<Leaf>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                path.push(key.clone());
                leaves(value, path, out);
                path.pop();
            }
        }
        Value::Number(_) | Value::Null => out.push(Leaf {
            path: path.clone(),
            numeric: value.is_number(),
        }),
        // Strings, booleans and lists (of names, redactions, pairs) hold no numeric key.
        _ => {}
    }
}

/// `base` with `value` (a TOML literal) at `path`, read as `colmem.toml` and, in
/// turn, from an empty-but-`base` file with the override variable.
fn read_both_ways(
    base: &str,
    path: &[String],
    value: &str,
) -> [(String, colmem::Result<Config>); 2] {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("colmem.toml");
    let mut table: toml::Table = base.parse().unwrap();
    let (key, tables) = path.split_last().unwrap();
    let mut current = &mut table;
    for name in tables {
        current = current
            .entry(name.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .unwrap();
    }
    let literal: toml::Table = format!("v = {value}").parse().unwrap();
    current.insert(key.clone(), literal["v"].clone());
    std::fs::write(&file, toml::to_string(&table).unwrap()).unwrap();
    let from_file = Config::load(&file, true, Vec::new());
    std::fs::write(&file, base).unwrap();
    let var = format!(
        "COLMEM_{}",
        path.iter()
            .map(|p| p.to_uppercase())
            .collect::<Vec<_>>()
            .join("__")
    );
    let from_env = Config::load(&file, true, vec![(var.clone(), value.to_owned())]);
    [("colmem.toml".to_owned(), from_file), (var, from_env)]
}

/// TOML literals of `value`: a whole number as one.
fn literal(value: f64) -> String {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else if value.is_nan() {
        "nan".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "inf" } else { "-inf" }.to_owned()
    } else {
        format!("{value:e}")
    }
}

#[test]
fn every_numeric_key_refuses_values_out_of_its_range_naming_the_key() {
    let mut problems = Vec::new();
    let mut tried = 0;
    let mut keys = std::collections::BTreeSet::new();
    for base in BASES {
        let config = Config::from_toml(base, "base").unwrap();
        let mut found = Vec::new();
        leaves(
            &serde_json::to_value(&config).unwrap(),
            &mut Vec::new(),
            &mut found,
        );
        for leaf in found {
            let key = leaf.path.join(".");
            let Some(range) = key_range(&key) else {
                if leaf.numeric {
                    problems.push(format!(
                        "{key} is a numeric key with no range in KEY_RANGES"
                    ));
                } else if read_both_ways(base, &leaf.path, "1")
                    .iter()
                    .any(|(_, r)| r.is_ok())
                {
                    // A key left out by default that takes a number.
                    problems.push(format!(
                        "{key} takes a number but has no range in KEY_RANGES"
                    ));
                }
                continue;
            };
            keys.insert(key.clone());
            let (tables, name) = leaf.path.split_at(leaf.path.len() - 1);
            let named = format!("[{}] {}", tables.join("."), name[0]);
            let mut values = vec![
                -1.0,
                0.0,
                4_000_000_000.0,
                1e30,
                -1e30,
                f64::NAN,
                f64::INFINITY,
                range.min - 1.0,
                range.max + 1.0,
            ];
            if range.whole {
                values.push(range.min + 0.5);
            }
            for value in values.into_iter().filter(|v| !range.admits(*v)) {
                let value = literal(value);
                for (via, read) in read_both_ways(base, &leaf.path, &value) {
                    tried += 1;
                    match read {
                        Ok(_) => {
                            problems.push(format!("{key} = {value} through {via} was accepted"))
                        }
                        Err(err) => {
                            let text = err.to_string();
                            if err.kind() != ErrorKind::InvalidInput || !text.contains(&named) {
                                problems.push(format!(
                                    "{key} = {value} through {via}: {:?} {text}",
                                    err.kind()
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The walk found the keys of every section, and tried each.
    for key in [
        "embedder.dim",
        "chat.timeout_ms",
        "embedder.max_seq_len",
        "pipeline.retention_ms",
        "pipeline.max_turn_bytes",
        "cards.write.bounds.sources",
        "store.max_value_bytes",
        "policy.read.min_score",
        "roles.max_tokens",
    ] {
        assert!(keys.contains(key), "{key} not found: {keys:?}");
    }
    assert_eq!(
        keys.len(),
        colmem::KEY_RANGES.len(),
        "a range names no key of the configuration"
    );
    assert!(tried > 1000, "{tried}");
}
