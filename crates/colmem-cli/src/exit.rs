//! Exit codes: one per broad kind of failure, documented in `docs/cli.md`.
//! Success is 0 and bad command-line usage is 2 (clap's own code).

use std::process::ExitCode;

use colmem::ErrorKind;

/// An unexpected failure (a bug: please report it).
pub const INTERNAL: u8 = 1;
/// Invalid input or configuration: a malformed TOML file, a bad id, time or file, an access change dated before now.
pub const INVALID: u8 = 3;
/// Something named does not exist: a principal never registered, a fragment id, an uninitialised directory.
pub const NOT_FOUND: u8 = 4;
/// The access rules refused the request.
pub const FORBIDDEN: u8 = 5;
/// The request conflicts with the current state (revoking what is not granted, a duplicate).
pub const CONFLICT: u8 = 6;
/// The data directory is in use by another writer, or the database stayed busy.
pub const BUSY: u8 = 7;
/// A file, the disk or a model server is unavailable.
pub const UNAVAILABLE: u8 = 8;
/// Stored data is damaged: the audit chain is broken or the database is corrupt.
pub const CORRUPT: u8 = 9;

/// The exit code of a kind of error.
pub fn for_kind(kind: ErrorKind) -> u8 {
    match kind {
        ErrorKind::InvalidInput => INVALID,
        ErrorKind::NotFound => NOT_FOUND,
        ErrorKind::Forbidden => FORBIDDEN,
        ErrorKind::Conflict => CONFLICT,
        ErrorKind::Busy => BUSY,
        ErrorKind::Unavailable => UNAVAILABLE,
        ErrorKind::Corrupt => CORRUPT,
        _ => INTERNAL,
    }
}

/// The exit code of a failed run: from the first colmem error in the chain, else
/// the code the command attached ([`Coded`]), else [`INTERNAL`].
pub fn for_error(error: &anyhow::Error) -> ExitCode {
    for cause in error.chain() {
        if let Some(e) = cause.downcast_ref::<colmem::Error>() {
            return ExitCode::from(for_kind(e.kind()));
        }
        if let Some(coded) = cause.downcast_ref::<Coded>() {
            return ExitCode::from(coded.code);
        }
    }
    ExitCode::from(INTERNAL)
}

/// An error of the program itself, with its exit code.
#[derive(Debug)]
pub struct Coded {
    /// The exit code.
    pub code: u8,
    /// What went wrong and what to do.
    pub message: String,
}

impl std::fmt::Display for Coded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Coded {}

/// The error and its causes in one line, "outer: cause: …", leaving out a cause whose
/// words the message before it already holds (an error that shows its source).
pub fn message(error: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if out.is_empty() {
            out = text;
        } else if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}

/// An invalid-input error with a message that says what to do.
pub fn invalid(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Coded {
        code: INVALID,
        message: message.into(),
    })
}

/// Whether `error` is a write to a reader that went away: not a failure of the command.
pub fn closed_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        let kind = match (
            cause.downcast_ref::<std::io::Error>(),
            cause.downcast_ref::<serde_json::Error>(),
        ) {
            (Some(e), _) => Some(e.kind()),
            // JSON written straight to standard output fails with the write's error.
            (None, Some(e)) => e.io_error_kind(),
            (None, None) => None,
        };
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// A file or the disk cannot be used: the message says which and why.
pub fn unavailable(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Coded {
        code: UNAVAILABLE,
        message: message.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colmem_errors_map_through_their_kind_and_coded_errors_keep_their_code() {
        let forbidden = anyhow::Error::new(colmem::Error::NotInitialised { dir: "x".into() })
            .context("opening");
        assert_eq!(for_error(&forbidden), ExitCode::from(NOT_FOUND));
        assert_eq!(for_error(&invalid("bad")), ExitCode::from(INVALID));
        assert_eq!(
            for_error(&anyhow::anyhow!("other")),
            ExitCode::from(INTERNAL)
        );
        assert_eq!(for_kind(ErrorKind::Busy), BUSY);
    }

    /// A full disk or page limit (`SQLITE_FULL`) and a write past the file-size limit
    /// (`EFBIG`, which SQLite reports as `SQLITE_IOERR_WRITE`) are exit 8, whatever
    /// layer and context they come through.
    #[test]
    fn a_full_disk_and_a_file_too_large_are_unavailable() {
        use colmem::parts::{ama, store};
        use rusqlite::ffi;
        for code in [ffi::SQLITE_FULL, ffi::SQLITE_IOERR_WRITE] {
            let failure =
                || store::Error::from(rusqlite::Error::SqliteFailure(ffi::Error::new(code), None));
            for error in [
                colmem::Error::Store(failure()),
                colmem::Error::Pipeline(ama::Error::Store(failure())),
            ] {
                let error =
                    anyhow::Error::new(error).context("importing turn D1:2 of conversation x");
                assert_eq!(for_error(&error), ExitCode::from(UNAVAILABLE), "{error:#}");
            }
        }
    }

    #[test]
    fn a_message_names_each_cause_once() {
        let io = colmem::Error::Io {
            what: "cannot read the configuration file",
            path: "/nowhere/colmem.toml".into(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "No such file"),
        };
        let error = anyhow::Error::new(io).context("loading the configuration");
        assert_eq!(
            message(&error),
            "loading the configuration: cannot read the configuration file /nowhere/colmem.toml: No such file"
        );
    }
}
