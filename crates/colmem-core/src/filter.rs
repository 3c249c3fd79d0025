//! The compiled read filter: a data-only view of what one reader may see now.
//!
//! `colmem-access` compiles a request context into a [`ReadFilter`] once per
//! request; the store turns it into SQL and the indexes into a predicate inside
//! their search. [`ReadFilter::admits`] is the per-fragment check, on bitsets
//! over interned ids: no hashing, no string compares.

use std::fmt;
use std::marker::PhantomData;

use fixedbitset::FixedBitSet;

use crate::fragment::{FragmentMeta, Scope};
use crate::id::{AgentId, GroupId, PrincipalId, ResourceId, UserId};
use crate::time::Timestamp;

/// A set of principal ids as a bitset over their interned numbers.
#[derive(Clone, PartialEq, Eq)]
pub struct IdSet<T> {
    bits: FixedBitSet,
    _kind: PhantomData<T>,
}

impl<T: PrincipalId> IdSet<T> {
    /// The empty set.
    pub fn new() -> Self {
        IdSet {
            bits: FixedBitSet::new(),
            _kind: PhantomData,
        }
    }

    /// Adds `id`.
    pub fn insert(&mut self, id: T) {
        let index = id.index();
        if index >= self.bits.len() {
            self.bits.grow(index + 1);
        }
        self.bits.insert(index);
    }

    /// Whether `id` is in the set.
    #[inline]
    pub fn contains(&self, id: T) -> bool {
        self.bits.contains(id.index())
    }

    /// Whether every id of `ids` is in the set.
    #[inline]
    pub fn contains_all(&self, ids: &[T]) -> bool {
        ids.iter().all(|&id| self.bits.contains(id.index()))
    }

    /// The number of ids.
    pub fn len(&self) -> usize {
        self.bits.count_ones(..)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.bits.is_clear()
    }

    /// The ids, ordered by name.
    pub fn to_sorted_vec(&self) -> Vec<T> {
        let mut ids: Vec<T> = self.bits.ones().filter_map(T::from_index).collect();
        ids.sort();
        ids
    }
}

impl<T: PrincipalId> Default for IdSet<T> {
    fn default() -> Self {
        IdSet::new()
    }
}

impl<T: PrincipalId> FromIterator<T> for IdSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut set = IdSet::new();
        for id in iter {
            set.insert(id);
        }
        set
    }
}

impl<T: PrincipalId> fmt::Debug for IdSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.to_sorted_vec()).finish()
    }
}

/// Which versions of facts a read returns. Permissions are those of now whatever the view.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum View {
    /// Only current fragments: not superseded, not deleted.
    #[default]
    Current,
    /// The versions that were current at a past record time (clamped to now).
    RecordAsOf(Timestamp),
    /// The versions whose world-time validity contains the given moment, superseded or not.
    WorldAsOf(Timestamp),
    /// Every version that is not deleted.
    AllVersions,
}

/// The parts a [`ReadFilter`] is built from. `colmem-access` is the only crate that
/// should build one, from the access graph at the store's "now".
#[derive(Clone, Debug)]
pub struct FilterParts {
    /// The user `u` of the request.
    pub user: UserId,
    /// The serving agent `a`.
    pub agent: AgentId,
    /// `t`: now, on the store's clock.
    pub now: Timestamp,
    /// `A(u,t)`.
    pub agents: IdSet<AgentId>,
    /// `R(a,t)`.
    pub resources: IdSet<ResourceId>,
    /// `G(a,t)`, transitively.
    pub groups: IdSet<GroupId>,
}

/// What one reader `(u, a, t)` may see: a compiled, data-only form of the read rule.
#[derive(Clone, Debug)]
pub struct ReadFilter {
    parts: FilterParts,
    view: View,
}

impl ReadFilter {
    /// A filter for the current view.
    pub fn from_parts(parts: FilterParts) -> Self {
        ReadFilter {
            parts,
            view: View::Current,
        }
    }

    /// The same permissions with another view of versions.
    pub fn with_view(mut self, view: View) -> Self {
        self.view = match view {
            View::RecordAsOf(r) if r > self.parts.now => View::RecordAsOf(self.parts.now),
            other => other,
        };
        self
    }

    /// The user of the request.
    pub fn user(&self) -> UserId {
        self.parts.user
    }

    /// The serving agent.
    pub fn agent(&self) -> AgentId {
        self.parts.agent
    }

    /// The moment the filter was compiled for.
    pub fn now(&self) -> Timestamp {
        self.parts.now
    }

    /// The agents the user may invoke now.
    pub fn agents(&self) -> &IdSet<AgentId> {
        &self.parts.agents
    }

    /// The resources the serving agent may use now.
    pub fn resources(&self) -> &IdSet<ResourceId> {
        &self.parts.resources
    }

    /// The groups the serving agent belongs to now.
    pub fn groups(&self) -> &IdSet<GroupId> {
        &self.parts.groups
    }

    /// Which versions are returned.
    pub fn view(&self) -> View {
        self.view
    }

    /// Whether the scope condition (rule 2) admits a fragment of `user` and `scope` written by `agents`.
    #[inline]
    pub fn admits_scope(&self, scope: Scope, user: UserId, agents: &[AgentId]) -> bool {
        match scope {
            Scope::Agent => user == self.parts.user && agents.contains(&self.parts.agent),
            Scope::User => user == self.parts.user,
            Scope::Group(g) => self.parts.groups.contains(g),
            Scope::Global => true,
        }
    }

    /// Whether the version condition (rule 1, under the view) admits a fragment.
    #[inline]
    pub fn admits_version(&self, meta: &FragmentMeta) -> bool {
        let now = self.parts.now;
        if meta.created_at > now || meta.deleted_at.is_some_and(|d| d <= now) {
            return false;
        }
        match self.view {
            View::Current => meta.superseded_at.is_none_or(|s| s > now),
            View::RecordAsOf(r) => meta.created_at <= r && meta.superseded_at.is_none_or(|s| s > r),
            View::WorldAsOf(w) => meta.validity.contains(w),
            View::AllVersions => true,
        }
    }

    /// Whether the fragment is visible to this reader: all four conditions of the read rule.
    #[inline]
    pub fn admits(&self, meta: &FragmentMeta) -> bool {
        self.admits_version(meta)
            && self.admits_scope(meta.scope, meta.user, &meta.agents)
            && self.parts.agents.contains_all(&meta.agents)
            && self.parts.resources.contains_all(&meta.resources)
    }
}
