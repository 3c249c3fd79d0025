//! The AMA pipeline: the roles run against the store and the hybrid index, every call
//! inside a [`Caller`] (a request that passed the access check).
//!
//! Write path: turn → [`Constructor`] → write rule → one store transaction for what is
//! new, one more for each version that replaces or precedes another.
//! A fact that the [`Judge`] finds in conflict with held facts goes to the
//! [`Refresher`], which closes the stale versions in favour of the new one; an agent's
//! turn is judged only against what that agent said. World time orders versions, not
//! the order they arrive in: a fact told late (its turn said before a held version
//! was said and began) is written as that version's predecessor, closed where it
//! begins. An explicit forget instruction in
//! the user's own input deletes what it names, past versions included ("forget the old
//! number" keeps what states the new one); retention deletes past versions too.
//!
//! Read path: query → [`Retriever`] plan → hybrid search with the read filter and the
//! granularity inside → [`Judge`] relevance → at most `rounds` more rounds, on another
//! granularity or through related turns → ranked fragments with their per-signal scores
//! and the route of the round that found them (in a read of what holds now, a turn whose
//! facts were all replaced ranks lower). Full mode adds an [`Answerer`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use colmem_access::narrowest;
use colmem_core::{
    AgentId, Draft, Fragment, FragmentId, Granularity, Kind, NewFragment, ReadFilter, Scope,
    Source, Timestamp, UserId, Validity, View,
};
use colmem_index::{Hit, HybridIndex, Query, Signal};
use colmem_llm::{ChatModel, Embedder};
use colmem_store::{Delete, FragmentStore, Interaction, ListQuery, Order, Supersede};
use serde::{Deserialize, Serialize};

use crate::answer::{Answer, Answerer, EvidenceSpan};
use crate::caller::Caller;
use crate::change::{ForgetInstruction, attributes};
use crate::constructor::{
    Constructor, ConstructorConfig, Memory, OfflineConstructor, Origin, TurnInput, day_start,
    episode_parts, tells_a_time, utc_date,
};
use crate::error::{Error, Result};
use crate::judge::{Judge, OfflineJudge};
use crate::llm::{
    LlmAnswerer, LlmConstructor, LlmJudge, LlmRefresher, LlmRetriever, LlmRoleConfig,
};
use crate::refresher::{OfflineRefresher, Refresher};
use crate::retriever::{
    OfflineRetriever, QueryContext, QueryPlan, Retriever, RetrieverConfig, Route,
};

/// The roles a pipeline runs.
#[derive(Clone, Debug)]
pub struct Roles {
    /// Builds memories from turns.
    pub constructor: Arc<dyn Constructor>,
    /// Plans queries.
    pub retriever: Arc<dyn Retriever>,
    /// Judges relevance and conflicts.
    pub judge: Arc<dyn Judge>,
    /// Keeps facts consistent.
    pub refresher: Arc<dyn Refresher>,
    /// Answers in full mode.
    pub answerer: Arc<dyn Answerer>,
}

impl Roles {
    /// The rule-based roles with default settings.
    pub fn offline() -> Self {
        Self::offline_with(ConstructorConfig::default(), RetrieverConfig::default())
    }

    /// The rule-based roles, with the constructor's episode triggers and the
    /// retriever's routing set.
    pub fn offline_with(constructor: ConstructorConfig, retriever: RetrieverConfig) -> Self {
        Roles {
            constructor: Arc::new(OfflineConstructor::new(constructor)),
            retriever: Arc::new(OfflineRetriever::new(retriever)),
            judge: Arc::new(OfflineJudge::default()),
            refresher: Arc::new(OfflineRefresher),
            answerer: Arc::new(EvidenceSpan),
        }
    }

    /// Every role backed by one chat model, each sampled after `sampling`; the
    /// constructor's episode triggers and the retriever's routing rules are set as
    /// for the offline roles. Fails when a role's prompt does not load.
    pub fn llm(
        model: Arc<dyn ChatModel>,
        sampling: LlmRoleConfig,
        constructor: ConstructorConfig,
        retriever: RetrieverConfig,
    ) -> Result<Self> {
        Ok(Roles {
            constructor: Arc::new(
                LlmConstructor::new(model.clone(), sampling)?.with_episode_rules(constructor),
            ),
            retriever: Arc::new(
                LlmRetriever::new(model.clone(), sampling)?.with_routing(retriever),
            ),
            judge: Arc::new(LlmJudge::new(model.clone(), sampling)?),
            refresher: Arc::new(LlmRefresher::new(model.clone(), sampling)?),
            answerer: Arc::new(LlmAnswerer::new(model, sampling)?),
        })
    }
}

/// Settings of the pipeline.
#[derive(Clone, Copy, PartialEq, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PipelineConfig {
    /// `K_r`: how many extra retrieval rounds the judge may ask for.
    pub rounds: usize,
    /// Which memories the write path stores.
    pub store: Stored,
    /// Fragments older than this (record time, in milliseconds) are deleted by
    /// [`Pipeline::enforce_retention`]; `None` keeps everything. At least 1: a limit of
    /// zero or less would put the cutoff at or after now and delete everything, so a
    /// configuration giving one is refused, and so is a retention run with one set in code.
    #[serde(deserialize_with = "retention")]
    pub retention_ms: Option<i64>,
    /// The longest turn, in bytes of its text, that is remembered: the facade
    /// (`colmem::Session::remember`) refuses a longer one before any work, so no single
    /// input holds the writer for long. Default 256 KiB.
    pub max_turn_bytes: usize,
    /// How many neighbouring turns on each side a related-turn round adds.
    pub neighbours: u32,
    /// Weight of the judge's relevance against the fused rank score when rounds merge.
    #[serde(deserialize_with = "relevance_weight")]
    pub relevance_weight: f64,
    /// Search only the route's granularity first (the AMA paper's routing), trying the
    /// others in later rounds. Off by default: one search over the memory granularities
    /// (episodes on the episode route only), with the route's preferred by
    /// `route_boost`, finds more of the evidence.
    pub exclusive_routing: bool,
    /// How much the route's granularity is preferred when several granularities are searched
    /// (LoCoMo evidence recall@10: 0.614 at 0.25, 0.627 at 0.1, 0.628 at 0).
    #[serde(deserialize_with = "route_boost")]
    pub route_boost: f64,
    /// How much what a person the query names said (their turns, facts and profile)
    /// is preferred over what others said. Questions about a person are mostly
    /// answered by their own words: on the LoCoMo dev conversations, 96% of the
    /// evidence turns of a question naming one speaker are that speaker's. One named
    /// only after "to", "with", "for", "about" or "from" counts when no one else is.
    #[serde(deserialize_with = "speaker_boost")]
    pub speaker_boost: f64,
    /// The turn after a hit that asks a question (its reply, where the answer
    /// usually is) ranks at least this share of the question's score; 0 turns it off.
    /// LoCoMo evidence recall@10: 0.629 off, 0.659 at 0.7, 0.676 at 0.9, 0.665 at 1.
    #[serde(deserialize_with = "reply_weight")]
    pub reply_weight: f64,
    /// Embed only the query's content words, not its function words: right for the
    /// lexical offline embedder, whose vectors would otherwise match any question
    /// through "what" and "is" (LoCoMo evidence recall@10 0.676 → 0.684). Turn it
    /// off for a semantic embedder, which reads whole sentences.
    pub embed_content_words: bool,
    /// How much what was said in the month a query names ("in June", "May 2023"),
    /// or in the month after it, is preferred (LoCoMo evidence recall@10 0.693 → 0.698).
    #[serde(deserialize_with = "time_boost")]
    pub time_boost: f64,
    /// How much more what was said on the day a query names ("on 7 July, 2023",
    /// "August 3", "8th December") is preferred, on top of `time_boost`: a question
    /// about what someone said or did on a day is answered by that day's talk.
    #[serde(deserialize_with = "day_boost")]
    pub day_boost: f64,
    /// How much what tells a time ("yesterday", "last week", "in May 2023") is
    /// preferred for a question that asks when: its answer is a time, and the
    /// statement that holds it usually says one (LoCoMo evidence recall@10 on
    /// temporal questions 0.889 → 0.902).
    #[serde(deserialize_with = "when_boost")]
    pub when_boost: f64,
    /// The turns either side of a hit that asks nothing rank at least this share of
    /// its score; 0 turns it off. With it the reply to a neighbour is promoted too
    /// (LoCoMo evidence recall@25: 0.793 off, 0.816 at 0.5; recall@10 0.702 → 0.703).
    #[serde(deserialize_with = "context_weight")]
    pub context_weight: f64,
    /// How many turns either side of such a hit are promoted; each turn further away
    /// ranks at least 0.8 times the share of the one before. A thread of conversation
    /// runs on for several turns: "the meteor shower was amazing" → "how did it make
    /// you feel?" → the answer (LoCoMo evidence recall@10: 0.747 at 1, 0.753 at 2,
    /// 0.754 at 3). At most [`MAX_CONTEXT_WIDTH`]: a configuration asking for more is
    /// refused, a value set in code is held to it.
    #[serde(deserialize_with = "context_width")]
    pub context_width: u32,
    /// How much a raw turn's score falls with the share of it that asks, from 0 (off)
    /// to 1 (a turn that only asks scores 0): evidence is told, not asked. In LoCoMo
    /// 25% of turns end with a question and 13% of evidence turns do. At 0.7 a turn
    /// that only asks ranks 0.3 times as high (LoCoMo evidence recall@10 0.790 →
    /// 0.797, multi-hop 0.483 → 0.497).
    #[serde(deserialize_with = "question_discount")]
    pub question_discount: f64,
    /// How much more a session's first turn, and a fact drawn from it alone, is
    /// preferred: it tells what happened since the last session ("Hey! I went to a
    /// support group yesterday"). The first turn is the one whose dialogue id ends in
    /// `:1` (`D3:1`): turns numbered within their session, as `colmem import` and the
    /// LoCoMo loader number them; `colmem remember` numbers turns across the store, so
    /// only a store's first turn has that id. In LoCoMo 4.6% of turns open a session and 10.4% of
    /// evidence turns do (evidence recall@10 0.797 → 0.799 at 0.15, 0.798 at 0.1 and
    /// at 0.25).
    #[serde(deserialize_with = "opening_boost")]
    pub opening_boost: f64,
    /// Add to the lexical query the members of the categories it names ("countries" →
    /// Spain, England …; see [`crate::categories`]): LoCoMo evidence recall@10 0.753 →
    /// 0.766, multi-hop 0.415 → 0.462.
    pub expand_categories: bool,
    /// When a query names a date with its year ("on 25 May, 2022", "in May 2023"),
    /// also search only what was told then (the week either side of a day; a month
    /// and the month after it), so that time's talk comes in even when it shares few
    /// words with the query: "What did Nate do for Joanna on 25 May, 2022?" → "I got
    /// this new pup for you!" (LoCoMo evidence recall@10 0.799 → 0.803, recall@5
    /// 0.708 → 0.716). The narrowing runs inside the search, under the read filter.
    pub dated_search: bool,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            rounds: 2,
            store: Stored::default(),
            retention_ms: None,
            max_turn_bytes: 256 * 1024,
            neighbours: 1,
            relevance_weight: 0.02,
            exclusive_routing: false,
            route_boost: 0.1,
            speaker_boost: 0.5,
            reply_weight: 0.9,
            embed_content_words: true,
            time_boost: 0.5,
            day_boost: 1.0,
            when_boost: 0.5,
            context_weight: 0.5,
            context_width: 2,
            expand_categories: true,
            question_discount: 0.7,
            opening_boost: 0.15,
            dated_search: true,
        }
    }
}

/// Which granularities the write path stores.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Stored {
    /// Raw turns.
    pub raw: bool,
    /// Atomic facts.
    pub facts: bool,
    /// Episode summaries.
    pub episodes: bool,
    /// Profile entries.
    pub profile: bool,
}

impl Default for Stored {
    fn default() -> Self {
        Stored {
            raw: true,
            facts: true,
            episodes: true,
            profile: true,
        }
    }
}

/// Options of one recall.
#[derive(Clone, PartialEq, Debug, Default)]
pub struct RecallOptions {
    /// How many fragments; `None` takes the retriever's dynamic k. At most [`MAX_K`]:
    /// a recall asking for more is refused as invalid input.
    pub k: Option<usize>,
    /// Search exactly these granularities together instead of following the route.
    pub granularities: Option<Vec<Granularity>>,
    /// Which versions: the current ones by default; history reads choose a past moment.
    /// Permissions are those of now whatever the view.
    pub view: View,
    /// What the retriever knows besides the query.
    pub context: QueryContext,
}

/// One recalled fragment with what explains its rank.
#[derive(Clone, PartialEq, Debug)]
pub struct Recalled {
    /// The fragment.
    pub fragment: Fragment,
    /// The merged score the ranking used.
    pub score: f64,
    /// The fused rank score of its search.
    pub fused: f64,
    /// The vector signal.
    pub vector: Option<Signal>,
    /// The BM25 signal.
    pub lexical: Option<Signal>,
    /// The judge's relevance.
    pub relevance: f64,
    /// The route of the round that found it.
    pub route: RoundKind,
    /// The round that found it (0 = first).
    pub round: usize,
}

/// What a retrieval round searched.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundKind {
    /// The retriever's route.
    Route(Route),
    /// The granularities the caller chose.
    Chosen,
    /// Turns related to the hits so far (their own and neighbouring turns).
    RelatedTurns,
}

/// The result of a recall.
#[derive(Clone, PartialEq, Debug)]
pub struct Recall {
    /// The retriever's plan.
    pub plan: QueryPlan,
    /// What each round searched, in order.
    pub rounds: Vec<RoundKind>,
    /// The ranked fragments.
    pub hits: Vec<Recalled>,
}

/// The result of full mode.
#[derive(Clone, PartialEq, Debug)]
pub struct Answered {
    /// The recall the answer rests on.
    pub recall: Recall,
    /// The answer.
    pub answer: Answer,
}

/// What remembering one turn did.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Remembered {
    /// Fragments written.
    pub written: Vec<FragmentId>,
    /// Stale facts closed, with the fact that replaced each; the profile entries drawn
    /// from a stale fact are closed with it and listed too.
    pub superseded: Vec<(FragmentId, FragmentId)>,
    /// Fragments deleted on the user's explicit instruction (a redacted original
    /// among them).
    pub deleted: Vec<FragmentId>,
    /// Turns and episodes that also told other things than what the instruction
    /// named: each original with the version written without it.
    pub redacted: Vec<(FragmentId, FragmentId)>,
    /// Fragments the instruction named that the delete rule kept: this caller may not
    /// delete them (it may not write their scope, say a `Global` fragment only a global
    /// writer may change). A caller that may is needed to delete them.
    pub refused: Vec<FragmentId>,
    /// `true` when an earlier call with the same idempotency key had remembered the
    /// turn: nothing was written now and `written` holds what that call wrote.
    pub replayed: bool,
    /// What the write policy kept out: 1 for a turn whose private part it blocks
    /// or disables (nothing is drawn from it), else the fragments drawn from the turn
    /// that it blocks in their scope.
    pub withheld: usize,
}

/// What closing stale facts did.
#[derive(Default)]
struct Superseded {
    /// Each stale fact (or profile entry drawn from one) with its successor.
    pairs: Vec<(FragmentId, FragmentId)>,
    /// Successors the write policy withheld (their stale facts stay).
    withheld: usize,
}

/// What a deletion did (by retention, or on a forget instruction).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Deletion {
    /// Fragments deleted (a redacted original among them).
    pub deleted: Vec<FragmentId>,
    /// Turns and episodes that also told other things: each original (deleted) with
    /// the version written without what was forgotten.
    pub redacted: Vec<(FragmentId, FragmentId)>,
    /// Fragments the delete rule kept: this caller may not delete them (it may not
    /// write their scope, say). A caller that may is needed to delete them.
    pub refused: Vec<FragmentId>,
}

/// What a forget would remove: see [`Pipeline::forget_plan`].
#[derive(Clone, PartialEq, Debug, Default)]
pub struct ForgetPlan {
    /// Fragments deleted whole.
    pub delete: Vec<Fragment>,
    /// Turns and episodes that also told other things, each with what is left of it.
    pub redact: Vec<(Fragment, String)>,
}

/// The AMA pipeline over a store, a hybrid index and an embedder.
#[derive(Debug)]
pub struct Pipeline {
    store: Arc<dyn FragmentStore>,
    index: Arc<HybridIndex>,
    embedder: Arc<dyn Embedder>,
    roles: Roles,
    config: PipelineConfig,
    /// The turns of each open episode, per user, serving agent and session: an episode
    /// summarises only what was said through its agent, so it never carries turns
    /// written under another agent's scope into its own.
    open_episodes: Mutex<HashMap<(UserId, AgentId, String), Vec<TurnInput>>>,
}

/// A memory on its way to the store, with the granularity it is written as.
struct Pending<'m> {
    memory: &'m Memory,
    granularity: Granularity,
}

/// The key of a raw turn, so related-turn rounds can fetch it.
pub fn turn_key(dialogue_id: &str) -> String {
    format!("turn:{dialogue_id}")
}

impl Pipeline {
    /// A pipeline over these parts.
    pub fn new(
        store: Arc<dyn FragmentStore>,
        index: Arc<HybridIndex>,
        embedder: Arc<dyn Embedder>,
        roles: Roles,
        config: PipelineConfig,
    ) -> Self {
        Pipeline {
            store,
            index,
            embedder,
            roles,
            config,
            open_episodes: Mutex::new(HashMap::new()),
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn FragmentStore> {
        &self.store
    }

    /// The index.
    pub fn index(&self) -> &Arc<HybridIndex> {
        &self.index
    }

    /// The settings.
    pub fn config(&self) -> &PipelineConfig {
        &self.config
    }

    /// Applies the write rule and the caller's write policy to each draft (a draft
    /// the policy withholds refuses the whole write: `AccessError::Withheld`),
    /// embeds them, writes them in one transaction and returns their ids. Under
    /// `idempotency_key` (scoped to the caller's user) a retry, whenever made,
    /// returns the first call's ids if it asks for the same fragments (all but their
    /// times), and is refused as an `IdempotencyConflict` if not, or once what the
    /// first call wrote was purged.
    pub fn write_drafts(
        &self,
        caller: &Caller<'_>,
        drafts: Vec<Draft>,
        idempotency_key: Option<String>,
    ) -> Result<Vec<FragmentId>> {
        let asked = authorize_all(caller, drafts)?;
        // Keys are the caller's user's: another user's key is no probe of their writes.
        let Some(key) = idempotency_key else {
            return self.write_fragments(caller, asked, None);
        };
        let scoped = scoped_key("ama-write", caller.user(), &key);
        let written = match self.store.idempotent_ids(&scoped)? {
            Some(written) => written,
            None => match self.write_fragments(caller, asked.clone(), Some(scoped.clone())) {
                // The same key written meanwhile (a retry beside the first call,
                // stamped with another time): decided below as any retry is.
                Err(Error::Store(colmem_store::Error::IdempotencyConflict { .. })) => self
                    .store
                    .idempotent_ids(&scoped)?
                    .ok_or_else(|| colmem_store::Error::IdempotencyConflict { key: key.clone() })?,
                done => return done,
            },
        };
        // A retry, made later (so stamped with other times), returns what the first
        // call wrote; the same key for another request is a conflict, and so is any
        // request once what the first call wrote was purged (it cannot be compared).
        let mut alike = written.len() == asked.len();
        for (id, asked) in written.iter().zip(&asked) {
            match self.stored(*id)? {
                Some(stored) => alike &= asks_alike(&stored, asked),
                None => alike = false,
            }
        }
        if alike {
            Ok(written)
        } else {
            Err(colmem_store::Error::IdempotencyConflict { key }.into())
        }
    }

    /// Writes fragments the pipeline constructed (turns, facts, episodes, profile
    /// entries) in one transaction under the store key `key`, if any: each in scope
    /// `narrow` if given ([`Caller::kept_private`]), through the write rule and the
    /// write policy. Returns the ids and how many the policy kept out of their scope.
    fn write_constructed(
        &self,
        caller: &Caller<'_>,
        drafts: Vec<Draft>,
        narrow: Option<Scope>,
        key: Option<String>,
    ) -> Result<(Vec<FragmentId>, usize)> {
        let mut fragments = Vec::with_capacity(drafts.len());
        let mut withheld = 0;
        for mut draft in drafts {
            if narrow.is_some() {
                draft.scope = narrow;
            } else if draft.scope.is_none() {
                draft.scope = caller.explicit_scope();
            }
            match caller.apply_policy(caller.authorize(draft)?) {
                Ok(fragment) => fragments.push(fragment),
                Err(e) if is_withheld(&e) => withheld += 1,
                Err(e) => return Err(e),
            }
        }
        Ok((self.write_fragments(caller, fragments, key)?, withheld))
    }

    /// Embeds fragments the write rule and policy accepted and writes them in one
    /// transaction under the store key `key`, if any.
    fn write_fragments(
        &self,
        caller: &Caller<'_>,
        mut fragments: Vec<NewFragment>,
        key: Option<String>,
    ) -> Result<Vec<FragmentId>> {
        if fragments.is_empty() {
            return Ok(Vec::new());
        }
        let texts: Vec<&str> = fragments.iter().map(|f| f.content.as_str()).collect();
        let vectors = self
            .embedder
            .embed(&texts)
            .map_err(Error::model("embedder"))?;
        for (fragment, vector) in fragments.iter_mut().zip(vectors) {
            fragment.embedding = Some(colmem_core::Embedding {
                embedder: self.embedder.id().to_owned(),
                vector,
            });
        }
        let receipt = self.store.write(&Interaction {
            user: caller.user(),
            agent: caller.agent(),
            fragments,
            idempotency_key: key,
        })?;
        Ok(receipt.ids)
    }

    /// The AMA write path for one dialogue turn; see the module documentation.
    pub fn remember(&self, caller: &Caller<'_>, turn: &TurnInput) -> Result<Remembered> {
        self.remember_keyed(caller, turn, None)
    }

    /// [`Pipeline::remember`], safe to retry under `idempotency_key` (scoped to the
    /// caller's user): once a call with the key has finished, a call with it again
    /// and the same turn writes nothing and returns what the first wrote, with
    /// `replayed` set; one with another turn (its dialogue id or its words) under the
    /// key is refused with the store's `IdempotencyConflict`. A retry of a call that failed part-way
    /// finishes the work without a second copy of a fact or turn already written.
    pub fn remember_keyed(
        &self,
        caller: &Caller<'_>,
        turn: &TurnInput,
        idempotency_key: Option<&str>,
    ) -> Result<Remembered> {
        let key = idempotency_key.map(|k| scoped_key("ama-remember", caller.user(), k));
        if let Some(key) = &key
            && let Some(written) = self.store.idempotent_ids(key)?
        {
            // The key names one turn: another turn or other words under it are refused,
            // not taken for a retry and lost.
            let asked = self.private_turn(caller, turn).map(|t| said(&t));
            for id in &written {
                // A turn forgotten since (deleted, its text erased, or purged) cannot
                // decide: comparing words with it would tell whether they were the
                // forgotten ones.
                let Some(stored) = self.stored(*id)?.filter(|f| f.deleted_at.is_none()) else {
                    continue;
                };
                if stored.granularity != Granularity::RawTurn {
                    continue;
                }
                // The key's one raw turn (written first) decides.
                let same = stored.provenance.source.turns == [turn.dialogue_id.clone()]
                    && asked
                        .as_deref()
                        .is_some_and(|asked| as_written(caller, &stored, asked));
                if !same {
                    return Err(colmem_store::Error::IdempotencyConflict {
                        key: idempotency_key.unwrap_or_default().to_owned(),
                    }
                    .into());
                }
                break;
            }
            return Ok(Remembered {
                written,
                replayed: true,
                ..Remembered::default()
            });
        }
        if self.instructs_memory(caller, turn)
            && let Some(instruction) = self.roles.refresher.forget_request(&turn.text)?
        {
            let plan = self.forget_plan(caller, &instruction)?;
            let Deletion {
                deleted,
                redacted,
                refused,
            } = self.forget(caller, &plan)?;
            // The instruction itself is not kept: it would recall what it forgets.
            return Ok(Remembered {
                deleted,
                redacted,
                refused,
                ..Remembered::default()
            });
        }
        // The constructor reads the turn's private part (the mandatory redactions
        // applied to its text; who speaks and listens under a stable pseudonym if
        // their name would change), so nothing drawn from it (a fact, its key, a
        // borrowed keyword, an episode's topic words) holds what they remove, and one
        // person's facts are never taken for another's. A turn the write policy would
        // not keep even privately is not remembered: nothing is drawn from it, and no
        // episode summarises it later.
        let Some(mut turn) = self.private_turn(caller, turn) else {
            return Ok(Remembered {
                withheld: 1,
                ..Remembered::default()
            });
        };
        // A turn told without a time was said now: what it states holds from now (not
        // from the beginning of time), and its "yesterday" is the day before.
        turn.time.get_or_insert(caller.now());
        let turn = &turn;
        let (construction, buffered) = {
            let mut open = self
                .open_episodes
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let buffer = open
                .entry((caller.user(), caller.agent(), turn.session.clone()))
                .or_default();
            // The constructor reads the turn with the open episode's turns (a reply
            // borrows its question's words; an episode that closes now summarises
            // them).
            let buffered: Vec<String> = if caller.has_write_policies() {
                buffer.iter().map(said).collect()
            } else {
                Vec::new()
            };
            (self.roles.constructor.observe(turn, buffer)?, buffered)
        };
        // A shared part that changes any of them, or anything drawn from them, keeps
        // all of it private.
        let mut context: Vec<&str> = buffered.iter().map(String::as_str).collect();
        if caller.has_write_policies() {
            for memory in construction
                .raw
                .iter()
                .chain(&construction.facts)
                .chain(&construction.profile)
                .chain(&construction.episodes)
            {
                context.push(&memory.content);
                context.extend(memory.key.as_deref());
                context.extend(memory.keywords.iter().map(String::as_str));
            }
        }
        let narrow = caller.kept_private(&context)?;
        let stored = self.config.store;
        let mut pending: Vec<Pending<'_>> = Vec::new();
        for (on, memories, granularity) in [
            (stored.raw, &construction.raw, Granularity::RawTurn),
            (
                stored.episodes,
                &construction.episodes,
                Granularity::Episode,
            ),
            (stored.profile, &construction.profile, Granularity::Profile),
            (stored.facts, &construction.facts, Granularity::Fact),
        ] {
            if on {
                pending.extend(memories.iter().map(|memory| Pending {
                    memory,
                    granularity,
                }));
            }
        }

        let mut outcome = Remembered::default();
        let mut plain = Vec::new();
        let mut kept = Vec::new();
        // Facts told late, each with the version that follows it.
        let mut told_late = Vec::new();
        for p in pending {
            // A keyed retry of a call that failed part-way keeps the raw turn that
            // call wrote.
            if key.is_some()
                && p.granularity == Granularity::RawTurn
                && let Some(same) = self
                    .own_turn(caller, caller.filter(), &turn.dialogue_id)?
                    .filter(|f| as_written(caller, f, &p.memory.content))
            {
                kept.push(same.id);
                continue;
            }
            let (conflicts, follower, same) = if p.granularity == Granularity::Fact {
                let mut held = self.held_facts(caller, p.memory, &turn.text)?;
                // The same fact from the same turn is held already (a retry after a
                // failure part-way): keep it rather than write a second copy (and close
                // it below if it was told late and the failed call did not).
                let same = held
                    .iter()
                    .position(|f| {
                        as_written(caller, f, &p.memory.content)
                            && f.provenance.source.turns == p.memory.turns
                    })
                    .map(|i| held.remove(i).id);
                // A fact this turn already closed is no longer held, whatever the
                // caller's filter (compiled before the close) still admits.
                held.retain(|f| {
                    !outcome
                        .superseded
                        .iter()
                        .chain(&told_late)
                        .any(|(old, new)| *old == f.id || *new == f.id)
                });
                // The user is the authority on their own state: what an agent says
                // ("I'll block 9:30 instead") closes only what that agent said before.
                if turn.origin == Origin::Other {
                    let mut theirs = Vec::with_capacity(held.len());
                    for f in held {
                        if self.said_only_by(caller, &f, &turn.speaker)? {
                            theirs.push(f);
                        }
                    }
                    held = theirs;
                }
                let held: Vec<&Fragment> = held.iter().collect();
                let conflicts = self.roles.judge.conflicts(p.memory, &turn.text, &held)?;
                let conflicts = self.roles.refresher.resolve(p.memory, &conflicts)?;
                // Versions told after this one follow it rather than being replaced by
                // it: the earliest such one closes it.
                let later = self.told_after(caller, turn, p.memory, &held, &conflicts)?;
                let follower = later.iter().min_by_key(|f| f.validity.from()).copied();
                // A retry replaces nothing the failed call had not.
                let conflicts: Vec<FragmentId> = conflicts
                    .into_iter()
                    .filter(|id| same.is_none() && !later.iter().any(|f| f.id == *id))
                    .collect();
                (conflicts, follower.map(|f| (f.id, f.key.clone())), same)
            } else {
                (Vec::new(), None, None)
            };
            let mut versions = Vec::new();
            if let Some(same) = same {
                kept.push(same);
                versions.push(same);
            } else if !conflicts.is_empty() {
                let done = self.supersede(caller, p.memory, turn, &conflicts, narrow)?;
                versions.extend(done.pairs.iter().map(|(_, new)| *new));
                outcome.superseded.extend(done.pairs);
                outcome.withheld += done.withheld;
            } else if let Some((_, follower_key)) = &follower {
                // Named in no attribute, it is a version of what follows it.
                let mut draft = self.draft(p.memory, p.granularity, turn);
                if draft.key.is_none() {
                    draft.key.clone_from(follower_key);
                }
                match self.write_told_late(caller, draft, narrow, key.is_some())? {
                    Some(id) => versions.push(id),
                    None => outcome.withheld += 1,
                }
            } else {
                plain.push(self.draft(p.memory, p.granularity, turn));
            }
            if let Some((follower, _)) = follower {
                versions.sort();
                versions.dedup();
                for version in versions {
                    if self.close_before(caller, version, follower)? {
                        told_late.push((version, follower));
                    }
                }
            }
        }
        if !told_late.is_empty() {
            plain = self.write_entries_told_late(
                caller,
                plain,
                &mut told_late,
                narrow,
                key.is_some(),
                &mut outcome.withheld,
            )?;
        }
        let (written, withheld) = self.write_constructed(caller, plain, narrow, key)?;
        outcome.written.extend(written);
        outcome.withheld += withheld;
        outcome.written.extend(kept);
        outcome
            .written
            .extend(outcome.superseded.iter().map(|(_, new)| *new));
        outcome
            .written
            .extend(told_late.iter().map(|(old, _)| *old));
        outcome.superseded.extend(told_late);
        outcome.written.sort();
        outcome.written.dedup();
        Ok(outcome)
    }

    /// The forget instruction in `text`, as the refresher reads the user's words.
    pub fn forget_request(&self, text: &str) -> Result<Option<ForgetInstruction>> {
        self.roles.refresher.forget_request(text)
    }

    /// What forgetting would remove of the caller's own memory (its current
    /// fragments and past versions): what `instruction` names, each fragment either
    /// deleted whole or, for a turn or an episode that also told other things,
    /// redacted to the rest. Nothing is changed: [`Pipeline::forget`] carries it out.
    pub fn forget_plan(
        &self,
        caller: &Caller<'_>,
        instruction: &ForgetInstruction,
    ) -> Result<ForgetPlan> {
        // Past versions too: a history read must not recall what was forgotten.
        let mine = self.own_fragments(caller, View::AllVersions, None, None)?;
        let candidates: Vec<&Fragment> = mine.iter().collect();
        let targets = self
            .roles
            .refresher
            .forget_targets(instruction, &candidates)?;
        let targets: Vec<&Fragment> = targets
            .iter()
            .filter_map(|id| mine.iter().find(|f| f.id == *id))
            .collect();
        let mut plan = ForgetPlan::default();
        for f in targets.iter().copied() {
            let current = f.superseded_at.is_none() && f.deleted_at.is_none();
            match self.roles.refresher.remainder(instruction, f, &targets)? {
                Some(rest) if current && rest != f.content => {
                    plan.redact.push((f.clone(), rest));
                }
                _ => plan.delete.push(f.clone()),
            }
        }
        Ok(plan)
    }

    /// What forgetting would remove of the caller's own memory, chosen by the caller
    /// (an explicit erasure): the fragments with these ids, or kept under this subject
    /// key (every version), each deleted whole.
    pub fn forget_plan_of(
        &self,
        caller: &Caller<'_>,
        ids: &[FragmentId],
        key: Option<&str>,
    ) -> Result<ForgetPlan> {
        let mine = self.own_fragments(caller, View::AllVersions, key.map(str::to_owned), None)?;
        let delete = mine
            .into_iter()
            .filter(|f| key.is_some() || ids.contains(&f.id))
            .collect();
        Ok(ForgetPlan {
            delete,
            redact: Vec::new(),
        })
    }

    /// Carries out a [`ForgetPlan`] under the delete rule: what the caller may not
    /// delete is listed as refused. A redacted version is written (with the original
    /// as its parent, in the original's scope) before the original is deleted, so a
    /// failure part-way loses nothing the user did not ask to forget.
    pub fn forget(&self, caller: &Caller<'_>, plan: &ForgetPlan) -> Result<Deletion> {
        // An episode still open would summarise the forgotten turns when it closes,
        // in a scope this agent may write: they leave it first, whatever the
        // deletions below come to (a target the delete rule keeps is no licence to
        // write it again; a store failure part-way must not bring them back).
        let forgotten_turns: Vec<&String> = plan
            .delete
            .iter()
            .chain(plan.redact.iter().map(|(f, _)| f))
            .flat_map(|f| &f.provenance.source.turns)
            .collect();
        {
            let mut open = self
                .open_episodes
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for ((user, _, _), buffer) in open.iter_mut() {
                if *user == caller.user() {
                    buffer.retain(|t| !forgotten_turns.contains(&&t.dialogue_id));
                }
            }
        }
        let mut out = Deletion::default();
        for (original, rest) in &plan.redact {
            let mut probe = Draft::new(String::new(), original.granularity, original.kind);
            probe.scope = Some(original.scope);
            if !caller.can_read_history(original) || caller.authorize(probe).is_err() {
                out.refused.push(original.id);
                continue;
            }
            let mut draft = Draft::new(rest.clone(), original.granularity, original.kind);
            draft.scope = Some(original.scope);
            draft.key.clone_from(&original.key);
            let kept = rest.to_lowercase();
            draft.keywords = original
                .keywords
                .iter()
                .filter(|k| kept.contains(&k.to_lowercase()))
                .cloned()
                .collect();
            draft.source = Source {
                parents: vec![original.id],
                ..original.provenance.source.clone()
            };
            draft.validity = original.validity;
            let new = caller.apply_policy(caller.authorize_derived(&[original], draft)?)?;
            let ids = self.write_fragments(caller, vec![new], None)?;
            let Some(&new) = ids.first() else {
                continue;
            };
            let done = self.delete_all(caller, &[original])?;
            out.deleted.extend(done.deleted);
            out.refused.extend(done.refused);
            out.redacted.push((original.id, new));
        }
        let whole: Vec<&Fragment> = plan.delete.iter().collect();
        let done = self.delete_all(caller, &whole)?;
        out.deleted.extend(done.deleted);
        out.refused.extend(done.refused);
        Ok(out)
    }

    /// Whether a turn may instruct the memory (DESIGN section 3, the one rule of
    /// conversational deletes): the session's user speaking for themself (never an
    /// agent's words, a quote, a paste, a document, an import or a card: those come
    /// as [`Origin::Other`]), to the serving agent, or in words that address the
    /// assistant or the memory. Words said to another person in a conversation the
    /// memory records ("don't forget to take pictures") instruct nothing.
    fn instructs_memory(&self, caller: &Caller<'_>, turn: &TurnInput) -> bool {
        let agent = caller.agent().as_str();
        turn.origin == Origin::User
            && (crate::change::is_the_assistant(&turn.listener, agent)
                || self.roles.refresher.addresses_memory(&turn.text, agent))
    }

    /// The turn as its private part says it: its text and the names of who speaks and
    /// listens as the write policy keeps them privately; `None` if it keeps nothing.
    fn private_turn(&self, caller: &Caller<'_>, turn: &TurnInput) -> Option<TurnInput> {
        Some(TurnInput {
            text: caller
                .policy_part(Scope::User, &turn.text)
                .text()?
                .to_owned(),
            speaker: caller.written_name(&turn.speaker)?,
            listener: caller.written_name(&turn.listener)?,
            ..turn.clone()
        })
    }

    /// Summarises and writes the open episode of a session, if any: in the agent's
    /// private scope if the write policy's shared part would change one of its turns
    /// or the summary; `None` if no turns were pending or the policy withholds it.
    pub fn close_episode(&self, caller: &Caller<'_>, session: &str) -> Result<Option<FragmentId>> {
        let (summary, narrow) = {
            let mut open = self
                .open_episodes
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match open.get_mut(&(caller.user(), caller.agent(), session.to_owned())) {
                Some(buffer) => {
                    let mut context: Vec<String> = buffer.iter().map(said).collect();
                    let summary = self.roles.constructor.close(buffer)?;
                    context.extend(summary.iter().map(|m| m.content.clone()));
                    let context: Vec<&str> = context.iter().map(String::as_str).collect();
                    (summary, caller.kept_private(&context)?)
                }
                None => (None, None),
            }
        };
        let Some(memory) = summary.filter(|_| self.config.store.episodes) else {
            return Ok(None);
        };
        let draft = self.memory_draft(&memory, Granularity::Episode, None);
        let (written, _) = self.write_constructed(caller, vec![draft], narrow, None)?;
        Ok(written.first().copied())
    }

    /// Puts turns remembered before back in their session's open episode: those of
    /// `turns` that no current episode of the caller summarises, ahead of the turns
    /// buffered since, in order. For a run that stopped part-way (a process killed
    /// in the middle of a session) and is run again: its keyed turns are replayed,
    /// not observed, so without this the session's episode would leave them out.
    /// Returns how many turns it put back.
    pub fn resume_episode(
        &self,
        caller: &Caller<'_>,
        session: &str,
        turns: &[TurnInput],
    ) -> Result<usize> {
        if turns.is_empty() {
            return Ok(0);
        }
        let summarised: HashSet<String> = self
            .own_fragments(caller, View::Current, None, Some(Granularity::Episode))?
            .into_iter()
            .flat_map(|episode| episode.provenance.source.turns)
            .collect();
        let mut open = self
            .open_episodes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let buffer = open
            .entry((caller.user(), caller.agent(), session.to_owned()))
            .or_default();
        let missing: Vec<TurnInput> = turns
            .iter()
            .filter(|t| t.session == session && !summarised.contains(&t.dialogue_id))
            .filter(|t| !buffer.iter().any(|b| b.dialogue_id == t.dialogue_id))
            .filter_map(|t| self.private_turn(caller, t))
            .collect();
        let resumed = missing.len();
        buffer.splice(0..0, missing);
        Ok(resumed)
    }

    /// Deletes the caller's fragments recorded longer ago than the retention limit,
    /// past versions included. What the delete rule refuses is kept and listed; the
    /// rest is deleted all the same.
    pub fn enforce_retention(&self, caller: &Caller<'_>) -> Result<Deletion> {
        let Some(limit) = self.config.retention_ms else {
            return Ok(Deletion::default());
        };
        if let Some(refusal) = refused_retention(limit) {
            return Err(Error::InvalidInput(refusal));
        }
        let cutoff = caller.now().as_millis().saturating_sub(limit);
        let mine = self.own_fragments(caller, View::AllVersions, None, None)?;
        let expired: Vec<&Fragment> = mine
            .iter()
            .filter(|f| f.provenance.created_at.as_millis() < cutoff)
            .collect();
        self.delete_all(caller, &expired)
    }

    /// The fragment stored as `id`, or `None` if it is gone (purged, or never
    /// written).
    fn stored(&self, id: FragmentId) -> Result<Option<Fragment>> {
        match self.store.get(id) {
            Ok(fragment) => Ok(Some(fragment)),
            Err(colmem_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Every version of what is kept under the subject key `key` ("dana/home"): the
    /// user's own facts and profile entries the caller may read now, current and
    /// replaced, oldest first (by when each held), each with the world time it held and
    /// the record time it was replaced. The read rule is the store listing's filter with
    /// every version admitted; deleted fragments are gone from it. The fragment that
    /// replaced a version, and those it replaced, are named only if the caller may read
    /// them.
    pub fn history(&self, caller: &Caller<'_>, key: &str) -> Result<Vec<Fragment>> {
        if key.trim().is_empty() {
            return Err(Error::InvalidInput(
                "a history names a subject key such as dana/home".into(),
            ));
        }
        // The user's own: another user's fact under the same key (shared with a crew)
        // is about someone else of that name, and never one of these versions.
        let mut versions = Vec::new();
        for granularity in [Granularity::Fact, Granularity::Profile] {
            versions.extend(self.own_fragments(
                caller,
                View::AllVersions,
                Some(key.to_owned()),
                Some(granularity),
            )?);
        }
        // By when each held: a version told late was written after its follower.
        versions.sort_by_key(|f| (f.validity.from(), f.id));
        // A version names the fragments it replaced and the one that replaced it: only
        // those the caller may read too. Their ids and when they were written are not
        // for a reader they are hidden from.
        let listed: Vec<FragmentId> = versions.iter().map(|f| f.id).collect();
        let readable = |id: FragmentId| -> Result<bool> {
            if listed.contains(&id) {
                return Ok(true);
            }
            Ok(self
                .stored(id)?
                .is_some_and(|f| caller.can_read_history(&f)))
        };
        for f in &mut versions {
            if let Some(next) = f.superseded_by
                && !readable(next)?
            {
                f.superseded_by = None;
            }
            let mut kept = Vec::new();
            for parent in std::mem::take(&mut f.provenance.source.parents) {
                if readable(parent)? {
                    kept.push(parent);
                }
            }
            f.provenance.source.parents = kept;
        }
        Ok(versions)
    }

    /// Retrieval-only mode; see the module documentation.
    pub fn recall(
        &self,
        caller: &Caller<'_>,
        query: &str,
        options: &RecallOptions,
    ) -> Result<Recall> {
        if !query.chars().any(char::is_alphanumeric) {
            return Err(Error::InvalidInput(format!(
                "a recall needs words to search for, not {query:?}"
            )));
        }
        if options.k == Some(0) {
            return Err(Error::InvalidInput(
                "a recall asks for at least 1 fragment, not 0".into(),
            ));
        }
        self.index.catch_up(self.store.as_ref())?;
        // "Where do I live?" asks after the user served, unless the context names
        // another asker.
        let mut context = options.context.clone();
        context
            .asker
            .get_or_insert_with(|| caller.user().as_str().to_owned());
        let plan = self.roles.retriever.plan(query, &context)?;
        let k = options.k.unwrap_or(plan.k).max(1);
        if k > MAX_K {
            return Err(Error::InvalidInput(format!(
                "a recall asks for at most {MAX_K} fragments, not {k}"
            )));
        }
        let filter = caller.filter().clone().with_view(options.view);
        let lexical = lexical_text(&plan.rewritten, self.config.expand_categories);
        let content = crate::text::content_words(&plan.rewritten);
        let vector_text = if self.config.embed_content_words && !content.is_empty() {
            content.join(" ")
        } else {
            plan.rewritten.clone()
        };
        let named = named_people(&plan.rewritten);
        let prefer = Preference {
            config: &self.config,
            named: &named,
            date: named_date(&plan.rewritten),
            asks_when: crate::answer::asks_for_date(&plan.rewritten),
        };
        let told = prefer
            .date
            .filter(|_| self.config.dated_search)
            .and_then(NamedDate::interval);
        // A preference reorders the hits: search deeper so what ranked just below k
        // can rise into it.
        let depth = if prefer.reorders() { k * 2 } else { k };
        let vector = self
            .embedder
            .embed(&[vector_text.as_str()])
            .map_err(Error::model("embedder"))?
            .pop()
            .ok_or_else(|| Error::InvalidInput("the embedder returned no vector".into()))?;

        let others = fallback(plan.route);
        let mut steps = match (&options.granularities, self.config.exclusive_routing) {
            (Some(chosen), _) => vec![Step::Search(RoundKind::Chosen, chosen.clone())],
            // The route alone, then the other granularities and related turns as the
            // judge asks for more.
            (None, true) => vec![
                Step::Search(RoundKind::Route(plan.route), vec![plan.route.granularity()]),
                Step::Search(RoundKind::Route(others[0]), vec![others[0].granularity()]),
            ],
            // The route's memory granularities at once, the route's preferred in the
            // ranking.
            (None, false) => vec![Step::Search(
                RoundKind::Route(plan.route),
                searched_together(plan.route),
            )],
        };
        steps.push(Step::Related);
        if options.granularities.is_none() && self.config.exclusive_routing {
            steps.push(Step::Search(
                RoundKind::Route(others[1]),
                vec![others[1].granularity()],
            ));
        }
        steps.truncate(self.config.rounds.saturating_add(1));

        let mut rounds = Vec::new();
        let mut found: Vec<Recalled> = Vec::new();
        let mut seen = HashSet::new();
        for (round, step) in steps.into_iter().enumerate() {
            let (kind, fresh) = match step {
                Step::Search(kind, granularities) => {
                    let query = Query {
                        vector: Some(&vector),
                        text: Some(&lexical),
                        k: depth,
                        granularities: &granularities,
                        begun_in: None,
                    };
                    let hits = self.search_with_told(&query, &filter, told)?;
                    let mut fresh = Vec::new();
                    for hit in hits.into_iter().filter(|h| seen.insert(h.id)) {
                        // A fragment deleted since the index caught up is gone, not an error.
                        let Some(fragment) = self.stored(hit.id)? else {
                            continue;
                        };
                        // The filter ran inside the search; this only guards against
                        // an index that lags the store, never the enforcement itself.
                        if filter.admits(&fragment.meta()) {
                            fresh.push((Some(hit), fragment));
                        }
                    }
                    (kind, fresh)
                }
                Step::Related => {
                    let related = self.related_turns(caller, &filter, &found)?;
                    let fresh = related
                        .into_iter()
                        .filter(|f| seen.insert(f.id))
                        .map(|f| (None, f))
                        .collect();
                    (RoundKind::RelatedTurns, fresh)
                }
            };
            rounds.push(kind);
            let refs: Vec<&Fragment> = fresh.iter().map(|(_, f)| f).collect();
            let relevance = self.roles.judge.relevance(&plan.rewritten, &refs)?;
            for ((hit, fragment), rel) in fresh.into_iter().zip(relevance.scores) {
                let fused = hit.map_or(0.0, |h| h.fused);
                let preferred = !self.config.exclusive_routing
                    && options.granularities.is_none()
                    && fragment.granularity == plan.route.granularity();
                let mut boost = if preferred {
                    1.0 + self.config.route_boost
                } else {
                    1.0
                };
                boost *= prefer.boost(&fragment);
                found.push(Recalled {
                    score: fused * boost + rel * self.config.relevance_weight,
                    fragment,
                    fused,
                    vector: hit.and_then(|h| h.vector),
                    lexical: hit.and_then(|h| h.lexical),
                    relevance: rel,
                    route: kind,
                    round,
                });
            }
            if relevance.sufficient {
                break;
            }
        }
        if self.config.reply_weight > 0.0 || self.config.context_weight > 0.0 {
            // Twice, so a neighbour's reply counts too: "Check out my painting!" →
            // "What inspired it?" → the answer.
            for _ in 0..PROMOTION_PASSES {
                self.promote_replies(
                    caller,
                    &filter,
                    &prefer,
                    &mut found,
                    &mut seen,
                    rounds.len(),
                )?;
            }
        }
        if options.view == View::Current {
            // The caller's newest fact versions, read at most once for both.
            let mut versions = None;
            self.demote_outdated_turns(caller, &mut versions, &mut found)?;
            if prefer.date.is_none() && asks_of_the_present(&plan.rewritten) {
                self.leave_out_past_events(caller, context.now, &mut versions, &mut found)?;
            }
        }
        for hit in &mut found {
            hit.score *= self.form_weight(&hit.fragment);
        }
        found.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.round.cmp(&b.round))
                .then(a.fragment.id.cmp(&b.fragment.id))
        });
        found.truncate(k);
        Ok(Recall {
            plan,
            rounds,
            hits: found,
        })
    }

    /// The hits of `query` and, when the query names a time (`told`), the best of what
    /// was told then, scored among that time's fragments as the whole search scores
    /// the rest: a day's talk that shares few words with the query still comes in,
    /// where the whole store holds better matches for them. So the best of that time
    /// ranks like the best of the store, as the query names that time (weighting it
    /// down loses evidence: LoCoMo recall@10 0.803 at 1, 0.802 at 0.75, 0.801 at 0.5).
    /// A hit found both ways keeps its higher score, and the signals and plan of the
    /// search that gave it. Both searches run under `filter`.
    fn search_with_told(
        &self,
        query: &Query<'_>,
        filter: &ReadFilter,
        told: Option<Validity>,
    ) -> Result<Vec<Hit>> {
        let mut hits = self.index.search(query, filter)?;
        let Some(told) = told else {
            return Ok(hits);
        };
        let then = Query {
            begun_in: Some(told),
            ..*query
        };
        for hit in self.index.search(&then, filter)? {
            match hits.iter_mut().find(|h| h.id == hit.id) {
                Some(found) if found.fused >= hit.fused => {}
                Some(found) => *found = hit,
                None => hits.push(hit),
            }
        }
        Ok(hits)
    }

    /// The factor a hit's score is multiplied by for its form, whatever its words:
    /// - a question tells nothing, the statements around it do: a raw turn loses
    ///   [`PipelineConfig::question_discount`] times the share of it that asks
    ///   ([`crate::text::asked_share`]);
    /// - a session's first turn tells what happened since the last: a raw turn or a fact
    ///   drawn from it gains [`PipelineConfig::opening_boost`].
    fn form_weight(&self, fragment: &Fragment) -> f64 {
        let turns = &fragment.provenance.source.turns;
        let mut weight = 1.0;
        if matches!(
            fragment.granularity,
            Granularity::RawTurn | Granularity::Fact
        ) && turns.len() == 1
            && turns.first().and_then(|t| turn_number(t)) == Some(1)
        {
            weight *= 1.0 + self.config.opening_boost;
        }
        if fragment.granularity == Granularity::RawTurn {
            let said = fragment
                .content
                .split_once(": ")
                .map_or(fragment.content.as_str(), |(_, said)| said);
            weight *= 1.0 - self.config.question_discount * crate::text::asked_share(said);
        }
        weight
    }

    /// In a read of what holds now, a turn whose every fact was replaced ("I live in
    /// Lisbon", before the move to Berlin) still tells what was said, but no longer what
    /// holds: it ranks [`OUTDATED_TURN_WEIGHT`] times as high. Judged among the
    /// [`REPLACED_LOOKBACK`] newest fact versions the caller may read, of the turn's user
    /// and session.
    fn demote_outdated_turns(
        &self,
        caller: &Caller<'_>,
        versions: &mut Option<Vec<Fragment>>,
        found: &mut [Recalled],
    ) -> Result<()> {
        if !found
            .iter()
            .any(|h| h.fragment.granularity == Granularity::RawTurn)
        {
            return Ok(());
        }
        let versions = self.newest_fact_versions_once(caller, versions)?;
        for hit in found
            .iter_mut()
            .filter(|h| h.fragment.granularity == Granularity::RawTurn)
        {
            let said = &hit.fragment.provenance;
            let mut drawn = versions
                .iter()
                .filter(|f| {
                    f.provenance.user == said.user
                        && f.provenance.source.session == said.source.session
                        && f.provenance.source.turns == said.source.turns
                })
                .peekable();
            if drawn.peek().is_some() && drawn.all(|f| f.superseded_at.is_some()) {
                hit.score *= OUTDATED_TURN_WEIGHT;
            }
        }
        Ok(())
    }

    /// For a question of what holds now ("Which company employs Ines now?"), a fact of an
    /// event over well before the present ("helping at my uncle's restaurant on the
    /// weekend of 11 June 2022") tells of the past, not of what holds: it is left out,
    /// as a history read finds it. The present is `now`, or else the newest world time of
    /// the facts the caller reads; an event is over when the day or month its fact names
    /// ended more than [`EVENT_OVER_DAYS`] days before it. A state begun or held from a
    /// day ("started at Initech in May", "vegan since 2018", "born on 5 May 2019") is no
    /// event, and the raw turn that told the event stays.
    fn leave_out_past_events(
        &self,
        caller: &Caller<'_>,
        now: Option<Timestamp>,
        versions: &mut Option<Vec<Fragment>>,
        found: &mut Vec<Recalled>,
    ) -> Result<()> {
        let end = |f: &Fragment| {
            (f.granularity == Granularity::Fact)
                .then(|| event_end(&f.content))
                .flatten()
        };
        if !found.iter().any(|h| end(&h.fragment).is_some()) {
            return Ok(());
        }
        let present = match now {
            Some(now) => Some(now),
            None => self
                .newest_fact_versions_once(caller, versions)?
                .iter()
                .map(|f| f.validity.from())
                .max(),
        };
        let Some(present) = present else {
            return Ok(());
        };
        let over_by = present.plus_millis(-EVENT_OVER_DAYS * 86_400_000);
        found.retain(|h| end(&h.fragment).is_none_or(|end| end >= over_by));
        Ok(())
    }

    /// Full mode: recall, then answer from the evidence.
    pub fn answer(
        &self,
        caller: &Caller<'_>,
        query: &str,
        options: &RecallOptions,
    ) -> Result<Answered> {
        let recall = self.recall(caller, query, options)?;
        let replaced = self.replaced_by_evidence(caller, &recall, options.view)?;
        self.answer_from(recall, &replaced)
    }

    /// The facts `recall`'s facts replaced, generation by generation (see
    /// [`Pipeline::answer`]), that the caller may read now: what an answer reads beside
    /// the evidence. A caller that narrows or redacts the recall (a read policy) does
    /// the same to these before [`Pipeline::answer_from`].
    pub fn replaced_by_evidence(
        &self,
        caller: &Caller<'_>,
        recall: &Recall,
        view: View,
    ) -> Result<Vec<Fragment>> {
        let evidence: Vec<&Fragment> = recall.hits.iter().map(|h| &h.fragment).collect();
        self.replaced(caller, &evidence, view)
    }

    /// Full mode over a recall as shown to the caller and the facts its evidence
    /// replaced: the answer reads nothing else.
    pub fn answer_from(&self, recall: Recall, replaced: &[Fragment]) -> Result<Answered> {
        let evidence: Vec<&Fragment> = recall.hits.iter().map(|h| &h.fragment).collect();
        let replaced: Vec<&Fragment> = replaced.iter().collect();
        let answer = self
            .roles
            .answerer
            .answer(&recall.plan.rewritten, &evidence, &replaced)?;
        Ok(Answered { recall, answer })
    }

    /// The facts the evidence's facts replaced, and the ones those replaced, up to
    /// [`REPLACED_DEPTH`] generations back: the ones the caller may read now, replaced
    /// by the moment `view` reads (a history read of August is answered by what held in
    /// August, though it was replaced in September).
    fn replaced(
        &self,
        caller: &Caller<'_>,
        evidence: &[&Fragment],
        view: View,
    ) -> Result<Vec<Fragment>> {
        let mut seen: Vec<FragmentId> = evidence.iter().map(|f| f.id).collect();
        let mut frontier: Vec<FragmentId> = evidence
            .iter()
            .filter(|f| f.granularity == Granularity::Fact)
            .flat_map(|f| f.provenance.source.parents.iter().copied())
            .collect();
        let mut out = Vec::new();
        for _ in 0..REPLACED_DEPTH {
            let mut next = Vec::new();
            for id in frontier {
                if seen.contains(&id) {
                    continue;
                }
                seen.push(id);
                // A purged ancestor is gone, and forgotten with it.
                let Some(parent) = self.stored(id)? else {
                    continue;
                };
                if parent.granularity == Granularity::Fact
                    && replaced_in(view, &parent)
                    && caller.can_read_history(&parent)
                {
                    next.extend(parent.provenance.source.parents.iter().copied());
                    out.push(parent);
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        // The replaced facts drawn from the turns the evidence holds: a raw turn still
        // says what its superseded facts said.
        let turns: Vec<&String> = evidence
            .iter()
            .flat_map(|f| &f.provenance.source.turns)
            .collect();
        let mine = self.newest_fact_versions(caller)?;
        out.extend(mine.into_iter().filter(|f| {
            replaced_in(view, f)
                && f.provenance.user == caller.user()
                && !seen.contains(&f.id)
                && f.provenance.source.turns.iter().any(|t| turns.contains(&t))
        }));
        Ok(out)
    }

    /// [`Pipeline::newest_fact_versions`], read into `read` the first time it is asked
    /// for.
    fn newest_fact_versions_once<'r>(
        &self,
        caller: &Caller<'_>,
        read: &'r mut Option<Vec<Fragment>>,
    ) -> Result<&'r [Fragment]> {
        Ok(match read {
            Some(versions) => versions,
            None => read.insert(self.newest_fact_versions(caller)?),
        })
    }

    /// The [`REPLACED_LOOKBACK`] newest fact versions, current or replaced, the caller
    /// may read.
    fn newest_fact_versions(&self, caller: &Caller<'_>) -> Result<Vec<Fragment>> {
        Ok(self.store.list(
            &caller.filter().clone().with_view(View::AllVersions),
            &ListQuery {
                granularity: Some(Granularity::Fact),
                order: Order::NewestFirst,
                limit: Some(REPLACED_LOOKBACK),
                ..ListQuery::default()
            },
        )?)
    }

    /// The caller's own fragments (not other users' shared ones) that it can read now,
    /// in `view`.
    fn own_fragments(
        &self,
        caller: &Caller<'_>,
        view: View,
        key: Option<String>,
        granularity: Option<Granularity>,
    ) -> Result<Vec<Fragment>> {
        let mut out = self.store.list(
            &caller.filter().clone().with_view(view),
            &ListQuery {
                key,
                granularity,
                order: Order::NewestFirst,
                ..ListQuery::default()
            },
        )?;
        out.retain(|f| f.provenance.user == caller.user());
        Ok(out)
    }

    /// The current facts a new fact may make stale: the same subject key; the speaker's
    /// recent facts whose values the turn names; for a correction the speaker's recent
    /// facts about them; for a statement that the old state ended ("from now on") the
    /// speaker's recent facts under other keys.
    fn held_facts(
        &self,
        caller: &Caller<'_>,
        memory: &Memory,
        said: &str,
    ) -> Result<Vec<Fragment>> {
        let mut held = match &memory.key {
            Some(key) => self.own_fragments(
                caller,
                View::Current,
                Some(key.clone()),
                Some(Granularity::Fact),
            )?,
            None => Vec::new(),
        };
        let Some(speaker) = &memory.speaker else {
            return Ok(held);
        };
        let recent = self.store.list(
            caller.filter(),
            &ListQuery {
                granularity: Some(Granularity::Fact),
                order: Order::NewestFirst,
                limit: Some(RECENT_LOOKBACK),
                ..ListQuery::default()
            },
        )?;
        let corrected = crate::change::is_correction(&memory.content);
        // "From now on", "no longer": what it ends may be told in other words.
        let ends_old = crate::change::says_the_old_state_ended(&memory.content);
        // A correction may call a held day wrong ("I typed March 4 by mistake").
        let wrong_days = if corrected {
            crate::values::days_called_wrong(said)
        } else {
            Vec::new()
        };
        // "Wings instead of engines now": what it replaced for good may be named in
        // other words.
        let displaced = crate::judge::displaced_for_good(&memory.content);
        let prefix = format!("{}/", speaker.to_lowercase());
        let names = crate::judge::people(memory, &[]);
        // "Erin lives in Tokyo now": what the speaker holds of Erin ("my colleague Erin
        // lives in Paris") is held of the person it is keyed to.
        let named_person = memory
            .key
            .as_deref()
            .and_then(|k| k.split_once('/'))
            .map(|(person, _)| person)
            .filter(|person| format!("{person}/") != prefix);
        for f in recent {
            if f.provenance.user != caller.user() || held.iter().any(|h| h.id == f.id) {
                continue;
            }
            let about_speaker = f.key.as_deref().is_none_or(|k| k.starts_with(&prefix));
            let named_now = crate::values::named(&f.content, &names)
                .iter()
                .any(|v| crate::values::touches(said, v))
                || named_person.is_some_and(|p| crate::values::mentions(&f.content, p))
                || crate::judge::names_all(&f.content, &displaced)
                || crate::values::days(&f.content)
                    .iter()
                    .any(|d| wrong_days.contains(d));
            if about_speaker
                && (named_now
                    || (corrected && f.key.is_some() && f.key != memory.key)
                    || (ends_old && f.key != memory.key))
            {
                held.push(f);
            }
        }
        Ok(held)
    }

    /// Closes each stale fact in favour of one new version of `memory`, derived from them,
    /// in a private scope if `narrow` says the turn is kept private.
    fn supersede(
        &self,
        caller: &Caller<'_>,
        memory: &Memory,
        turn: &TurnInput,
        stale: &[FragmentId],
        narrow: Option<Scope>,
    ) -> Result<Superseded> {
        let olds = stale
            .iter()
            .map(|id| self.store.get(*id))
            .collect::<colmem_store::Result<Vec<_>>>()?;
        // One successor per scope among the stale facts: facts of scopes that are not
        // nested (a crew's and a user's) share no scope a successor could take whose
        // readers all read each of them, so each scope's readers get their own.
        let mut scopes: Vec<Scope> = Vec::new();
        for old in &olds {
            if !scopes.contains(&old.scope) {
                scopes.push(old.scope);
            }
        }
        let mut out = Superseded::default();
        let profile =
            self.own_fragments(caller, View::Current, None, Some(Granularity::Profile))?;
        for scope in scopes {
            let olds: Vec<&Fragment> = olds.iter().filter(|f| f.scope == scope).collect();
            let mut draft = self.draft(memory, Granularity::Fact, turn);
            // "Erin lives in Tokyo now" replaces what was held of "my colleague Erin"
            // (the judge took it for her): the new version is hers, under her key.
            if let Some(key) = kin_key(memory.key.as_deref(), &olds) {
                draft.key = Some(key);
            }
            // "Sorry, I meant Milan, not Rome" names no attribute: it is the version of
            // what it sets right, under its key.
            if draft.key.is_none()
                && let Some(key) = olds.first().and_then(|f| f.key.clone())
                && olds.iter().all(|f| f.key.as_deref() == Some(key.as_str()))
            {
                draft.key = Some(key);
            }
            // A successor holds after what it replaces held from: "we moved last month"
            // replaces "I live in Leeds" said last week from just after it was said, so
            // the old version closes where the new one starts.
            if let Some(latest) = olds.iter().map(|f| f.validity.from()).max()
                && draft.validity.from() <= latest
                && let Ok(validity) = Validity::new(latest.plus_millis(1), None)
            {
                draft.validity = validity;
            }
            // A turn kept private closes each stale fact with a successor in its own
            // private scope, of the caller's own (it says what the turn says, nothing
            // of the stale facts'): their other readers no longer read them, nor the
            // new one. Closing them needs what any supersession needs: the caller
            // could write a fragment of their scope.
            let new = match narrow {
                Some(narrow) => {
                    let mut probe =
                        Draft::new(String::new(), Granularity::Fact, Kind::Conversation);
                    probe.scope = Some(scope);
                    caller.authorize(probe)?;
                    draft.scope = narrowest([narrow, scope]);
                    draft.source.parents = olds.iter().map(|f| f.id).collect();
                    caller.authorize(draft)?
                }
                None => caller.authorize_derived(&olds, draft)?,
            };
            // A successor the policy withholds closes nothing: no version may say what
            // it would have said.
            let mut new = match caller.apply_policy(new) {
                Ok(new) => new,
                Err(e) if is_withheld(&e) => {
                    out.withheld += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            new.embedding = Some(
                self.embedder
                    .embed_one(&new.content)
                    .map_err(Error::model("embedder"))?,
            );
            let (first, rest) = olds
                .split_first()
                .ok_or_else(|| Error::InvalidInput("nothing to supersede".into()))?;
            let new_id = self.store.supersede(&Supersede {
                user: caller.user(),
                agent: caller.agent(),
                old: first.id,
                new,
            })?;
            out.pairs.push((first.id, new_id));
            // The profile entries drawn from what a stale fact said are stale with it,
            // those the caller could write a fragment of the scope of, as for the fact
            // (an entry may lie in another scope than the fact drawn from the same turn:
            // a corrected fact keeps its predecessor's scope). One closed earlier in
            // this turn may still be listed (the caller's filter was compiled before
            // it): its row says so.
            let writable = |p: &Fragment| {
                p.scope == scope || {
                    let mut probe =
                        Draft::new(String::new(), Granularity::Profile, Kind::Conversation);
                    probe.scope = Some(p.scope);
                    caller.authorize(probe).is_ok()
                }
            };
            let drawn: Vec<&Fragment> = profile
                .iter()
                .filter(|p| {
                    writable(p)
                        && p.superseded_by.is_none()
                        && !out.pairs.iter().any(|(old, _)| *old == p.id)
                        && olds
                            .iter()
                            .any(|old| drawn_from(&p.content, &p.provenance.source.turns, old))
                })
                .collect();
            for also in rest.iter().copied().chain(drawn) {
                self.store.supersede_by(&colmem_store::SupersedeBy {
                    user: caller.user(),
                    agent: caller.agent(),
                    old: also.id,
                    successor: new_id,
                })?;
                out.pairs.push((also.id, new_id));
            }
        }
        Ok(out)
    }

    /// The held versions in conflict with `memory` that were told after it: its turn
    /// was said before each was said and began, and what it states begins before that
    /// too ("I live in Oslo", said in January, remembered after "I live in Rome", said
    /// in March).
    fn told_after<'a>(
        &self,
        caller: &Caller<'_>,
        turn: &TurnInput,
        memory: &Memory,
        held: &[&'a Fragment],
        conflicts: &[FragmentId],
    ) -> Result<Vec<&'a Fragment>> {
        let mut later = Vec::new();
        let Some(t) = turn.time else {
            return Ok(later);
        };
        let starts = memory.time.unwrap_or(t);
        for f in held.iter().filter(|f| conflicts.contains(&f.id)) {
            if t < f.validity.from()
                && starts < f.validity.from()
                && self.said_after(caller, f, t)?
            {
                later.push(*f);
            }
        }
        Ok(later)
    }

    /// Writes the profile entries among `plain` drawn from a fact told late, and closes
    /// each where what follows that fact begins (it follows them too), before the keyed
    /// write that marks the call finished; returns the other drafts.
    fn write_entries_told_late(
        &self,
        caller: &Caller<'_>,
        plain: Vec<Draft>,
        told_late: &mut Vec<(FragmentId, FragmentId)>,
        narrow: Option<Scope>,
        retry: bool,
        withheld: &mut usize,
    ) -> Result<Vec<Draft>> {
        let mut versions = Vec::with_capacity(told_late.len());
        for (version, follower) in told_late.iter() {
            versions.extend(self.stored(*version)?.map(|v| (v, *follower)));
        }
        let mut rest = Vec::with_capacity(plain.len());
        for draft in plain {
            let follower = versions
                .iter()
                .find(|(v, _)| {
                    draft.granularity == Granularity::Profile
                        && drawn_from(&draft.content, &draft.source.turns, v)
                })
                .map(|(_, follower)| *follower);
            let Some(follower) = follower else {
                rest.push(draft);
                continue;
            };
            match self.write_told_late(caller, draft, narrow, retry)? {
                Some(id) => {
                    if self.close_before(caller, id, follower)? {
                        told_late.push((id, follower));
                    }
                }
                None => *withheld += 1,
            }
        }
        Ok(rest)
    }

    /// Whether the turns `fact` was drawn from were said after `t` ("next month I start
    /// at Initech", said before `t`, holds after it but was not said after it).
    fn said_after(
        &self,
        caller: &Caller<'_>,
        fact: &Fragment,
        t: colmem_core::Timestamp,
    ) -> Result<bool> {
        // A fact whose turns cannot be read (none, deleted, not kept) was not
        // shown to be said after.
        let mut found = false;
        for id in &fact.provenance.source.turns {
            if let Some(said) = self.own_turn(caller, caller.filter(), id)? {
                if said.validity.from() <= t {
                    return Ok(false);
                }
                found = true;
            }
        }
        Ok(found)
    }

    /// Writes a fragment told late (see the module documentation) on its own; on a
    /// keyed retry, finds the version a call that failed part-way wrote, closed or not.
    /// `None` if the write policy withholds it.
    fn write_told_late(
        &self,
        caller: &Caller<'_>,
        draft: Draft,
        narrow: Option<Scope>,
        retry: bool,
    ) -> Result<Option<FragmentId>> {
        if retry {
            let versions = self.own_fragments(
                caller,
                View::AllVersions,
                draft.key.clone(),
                Some(draft.granularity),
            )?;
            if let Some(same) = versions.iter().find(|f| {
                as_written(caller, f, &draft.content)
                    && f.provenance.source.turns == draft.source.turns
            }) {
                return Ok(Some(same.id));
            }
        }
        let (written, _) = self.write_constructed(caller, vec![draft], narrow, None)?;
        Ok(written.first().copied())
    }

    /// Closes `version` where `follower`, a version told before it but holding after
    /// it, begins, and links the two. A keyed retry may find it so closed already;
    /// `false` if something else closed it.
    fn close_before(
        &self,
        caller: &Caller<'_>,
        version: FragmentId,
        follower: FragmentId,
    ) -> Result<bool> {
        match self.store.supersede_by(&colmem_store::SupersedeBy {
            user: caller.user(),
            agent: caller.agent(),
            old: version,
            successor: follower,
        }) {
            Ok(()) => Ok(true),
            Err(colmem_store::Error::NotCurrent {
                id,
                state: "superseded",
            }) if id == version => {
                Ok(self.stored(version)?.and_then(|f| f.superseded_by) == Some(follower))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes each of `fragments` the delete rule allows, and lists those it refuses.
    /// Any other failure (the store's) stops the deletion: what was deleted before it
    /// stays deleted, each in its own transaction.
    fn delete_all(&self, caller: &Caller<'_>, fragments: &[&Fragment]) -> Result<Deletion> {
        let mut out = Deletion::default();
        for f in fragments {
            match self.delete(caller, f) {
                Ok(()) => out.deleted.push(f.id),
                Err(e) if e.kind() == colmem_core::ErrorKind::Forbidden => out.refused.push(f.id),
                // Deleted meanwhile (by another session's retention, say): gone already.
                Err(Error::Store(colmem_store::Error::NotCurrent {
                    state: "deleted", ..
                })) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Deletes one fragment, current or a past version, after the delete rule: the caller
    /// can read it (in a history read) and could write a fragment of its scope.
    fn delete(&self, caller: &Caller<'_>, fragment: &Fragment) -> Result<()> {
        if !caller.can_read_history(fragment) {
            return Err(colmem_core::Forbidden {
                denial: colmem_core::Denial::NotReadable,
            }
            .into());
        }
        let mut probe = Draft::new(String::new(), fragment.granularity, fragment.kind);
        probe.scope = Some(fragment.scope);
        caller.authorize(probe)?;
        self.store.delete(&Delete {
            user: caller.user(),
            agent: caller.agent(),
            fragment: fragment.id,
        })?;
        Ok(())
    }

    /// Whether `fact` was drawn from turns, and every one of them was said by
    /// `speaker` (a fact written without turns, such as a shared finding, was not).
    fn said_only_by(&self, caller: &Caller<'_>, fact: &Fragment, speaker: &str) -> Result<bool> {
        if fact.provenance.source.turns.is_empty() {
            return Ok(false);
        }
        for id in &fact.provenance.source.turns {
            let said = self
                .own_turn(caller, caller.filter(), id)?
                .and_then(|t| t.content.split_once(": ").map(|(s, _)| s == speaker));
            if said != Some(true) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The caller's own raw turn `dialogue_id`, if `filter` admits it.
    fn own_turn(
        &self,
        caller: &Caller<'_>,
        filter: &colmem_core::ReadFilter,
        dialogue_id: &str,
    ) -> Result<Option<Fragment>> {
        let listed = self.store.list(
            filter,
            &ListQuery {
                key: Some(turn_key(dialogue_id)),
                granularity: Some(Granularity::RawTurn),
                ..ListQuery::default()
            },
        )?;
        Ok(listed
            .into_iter()
            .find(|f| f.provenance.user == caller.user()))
    }

    /// In a dialogue the answer to a question is the next turn: the turn after each
    /// of the best hits that asks something ranks at least `reply_weight` times as
    /// high as the question (and is preferred as a named person's words are), found
    /// already or fetched now (when the reader may see it). The turns either side of
    /// the best hits that ask nothing rank at least `context_weight` times as high
    /// (less the further they are, up to `context_width` turns away).
    fn promote_replies(
        &self,
        caller: &Caller<'_>,
        filter: &colmem_core::ReadFilter,
        prefer: &Preference<'_>,
        found: &mut Vec<Recalled>,
        seen: &mut HashSet<FragmentId>,
        round: usize,
    ) -> Result<()> {
        let turn_hits = || {
            found
                .iter()
                .filter(|h| h.fragment.granularity == Granularity::RawTurn)
                .filter_map(|h| Some((h, h.fragment.provenance.source.turns.first()?)))
        };
        let mut best: Vec<(f64, String)> = turn_hits()
            .filter(|(h, _)| self.config.reply_weight > 0.0 && h.fragment.content.contains('?'))
            .filter_map(|(h, turn)| Some((h.score * self.config.reply_weight, next_turn(turn)?)))
            .collect();
        best.sort_by(|a, b| b.0.total_cmp(&a.0));
        best.truncate(REPLIES_FROM);
        if self.config.context_weight > 0.0 {
            let mut statements: Vec<(&Recalled, &String)> = turn_hits()
                .filter(|(h, _)| !h.fragment.content.contains('?'))
                .collect();
            statements.sort_by(|a, b| b.0.score.total_cmp(&a.0.score));
            let width = self.config.context_width.min(MAX_CONTEXT_WIDTH);
            for (h, turn) in statements.into_iter().take(CONTEXT_FROM) {
                for (distance, other) in around(turn, width) {
                    let share = self.config.context_weight * CONTEXT_DECAY.powi(distance - 1);
                    best.push((h.score * share, other));
                }
            }
        }
        best.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (score, next) in best {
            if let Some(hit) = found.iter_mut().find(|h| {
                h.fragment.granularity == Granularity::RawTurn
                    && h.fragment.provenance.source.turns.first() == Some(&next)
            }) {
                hit.score = hit.score.max(score * prefer.promoted(&hit.fragment));
                continue;
            }
            if let Some(fragment) = self.own_turn(caller, filter, &next)?
                && seen.insert(fragment.id)
            {
                found.push(Recalled {
                    score: score * prefer.promoted(&fragment),
                    fragment,
                    fused: 0.0,
                    vector: None,
                    lexical: None,
                    relevance: 0.0,
                    route: RoundKind::RelatedTurns,
                    round,
                });
            }
        }
        Ok(())
    }

    /// Raw turns of the hits' turns and their neighbours, that the reader may see.
    fn related_turns(
        &self,
        caller: &Caller<'_>,
        filter: &colmem_core::ReadFilter,
        found: &[Recalled],
    ) -> Result<Vec<Fragment>> {
        let mut wanted: Vec<String> = Vec::new();
        for hit in found.iter().take(RELATED_FROM) {
            for turn in &hit.fragment.provenance.source.turns {
                for id in neighbours(turn, self.config.neighbours) {
                    if !wanted.contains(&id) {
                        wanted.push(id);
                    }
                }
            }
        }
        let mut out = Vec::new();
        for id in wanted {
            out.extend(self.own_turn(caller, filter, &id)?);
        }
        Ok(out)
    }

    fn draft(&self, memory: &Memory, granularity: Granularity, turn: &TurnInput) -> Draft {
        self.memory_draft(memory, granularity, Some(turn))
    }

    fn memory_draft(
        &self,
        memory: &Memory,
        granularity: Granularity,
        turn: Option<&TurnInput>,
    ) -> Draft {
        let mut draft = Draft::new(memory.content.clone(), granularity, Kind::Conversation);
        draft.key = match granularity {
            Granularity::RawTurn => turn.map(|t| turn_key(&t.dialogue_id)),
            _ => memory.key.clone(),
        };
        draft.keywords = memory.keywords.clone();
        draft.source = Source {
            session: Some(memory.session.clone()),
            turns: memory.turns.clone(),
            parents: Vec::new(),
        };
        if let Some(t) = memory.time
            && let Ok(validity) = Validity::new(t, None)
        {
            draft.validity = validity;
        }
        draft
    }
}

/// The granularities of AMA memory (cards belong to ConMem).
const MEMORY_GRANULARITIES: [Granularity; 4] = [
    Granularity::RawTurn,
    Granularity::Fact,
    Granularity::Episode,
    Granularity::Profile,
];

/// What one search over several granularities reads for a route: every memory
/// granularity but episodes, which join on the episode route only. A wide summary
/// that merely shares words with a question about one detail would crowd out the
/// turn that holds it (LoCoMo evidence recall@10, where an episode counts all of
/// its turns: 0.737 with every granularity on every route, 0.747 with this).
fn searched_together(route: Route) -> Vec<Granularity> {
    MEMORY_GRANULARITIES
        .into_iter()
        .filter(|&g| g != Granularity::Episode || route == Route::Episode)
        .collect()
}

/// The key of the speaker's relation whose facts `new_key` replaces, when it is one
/// person's key (the speaker's `dana/home`, or the named relation's `erin/home`) and
/// every stale fact is one relation's of the same attribute (`dana/colleague/home`).
fn kin_key(new_key: Option<&str>, olds: &[&Fragment]) -> Option<String> {
    let (_, attribute) = new_key?.split_once('/')?;
    if attribute.contains('/') {
        return None;
    }
    let first = olds.first()?.key.clone()?;
    let mut parts = first.split('/');
    let of_kin = parts.next().is_some()
        && parts.next().is_some()
        && parts.next() == Some(attribute)
        && parts.next().is_none();
    (of_kin
        && olds
            .iter()
            .all(|f| f.key.as_deref() == Some(first.as_str())))
    .then_some(first)
}

/// The most fragments one recall returns.
pub const MAX_K: usize = 10_000;
/// How many hits a related-turn round expands: the first found, in the order their
/// searches ranked them (before the preferences reorder them).
const RELATED_FROM: usize = 5;
/// How many generations of replaced facts an answer looks back through.
const REPLACED_DEPTH: usize = 8;
/// How many of the caller's newest fact versions an answer searches for replaced ones.
const REPLACED_LOOKBACK: usize = 200;
/// How much lower a turn ranks, in a read of what holds now, when every fact drawn
/// from it was replaced.
const OUTDATED_TURN_WEIGHT: f64 = 0.5;
/// How many days before the present an event must have ended to be over, for a
/// question of what holds now.
const EVENT_OVER_DAYS: i64 = 7;

/// How many days either side of a day a query names [`PipelineConfig::dated_search`]
/// searches.
const DATED_SEARCH_DAYS: i64 = 7;

/// Each draft through the write rule and the write policy; a draft the policy
/// withholds is refused ([`colmem_access::AccessError::Withheld`]), so nothing is
/// written.
fn authorize_all(caller: &Caller<'_>, drafts: Vec<Draft>) -> Result<Vec<NewFragment>> {
    drafts
        .into_iter()
        .map(|d| caller.apply_policy(caller.authorize(d)?))
        .collect()
}

/// A turn as the raw-turn memory says it: "speaker: text".
fn said(turn: &TurnInput) -> String {
    format!("{}: {}", turn.speaker, turn.text)
}

/// Whether `e` is the write policy withholding a fragment.
fn is_withheld(e: &Error) -> bool {
    matches!(
        e,
        Error::Access(colmem_access::AccessError::Withheld { .. })
    )
}

/// Whether `stored` holds `text` as the write policy writes it in `stored`'s scope.
fn as_written(caller: &Caller<'_>, stored: &Fragment, text: &str) -> bool {
    caller.policy_part(stored.scope, text).text() == Some(stored.content.as_str())
}

/// An idempotency key of `kind` scoped to `user`, the user's name prefixed with its
/// length, so that no user and key read as another user and key.
fn scoped_key(kind: &str, user: UserId, key: &str) -> String {
    format!("{kind}:{}:{user}:{key}", user.as_str().len())
}

/// Whether a stored fragment is what a write asks for again: the same text, key,
/// kind, scope, validity (its end only while it is current: it is closed when it
/// is replaced), keywords and provenance but for the time it was made at.
fn asks_alike(stored: &Fragment, asked: &NewFragment) -> bool {
    stored.content == asked.content
        && stored.validity.from() == asked.validity.from()
        && (stored.superseded_at.is_some() || stored.validity.until() == asked.validity.until())
        && stored.keywords == asked.keywords
        && stored.key == asked.key
        && stored.granularity == asked.granularity
        && stored.kind == asked.kind
        && stored.scope == asked.scope
        && stored.provenance.user == asked.provenance.user
        && stored.provenance.agents == asked.provenance.agents
        && stored.provenance.resources == asked.provenance.resources
        && stored.provenance.source == asked.provenance.source
}

/// How many of the speaker's recent facts a new fact is compared with.
const RECENT_LOOKBACK: usize = 50;

/// How many of the best question turns have their replies promoted.
const REPLIES_FROM: usize = 10;
/// How many of the best turns that ask nothing have their neighbours promoted.
const CONTEXT_FROM: usize = 5;
/// The widest thread [`PipelineConfig::context_width`] may promote: past it a turn
/// ranks at under a fifth of its hit's share.
pub const MAX_CONTEXT_WIDTH: u32 = 8;

/// Why a retention limit is refused, if it is: one of zero or less would put the cutoff
/// at or after now and delete everything.
fn refused_retention(limit: i64) -> Option<String> {
    (limit < 1).then(|| {
        format!(
            "retention_ms must be at least 1 millisecond, not {limit}: a limit of zero or less would delete everything"
        )
    })
}

/// `retention_ms` from a configuration: see [`refused_retention`].
fn retention<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<i64>, D::Error> {
    let limit = Option::<i64>::deserialize(deserializer)?;
    match limit.and_then(refused_retention) {
        Some(refusal) => Err(serde::de::Error::custom(refusal)),
        None => Ok(limit),
    }
}

/// The deserializers of the pipeline's weights, one per key and its [`WeightRange`]: each
/// refuses a value outside the range with an error naming the key, the range and the
/// value.
macro_rules! weights {
    ($($name:ident: $range:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "` from a configuration, in its range.")]
        fn $name<'de, D: serde::Deserializer<'de>>(
            deserializer: D,
        ) -> std::result::Result<f64, D::Error> {
            let (what, admits) = $range;
            weight_in(deserializer, stringify!($name), what, admits)
        }
    )*};
}

/// What a weight may be: its description and its check.
type WeightRange = (&'static str, fn(f64) -> bool);

/// A share of a score.
const SHARE: WeightRange = ("a number from 0 to 1", |v| (0.0..=1.0).contains(&v));

/// A boost or a weight.
const BOOST: WeightRange = ("a finite number, 0 or more", |v| v.is_finite() && v >= 0.0);

weights! {
    relevance_weight: BOOST;
    route_boost: BOOST;
    speaker_boost: BOOST;
    reply_weight: SHARE;
    time_boost: BOOST;
    day_boost: BOOST;
    when_boost: BOOST;
    context_weight: SHARE;
    question_discount: SHARE;
    opening_boost: BOOST;
}

/// The weight `name` from a configuration when `admits` it, else an error saying it is
/// `what` and what it was.
fn weight_in<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
    name: &str,
    what: &str,
    admits: impl Fn(f64) -> bool,
) -> std::result::Result<f64, D::Error> {
    let value = f64::deserialize(deserializer)?;
    if admits(value) {
        Ok(value)
    } else {
        Err(serde::de::Error::custom(format!(
            "{name} is {what}, not {value}"
        )))
    }
}

/// `context_width` from a configuration: at most [`MAX_CONTEXT_WIDTH`].
fn context_width<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<u32, D::Error> {
    let width = u32::deserialize(deserializer)?;
    if width > MAX_CONTEXT_WIDTH {
        return Err(serde::de::Error::custom(format!(
            "context_width is at most {MAX_CONTEXT_WIDTH} turns, not {width}"
        )));
    }
    Ok(width)
}

/// How much less each turn further from a hit is promoted than the one before it.
const CONTEXT_DECAY: f64 = 0.8;
/// How many times replies and neighbours are promoted: the second pass reaches the
/// reply to a promoted neighbour.
const PROMOTION_PASSES: usize = 2;

/// The granularities tried after a route, in order.
fn fallback(route: Route) -> Vec<Route> {
    match route {
        Route::Raw => vec![Route::Fact, Route::Episode],
        Route::Fact => vec![Route::Raw, Route::Episode],
        Route::Episode => vec![Route::Fact, Route::Raw],
    }
}

/// The text the lexical signal searches: the query plus the names of the attributes it
/// asks about (facts carry their attribute as a keyword).
fn lexical_text(query: &str, categories: bool) -> String {
    let mut text = query.to_owned();
    for attribute in attributes(query) {
        text.push(' ');
        text.push_str(attribute);
    }
    if categories {
        for member in crate::categories::members_asked(query) {
            text.push(' ');
            text.push_str(member);
        }
    }
    text
}

/// The people a query names: its capitalised words, lowercased, without a
/// possessive "'s" (a word that names nobody matches no speaker). One named only after
/// "to", "with", "for", "about" or "from" ("What book did Caroline recommend to
/// Melanie?") is the one spoken to or of, whose words seldom answer: they count only
/// when no one else is named (LoCoMo evidence recall@10 0.775 → 0.777).
fn named_people(query: &str) -> Vec<String> {
    let ws: Vec<&str> = query
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut subjects = Vec::new();
    let mut objects = Vec::new();
    let mut someone = false;
    for (i, w) in ws.iter().enumerate() {
        if !w.chars().next().is_some_and(char::is_uppercase) {
            continue;
        }
        let name = w
            .trim_end_matches("'s")
            .trim_end_matches("’s")
            .to_lowercase();
        let after = i.checked_sub(1).map(|j| ws[j].to_lowercase());
        if after.is_some_and(|p| matches!(p.as_str(), "to" | "with" | "for" | "about" | "from")) {
            objects.push(name);
        } else {
            // The question's first word ("What", "When") is capitalised as any
            // sentence's first word is; nor is a month, a day, a stop word ("I") or
            // an acronym ("LGBTQ") anyone.
            someone |= i > 0
                && !crate::text::MONTHS.contains(&name.as_str())
                && !crate::text::WEEKDAYS.contains(w)
                && !crate::text::STOPWORDS.contains(&name.as_str())
                && !w.chars().all(|c| c.is_uppercase() || !c.is_alphabetic());
            subjects.push(name);
        }
    }
    let mut names = if someone {
        subjects
    } else {
        subjects.into_iter().chain(objects).collect()
    };
    names.sort();
    names.dedup();
    names
}

/// What a query prefers besides its words: what the people it names said, what was
/// said in the month or on the day it names, and what tells a time when it asks when.
struct Preference<'a> {
    config: &'a PipelineConfig,
    named: &'a [String],
    date: Option<NamedDate>,
    asks_when: bool,
}

impl Preference<'_> {
    /// Whether anything besides the words may reorder the hits: a preference of the
    /// query, or the weights of a turn's form ([`Pipeline::form_weight`]).
    fn reorders(&self) -> bool {
        let c = self.config;
        (!self.named.is_empty() && c.speaker_boost > 0.0)
            || (self.date.is_some() && c.time_boost > 0.0)
            || (self.date.is_some_and(|d| d.day.is_some()) && c.day_boost > 0.0)
            || (self.asks_when && c.when_boost > 0.0)
            || c.question_discount > 0.0
            || c.opening_boost > 0.0
    }

    /// The factor a hit's score is multiplied by.
    fn boost(&self, fragment: &Fragment) -> f64 {
        let c = self.config;
        let from = fragment.validity.from();
        let mut boost = self.promoted(fragment);
        if self.date.is_some_and(|d| told_in(from, d)) {
            boost *= 1.0 + c.time_boost;
        }
        if self.date.is_some_and(|d| told_on(from, d)) {
            boost *= 1.0 + c.day_boost;
        }
        boost
    }

    /// The factor a promoted turn's score is multiplied by: its thread shares the
    /// hit's month and day, which its score already counts.
    fn promoted(&self, fragment: &Fragment) -> f64 {
        let c = self.config;
        let mut boost = 1.0;
        if said_by(fragment, self.named) {
            boost *= 1.0 + c.speaker_boost;
        }
        // An episode's header dates every episode ("On 3 May 2023, Dana and Assistant
        // talked about …"): only its body may tell a time.
        let told = match fragment.granularity {
            Granularity::Episode => episode_parts(&fragment.content).map_or("", |(_, body)| body),
            _ => &fragment.content,
        };
        if self.asks_when && tells_a_time(told) {
            boost *= 1.0 + c.when_boost;
        }
        boost
    }
}

/// Whether a question asks what holds now: "Where does Dana work now?", "What is she
/// reading these days?", "Does he still drive the Civic?"; not one that counts up to now
/// ("How many races has Dana run by now?", "How long has she lived there now?").
fn asks_of_the_present(question: &str) -> bool {
    let ws = crate::text::words(question);
    let at = |i: usize| ws.get(i).map(String::as_str);
    let counts = (0..ws.len()).any(|i| {
        (ws[i] == "how" && matches!(at(i + 1), Some("many" | "much" | "long")))
            || (ws[i] == "by" && at(i + 1) == Some("now"))
            || (ws[i] == "so" && at(i + 1) == Some("far"))
    });
    !counts
        && (0..ws.len()).any(|i| match ws[i].as_str() {
            "now" | "currently" | "nowadays" | "anymore" | "still" => true,
            "these" => at(i + 1) == Some("days"),
            "at" => at(i + 1) == Some("the") && at(i + 2) == Some("moment"),
            _ => false,
        })
}

/// When the event a fact's text tells of ended: the end of the day, or of the month, that it
/// names with its year ("on the weekend of 11 June 2022", "went to a convention in
/// March 2023", "worked at Globex until March 2023"). `None` for a fact of no such
/// event ([`crate::judge::is_event`]): one naming no day or month of a year, or telling
/// of a state begun or held from it ("started at Initech in May 2023", "vegan since
/// June 2018"), or of a birth ("born on 5 May 2019").
fn event_end(text: &str) -> Option<Timestamp> {
    // A birth is an event, but what it tells (an age) holds on.
    if !crate::judge::is_event(text) || crate::text::words(text).iter().any(|w| w == "born") {
        return None;
    }
    let named = named_date(text)?;
    let first = jiff::civil::Date::new(named.year?, named.month, named.day.unwrap_or(1)).ok()?;
    let end = match named.day {
        Some(_) => first.tomorrow().ok()?,
        None => first.checked_add(jiff::Span::new().months(1)).ok()?,
    };
    day_start(end)
}

/// A date a query names: a month, with its year and day when given.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct NamedDate {
    month: i8,
    day: Option<i8>,
    year: Option<i16>,
}

impl NamedDate {
    /// The world time it names, when it gives a year: its month and the month after
    /// (as [`told_in`] reads a month), or the week either side of its day (what
    /// happened on a day is told in the days after it, and a day's talk tells of the
    /// days before it: "last weekend before April 10").
    fn interval(self) -> Option<Validity> {
        let first = jiff::civil::Date::new(self.year?, self.month, self.day.unwrap_or(1)).ok()?;
        let (start, end) = match self.day {
            Some(_) => {
                let week = jiff::Span::new().days(DATED_SEARCH_DAYS);
                (
                    first.checked_sub(week).ok()?,
                    first.checked_add(week).ok()?.tomorrow().ok()?,
                )
            }
            None => (first, first.checked_add(jiff::Span::new().months(2)).ok()?),
        };
        Validity::new(day_start(start)?, Some(day_start(end)?)).ok()
    }
}

/// The first date a query names: "in June" → June; "May 2023" → May 2023; "on 7 July,
/// 2023", "August 3, 2023", "the 8th of December" → that day. "may" and "march" in
/// lowercase are verbs, not months; a number is a day only beside the month's name
/// and between 1 and 31.
fn named_date(query: &str) -> Option<NamedDate> {
    let words: Vec<&str> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let day = |w: &str| {
        crate::values::day_number(&w.to_ascii_lowercase()).and_then(|d| i8::try_from(d).ok())
    };
    let year = |w: Option<&&str>| {
        w.and_then(|y| y.parse::<i16>().ok())
            .filter(|y| (1900..=2200).contains(y))
    };
    for (i, w) in words.iter().enumerate() {
        let lower = w.to_lowercase();
        let Some(index) = crate::text::MONTHS.iter().position(|m| *m == lower) else {
            continue;
        };
        // "may" and "march" in lower case, or opening the question ("May I ask…"),
        // are verbs.
        if matches!(lower.as_str(), "may" | "march")
            && (i == 0 || w.starts_with(char::is_lowercase))
        {
            continue;
        }
        let month = i8::try_from(index + 1).ok()?;
        // "7 July", "the 8th of December".
        let before = match i.checked_sub(1).map(|j| words[j]) {
            Some("of") => i.checked_sub(2),
            _ => i.checked_sub(1),
        };
        if let Some(d) = before.and_then(|j| day(words[j])) {
            return Some(NamedDate {
                month,
                day: Some(d),
                year: year(words.get(i + 1)),
            });
        }
        // "August 3, 2023".
        if let Some(d) = words.get(i + 1).and_then(|w| day(w)) {
            return Some(NamedDate {
                month,
                day: Some(d),
                year: year(words.get(i + 2)),
            });
        }
        return Some(NamedDate {
            month,
            day: None,
            year: year(words.get(i + 1)),
        });
    }
    None
}

/// Whether `t` falls in the named month (of its year, if given) or the month after it:
/// an event is often told a few weeks after it happened.
fn told_in(t: colmem_core::Timestamp, named: NamedDate) -> bool {
    let Some(date) = utc_date(t) else {
        return false;
    };
    let (m, y) = (date.month(), date.year());
    let month = named.month;
    let after = if month == 12 { 1 } else { month + 1 };
    let same_year = |y_event: i16| named.year.is_none_or(|want| want == y_event);
    (m == month && same_year(y)) || (m == after && same_year(if after == 1 { y - 1 } else { y }))
}

/// Whether `t` falls on the named day (of its year, if given).
fn told_on(t: colmem_core::Timestamp, named: NamedDate) -> bool {
    utc_date(t).is_some_and(|date| {
        named.day == Some(date.day())
            && date.month() == named.month
            && named.year.is_none_or(|y| y == date.year())
    })
}

/// Whether one of the `named` people (lowercase) said what `fragment` holds.
fn said_by(fragment: &Fragment, named: &[String]) -> bool {
    speaker(fragment).is_some_and(|s| s.split_whitespace().any(|w| named.iter().any(|n| n == w)))
}

/// Who said what a fragment holds, lowercased: the speaker of a raw turn
/// ("Name: text"), the subject a fact's or profile entry's key starts with.
fn speaker(fragment: &Fragment) -> Option<String> {
    match fragment.granularity {
        Granularity::RawTurn => fragment
            .content
            .split_once(": ")
            .map(|(name, _)| name.to_lowercase()),
        Granularity::Fact | Granularity::Profile => fragment
            .key
            .as_deref()
            .and_then(|k| k.split('/').next())
            .map(str::to_lowercase),
        _ => None,
    }
}

/// Whether `fragment` had been replaced at the moment `view` reads: by now for the
/// current view and every version, by then for a history read.
fn replaced_in(view: View, fragment: &Fragment) -> bool {
    fragment.superseded_by.is_some()
        && match view {
            // A correction that starts no later than what it corrects leaves that open:
            // it was never true.
            View::WorldAsOf(w) => fragment.validity.until().is_none_or(|u| u <= w),
            View::RecordAsOf(r) => fragment.superseded_at.is_some_and(|s| s <= r),
            View::Current | View::AllVersions => true,
        }
}

/// Whether a profile entry (its words and source turns) was drawn from the statement a
/// fact holds: the same source turns, and the fact holds most (two thirds) of the
/// entry's words.
fn drawn_from(entry: &str, turns: &[String], fact: &Fragment) -> bool {
    turns == fact.provenance.source.turns
        && crate::judge::coverage(entry, &fact.content) >= 2.0 / 3.0
}

/// The turn after `D3:7`: `D3:8` (`None` for an id without a turn number).
fn next_turn(turn: &str) -> Option<String> {
    let (session, index) = session_and_number(turn)?;
    Some(format!("{session}:{}", index.checked_add(1)?))
}

/// `D3` and 7 of `D3:7`; `None` for an id without a turn number.
fn session_and_number(turn: &str) -> Option<(&str, u32)> {
    let (session, index) = turn.rsplit_once(':')?;
    Some((session, index.parse().ok()?))
}

/// `D3:7` and its neighbours `D3:6`, `D3:8` (within `width`), nearest first; other ids
/// only themselves.
fn neighbours(turn: &str, width: u32) -> Vec<String> {
    std::iter::once(turn.to_owned())
        .chain(around(turn, width).into_iter().map(|(_, t)| t))
        .collect()
}

/// The number of a turn in its session: 7 of `D3:7`; `None` for an id without one.
fn turn_number(turn: &str) -> Option<u32> {
    session_and_number(turn).map(|(_, number)| number)
}

/// The turns within `width` of `D3:7` but not it, each with its distance: (1, `D3:6`),
/// (1, `D3:8`), (2, `D3:5`)…; none for an id without a turn number.
fn around(turn: &str, width: u32) -> Vec<(i32, String)> {
    let Some((session, index)) = session_and_number(turn) else {
        return Vec::new();
    };
    (1..=width)
        .flat_map(|d| {
            let before = index.checked_sub(d).filter(|i| *i >= 1);
            let distance = i32::try_from(d).unwrap_or(i32::MAX);
            before
                .into_iter()
                .chain(index.checked_add(d))
                .map(move |i| (distance, format!("{session}:{i}")))
        })
        .collect()
}

/// One retrieval round's work.
enum Step {
    /// Search these granularities.
    Search(RoundKind, Vec<Granularity>),
    /// Fetch the turns related to the hits so far.
    Related,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_user_and_key_read_as_another_user_and_key() {
        let a = UserId::new("a").unwrap();
        let ab = UserId::new("a:b").unwrap();
        assert_ne!(
            scoped_key("ama-write", a, "b:k"),
            scoped_key("ama-write", ab, "k")
        );
    }

    #[test]
    fn a_query_names_a_month_by_its_name_not_by_the_verb_may() {
        let month = |month, year| {
            Some(NamedDate {
                month,
                day: None,
                year,
            })
        };
        assert_eq!(
            named_date("When did Mel go camping in June?"),
            month(6, None)
        );
        assert_eq!(
            named_date("What happened in May 2023?"),
            month(5, Some(2023))
        );
        assert_eq!(named_date("What may Dana like?"), None);
        assert_eq!(
            named_date("May I ask what Dana did in June?"),
            month(6, None)
        );
        assert_eq!(
            named_date("Did they march 5 miles in June?"),
            month(6, None)
        );
        assert_eq!(named_date("Where does Dana live?"), None);
    }

    #[test]
    fn the_turns_around_one_come_with_their_distance_and_stop_at_the_first() {
        let ids = |turn: &str, width| {
            around(turn, width)
                .into_iter()
                .map(|(d, t)| format!("{d} {t}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(ids("D3:7", 2), ["1 D3:6", "1 D3:8", "2 D3:5", "2 D3:9"]);
        assert_eq!(ids("D3:1", 2), ["1 D3:2", "2 D3:3"]);
        assert!(ids("D3:7", 0).is_empty());
        assert!(ids("note-4", 2).is_empty());
        // An id whose session holds a colon ("conv-26:D3", as the CLI's import names
        // turns) numbers its turns after the last one, as `next_turn` reads it.
        assert_eq!(ids("conv-26:D3:7", 1), ["1 conv-26:D3:6", "1 conv-26:D3:8"]);
        assert_eq!(next_turn("conv-26:D3:7").as_deref(), Some("conv-26:D3:8"));
    }

    #[test]
    fn what_was_told_in_a_month_or_the_one_after_it_counts_for_it() {
        let at = |s: &str| colmem_core::Timestamp::parse(s).unwrap();
        let month = |month, year| NamedDate {
            month,
            day: None,
            year,
        };
        assert!(told_in(at("2023-06-20"), month(6, None)));
        assert!(told_in(at("2023-07-03"), month(6, Some(2023))));
        assert!(!told_in(at("2023-08-01"), month(6, None)));
        assert!(!told_in(at("2022-06-20"), month(6, Some(2023))));
        assert!(told_in(at("2024-01-05"), month(12, Some(2023))));
    }

    #[test]
    fn one_spoken_to_or_of_counts_only_when_no_one_else_is_named() {
        let named = named_people("What book did Caroline recommend to Melanie?");
        assert!(named.contains(&"caroline".to_owned()));
        assert!(!named.contains(&"melanie".to_owned()));
        let named = named_people("How do Jon and Gina both like to destress?");
        assert!(named.contains(&"jon".to_owned()) && named.contains(&"gina".to_owned()));
        // A month is no one: Caroline is the only person named.
        let named = named_people("What did the group do for Caroline in June?");
        assert!(named.contains(&"caroline".to_owned()));
        for query in [
            "What did I give to Caroline?",
            "What did the LGBTQ group give to Caroline?",
            "To Caroline, what matters most?",
        ] {
            assert!(
                named_people(query).contains(&"caroline".to_owned()),
                "{query}"
            );
        }
        assert!(named_people("What did Mel’s kids like?").contains(&"mel".to_owned()));
    }

    #[test]
    fn a_query_names_a_day_only_beside_its_month() {
        let day = |month, day, year| {
            Some(NamedDate {
                month,
                day: Some(day),
                year,
            })
        };
        assert_eq!(
            named_date("What did Maria plan on the evening of 7 July, 2023?"),
            day(7, 7, Some(2023))
        );
        // The day's year is the month's too.
        assert_eq!(
            named_date("What did John do the week before August 3, 2023?"),
            day(8, 3, Some(2023))
        );
        assert_eq!(
            named_date("Which book did Tim finish on 8th December?"),
            day(12, 8, None)
        );
        assert_eq!(
            named_date("What happened on the 8TH of December 2023?"),
            day(12, 8, Some(2023))
        );
        assert_eq!(
            named_date("Did the 2 kids camp in June?").and_then(|d| d.day),
            None
        );
        assert_eq!(named_date("What may 3 friends like?"), None);
        assert_eq!(
            named_date("What happened on June 40?").and_then(|d| d.day),
            None
        );
    }

    #[test]
    fn what_was_told_on_the_named_day_counts_for_it() {
        let at = |s: &str| colmem_core::Timestamp::parse(s).unwrap();
        let day = |month, day, year| NamedDate {
            month,
            day: Some(day),
            year,
        };
        assert!(told_on(at("2023-07-07T18:29:00Z"), day(7, 7, Some(2023))));
        assert!(told_on(at("2022-07-07"), day(7, 7, None)));
        assert!(!told_on(at("2023-07-08"), day(7, 7, Some(2023))));
        assert!(!told_on(at("2022-07-07"), day(7, 7, Some(2023))));
        let month = NamedDate {
            month: 7,
            day: None,
            year: None,
        };
        assert!(!told_on(at("2023-07-07"), month));
    }

    #[test]
    fn an_event_ends_with_the_day_or_month_it_names() {
        let day = |d: &str| Timestamp::parse(d).ok();
        assert_eq!(
            event_end("Helping at Ines's uncle's restaurant on the weekend of 11 June 2022."),
            day("2022-06-12")
        );
        assert_eq!(
            event_end("Dana went to a convention in March 2023."),
            day("2023-04-01")
        );
        for no_event in [
            "Dana started at Initech in May 2023.",
            "Dana has been vegan since June 2018.",
            "Dana's daughter was born on 5 May 2019.",
            "Dana went to Lisbon in 2019.",
            "Dana works at Globex.",
        ] {
            assert_eq!(event_end(no_event), None, "{no_event}");
        }
    }

    #[test]
    fn a_question_of_the_present_says_so() {
        for now in [
            "Which company employs Ines now?",
            "Where does Bilal work these days?",
            "What is Jon currently reading?",
            "Does Dana still drive the Civic?",
            "Is Dana vegetarian at the moment?",
        ] {
            assert!(asks_of_the_present(now), "{now}");
        }
        for not_now in [
            "How many races has Dana run by now?",
            "How long has Dana lived in Porto now?",
            "Where did Ines work in June 2022?",
            "What days does Dana go to the gym?",
            "When did Dana move to Porto?",
        ] {
            assert!(!asks_of_the_present(not_now), "{not_now}");
        }
    }

    #[test]
    fn a_dated_search_reads_the_week_around_a_day_or_a_month_and_the_next() {
        let at = |s: &str| colmem_core::Timestamp::parse(s).unwrap();
        let interval = |query| named_date(query).and_then(NamedDate::interval);
        let day = Validity::new(at("2022-05-18"), Some(at("2022-06-02"))).unwrap();
        assert_eq!(interval("What did Nate do on 25 May, 2022?"), Some(day));
        // Across a year's end: December and January.
        let month = Validity::new(at("2022-12-01"), Some(at("2023-02-01"))).unwrap();
        assert_eq!(
            interval("What did Nate cook in December 2022?"),
            Some(month)
        );
        // A week that crosses a year's end, and a leap day.
        let late = Validity::new(at("2022-12-21"), Some(at("2023-01-05"))).unwrap();
        assert_eq!(
            interval("What did Nate do on 28 December, 2022?"),
            Some(late)
        );
        let leap = Validity::new(at("2024-02-22"), Some(at("2024-03-08"))).unwrap();
        assert_eq!(
            interval("What did Nate do on 29 February, 2024?"),
            Some(leap)
        );
        // A day that does not exist, or a date without a year, names no interval.
        assert_eq!(interval("What did Nate do on 29 February, 2023?"), None);
        assert_eq!(interval("What did Nate do on 31 June, 2023?"), None);
        assert_eq!(interval("What did Nate do on 25 May?"), None);
        assert_eq!(interval("What did Nate do in June?"), None);
    }
}
