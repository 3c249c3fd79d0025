//! The loop itself: a user's query goes to the coordinator, which picks among the agents
//! the user may invoke now; each chosen agent answers memory first (a recall through the
//! AMA pipeline, the read rule inside the search) and falls back to its tools (only those it
//! may use now), writing what it learned back to memory; the aggregator combines the answers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use colmem_access::{AccessGraph, Context, SystemPolicy, WritePolicySet};
use colmem_ama::{Caller, Pipeline, RecallOptions};
use colmem_core::{
    AccessChange, AccessEvent, AgentId, Clock, Draft, Fragment, FragmentId, Granularity, GroupId,
    Kind, ResourceId, Scope, UserId,
};
use colmem_store::{FragmentStore, ListQuery, ReadRecord};

use crate::agent::Specialist;
use crate::coordinator::Coordinator;
use crate::error::{Error, Result};
use crate::event::{Event, EventLog};
use crate::finding::{AgentAnswer, Aggregator, Finding, Source};
use crate::resource::coverage;

/// Who may read what an agent learned from a tool.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Sharing {
    /// Findings are `Global`: every user's agents may reuse them, still narrowed by the read
    /// rule (the agents must be invocable by the reader's user, the resources usable by the
    /// reading agent).
    Shared,
    /// Findings are `User`-scoped: each user's memory is their own.
    Isolated,
}

impl Sharing {
    fn scope(self) -> Scope {
        match self {
            Sharing::Shared => Scope::Global,
            Sharing::Isolated => Scope::User,
        }
    }
}

/// Settings of the loop.
#[derive(Clone, Debug)]
pub struct CollabConfig {
    /// The scope of findings written back to memory.
    pub sharing: Sharing,
    /// The share of a remembered finding's subject terms the query must hold for the finding
    /// to be used without a tool call (see [`Finding::match_score`]).
    pub min_match: f32,
    /// How memory is searched (by default: the ten best facts, where findings live).
    pub recall: RecallOptions,
    /// Promote a trace to a group once it has this many helpful votes for that group
    /// (at least 1).
    pub votes_to_promote: usize,
}

impl Default for CollabConfig {
    fn default() -> Self {
        CollabConfig {
            sharing: Sharing::Shared,
            min_match: 0.8,
            recall: RecallOptions {
                k: Some(10),
                granularities: Some(vec![Granularity::Fact]),
                ..RecallOptions::default()
            },
            votes_to_promote: 3,
        }
    }
}

/// What the loop did for one query.
#[derive(Clone, PartialEq, Debug)]
pub struct Outcome {
    /// The combined answer.
    pub answer: Option<String>,
    /// The agents the coordinator chose, best first.
    pub agents: Vec<AgentId>,
    /// Whether the coordinator fell back to its offline choice.
    pub fell_back: bool,
    /// Each chosen agent's answer.
    pub answers: Vec<AgentAnswer>,
    /// Tool calls made.
    pub tool_calls: usize,
}

impl Outcome {
    /// Whether the combined answer came from memory (the first agent that gave it recalled it).
    pub fn from_memory(&self) -> bool {
        let Some(answer) = &self.answer else {
            return false;
        };
        self.answers
            .iter()
            .find(|a| a.answer.as_deref().map(str::trim) == Some(answer.as_str()))
            .is_some_and(|a| matches!(a.source, Source::Memory { .. }))
    }
}

/// The Collaborative Memory loop over one store, one access graph and one team of agents.
#[derive(Debug)]
pub struct Collaboration {
    pipeline: Arc<Pipeline>,
    store: Arc<dyn FragmentStore>,
    graph: AccessGraph,
    system: SystemPolicy,
    clock: Arc<dyn Clock>,
    policies: Option<WritePolicySet>,
    agents: BTreeMap<AgentId, Specialist>,
    coordinator: Box<dyn Coordinator>,
    aggregator: Aggregator,
    config: CollabConfig,
    log: EventLog,
    /// Helpful votes per (trace, group), and whether the trace was promoted there.
    votes: Mutex<BTreeMap<(FragmentId, GroupId), Votes>>,
}

/// The helpful votes a trace has for one group.
#[derive(Clone, Copy, Debug, Default)]
struct Votes {
    count: usize,
    promoted: bool,
}

impl Collaboration {
    /// A loop over `pipeline` (memory), `store` (the source of truth and the access event
    /// log), the access graph rebuilt from the store's log, and a team of agents. `clock` must
    /// be the store's clock.
    pub fn new(
        pipeline: Arc<Pipeline>,
        store: Arc<dyn FragmentStore>,
        system: SystemPolicy,
        clock: Arc<dyn Clock>,
        team: Vec<Specialist>,
        coordinator: Box<dyn Coordinator>,
        config: CollabConfig,
    ) -> Result<Self> {
        if config.votes_to_promote == 0 {
            return Err(Error::InvalidInput(
                "votes_to_promote must be at least 1".into(),
            ));
        }
        let graph = AccessGraph::from_events(&store.access_events()?)?;
        let mut agents = BTreeMap::new();
        for agent in team {
            let id = agent.id;
            if agents.insert(id, agent).is_some() {
                return Err(Error::Duplicate {
                    what: format!("agent {id}"),
                });
            }
        }
        Ok(Collaboration {
            pipeline,
            store,
            graph,
            system,
            clock,
            policies: None,
            agents,
            coordinator,
            aggregator: Aggregator,
            config,
            log: EventLog::new(),
            votes: Mutex::new(BTreeMap::new()),
        })
    }

    /// This loop with write policies: every fragment it writes passes the policy's
    /// part for its scope (a finding shared `Global` gets the shared part, one kept
    /// `User` the private part), its keywords are drawn from the query as that part
    /// writes it, and a finding the policy withholds is answered but not remembered.
    pub fn with_write_policies(mut self, policies: WritePolicySet) -> Self {
        self.policies = Some(policies);
        self
    }

    /// Applies an access change now (on the clock): appended to the store's event log, then
    /// to the graph. A refused change leaves both unchanged.
    pub fn apply(&mut self, change: AccessChange) -> Result<()> {
        let now = self.clock.now();
        let event = AccessEvent { at: now, change };
        self.graph.check_at(&event, now)?;
        self.store.append_access_event(&event)?;
        self.graph.apply(event)?;
        Ok(())
    }

    /// The access graph as it stands.
    pub fn graph(&self) -> &AccessGraph {
        &self.graph
    }

    /// The loop's event log (tool calls, memory reads and writes, promotions).
    pub fn events(&self) -> Vec<Event> {
        self.log.events()
    }

    /// The log itself, for callers that add events of their own.
    pub fn log(&self) -> &EventLog {
        &self.log
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn FragmentStore> {
        &self.store
    }

    /// The system's write settings (who may write `Global`), for the checker.
    pub fn system(&self) -> &SystemPolicy {
        &self.system
    }

    /// The team.
    pub fn agents(&self) -> impl Iterator<Item = &Specialist> {
        self.agents.values()
    }

    /// The settings.
    pub fn config(&self) -> &CollabConfig {
        &self.config
    }

    fn caller(&self, user: UserId, agent: AgentId) -> Result<Caller<'_>> {
        let context = Context::new(user, agent, self.clock.as_ref());
        let caller = Caller::new(&self.graph, &self.system, context)?;
        Ok(match &self.policies {
            Some(policies) => caller.with_write_policies(policies),
            None => caller,
        })
    }

    /// Answers `query` for `user`: coordinator, memory first, tools, aggregation.
    pub fn ask(&self, user: UserId, query: &str) -> Result<Outcome> {
        let now = self.clock.now();
        let invocable = self.graph.invocable(user, now)?;
        let candidates: Vec<&Specialist> = self
            .agents
            .values()
            .filter(|a| invocable.contains(&a.id))
            .collect();
        let selection = self.coordinator.select(query, &candidates)?;
        let mut answers = Vec::new();
        let mut tool_calls = 0;
        for agent in &selection.agents {
            // Code, not the model, has the last word: an agent outside A(u,t) never runs.
            if !invocable.contains(agent) {
                return Err(Error::OutOfSet {
                    agent: agent.to_string(),
                });
            }
            let specialist = self.agents.get(agent).ok_or(Error::UnknownAgent(*agent))?;
            let (answer, calls) = self.answer_as(user, specialist, query)?;
            tool_calls += calls;
            answers.push(answer);
        }
        Ok(Outcome {
            answer: self.aggregator.combine(&answers),
            agents: selection.agents,
            fell_back: selection.fell_back,
            answers,
            tool_calls,
        })
    }

    /// One agent's answer: a confident remembered finding, else the first usable tool that
    /// answers (whose finding is written back). Returns the answer and the tool calls made.
    fn answer_as(
        &self,
        user: UserId,
        agent: &Specialist,
        query: &str,
    ) -> Result<(AgentAnswer, usize)> {
        let caller = self.caller(user, agent.id)?;
        if let Some((fragment, finding, confidence)) = self.recall_finding(&caller, query)? {
            return Ok((
                AgentAnswer {
                    agent: agent.id,
                    answer: Some(finding.answer),
                    source: Source::Memory { fragment },
                    confidence,
                },
                0,
            ));
        }
        let usable: Vec<ResourceId> = self
            .graph
            .usable(agent.id, caller.now())?
            .into_iter()
            .collect();
        let mut calls = 0;
        for resource in agent.route(query, &usable) {
            calls += 1;
            self.log.record(Event::ToolCall {
                at: caller.now(),
                user,
                agent: agent.id,
                resource: resource.id(),
            });
            let Some(found) = resource.call(query)? else {
                continue;
            };
            let finding = Finding {
                evidence: found.evidence,
                answer: found.answer,
            };
            let confidence = coverage(query, &finding.evidence);
            self.remember_finding(&caller, &finding, resource.id(), query)?;
            return Ok((
                AgentAnswer {
                    agent: agent.id,
                    answer: Some(finding.answer),
                    source: Source::Tool {
                        resource: resource.id(),
                    },
                    confidence,
                },
                calls,
            ));
        }
        Ok((
            AgentAnswer {
                agent: agent.id,
                answer: None,
                source: Source::Nothing,
                confidence: 0.0,
            },
            calls,
        ))
    }

    /// The best remembered finding that covers the query well enough, from a recall that
    /// applies the caller's read filter inside the search. The read is logged with every id it
    /// returned.
    fn recall_finding(
        &self,
        caller: &Caller<'_>,
        query: &str,
    ) -> Result<Option<(FragmentId, Finding, f32)>> {
        let recall = self.pipeline.recall(caller, query, &self.config.recall)?;
        let returned: Vec<FragmentId> = recall.hits.iter().map(|h| h.fragment.id).collect();
        self.store.record_reads(&[ReadRecord {
            user: caller.user(),
            agent: caller.agent(),
            returned: returned.clone(),
        }])?;
        self.log.record(Event::MemoryRead {
            at: caller.now(),
            user: caller.user(),
            agent: caller.agent(),
            returned,
        });
        let best = recall
            .hits
            .iter()
            .filter_map(|h| {
                let finding = Finding::parse(&h.fragment.content)?;
                let confidence = finding.match_score(query);
                (confidence >= self.config.min_match).then_some((
                    h.fragment.id,
                    finding,
                    confidence,
                ))
            })
            .max_by(|a, b| a.2.total_cmp(&b.2).then(b.0.cmp(&a.0)));
        Ok(best)
    }

    /// Writes a finding back to memory with provenance naming the resource, so rule 4 hides it
    /// from agents that may not use that resource.
    fn remember_finding(
        &self,
        caller: &Caller<'_>,
        finding: &Finding,
        resource: ResourceId,
        query: &str,
    ) -> Result<Vec<FragmentId>> {
        let scope = self.config.sharing.scope();
        let mut draft = Draft::new(finding.to_content(), Granularity::Fact, Kind::Observation);
        draft.scope = Some(scope);
        draft.resources.insert(resource);
        // The query is the user's words: in the finding's scope, only as the write
        // policy would write them there (none if it blocks them).
        draft.keywords = caller
            .policy_part(scope, query)
            .text()
            .map(colmem_index::analyze)
            .unwrap_or_default();
        let written = match self.pipeline.write_drafts(caller, vec![draft], None) {
            Ok(written) => written,
            // The write policy keeps the finding out of its scope: the query is
            // answered, and nothing is remembered.
            Err(colmem_ama::Error::Access(colmem_access::AccessError::Withheld { .. })) => {
                return Ok(Vec::new());
            }
            Err(e) => return Err(e.into()),
        };
        self.log.record(Event::MemoryWrite {
            at: caller.now(),
            user: caller.user(),
            agent: caller.agent(),
            written: written.clone(),
        });
        Ok(written)
    }

    /// Writes drafts for `user` through `agent` (the write rule decides each draft's scope
    /// and provenance) and logs the write.
    pub fn write(
        &self,
        user: UserId,
        agent: AgentId,
        drafts: Vec<Draft>,
    ) -> Result<Vec<FragmentId>> {
        let caller = self.caller(user, agent)?;
        let written = self.pipeline.write_drafts(&caller, drafts, None)?;
        self.log.record(Event::MemoryWrite {
            at: caller.now(),
            user,
            agent,
            written: written.clone(),
        });
        Ok(written)
    }

    /// Every current fragment `agent` may read for `user` now, listed by the store with the
    /// compiled read filter in its SQL. The read is logged and audited with the ids returned.
    pub fn visible(&self, user: UserId, agent: AgentId) -> Result<Vec<Fragment>> {
        let caller = self.caller(user, agent)?;
        let fragments = self.store.list(caller.filter(), &ListQuery::default())?;
        let returned: Vec<FragmentId> = fragments.iter().map(|f| f.id).collect();
        self.store.record_reads(&[ReadRecord {
            user,
            agent,
            returned: returned.clone(),
        }])?;
        self.log.record(Event::MemoryRead {
            at: caller.now(),
            user,
            agent,
            returned,
        });
        Ok(fragments)
    }

    /// Records that `fragment` helped `agent` serve `user` in `group`. The voter must be able to
    /// read the fragment now. Once a trace has `votes_to_promote` votes for a group it is
    /// promoted to that group: a copy with `Group(group)` scope and the trace as its parent,
    /// written by the trace's own agent through the write rule (an explicit, audited write).
    /// Returns the promoted copy's id when this vote promoted it. A promotion the write rule
    /// refuses (the owner has left the group) is an error, and the next vote tries again.
    pub fn vote_helpful(
        &self,
        user: UserId,
        agent: AgentId,
        fragment: FragmentId,
        group: GroupId,
    ) -> Result<Option<FragmentId>> {
        let caller = self.caller(user, agent)?;
        let trace = self.store.get(fragment)?;
        if !caller.can_read(&trace) {
            return Err(Error::Forbidden(colmem_core::Forbidden {
                denial: colmem_core::Denial::NotReadable,
            }));
        }
        let votes = {
            let mut votes = self.votes.lock().unwrap_or_else(|p| p.into_inner());
            let entry = votes.entry((fragment, group)).or_default();
            entry.count += 1;
            *entry
        };
        if votes.promoted
            || votes.count < self.config.votes_to_promote
            || trace.scope != Scope::Agent
        {
            return Ok(None);
        }
        let votes = votes.count;
        let owner = *trace
            .provenance
            .agents
            .iter()
            .next()
            .ok_or_else(|| Error::InvalidInput(format!("trace {fragment} names no agent")))?;
        let owner_caller = self.caller(trace.provenance.user, owner)?;
        let mut draft = Draft::new(trace.content.clone(), trace.granularity, trace.kind);
        draft.scope = Some(Scope::Group(group));
        draft.agents = trace.provenance.agents.clone();
        draft.resources = trace.provenance.resources.clone();
        draft.source.parents.push(trace.id);
        draft.keywords = trace.keywords.clone();
        let written = self.pipeline.write_drafts(
            &owner_caller,
            vec![draft],
            Some(format!("promote:{fragment}:{group}")),
        )?;
        let promoted = *written.first().ok_or_else(|| {
            Error::InvalidInput("the pipeline wrote nothing for the promotion".into())
        })?;
        if let Some(entry) = self
            .votes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(&(fragment, group))
        {
            entry.promoted = true;
        }
        self.log.record(Event::Promotion {
            at: owner_caller.now(),
            user: trace.provenance.user,
            agent: owner,
            trace: fragment,
            promoted,
            group,
            votes,
        });
        Ok(Some(promoted))
    }

    /// The agents `user` may invoke now, and for each the resources it may use now.
    pub fn permissions(&self, user: UserId) -> Result<BTreeMap<AgentId, BTreeSet<ResourceId>>> {
        let now = self.clock.now();
        let mut out = BTreeMap::new();
        for agent in self.graph.invocable(user, now)? {
            out.insert(agent, self.graph.usable(agent, now)?);
        }
        Ok(out)
    }
}
