//! Model-backed implementations of the roles: each fills a prompt from `prompts/`,
//! asks for JSON through [`complete_json`] (a schema for servers that take one,
//! otherwise extraction and one repair round), and turns the answer into typed values,
//! refusing answers that parse but make no sense with [`Error::InvalidAnswer`].

use std::collections::BTreeSet;
use std::sync::Arc;

use colmem_core::{CardFields, CardRelation, CardSign};
use colmem_llm::{ChatModel, ChatRequest, JsonSchema, Message, complete_json, fill_prompt};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::card::{Card, CardDraft, content};
use crate::error::{Error, Result};
use crate::read::{Needs, TaskContext};
use crate::roles::{
    Admitter, Aggregator, Assessment, Merger, NeedsProfiler, Reflection, Reflector, RelationJudge,
};
use crate::text;
use crate::trajectory::Trajectory;

const REFLECT: &str = include_str!("../prompts/reflect.md");
const AGGREGATE: &str = include_str!("../prompts/aggregate.md");
const ADMIT: &str = include_str!("../prompts/admit.md");
const MERGE: &str = include_str!("../prompts/merge.md");
const RELATE: &str = include_str!("../prompts/relate.md");
const NEEDS: &str = include_str!("../prompts/needs.md");

fn ask<T: DeserializeOwned>(
    model: &dyn ChatModel,
    role: &'static str,
    prompt: String,
    schema: Value,
) -> Result<T> {
    let request = ChatRequest::new(vec![
        Message::system(format!(
            "You are the {role} role of a memory of strategy cards. Answer with JSON only."
        )),
        Message::user(prompt),
    ])
    .temperature(0.0);
    let schema = JsonSchema {
        name: format!("colmem_cards_{role}"),
        schema,
        strict: false,
    };
    complete_json::<T>(model, &request, &schema)
        .map(|(value, _usage)| value)
        .map_err(|source| Error::Model { role, source })
}

fn unit(role: &'static str, name: &str, x: f32) -> Result<f32> {
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(Error::InvalidAnswer {
            role,
            reason: format!("{name} {x} is outside [0, 1]"),
        })
    }
}

fn sections_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "task": {"type": "string"},
            "trigger": {"type": "string"},
            "applicability": {"type": "string"},
            "plan": {"type": "string"},
            "execution": {"type": "string"},
            "evaluation": {"type": "string"},
            "triggers": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["task", "trigger", "applicability", "plan", "execution", "evaluation", "triggers"]
    })
}

/// A card's sections as a model writes them.
#[derive(Clone, Debug, Deserialize)]
struct Sections {
    task: String,
    trigger: String,
    applicability: String,
    plan: String,
    execution: String,
    evaluation: String,
    #[serde(default)]
    triggers: Vec<String>,
}

impl Sections {
    fn into_fields(
        self,
        role: &'static str,
        sign: CardSign,
    ) -> Result<(CardFields, BTreeSet<String>)> {
        if self.execution.trim().is_empty() && self.plan.trim().is_empty() {
            return Err(Error::InvalidAnswer {
                role,
                reason: "the card has neither a plan nor an execution".to_owned(),
            });
        }
        // A card no task can find: nothing to retrieve it by.
        if self.task.trim().is_empty() || self.trigger.trim().is_empty() {
            return Err(Error::InvalidAnswer {
                role,
                reason: "the card has no task or no trigger".to_owned(),
            });
        }
        let mut triggers: BTreeSet<String> = self
            .triggers
            .iter()
            .flat_map(|t| text::keywords(t))
            .collect();
        if triggers.is_empty() {
            triggers = text::keywords(&format!("{} {}", self.trigger, self.task));
        }
        Ok((
            CardFields {
                task: self.task,
                trigger: self.trigger,
                applicability: self.applicability,
                plan: self.plan,
                execution: self.execution,
                evaluation: self.evaluation,
                sign,
            },
            triggers,
        ))
    }
}

/// Reflection by a chat model (`prompts/reflect.md`).
#[derive(Clone, Debug)]
pub struct LlmReflector {
    model: Arc<dyn ChatModel>,
}

impl LlmReflector {
    /// Reflects with `model`.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        LlmReflector { model }
    }
}

#[derive(Deserialize)]
struct ReflectAnswer {
    informative: bool,
    #[serde(default)]
    root_cause: String,
    #[serde(default)]
    wrong_behaviour: String,
    #[serde(default)]
    correction: String,
    #[serde(default)]
    lesson: String,
    card: Option<Sections>,
}

impl Reflector for LlmReflector {
    fn reflect(&self, failure: &Trajectory) -> Result<Option<Reflection>> {
        let outcome = &failure.outcome;
        // Uninformative by construction: no model call is worth making.
        if outcome.success || outcome.infrastructure_error || failure.steps.is_empty() {
            return Ok(None);
        }
        let conditions: Vec<&str> = failure.conditions.iter().map(String::as_str).collect();
        let prompt = fill_prompt(
            REFLECT,
            &[
                ("task", failure.task.clone()),
                ("conditions", conditions.join("; ")),
                ("transcript", failure.transcript()),
                ("score", format!("{:.2}", outcome.score)),
                ("feedback", outcome.feedback.clone()),
            ],
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "informative": {"type": "boolean"},
                "root_cause": {"type": "string"},
                "wrong_behaviour": {"type": "string"},
                "correction": {"type": "string"},
                "lesson": {"type": "string"},
                "card": sections_schema()
            },
            "required": ["informative"]
        });
        let answer: ReflectAnswer = ask(self.model.as_ref(), "reflect", prompt, schema)?;
        if !answer.informative {
            return Ok(None);
        }
        let Some(sections) = answer.card else {
            return Err(Error::InvalidAnswer {
                role: "reflect",
                reason: "an informative reflection without a card".to_owned(),
            });
        };
        let (fields, triggers) = sections.into_fields("reflect", CardSign::Negative)?;
        Ok(Some(Reflection {
            root_cause: answer.root_cause,
            wrong_behaviour: answer.wrong_behaviour,
            correction: answer.correction,
            lesson: answer.lesson,
            card: CardDraft {
                fields,
                triggers,
                sources: vec![failure.id.clone()],
                evidence: (1.0 - outcome.score).clamp(0.0, 1.0),
            },
        }))
    }
}

/// Aggregation by a chat model (`prompts/aggregate.md`).
#[derive(Clone, Debug)]
pub struct LlmAggregator {
    model: Arc<dyn ChatModel>,
}

impl LlmAggregator {
    /// Aggregates with `model`.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        LlmAggregator { model }
    }
}

#[derive(Deserialize)]
struct AggregateAnswer {
    cards: Vec<AggregateCard>,
}

#[derive(Deserialize)]
struct AggregateCard {
    #[serde(flatten)]
    sections: Sections,
    sources: Vec<String>,
}

impl Aggregator for LlmAggregator {
    fn aggregate(&self, successes: &[&Trajectory]) -> Result<Vec<CardDraft>> {
        let successes: Vec<&&Trajectory> = successes
            .iter()
            .filter(|t| t.outcome.success && !t.outcome.infrastructure_error)
            .collect();
        if successes.is_empty() {
            return Ok(Vec::new());
        }
        let listing: Vec<String> = successes
            .iter()
            .map(|t| {
                format!(
                    "- id {}; task: {}; score {:.2}\n{}",
                    t.id,
                    t.task,
                    t.outcome.score,
                    t.transcript()
                )
            })
            .collect();
        let mut schema_card = sections_schema();
        schema_card["properties"]["sources"] =
            json!({"type": "array", "items": {"type": "string"}});
        schema_card["required"] = json!([
            "task",
            "trigger",
            "applicability",
            "plan",
            "execution",
            "evaluation",
            "triggers",
            "sources"
        ]);
        let schema = json!({
            "type": "object",
            "properties": {"cards": {"type": "array", "items": schema_card}},
            "required": ["cards"]
        });
        let prompt = fill_prompt(AGGREGATE, &[("trajectories", listing.join("\n"))]);
        let answer: AggregateAnswer = ask(self.model.as_ref(), "aggregate", prompt, schema)?;
        let mut drafts = Vec::new();
        for card in answer.cards {
            let members: Vec<&&&Trajectory> = successes
                .iter()
                .filter(|t| card.sources.contains(&t.id))
                .collect();
            if members.is_empty() || members.len() != card.sources.len() {
                return Err(Error::InvalidAnswer {
                    role: "aggregate",
                    reason: format!(
                        "sources {:?} are not all ids of the given trajectories",
                        card.sources
                    ),
                });
            }
            let evidence =
                members.iter().map(|t| t.outcome.score).sum::<f32>() / members.len() as f32;
            let (fields, triggers) = card.sections.into_fields("aggregate", CardSign::Positive)?;
            drafts.push(CardDraft {
                fields,
                triggers,
                sources: card.sources,
                evidence: evidence.clamp(0.0, 1.0),
            });
        }
        Ok(drafts)
    }
}

/// Admission terms by a chat model (`prompts/admit.md`).
#[derive(Clone, Debug)]
pub struct LlmAdmitter {
    model: Arc<dyn ChatModel>,
}

impl LlmAdmitter {
    /// Rates with `model`.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        LlmAdmitter { model }
    }
}

#[derive(Deserialize)]
struct AdmitAnswer {
    coverage: f32,
    consistency: f32,
    evidence: f32,
    utility: f32,
}

impl Admitter for LlmAdmitter {
    fn assess(&self, draft: &CardDraft) -> Result<Assessment> {
        let prompt = fill_prompt(
            ADMIT,
            &[
                ("card", content(&draft.fields)),
                ("evidence", format!("{:.2}", draft.evidence)),
            ],
        );
        let number = json!({"type": "number", "minimum": 0, "maximum": 1});
        let schema = json!({
            "type": "object",
            "properties": {"coverage": number, "consistency": number, "evidence": number, "utility": number},
            "required": ["coverage", "consistency", "evidence", "utility"]
        });
        let a: AdmitAnswer = ask(self.model.as_ref(), "admit", prompt, schema)?;
        let reliability = (unit("admit", "coverage", a.coverage)?
            + unit("admit", "consistency", a.consistency)?
            + unit("admit", "evidence", a.evidence)?)
            / 3.0;
        Ok(Assessment {
            reliability,
            utility: unit("admit", "utility", a.utility)?,
        })
    }
}

/// Merge by a chat model (`prompts/merge.md`); the bank clips the result to its bounds.
#[derive(Clone, Debug)]
pub struct LlmMerger {
    model: Arc<dyn ChatModel>,
}

impl LlmMerger {
    /// Merges with `model`.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        LlmMerger { model }
    }
}

impl Merger for LlmMerger {
    fn merge(&self, existing: &Card, candidate: &CardDraft) -> Result<CardDraft> {
        let prompt = fill_prompt(
            MERGE,
            &[
                ("existing", content(&existing.fields)),
                ("candidate", content(&candidate.fields)),
            ],
        );
        let sections: Sections = ask(self.model.as_ref(), "merge", prompt, sections_schema())?;
        let (fields, triggers) = sections.into_fields("merge", existing.fields.sign)?;
        Ok(crate::roles::merged(existing, candidate, fields, triggers))
    }
}

/// The relation judge as a chat model (`prompts/relate.md`).
#[derive(Clone, Debug)]
pub struct LlmRelationJudge {
    model: Arc<dyn ChatModel>,
}

impl LlmRelationJudge {
    /// Judges with `model`.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        LlmRelationJudge { model }
    }
}

#[derive(Deserialize)]
struct RelateAnswer {
    relation: String,
    #[serde(default)]
    precondition: Option<String>,
    /// Required by the schema; `None` is refused unless the relation is "none".
    #[serde(default)]
    weight: Option<f32>,
}

impl RelationJudge for LlmRelationJudge {
    fn relate(
        &self,
        from: &Card,
        to: &Card,
        similarity: f32,
    ) -> Result<Option<(CardRelation, f32)>> {
        let prompt = fill_prompt(
            RELATE,
            &[
                ("from", content(&from.fields)),
                ("to", content(&to.fields)),
                ("similarity", format!("{similarity:.2}")),
            ],
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "relation": {"type": "string", "enum": ["none", "supports", "constrains", "satisfies", "conflicts"]},
                "precondition": {"type": "string"},
                "weight": {"type": "number", "minimum": 0, "maximum": 1}
            },
            "required": ["relation", "weight"]
        });
        let a: RelateAnswer = ask(self.model.as_ref(), "relate", prompt, schema)?;
        if a.relation == "none" {
            return Ok(None);
        }
        let weight = a.weight.ok_or_else(|| Error::InvalidAnswer {
            role: "relate",
            reason: format!("the relation {:?} has no weight", a.relation),
        })?;
        let weight = unit("relate", "weight", weight)?;
        let relation = match a.relation.as_str() {
            "supports" => CardRelation::Supports,
            "satisfies" => CardRelation::Satisfies,
            "conflicts" => CardRelation::Conflicts,
            "constrains" => match a.precondition.filter(|p| !p.trim().is_empty()) {
                Some(p) => CardRelation::Constrains {
                    precondition: p.trim().to_lowercase(),
                },
                None => {
                    return Err(Error::InvalidAnswer {
                        role: "relate",
                        reason: "a constrains relation without a precondition".to_owned(),
                    });
                }
            },
            other => {
                return Err(Error::InvalidAnswer {
                    role: "relate",
                    reason: format!("unknown relation {other:?}"),
                });
            }
        };
        Ok(Some((relation, weight)))
    }
}

/// The needs profiler as a chat model (`prompts/needs.md`).
#[derive(Clone, Debug)]
pub struct LlmNeedsProfiler {
    model: Arc<dyn ChatModel>,
}

impl LlmNeedsProfiler {
    /// Profiles with `model`.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        LlmNeedsProfiler { model }
    }
}

#[derive(Deserialize)]
struct NeedsAnswer {
    applicability: f32,
    plan: f32,
    execution: f32,
    evaluation: f32,
}

impl NeedsProfiler for LlmNeedsProfiler {
    fn profile(&self, task: &TaskContext) -> Result<Needs> {
        let conditions: Vec<&str> = task.live.iter().map(String::as_str).collect();
        let prompt = fill_prompt(
            NEEDS,
            &[
                ("task", task.task.clone()),
                ("conditions", conditions.join("; ")),
            ],
        );
        let number = json!({"type": "number", "minimum": 0, "maximum": 1});
        let schema = json!({
            "type": "object",
            "properties": {"applicability": number, "plan": number, "execution": number, "evaluation": number},
            "required": ["applicability", "plan", "execution", "evaluation"]
        });
        let a: NeedsAnswer = ask(self.model.as_ref(), "needs", prompt, schema)?;
        Ok(Needs {
            applicability: unit("needs", "applicability", a.applicability)?,
            plan: unit("needs", "plan", a.plan)?,
            execution: unit("needs", "execution", a.execution)?,
            evaluation: unit("needs", "evaluation", a.evaluation)?,
        })
    }
}

/// Every role backed by one chat model.
pub fn roles(model: Arc<dyn ChatModel>) -> crate::Roles {
    crate::Roles {
        reflector: Arc::new(LlmReflector::new(model.clone())),
        aggregator: Arc::new(LlmAggregator::new(model.clone())),
        admitter: Arc::new(LlmAdmitter::new(model.clone())),
        merger: Arc::new(LlmMerger::new(model.clone())),
        judge: Arc::new(LlmRelationJudge::new(model.clone())),
        profiler: Arc::new(LlmNeedsProfiler::new(model)),
    }
}
