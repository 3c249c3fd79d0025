//! Partition graphs: beside the main vector index, one small index of the same
//! backend per large scope (a group, a user's own memories, the global scope),
//! like pgvector's partial indexes.
//!
//! A filter admits a union of scopes. When it admits most of a few large scopes
//! and little of the rest, walking each scope's own graph (where the predicate
//! rejects few nodes) and scanning the small remainder exactly beats walking the
//! whole graph with a predicate that rejects most of what it visits. A scope
//! gets a graph once it holds more vectors than the planner would scan exactly;
//! smaller scopes are cheaper to scan. The backend says how large
//! ([`VectorIndex::partition_min`]).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use colmem_core::{FragmentMeta, GroupId, Scope, UserId};
use roaring::RoaringTreemap;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::flat::IdMap;
use crate::postings::AccessPostings;
use crate::vector::VectorIndex;

const LIST: &str = "partitions.json";

/// The scope partition a fragment belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum PartKey {
    /// Global-scope fragments.
    Global,
    /// The fragments of one group scope.
    Group(GroupId),
    /// One user's user- and agent-scoped fragments.
    User(UserId),
}

impl PartKey {
    /// The partition of a fragment with this metadata.
    pub(crate) fn of(meta: &FragmentMeta) -> Self {
        match meta.scope {
            Scope::Global => PartKey::Global,
            Scope::Group(group) => PartKey::Group(group),
            Scope::User | Scope::Agent => PartKey::User(meta.user),
        }
    }

    fn name(self) -> String {
        match self {
            PartKey::Global => "global".into(),
            PartKey::Group(group) => format!("group:{}", group.as_str()),
            PartKey::User(user) => format!("user:{}", user.as_str()),
        }
    }

    fn parse(name: &str) -> Option<Self> {
        match name.split_once(':') {
            None if name == "global" => Some(PartKey::Global),
            Some(("group", group)) => GroupId::new(group).ok().map(PartKey::Group),
            Some(("user", user)) => UserId::new(user).ok().map(PartKey::User),
            _ => None,
        }
    }
}

/// The persisted list of partition graphs: key names, in directory order.
#[derive(Serialize, Deserialize)]
struct List {
    graphs: Vec<String>,
}

/// One partition graph a search may walk.
#[derive(Clone, Debug)]
pub(crate) struct Part {
    /// The partition's own index.
    pub(crate) graph: Arc<dyn VectorIndex>,
    /// The share of the partition the filter admits.
    pub(crate) share: f64,
}

/// How a filter's admitted set splits over partition graphs.
#[derive(Clone, Debug)]
pub(crate) struct Cover {
    /// Graphs to walk with the filter as predicate.
    pub(crate) parts: Vec<Part>,
    /// The admitted fragments outside those graphs: scanned exactly.
    pub(crate) rest: RoaringTreemap,
}

/// Which partition holds each vector, and the graphs of the large partitions.
#[derive(Debug, Default)]
pub(crate) struct Partitions {
    key_of: IdMap<PartKey>,
    members: HashMap<PartKey, RoaringTreemap>,
    graphs: HashMap<PartKey, Arc<dyn VectorIndex>>,
    /// Graphs a vector was purged from since they were built: a backend may keep
    /// a removed vector's bytes (usearch does), so they are rebuilt before a save.
    purged_from: HashSet<PartKey>,
    /// Counts the changes (never reset), so graphs rebuilt meanwhile are
    /// installed only if nothing changed since.
    generation: u64,
}

/// Partition graphs rebuilt without their removed vectors, for [`Partitions::install`].
pub(crate) struct Rebuilt {
    generation: u64,
    graphs: Vec<(PartKey, Arc<dyn VectorIndex>)>,
}

impl Partitions {
    /// Forgets everything (but the count of changes).
    pub(crate) fn clear(&mut self) {
        *self = Partitions {
            generation: self.generation + 1,
            ..Partitions::default()
        };
    }

    /// The number of partition graphs.
    pub(crate) fn graphs(&self) -> usize {
        self.graphs.len()
    }

    /// Records where fragments' vectors now belong: `Some(key)` for a fragment
    /// whose vector `main` holds (new or replaced), `None` for one without a
    /// vector. Graphs take the vectors from `main`; a partition that grows past
    /// `min_size` vectors (if any) gets its graph.
    pub(crate) fn place(
        &mut self,
        changes: &[(u64, Option<PartKey>)],
        main: &dyn VectorIndex,
        min_size: Option<u64>,
    ) -> Result<()> {
        self.generation += 1;
        let mut inserts: HashMap<PartKey, Vec<u64>> = HashMap::new();
        for &(id, key) in changes {
            let old = match key {
                Some(key) => self.key_of.insert(id, key),
                None => self.key_of.remove(&id),
            };
            if let Some(old) = old.filter(|old| Some(*old) != key) {
                if let Some(members) = self.members.get_mut(&old) {
                    members.remove(id);
                }
                if let Some(graph) = self.graphs.get(&old) {
                    graph.remove(id)?;
                }
            }
            if let Some(key) = key {
                self.members.entry(key).or_default().insert(id);
                if self.graphs.contains_key(&key) {
                    inserts.entry(key).or_default().push(id);
                }
            }
        }
        for (key, ids) in inserts {
            if let Some(graph) = self.graphs.get(&key) {
                copy_into(&**graph, ids.into_iter(), main)?;
            }
        }
        self.materialise(main, min_size)
    }

    /// Moves fragment `id` to the partition of `meta` if it has a vector.
    pub(crate) fn refresh(
        &mut self,
        id: u64,
        meta: &FragmentMeta,
        main: &dyn VectorIndex,
        min_size: Option<u64>,
    ) -> Result<()> {
        let key = PartKey::of(meta);
        match self.key_of.get(&id) {
            Some(old) if *old != key => self.place(&[(id, Some(key))], main, min_size),
            _ => Ok(()),
        }
    }

    /// Forgets fragment `id`.
    pub(crate) fn remove(&mut self, id: u64) -> Result<()> {
        self.generation += 1;
        if let Some(old) = self.key_of.remove(&id) {
            if let Some(members) = self.members.get_mut(&old) {
                members.remove(id);
            }
            if let Some(graph) = self.graphs.get(&old) {
                graph.remove(id)?;
            }
        }
        Ok(())
    }

    /// Forgets purged fragments, and marks the graphs that may still hold their
    /// vectors' bytes for a rebuild: the graph of each, or every graph for one
    /// removed before (deleted, then purged).
    pub(crate) fn purge(&mut self, ids: &[u64]) -> Result<()> {
        // A change even when no id is held: graphs rebuilt meanwhile miss the marks.
        self.generation += 1;
        for &id in ids {
            match self.key_of.get(&id).copied() {
                Some(key) => {
                    self.remove(id)?;
                    if self.graphs.contains_key(&key) {
                        self.purged_from.insert(key);
                    }
                }
                None => self.purged_from.extend(self.graphs.keys().copied()),
            }
        }
        Ok(())
    }

    /// Whether a graph may hold purged vectors' bytes ([`Partitions::rebuild_purged`]).
    pub(crate) fn holds_purged(&self) -> bool {
        !self.purged_from.is_empty()
    }

    /// Rebuilds from `main` every graph a vector was purged from, so that a save
    /// writes no purged vector. Reads only: searches go on meanwhile.
    pub(crate) fn rebuild_purged(&self, main: &dyn VectorIndex) -> Result<Rebuilt> {
        let mut graphs = Vec::new();
        for key in &self.purged_from {
            if !self.graphs.contains_key(key) {
                continue;
            }
            let (Some(ids), Some(graph)) = (self.members.get(key), main.partition()?) else {
                continue;
            };
            let graph: Arc<dyn VectorIndex> = Arc::from(graph);
            copy_into(&*graph, ids.iter(), main)?;
            graphs.push((*key, graph));
        }
        Ok(Rebuilt {
            generation: self.generation,
            graphs,
        })
    }

    /// Installs rebuilt graphs, unless the partitions changed since they were built.
    pub(crate) fn install(&mut self, rebuilt: Rebuilt) {
        if rebuilt.generation != self.generation {
            return;
        }
        self.graphs.extend(rebuilt.graphs);
        self.purged_from.clear();
    }

    /// Builds the graph of every partition holding more than `min_size` vectors.
    fn materialise(&mut self, main: &dyn VectorIndex, min_size: Option<u64>) -> Result<()> {
        let Some(min_size) = min_size else {
            return Ok(());
        };
        let due: Vec<PartKey> = self
            .members
            .iter()
            .filter(|(key, ids)| ids.len() > min_size && !self.graphs.contains_key(key))
            .map(|(key, _)| *key)
            .collect();
        for key in due {
            let Some(graph) = main.partition()? else {
                return Ok(());
            };
            let graph: Arc<dyn VectorIndex> = Arc::from(graph);
            if let Some(ids) = self.members.get(&key) {
                copy_into(&*graph, ids.iter(), main)?;
            }
            self.graphs.insert(key, graph);
        }
        Ok(())
    }

    /// How `admitted` splits over the graphs: a graph is walked when walking it
    /// (`walk_cost` of the share of it the filter admits and its size, in rows
    /// scanned) costs
    /// less than scanning the admitted fragments it holds; what no chosen graph
    /// holds is scanned exactly. Only the partitions `reachable` says the filter
    /// can admit are looked at. `None` when no graph is worth walking or the
    /// cover would cost `budget` rows or more.
    pub(crate) fn cover(
        &self,
        admitted: &RoaringTreemap,
        reachable: impl Fn(PartKey) -> bool,
        walk_cost: impl Fn(f64, u64) -> f64,
        budget: f64,
    ) -> Option<Cover> {
        let mut chosen = Vec::new();
        let mut walks = 0.0;
        let mut inside_total = 0u64;
        for (key, graph) in &self.graphs {
            if !reachable(*key) {
                continue;
            }
            let Some(members) = self.members.get(key) else {
                continue;
            };
            let inside = admitted.intersection_len(members);
            let size = members.len();
            if inside == 0 || size == 0 {
                continue;
            }
            let share = inside as f64 / size as f64;
            let walk = walk_cost(share, size);
            if walk < inside as f64 {
                walks += walk;
                if walks >= budget {
                    return None;
                }
                inside_total += inside;
                chosen.push((
                    members,
                    Part {
                        graph: graph.clone(),
                        share,
                    },
                ));
            }
        }
        // Partitions are disjoint: what the chosen ones do not hold is the remainder.
        let cost = walks + admitted.len().saturating_sub(inside_total) as f64;
        if chosen.is_empty() || cost >= budget {
            return None;
        }
        let mut rest = admitted.clone();
        let mut parts = Vec::with_capacity(chosen.len());
        for (members, part) in chosen {
            rest -= members;
            parts.push(part);
        }
        Some(Cover { parts, rest })
    }

    /// Writes every graph under `dir` (created here).
    pub(crate) fn save(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mut keys: Vec<(String, &Arc<dyn VectorIndex>)> = self
            .graphs
            .iter()
            .map(|(key, graph)| (key.name(), graph))
            .collect();
        keys.sort_by(|a, b| a.0.cmp(&b.0));
        for (i, (_, graph)) in keys.iter().enumerate() {
            let sub = dir.join(i.to_string());
            std::fs::create_dir_all(&sub).map_err(|e| Error::io(&sub, e))?;
            graph.save(&sub)?;
        }
        let list = List {
            graphs: keys.into_iter().map(|(name, _)| name).collect(),
        };
        let path = dir.join(LIST);
        let bytes = serde_json::to_vec(&list)
            .map_err(|e| Error::corrupt(&path, format!("cannot encode the list: {e}")))?;
        std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))
    }

    /// Reads what [`Partitions::save`] wrote, with membership recomputed from
    /// `postings` and the vectors `main` holds; a graph that does not hold
    /// exactly its partition's vectors is an [`Error::Corrupt`].
    pub(crate) fn load(
        dir: &Path,
        postings: &AccessPostings,
        main: &dyn VectorIndex,
        min_size: Option<u64>,
    ) -> Result<Self> {
        let mut partitions = Partitions::default();
        for (id, meta) in postings.metas() {
            if main.contains(id) {
                let key = PartKey::of(meta);
                partitions.key_of.insert(id, key);
                partitions.members.entry(key).or_default().insert(id);
            }
        }
        let path = dir.join(LIST);
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let list: List =
            serde_json::from_slice(&bytes).map_err(|e| Error::corrupt(&path, e.to_string()))?;
        for (i, name) in list.graphs.iter().enumerate() {
            let key = PartKey::parse(name)
                .ok_or_else(|| Error::corrupt(&path, format!("no partition is named {name}")))?;
            let graph: Arc<dyn VectorIndex> = match main.partition()? {
                Some(graph) => Arc::from(graph),
                None => return Err(Error::corrupt(&path, "the backend has no partitions")),
            };
            graph.load(&dir.join(i.to_string()))?;
            let expected = partitions.members.get(&key).map_or(0, RoaringTreemap::len);
            if graph.len() as u64 != expected {
                return Err(Error::corrupt(
                    &path,
                    format!("the graph of {name} does not hold its partition's vectors"),
                ));
            }
            partitions.graphs.insert(key, graph);
        }
        partitions.materialise(main, min_size)?;
        Ok(partitions)
    }
}

/// Copies the vectors of `ids` from `main` into `graph`, in batches.
fn copy_into(
    graph: &dyn VectorIndex,
    ids: impl Iterator<Item = u64>,
    main: &dyn VectorIndex,
) -> Result<()> {
    const BATCH: usize = 8192;
    let mut rows: Vec<(u64, Vec<f32>)> = Vec::with_capacity(BATCH);
    let flush = |rows: &mut Vec<(u64, Vec<f32>)>| -> Result<()> {
        let items: Vec<(u64, &[f32])> = rows.iter().map(|(id, v)| (*id, v.as_slice())).collect();
        graph.insert_batch(&items)?;
        rows.clear();
        Ok(())
    };
    for id in ids {
        let mut vector = Vec::new();
        if main.vector(id, &mut vector)? {
            rows.push((id, vector));
        }
        if rows.len() == BATCH {
            flush(&mut rows)?;
        }
    }
    flush(&mut rows)
}
