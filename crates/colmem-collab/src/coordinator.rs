//! The coordinator: picks, among the agents the user may invoke now, those whose
//! specialisation matches the query.
//!
//! The candidate set always comes from the access graph (`A(u,t)`), computed by the
//! collaboration loop before the coordinator runs; a coordinator only ranks and chooses
//! within it. [`OfflineCoordinator`] matches lexically (BM25 over the candidates'
//! specialisations) with an optional embedding tie-break; [`LlmCoordinator`] asks a chat
//! model, and an answer outside the candidate set is a typed error or falls back to the
//! offline choice — it never reaches an agent.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use colmem_core::AgentId;
use colmem_index::{Admit, LexicalIndex, MemoryBm25};
use colmem_llm::{ChatModel, ChatRequest, Embedder, JsonSchema, Message, complete_json};
use serde::Deserialize;

use crate::agent::Specialist;
use crate::error::{Error, Result};

/// The coordinator's choice.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Selection {
    /// The chosen agents, best first; a subset of the candidates. Empty when none fits.
    pub agents: Vec<AgentId>,
    /// Whether the model chose outside the candidates and, under [`OutOfSet::Fallback`], the
    /// offline choice was taken instead. An answer that does not parse even after the repair
    /// prompt is an error, not a fallback.
    pub fell_back: bool,
}

/// Chooses agents for a query among authorised candidates.
pub trait Coordinator: Send + Sync + fmt::Debug {
    /// The agents among `candidates` (the agents the user may invoke now) that should answer
    /// `query`, best first. Must never return an agent outside `candidates`.
    fn select(&self, query: &str, candidates: &[&Specialist]) -> Result<Selection>;
}

/// How the offline coordinator chooses.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct SelectionConfig {
    /// The most agents asked per query.
    pub max_agents: usize,
    /// Agents whose match score is at least this share of the best one's are chosen too.
    pub min_share: f32,
}

impl Default for SelectionConfig {
    fn default() -> Self {
        SelectionConfig {
            max_agents: 1,
            min_share: 0.9,
        }
    }
}

/// Lexical matching of the query against each candidate's specialisation (BM25 restricted to
/// the candidates), with embedding similarity deciding ties and queries that share no term
/// with any specialisation.
#[derive(Clone, Debug, Default)]
pub struct OfflineCoordinator {
    config: SelectionConfig,
    embedder: Option<Arc<dyn Embedder>>,
}

impl OfflineCoordinator {
    /// A lexical coordinator.
    pub fn new(config: SelectionConfig) -> Self {
        OfflineCoordinator {
            config,
            embedder: None,
        }
    }

    /// Adds embedding similarity as the tie-break and fallback signal.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    fn similarities(&self, query: &str, candidates: &[&Specialist]) -> Result<Vec<f32>> {
        let Some(embedder) = &self.embedder else {
            return Ok(vec![0.0; candidates.len()]);
        };
        let mut texts: Vec<&str> = vec![query];
        texts.extend(candidates.iter().map(|c| c.specialisation.as_str()));
        let vectors = embedder.embed_checked(&texts)?;
        let (first, rest) = vectors
            .split_first()
            .ok_or_else(|| Error::InvalidInput("the embedder returned no vectors".into()))?;
        Ok(rest.iter().map(|v| colmem_index::dot(first, v)).collect())
    }
}

impl Coordinator for OfflineCoordinator {
    fn select(&self, query: &str, candidates: &[&Specialist]) -> Result<Selection> {
        if candidates.is_empty() || self.config.max_agents == 0 {
            return Ok(Selection::default());
        }
        let profiles = MemoryBm25::new();
        for (i, candidate) in candidates.iter().enumerate() {
            profiles.insert(i as u64, &candidate.specialisation)?;
        }
        let lexical = profiles.search(query, candidates.len(), &Admit::All)?;
        let mut scores = vec![0.0f32; candidates.len()];
        for hit in &lexical {
            if let Some(score) = usize::try_from(hit.id).ok().and_then(|i| scores.get_mut(i)) {
                *score = hit.score;
            }
        }
        let similarity = self.similarities(query, candidates)?;
        let mut order: Vec<usize> = (0..candidates.len()).collect();
        order.sort_by(|&a, &b| {
            scores[b]
                .total_cmp(&scores[a])
                .then(similarity[b].total_cmp(&similarity[a]))
                .then(candidates[a].id.cmp(&candidates[b].id))
        });
        let best = order[0];
        let lexical_match = scores[best] > 0.0;
        if !lexical_match && similarity[best] <= 0.0 {
            return Ok(Selection::default());
        }
        let agents = order
            .iter()
            .take(self.config.max_agents)
            .filter(|&&i| {
                if lexical_match {
                    scores[i] > 0.0 && scores[i] >= self.config.min_share * scores[best]
                } else {
                    similarity[i] > 0.0 && similarity[i] >= self.config.min_share * similarity[best]
                }
            })
            .map(|&i| candidates[i].id)
            .collect();
        Ok(Selection {
            agents,
            fell_back: false,
        })
    }
}

/// What the model may do when its answer names an agent outside the candidate set.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum OutOfSet {
    /// Fail with [`Error::OutOfSet`].
    #[default]
    Refuse,
    /// Take the offline coordinator's choice and mark the selection as a fallback.
    Fallback,
}

#[derive(Deserialize)]
struct Pick {
    agents: Vec<String>,
}

/// Asks a chat model to choose among the candidates, by id, from their specialisations.
///
/// The candidate list in the prompt is the authorised set; whatever the model answers is
/// checked against it by code. An unknown or unauthorised id is never passed on: it is an
/// [`Error::OutOfSet`] or, with [`OutOfSet::Fallback`], the offline choice.
#[derive(Clone, Debug)]
pub struct LlmCoordinator {
    model: Arc<dyn ChatModel>,
    out_of_set: OutOfSet,
    max_agents: usize,
    fallback: OfflineCoordinator,
}

impl LlmCoordinator {
    /// A model-backed coordinator choosing at most `max_agents` agents.
    pub fn new(model: Arc<dyn ChatModel>, max_agents: usize, out_of_set: OutOfSet) -> Self {
        LlmCoordinator {
            model,
            out_of_set,
            max_agents,
            fallback: OfflineCoordinator::new(SelectionConfig {
                max_agents,
                ..SelectionConfig::default()
            }),
        }
    }

    fn request(&self, query: &str, candidates: &[&Specialist]) -> ChatRequest {
        let mut listing = String::new();
        for candidate in candidates {
            listing.push_str(&format!(
                "- {}: {}\n",
                candidate.id, candidate.specialisation
            ));
        }
        ChatRequest::new(vec![
            Message::system(format!(
                "You route a user's question to specialist agents. Choose at most {} agent(s), \
                 only from the list given, by their id. Choose none if no agent fits.",
                self.max_agents
            )),
            Message::user(format!("Agents:\n{listing}\nQuestion: {query}")),
        ])
        .temperature(0.0)
    }

    fn schema() -> JsonSchema {
        JsonSchema {
            name: "agent_choice".into(),
            schema: serde_json::json!({
                "type": "object",
                "properties": {"agents": {"type": "array", "items": {"type": "string"}}},
                "required": ["agents"],
                "additionalProperties": false
            }),
            strict: true,
        }
    }
}

impl Coordinator for LlmCoordinator {
    fn select(&self, query: &str, candidates: &[&Specialist]) -> Result<Selection> {
        if candidates.is_empty() || self.max_agents == 0 {
            return Ok(Selection::default());
        }
        let (pick, _usage): (Pick, _) = complete_json(
            self.model.as_ref(),
            &self.request(query, candidates),
            &Self::schema(),
        )?;
        let mut chosen: Vec<AgentId> = Vec::new();
        let mut seen = BTreeSet::new();
        // At most `max_agents` distinct agents: a name repeated takes no place.
        for name in &pick.agents {
            if chosen.len() == self.max_agents {
                break;
            }
            let found = candidates
                .iter()
                .find(|c| c.id.as_str() == name.trim())
                .map(|c| c.id);
            match found {
                Some(agent) => {
                    if seen.insert(agent) {
                        chosen.push(agent);
                    }
                }
                None => {
                    return match self.out_of_set {
                        OutOfSet::Refuse => Err(Error::OutOfSet {
                            agent: name.chars().take(128).collect(),
                        }),
                        OutOfSet::Fallback => {
                            let mut selection = self.fallback.select(query, candidates)?;
                            selection.fell_back = true;
                            Ok(selection)
                        }
                    };
                }
            }
        }
        Ok(Selection {
            agents: chosen,
            fell_back: false,
        })
    }
}
