//! Shared parts of the collaborative scenarios: fixture loading, corpora and questions
//! generated from seeds, and the wiring of `colmem-collab` over an in-memory SQLite store,
//! a hybrid index and the access graph on a logical clock.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, ensure};
use colmem_access::SystemPolicy;
use colmem_ama::{Pipeline, PipelineConfig, Roles};
use colmem_collab::{
    CheckReport, Checker, CollabConfig, Collaboration, Coordinator, Document, KnowledgeBase,
    OfflineCoordinator, Outcome, QueryRecord, Resource, SelectionConfig, Specialist,
};
use colmem_core::{AccessChange, Edge, LogicalClock, Principal, Timestamp, UserId};
use colmem_index::{FlatIndex, HybridConfig, HybridIndex, MemoryBm25};
use colmem_llm::{Embedder, OfflineConfig, OfflineEmbedder};
use colmem_store::{FragmentStore, SqliteStore, StoreConfig};
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// One attribute of a domain's entities and the values it may take.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttributeSpec {
    pub name: String,
    pub values: Vec<String>,
}

/// A knowledge domain: one specialist agent and one knowledge base.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainSpec {
    pub name: String,
    pub specialisation: String,
    pub attributes: Vec<AttributeSpec>,
}

impl DomainSpec {
    pub fn agent(&self) -> String {
        format!("{}-agent", self.name)
    }

    pub fn resource(&self) -> String {
        format!("{}-kb", self.name)
    }

    /// What the knowledge base is about: its attributes' names.
    pub fn topic(&self) -> String {
        self.attributes
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DomainsFile {
    domains: Vec<DomainSpec>,
}

/// Reads `fixtures/scenarios/{name}.toml`.
pub fn load<T: DeserializeOwned>(root: &Path, name: &str) -> Result<T> {
    let path = root.join("fixtures/scenarios").join(format!("{name}.toml"));
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// The domains of `fixtures/scenarios/domains.toml`.
pub fn domains(root: &Path) -> Result<Vec<DomainSpec>> {
    let file: DomainsFile = load(root, "domains")?;
    for d in &file.domains {
        ensure!(
            d.attributes.iter().all(|a| !a.values.is_empty()),
            "domain {} has an attribute without values",
            d.name
        );
    }
    Ok(file.domains)
}

/// A question: an attribute of an entity of a domain.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct Question {
    pub domain: usize,
    pub entity: usize,
    pub attribute: usize,
}

/// One domain's generated entities and their attribute values.
#[derive(Clone, Debug)]
pub struct DomainCorpus {
    pub spec: DomainSpec,
    pub entities: Vec<String>,
    /// `values[entity][attribute]`: an index into the attribute's values.
    pub values: Vec<Vec<usize>>,
}

/// Generated entities and facts for several domains.
#[derive(Clone, Debug)]
pub struct Corpus {
    pub domains: Vec<DomainCorpus>,
}

const ONSETS: [&str; 14] = [
    "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
];
const VOWELS: [&str; 5] = ["a", "e", "i", "o", "u"];
const CODAS: [&str; 6] = ["n", "r", "l", "x", "m", "th"];

/// A pronounceable, capitalised made-up name, not in `used`.
fn entity_name(rng: &mut fastrand::Rng, used: &mut BTreeSet<String>) -> String {
    loop {
        let mut name = String::new();
        for _ in 0..2 {
            name.push_str(ONSETS[rng.usize(..ONSETS.len())]);
            name.push_str(VOWELS[rng.usize(..VOWELS.len())]);
        }
        name.push_str(CODAS[rng.usize(..CODAS.len())]);
        let mut chars = name.chars();
        let capitalised = match chars.next() {
            Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
            None => continue,
        };
        if used.insert(capitalised.to_lowercase()) {
            return capitalised;
        }
    }
}

impl Corpus {
    /// `entities` entities per domain, each attribute value drawn from `rng`.
    pub fn generate(domains: &[DomainSpec], entities: usize, rng: &mut fastrand::Rng) -> Corpus {
        let mut used = BTreeSet::new();
        let domains = domains
            .iter()
            .map(|spec| {
                let names: Vec<String> =
                    (0..entities).map(|_| entity_name(rng, &mut used)).collect();
                let values = names
                    .iter()
                    .map(|_| {
                        spec.attributes
                            .iter()
                            .map(|a| rng.usize(..a.values.len()))
                            .collect()
                    })
                    .collect();
                DomainCorpus {
                    spec: spec.clone(),
                    entities: names,
                    values,
                }
            })
            .collect();
        Corpus { domains }
    }

    /// Every question the corpus can answer, in order.
    pub fn questions(&self) -> Vec<Question> {
        let mut out = Vec::new();
        for (d, domain) in self.domains.iter().enumerate() {
            for e in 0..domain.entities.len() {
                for a in 0..domain.spec.attributes.len() {
                    out.push(Question {
                        domain: d,
                        entity: e,
                        attribute: a,
                    });
                }
            }
        }
        out
    }

    /// The right answer to `q`.
    pub fn gold(&self, q: Question) -> &str {
        let domain = &self.domains[q.domain];
        let value = domain.values[q.entity][q.attribute];
        &domain.spec.attributes[q.attribute].values[value]
    }

    /// `q` worded by `template` (`{attribute}`, `{entity}`).
    pub fn text(&self, q: Question, template: &str) -> String {
        let domain = &self.domains[q.domain];
        template
            .replace("{attribute}", &domain.spec.attributes[q.attribute].name)
            .replace("{entity}", &domain.entities[q.entity])
    }

    /// The knowledge base of domain `d`: one document per (entity, attribute).
    pub fn knowledge_base(&self, d: usize, min_coverage: f32) -> Result<KnowledgeBase> {
        let domain = &self.domains[d];
        let mut documents = Vec::new();
        for (e, entity) in domain.entities.iter().enumerate() {
            for (a, attribute) in domain.spec.attributes.iter().enumerate() {
                let value = &attribute.values[domain.values[e][a]];
                documents.push(Document {
                    text: format!("The {} of {entity} is {value}.", attribute.name),
                    answer: value.clone(),
                });
            }
        }
        let kb = KnowledgeBase::new(
            colmem_core::ResourceId::new(&domain.spec.resource())?,
            domain.spec.topic(),
            documents,
        )?;
        Ok(kb.with_min_coverage(min_coverage)?)
    }
}

/// The loop wired over a fresh in-memory store.
#[derive(Debug)]
pub struct Wiring {
    pub clock: Arc<LogicalClock>,
    pub collab: Collaboration,
}

/// Wires a collaboration: an in-memory SQLite store on a logical clock starting at `start`,
/// a hybrid index (exact vectors and in-memory BM25) following it, the offline embedder and
/// roles, and the offline coordinator (unless one is given).
pub fn wire(
    start: Timestamp,
    team: Vec<Specialist>,
    system: SystemPolicy,
    config: CollabConfig,
    coordinator: Option<Box<dyn Coordinator>>,
) -> Result<Wiring> {
    let clock = Arc::new(LogicalClock::new(start));
    let store: Arc<dyn FragmentStore> = Arc::new(SqliteStore::open_in_memory(StoreConfig {
        clock: clock.clone(),
        ..StoreConfig::default()
    })?);
    let embedder: Arc<dyn Embedder> = Arc::new(OfflineEmbedder::new(OfflineConfig::default())?);
    let index = Arc::new(HybridIndex::new(
        Arc::new(FlatIndex::new(embedder.dim())),
        Some(Arc::new(MemoryBm25::new())),
        HybridConfig::default(),
    ));
    let pipeline = Arc::new(Pipeline::new(
        store.clone(),
        index,
        embedder,
        Roles::offline(),
        PipelineConfig::default(),
    ));
    let coordinator = coordinator
        .unwrap_or_else(|| Box::new(OfflineCoordinator::new(SelectionConfig::default())));
    let collab = Collaboration::new(
        pipeline,
        store,
        system,
        clock.clone(),
        team,
        coordinator,
        config,
    )?;
    Ok(Wiring { clock, collab })
}

impl Wiring {
    /// Registers principals.
    pub fn register(&mut self, principals: impl IntoIterator<Item = Principal>) -> Result<()> {
        for principal in principals {
            self.collab.apply(AccessChange::Register { principal })?;
        }
        Ok(())
    }

    /// Grants edges, open-ended.
    pub fn grant(&mut self, edges: impl IntoIterator<Item = Edge>) -> Result<()> {
        for edge in edges {
            self.collab
                .apply(AccessChange::Grant { edge, until: None })?;
        }
        Ok(())
    }

    /// Asks a question one logical second after the previous step and records how it went.
    /// `oracle` is the resource that holds the gold answer: called off the record (not
    /// logged, not counted) to tell wrong reuse from memory apart from a tool that fails too.
    pub fn ask(
        &self,
        user: UserId,
        text: &str,
        gold: &str,
        oracle: Option<&dyn Resource>,
    ) -> Result<(Outcome, QueryRecord)> {
        self.clock.advance(1_000);
        let outcome = self.collab.ask(user, text)?;
        let correct = outcome.answer.as_deref() == Some(gold);
        let from_memory = outcome.from_memory();
        let tool_right = match oracle {
            Some(resource) => resource.call(text)?.is_some_and(|a| a.answer == gold),
            None => false,
        };
        let record = QueryRecord {
            user,
            correct,
            agents: outcome
                .answers
                .iter()
                .map(|a| a.agent)
                .collect::<BTreeSet<_>>()
                .len(),
            tool_calls: outcome.tool_calls,
            from_memory,
            wrong_reuse: from_memory && !correct && tool_right,
        };
        Ok((outcome, record))
    }

    /// The independent checker over everything the loop logged.
    pub fn check(&self) -> Result<CheckReport> {
        let store = self.collab.store();
        let checker = Checker::new(&store.access_events()?)
            .with_global_writers(self.collab.system().global_writers.iter().copied());
        Ok(checker.check(&self.collab.events(), &|id| store.get(id).ok()))
    }
}

/// Running means of a per-query value, as plot points `(query index, mean so far)`.
pub fn running_mean(values: impl IntoIterator<Item = f64>) -> Vec<(f64, f64)> {
    let mut sum = 0.0;
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            sum += v;
            ((i + 1) as f64, sum / (i + 1) as f64)
        })
        .collect()
}

/// `x` with three decimals, for tables.
pub fn f3(x: f64) -> String {
    format!("{x:.3}")
}

/// `x` rounded to three decimals, for JSON and snapshots.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpora_are_deterministic_and_answerable() {
        let root = crate::repo_root();
        let specs = domains(&root).unwrap();
        let a = Corpus::generate(&specs, 4, &mut fastrand::Rng::with_seed(7));
        let b = Corpus::generate(&specs, 4, &mut fastrand::Rng::with_seed(7));
        assert_eq!(a.domains[0].entities, b.domains[0].entities);
        let kb = a.knowledge_base(0, 0.5).unwrap();
        for q in a.questions().into_iter().filter(|q| q.domain == 0) {
            for template in [
                "What is the {attribute} of {entity}?",
                "Which {attribute} does {entity} have?",
            ] {
                let text = a.text(q, template);
                let answer = kb.call(&text).unwrap().map(|t| t.answer);
                assert_eq!(answer.as_deref(), Some(a.gold(q)), "{text}");
            }
        }
    }
}
