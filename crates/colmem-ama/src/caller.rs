//! The request context every pipeline call runs in: `(user, agent, now)` checked against
//! the access graph, with its read filter compiled once.

use colmem_access::{AccessGraph, Context, SystemPolicy};
use colmem_core::{
    AgentId, Draft, Forbidden, Fragment, NewFragment, ReadFilter, Timestamp, UserId,
};

use crate::error::Result;

/// A request that passed the access check: the agent may serve the user now.
///
/// There is no other way to reach the pipeline, so no read or write runs without a
/// session context, and the read filter is compiled from the graph at the store's now.
#[derive(Debug)]
pub struct Caller<'a> {
    graph: &'a AccessGraph,
    system: &'a SystemPolicy,
    context: Context,
    filter: ReadFilter,
}

impl<'a> Caller<'a> {
    /// Checks `context` against `graph` and compiles its read filter; *forbidden* unless
    /// the agent may serve the user at the context's moment.
    pub fn new(
        graph: &'a AccessGraph,
        system: &'a SystemPolicy,
        context: Context,
    ) -> std::result::Result<Self, Forbidden> {
        let filter = graph.compile(&context)?;
        Ok(Caller {
            graph,
            system,
            context,
            filter,
        })
    }

    /// What this caller may see.
    pub fn filter(&self) -> &ReadFilter {
        &self.filter
    }

    /// The request context.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The user.
    pub fn user(&self) -> UserId {
        self.context.user()
    }

    /// The serving agent.
    pub fn agent(&self) -> AgentId {
        self.context.agent()
    }

    /// The request's moment on the store's clock.
    pub fn now(&self) -> Timestamp {
        self.context.now()
    }

    /// The write rule for a new fragment.
    pub fn authorize(&self, draft: Draft) -> Result<NewFragment> {
        Ok(self
            .graph
            .authorize_write(&self.context, draft, self.system)?)
    }

    /// The write rule for a fragment derived from readable parents.
    pub fn authorize_derived(&self, parents: &[&Fragment], draft: Draft) -> Result<NewFragment> {
        Ok(self
            .graph
            .authorize_derived(&self.context, parents, draft, self.system)?)
    }

    /// Whether this caller may read `fragment` now.
    pub fn can_read(&self, fragment: &Fragment) -> bool {
        self.filter.admits(&fragment.meta())
    }

    /// Whether this caller may read `fragment` as a past version: the read rule of now,
    /// with superseded versions admitted (a history read, DESIGN section 3).
    pub fn can_read_history(&self, fragment: &Fragment) -> bool {
        self.filter
            .clone()
            .with_view(colmem_core::View::AllVersions)
            .admits(&fragment.meta())
    }
}
