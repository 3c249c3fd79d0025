//! The pipeline's errors: typed, each with the broad [`ErrorKind`] callers branch on.

use colmem_core::{ErrorKind, Forbidden};
use thiserror::Error;

/// What can go wrong in the AMA pipeline.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// The read or write rule refused the request.
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    /// The access kernel refused an input (unknown principal, widening scope, …).
    #[error(transparent)]
    Access(#[from] colmem_access::AccessError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] colmem_store::Error),
    /// An index failed.
    #[error(transparent)]
    Index(#[from] colmem_index::Error),
    /// A model call failed, or its answer could not be parsed even after one repair.
    #[error("the {role} role's model call failed: {source}")]
    Model {
        /// The role that called the model.
        role: &'static str,
        /// Why.
        source: colmem_llm::Error,
    },
    /// A model answered with well-formed JSON that breaks the role's contract.
    #[error(
        "the {role} role's model answered out of contract: {detail}; check the prompt and the model"
    )]
    Contract {
        /// The role.
        role: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// A request was malformed.
    #[error("invalid input: {0}")]
    InvalidInput(String),
}

impl Error {
    /// The broad kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Forbidden(_) => ErrorKind::Forbidden,
            Error::Access(e) => e.kind(),
            Error::Store(e) => e.kind(),
            Error::Index(e) => e.kind(),
            Error::Model { source, .. } => source.kind(),
            Error::Contract { .. } => ErrorKind::Unavailable,
            Error::InvalidInput(_) => ErrorKind::InvalidInput,
        }
    }

    pub(crate) fn model(role: &'static str) -> impl FnOnce(colmem_llm::Error) -> Error {
        move |source| Error::Model { role, source }
    }
}

/// The pipeline's result type.
pub type Result<T> = std::result::Result<T, Error>;
