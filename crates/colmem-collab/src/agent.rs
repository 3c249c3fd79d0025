//! Specialist agents: an agent id, the specialisation the coordinator matches queries
//! against, and the resources it may call as tools.

use std::sync::Arc;

use colmem_core::{AgentId, ResourceId};
use colmem_index::analyze;

use crate::resource::Resource;

/// A specialist agent of the team.
#[derive(Clone, Debug)]
pub struct Specialist {
    /// The agent's id in the access graph.
    pub id: AgentId,
    /// What it is good at, in words (the coordinator matches queries against it).
    pub specialisation: String,
    /// The tools it is configured with. Which of them it may use at a moment is the access
    /// graph's `R(a,t)`, not this list.
    pub resources: Vec<Arc<dyn Resource>>,
}

impl Specialist {
    /// An agent with a specialisation and tools.
    pub fn new(
        id: AgentId,
        specialisation: impl Into<String>,
        resources: Vec<Arc<dyn Resource>>,
    ) -> Self {
        Specialist {
            id,
            specialisation: specialisation.into(),
            resources,
        }
    }

    /// The agent's tools among `usable` whose topic shares a term with `query`, best match
    /// first (ties keep the configured order).
    pub fn route<'a>(&'a self, query: &str, usable: &[ResourceId]) -> Vec<&'a Arc<dyn Resource>> {
        let terms = analyze(query);
        let mut ranked: Vec<(usize, usize, &Arc<dyn Resource>)> = self
            .resources
            .iter()
            .enumerate()
            .filter(|(_, r)| usable.contains(&r.id()))
            .map(|(i, r)| {
                let topic = analyze(r.topic());
                let shared = terms.iter().filter(|t| topic.contains(t)).count();
                (shared, i, r)
            })
            .filter(|(shared, _, _)| *shared > 0)
            .collect();
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        ranked.into_iter().map(|(_, _, r)| r).collect()
    }
}
