//! Write and read policies: how one interaction is split into a private part and a
//! shared part, and how a read result may be narrowed or transformed for display.
//!
//! Write policies are set at system level and overridden per agent, per user and per
//! (user, agent) pair. The most specific level wins — pair, then user, then agent,
//! then system: the user owns the data, so the user's choice beats the agent's
//! default — except that redactions the system marks mandatory are applied to every
//! part whatever the winning level says.
//!
//! Read policies can only drop results or transform their text: the read rule has
//! already decided visibility, and no policy can add to it.

use std::collections::BTreeMap;

use colmem_core::{AgentId, Fragment, Scope, UserId};
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::error::{AccessError, Result};
use crate::redact::{Folded, NamePattern, Redaction, Redactor};

/// One transformation applied to a part of an interaction.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type", deny_unknown_fields)]
pub enum Transform {
    /// Replace personal data with placeholders.
    Redact {
        /// What to redact.
        redact: Redaction,
    },
    /// Replace user ids (the writing user and the known users the caller passes to
    /// [`WritePolicySet::split`]) with stable pseudonyms, keyed with the set's
    /// [`PseudonymKey`]. Written `{}` so that an unknown key beside its `type` is
    /// refused.
    AnonymiseUsers {},
    /// Drop the part entirely when the pattern matches.
    Block {
        /// A regular expression.
        pattern: String,
    },
}

/// The policy for one part (private or shared) of an interaction.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartPolicy {
    /// Whether this part is written at all.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Transformations, applied in order.
    #[serde(default)]
    pub transforms: Vec<Transform>,
}

fn yes() -> bool {
    true
}

impl Default for PartPolicy {
    fn default() -> Self {
        PartPolicy {
            enabled: true,
            transforms: Vec::new(),
        }
    }
}

/// How one interaction is split: a private part and a shared part.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WritePolicy {
    /// The part kept private to the user (and writing agent).
    #[serde(default)]
    pub private: PartPolicy,
    /// The part shared beyond the user, under the default or requested scope.
    #[serde(default = "shared_default")]
    pub shared: PartPolicy,
}

fn shared_default() -> PartPolicy {
    PartPolicy {
        enabled: true,
        transforms: vec![
            Transform::Redact {
                redact: Redaction::Emails,
            },
            Transform::Redact {
                redact: Redaction::Phones,
            },
            Transform::Redact {
                redact: Redaction::CardNumbers,
            },
        ],
    }
}

impl Default for WritePolicy {
    /// Private verbatim; shared with e-mails, phones and card numbers redacted.
    fn default() -> Self {
        WritePolicy {
            private: PartPolicy::default(),
            shared: shared_default(),
        }
    }
}

/// Write policies at every level, as configured (e.g. from TOML).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WritePolicies {
    /// The system-wide policy.
    #[serde(default)]
    pub system: WritePolicy,
    /// Redactions applied to every part whatever the winning level says.
    #[serde(default)]
    pub mandatory: Vec<Redaction>,
    /// Overrides per agent.
    #[serde(default)]
    pub agents: BTreeMap<AgentId, WritePolicy>,
    /// Overrides per user.
    #[serde(default)]
    pub users: BTreeMap<UserId, WritePolicy>,
    /// Overrides per (user, agent) pair.
    #[serde(default)]
    pub pairs: Vec<PairPolicy>,
}

/// A write policy for one (user, agent) pair: `user`, `agent` and the policy's
/// `private` and `shared` in one table.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(from = "PairTable")]
pub struct PairPolicy {
    /// The user.
    pub user: UserId,
    /// The agent.
    pub agent: AgentId,
    /// The policy (written as keys of the table itself).
    #[serde(flatten)]
    pub policy: WritePolicy,
}

/// A [`PairPolicy`] as written. It lists the policy's keys itself: serde refuses no
/// unknown key beside a flattened table, and a misspelt `privat` must not pass as the
/// default policy.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PairTable {
    user: UserId,
    agent: AgentId,
    #[serde(default)]
    private: PartPolicy,
    #[serde(default = "shared_default")]
    shared: PartPolicy,
}

impl From<PairTable> for PairPolicy {
    fn from(table: PairTable) -> Self {
        PairPolicy {
            user: table.user,
            agent: table.agent,
            policy: WritePolicy {
                private: table.private,
                shared: table.shared,
            },
        }
    }
}

/// Which level of [`WritePolicies`] decided.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PolicyLevel {
    /// The system policy.
    System,
    /// An agent override.
    Agent,
    /// A user override.
    User,
    /// A (user, agent) override.
    Pair,
}

/// What became of one part of an interaction.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Part {
    /// The part, transformed.
    Kept(String),
    /// A block pattern matched: the part is not written.
    Blocked {
        /// The pattern that matched.
        pattern: String,
    },
    /// The policy does not write this part.
    Disabled,
}

impl Part {
    /// The text, if the part is written.
    pub fn text(&self) -> Option<&str> {
        match self {
            Part::Kept(text) => Some(text),
            _ => None,
        }
    }

    /// The text of a part to be written in `scope`, or [`AccessError::Withheld`]
    /// saying why the policy keeps it out.
    pub fn kept_in(self, scope: Scope) -> Result<String> {
        let reason = match self {
            Part::Kept(text) => return Ok(text),
            Part::Blocked { pattern } => format!("it matches the block pattern {pattern:?}"),
            Part::Disabled => "the policy writes no part of this kind".to_owned(),
        };
        Err(AccessError::Withheld { scope, reason })
    }
}

/// One interaction split by policy.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Split {
    /// The level whose policy applied.
    pub level: PolicyLevel,
    /// The private part.
    pub private: Part,
    /// The shared part.
    pub shared: Part,
}

/// The secret key of a memory's pseudonyms: without it, a pseudonym cannot be
/// computed from a user id (user ids are few and guessable, so an unkeyed hash of
/// one would name the user). Its `Debug` shows no byte of it.
#[derive(Clone, PartialEq, Eq)]
pub struct PseudonymKey([u8; 32]);

impl PseudonymKey {
    /// The key from its 32 bytes (kept with the memory, e.g. the store's
    /// `pseudonym` secret).
    pub fn new(bytes: [u8; 32]) -> Self {
        PseudonymKey(bytes)
    }
}

impl std::fmt::Debug for PseudonymKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PseudonymKey(..)")
    }
}

/// Compiled write policies: patterns checked and compiled once, when the
/// configuration is loaded.
#[derive(Clone, Debug)]
pub struct WritePolicySet {
    /// Each level's policy, compiled.
    compiled: Compiled,
    mandatory: Redactor,
    key: PseudonymKey,
}

#[derive(Clone, Debug)]
struct Compiled {
    system: CompiledPolicy,
    agents: BTreeMap<AgentId, CompiledPolicy>,
    users: BTreeMap<UserId, CompiledPolicy>,
    /// In the order listed: the last one for a pair wins.
    pairs: Vec<(UserId, AgentId, CompiledPolicy)>,
}

/// A policy with its private and shared parts compiled; `None` for a disabled part.
#[derive(Clone, Debug)]
struct CompiledPolicy {
    policy: WritePolicy,
    private: Option<Vec<Step>>,
    shared: Option<Vec<Step>>,
}

impl CompiledPolicy {
    fn new(policy: &WritePolicy) -> Result<Self> {
        let part = |part: &PartPolicy| -> Result<Option<Vec<Step>>> {
            Ok(if part.enabled {
                Some(compile_part(part)?)
            } else {
                None
            })
        };
        Ok(CompiledPolicy {
            policy: policy.clone(),
            private: part(&policy.private)?,
            shared: part(&policy.shared)?,
        })
    }
}

impl WritePolicySet {
    /// Checks and compiles every pattern and name list in the configuration;
    /// anonymisation keys its pseudonyms with `key`.
    pub fn new(policies: WritePolicies, key: PseudonymKey) -> Result<Self> {
        let compiled = Compiled {
            system: CompiledPolicy::new(&policies.system)?,
            agents: policies
                .agents
                .iter()
                .map(|(agent, policy)| Ok((*agent, CompiledPolicy::new(policy)?)))
                .collect::<Result<_>>()?,
            users: policies
                .users
                .iter()
                .map(|(user, policy)| Ok((*user, CompiledPolicy::new(policy)?)))
                .collect::<Result<_>>()?,
            pairs: policies
                .pairs
                .iter()
                .map(|pair| Ok((pair.user, pair.agent, CompiledPolicy::new(&pair.policy)?)))
                .collect::<Result<_>>()?,
        };
        let mandatory = Redactor::new(&policies.mandatory)?;
        Ok(WritePolicySet {
            compiled,
            mandatory,
            key,
        })
    }

    /// The policy for `(user, agent)`: the most specific level that has one.
    pub fn resolve(&self, user: UserId, agent: AgentId) -> (PolicyLevel, &WritePolicy) {
        let (level, compiled) = self.compiled(user, agent);
        (level, &compiled.policy)
    }

    /// The policy for `(user, agent)`, compiled: a pair's (the last one listed for
    /// it), else the user's, the agent's, the system's.
    fn compiled(&self, user: UserId, agent: AgentId) -> (PolicyLevel, &CompiledPolicy) {
        let c = &self.compiled;
        let pair = c
            .pairs
            .iter()
            .rev()
            .find(|(u, a, _)| *u == user && *a == agent)
            .map(|(_, _, policy)| policy);
        if let Some(pair) = pair {
            (PolicyLevel::Pair, pair)
        } else if let Some(policy) = c.users.get(&user) {
            (PolicyLevel::User, policy)
        } else if let Some(policy) = c.agents.get(&agent) {
            (PolicyLevel::Agent, policy)
        } else {
            (PolicyLevel::System, &c.system)
        }
    }

    /// Splits `text`, written by `agent` for `user`, into its private and shared parts.
    /// `known_users` are the user ids that anonymisation replaces besides `user`.
    pub fn split(
        &self,
        user: UserId,
        agent: AgentId,
        text: &str,
        known_users: &[UserId],
    ) -> Result<Split> {
        let (level, policy) = self.compiled(user, agent);
        let mut users: Vec<UserId> = known_users.to_vec();
        users.push(user);
        Ok(Split {
            level,
            private: self.apply_part(policy.private.as_deref(), text, &users),
            shared: self.apply_part(policy.shared.as_deref(), text, &users),
        })
    }

    /// What `text`, written by `agent` for `user` in `scope`, becomes: the winning
    /// policy's private part for a private scope (`Agent`, `User`), its shared part
    /// for a `Group` or `Global` one, with the mandatory redactions always applied.
    /// Anonymisation replaces `user`.
    pub fn apply(&self, user: UserId, agent: AgentId, scope: Scope, text: &str) -> Part {
        let (_, policy) = self.compiled(user, agent);
        let part = match Tier::of(scope) {
            Tier::Private => &policy.private,
            Tier::Shared | Tier::Global => &policy.shared,
        };
        self.apply_part(part.as_deref(), text, &[user])
    }

    /// The keywords of a fragment that may stand beside its text as written in
    /// `scope` ([`WritePolicySet::apply`] made `written` of `drafted`): none the
    /// policy would change and, when it changed the text, only those that are
    /// whole words of what it wrote (a keyword drawn from removed text, "example" of
    /// a redacted address, goes with it).
    pub fn keywords(
        &self,
        user: UserId,
        agent: AgentId,
        scope: Scope,
        drafted: &str,
        written: &str,
        keywords: &[String],
    ) -> Vec<String> {
        let words: Option<std::collections::HashSet<String>> = (drafted != written).then(|| {
            written
                .to_lowercase()
                .split(|c: char| !c.is_alphanumeric() && c != '\'')
                .map(str::to_owned)
                .collect()
        });
        keywords
            .iter()
            .filter(|k| {
                self.apply(user, agent, scope, k).text() == Some(k.as_str())
                    && words
                        .as_ref()
                        .is_none_or(|words| words.contains(&k.to_lowercase()))
            })
            .cloned()
            .collect()
    }

    /// A stable stand-in for a person's name the policy would change (a speaker
    /// whose name a redaction removes): `person-` and twelve hex digits of the
    /// name's hash (case folded) keyed with the set's key. Unlike the placeholder
    /// a redaction writes, it tells people apart, so one person's facts are never
    /// taken for another's.
    pub fn name_pseudonym(&self, name: &str) -> String {
        let hash = blake3::keyed_hash(&self.key.0, name.to_lowercase().as_bytes());
        format!("person-{}", &hash.to_hex()[..12])
    }

    fn apply_part(&self, steps: Option<&[Step]>, text: &str, users: &[UserId]) -> Part {
        let Some(steps) = steps else {
            return Part::Disabled;
        };
        let mut out = text.to_owned();
        for step in steps {
            match step {
                Step::Redact(redactor) => out = redactor.apply(&out),
                Step::Anonymise => out = anonymise(&out, users, &self.key),
                Step::Block(pattern) => {
                    if pattern.is_match(text) || pattern.is_match(&out) {
                        return Part::Blocked {
                            pattern: pattern.as_str().to_owned(),
                        };
                    }
                }
            }
        }
        Part::Kept(self.mandatory.apply(&out))
    }
}

#[derive(Clone, Debug)]
enum Step {
    Redact(Redactor),
    Anonymise,
    Block(Regex),
}

fn compile_part(part: &PartPolicy) -> Result<Vec<Step>> {
    part.transforms
        .iter()
        .map(|t| match t {
            Transform::Redact { redact } => {
                Ok(Step::Redact(Redactor::new(std::slice::from_ref(redact))?))
            }
            Transform::AnonymiseUsers {} => Ok(Step::Anonymise),
            Transform::Block { pattern } => {
                Regex::new(pattern)
                    .map(Step::Block)
                    .map_err(|e| AccessError::InvalidPattern {
                        pattern: pattern.clone(),
                        message: e.to_string(),
                    })
            }
        })
        .collect()
}

/// A stable pseudonym for a user id: `user-` and twelve hex digits of its
/// BLAKE3 hash keyed with `key`.
pub fn pseudonym(user: UserId, key: &PseudonymKey) -> String {
    let hash = blake3::keyed_hash(&key.0, user.as_str().as_bytes());
    format!("user-{}", &hash.to_hex()[..12])
}

fn anonymise(text: &str, users: &[UserId], key: &PseudonymKey) -> String {
    let mut users = users.to_vec();
    // Longest names first, so a name that contains another is replaced whole.
    users.sort_by_key(|u| std::cmp::Reverse(u.as_str().len()));
    users.dedup();
    // All names are found in the text as written, so no pseudonym is taken for a name
    // ("user-…" for a user called "user").
    let folded = Folded::new(text);
    let mut spans: Vec<(usize, usize, UserId)> = Vec::new();
    for user in users {
        // invariant: an escaped literal with word boundaries is always a valid pattern.
        if let Ok(Some(name)) = NamePattern::new(user.as_str()) {
            for (start, end) in name.find(&folded) {
                if !spans.iter().any(|&(s, e, _)| start < e && s < end) {
                    spans.push((start, end, user));
                }
            }
        }
    }
    spans.sort_by_key(|&(start, _, _)| std::cmp::Reverse(start));
    let mut out = text.to_owned();
    for (start, end, user) in spans {
        out.replace_range(start..end, &pseudonym(user, key));
    }
    out
}

/// The tier of a scope, for per-tier limits: private, shared or global.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Tier {
    /// `Agent` and `User` scopes.
    Private,
    /// `Group` scopes.
    Shared,
    /// `Global`.
    Global,
}

impl Tier {
    /// The tier of a scope.
    pub fn of(scope: Scope) -> Tier {
        match scope {
            Scope::Agent | Scope::User => Tier::Private,
            Scope::Group(_) => Tier::Shared,
            Scope::Global => Tier::Global,
        }
    }
}

/// A ranked read result a read policy can narrow.
pub trait Hit {
    /// The fragment.
    fn fragment(&self) -> &Fragment;
    /// The fragment, for transforming its text.
    fn fragment_mut(&mut self) -> &mut Fragment;
    /// Its relevance score; higher is better.
    fn score(&self) -> f32;
}

/// Redacts what a reader is shown of `fragment`: its text, its key, and its keywords (a
/// keyword the redaction would change is dropped, or "oslo" would stand beside
/// "[name]").
fn redact_fragment(redactor: &Redactor, fragment: &mut Fragment) {
    fragment.content = redactor.apply(&fragment.content);
    if let Some(key) = &fragment.key {
        fragment.key = Some(redactor.apply(key));
    }
    fragment.keywords.retain(|k| redactor.apply(k) == *k);
}

/// Whether a fragment holds one of `keywords` (lowercase) in its text or among its
/// keywords; any fragment does when there are none.
fn has_keyword(fragment: &Fragment, keywords: &[String]) -> bool {
    if keywords.is_empty() {
        return true;
    }
    let content = fragment.content.to_lowercase();
    keywords.iter().any(|k| {
        content.contains(k.as_str()) || fragment.keywords.iter().any(|fk| fk.to_lowercase() == *k)
    })
}

/// What a reader is shown of the fragments the read rule lets it see.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadPolicy {
    /// At most this many results per tier (private, shared, global).
    #[serde(default)]
    pub top_k_per_tier: Option<usize>,
    /// Drop results scoring below this.
    #[serde(default)]
    pub min_score: Option<f32>,
    /// Keep only results containing one of these keywords (case-insensitive); empty keeps all.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Redactions applied to the text shown.
    #[serde(default)]
    pub redact: Vec<Redaction>,
}

impl ReadPolicy {
    /// Transforms `fragments` as [`ReadPolicy::apply`] transforms the hits it keeps (the
    /// redactions), narrowing nothing: for what an answer reads beside the hits.
    pub fn redact(&self, fragments: &mut [Fragment]) -> Result<()> {
        let redactor = Redactor::new(&self.redact)?;
        if !redactor.is_empty() {
            for fragment in fragments {
                redact_fragment(&redactor, fragment);
            }
        }
        Ok(())
    }

    /// Narrows `fragments` to those holding a keyword of the policy and redacts them,
    /// as [`ReadPolicy::apply`] does; a listing has no scores or ranks, so neither
    /// `min_score` nor `top_k_per_tier` applies.
    pub fn show_listed(&self, mut fragments: Vec<Fragment>) -> Result<Vec<Fragment>> {
        let keywords = self.lowercase_keywords();
        fragments.retain(|f| has_keyword(f, &keywords));
        self.redact(&mut fragments)?;
        Ok(fragments)
    }

    fn lowercase_keywords(&self) -> Vec<String> {
        self.keywords
            .iter()
            .map(|k| k.trim().to_lowercase())
            .filter(|k| !k.is_empty())
            .collect()
    }

    /// Narrows and transforms `hits` (in rank order). The result is always a
    /// subsequence of the input, in the same order.
    pub fn apply<H: Hit>(&self, hits: Vec<H>) -> Result<Vec<H>> {
        let redactor = Redactor::new(&self.redact)?;
        let keywords = self.lowercase_keywords();
        let mut per_tier: BTreeMap<Tier, usize> = BTreeMap::new();
        let mut out = Vec::with_capacity(hits.len());
        for mut hit in hits {
            // A NaN score compares with nothing and is dropped too.
            let below = |min: f32| {
                !matches!(
                    hit.score().partial_cmp(&min),
                    Some(std::cmp::Ordering::Greater | std::cmp::Ordering::Equal)
                )
            };
            if self.min_score.is_some_and(below) {
                continue;
            }
            if !has_keyword(hit.fragment(), &keywords) {
                continue;
            }
            if let Some(k) = self.top_k_per_tier {
                let count = per_tier.entry(Tier::of(hit.fragment().scope)).or_default();
                if *count >= k {
                    continue;
                }
                *count += 1;
            }
            if !redactor.is_empty() {
                redact_fragment(&redactor, hit.fragment_mut());
            }
            out.push(hit);
        }
        Ok(out)
    }
}
