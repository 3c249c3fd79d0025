//! The collaboration loop's errors: typed, each with the broad [`ErrorKind`] callers branch on.

use colmem_core::{AgentId, ErrorKind, Forbidden, ResourceId};
use thiserror::Error;

/// `Result` with [`Error`](enum@Error).
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong in the collaboration loop.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// The read or write rule refused the request.
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    /// The access kernel refused a change or a write.
    #[error(transparent)]
    Access(#[from] colmem_access::AccessError),
    /// The memory pipeline failed.
    #[error(transparent)]
    Memory(#[from] colmem_ama::Error),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] colmem_store::Error),
    /// A knowledge base's index failed.
    #[error(transparent)]
    Index(#[from] colmem_index::Error),
    /// The coordinator's model call failed, or its answer could not be parsed after one repair.
    #[error("the coordinator's model call failed: {0}")]
    Model(#[from] colmem_llm::Error),
    /// The coordinator's model chose an agent outside the set the user may invoke now.
    #[error(
        "the coordinator's model chose agent {agent:?}, which is not among the agents the user may invoke now; use the offline fallback or check the prompt"
    )]
    OutOfSet {
        /// What the model answered.
        agent: String,
    },
    /// An agent was given to the team twice.
    #[error("{what} is registered twice: give each agent one definition")]
    Duplicate {
        /// The agent or resource.
        what: String,
    },
    /// An agent the loop does not know.
    #[error("agent {0} has no specialist in this team: add it with its resources first")]
    UnknownAgent(AgentId),
    /// A resource failed while answering.
    #[error("resource {resource} failed: {detail}")]
    Resource {
        /// The resource.
        resource: ResourceId,
        /// Why.
        detail: String,
    },
    /// A malformed request or configuration.
    #[error("invalid input: {0}")]
    InvalidInput(String),
}

impl Error {
    /// The broad kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Forbidden(_) => ErrorKind::Forbidden,
            Error::Access(e) => e.kind(),
            Error::Memory(e) => e.kind(),
            Error::Store(e) => e.kind(),
            Error::Index(e) => e.kind(),
            Error::Model(e) => e.kind(),
            Error::OutOfSet { .. } => ErrorKind::Unavailable,
            Error::Duplicate { .. } | Error::InvalidInput(_) => ErrorKind::InvalidInput,
            Error::UnknownAgent(_) => ErrorKind::NotFound,
            Error::Resource { .. } => ErrorKind::Unavailable,
        }
    }
}
