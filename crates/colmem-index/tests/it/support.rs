//! Shared fixtures: principals, fragments, clustered vectors, an in-memory change feed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use colmem_core::{
    AgentId, Change, ChangeFeed, ChangeOp, Embedding, FeedError, FilterParts, Fragment, FragmentId,
    Granularity, GroupId, IdSet, Kind, Provenance, ReadFilter, ResourceId, Scope, Source,
    StoredFragment, Timestamp, UserId, Validity,
};

pub fn user(name: &str) -> UserId {
    UserId::new(name).unwrap()
}
pub fn agent(name: &str) -> AgentId {
    AgentId::new(name).unwrap()
}
pub fn resource(name: &str) -> ResourceId {
    ResourceId::new(name).unwrap()
}
pub fn group(name: &str) -> GroupId {
    GroupId::new(name).unwrap()
}
pub fn t(ms: i64) -> Timestamp {
    Timestamp::from_millis(ms)
}

/// What a fragment is about, for access purposes.
#[derive(Clone, Debug)]
pub struct Access {
    pub user: UserId,
    pub scope: Scope,
    pub agents: Vec<AgentId>,
    pub resources: Vec<ResourceId>,
}

pub fn fragment(
    id: u64,
    access: &Access,
    content: &str,
    vector: Option<Vec<f32>>,
    embedder: &str,
) -> StoredFragment {
    StoredFragment {
        fragment: Fragment {
            id: FragmentId(id),
            key: None,
            content: content.to_owned(),
            granularity: Granularity::Fact,
            kind: Kind::Observation,
            scope: access.scope,
            provenance: Provenance {
                created_at: t(1_000),
                user: access.user,
                agents: access.agents.iter().copied().collect::<BTreeSet<_>>(),
                resources: access.resources.iter().copied().collect::<BTreeSet<_>>(),
                source: Source::default(),
            },
            validity: Validity::always(),
            keywords: Vec::new(),
            superseded_at: None,
            superseded_by: None,
            deleted_at: None,
        },
        embedding: vector.map(|vector| Embedding {
            embedder: embedder.to_owned(),
            vector,
        }),
    }
}

/// A reader's filter at time `now`.
pub fn reader(
    u: UserId,
    a: AgentId,
    agents: &[AgentId],
    resources: &[ResourceId],
    groups: &[GroupId],
    now: i64,
) -> ReadFilter {
    ReadFilter::from_parts(FilterParts {
        user: u,
        agent: a,
        now: t(now),
        agents: agents.iter().copied().collect::<IdSet<_>>(),
        resources: resources.iter().copied().collect::<IdSet<_>>(),
        groups: groups.iter().copied().collect::<IdSet<_>>(),
    })
}

/// A deterministic pseudo-random stream (SplitMix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

/// `n` vectors around `clusters` random centres.
pub fn clustered(n: usize, dim: usize, clusters: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = Rng(seed);
    let centres: Vec<Vec<f32>> = (0..clusters)
        .map(|_| (0..dim).map(|_| rng.unit()).collect())
        .collect();
    (0..n)
        .map(|i| {
            let c = &centres[(rng.next() as usize + i) % clusters];
            c.iter().map(|x| x + 0.3 * rng.unit()).collect()
        })
        .collect()
}

pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

/// The exact filtered top-k, by testing every fragment with `ReadFilter::admits`.
pub fn oracle_top_k(
    records: &[StoredFragment],
    query: &[f32],
    k: usize,
    filter: &ReadFilter,
) -> Vec<u64> {
    let mut scored: Vec<(f32, u64)> = records
        .iter()
        .filter(|r| filter.admits(&r.fragment.meta()))
        .filter_map(|r| {
            r.embedding
                .as_ref()
                .map(|e| (cosine(query, &e.vector), r.fragment.id.0))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    scored.into_iter().take(k).map(|(_, id)| id).collect()
}

static NEXT_STAMP: AtomicU64 = AtomicU64::new(1);

/// An in-memory change feed, as the store would expose it.
#[derive(Default)]
pub struct MemFeed {
    changes: Mutex<Vec<Change>>,
    records: Mutex<BTreeMap<u64, StoredFragment>>,
}

impl MemFeed {
    fn push(&self, id: u64, op: ChangeOp) {
        let mut changes = self.changes.lock().unwrap();
        let seq = changes.len() as u64 + 1;
        changes.push(Change {
            seq,
            fragment: FragmentId(id),
            op,
            // No two changes of any feeds share a stamp, as no two stores' do.
            stamp: NEXT_STAMP.fetch_add(1, Ordering::Relaxed),
        });
    }
    /// A copy of this feed as it stood after its first `changes` changes (a backup
    /// of a store), of fragments that were only put.
    pub fn backup(&self, changes: usize) -> MemFeed {
        let kept: Vec<Change> = self.changes.lock().unwrap()[..changes].to_vec();
        let records = self.records.lock().unwrap();
        let records = kept
            .iter()
            .map(|c| (c.fragment.0, records[&c.fragment.0].clone()))
            .collect();
        MemFeed {
            changes: Mutex::new(kept),
            records: Mutex::new(records),
        }
    }
    pub fn put(&self, stored: StoredFragment) {
        let id = stored.fragment.id.0;
        self.records.lock().unwrap().insert(id, stored);
        self.push(id, ChangeOp::Put);
    }
    pub fn supersede(&self, id: u64, at: i64) {
        let mut records = self.records.lock().unwrap();
        records.get_mut(&id).unwrap().fragment.superseded_at = Some(t(at));
        drop(records);
        self.push(id, ChangeOp::Meta);
    }
    pub fn delete(&self, id: u64, at: i64) {
        let mut records = self.records.lock().unwrap();
        records.get_mut(&id).unwrap().fragment.deleted_at = Some(t(at));
        drop(records);
        self.push(id, ChangeOp::Delete);
    }
    pub fn purge(&self, id: u64) {
        self.records.lock().unwrap().remove(&id);
        self.push(id, ChangeOp::Purge);
    }
}

impl ChangeFeed for MemFeed {
    fn head(&self) -> Result<u64, FeedError> {
        Ok(self.changes.lock().unwrap().len() as u64)
    }
    fn changes_after(&self, after: u64, limit: usize) -> Result<Vec<Change>, FeedError> {
        Ok(self
            .changes
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.seq > after)
            .take(limit)
            .copied()
            .collect())
    }
    fn load(&self, ids: &[FragmentId]) -> Result<Vec<StoredFragment>, FeedError> {
        let records = self.records.lock().unwrap();
        Ok(ids
            .iter()
            .filter_map(|id| records.get(&id.0).cloned())
            .collect())
    }
}
