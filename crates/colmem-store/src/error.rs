//! The store's errors: typed, with the broad [`ErrorKind`] callers branch on.

use std::path::PathBuf;
use std::time::Duration;

use colmem_core::{ErrorKind, FeedError, FragmentId, Timestamp};

/// `Result` with the store's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong in the store. Every variant leaves stored data as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No fragment (or card) has this id, or it was purged.
    #[error("no fragment with id {id}: check the id, it may have been purged")]
    NotFound {
        /// The id asked for.
        id: FragmentId,
    },
    /// A value is larger than the configured limit.
    #[error(
        "{what} is {len} bytes, over the limit of {limit}: split it or raise the store's max_value_bytes"
    )]
    TooLarge {
        /// Which value.
        what: &'static str,
        /// Its size in bytes.
        len: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The input is malformed.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// An access event dated before the moment the last one was recorded.
    #[error(
        "access event dated {at} is before the last access change was recorded ({recorded}): what could be read then is not rewritten; is the clock behind?"
    )]
    AccessEventBackdated {
        /// The refused event's date.
        at: Timestamp,
        /// When the last access event was recorded.
        recorded: Timestamp,
    },
    /// An idempotency key already used for a different write.
    #[error("idempotency key {key:?} was already used for a different write: use a fresh key")]
    IdempotencyConflict {
        /// The key.
        key: String,
    },
    /// The fragment cannot be changed in its current state.
    #[error(
        "fragment {id} is {state}: only a current fragment can be superseded, and a deleted one cannot be deleted again"
    )]
    NotCurrent {
        /// The fragment.
        id: FragmentId,
        /// `"deleted"` or `"superseded"`.
        state: &'static str,
    },
    /// The database stayed locked past the busy deadline.
    #[error(
        "the database stayed busy for {waited:?}: retry later or raise the store's busy_deadline"
    )]
    Busy {
        /// How long the store retried.
        waited: Duration,
    },
    /// The store was opened read-only, or the file cannot be written.
    #[error("the store is read-only: open it read-write to change it")]
    ReadOnly,
    /// The disk (or the configured page limit) is full: SQLite's `SQLITE_FULL`, which
    /// a write failing with `ENOSPC` or past `max_page_count` returns.
    #[error(
        "the database is full: free disk space, or raise the store's max_pages if it is set, then retry"
    )]
    Full,
    /// The operating system failed a read or write of the database files
    /// (`SQLITE_IOERR`): a write past the file-size limit (`EFBIG`) or a disk quota,
    /// a failing device. SQLite keeps no more than its own code for these.
    #[error(
        "cannot {op} the database files (sqlite i/o error {code}): a file may be past the file-size limit (ulimit -f) or a disk quota, or the disk is failing; free space or raise the limit, then retry"
    )]
    Io {
        /// `read`, `write` or `use`, from SQLite's extended code.
        op: &'static str,
        /// SQLite's extended result code.
        code: i32,
    },
    /// The file is not a SQLite database.
    #[error("{path} is not a colmem store (not a SQLite database): check the path")]
    NotADatabase {
        /// The file.
        path: PathBuf,
    },
    /// The file is empty: not a store, though SQLite would start a new one in it.
    #[error(
        "{path} is an empty file, not a colmem store (a creation cut short leaves one): remove it to start a new store, or restore a backup"
    )]
    EmptyFile {
        /// The file.
        path: PathBuf,
    },
    /// The database file is damaged.
    #[error("the database is damaged ({detail}): restore it from a backup")]
    Corrupt {
        /// What SQLite or the decoder reported.
        detail: String,
    },
    /// The file was written by a newer colmem.
    #[error(
        "the store has schema version {found}, newer than the {supported} this colmem understands: upgrade colmem"
    )]
    SchemaTooNew {
        /// The file's version.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// A read-only store whose schema is older than this build's.
    #[error(
        "the store has schema version {found}, older than {supported}: open it read-write once to upgrade it"
    )]
    SchemaTooOld {
        /// The file's version.
        found: i64,
        /// The version this build needs.
        supported: i64,
    },
    /// The file cannot be opened.
    #[error("cannot open {path}: {detail}")]
    CannotOpen {
        /// The file.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// A constraint of the schema refused the change (e.g. the provenance trigger).
    #[error("the store refused the change: {0}")]
    Constraint(String),
    /// An unexpected SQLite failure: a bug, please report it.
    #[error("sqlite: {0}")]
    Sqlite(rusqlite::Error),
}

impl Error {
    /// The broad class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::TooLarge { .. }
            | Error::InvalidInput(_)
            | Error::AccessEventBackdated { .. } => ErrorKind::InvalidInput,
            Error::IdempotencyConflict { .. } | Error::NotCurrent { .. } | Error::Constraint(_) => {
                ErrorKind::Conflict
            }
            Error::Busy { .. } => ErrorKind::Busy,
            Error::ReadOnly
            | Error::Full
            | Error::Io { .. }
            | Error::CannotOpen { .. }
            | Error::SchemaTooNew { .. }
            | Error::SchemaTooOld { .. } => ErrorKind::Unavailable,
            Error::NotADatabase { .. } | Error::EmptyFile { .. } | Error::Corrupt { .. } => {
                ErrorKind::Corrupt
            }
            Error::Sqlite(_) => ErrorKind::Internal,
        }
    }

    /// Whether SQLite reported the database busy or locked (the store retries these).
    pub(crate) fn is_busy(&self) -> bool {
        matches!(self, Error::Sqlite(e) if is_busy_code(e))
    }

    pub(crate) fn corrupt(detail: impl Into<String>) -> Self {
        Error::Corrupt {
            detail: detail.into(),
        }
    }
}

fn is_busy_code(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode as C;
        match e.sqlite_error_code() {
            Some(C::ReadOnly) => Error::ReadOnly,
            Some(C::DiskFull) => Error::Full,
            Some(C::SystemIoFailure) => {
                let code = match &e {
                    rusqlite::Error::SqliteFailure(failure, _) => failure.extended_code,
                    _ => rusqlite::ffi::SQLITE_IOERR,
                };
                Error::Io {
                    op: io_op(code),
                    code,
                }
            }
            Some(C::DatabaseCorrupt) => Error::corrupt(e.to_string()),
            Some(C::NotADatabase) => Error::Corrupt {
                detail: "file is not a database".to_owned(),
            },
            Some(C::ConstraintViolation) => Error::Constraint(e.to_string()),
            _ => Error::Sqlite(e),
        }
    }
}

/// What SQLite was doing when the operating system failed it, by its extended code.
fn io_op(code: i32) -> &'static str {
    use rusqlite::ffi;
    match code {
        ffi::SQLITE_IOERR_READ | ffi::SQLITE_IOERR_SHORT_READ => "read",
        ffi::SQLITE_IOERR_WRITE
        | ffi::SQLITE_IOERR_FSYNC
        | ffi::SQLITE_IOERR_DIR_FSYNC
        | ffi::SQLITE_IOERR_TRUNCATE
        | ffi::SQLITE_IOERR_SHMSIZE => "write",
        _ => "use",
    }
}

impl From<Error> for FeedError {
    fn from(e: Error) -> Self {
        FeedError {
            kind: e.kind(),
            message: e.to_string(),
            source: Some(Box::new(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(extended_code: i32) -> Error {
        Error::from(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(extended_code),
            None,
        ))
    }

    /// A full disk (`ENOSPC`) or page limit is `SQLITE_FULL`; a write past the file-size
    /// limit (`EFBIG`) is `SQLITE_IOERR_WRITE`: both leave the store as it was and are
    /// unavailable, not a bug.
    #[test]
    fn a_full_disk_and_a_file_too_large_are_unavailable() {
        use rusqlite::ffi;
        let full = sqlite(ffi::SQLITE_FULL);
        assert!(matches!(full, Error::Full), "{full}");
        let too_large = sqlite(ffi::SQLITE_IOERR_WRITE);
        assert!(
            matches!(
                too_large,
                Error::Io {
                    op: "write",
                    code: 778
                }
            ),
            "{too_large}"
        );
        assert!(too_large.to_string().contains("ulimit -f"), "{too_large}");
        for (code, op) in [
            (ffi::SQLITE_IOERR_SHMSIZE, "write"),
            (ffi::SQLITE_IOERR_FSYNC, "write"),
            (ffi::SQLITE_IOERR_SHORT_READ, "read"),
            (ffi::SQLITE_IOERR_LOCK, "use"),
        ] {
            let e = sqlite(code);
            assert!(
                matches!(&e, Error::Io { op: o, .. } if *o == op),
                "{code}: {e}"
            );
            assert_eq!(e.kind(), ErrorKind::Unavailable);
        }
        assert_eq!(full.kind(), ErrorKind::Unavailable);
        assert_eq!(sqlite(ffi::SQLITE_MISMATCH).kind(), ErrorKind::Internal);
    }
}
