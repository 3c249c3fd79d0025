//! The loop's metrics: accuracy, agent utilisation (distinct agents per query), resource
//! utilisation (tool calls per query), and the access matrix (user × agent × resource counts).

use std::collections::{BTreeMap, BTreeSet};

use colmem_core::{AgentId, ResourceId, UserId};
use serde::Serialize;

use crate::event::Event;

/// How one query went.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct QueryRecord {
    /// The user who asked.
    pub user: UserId,
    /// Whether the final answer was right.
    pub correct: bool,
    /// Distinct agents that worked on it.
    pub agents: usize,
    /// Tool calls made for it.
    pub tool_calls: usize,
    /// Whether the final answer came from memory.
    pub from_memory: bool,
    /// Whether a memory answer was wrong where the tool would have been right.
    pub wrong_reuse: bool,
}

/// Averages over a run of queries.
#[derive(Clone, Copy, PartialEq, Debug, Default, Serialize)]
pub struct Summary {
    /// Queries.
    pub queries: usize,
    /// Share answered correctly.
    pub accuracy: f64,
    /// Distinct agents per query.
    pub agents_per_query: f64,
    /// Tool calls per query.
    pub resource_calls_per_query: f64,
    /// Tool calls in all.
    pub resource_calls: usize,
    /// Answers taken from memory.
    pub memory_answers: usize,
    /// Memory answers that were wrong where the tool would have been right.
    pub wrong_reuse: usize,
}

impl Summary {
    /// The summary of `records`.
    pub fn of(records: &[QueryRecord]) -> Summary {
        let n = records.len();
        if n == 0 {
            return Summary::default();
        }
        let per = |x: usize| x as f64 / n as f64;
        let calls = records.iter().map(|r| r.tool_calls).sum();
        Summary {
            queries: n,
            accuracy: per(records.iter().filter(|r| r.correct).count()),
            agents_per_query: per(records.iter().map(|r| r.agents).sum()),
            resource_calls_per_query: per(calls),
            resource_calls: calls,
            memory_answers: records.iter().filter(|r| r.from_memory).count(),
            wrong_reuse: records.iter().filter(|r| r.wrong_reuse).count(),
        }
    }
}

/// Counts per (user, agent): memory reads and tool calls per resource.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct MatrixCell {
    /// Memory reads by the agent for the user.
    pub memory_reads: usize,
    /// Tool calls by the agent for the user, per resource.
    pub tool_calls: BTreeMap<ResourceId, usize>,
}

/// The access matrix: what each agent did for each user, counted from the event log.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct AccessMatrix {
    /// `user → agent → counts`.
    pub cells: BTreeMap<UserId, BTreeMap<AgentId, MatrixCell>>,
}

impl AccessMatrix {
    /// Counts `events`.
    pub fn of(events: &[Event]) -> AccessMatrix {
        let mut matrix = AccessMatrix::default();
        for event in events {
            match event {
                Event::ToolCall {
                    user,
                    agent,
                    resource,
                    ..
                } => {
                    *matrix
                        .cell(*user, *agent)
                        .tool_calls
                        .entry(*resource)
                        .or_default() += 1;
                }
                Event::MemoryRead { user, agent, .. } => {
                    matrix.cell(*user, *agent).memory_reads += 1;
                }
                Event::MemoryWrite { .. } | Event::Promotion { .. } => {}
            }
        }
        matrix
    }

    fn cell(&mut self, user: UserId, agent: AgentId) -> &mut MatrixCell {
        self.cells
            .entry(user)
            .or_default()
            .entry(agent)
            .or_default()
    }

    /// Tool calls per user.
    pub fn calls_per_user(&self) -> BTreeMap<UserId, usize> {
        self.cells
            .iter()
            .map(|(u, agents)| {
                let calls = agents
                    .values()
                    .flat_map(|c| c.tool_calls.values())
                    .sum::<usize>();
                (*u, calls)
            })
            .collect()
    }

    /// The distinct agents that served anyone, and the distinct resources called.
    pub fn used(&self) -> (BTreeSet<AgentId>, BTreeSet<ResourceId>) {
        let mut agents = BTreeSet::new();
        let mut resources = BTreeSet::new();
        for row in self.cells.values() {
            for (agent, cell) in row {
                agents.insert(*agent);
                resources.extend(cell.tool_calls.keys().copied());
            }
        }
        (agents, resources)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use colmem_core::{FragmentId, Timestamp};

    use super::*;

    #[test]
    fn summaries_and_the_matrix_count_what_happened() {
        let u = UserId::new("metrics-u").unwrap();
        let a = AgentId::new("metrics-a").unwrap();
        let r = ResourceId::new("metrics-r").unwrap();
        let record = |correct, tool_calls, from_memory| QueryRecord {
            user: u,
            correct,
            agents: 1,
            tool_calls,
            from_memory,
            wrong_reuse: from_memory && !correct,
        };
        let summary = Summary::of(&[record(true, 1, false), record(false, 0, true)]);
        assert_eq!(summary.queries, 2);
        assert_eq!(summary.accuracy, 0.5);
        assert_eq!(summary.resource_calls_per_query, 0.5);
        assert_eq!(summary.memory_answers, 1);
        assert_eq!(summary.wrong_reuse, 1);
        assert_eq!(Summary::of(&[]), Summary::default());
        let at = Timestamp::from_millis(1);
        let matrix = AccessMatrix::of(&[
            Event::ToolCall {
                at,
                user: u,
                agent: a,
                resource: r,
            },
            Event::ToolCall {
                at,
                user: u,
                agent: a,
                resource: r,
            },
            Event::MemoryRead {
                at,
                user: u,
                agent: a,
                returned: vec![FragmentId(1)],
            },
        ]);
        assert_eq!(matrix.cells[&u][&a].tool_calls[&r], 2);
        assert_eq!(matrix.cells[&u][&a].memory_reads, 1);
        assert_eq!(matrix.calls_per_user()[&u], 2);
        let (agents, resources) = matrix.used();
        assert_eq!((agents.len(), resources.len()), (1, 1));
    }
}
