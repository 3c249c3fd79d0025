//! Private files: the data directory is its owner's alone (mode 0700, and so is
//! every directory in it) and so is every file colmem keeps there or writes out
//! (0600), whatever the umask. A new file written out — a backup, an export, the
//! configuration — appears complete and private, and never over an existing file
//! nor through a symbolic link.
//!
//! SQLite creates a store's `-wal` and `-shm` files with the mode of the store's
//! file, so once that is 0600 they are too; a store SQLite has just created (with
//! the umask's mode) is made private before any other process could open it, the
//! data directory being private already.

use std::fs::File;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The mode of the data directory and of every directory in it.
const DIR_MODE: u32 = 0o700;
/// The mode of every file colmem keeps or writes.
const FILE_MODE: u32 = 0o600;

/// Creates the directory `dir` (and its missing parents) private, unless it exists:
/// then [`tighten`] makes it private, saying so if others had access.
pub(crate) fn create_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        what: "cannot create the data directory",
        path: dir.to_path_buf(),
        source,
    })?;
    restrict(dir).map(|_| ())
}

/// Makes `dir` and each of `names` in it private, directories with everything in
/// them; what is missing or a symbolic link (never followed out of the directory) is
/// left alone. Returns the paths that were open to others, now closed; refuses,
/// naming it, a path whose mode cannot be changed.
pub(crate) fn tighten(dir: &Path, names: &[&str]) -> Result<Vec<PathBuf>> {
    let mut opened = Vec::new();
    if restrict(dir)? {
        opened.push(dir.to_path_buf());
    }
    for name in names {
        tighten_tree(&dir.join(name), &mut opened)?;
    }
    Ok(opened)
}

/// Makes `path` and, for a directory, everything in it private. A path that is
/// gone meanwhile (a writer in another process replacing its index snapshot) is
/// passed over.
fn tighten_tree(path: &Path, opened: &mut Vec<PathBuf>) -> Result<()> {
    let refuse = |source| Error::NotPrivate {
        path: path.to_path_buf(),
        source,
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(refuse(e)),
    };
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    if restrict(path)? {
        opened.push(path.to_path_buf());
    }
    if meta.is_dir() {
        let entries = match std::fs::read_dir(path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(refuse(e)),
        };
        for entry in entries {
            tighten_tree(&entry.map_err(refuse)?.path(), opened)?;
        }
    }
    Ok(())
}

/// Sets the mode of `path` (not a symbolic link) to 0700 for a directory, 0600 for a
/// file; returns whether others had any access before (not when it is gone).
#[cfg(unix)]
fn restrict(path: &Path) -> Result<bool> {
    use std::os::unix::fs::PermissionsExt as _;
    let refuse = |source: std::io::Error| {
        if source.kind() == ErrorKind::NotFound {
            Ok(false)
        } else {
            Err(Error::NotPrivate {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) => return refuse(e),
    };
    let mode = meta.permissions().mode() & 0o777;
    let wanted = if meta.is_dir() { DIR_MODE } else { FILE_MODE };
    if mode != wanted
        && let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(wanted))
    {
        return refuse(e);
    }
    Ok(mode & 0o077 != 0)
}

/// Modes are Unix's: elsewhere the platform's defaults stand.
#[cfg(not(unix))]
fn restrict(_path: &Path) -> Result<bool> {
    Ok(false)
}

/// A new file that appears at its path only once complete and private: it is
/// written in a private directory made beside the path, then made 0600 and moved
/// onto the path without replacing anything there. Whatever is at the path — a
/// file, a directory, a symbolic link, dangling or not — refuses it, and nothing is
/// written there or where a link points.
#[derive(Debug)]
pub struct PrivateFile {
    /// Removed, with whatever is left in it, when the file is published or dropped.
    _stage: tempfile::TempDir,
    staged: PathBuf,
    dest: PathBuf,
}

impl PrivateFile {
    /// Prepares a new file at `dest`: [`Error::Exists`] when anything is there.
    pub fn new(dest: impl AsRef<Path>) -> Result<PrivateFile> {
        let dest = dest.as_ref();
        refuse_existing(dest)?;
        let parent = match dest.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let cannot_create = |source| Error::Io {
            what: "cannot create a file in",
            path: parent.to_path_buf(),
            source,
        };
        let mut builder = tempfile::Builder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            builder.permissions(std::fs::Permissions::from_mode(DIR_MODE));
        }
        let stage = builder.tempdir_in(parent).map_err(cannot_create)?;
        restrict(stage.path())?;
        let name = dest.file_name().unwrap_or("new".as_ref());
        let staged = stage.path().join(name);
        Ok(PrivateFile {
            staged,
            _stage: stage,
            dest: dest.to_path_buf(),
        })
    }

    /// Where the file is written until it is published: nothing is there yet, and
    /// only its owner may reach it.
    pub fn staged(&self) -> &Path {
        &self.staged
    }

    /// The path the file will appear at.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Creates the staged file, readable and writable by its owner only.
    pub fn create(&self) -> Result<File> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(FILE_MODE);
        }
        options.open(&self.staged).map_err(|source| Error::Io {
            what: "cannot create",
            path: self.dest.clone(),
            source,
        })
    }

    /// Makes the staged file private (0600), writes it to disk and moves it onto its
    /// path: [`Error::Exists`] if anything appeared there meanwhile, which is left as
    /// it was.
    pub fn publish(self) -> Result<()> {
        restrict(&self.staged)?;
        let cannot_write = |source| Error::Io {
            what: "cannot write",
            path: self.dest.clone(),
            source,
        };
        File::open(&self.staged)
            .and_then(|file| file.sync_all())
            .map_err(cannot_write)?;
        tempfile::TempPath::try_from_path(&self.staged)
            .map_err(cannot_write)?
            .persist_noclobber(&self.dest)
            .map_err(|e| {
                if e.error.kind() == ErrorKind::AlreadyExists {
                    Error::Exists {
                        path: self.dest.clone(),
                    }
                } else {
                    cannot_write(e.error)
                }
            })?;
        Ok(())
    }
}

/// [`Error::Exists`] when anything is at `path`, a symbolic link included (dangling
/// or not: it is never followed).
fn refuse_existing(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Err(Error::Exists {
            path: path.to_path_buf(),
        }),
        Err(_) => Ok(()),
    }
}
