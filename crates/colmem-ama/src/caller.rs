//! The request context every pipeline call runs in: `(user, agent, now)` checked against
//! the access graph, with its read filter compiled once.

use colmem_access::{AccessGraph, Context, Part, SystemPolicy, WritePolicySet, narrowest};
use colmem_core::{
    AgentId, Draft, Forbidden, Fragment, Granularity, Kind, NewFragment, ReadFilter, Scope,
    Timestamp, UserId,
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
    scope: Option<Scope>,
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
            scope: None,
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

    /// This caller writing what it remembers in `scope` instead of the default scope
    /// of a conversation (`User`): an explicit share, which the write rule still
    /// checks (a group the agent is not in is refused). What the write policy's shared
    /// part would change stays private all the same ([`Caller::kept_private`]).
    pub fn with_scope(mut self, scope: Option<Scope>) -> Self {
        self.scope = scope;
        self
    }

    /// The scope this caller was given for what it remembers, if any.
    pub fn explicit_scope(&self) -> Option<Scope> {
        self.scope
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

    /// Whether this caller writes under write policies.
    pub(crate) fn has_write_policies(&self) -> bool {
        self.policies.is_some()
    }

    /// What the write policy makes of `text` written in `scope` for this caller.
    pub fn policy_part(&self, scope: Scope, text: &str) -> Part {
        match self.policies {
            Some(policies) => policies.apply(self.user(), self.agent(), scope, text),
            None => Part::Kept(text.to_owned()),
        }
    }

    /// The name a person (a speaker, a listener) is written under: the name
    /// itself, or its stable pseudonym ([`WritePolicySet::name_pseudonym`]) when the
    /// private part would change it; `None` if the policy blocks it.
    pub fn written_name(&self, name: &str) -> Option<String> {
        let Some(policies) = self.policies else {
            return Some(name.to_owned());
        };
        match policies.apply(self.user(), self.agent(), Scope::User, name) {
            Part::Kept(kept) if kept == name => Some(kept),
            Part::Kept(_) => Some(policies.name_pseudonym(name)),
            Part::Blocked { .. } | Part::Disabled => None,
        }
    }

    /// `fragment` as the write policy lets it be written in its scope: its text
    /// transformed; its keywords without those the policy would change or, when it
    /// changed the text, that are no word of what it wrote; its key (but a raw turn's
    /// dialogue id) dropped if the policy would change it (a key names its subject,
    /// and a redacted name must not stand in it). [`colmem_access::AccessError::Withheld`] if the
    /// policy blocks the text or writes no such part.
    pub fn apply_policy(&self, mut fragment: NewFragment) -> Result<NewFragment> {
        let Some(policies) = self.policies else {
            return Ok(fragment);
        };
        let (user, agent, scope) = (self.user(), self.agent(), fragment.scope);
        let written = policies
            .apply(user, agent, scope, &fragment.content)
            .kept_in(scope)?;
        fragment.keywords = policies.keywords(
            user,
            agent,
            scope,
            &fragment.content,
            &written,
            &fragment.keywords,
        );
        fragment.content = written;
        // A raw turn's key is the dialogue id the system gave it, no content.
        if fragment.granularity != Granularity::RawTurn
            && let Some(key) = &fragment.key
            && policies.apply(user, agent, scope, key).text() != Some(key.as_str())
        {
            fragment.key = None;
        }
        Ok(fragment)
    }

    /// The private scope what is drawn from `context` (a turn and the turns the
    /// constructor read it with, as their private parts) is kept in when the write
    /// policy's shared part would change or withhold any of these texts: the
    /// agent's default scope if private, else the private scope within it (`Agent`
    /// within its crew). A fact, an episode or a keyword drawn from such a text can
    /// carry what the shared part removes in words no redaction of its own text would
    /// catch, so nothing of it is shared, nor a correction of a shared fact. `None`:
    /// the shared part changes none of them.
    pub fn kept_private(&self, context: &[&str]) -> Result<Option<Scope>> {
        let Some(policies) = self.policies else {
            return Ok(None);
        };
        let (user, agent) = (self.user(), self.agent());
        let changed = context.iter().any(|text| {
            policies.apply(user, agent, Scope::Global, text)
                != policies.apply(user, agent, Scope::User, text)
        });
        if !changed {
            return Ok(None);
        }
        let default = match self.scope {
            Some(scope) => scope,
            None => self
                .graph
                .default_scope(agent, Kind::Conversation, self.now())?,
        };
        Ok(Some(private_within(default)))
    }
}

/// The widest private scope within `scope`: `scope` itself if private, `Agent`
/// within a group, `User` within `Global`.
fn private_within(scope: Scope) -> Scope {
    narrowest([scope, Scope::User]).unwrap_or(Scope::Agent)
}
