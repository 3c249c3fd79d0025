//! On-disk snapshots of a hybrid index: a directory of backend files plus a
//! manifest with the last applied change sequence and its stamp, the embedder id and a
//! blake3 hash of every file, so a missing, truncated or damaged file is
//! detected on open and the index is rebuilt instead of trusted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The snapshot format; bump it when the layout or the lexical analyzer changes (old
/// snapshots are rebuilt).
pub(crate) const FORMAT: u32 = 7;
const MANIFEST: &str = "manifest.json";
pub(crate) const CURRENT: &str = "current";
const NEXT: &str = "next";
const OLD: &str = "old";

/// What a snapshot says about itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    pub format: u32,
    pub seq: u64,
    /// The stamp of change `seq` in the store the snapshot follows (0 at seq 0). Absent
    /// in manifests of older formats, which are rebuilt.
    #[serde(default)]
    pub stamp: u64,
    pub embedder: Option<String>,
    pub dim: usize,
    pub vector_backend: String,
    pub lexical_backend: Option<String>,
    /// Relative path → blake3 hex of every file in the snapshot but the manifest.
    pub files: BTreeMap<String, String>,
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in entries {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.is_dir() {
            walk(root, &path, out)?;
        } else if path.strip_prefix(root).ok() != Some(Path::new(MANIFEST)) {
            out.push(path);
        }
    }
    Ok(())
}

fn hash_file(path: &Path) -> Result<String> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = blake3::Hasher::new();
    std::io::copy(&mut file, &mut hasher).map_err(|e| Error::io(path, e))?;
    Ok(hasher.finalize().to_hex().to_string())
}

/// Hashes every file under `dir` (but the manifest), by relative path.
pub(crate) fn hash_tree(dir: &Path) -> Result<BTreeMap<String, String>> {
    let mut files = Vec::new();
    walk(dir, dir, &mut files)?;
    let mut hashes = BTreeMap::new();
    for path in files {
        let rel = path
            .strip_prefix(dir)
            .map_err(|_| Error::corrupt(&path, "a file outside the snapshot"))?
            .to_string_lossy()
            .replace('\\', "/");
        // Writer locks are not part of the data.
        if rel
            .rsplit('/')
            .next()
            .is_some_and(|n| n.starts_with(".tantivy-"))
        {
            continue;
        }
        hashes.insert(rel, hash_file(&path)?);
    }
    Ok(hashes)
}

/// A fresh, empty directory to write the next snapshot into.
pub(crate) fn begin(root: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(root).map_err(|e| Error::io(root, e))?;
    let next = root.join(NEXT);
    if next.exists() {
        std::fs::remove_dir_all(&next).map_err(|e| Error::io(&next, e))?;
    }
    std::fs::create_dir_all(&next).map_err(|e| Error::io(&next, e))?;
    Ok(next)
}

/// Writes the manifest of the snapshot in `next` and makes it the current one.
pub(crate) fn commit(root: &Path, next: &Path, mut manifest: Manifest) -> Result<()> {
    manifest.files = hash_tree(next)?;
    let path = next.join(MANIFEST);
    let bytes = serde_json::to_vec_pretty(&manifest)
        .map_err(|e| Error::corrupt(&path, format!("cannot encode: {e}")))?;
    std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))?;
    let current = root.join(CURRENT);
    let old = root.join(OLD);
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(|e| Error::io(&old, e))?;
    }
    if current.exists() {
        std::fs::rename(&current, &old).map_err(|e| Error::io(&current, e))?;
    }
    std::fs::rename(next, &current).map_err(|e| Error::io(next, e))?;
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(|e| Error::io(&old, e))?;
    }
    Ok(())
}

/// Reads and verifies the current snapshot's manifest: every listed file must
/// exist with the recorded hash, and no data file may be unlisted.
pub(crate) fn verify(root: &Path) -> Result<(PathBuf, Manifest)> {
    let current = root.join(CURRENT);
    let path = current.join(MANIFEST);
    if !path.is_file() {
        return Err(Error::corrupt(&path, "there is no snapshot"));
    }
    let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    let manifest: Manifest =
        serde_json::from_slice(&bytes).map_err(|e| Error::corrupt(&path, e.to_string()))?;
    if manifest.format != FORMAT {
        return Err(Error::corrupt(
            &path,
            format!("format {} is not {FORMAT}", manifest.format),
        ));
    }
    let found = hash_tree(&current)?;
    for (file, hash) in &manifest.files {
        match found.get(file) {
            None => return Err(Error::corrupt(&current.join(file), "the file is missing")),
            Some(h) if h != hash => {
                return Err(Error::corrupt(
                    &current.join(file),
                    "its content does not match the manifest (truncated or damaged)",
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(extra) = found.keys().find(|f| !manifest.files.contains_key(*f)) {
        return Err(Error::corrupt(
            &current.join(extra),
            "a file the manifest does not list",
        ));
    }
    Ok((current, manifest))
}
