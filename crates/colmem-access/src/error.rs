//! Errors of the access kernel.

use colmem_core::{AgentId, Edge, ErrorKind, Forbidden, GroupId, Principal, Timestamp, UserId};

/// `Result` with [`AccessError`].
pub type Result<T, E = AccessError> = std::result::Result<T, E>;

/// Why an access-graph change, a write or a policy was refused. Every refusal leaves
/// the graph unchanged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AccessError {
    /// An id that names no registered principal.
    #[error("unknown {kind} {name:?}: register it first")]
    UnknownPrincipal {
        /// `user`, `agent`, `resource` or `group`.
        kind: &'static str,
        /// The name.
        name: String,
    },
    /// A principal registered twice.
    #[error("{principal} is already registered")]
    Duplicate {
        /// The principal.
        principal: Principal,
    },
    /// An event dated before the moment it is recorded.
    #[error(
        "event dated {at} is before now ({now}): an access change takes effect now or later, so what could be read in the past stays as it was decided"
    )]
    Backdated {
        /// The event's date.
        at: Timestamp,
        /// The moment it was to be recorded.
        now: Timestamp,
    },
    /// A membership that would make a group contain itself.
    #[error("member({member}, {group}) would form a cycle of group memberships")]
    Cycle {
        /// The group that would become a member.
        member: GroupId,
        /// The containing group.
        group: GroupId,
    },
    /// A revocation of an edge that is granted neither at that moment nor later.
    #[error("{edge} is not granted at {at} or later: nothing to revoke")]
    NothingToRevoke {
        /// The edge.
        edge: Edge,
        /// The revocation's date.
        at: Timestamp,
    },
    /// An observation by an agent in several crews, with no scope named.
    #[error("agent {agent} is in {crews} crews; name the scope of this observation explicitly")]
    AmbiguousScope {
        /// The writing agent.
        agent: AgentId,
        /// How many crews it is in.
        crews: usize,
    },
    /// A derived fragment whose parents belong to different users.
    #[error("derived fragments keep one user: parents belong to {first} and {second}")]
    MixedUsers {
        /// One user.
        first: UserId,
        /// Another.
        second: UserId,
    },
    /// A derivation that would make knowledge visible to more readers than its parents.
    #[error("deriving would widen visibility: {reason}; promote explicitly instead")]
    Widening {
        /// What would widen.
        reason: String,
    },
    /// A fragment its writer named explicitly that the write policy keeps out of its
    /// scope (a block pattern matched, or the policy writes no such part).
    #[error("the write policy keeps this fragment out of scope {scope}: {reason}")]
    Withheld {
        /// The fragment's scope.
        scope: colmem_core::Scope,
        /// Which pattern matched, or that the part is disabled.
        reason: String,
    },
    /// A policy pattern that is not a valid regular expression.
    #[error("invalid policy pattern {pattern:?}: {message}")]
    InvalidPattern {
        /// The pattern.
        pattern: String,
        /// The regex error.
        message: String,
    },
    /// The read or write rule refused the request.
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    /// Malformed core input (e.g. a reversed interval).
    #[error(transparent)]
    Core(#[from] colmem_core::Error),
}

impl AccessError {
    /// The broad class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AccessError::UnknownPrincipal { .. } => ErrorKind::NotFound,
            AccessError::Duplicate { .. }
            | AccessError::Cycle { .. }
            | AccessError::NothingToRevoke { .. } => ErrorKind::Conflict,
            AccessError::Backdated { .. }
            | AccessError::AmbiguousScope { .. }
            | AccessError::MixedUsers { .. }
            | AccessError::InvalidPattern { .. } => ErrorKind::InvalidInput,
            AccessError::Widening { .. }
            | AccessError::Withheld { .. }
            | AccessError::Forbidden(_) => ErrorKind::Forbidden,
            AccessError::Core(e) => e.kind(),
        }
    }
}
