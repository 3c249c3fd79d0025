//! Errors of the evaluation crate.

use colmem_core::ErrorKind;

/// `Result` with [`EvalError`].
pub type Result<T, E = EvalError> = std::result::Result<T, E>;

/// What can go wrong loading data or judging.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A data file that cannot be read.
    #[error("cannot read {path}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A data file that is not in the expected format.
    #[error("{path} is not a LoCoMo file: {message}")]
    Format {
        /// The file.
        path: String,
        /// What is wrong, with the JSON path when known.
        message: String,
    },
    /// A group of trajectories that cannot be scored together.
    #[error("invalid trajectory group: {0}")]
    Group(String),
    /// The model judge failed.
    #[error("judge: {0}")]
    Judge(#[from] colmem_llm::Error),
}

impl EvalError {
    /// The broad class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            EvalError::Io { .. } => ErrorKind::Unavailable,
            EvalError::Format { .. } | EvalError::Group(_) => ErrorKind::InvalidInput,
            EvalError::Judge(e) => e.kind(),
        }
    }
}
