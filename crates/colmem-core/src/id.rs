//! Ids: interned principal ids (users, agents, resources, groups) and fragment ids.
//!
//! A principal id is a validated name interned into a process-wide table, so it is
//! `Copy`, compares in O(1), and has a small dense number ([`PrincipalId::index`])
//! that bitsets are indexed by. The number is process-local: persist the name,
//! never the number. Ordering and serialisation use the name, so output is
//! deterministic whatever order names were interned in.
//!
//! Interning is append-only; the table grows with the number of distinct names.
//! Code that reads untrusted input and must not grow the table uses `lookup`,
//! which never interns.

use std::collections::HashMap;
use std::fmt;
use std::sync::{LazyLock, RwLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::Error;

/// The longest principal name accepted, in bytes.
pub const MAX_NAME_LEN: usize = 128;

#[derive(Default)]
struct Table {
    by_name: HashMap<&'static str, u32>,
    names: Vec<&'static str>,
}

struct Interner(RwLock<Table>);

impl Interner {
    fn new() -> Self {
        Interner(RwLock::new(Table::default()))
    }

    fn lookup(&self, name: &str) -> Option<u32> {
        let table = self
            .0
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        table.by_name.get(name).copied()
    }

    fn intern(&self, name: &str) -> u32 {
        if let Some(index) = self.lookup(name) {
            return index;
        }
        let mut table = self
            .0
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(&index) = table.by_name.get(name) {
            return index;
        }
        // Names are leaked on purpose: the table is append-only and bounded by the
        // number of distinct principals, and `&'static str` keeps ids `Copy`.
        let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
        let index = u32::try_from(table.names.len()).unwrap_or(u32::MAX);
        table.names.push(leaked);
        table.by_name.insert(leaked, index);
        index
    }

    fn name(&self, index: u32) -> &'static str {
        let table = self
            .0
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // invariant: an index only comes from `intern` on this same table.
        table
            .names
            .get(index as usize)
            .copied()
            .unwrap_or("<unknown>")
    }
}

fn validate(kind: &'static str, name: &str) -> Result<(), Error> {
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if name.len() > MAX_NAME_LEN {
        Some("it is longer than 128 bytes")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':' | b'@'))
    {
        Some("use only ASCII letters, digits and _ - . : @")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(Error::InvalidId {
            kind,
            value: name.chars().take(MAX_NAME_LEN).collect(),
            reason,
        }),
        None => Ok(()),
    }
}

/// What every principal id can do; lets generic code (bitsets, tables) work over all four.
pub trait PrincipalId: Copy + Eq + std::hash::Hash + Ord + fmt::Debug + fmt::Display {
    /// The kind of principal, in lowercase (`"user"`, `"agent"`, …).
    const KIND: &'static str;
    /// The dense process-local number of this id.
    fn index(self) -> usize;
    /// The id with the given dense number, if one was interned.
    fn from_index(index: usize) -> Option<Self>;
    /// The name this id was created from.
    fn as_str(self) -> &'static str;
}

macro_rules! principal_id {
    ($(#[$doc:meta])* $name:ident, $table:ident, $kind:literal) => {
        static $table: LazyLock<Interner> = LazyLock::new(Interner::new);

        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name(u32);

        impl $name {
            /// Validates `name` and interns it.
            pub fn new(name: &str) -> Result<Self, Error> {
                validate($kind, name)?;
                Ok($name($table.intern(name)))
            }

            /// The id for `name` if it has been interned before; never grows the table.
            pub fn lookup(name: &str) -> Option<Self> {
                $table.lookup(name).map($name)
            }

            /// The name this id was created from.
            pub fn as_str(self) -> &'static str {
                $table.name(self.0)
            }
        }

        impl PrincipalId for $name {
            const KIND: &'static str = $kind;

            fn index(self) -> usize {
                self.0 as usize
            }

            fn from_index(index: usize) -> Option<Self> {
                let index = u32::try_from(index).ok()?;
                let table = $table.0.read().unwrap_or_else(|poisoned| poisoned.into_inner());
                ((index as usize) < table.names.len()).then_some($name(index))
            }

            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for $name {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                if self.0 == other.0 {
                    std::cmp::Ordering::Equal
                } else {
                    self.as_str().cmp(other.as_str())
                }
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.as_str())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self, Error> {
                $name::new(s)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                $name::new(&name).map_err(serde::de::Error::custom)
            }
        }
    };
}

principal_id!(
    /// A human user that agents serve.
    UserId, USERS, "user"
);
principal_id!(
    /// An agent that serves users and writes fragments.
    AgentId, AGENTS, "agent"
);
principal_id!(
    /// A resource an agent may use: a tool, a knowledge base, an API.
    ResourceId, RESOURCES, "resource"
);
principal_id!(
    /// A group of agents and other groups (crew, team, department, org).
    GroupId, GROUPS, "group"
);

/// The id of a stored fragment, assigned by the store.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FragmentId(pub u64);

impl fmt::Debug for FragmentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FragmentId({})", self.0)
    }
}

impl fmt::Display for FragmentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::str::FromStr for FragmentId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        s.trim()
            .parse::<u64>()
            .map(FragmentId)
            .map_err(|_| Error::InvalidId {
                kind: "fragment",
                value: s.chars().take(MAX_NAME_LEN).collect(),
                reason: "a fragment id is a non-negative integer",
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable_and_ordering_uses_names() {
        let b = AgentId::new("zz-ordering-b").unwrap();
        let a = AgentId::new("aa-ordering-a").unwrap();
        assert_eq!(AgentId::new("aa-ordering-a").unwrap(), a);
        assert!(a < b, "ordering follows names, not intern order");
        assert_eq!(a.as_str(), "aa-ordering-a");
        assert_eq!(AgentId::from_index(a.index()), Some(a));
    }

    #[test]
    fn lookup_does_not_intern() {
        assert_eq!(UserId::lookup("never-interned-user-xyz"), None);
        assert_eq!(UserId::lookup("never-interned-user-xyz"), None);
    }

    #[test]
    fn bad_names_are_typed_errors() {
        for bad in ["", "has space", "ünïcode", &"x".repeat(129)] {
            let err = UserId::new(bad).unwrap_err();
            assert!(
                matches!(err, Error::InvalidId { kind: "user", .. }),
                "{bad:?}: {err}"
            );
        }
        assert!(UserId::new(&"x".repeat(128)).is_ok());
    }

    #[test]
    fn serde_round_trips_by_name() {
        let g = GroupId::new("crew-1").unwrap();
        let json = serde_json::to_string(&g).unwrap();
        assert_eq!(json, "\"crew-1\"");
        assert_eq!(serde_json::from_str::<GroupId>(&json).unwrap(), g);
        assert!(serde_json::from_str::<GroupId>("\"bad name\"").is_err());
    }
}
