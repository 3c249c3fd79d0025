//! Evaluation for colmem.
//!
//! - [`metrics`]: token F1, BLEU-1, exact match, recall@k (fraction, any, all), NDCG@k.
//! - [`reward`]: CoMAM's local rewards (extraction coverage, retrieval, profile rubric)
//!   and the global reward of a correct answer.
//! - [`credit`]: NDCG credit assignment over a group of trajectories.
//! - [`trajectory`]: MDP trajectories and their JSON-lines export for a GRPO trainer.
//! - [`locomo`]: the LoCoMo loader, which keeps the ingestible dialogue apart from the gold data.
//! - [`locomo_score`]: LoCoMo's official answer scorer (stemmed token F1 by question category).
//! - [`porter`]: NLTK's Porter stemmer, which that scorer uses.
//!
//! This crate depends only on `colmem-core` and `colmem-llm`; xtask wires it to the
//! memory pipelines.

pub mod credit;
mod error;
pub mod locomo;
pub mod locomo_score;
pub mod metrics;
pub mod porter;
pub mod reward;
pub mod trajectory;

pub use error::{EvalError, Result};
