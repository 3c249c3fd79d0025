//! Errors shared by every crate: the kinds callers branch on, and the `Forbidden` denial.

use std::fmt;

use crate::id::{AgentId, UserId};
use crate::time::Timestamp;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The broad class of an error, for callers (the CLI's exit codes, the HTTP status).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input was malformed or out of range: fix it and retry.
    InvalidInput,
    /// An id that does not exist.
    NotFound,
    /// The read or write rule refused the request.
    Forbidden,
    /// The request contradicts existing state (a duplicate, revoking what is not granted).
    Conflict,
    /// A resource is busy; retry later.
    Busy,
    /// Stored data is damaged.
    Corrupt,
    /// A dependency (disk, model server) is not available.
    Unavailable,
    /// A bug: please report it.
    Internal,
}

/// Why a request was refused.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Denial {
    /// The user may not invoke the agent now.
    NotInvocable {
        /// The user.
        user: UserId,
        /// The agent.
        agent: AgentId,
    },
    /// The write rule refused the write.
    Write(String),
    /// The caller may not read the fragment it wants to change.
    NotReadable,
    /// The operation needs an administrator.
    NotAdmin,
}

/// A request refused by the read or write rule.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("forbidden: {denial}")]
pub struct Forbidden {
    /// Why.
    pub denial: Denial,
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Denial::NotInvocable { user, agent } => {
                write!(
                    f,
                    "user {user} may not invoke agent {agent} now; ask an administrator for an invoke grant"
                )
            }
            Denial::Write(why) => f.write_str(why),
            Denial::NotReadable => f.write_str("the fragment is not visible to this session"),
            Denial::NotAdmin => f.write_str("this operation needs an administrator"),
        }
    }
}

/// Errors of the core vocabulary: input that does not parse into a core type.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A principal or fragment id that is not well formed.
    #[error("invalid {kind} id {value:?}: {reason}")]
    InvalidId {
        /// Which kind of id.
        kind: &'static str,
        /// The offending value (truncated).
        value: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A scope that does not parse.
    #[error("invalid scope {value:?}: use agent, user, global or group:NAME")]
    InvalidScope {
        /// The offending value (truncated).
        value: String,
    },
    /// A time that does not parse.
    #[error(
        "invalid time {value:?}: use RFC 3339 (2026-03-01T12:00:00Z), a date (2026-03-01) or milliseconds since the epoch"
    )]
    InvalidTime {
        /// The offending value (truncated).
        value: String,
    },
    /// A bare number that reads as a date (`2023`, `20230508`) to whoever wrote it,
    /// and as milliseconds since the epoch to the parser.
    #[error(
        "ambiguous time {value:?}: it reads as a date, not as milliseconds since the epoch; write the date ({meant}) or the instant (RFC 3339)"
    )]
    AmbiguousTime {
        /// The offending value.
        value: String,
        /// The date it reads as.
        meant: String,
    },
    /// An interval whose end is not after its start.
    #[error("invalid interval [{from}, {until}): the end must be after the start")]
    ReversedInterval {
        /// The start.
        from: Timestamp,
        /// The end.
        until: Timestamp,
    },
    /// A logical clock asked to go back.
    #[error("the clock reads {now} and cannot move back to {requested}")]
    ClockBackwards {
        /// The clock's time.
        now: Timestamp,
        /// The requested time.
        requested: Timestamp,
    },
}

impl Error {
    /// The broad class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidId { .. }
            | Error::InvalidScope { .. }
            | Error::InvalidTime { .. }
            | Error::AmbiguousTime { .. }
            | Error::ReversedInterval { .. } => ErrorKind::InvalidInput,
            Error::ClockBackwards { .. } => ErrorKind::Conflict,
        }
    }
}

/// An error reading a [`ChangeFeed`](crate::ChangeFeed).
#[derive(Debug, thiserror::Error)]
#[error("change feed: {message}")]
pub struct FeedError {
    /// The broad class.
    pub kind: ErrorKind,
    /// What went wrong.
    pub message: String,
    /// The underlying error.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}
