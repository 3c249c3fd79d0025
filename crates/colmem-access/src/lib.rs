//! The security kernel of colmem.
//!
//! - [`AccessGraph`]: users, agents, resources and groups on petgraph, with edges
//!   valid over `[from, until)`, derived from an ordered event log and queryable at
//!   any moment (`A(u,t)`, `R(a,t)`, `G(a,t)`).
//! - The read rule: [`AccessGraph::can_read`] evaluates it directly and
//!   [`AccessGraph::compile`] turns a request [`Context`] into a
//!   [`ReadFilter`](colmem_core::ReadFilter) whose `admits` agrees with `can_read`
//!   on every fragment.
//! - [`AccessGraph::explain`]: the read rule condition by condition, naming the one
//!   that decides.
//! - The write rule ([`AccessGraph::authorize_write`], [`AccessGraph::authorize_derived`])
//!   and the default scope by kind.
//! - Write policies (the private/shared split with redaction, anonymisation and
//!   blocking) and read policies (narrowing and read-time redaction).
//!
//! Everything here is decided by code over the graph at request time; no stored text
//! and no model can change a decision.

mod error;
mod explain;
mod graph;
mod policy;
mod redact;
mod rule;

pub use error::{AccessError, Result};
pub use explain::{Check, Condition, Explanation};
pub use graph::{AccessGraph, AccessSnapshot};
pub use policy::{
    Hit, PairPolicy, Part, PartPolicy, PolicyLevel, PseudonymKey, ReadPolicy, Split, Tier,
    Transform, WritePolicies, WritePolicy, WritePolicySet, pseudonym,
};
pub use redact::{Redaction, Redactor};
pub use rule::{Context, SystemPolicy, narrowest, within};
