//! The request context every pipeline call runs in: `(user, agent, now)` checked against
//! the access graph, with its read filter compiled once.

use colmem_access::{AccessError, AccessGraph, Context, Part, SystemPolicy, Tier, WritePolicySet};
use colmem_core::{
    AgentId, Draft, Forbidden, Fragment, NewFragment, ReadFilter, Scope, Timestamp, UserId,
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
    policies: Option<&'a WritePolicySet>,
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
            policies: None,
            context,
            filter,
        })
    }

    /// This caller with write policies: every fragment the pipeline writes for it
    /// passes the policy's part for its scope (private for `Agent` and `User`, shared
    /// for `Group` and `Global`) and the mandatory redactions. Without them, fragments
    /// are written as drafted.
    pub fn with_write_policies(mut self, policies: &'a WritePolicySet) -> Self {
        self.policies = Some(policies);
        self
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

    /// What the write policy makes of `text` written in `scope` for this caller.
    pub fn policy_part(&self, scope: Scope, text: &str) -> Part {
        match self.policies {
            Some(policies) => policies.apply(self.user(), self.agent(), scope, text),
            None => Part::Kept(text.to_owned()),
        }
    }

    /// `fragment` as the write policy lets it be written in its scope: its text
    /// transformed, and its keywords without those the policy would change or that
    /// were drawn from text it removed ("example" of an address it redacted);
    /// [`AccessError::Withheld`] if the policy blocks the text or writes no such
    /// part. Keys are identifiers and stay as drafted.
    pub fn apply_policy(&self, mut fragment: NewFragment) -> Result<NewFragment> {
        let drafted = fragment.content.to_lowercase();
        fragment.content = match self.policy_part(fragment.scope, &fragment.content) {
            Part::Kept(text) => text,
            Part::Blocked { pattern } => {
                return Err(AccessError::Withheld {
                    scope: fragment.scope,
                    reason: format!("it matches the block pattern {pattern:?}"),
                }
                .into());
            }
            Part::Disabled => {
                return Err(AccessError::Withheld {
                    scope: fragment.scope,
                    reason: "the policy writes no part of this kind".to_owned(),
                }
                .into());
            }
        };
        let (scope, written) = (fragment.scope, fragment.content.to_lowercase());
        fragment.keywords.retain(|k| {
            let k_lower = k.to_lowercase();
            self.policy_part(scope, k).text() == Some(k.as_str())
                && (written.contains(&k_lower) || !drafted.contains(&k_lower))
        });
        Ok(fragment)
    }

    /// The private copy to write beside `fragment` (as the write rule accepted it,
    /// before any policy) when its scope is shared and the policy's private part
    /// keeps what the shared part changes or withholds: the Collaborative Memory
    /// split, so that the user keeps what the shared copy leaves out. `None` when the
    /// shared copy says what the private one would.
    pub fn private_copy(&self, fragment: &NewFragment) -> Option<NewFragment> {
        if Tier::of(fragment.scope) == Tier::Private {
            return None;
        }
        let shared = self.policy_part(fragment.scope, &fragment.content);
        let private = self.policy_part(Scope::User, &fragment.content);
        if private.text().is_none() || private.text() == shared.text() {
            return None;
        }
        let mut copy = fragment.clone();
        copy.scope = Scope::User;
        self.apply_policy(copy).ok()
    }
}
