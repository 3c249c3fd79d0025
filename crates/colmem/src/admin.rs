//! [`Admin`]: the administrator's handle — principals, grants and revocations,
//! audit queries, the access matrix, "who could see this", explanations of the
//! read rule, and purges.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::RwLockWriteGuard;

use colmem_access::{AccessGraph, Context, Explanation};
use colmem_core::{
    AccessChange, AccessEvent, AgentId, AuditEntry, AuditEvent, Digest, Edge, FragmentId,
    LogicalClock, Principal, ResourceId, Timestamp, UserId, Validity,
};
use colmem_store::{AuditStatus, FragmentStore, PurgeMany};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::memory::{Access, Memory};

/// Audit entries read per batch when walking the log.
const AUDIT_BATCH: usize = 1024;

/// What a grant did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Granted {
    /// The grant was recorded (in the access log and the audit chain).
    Recorded(AccessEvent),
    /// A granted edge already holds throughout the asked time, for this validity:
    /// nothing was recorded.
    AlreadyHeld(Validity),
}

/// Which fragments an administrator's purge removes.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum PurgeTarget {
    /// These fragments, live or deleted; every one must exist.
    Fragments(Vec<FragmentId>),
    /// Every fragment of this user (its provenance's user), live or deleted.
    User(UserId),
    /// Every fragment deleted before this moment (erased tombstones included).
    DeletedBefore(Timestamp),
}

/// The administrator's handle on a [`Memory`]; see [`Memory::admin`].
#[derive(Clone, Copy, Debug)]
pub struct Admin<'m> {
    memory: &'m Memory,
}

/// One cell of the access matrix: what one user did through one agent, in total
/// (`resource: None`) or with knowledge drawn from one resource.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct MatrixCell {
    /// The user.
    pub user: UserId,
    /// The agent serving the user.
    pub agent: AgentId,
    /// The resource, or `None` for the pair's totals.
    pub resource: Option<ResourceId>,
    /// Audited reads (requests) that returned at least one such fragment; for the
    /// totals row, every audited read.
    pub reads: u64,
    /// Fragments returned by those reads.
    pub fragments_read: u64,
    /// Fragments written.
    pub fragments_written: u64,
}

/// The access matrix: user × agent × resource counts from the audit log.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct AccessMatrix {
    /// Cells in (user, agent, resource) order; totals (`resource: None`) first.
    pub cells: Vec<MatrixCell>,
    /// Audit entries counted.
    pub entries: u64,
}

#[derive(Default)]
struct Counts {
    reads: u64,
    fragments_read: u64,
    fragments_written: u64,
}

impl Memory {
    /// The administrator's handle.
    pub fn admin(&self) -> Admin<'_> {
        Admin { memory: self }
    }
}

impl<'m> Admin<'m> {
    /// Records one access change dated `at` (now by default), which may not be
    /// before now: appended to the store's log first, and applied to the in-memory
    /// graph only if the store accepted it, under the graph's write lock so no
    /// session sees one without the other.
    fn apply(&self, change: AccessChange, at: Option<Timestamp>) -> Result<AccessEvent> {
        let (graph, event) = self.checked(change, at)?;
        self.record(graph, event)
    }

    /// Takes the graph's write lock and checks the change dated `at` against it.
    ///
    /// Only a memory with the directory to itself changes access: the graph of one
    /// opened shared is built once and would miss another's change (a revocation
    /// must reach every open session, and the log must replay).
    fn checked(
        &self,
        change: AccessChange,
        at: Option<Timestamp>,
    ) -> Result<(RwLockWriteGuard<'m, AccessGraph>, AccessEvent)> {
        self.memory.writable()?;
        if self.memory.access() == Access::Shared {
            return Err(Error::Shared);
        }
        let graph = self.memory.graph_mut();
        // One reading of the clock: the default date is the moment checked against.
        let now = self.memory.now();
        let event = AccessEvent {
            at: at.unwrap_or(now),
            change,
        };
        graph.check_at(&event, now)?;
        Ok((graph, event))
    }

    /// Appends a checked event to the store's log, then applies it to the graph.
    fn record(
        &self,
        mut graph: RwLockWriteGuard<'m, AccessGraph>,
        event: AccessEvent,
    ) -> Result<AccessEvent> {
        self.memory.store.append_access_event(&event)?;
        // Checked under the same lock: applying cannot be refused now.
        graph.apply(event)?;
        Ok(event)
    }

    /// Registers a principal, now.
    pub fn register(&self, principal: Principal) -> Result<AccessEvent> {
        self.apply(AccessChange::Register { principal }, None)
    }

    /// Grants an edge from `at` (now by default; a future date takes effect then)
    /// until `until` (open-ended by default). A date before now is refused
    /// ([`AccessError::Backdated`](colmem_access::AccessError::Backdated)): it
    /// would change who could read what at moments already past. A grant the graph
    /// already holds throughout that time records nothing, so running a setup twice
    /// leaves one edge and one audit entry.
    pub fn grant(
        &self,
        edge: Edge,
        at: Option<Timestamp>,
        until: Option<Timestamp>,
    ) -> Result<Granted> {
        let (graph, event) = self.checked(AccessChange::Grant { edge, until }, at)?;
        if let Some(held) = graph.held_throughout(edge, &Validity::new(event.at, until)?)? {
            return Ok(Granted::AlreadyHeld(held));
        }
        self.record(graph, event).map(Granted::Recorded)
    }

    /// Revokes an edge at `at` (now by default; a future date schedules the end; a
    /// date before now is refused). Takes effect on the next read. A grant of the
    /// edge scheduled after `at` is cancelled. Without `at` it is always possible:
    /// now never falls below the last recorded event, even after the clock stepped
    /// back ([`Memory::now`]).
    pub fn revoke(&self, edge: Edge, at: Option<Timestamp>) -> Result<AccessEvent> {
        self.apply(AccessChange::Revoke { edge }, at)
    }

    /// The last `n` audit entries, oldest first.
    pub fn audit_tail(&self, n: usize) -> Result<Vec<AuditEntry>> {
        let mut tail = VecDeque::with_capacity(n.min(AUDIT_BATCH));
        self.walk_audit(|entry| {
            if n > 0 {
                if tail.len() == n {
                    tail.pop_front();
                }
                tail.push_back(entry);
            }
        })?;
        Ok(tail.into())
    }

    /// Checks the whole audit chain, and the store against it: every live
    /// fragment's text and provenance against its write entry, the access event
    /// log against the access entries (see [`FragmentStore::verify_audit`]).
    pub fn audit_verify(&self) -> Result<AuditStatus> {
        Ok(self.memory.store.verify_audit()?)
    }

    /// [`audit_verify`](Self::audit_verify), and that the head `published`
    /// elsewhere (by [`audit_head`](Self::audit_head)) is still an entry of the
    /// chain: a rewritten chain, intact on its own, no longer holds it.
    pub fn audit_verify_against(&self, published: Digest) -> Result<AuditStatus> {
        Ok(self.memory.store.verify_audit_against(Some(published))?)
    }

    /// The head of the audit chain, `(seq, hash)`, to publish elsewhere.
    pub fn audit_head(&self) -> Result<(u64, Digest)> {
        Ok(self.memory.store.audit_head()?)
    }

    fn walk_audit(&self, mut visit: impl FnMut(AuditEntry)) -> Result<u64> {
        let mut after = 0;
        let mut count = 0;
        loop {
            let batch = self.memory.store.audit_entries(after, AUDIT_BATCH)?;
            let Some(last) = batch.last() else {
                return Ok(count);
            };
            after = last.seq;
            count += batch.len() as u64;
            batch.into_iter().for_each(&mut visit);
        }
    }

    /// User × agent × resource counts of reads and writes, from the audit log
    /// (entries archived out of the store are not counted). A fragment's resources
    /// come from its provenance; purged fragments count in the totals only.
    pub fn access_matrix(&self) -> Result<AccessMatrix> {
        let store = &self.memory.store;
        let mut resources: HashMap<FragmentId, Vec<ResourceId>> = HashMap::new();
        let mut resources_of = |id: FragmentId| -> Vec<ResourceId> {
            resources
                .entry(id)
                .or_insert_with(|| {
                    store
                        .get(id)
                        .map(|f| f.provenance.resources.into_iter().collect())
                        .unwrap_or_default()
                })
                .clone()
        };
        let mut cells: BTreeMap<(UserId, AgentId, Option<ResourceId>), Counts> = BTreeMap::new();
        let entries = self.walk_audit(|entry| match entry.event {
            AuditEvent::Read {
                user,
                agent,
                returned,
            } => {
                let total = cells.entry((user, agent, None)).or_default();
                total.reads += 1;
                total.fragments_read += returned.len() as u64;
                let mut per_resource: BTreeMap<ResourceId, u64> = BTreeMap::new();
                for id in returned {
                    for r in resources_of(id) {
                        *per_resource.entry(r).or_default() += 1;
                    }
                }
                for (r, n) in per_resource {
                    let cell = cells.entry((user, agent, Some(r))).or_default();
                    cell.reads += 1;
                    cell.fragments_read += n;
                }
            }
            AuditEvent::Write {
                user,
                agent,
                fragments,
                ..
            } => {
                cells
                    .entry((user, agent, None))
                    .or_default()
                    .fragments_written += fragments.len() as u64;
                for (id, _) in fragments {
                    for r in resources_of(id) {
                        cells
                            .entry((user, agent, Some(r)))
                            .or_default()
                            .fragments_written += 1;
                    }
                }
            }
            _ => {}
        })?;
        Ok(AccessMatrix {
            cells: cells
                .into_iter()
                .map(|((user, agent, resource), c)| MatrixCell {
                    user,
                    agent,
                    resource,
                    reads: c.reads,
                    fragments_read: c.fragments_read,
                    fragments_written: c.fragments_written,
                })
                .collect(),
            entries,
        })
    }

    /// Every `(user, agent)` pair that could have read fragment `id` at `at`, with
    /// the permissions of that moment (an audit query, not a read path).
    pub fn who_could_see(&self, id: FragmentId, at: Timestamp) -> Result<Vec<(UserId, AgentId)>> {
        let record = self.memory.store.visibility_at(id, at)?;
        let graph = AccessGraph::from_events_until(&record.events, at)?;
        let clock = LogicalClock::new(at);
        let mut pairs = BTreeSet::new();
        for user in graph.users() {
            for agent in graph.invocable(user, at)? {
                let ctx = Context::new(user, agent, &clock);
                if graph
                    .compile(&ctx)
                    .is_ok_and(|filter| filter.admits(&record.meta))
                {
                    pairs.insert((user, agent));
                }
            }
        }
        Ok(pairs.into_iter().collect())
    }

    /// The fragments a purge of `target` would remove, in id order, without removing
    /// them (a dry run). An id that does not exist is not found; so is a user never
    /// registered.
    pub fn purgeable(&self, target: &PurgeTarget) -> Result<Vec<FragmentId>> {
        let store = &self.memory.store;
        Ok(match target {
            PurgeTarget::Fragments(ids) => {
                let ids: BTreeSet<FragmentId> = ids.iter().copied().collect();
                for &id in &ids {
                    store.get(id)?;
                }
                ids.into_iter().collect()
            }
            PurgeTarget::User(user) => {
                self.memory.known(Some(*user), None)?;
                store.fragments_of(*user)?
            }
            PurgeTarget::DeletedBefore(at) => store.deleted_before(*at)?,
        })
    }

    /// Removes the fragments of `target` for good, in one transaction: text,
    /// provenance, embedding, card, tombstone. What stays is the audit chain's ids
    /// and digests, with one `Purge` entry per fragment naming `admin`. The indexes
    /// forget them and the index snapshot is written without them; the store's file
    /// and log keep nothing of them. Returns the ids purged, in id order.
    pub fn purge(&self, target: &PurgeTarget, admin: &str) -> Result<Vec<FragmentId>> {
        self.memory.writable()?;
        let ids = self.purgeable(target)?;
        if !ids.is_empty() {
            self.memory.store.purge_many(&PurgeMany {
                admin: admin.to_owned(),
                fragments: ids.clone(),
            })?;
            self.memory.flush()?;
        }
        Ok(ids)
    }

    /// The administrator's explanation: the read rule for fragment `id` in context
    /// `(user, agent, now)`, condition by condition with the sets each was decided on
    /// (owner, agents, resources, times), naming the one that decides; *not found*
    /// for an id that does not exist. Audited, so the memory must not be read-only. A
    /// session asks [`Session::explain`](crate::Session::explain), which tells it
    /// only what it may read.
    pub fn explain(&self, user: UserId, agent: AgentId, id: FragmentId) -> Result<Explanation> {
        if self.memory.access() == Access::ReadOnly {
            return Err(Error::ReadOnly);
        }
        self.memory.known(Some(user), Some(agent))?;
        self.memory.store.append_audit(&AuditEvent::Explain {
            user,
            agent,
            fragment: id,
            admin: true,
        })?;
        let fragment = self.memory.store.get(id)?;
        let ctx = Context::new(user, agent, self.memory.clock.as_ref());
        Ok(self.memory.graph().explain(&ctx, &fragment))
    }
}
