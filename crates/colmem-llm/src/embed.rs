//! The `Embedder` trait: a batch of texts in, one vector per text out, under a stable id.

use std::fmt;

use colmem_core::Embedding;

use crate::error::{Error, Result};

/// Turns texts into vectors for similarity search.
///
/// Every stored embedding carries the embedder's [`id`](Embedder::id): vectors from different
/// embedders are not comparable, so changing the embedder (or any parameter that changes its
/// vectors) changes the id and forces a re-index. Calls block, like [`ChatModel`](crate::ChatModel)'s.
pub trait Embedder: Send + Sync + fmt::Debug {
    /// A stable id naming the model and every parameter that changes its vectors.
    fn id(&self) -> &str;

    /// The length of every vector.
    fn dim(&self) -> usize;

    /// One vector of length [`dim`](Embedder::dim) per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;

    /// The embedding of one text, tagged with this embedder's id.
    fn embed_one(&self, text: &str) -> Result<Embedding> {
        let vector = self.embed(&[text])?.pop().ok_or_else(|| {
            Error::Inference(format!(
                "the embedder {} returned no vector for one text",
                self.id()
            ))
        })?;
        Ok(Embedding {
            embedder: self.id().to_owned(),
            vector,
        })
    }
}

/// Scales `vector` to unit length in place; an all-zero vector stays zero.
pub(crate) fn normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
}
