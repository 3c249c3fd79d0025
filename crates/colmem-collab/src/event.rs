//! The loop's own event log: every tool call, every memory read (with the ids it
//! returned), every memory write and every promotion, each with its moment. The
//! [`Checker`](crate::Checker) re-derives permissions for each of them from the raw
//! access events.

use std::sync::{Mutex, MutexGuard};

use colmem_core::{AgentId, FragmentId, GroupId, ResourceId, Timestamp, UserId};
use serde::Serialize;

/// One thing the loop did on a user's behalf.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Event {
    /// An agent called a resource while serving a user.
    ToolCall {
        /// The moment of the call.
        at: Timestamp,
        /// The user served.
        user: UserId,
        /// The calling agent.
        agent: AgentId,
        /// The resource called.
        resource: ResourceId,
    },
    /// An agent read shared memory while serving a user.
    MemoryRead {
        /// The moment of the read.
        at: Timestamp,
        /// The user served.
        user: UserId,
        /// The reading agent.
        agent: AgentId,
        /// The ids the read returned, in order.
        returned: Vec<FragmentId>,
    },
    /// An agent wrote what it learned back to memory.
    MemoryWrite {
        /// The moment of the write.
        at: Timestamp,
        /// The user served.
        user: UserId,
        /// The writing agent.
        agent: AgentId,
        /// The written ids.
        written: Vec<FragmentId>,
    },
    /// A private trace was promoted to a group by votes: an explicit, audited write.
    Promotion {
        /// The moment of the promotion.
        at: Timestamp,
        /// The trace's user.
        user: UserId,
        /// The trace's agent, which wrote the promoted copy.
        agent: AgentId,
        /// The private trace.
        trace: FragmentId,
        /// The promoted copy.
        promoted: FragmentId,
        /// The group it was promoted to.
        group: GroupId,
        /// The helpful votes that carried it.
        votes: usize,
    },
}

impl Event {
    /// The moment of the event.
    pub fn at(&self) -> Timestamp {
        match self {
            Event::ToolCall { at, .. }
            | Event::MemoryRead { at, .. }
            | Event::MemoryWrite { at, .. }
            | Event::Promotion { at, .. } => *at,
        }
    }
}

/// An append-only, thread-safe list of events.
#[derive(Debug, Default)]
pub struct EventLog {
    events: Mutex<Vec<Event>>,
}

impl EventLog {
    /// An empty log.
    pub fn new() -> Self {
        EventLog::default()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Event>> {
        self.events.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends an event.
    pub fn record(&self, event: Event) {
        self.lock().push(event);
    }

    /// A copy of every event so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.lock().clone()
    }

    /// How many events were logged.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing was logged.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
