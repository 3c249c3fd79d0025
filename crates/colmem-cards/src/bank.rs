//! The card bank: the write path (reflect, aggregate, admit, merge, relate) and the
//! read path (`compose`) over a [`FragmentStore`], under the read and write rules.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use colmem_access::{AccessGraph, Context, SystemPolicy, WritePolicySet};
use colmem_core::{
    CardEdge, CardFields, CardRelation, Draft, Embedding, FragmentId, Granularity, Kind,
    ReadFilter, Scope,
};
use colmem_llm::{Embedder, TokenCounter};
use colmem_store::{CardWrite, FragmentStore, ListQuery, ReadRecord};
use serde::{Deserialize, Serialize};

use crate::card::{Card, CardBounds, CardDraft, content, stored_keywords};
use crate::error::{Error, Result, in_unit_interval, positive};
use crate::graph::CardGraph;
use crate::read::{self, Budget, Composition, ReadConfig, ReadInput, TaskContext};
use crate::roles::{
    Admitter, Aggregator, Merger, NeedsProfiler, OfflineAdmitter, OfflineAggregator, OfflineMerger,
    OfflineNeedsProfiler, OfflineReflector, OfflineRelationJudge, Reflection, Reflector,
    RelationJudge,
};
use crate::text::cosine;
use crate::trajectory::Trajectory;

/// The six roles the bank runs.
#[derive(Clone, Debug)]
pub struct Roles {
    /// Failures → warnings.
    pub reflector: Arc<dyn Reflector>,
    /// Successes → strategies.
    pub aggregator: Arc<dyn Aggregator>,
    /// Reliability and utility of candidates.
    pub admitter: Arc<dyn Admitter>,
    /// Near-duplicates → one card.
    pub merger: Arc<dyn Merger>,
    /// Typed edges.
    pub judge: Arc<dyn RelationJudge>,
    /// Needs profiles.
    pub profiler: Arc<dyn NeedsProfiler>,
}

impl Roles {
    /// The offline, deterministic implementation of every role.
    pub fn offline() -> Self {
        Roles {
            reflector: Arc::new(OfflineReflector),
            aggregator: Arc::new(OfflineAggregator::default()),
            admitter: Arc::new(OfflineAdmitter),
            merger: Arc::new(OfflineMerger),
            judge: Arc::new(OfflineRelationJudge::default()),
            profiler: Arc::new(OfflineNeedsProfiler::default()),
        }
    }
}

/// The weights of the admission score and its threshold.
#[derive(Clone, Copy, PartialEq, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Admission {
    /// Weight of reliability.
    pub reliability: f32,
    /// Weight of novelty (1 − the highest similarity to a related card).
    pub novelty: f32,
    /// Weight of recency (exponential decay by rounds).
    pub recency: f32,
    /// Weight of expected utility.
    pub utility: f32,
    /// Candidates scoring at least this are admitted.
    pub threshold: f32,
}

impl Default for Admission {
    fn default() -> Self {
        Admission {
            reliability: 0.35,
            novelty: 0.15,
            recency: 0.15,
            utility: 0.35,
            threshold: 0.6,
        }
    }
}

/// Settings of the write path.
#[derive(Clone, Copy, PartialEq, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WriteConfig {
    /// The admission score.
    pub admission: Admission,
    /// Trigger cosine at or above which an admitted candidate is merged into an agreeing card.
    pub merge_similarity: f32,
    /// The size limits every written card obeys.
    pub bounds: CardBounds,
    /// How many of the most similar cards the relation judge compares a new card with
    /// (cards whose directives contradict it are always compared).
    pub relation_candidates: usize,
    /// Rounds after which a candidate's recency halves.
    pub recency_half_life: f32,
}

impl WriteConfig {
    /// Refuses settings outside their ranges (a number that is not one included).
    pub fn validate(&self) -> Result<()> {
        let a = &self.admission;
        in_unit_interval(&[
            ("admission.reliability", a.reliability),
            ("admission.novelty", a.novelty),
            ("admission.recency", a.recency),
            ("admission.utility", a.utility),
            ("admission.threshold", a.threshold),
            ("merge_similarity", self.merge_similarity),
        ])?;
        positive("recency_half_life", self.recency_half_life)?;
        self.bounds.validate()
    }
}

impl Default for WriteConfig {
    fn default() -> Self {
        WriteConfig {
            admission: Admission::default(),
            merge_similarity: 0.8,
            bounds: CardBounds::default(),
            relation_candidates: 16,
            recency_half_life: 20.0,
        }
    }
}

/// Settings of the bank.
#[derive(Clone, Copy, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BankConfig {
    /// The read path.
    pub read: ReadConfig,
    /// The write path.
    pub write: WriteConfig,
}

/// Who writes cards: the access graph and the request context the write rule checks.
#[derive(Debug)]
pub struct Writer<'a> {
    /// The current access graph.
    pub graph: &'a AccessGraph,
    /// The writing request `(u, a, t)`; cards are created at `t`.
    pub ctx: Context,
    /// The system's write settings.
    pub system: &'a SystemPolicy,
    /// The scope of new cards; `None` takes the default for an observation.
    pub scope: Option<Scope>,
    /// The write policies a card's sections pass by the scope it is written in
    /// (private part for `Agent`/`User`, shared for `Group`/`Global`, mandatory
    /// redactions always); `None` writes them as drafted.
    pub policies: Option<&'a WritePolicySet>,
}

impl Writer<'_> {
    /// `draft` as the write policy lets it be written in `scope`: each section
    /// transformed, and its trigger keywords as [`WritePolicySet::keywords`] keeps
    /// them; [`colmem_access::AccessError::Withheld`] if the
    /// policy blocks a section or writes no such part.
    fn apply_policy(&self, scope: Scope, draft: &CardDraft) -> Result<CardDraft> {
        let Some(policies) = self.policies else {
            return Ok(draft.clone());
        };
        let (user, agent) = (self.ctx.user(), self.ctx.agent());
        let apply = |text: &str| policies.apply(user, agent, scope, text).kept_in(scope);
        let f = &draft.fields;
        let fields = CardFields {
            task: apply(&f.task)?,
            trigger: apply(&f.trigger)?,
            applicability: apply(&f.applicability)?,
            plan: apply(&f.plan)?,
            execution: apply(&f.execution)?,
            evaluation: apply(&f.evaluation)?,
            sign: f.sign,
        };
        let triggers: Vec<String> = draft.triggers.iter().cloned().collect();
        let triggers = policies
            .keywords(
                user,
                agent,
                scope,
                &content(f),
                &content(&fields),
                &triggers,
            )
            .into_iter()
            .collect();
        Ok(CardDraft {
            fields,
            triggers,
            ..draft.clone()
        })
    }
}

/// What one `learn` call did.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
pub struct LearnReport {
    /// The reflections on failures.
    pub reflections: Vec<Reflection>,
    /// Failures rejected as uninformative.
    pub rejected: usize,
    /// Candidates from reflection and aggregation.
    pub candidates: usize,
    /// Candidates below the admission threshold.
    pub refused: usize,
    /// Admitted candidates merged into an existing card.
    pub merged: usize,
    /// Cards written (new and merged), in order.
    pub written: Vec<FragmentId>,
    /// Admitted candidates the write policy kept out of their scope (a block
    /// pattern matched a section, or the policy writes no such part).
    pub withheld: usize,
    /// Edges put.
    pub edges: usize,
}

/// The ConMem card bank over a store.
pub struct CardBank {
    store: Arc<dyn FragmentStore>,
    embedder: Arc<dyn Embedder>,
    counter: Arc<dyn TokenCounter>,
    roles: Roles,
    config: BankConfig,
}

impl fmt::Debug for CardBank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CardBank")
            .field("embedder", &self.embedder.id())
            .field("roles", &self.roles)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl CardBank {
    /// A bank over `store`, embedding triggers and tasks with `embedder` and counting
    /// budget tokens with `counter`.
    pub fn new(
        store: Arc<dyn FragmentStore>,
        embedder: Arc<dyn Embedder>,
        counter: Arc<dyn TokenCounter>,
        roles: Roles,
        config: BankConfig,
    ) -> Result<Self> {
        config.read.validate()?;
        config.write.validate()?;
        Ok(CardBank {
            store,
            embedder,
            counter,
            roles,
            config,
        })
    }

    /// The settings.
    pub fn config(&self) -> &BankConfig {
        &self.config
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embedder.embed_one(text).map_err(Error::Embed)?.vector)
    }

    /// Every card `filter` admits, with its trigger embedding.
    pub fn visible_cards(&self, filter: &ReadFilter) -> Result<Vec<Card>> {
        let query = ListQuery {
            granularity: Some(Granularity::Card),
            ..ListQuery::default()
        };
        let mut cards = Vec::new();
        for record in self.store.list_cards(filter, &query)? {
            let stored = self.store.embedding(record.fragment.id)?;
            let vector = match stored {
                Some(e) if e.embedder == self.embedder.id() => e.vector,
                _ => self.embed(&crate::card::trigger_text(&record.fields))?,
            };
            cards.push(Card::from_record(record, Some(vector))?);
        }
        Ok(cards)
    }

    /// Composes the cards `filter` admits for `task` within `budget`, and audits the
    /// read of the composed cards.
    ///
    /// The filter decides visibility (and, through its `now`, prequential order: a card
    /// created after the filter's moment is never seen).
    pub fn compose(
        &self,
        filter: &ReadFilter,
        task: &TaskContext,
        budget: &Budget,
    ) -> Result<Composition> {
        let cards = self.visible_cards(filter)?;
        let ids: Vec<FragmentId> = cards.iter().map(|c| c.id).collect();
        let edges = if ids.is_empty() {
            Vec::new()
        } else {
            self.store.card_edges(&ids)?
        };
        let graph = CardGraph::new(ids, &edges);
        let embedding = self.embed(&task.task)?;
        let needs = self.roles.profiler.profile(task)?;
        let input = ReadInput {
            task,
            embedding: &embedding,
            needs,
            budget,
            config: &self.config.read,
            counter: self.counter.as_ref(),
        };
        let composition = read::compose(&cards, &graph, &input);
        self.store.record_reads(&[ReadRecord {
            user: filter.user(),
            agent: filter.agent(),
            returned: composition.cards.iter().map(|c| c.id).collect(),
        }])?;
        Ok(composition)
    }

    /// Runs the write path on scored trajectories: reflection on failures, aggregation
    /// of successes, admission, merge, and relation judging for every card written.
    ///
    /// Call it only after the tasks' predictions were fixed; the cards are created at
    /// the writer's moment, so only later tasks see them.
    pub fn learn(&self, writer: &Writer<'_>, trajectories: &[Trajectory]) -> Result<LearnReport> {
        let filter = writer
            .graph
            .compile(&writer.ctx)
            .map_err(|f| Error::Access(f.into()))?;
        // A score outside [0, 1] (or not a number) would reach a card's credibility
        // and make it unreadable: the trajectories are checked before anything is
        // written.
        if let Some(t) = trajectories
            .iter()
            .find(|t| !(0.0..=1.0).contains(&t.outcome.score))
        {
            return Err(Error::Trajectory {
                id: t.id.clone(),
                reason: format!("score {} is not in [0, 1]", t.outcome.score),
            });
        }
        let round = trajectories.iter().map(|t| t.round).max().unwrap_or(0);
        let mut report = LearnReport::default();
        let mut candidates: Vec<(CardDraft, u32)> = Vec::new();
        for t in trajectories.iter().filter(|t| !t.outcome.success) {
            match self.roles.reflector.reflect(t)? {
                Some(reflection) => {
                    candidates.push((reflection.card.clone(), t.round));
                    report.reflections.push(reflection);
                }
                None => report.rejected += 1,
            }
        }
        let successes: Vec<&Trajectory> =
            trajectories.iter().filter(|t| t.outcome.success).collect();
        if !successes.is_empty() {
            let first_round = successes.iter().map(|t| t.round).min().unwrap_or(round);
            for draft in self.roles.aggregator.aggregate(&successes)? {
                candidates.push((draft, first_round));
            }
        }
        report.candidates = candidates.len();

        let mut cards = self.visible_cards(&filter)?;
        for (draft, drafted_in) in candidates {
            let draft = self.config.write.bounds.apply(draft);
            let vector = self.embed(&draft.trigger_text())?;
            let directives = crate::card::card_directives(&draft.fields);
            let related = |c: &&Card| {
                directives.is_empty()
                    || c.directives()
                        .iter()
                        .any(|d| directives.iter().any(|e| e.name == d.name))
            };
            let novelty = 1.0
                - cards
                    .iter()
                    .filter(related)
                    .map(|c| cosine(&vector, &c.embedding).max(0.0))
                    .fold(0.0f32, f32::max);
            let age = round.saturating_sub(drafted_in) as f32;
            let recency =
                (-std::f32::consts::LN_2 * age / self.config.write.recency_half_life).exp();
            let assessment = self.roles.admitter.assess(&draft)?;
            let a = &self.config.write.admission;
            let score = a.reliability * assessment.reliability
                + a.novelty * novelty
                + a.recency * recency
                + a.utility * assessment.utility;
            // A score that is not a number is not admitted.
            if score.is_nan() || score < a.threshold {
                report.refused += 1;
                continue;
            }
            // A merged card keeps its parent's scope and closes the parent: only a
            // card this writer may derive from in that scope is merged into (an agent
            // outside the global writers writes a new card beside a Global one rather
            // than closing it for everyone), and only one of the scope asked for.
            let target = cards
                .iter()
                .filter(|c| {
                    c.fields.sign == draft.fields.sign
                        && c.fragment.provenance.user == writer.ctx.user()
                        && c.directives() == directives
                        && writer.scope.is_none_or(|s| s == c.fragment.scope)
                        && self.authorize(writer, &draft, 0.0, round, Some(c)).is_ok()
                })
                .map(|c| (c, cosine(&vector, &c.embedding)))
                .filter(|(_, sim)| *sim >= self.config.write.merge_similarity)
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.id.cmp(&a.0.id)))
                .map(|(c, _)| c.clone());
            let written = match target {
                Some(existing) => {
                    let merged = self
                        .config
                        .write
                        .bounds
                        .apply(self.roles.merger.merge(&existing, &draft)?);
                    let credibility =
                        existing.credibility + (1.0 - existing.credibility) * 0.5 * draft.evidence;
                    let merged_vector = self.embed(&merged.trigger_text())?;
                    let written = self.write(
                        writer,
                        &merged,
                        credibility,
                        round,
                        merged_vector,
                        Some(&existing),
                    );
                    match written {
                        Ok(id) => {
                            cards.retain(|c| c.id != existing.id);
                            report.merged += 1;
                            Ok(id)
                        }
                        // Closed or purged meanwhile by another writer: nothing to
                        // merge into, so the candidate is a card of its own.
                        Err(Error::Store(
                            colmem_store::Error::NotCurrent { id, .. }
                            | colmem_store::Error::NotFound { id },
                        )) if id == existing.id => {
                            cards.retain(|c| c.id != existing.id);
                            self.write(writer, &draft, assessment.reliability, round, vector, None)
                        }
                        Err(e) => Err(e),
                    }
                }
                None => self.write(writer, &draft, assessment.reliability, round, vector, None),
            };
            let id = match written {
                Ok(id) => id,
                Err(Error::Access(colmem_access::AccessError::Withheld { .. })) => {
                    report.withheld += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let record = self.store.card(id)?;
            let stored_vector = self.store.embedding(id)?.map(|e| e.vector);
            let card = Card::from_record(record, stored_vector)?;
            report.edges += self.relate(&card, &cards)?;
            cards.push(card);
            report.written.push(id);
        }
        Ok(report)
    }

    fn write(
        &self,
        writer: &Writer<'_>,
        draft: &CardDraft,
        credibility: f32,
        round: u32,
        vector: Vec<f32>,
        parent: Option<&Card>,
    ) -> Result<FragmentId> {
        // The write policy of the scope the card is written in (its parent's when
        // merged): sections transformed, the trigger embedding of what is written.
        let scope = self
            .authorize(writer, draft, credibility, round, parent)?
            .scope;
        let written = writer.apply_policy(scope, draft)?;
        let vector = if written.fields == draft.fields {
            vector
        } else {
            self.embed(&written.trigger_text())?
        };
        let draft = &written;
        let mut fragment = self.authorize(writer, draft, credibility, round, parent)?;
        fragment.embedding = Some(Embedding {
            embedder: self.embedder.id().to_owned(),
            vector,
        });
        // A merged card replaces its parent in the same transaction: the parent is
        // closed and linked to it (kept for history reads), never deleted —
        // deletion is for the user's explicit instruction and retention only.
        let receipt = self.store.write_card(&CardWrite {
            user: writer.ctx.user(),
            agent: writer.ctx.agent(),
            fragment,
            fields: draft.fields.clone(),
            replaces: parent.map(|p| p.id),
            idempotency_key: None,
        })?;
        receipt.ids.first().copied().ok_or_else(|| {
            Error::Invariant(
                "the store wrote a card but returned no id; check the store backend".to_owned(),
            )
        })
    }

    /// The card `writer` would write for `draft`, through the write rule: a new card in
    /// the writer's scope, or one derived from `parent` in the parent's scope.
    fn authorize(
        &self,
        writer: &Writer<'_>,
        draft: &CardDraft,
        credibility: f32,
        round: u32,
        parent: Option<&Card>,
    ) -> Result<colmem_core::NewFragment> {
        if !credibility.is_finite() {
            return Err(Error::Invariant(format!(
                "a card's credibility must be a number, not {credibility}"
            )));
        }
        let mut request = Draft::new(content(&draft.fields), Granularity::Card, Kind::Observation);
        request.key = Some(format!("card/{}", draft.fields.sign.as_str()));
        request.source.turns = draft.sources.clone();
        request.keywords = stored_keywords(&draft.triggers, credibility, round);
        Ok(match parent {
            Some(p) => writer.graph.authorize_derived(
                &writer.ctx,
                &[&p.fragment],
                request,
                writer.system,
            )?,
            None => {
                request.scope = writer.scope;
                writer
                    .graph
                    .authorize_write(&writer.ctx, request, writer.system)?
            }
        })
    }

    /// Judges `card` against its most similar cards (and every card whose directives
    /// contradict it) and puts the edges; returns how many.
    fn relate(&self, card: &Card, others: &[Card]) -> Result<usize> {
        let directives = card.directives();
        let mut ranked: Vec<(&Card, f32)> = others
            .iter()
            .filter(|o| o.id != card.id)
            .map(|o| (o, cosine(&card.embedding, &o.embedding)))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.id.cmp(&b.0.id)));
        let mut chosen: BTreeMap<FragmentId, (&Card, f32)> = BTreeMap::new();
        for (i, (o, sim)) in ranked.iter().enumerate() {
            let contradicts = o
                .directives()
                .iter()
                .any(|d| directives.iter().any(|e| e.contradicts(d)));
            if i < self.config.write.relation_candidates || contradicts {
                chosen.insert(o.id, (*o, *sim));
            }
        }
        let mut put = 0;
        for (other, sim) in chosen.into_values() {
            for (from, to) in [(card, other), (other, card)] {
                if let Some((relation, weight)) = self.roles.judge.relate(from, to, sim)? {
                    let conflict = relation == CardRelation::Conflicts;
                    self.store.put_card_edge(&CardEdge {
                        from: from.id,
                        to: to.id,
                        relation,
                        weight: weight.clamp(0.0, 1.0),
                    })?;
                    put += 1;
                    if conflict {
                        break;
                    }
                }
            }
        }
        Ok(put)
    }
}
