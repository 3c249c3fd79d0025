//! Access postings: per-fragment [`FragmentMeta`] and roaring bitmaps per user,
//! scope, group, agent, resource and version state, so the set a [`ReadFilter`]
//! admits is computed by combining bitmaps instead of testing every fragment.
//!
//! With `S = (Agent-scope ∩ user=u ∩ agent a) ∪ (User-scope ∩ user=u) ∪ ⋃_{g∈G} Group(g) ∪ Global`,
//! the admitted set is `versions(S) − ⋃_{b∉A} agent(b) − ⋃_{r∉R} resource(r)`:
//! a fragment all of whose agents are in `A` is exactly one that no posting list
//! of an agent outside `A` contains (only agents present in the index matter).
//! The version step is pure bitmaps in the common case (the filter's "now" is
//! after every recorded supersession and deletion); otherwise only the fragments
//! marked superseded, deleted, future or time-bounded are checked one by one with
//! [`ReadFilter::admits_version`].

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;
use std::path::Path;

use colmem_core::{
    AgentId, FragmentMeta, GroupId, ReadFilter, ResourceId, Scope, Timestamp, UserId, Validity,
    View,
};
use roaring::{MultiOps, RoaringTreemap};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Per-fragment access metadata with posting lists over it.
#[derive(Debug, Clone)]
pub struct AccessPostings {
    metas: HashMap<u64, FragmentMeta>,
    all: RoaringTreemap,
    by_user: HashMap<UserId, RoaringTreemap>,
    by_agent: HashMap<AgentId, RoaringTreemap>,
    by_resource: HashMap<ResourceId, RoaringTreemap>,
    by_group: HashMap<GroupId, RoaringTreemap>,
    /// Fragments written by exactly one agent, by that agent.
    single_agent: HashMap<AgentId, RoaringTreemap>,
    /// Fragments written by no agent.
    no_agent: RoaringTreemap,
    /// Fragments written by two agents or more.
    multi_agent: RoaringTreemap,
    /// Every group-scoped fragment.
    scope_group: RoaringTreemap,
    scope_agent: RoaringTreemap,
    scope_user: RoaringTreemap,
    scope_global: RoaringTreemap,
    superseded: RoaringTreemap,
    deleted: RoaringTreemap,
    bounded_validity: RoaringTreemap,
    created: BTreeSet<(Timestamp, u64)>,
    /// Every fragment by the start of its world-time validity.
    begins: BTreeSet<(Timestamp, u64)>,
    latest_created: Timestamp,
    latest_mark: Timestamp,
}

fn add_to<K: Eq + Hash>(map: &mut HashMap<K, RoaringTreemap>, key: K, id: u64) {
    map.entry(key).or_default().insert(id);
}

fn remove_from<K: Eq + Hash>(map: &mut HashMap<K, RoaringTreemap>, key: K, id: u64) {
    if let Some(set) = map.get_mut(&key) {
        set.remove(id);
        if set.is_empty() {
            map.remove(&key);
        }
    }
}

/// How many distinct agents wrote a fragment.
enum Agents {
    None,
    One(AgentId),
    Many,
}

fn distinct_agents(agents: &[AgentId]) -> Agents {
    match agents.split_first() {
        None => Agents::None,
        Some((&first, rest)) if rest.iter().all(|&a| a == first) => Agents::One(first),
        Some(_) => Agents::Many,
    }
}

impl Default for AccessPostings {
    fn default() -> Self {
        AccessPostings {
            metas: HashMap::new(),
            all: RoaringTreemap::new(),
            by_user: HashMap::new(),
            by_agent: HashMap::new(),
            by_resource: HashMap::new(),
            by_group: HashMap::new(),
            single_agent: HashMap::new(),
            no_agent: RoaringTreemap::new(),
            multi_agent: RoaringTreemap::new(),
            scope_group: RoaringTreemap::new(),
            scope_agent: RoaringTreemap::new(),
            scope_user: RoaringTreemap::new(),
            scope_global: RoaringTreemap::new(),
            superseded: RoaringTreemap::new(),
            deleted: RoaringTreemap::new(),
            bounded_validity: RoaringTreemap::new(),
            created: BTreeSet::new(),
            begins: BTreeSet::new(),
            latest_created: Timestamp::MIN,
            latest_mark: Timestamp::MIN,
        }
    }
}

impl AccessPostings {
    /// Empty postings.
    pub fn new() -> Self {
        AccessPostings::default()
    }

    /// The number of fragments known.
    pub fn len(&self) -> u64 {
        self.all.len()
    }

    /// Whether no fragment is known.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// Every fragment id known.
    pub fn ids(&self) -> &RoaringTreemap {
        &self.all
    }

    /// The metadata of fragment `id`.
    pub fn meta(&self, id: u64) -> Option<&FragmentMeta> {
        self.metas.get(&id)
    }

    /// Every fragment id with its metadata, in no particular order.
    pub(crate) fn metas(&self) -> impl Iterator<Item = (u64, &FragmentMeta)> {
        self.metas.iter().map(|(&id, meta)| (id, meta))
    }

    /// Records (or replaces) the metadata of fragment `id`.
    pub fn upsert(&mut self, id: u64, meta: FragmentMeta) {
        self.remove(id);
        self.all.insert(id);
        add_to(&mut self.by_user, meta.user, id);
        for &agent in meta.agents.iter() {
            add_to(&mut self.by_agent, agent, id);
        }
        match distinct_agents(&meta.agents) {
            Agents::None => {
                self.no_agent.insert(id);
            }
            Agents::One(agent) => add_to(&mut self.single_agent, agent, id),
            Agents::Many => {
                self.multi_agent.insert(id);
            }
        }
        for &resource in meta.resources.iter() {
            add_to(&mut self.by_resource, resource, id);
        }
        match meta.scope {
            Scope::Agent => {
                self.scope_agent.insert(id);
            }
            Scope::User => {
                self.scope_user.insert(id);
            }
            Scope::Group(g) => {
                add_to(&mut self.by_group, g, id);
                self.scope_group.insert(id);
            }
            Scope::Global => {
                self.scope_global.insert(id);
            }
        }
        if let Some(at) = meta.superseded_at {
            self.superseded.insert(id);
            self.latest_mark = self.latest_mark.max(at);
        }
        if let Some(at) = meta.deleted_at {
            self.deleted.insert(id);
            self.latest_mark = self.latest_mark.max(at);
        }
        if meta.validity != Validity::always() {
            self.bounded_validity.insert(id);
        }
        self.created.insert((meta.created_at, id));
        self.begins.insert((meta.validity.from(), id));
        self.latest_created = self.latest_created.max(meta.created_at);
        self.metas.insert(id, meta);
    }

    /// Forgets fragment `id`; returns whether it was known.
    pub fn remove(&mut self, id: u64) -> bool {
        let Some(meta) = self.metas.remove(&id) else {
            return false;
        };
        self.all.remove(id);
        remove_from(&mut self.by_user, meta.user, id);
        for &agent in meta.agents.iter() {
            remove_from(&mut self.by_agent, agent, id);
        }
        match distinct_agents(&meta.agents) {
            Agents::None => {
                self.no_agent.remove(id);
            }
            Agents::One(agent) => remove_from(&mut self.single_agent, agent, id),
            Agents::Many => {
                self.multi_agent.remove(id);
            }
        }
        for &resource in meta.resources.iter() {
            remove_from(&mut self.by_resource, resource, id);
        }
        match meta.scope {
            Scope::Agent => {
                self.scope_agent.remove(id);
            }
            Scope::User => {
                self.scope_user.remove(id);
            }
            Scope::Group(g) => {
                remove_from(&mut self.by_group, g, id);
                self.scope_group.remove(id);
            }
            Scope::Global => {
                self.scope_global.remove(id);
            }
        }
        self.superseded.remove(id);
        self.deleted.remove(id);
        self.bounded_validity.remove(id);
        self.created.remove(&(meta.created_at, id));
        self.begins.remove(&(meta.validity.from(), id));
        true
    }

    /// The fragments whose world-time validity begins in `interval`: what was told
    /// of a day or a month, whatever its version state (the read filter decides that).
    pub fn begun_in(&self, interval: &Validity) -> RoaringTreemap {
        let start = (interval.from(), 0);
        match interval.until() {
            Some(until) => self
                .begins
                .range(start..(until, 0))
                .map(|&(_, id)| id)
                .collect(),
            None => self.begins.range(start..).map(|&(_, id)| id).collect(),
        }
    }

    /// Fragments created strictly after `t`.
    fn created_after(&self, t: Timestamp) -> RoaringTreemap {
        if t >= self.latest_created {
            return RoaringTreemap::new();
        }
        self.created
            .range((t.plus_millis(1), 0)..)
            .map(|&(_, id)| id)
            .collect()
    }

    /// The scope condition (rule 2) as a bitmap.
    fn scope_set(&self, filter: &ReadFilter) -> RoaringTreemap {
        let mut set = self.scope_global.clone();
        if let Some(of_user) = self.by_user.get(&filter.user()) {
            set |= &self.scope_user & of_user;
            if let Some(of_agent) = self.by_agent.get(&filter.agent()) {
                set |= &(&self.scope_agent & of_user) & of_agent;
            }
        }
        // The reader's groups, or every group-scoped fragment minus the other
        // groups, whichever touches fewer ids.
        let (mut own, mut foreign) = (0u64, 0u64);
        for (g, ids) in &self.by_group {
            if filter.groups().contains(*g) {
                own += ids.len();
            } else {
                foreign += ids.len();
            }
        }
        if own <= foreign {
            let groups = self
                .by_group
                .iter()
                .filter(|(g, _)| filter.groups().contains(**g))
                .map(|(_, ids)| ids);
            set |= groups.union();
        } else {
            let others = self
                .by_group
                .iter()
                .filter(|(g, _)| !filter.groups().contains(**g))
                .map(|(_, ids)| ids)
                .union();
            set |= &self.scope_group - &others;
        }
        set
    }

    /// Keeps the fragments of `set` all of whose agents are in the reader's
    /// set `A` (rule 3). Either subtracts the lists of every agent outside `A`,
    /// or keeps the agentless fragments, the single-agent lists of `A` and the
    /// multi-agent fragments that pass one by one, whichever touches fewer ids.
    fn keep_own_agents(&self, set: &mut RoaringTreemap, filter: &ReadFilter) {
        let foreign_cost: u64 = self
            .by_agent
            .iter()
            .filter(|(a, _)| !filter.agents().contains(**a))
            .map(|(_, ids)| ids.len())
            .sum();
        if foreign_cost == 0 {
            return;
        }
        let own_cost: u64 = self
            .single_agent
            .iter()
            .filter(|(a, _)| filter.agents().contains(**a))
            .map(|(_, ids)| ids.len())
            .sum::<u64>()
            + self.no_agent.len()
            // A per-fragment check costs about as much as touching a few ids.
            + 8 * self.multi_agent.len().min(set.len());
        if foreign_cost <= own_cost {
            let foreign = self
                .by_agent
                .iter()
                .filter(|(a, _)| !filter.agents().contains(**a))
                .map(|(_, ids)| ids)
                .union();
            *set -= foreign;
            return;
        }
        let multi = &*set & &self.multi_agent;
        let singles = self
            .single_agent
            .iter()
            .filter(|(a, _)| filter.agents().contains(**a))
            .map(|(_, ids)| ids)
            .union();
        *set &= &singles | &self.no_agent;
        for id in &multi {
            let keep = self
                .metas
                .get(&id)
                .is_some_and(|meta| meta.agents.iter().all(|a| filter.agents().contains(*a)));
            if keep {
                set.insert(id);
            }
        }
    }

    /// The fragments `filter` admits, computed from posting lists.
    pub fn admitted(&self, filter: &ReadFilter) -> RoaringTreemap {
        let mut set = self.scope_set(filter);
        if set.is_empty() {
            return set;
        }
        // Rules 3 and 4: no agent outside A(u,t), no resource outside R(a,t).
        self.keep_own_agents(&mut set, filter);
        let foreign_resources = self
            .by_resource
            .iter()
            .filter(|(r, _)| !filter.resources().contains(**r))
            .map(|(_, ids)| ids)
            .union();
        set -= foreign_resources;
        // Rule 1 under the view.
        let now = filter.now();
        set -= self.created_after(now);
        let dirty = match filter.view() {
            View::Current => {
                let marked = &self.superseded | &self.deleted;
                if now >= self.latest_mark {
                    // Every mark lies at or before now: marked fragments are not current.
                    set -= marked;
                    RoaringTreemap::new()
                } else {
                    marked
                }
            }
            View::RecordAsOf(r) => &(&self.superseded | &self.deleted) | &self.created_after(r),
            View::WorldAsOf(_) => &self.bounded_validity | &self.deleted,
            View::AllVersions => self.deleted.clone(),
        };
        let to_check = &set & &dirty;
        for id in &to_check {
            let keep = self
                .metas
                .get(&id)
                .is_some_and(|meta| filter.admits_version(meta));
            if !keep {
                set.remove(id);
            }
        }
        set
    }

    /// Writes the metadata of every fragment to `path`.
    pub(crate) fn save(&self, path: &Path) -> Result<()> {
        let mut records: Vec<MetaRecord> = self
            .metas
            .iter()
            .map(|(&id, meta)| MetaRecord::from_meta(id, meta))
            .collect();
        records.sort_by_key(|r| r.id);
        let bytes = serde_json::to_vec(&records)
            .map_err(|e| Error::corrupt(path, format!("cannot encode metadata: {e}")))?;
        std::fs::write(path, bytes).map_err(|e| Error::io(path, e))
    }

    /// Reads what [`AccessPostings::save`] wrote.
    pub(crate) fn load(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let records: Vec<MetaRecord> =
            serde_json::from_slice(&bytes).map_err(|e| Error::corrupt(path, e.to_string()))?;
        let mut postings = AccessPostings::new();
        for record in records {
            let (id, meta) = record.into_meta();
            postings.upsert(id, meta);
        }
        Ok(postings)
    }
}

/// The persisted form of one fragment's metadata: principals by name, never by number.
#[derive(Serialize, Deserialize)]
struct MetaRecord {
    id: u64,
    user: UserId,
    scope: Scope,
    agents: Vec<AgentId>,
    resources: Vec<ResourceId>,
    created_at: Timestamp,
    superseded_at: Option<Timestamp>,
    deleted_at: Option<Timestamp>,
    validity: Validity,
}

impl MetaRecord {
    fn from_meta(id: u64, meta: &FragmentMeta) -> Self {
        MetaRecord {
            id,
            user: meta.user,
            scope: meta.scope,
            agents: meta.agents.to_vec(),
            resources: meta.resources.to_vec(),
            created_at: meta.created_at,
            superseded_at: meta.superseded_at,
            deleted_at: meta.deleted_at,
            validity: meta.validity,
        }
    }

    fn into_meta(self) -> (u64, FragmentMeta) {
        (
            self.id,
            FragmentMeta {
                user: self.user,
                scope: self.scope,
                agents: self.agents.into_boxed_slice(),
                resources: self.resources.into_boxed_slice(),
                created_at: self.created_at,
                superseded_at: self.superseded_at,
                deleted_at: self.deleted_at,
                validity: self.validity,
            },
        )
    }
}
