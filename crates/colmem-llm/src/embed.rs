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

    /// [`embed`](Embedder::embed), with its contract checked: one vector per text, each
    /// of length [`dim`](Embedder::dim). A server or a cassette that breaks it is an
    /// error here, not an index out of bounds (or a silent zero) further on.
    fn embed_checked(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let vectors = self.embed(texts)?;
        if vectors.len() != texts.len() {
            return Err(Error::Inference(format!(
                "the embedder {} returned {} vectors for {} texts",
                self.id(),
                vectors.len(),
                texts.len()
            )));
        }
        if let Some(v) = vectors.iter().find(|v| v.len() != self.dim()) {
            return Err(Error::Inference(format!(
                "the embedder {} returned a vector of length {}, not {}",
                self.id(),
                v.len(),
                self.dim()
            )));
        }
        Ok(vectors)
    }

    /// The embedding of one text, tagged with this embedder's id.
    fn embed_one(&self, text: &str) -> Result<Embedding> {
        let vector = self.embed_checked(&[text])?.pop().ok_or_else(|| {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Returns `count` vectors of length `len`, whatever it is asked.
    #[derive(Debug)]
    struct Broken {
        count: usize,
        len: usize,
    }

    impl Embedder for Broken {
        fn id(&self) -> &str {
            "broken"
        }
        fn dim(&self) -> usize {
            4
        }
        fn embed(&self, _texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            Ok(vec![vec![0.5; self.len]; self.count])
        }
    }

    #[test]
    fn a_broken_contract_is_an_error_not_a_panic_further_on() {
        let texts = ["a", "b"];
        let short = Broken { count: 1, len: 4 }.embed_checked(&texts);
        assert!(
            short
                .unwrap_err()
                .to_string()
                .contains("1 vectors for 2 texts")
        );
        let wide = Broken { count: 2, len: 5 }.embed_checked(&texts);
        assert!(wide.unwrap_err().to_string().contains("length 5, not 4"));
        assert!(Broken { count: 0, len: 4 }.embed_one("a").is_err());
        assert_eq!(
            Broken { count: 2, len: 4 }
                .embed_checked(&texts)
                .unwrap()
                .len(),
            2
        );
    }
}
