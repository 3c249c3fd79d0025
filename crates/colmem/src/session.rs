//! [`Session`]: one user served by one agent. Every call re-checks the pair
//! against the access graph at the memory's now and runs the AMA pipeline under
//! that context; the caller never chooses the time of a read.

use colmem_access::{AccessGraph, Context, Explanation, Hit, Split, WritePolicySet};
use colmem_ama::change::ForgetInstruction;
use colmem_ama::{
    Answered, Caller, Deletion, ForgetPlan, Recall, RecallOptions, Recalled, Remembered, TurnInput,
};
use colmem_cards::{Budget, Composition, LearnReport, TaskContext, Trajectory, Writer};
use colmem_core::{
    AgentId, AuditEvent, Draft, ErrorKind, Forbidden, Fragment, FragmentId, Granularity, Kind,
    ReadFilter, Scope, UserId,
};
use colmem_store::{FragmentStore as _, ReadRecord};

use crate::error::{Error, Result};
use crate::memory::Memory;

/// A user served by an agent; see [`Memory::session`].
#[derive(Clone, Copy, Debug)]
pub struct Session<'m> {
    memory: &'m Memory,
    user: UserId,
    agent: AgentId,
    scope: Option<Scope>,
}

impl Memory {
    /// A session of `user` served by `agent`: *forbidden* unless the user may invoke
    /// the agent now (on the memory's clock). Each call on the session checks again
    /// at its own moment, so a revocation takes effect on the next call.
    /// A refusal is audited ([`AuditEvent::Denied`]).
    pub fn session(&self, user: UserId, agent: AgentId) -> Result<Session<'_>> {
        self.writable()?;
        self.known(Some(user), Some(agent))?;
        let ctx = Context::new(user, agent, self.clock.as_ref());
        self.admitted(&self.graph(), &ctx)?;
        Ok(Session {
            memory: self,
            user,
            agent,
            scope: None,
        })
    }

    /// The read filter of `ctx`: *forbidden*, and audited as denied, unless the user
    /// may invoke the agent at the context's moment.
    fn admitted(&self, graph: &AccessGraph, ctx: &Context) -> Result<ReadFilter> {
        graph
            .compile(ctx)
            .map_err(|forbidden| self.denied(ctx, forbidden))
    }

    /// Records that `ctx`'s request was refused and returns the refusal (or the
    /// store's error, when the audit entry could not be written).
    fn denied(&self, ctx: &Context, forbidden: Forbidden) -> Error {
        let event = AuditEvent::Denied {
            user: ctx.user(),
            agent: ctx.agent(),
        };
        match self.store.append_audit(&event) {
            Ok(_) => forbidden.into(),
            Err(e) => e.into(),
        }
    }
}

/// What [`Session::share`] wrote.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Shared {
    /// The private part's fragment, if written.
    pub private: Option<FragmentId>,
    /// The shared part's fragment, if written.
    pub shared: Option<FragmentId>,
    /// The split, with the policy level that decided.
    pub split: Split,
}

/// What [`Session::forget`] forgets of the session's user's own memory.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Forget {
    /// These fragments.
    Ids(Vec<FragmentId>),
    /// Every version kept under this subject key (`alice/home`).
    Key(String),
    /// What this names ("my budget", "where I live"): the fragments whose subject or
    /// attribute it names, as a spoken "forget …" would, never the top hits of a
    /// recall.
    Query(String),
    /// Everything drawn from the user's conversation.
    All,
}

/// What [`Session::forget`] did, or would do on a dry run.
#[derive(Clone, PartialEq, Debug)]
pub struct Forgotten {
    /// What goes: fragments deleted whole, and turns or episodes redacted to the rest.
    pub plan: ForgetPlan,
    /// What was done (empty on a dry run).
    pub deletion: Deletion,
    /// Whether nothing was changed.
    pub dry_run: bool,
}

/// A recalled fragment as a read policy sees it.
struct Shown(Recalled);

impl Hit for Shown {
    fn fragment(&self) -> &Fragment {
        &self.0.fragment
    }

    fn fragment_mut(&mut self) -> &mut Fragment {
        &mut self.0.fragment
    }

    fn score(&self) -> f32 {
        self.0.score as f32
    }
}

impl<'m> Session<'m> {
    /// The user.
    pub fn user(&self) -> UserId {
        self.user
    }

    /// The serving agent.
    pub fn agent(&self) -> AgentId {
        self.agent
    }

    /// This session remembering in `scope` instead of the default of a user's
    /// conversation (`User`: personal, whatever crews the agent is in). The write
    /// rule decides at each write: a group the agent is not in, or `Global` without
    /// the system policy's leave, is refused.
    pub fn with_scope(self, scope: Scope) -> Session<'m> {
        Session {
            scope: Some(scope),
            ..self
        }
    }

    /// Runs `body` with a caller checked against the graph at the memory's now,
    /// under the memory's write policies.
    fn with_caller<T>(&self, body: impl FnOnce(&Caller<'_>) -> Result<T>) -> Result<T> {
        self.with_caller_under(Some(&self.memory.write_policies), body)
    }

    /// Runs `body` with a caller checked against the graph at the memory's now,
    /// under `policies` if any.
    fn with_caller_under<T>(
        &self,
        policies: Option<&WritePolicySet>,
        body: impl FnOnce(&Caller<'_>) -> Result<T>,
    ) -> Result<T> {
        self.memory.erase_due()?;
        let graph = self.memory.graph();
        let ctx = Context::new(self.user, self.agent, self.memory.clock.as_ref());
        let mut caller = Caller::new(&graph, &self.memory.system, ctx)
            .map_err(|forbidden| self.memory.denied(&ctx, forbidden))?
            .with_scope(self.scope);
        if let Some(policies) = policies {
            caller = caller.with_write_policies(policies);
        }
        body(&caller)
    }

    /// Remembers one interaction (a dialogue turn) through the AMA write path:
    /// raw turn, facts, an episode when one closes, profile entries, and updates of
    /// stale facts, each through the write rule and the write policy, built from
    /// the turn's private part. They go to the agent's default scope (its crew,
    /// when it is in one) unless the policy's shared part would change the turn or
    /// the open episode's turns: then they are kept in the agent's private scope
    /// (see `docs/config.md`). What the user's own instruction to forget deletes has
    /// its text erased ([`Memory::erase`]).
    pub fn remember(&self, turn: &TurnInput) -> Result<Remembered> {
        self.remember_keyed(turn, None)
    }

    /// [`Session::remember`], safe to retry: once a call with `idempotency_key`
    /// has finished, a call with the same key (for this user) writes nothing and
    /// returns what the first wrote, with `replayed` set. A turn longer than
    /// `[pipeline] max_turn_bytes` is refused before any work
    /// ([`Error::TurnTooLong`](crate::Error::TurnTooLong)).
    pub fn remember_keyed(
        &self,
        turn: &TurnInput,
        idempotency_key: Option<&str>,
    ) -> Result<Remembered> {
        let limit = self.memory.config().pipeline.max_turn_bytes;
        if turn.text.len() > limit {
            return Err(crate::Error::TurnTooLong {
                bytes: turn.text.len(),
                limit,
            });
        }
        let remembered = self.with_caller(|caller| {
            Ok(self
                .memory
                .engine()?
                .pipeline
                .remember_keyed(caller, turn, idempotency_key)?)
        })?;
        self.memory.erase(&remembered.deleted)?;
        Ok(remembered)
    }

    /// Writes fragments the agent drafted itself (e.g. findings drawn from a
    /// resource, named in each draft's `resources`): each through the write rule
    /// and the policy's part for its scope, embedded, in one transaction. A draft
    /// the policy withholds (a block pattern, a disabled part) refuses the whole
    /// write with a forbidden error naming why; nothing is written. Repeating a write with the same
    /// `idempotency_key` (the user's own: other users' keys are apart), even
    /// later, writes nothing and returns the original ids; the key with other
    /// drafts is a conflict, as is any retry once the first write was purged.
    pub fn write(
        &self,
        drafts: Vec<Draft>,
        idempotency_key: Option<String>,
    ) -> Result<Vec<FragmentId>> {
        self.with_caller(|caller| {
            Ok(self
                .memory
                .engine()?
                .pipeline
                .write_drafts(caller, drafts, idempotency_key)?)
        })
    }

    /// The Collaborative Memory split: writes `text` as a private part (readable by
    /// this user only, through any agent they may invoke) and a shared part in
    /// `shared_scope` (e.g. the agent's crew, or `Global` for a system writer), each
    /// transformed by the write policy that wins for this (user, agent) — redaction,
    /// anonymisation of `known_users`, or blocking — with the mandatory redactions
    /// always applied. Both parts are written in one transaction; a part the policy
    /// disables or blocks is not written.
    pub fn share(&self, text: &str, shared_scope: Scope, known_users: &[UserId]) -> Result<Shared> {
        let split = self
            .memory
            .write_policies
            .split(self.user, self.agent, text, known_users)?;
        let mut drafts = Vec::new();
        let mut slots = [None, None];
        for (slot, (part, scope)) in [(&split.private, Scope::User), (&split.shared, shared_scope)]
            .into_iter()
            .enumerate()
        {
            if let Some(content) = part.text() {
                let mut draft = Draft::new(content, Granularity::Fact, Kind::Conversation);
                draft.scope = Some(scope);
                slots[slot] = Some(drafts.len());
                drafts.push(draft);
            }
        }
        // The split applied the write policy: the parts are written as split.
        let ids = self.with_caller_under(None, |caller| {
            Ok(self
                .memory
                .engine()?
                .pipeline
                .write_drafts(caller, drafts, None)?)
        })?;
        let id = |slot: Option<usize>| slot.and_then(|i| ids.get(i).copied());
        Ok(Shared {
            private: id(slots[0]),
            shared: id(slots[1]),
            split,
        })
    }

    /// Puts turns remembered before (replayed by their idempotency keys after a run
    /// stopped part-way) back in `session`'s open episode, those no episode
    /// summarises yet; returns how many. See `Pipeline::resume_episode`.
    pub fn resume_episode(&self, session: &str, turns: &[TurnInput]) -> Result<usize> {
        self.with_caller(|caller| {
            Ok(self
                .memory
                .engine()?
                .pipeline
                .resume_episode(caller, session, turns)?)
        })
    }

    /// Closes the open episode of conversation session `session`, writing its
    /// summary through the write policy; `None` if no turns were pending or the
    /// policy withholds the summary.
    pub fn close_episode(&self, session: &str) -> Result<Option<FragmentId>> {
        self.with_caller(|caller| {
            Ok(self
                .memory
                .engine()?
                .pipeline
                .close_episode(caller, session)?)
        })
    }

    /// Explicit erasure: forgets what `what` selects of this session's user's own
    /// memory (current fragments and past versions) that the session may delete;
    /// with `dry_run`, only lists it. A turn or an episode that also told other
    /// things than what a query names is redacted to the rest rather than deleted
    /// whole (the original deleted). What the delete rule keeps is listed as refused.
    /// What is deleted has its text erased ([`Memory::erase`]).
    pub fn forget(&self, what: &Forget, dry_run: bool) -> Result<Forgotten> {
        let forgotten = self.with_caller(|caller| {
            let engine = self.memory.engine()?;
            let pipeline = &engine.pipeline;
            let plan = match what {
                Forget::Ids(ids) => pipeline.forget_plan_of(caller, ids, None)?,
                Forget::Key(key) => pipeline.forget_plan_of(caller, &[], Some(key))?,
                Forget::Query(query) => {
                    let instruction = pipeline
                        .forget_request(&format!("forget {query}"))?
                        .filter(|i| !i.everything)
                        .ok_or_else(|| Error::NothingToForget(query.clone()))?;
                    pipeline.forget_plan(caller, &instruction)?
                }
                Forget::All => pipeline.forget_plan(caller, &ForgetInstruction::everything())?,
            };
            let deletion = if dry_run {
                Deletion::default()
            } else {
                pipeline.forget(caller, &plan)?
            };
            Ok(Forgotten {
                plan,
                deletion,
                dry_run,
            })
        })?;
        self.memory.erase(&forgotten.deletion.deleted)?;
        Ok(forgotten)
    }

    /// Deletes this session's fragments older than the configured retention
    /// (`[pipeline] retention_ms`), past versions included, and erases their text
    /// ([`Memory::erase`]); nothing without a retention. Returns what was deleted,
    /// and what the delete rule kept because this session's agent may not write its
    /// scope.
    pub fn enforce_retention(&self) -> Result<Deletion> {
        let deletion = self.with_caller(|caller| {
            Ok(self.memory.engine()?.pipeline.enforce_retention(caller)?)
        })?;
        self.memory.erase(&deletion.deleted)?;
        Ok(deletion)
    }

    /// Recalls what this session may see about `query` (retrieval-only mode). A
    /// history read sets `options.view`; permissions are still those of now. The
    /// configured read policy narrows or redacts the result, and the read is audited
    /// with the ids it returned.
    pub fn recall(&self, query: &str, options: &RecallOptions) -> Result<Recall> {
        self.with_caller(|caller| {
            let mut recall = self
                .memory
                .engine()?
                .pipeline
                .recall(caller, query, options)?;
            recall.hits = self.shown(recall.hits)?;
            self.audit_read(&recall)?;
            Ok(recall)
        })
    }

    /// Full mode: recall, then answer from the evidence (offline: the best span). The
    /// answer reads the evidence as the read policy shows it (narrowed and redacted), and
    /// the facts that evidence replaced, redacted as the evidence is. Every fragment the
    /// answer read is audited.
    pub fn answer(&self, query: &str, options: &RecallOptions) -> Result<Answered> {
        self.with_caller(|caller| {
            let pipeline = &self.memory.engine()?.pipeline;
            let mut recall = pipeline.recall(caller, query, options)?;
            recall.hits = self.shown(recall.hits)?;
            let mut replaced = pipeline.replaced_by_evidence(caller, &recall, options.view)?;
            self.memory.config.policy.read.redact(&mut replaced)?;
            let answered = pipeline.answer_from(recall, &replaced)?;
            self.memory.store.record_reads(&[ReadRecord {
                user: self.user,
                agent: self.agent,
                returned: answered
                    .recall
                    .hits
                    .iter()
                    .map(|h| h.fragment.id)
                    .chain(replaced.iter().map(|f| f.id))
                    .collect(),
            }])?;
            Ok(answered)
        })
    }

    /// Every version this session may read of what is kept under the subject key
    /// `key` ("alice/home"), current and replaced, oldest first, as the read policy
    /// shows them; the read is audited. A fragment's key is in `recall`'s hits.
    pub fn history(&self, key: &str) -> Result<Vec<Fragment>> {
        self.with_caller(|caller| {
            let versions = self.memory.engine()?.pipeline.history(caller, key)?;
            let versions = self.memory.config.policy.read.show_listed(versions)?;
            self.memory.store.record_reads(&[ReadRecord {
                user: self.user,
                agent: self.agent,
                returned: versions.iter().map(|f| f.id).collect(),
            }])?;
            Ok(versions)
        })
    }

    /// Composes the strategy cards this session may see for `task` into a budget of
    /// `budget` tokens (ConMem's read path); the read is audited. Only cards created
    /// up to now are seen.
    pub fn compose_cards(&self, task: &TaskContext, budget: usize) -> Result<Composition> {
        self.with_caller(|caller| {
            Ok(self
                .memory
                .engine()?
                .cards
                .compose(caller.filter(), task, &Budget::new(budget))?)
        })
    }

    /// Runs ConMem's write path on scored task trajectories: warnings from failures,
    /// strategies from successes, admission and merging, each card through the write
    /// rule as this session, under `scope` (the default for an observation if `None`).
    pub fn learn_cards(
        &self,
        trajectories: &[Trajectory],
        scope: Option<Scope>,
    ) -> Result<LearnReport> {
        let graph = self.memory.graph();
        let ctx = Context::new(self.user, self.agent, self.memory.clock.as_ref());
        self.memory.admitted(&graph, &ctx)?;
        let writer = Writer {
            graph: &graph,
            ctx,
            system: &self.memory.system,
            scope,
            policies: Some(&self.memory.write_policies),
        };
        Ok(self.memory.engine()?.cards.learn(&writer, trajectories)?)
    }

    /// Whether this session may read fragment `id` now and, only if it may, why: the
    /// read rule condition by condition. `None` when it may not, whatever the reason,
    /// and when no such fragment exists: a session learns nothing of what it may not
    /// read, not even that it exists (the administrator's
    /// [`Admin::explain`](crate::Admin::explain) says why). *Forbidden* when the user
    /// may not invoke the agent now, for any id. Every explanation is audited.
    pub fn explain(&self, id: FragmentId) -> Result<Option<Explanation>> {
        let graph = self.memory.graph();
        let ctx = Context::new(self.user, self.agent, self.memory.clock.as_ref());
        self.memory.admitted(&graph, &ctx)?;
        self.memory.store.append_audit(&AuditEvent::Explain {
            user: self.user,
            agent: self.agent,
            fragment: id,
            admin: false,
        })?;
        let fragment = match self.memory.store.get(id) {
            Ok(fragment) => fragment,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let explanation = graph.explain(&ctx, &fragment);
        Ok(explanation.visible().then_some(explanation))
    }

    fn shown(&self, hits: Vec<Recalled>) -> Result<Vec<Recalled>> {
        let shown = self
            .memory
            .config
            .policy
            .read
            .apply(hits.into_iter().map(Shown).collect())?;
        Ok(shown.into_iter().map(|s| s.0).collect())
    }

    fn audit_read(&self, recall: &Recall) -> Result<()> {
        self.memory.store.record_reads(&[ReadRecord {
            user: self.user,
            agent: self.agent,
            returned: recall.hits.iter().map(|h| h.fragment.id).collect(),
        }])?;
        Ok(())
    }
}
