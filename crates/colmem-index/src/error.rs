//! Errors of the index crate and the broad kind each one maps to.

use colmem_core::{ErrorKind, FeedError};

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong while building, searching, saving or opening an index.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A vector whose length is not the index's dimension.
    #[error(
        "vector has {got} dimensions but the index holds {expected}; embed with the index's embedder or rebuild the index"
    )]
    Dimension {
        /// The index's dimension.
        expected: usize,
        /// The vector's length.
        got: usize,
    },
    /// A query or configuration value out of range.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// An index file that is missing, truncated or damaged.
    #[error(
        "index file {path} is damaged ({reason}); delete the index directory to rebuild it from the store"
    )]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Reading or writing an index file failed.
    #[error("index i/o on {path}: {source}; check the disk and the directory's permissions")]
    Io {
        /// The file or directory.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The change feed could not be read.
    #[error("catching up from the store failed: {0}")]
    Feed(#[from] FeedError),
    /// A backend library (usearch, tantivy) reported an error.
    #[error("{backend} backend: {message}")]
    Backend {
        /// Which backend.
        backend: &'static str,
        /// What it said.
        message: String,
    },
}

impl Error {
    /// The broad class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Dimension { .. } | Error::InvalidInput(_) => ErrorKind::InvalidInput,
            Error::Corrupt { .. } => ErrorKind::Corrupt,
            Error::Io { .. } => ErrorKind::Unavailable,
            Error::Feed(e) => e.kind,
            Error::Backend { .. } => ErrorKind::Internal,
        }
    }

    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.display().to_string(),
            source,
        }
    }

    pub(crate) fn corrupt(path: &std::path::Path, reason: impl Into<String>) -> Self {
        Error::Corrupt {
            path: path.display().to_string(),
            reason: reason.into(),
        }
    }

    #[cfg_attr(not(any(feature = "usearch", feature = "tantivy")), allow(dead_code))]
    pub(crate) fn backend(backend: &'static str, message: impl std::fmt::Display) -> Self {
        Error::Backend {
            backend,
            message: message.to_string(),
        }
    }
}
