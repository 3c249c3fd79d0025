//! Resources: the tools a specialist agent calls when memory has no confident answer —
//! a local BM25 knowledge base over a document set, or a deterministic function.

use std::collections::BTreeSet;
use std::fmt;

use colmem_core::ResourceId;
use colmem_index::{Admit, LexicalIndex, MemoryBm25, analyze};

use crate::error::{Error, Result};

/// What a resource answered.
#[derive(Clone, PartialEq, Debug)]
pub struct ToolAnswer {
    /// The answer itself (an entity, a code, a number).
    pub answer: String,
    /// The text the answer was drawn from (a document, a computation).
    pub evidence: String,
    /// How well the evidence matches the query, in the resource's own units.
    pub score: f32,
}

/// A callable tool. Calls are made only by the collaboration loop, and only when the
/// calling agent may use the resource at that moment; the resource itself knows nothing of
/// access.
pub trait Resource: Send + Sync + fmt::Debug {
    /// The resource's id in the access graph.
    fn id(&self) -> ResourceId;

    /// What the resource knows about, in words: agents route a query to the usable resource
    /// whose topic matches it best.
    fn topic(&self) -> &str;

    /// Answers `query`, or `None` when the resource has nothing that fits.
    fn call(&self, query: &str) -> Result<Option<ToolAnswer>>;
}

/// One document of a knowledge base: its text and the answer it holds.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Document {
    /// The text searched by BM25.
    pub text: String,
    /// The answer a query matching this document gets.
    pub answer: String,
}

/// A local knowledge base: BM25 (colmem-index's in-memory lexical backend) over a set of
/// documents. A query gets the answer of the best-matching document when that document
/// covers enough of the query's terms.
#[derive(Debug)]
pub struct KnowledgeBase {
    id: ResourceId,
    topic: String,
    documents: Vec<Document>,
    index: MemoryBm25,
    min_coverage: f32,
}

impl KnowledgeBase {
    /// The fraction of a query's analysed terms a document must contain to answer it.
    pub const DEFAULT_MIN_COVERAGE: f32 = 0.5;

    /// A knowledge base over `documents`, routed to by `topic`.
    pub fn new(id: ResourceId, topic: impl Into<String>, documents: Vec<Document>) -> Result<Self> {
        let index = MemoryBm25::new();
        for (i, document) in documents.iter().enumerate() {
            index.insert(i as u64, &document.text)?;
        }
        index.commit()?;
        Ok(KnowledgeBase {
            id,
            topic: topic.into(),
            documents,
            index,
            min_coverage: Self::DEFAULT_MIN_COVERAGE,
        })
    }

    /// Sets the fraction of query terms the best document must contain (0 to 1).
    pub fn with_min_coverage(mut self, min_coverage: f32) -> Result<Self> {
        if !(0.0..=1.0).contains(&min_coverage) {
            return Err(Error::InvalidInput(format!(
                "a knowledge base's min_coverage must lie in 0..=1, got {min_coverage}"
            )));
        }
        self.min_coverage = min_coverage;
        Ok(self)
    }

    /// The documents.
    pub fn documents(&self) -> &[Document] {
        &self.documents
    }
}

/// Words that frame a question rather than say what it is about; [`coverage`] ignores them.
pub(crate) const QUESTION_WORDS: &[&str] = &[
    "what", "which", "who", "whom", "whose", "when", "where", "how", "many", "much", "does", "do",
    "did", "have", "has", "tell", "me", "look", "up", "please", "give", "show", "find", "file",
    "i", "need", "know", "can", "you",
];

/// The fraction of `query`'s distinct analysed content terms (question words left out) that
/// occur in `text`.
pub fn coverage(query: &str, text: &str) -> f32 {
    let terms: BTreeSet<String> = analyze(query)
        .into_iter()
        .filter(|t| !QUESTION_WORDS.contains(&t.as_str()))
        .collect();
    if terms.is_empty() {
        return 0.0;
    }
    let present: BTreeSet<String> = analyze(text).into_iter().collect();
    terms.iter().filter(|t| present.contains(*t)).count() as f32 / terms.len() as f32
}

impl Resource for KnowledgeBase {
    fn id(&self) -> ResourceId {
        self.id
    }

    fn topic(&self) -> &str {
        &self.topic
    }

    fn call(&self, query: &str) -> Result<Option<ToolAnswer>> {
        let hits = self.index.search(query, 1, &Admit::All)?;
        let Some(best) = hits.first() else {
            return Ok(None);
        };
        let Some(document) = usize::try_from(best.id)
            .ok()
            .and_then(|i| self.documents.get(i))
        else {
            return Err(Error::Resource {
                resource: self.id,
                detail: format!("its index returned document {} it does not hold", best.id),
            });
        };
        if coverage(query, &document.text) < self.min_coverage {
            return Ok(None);
        }
        Ok(Some(ToolAnswer {
            answer: document.answer.clone(),
            evidence: document.text.clone(),
            score: best.score,
        }))
    }
}

/// The function behind a [`Computation`].
type ComputeFn = dyn Fn(&str) -> Option<String> + Send + Sync;

/// A deterministic function as a resource (a calculator, a strategic computation): the same
/// query always gets the same answer.
pub struct Computation {
    id: ResourceId,
    topic: String,
    function: Box<ComputeFn>,
}

impl fmt::Debug for Computation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Computation")
            .field("id", &self.id)
            .field("topic", &self.topic)
            .finish_non_exhaustive()
    }
}

impl Computation {
    /// A resource that answers with `function(query)`.
    pub fn new(
        id: ResourceId,
        topic: impl Into<String>,
        function: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        Computation {
            id,
            topic: topic.into(),
            function: Box::new(function),
        }
    }
}

impl Resource for Computation {
    fn id(&self) -> ResourceId {
        self.id
    }

    fn topic(&self) -> &str {
        &self.topic
    }

    fn call(&self, query: &str) -> Result<Option<ToolAnswer>> {
        // The evidence is the question itself: a paraphrase with the same inputs matches it.
        Ok((self.function)(query).map(|answer| ToolAnswer {
            evidence: format!("{} = {answer}", query.trim()),
            answer,
            score: 1.0,
        }))
    }
}

/// The numbers in `text`, in order (digits with an optional decimal point; a leading `-`
/// makes them negative).
pub fn numbers(text: &str) -> Vec<f64> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut flush = |current: &mut String| {
        if current.chars().any(|c| c.is_ascii_digit())
            && let Ok(value) = current.trim_end_matches('.').parse::<f64>()
        {
            out.push(value);
        }
        current.clear();
    };
    for c in text.chars() {
        let starts_negative = c == '-' && current.is_empty();
        if c.is_ascii_digit() || (c == '.' && !current.is_empty()) || starts_negative {
            current.push(c);
        } else {
            flush(&mut current);
        }
    }
    flush(&mut current);
    out
}

/// The break-even volume `ceil(fixed cost / unit margin)` for a query that names a fixed
/// cost and a unit margin, in that order — the strategic computation of the scenarios.
pub fn break_even(query: &str) -> Option<String> {
    let lower = query.to_lowercase();
    if !(lower.contains("fixed cost") && lower.contains("margin")) {
        return None;
    }
    let values = numbers(query);
    let [fixed, margin] = values.as_slice() else {
        return None;
    };
    if !(*margin > 0.0 && *fixed >= 0.0) {
        return None;
    }
    // A figure too large for a number ("1" and 310 zeros) has no break-even to tell.
    let volume = (fixed / margin).ceil();
    volume.is_finite().then(|| format!("{volume}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn kb() -> KnowledgeBase {
        let docs = vec![
            Document {
                text: "The credit rating of Valmora Holdings is recorded as AA.".into(),
                answer: "AA".into(),
            },
            Document {
                text: "The credit rating of Tessel Group is recorded as BB.".into(),
                answer: "BB".into(),
            },
        ];
        KnowledgeBase::new(ResourceId::new("finance-kb").unwrap(), "credit", docs).unwrap()
    }

    #[test]
    fn a_knowledge_base_answers_from_its_best_document() {
        let kb = kb();
        let answer = kb
            .call("which credit rating does Tessel Group have?")
            .unwrap()
            .unwrap();
        assert_eq!(answer.answer, "BB");
        assert!(answer.evidence.contains("Tessel"));
    }

    #[test]
    fn a_knowledge_base_declines_what_it_does_not_cover() {
        let kb = kb();
        assert_eq!(kb.call("warehouse capacity of Orvane port").unwrap(), None);
        assert_eq!(kb.call("").unwrap(), None);
    }

    #[test]
    fn break_even_is_fixed_cost_over_margin_rounded_up() {
        assert_eq!(
            break_even("break-even volume for fixed cost 1200 and unit margin 35").as_deref(),
            Some("35")
        );
        assert_eq!(break_even("fixed cost 1200, margin 0"), None);
        assert_eq!(break_even("what is the weather"), None);
        assert_eq!(numbers("a -3 b 4.5. c"), vec![-3.0, 4.5]);
    }
}
