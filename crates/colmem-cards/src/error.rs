//! The crate's error type.

use colmem_core::ErrorKind;

/// What can go wrong in the card bank.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store refused or failed a read or write.
    #[error("card store: {0}")]
    Store(#[from] colmem_store::Error),
    /// The write rule refused a card.
    #[error("card write refused: {0}")]
    Access(#[from] colmem_access::AccessError),
    /// A model call failed (after the client's retries and one repair round).
    #[error("model call for the {role} role failed: {source}")]
    Model {
        /// The role that called the model.
        role: &'static str,
        /// Why.
        source: colmem_llm::Error,
    },
    /// A model answered with JSON that parsed but made no sense for the role.
    #[error("the {role} role's model answer is unusable: {reason}; check the prompt or the model")]
    InvalidAnswer {
        /// The role.
        role: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The embedder failed.
    #[error("embedding a card or task failed: {0}")]
    Embed(colmem_llm::Error),
    /// A stored card's bookkeeping keywords could not be read.
    #[error("card {id} has a malformed {field} keyword {value:?}; rewrite the card with CardBank")]
    Corrupt {
        /// The card.
        id: colmem_core::FragmentId,
        /// Which keyword.
        field: &'static str,
        /// Its text.
        value: String,
    },
    /// A collaborator broke its contract.
    #[error("internal: {0}")]
    Invariant(String),
    /// A configuration value is out of range.
    #[error("card configuration: {0}")]
    Config(String),
    /// A trajectory given to learn from is malformed.
    #[error("trajectory {id:?}: {reason}")]
    Trajectory {
        /// The trajectory's id.
        id: String,
        /// What is wrong.
        reason: String,
    },
}

impl Error {
    /// The shared error kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Store(e) => e.kind(),
            Error::Access(e) => e.kind(),
            Error::Model { source, .. } | Error::Embed(source) => source.kind(),
            Error::InvalidAnswer { .. } => ErrorKind::Unavailable,
            Error::Corrupt { .. } => ErrorKind::Corrupt,
            Error::Config(_) | Error::Trajectory { .. } => ErrorKind::InvalidInput,
            Error::Invariant(_) => ErrorKind::Internal,
        }
    }
}

/// Refuses any of the named settings outside `[0, 1]` (a number that is not one included).
pub(crate) fn in_unit_interval(settings: &[(&str, f32)]) -> Result<()> {
    match settings.iter().find(|(_, v)| !(0.0..=1.0).contains(v)) {
        Some((name, _)) => Err(Error::Config(format!("{name} must lie in [0, 1]"))),
        None => Ok(()),
    }
}

/// Refuses a half-life that is not a positive number.
pub(crate) fn positive(name: &str, value: f32) -> Result<()> {
    if value > 0.0 && value.is_finite() {
        Ok(())
    } else {
        Err(Error::Config(format!("{name} must be a positive number")))
    }
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
