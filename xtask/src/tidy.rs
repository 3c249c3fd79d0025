//! Tidy checks: the dependency edges between our crates follow the stack in DESIGN section 1.

use std::path::Path;

use anyhow::{Context, Result, bail};

/// Which of our crates each crate may depend on (normal, dev and build dependencies alike).
/// A crate that is not listed here may not exist: add it to the stack first.
const ALLOWED: &[(&str, &[&str])] = &[
    ("colmem-core", &[]),
    ("colmem-access", &["colmem-core"]),
    ("colmem-store", &["colmem-core"]),
    ("colmem-index", &["colmem-core"]),
    ("colmem-llm", &["colmem-core"]),
    ("colmem-ama", &LEVEL_1),
    ("colmem-cards", &LEVEL_1),
    ("colmem-eval", &["colmem-core", "colmem-llm"]),
    ("colmem-collab", &LEVEL_2),
    ("colmem", &LEVEL_3),
    ("colmem-cli", &["colmem"]),
];

const LEVEL_1: [&str; 5] = [
    "colmem-core",
    "colmem-access",
    "colmem-store",
    "colmem-index",
    "colmem-llm",
];
const LEVEL_2: [&str; 8] = [
    "colmem-core",
    "colmem-access",
    "colmem-store",
    "colmem-index",
    "colmem-llm",
    "colmem-ama",
    "colmem-cards",
    "colmem-eval",
];
const LEVEL_3: [&str; 9] = [
    "colmem-core",
    "colmem-access",
    "colmem-store",
    "colmem-index",
    "colmem-llm",
    "colmem-ama",
    "colmem-cards",
    "colmem-eval",
    "colmem-collab",
];

/// Level-2 crates reach storage and indexes only through traits, so they take level-1
/// crates with their default features (concrete backends) off.
const TRAIT_ONLY: &[&str] = &["colmem-ama", "colmem-cards", "colmem-eval"];
const BACKEND_CRATES: &[&str] = &["colmem-index", "colmem-llm"];

/// Checks one crate's manifest; returns every violation found.
pub fn check_manifest(manifest: &str, workspace: &toml::Table) -> Result<Vec<String>> {
    let doc: toml::Table = manifest.parse().context("parsing Cargo.toml")?;
    let name = doc
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .context("a crate manifest without [package] name")?;
    let mut problems = Vec::new();
    if name == "xtask" {
        return Ok(problems);
    }
    let Some((_, allowed)) = ALLOWED.iter().find(|(crate_name, _)| *crate_name == name) else {
        problems.push(format!(
            "crate {name} is not in the stack of DESIGN section 1: add it to xtask/src/tidy.rs ALLOWED deliberately"
        ));
        return Ok(problems);
    };
    let mut tables: Vec<(&str, &toml::Table)> = Vec::new();
    for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
        if let Some(t) = doc.get(section).and_then(|d| d.as_table()) {
            tables.push((section, t));
        }
    }
    if let Some(targets) = doc.get("target").and_then(|t| t.as_table()) {
        for target in targets.values().filter_map(|t| t.as_table()) {
            for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
                if let Some(t) = target.get(section).and_then(|d| d.as_table()) {
                    tables.push((section, t));
                }
            }
        }
    }
    for (section, deps) in tables {
        for (dep, spec) in deps {
            let real = spec
                .get("package")
                .and_then(|p| p.as_str())
                .unwrap_or(dep.as_str());
            if !(real == "colmem" || real.starts_with("colmem-")) {
                continue;
            }
            if !allowed.contains(&real) {
                problems.push(format!(
                    "{name} → {real} ({section}) is not allowed by the stack"
                ));
            }
            if TRAIT_ONLY.contains(&name) && BACKEND_CRATES.contains(&real) {
                let explicit = spec.get("default-features").and_then(|v| v.as_bool());
                let inherited = workspace
                    .get(real)
                    .and_then(|w| w.get("default-features"))
                    .and_then(|v| v.as_bool());
                if explicit.or(inherited) != Some(false) {
                    problems.push(format!(
                        "{name} → {real} must use default-features = false (traits, not backends)"
                    ));
                }
            }
        }
    }
    Ok(problems)
}

/// Checks every crate under `crates/` and `xtask/`.
pub fn check_workspace(root: &Path) -> Result<Vec<String>> {
    let root_manifest: toml::Table = std::fs::read_to_string(root.join("Cargo.toml"))?.parse()?;
    let workspace_deps = root_manifest
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(|d| d.as_table())
        .cloned()
        .unwrap_or_default();
    let mut problems = Vec::new();
    let mut seen = 0;
    for entry in std::fs::read_dir(root.join("crates"))? {
        let dir = entry?.path();
        let manifest = dir.join("Cargo.toml");
        if !manifest.exists() {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&manifest)
            .with_context(|| format!("reading {}", manifest.display()))?;
        let folder = dir.file_name().and_then(|f| f.to_str()).unwrap_or_default();
        let doc: toml::Table = text
            .parse()
            .with_context(|| format!("parsing {}", manifest.display()))?;
        let name = doc
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str());
        if name != Some(folder) {
            problems.push(format!(
                "crates/{folder} holds crate {name:?}: name folders after their crates"
            ));
        }
        if doc
            .get("lints")
            .and_then(|l| l.get("workspace"))
            .and_then(|w| w.as_bool())
            != Some(true)
        {
            problems.push(format!(
                "crates/{folder} must inherit the workspace lints ([lints] workspace = true)"
            ));
        }
        problems.extend(check_manifest(&text, &workspace_deps)?);
    }
    if seen == 0 {
        bail!("no crates found under {}", root.join("crates").display());
    }
    Ok(problems)
}

/// `cargo xtask tidy`.
pub fn run(root: &Path) -> Result<()> {
    let problems = check_workspace(root)?;
    if problems.is_empty() {
        println!("tidy: the dependency graph follows the stack");
        return Ok(());
    }
    for p in &problems {
        eprintln!("tidy: {p}");
    }
    bail!("{} tidy problem(s)", problems.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(name: &str, deps: &str) -> String {
        format!("[package]\nname = \"{name}\"\n\n[dependencies]\n{deps}\n")
    }

    fn workspace() -> toml::Table {
        "colmem-index = { path = \"x\", default-features = false }\ncolmem-llm = { path = \"y\" }"
            .parse()
            .unwrap()
    }

    #[test]
    fn the_workspace_follows_the_stack() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let problems = check_workspace(root).unwrap();
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn forbidden_edges_are_caught() {
        let cases = [
            (
                "colmem-store",
                "colmem-access = { workspace = true }",
                "not allowed",
            ),
            ("colmem-core", "colmem-store = \"0.1\"", "not allowed"),
            (
                "colmem-index",
                "store = { package = \"colmem-store\", path = \"../s\" }",
                "not allowed",
            ),
            (
                "colmem-cli",
                "colmem-store = { workspace = true }",
                "not allowed",
            ),
            (
                "colmem-eval",
                "colmem-ama = { workspace = true }",
                "not allowed",
            ),
            (
                "colmem-ama",
                "colmem-llm = { workspace = true }",
                "default-features = false",
            ),
            ("colmem-new", "", "not in the stack"),
        ];
        for (name, deps, expected) in cases {
            let problems = check_manifest(&manifest(name, deps), &workspace()).unwrap();
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{name}: {deps}: {problems:?}"
            );
        }
        let dev = "[package]\nname = \"colmem-llm\"\n[dev-dependencies]\ncolmem-index = { workspace = true }\n";
        assert_eq!(
            check_manifest(dev, &workspace()).unwrap().len(),
            1,
            "dev-dependencies count too"
        );
    }

    #[test]
    fn allowed_edges_pass() {
        let cases = [
            ("colmem-access", "colmem-core = { workspace = true }"),
            (
                "colmem-ama",
                "colmem-index = { workspace = true }\ncolmem-store = { workspace = true }",
            ),
            ("colmem", "colmem-collab = { workspace = true }"),
            ("colmem-cli", "colmem = { workspace = true }"),
        ];
        for (name, deps) in cases {
            let problems = check_manifest(&manifest(name, deps), &workspace()).unwrap();
            assert!(problems.is_empty(), "{name}: {problems:?}");
        }
    }
}
