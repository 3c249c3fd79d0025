//! The conformance suites every `Embedder` and `ChatModel` implementation runs.

use colmem_llm::{ChatModel, ChatRequest, Embedder, Message};

const TEXTS: [&str; 4] = [
    "Alice moved to Berlin in March.",
    "Bob prefers tea over coffee.",
    "The deployment failed because the disk was full.",
    "ünïcödé and emoji 🚀 are text too",
];

/// What every embedder must do: shape, order, determinism, batch-independence, a stable id.
pub fn check_embedder(e: &dyn Embedder) {
    let id = e.id().to_owned();
    assert!(!id.is_empty(), "an embedder needs an id");
    assert!(e.dim() > 0);
    assert!(e.embed(&[]).unwrap().is_empty(), "no texts, no vectors");

    let batch = e.embed(&TEXTS).unwrap();
    assert_eq!(batch.len(), TEXTS.len());
    for v in &batch {
        assert_eq!(v.len(), e.dim());
        assert!(v.iter().all(|x| x.is_finite()));
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!(
            (norm - 1.0).abs() < 1e-3,
            "vectors are unit length, got {norm}"
        );
    }
    // One at a time, in reverse order: the same vectors.
    for (text, expected) in TEXTS.iter().zip(&batch).rev() {
        let one = e.embed_one(text).unwrap();
        assert_eq!(one.embedder, id);
        let diff = one
            .vector
            .iter()
            .zip(expected)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(
            diff < 1e-5,
            "{text:?} differs by {diff} alone and in a batch"
        );
    }
    // Distinct texts get distinct vectors.
    assert_ne!(batch[0], batch[1]);
    assert_eq!(e.id(), id, "the id is stable");
}

/// What every chat model must do: answer a request with text, under a stable id.
pub fn check_chat(model: &dyn ChatModel) {
    let id = model.id().to_owned();
    assert!(!id.is_empty(), "a chat model needs an id");
    let request = ChatRequest::new(vec![Message::user("Say something.")]).max_tokens(8);
    let response = model.complete(&request).unwrap();
    assert!(!response.text.is_empty());
    assert_eq!(model.id(), id, "the id is stable");
    // Usable behind Arc<dyn ChatModel> from several threads.
    let shared: std::sync::Arc<&dyn ChatModel> = std::sync::Arc::new(model);
    std::thread::scope(|s| {
        s.spawn(|| shared.complete(&request).unwrap());
    });
}
