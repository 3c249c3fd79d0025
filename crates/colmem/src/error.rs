//! The facade's errors: its own (configuration, locking, unknown principals) and
//! every lower crate's, each with the broad [`ErrorKind`] callers branch on.

use std::path::PathBuf;

use colmem_core::{ErrorKind, FeedError, Forbidden};

/// `Result` with the facade's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong. Messages are lowercase and say what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration file is not valid TOML or names an unknown key or a bad value.
    #[error("configuration file {path}: {message}")]
    ConfigFile {
        /// The file.
        path: String,
        /// The parser's message, with the line and the key.
        message: String,
    },
    /// A `COLMEM_…` environment override does not fit the configuration.
    #[error("configuration from the environment ({vars}): {message}; fix or unset the variable")]
    ConfigEnv {
        /// The override variables that were applied.
        vars: String,
        /// What does not fit.
        message: String,
    },
    /// The configuration asks for something this build or machine cannot do.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A turn longer than `[pipeline] max_turn_bytes`, refused before any work.
    #[error(
        "a turn of {bytes} bytes is over the limit of {limit} ([pipeline] max_turn_bytes): nothing was remembered; split it, or raise the limit"
    )]
    TurnTooLong {
        /// The bytes of the turn's text.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// Another process holds the data directory open for writing.
    #[error(
        "the data directory {dir} is in use by another colmem process{holder}: wait for it to finish or stop it, then retry (the lock is {dir}/lock)"
    )]
    Locked {
        /// The directory.
        dir: PathBuf,
        /// ` (pid N)` when the holder wrote its pid, else empty.
        holder: String,
    },
    /// The directory holds no colmem store.
    #[error(
        "{dir} holds no colmem store: run `colmem init` there first, or point --dir at an existing one"
    )]
    NotInitialised {
        /// The directory.
        dir: PathBuf,
    },
    /// A principal that was never registered.
    #[error("unknown {kind} {name:?}: register it first (principal add {kind} {name})")]
    UnknownPrincipal {
        /// `user`, `agent`, `resource` or `group`.
        kind: &'static str,
        /// The name.
        name: String,
    },
    /// A forget whose query names nothing the memory can forget by.
    #[error(
        "{0:?} names nothing to forget: name a subject key (--key), an attribute or a thing (\"my address\"), or ids (--id)"
    )]
    NothingToForget(String),
    /// The memory was opened read-only.
    #[error("this memory is open read-only: open it for writing to change it")]
    ReadOnly,
    /// An access change on a memory opened shared, whose fellow openers would not
    /// see it.
    #[error(
        "this memory is open shared: access changes need the directory to itself (Memory::open), so that no other open memory misses them"
    )]
    Shared,
    /// A file or directory operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A new file's path is taken (by a file, a directory or a symbolic link).
    #[error(
        "{path} exists: colmem never overwrites a file nor writes through a symbolic link; choose a new path"
    )]
    Exists {
        /// The path.
        path: PathBuf,
    },
    /// A file or directory of the data directory cannot be made its owner's only.
    #[error(
        "cannot make {path} private to its owner (files 0600, directories 0700): {source}; run colmem as the owner of the data directory, or take others' access away yourself (chmod -R go-rwx)"
    )]
    NotPrivate {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The read or write rule refused the request.
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    /// The access kernel refused a change or a write.
    #[error(transparent)]
    Access(colmem_access::AccessError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] colmem_store::Error),
    /// The index failed.
    #[error(transparent)]
    Index(#[from] colmem_index::Error),
    /// A model call failed.
    #[error(transparent)]
    Model(#[from] colmem_llm::Error),
    /// The memory pipeline failed.
    #[error(transparent)]
    Pipeline(#[from] colmem_ama::Error),
    /// The strategy-card bank failed.
    #[error(transparent)]
    Cards(#[from] colmem_cards::Error),
    /// Loading evaluation data failed.
    #[error(transparent)]
    Eval(#[from] colmem_eval::EvalError),
    /// Malformed core input (an id, a time).
    #[error(transparent)]
    Core(#[from] colmem_core::Error),
    /// The change feed failed.
    #[error(transparent)]
    Feed(#[from] FeedError),
}

/// The kernel's refusals as the facade says them: an unknown principal names the
/// command that registers it.
impl From<colmem_access::AccessError> for Error {
    fn from(e: colmem_access::AccessError) -> Self {
        match e {
            colmem_access::AccessError::UnknownPrincipal { kind, name } => {
                Error::UnknownPrincipal { kind, name }
            }
            e => Error::Access(e),
        }
    }
}

impl Error {
    /// The broad class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::ConfigFile { .. }
            | Error::ConfigEnv { .. }
            | Error::InvalidConfig(_)
            | Error::NothingToForget(_)
            | Error::TurnTooLong { .. } => ErrorKind::InvalidInput,
            Error::Locked { .. } => ErrorKind::Busy,
            Error::NotInitialised { .. } | Error::UnknownPrincipal { .. } => ErrorKind::NotFound,
            Error::Exists { .. } => ErrorKind::InvalidInput,
            Error::ReadOnly | Error::Shared | Error::Io { .. } | Error::NotPrivate { .. } => {
                ErrorKind::Unavailable
            }
            Error::Forbidden(_) => ErrorKind::Forbidden,
            Error::Access(e) => e.kind(),
            Error::Store(e) => e.kind(),
            Error::Index(e) => e.kind(),
            Error::Model(e) => e.kind(),
            Error::Pipeline(e) => e.kind(),
            Error::Cards(e) => e.kind(),
            Error::Eval(e) => e.kind(),
            Error::Core(e) => e.kind(),
            Error::Feed(e) => e.kind,
        }
    }
}
