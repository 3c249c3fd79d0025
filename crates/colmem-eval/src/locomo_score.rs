//! LoCoMo's official answer scorer, so that colmem's F1 can be compared with published
//! LoCoMo numbers.
//!
//! This is a port of `normalize_answer`, `f1_score`, `f1` and the per-category choice
//! in `eval_question_answering` of `task_eval/evaluation.py` in the LoCoMo repository
//! (snap-research/locomo). It differs from the SQuAD-style [`crate::metrics::token_f1`]:
//! tokens are Porter-stemmed (NLTK's stemmer, ported in [`crate::porter`]), "and" is
//! dropped along with the articles, two empty answers score 0 rather than 1, and a
//! multi-hop answer is scored sub-answer by sub-answer.
//!
//! Python's quirks are kept, because they change scores:
//! - `string.punctuation` is ASCII only, so "’" (a curly apostrophe), "—" or "«" stay
//!   inside a token ("don’t" is one token, "don't" is "dont").
//! - Punctuation is removed before the articles, so "a.m." becomes the word "am" and
//!   keeps its "a"; the article pattern `\b(a|an|the|and)\b` is matched with Python's
//!   Unicode `\b`, so "the" in "the’s" is dropped, leaving "’s", and "é" is part of a
//!   word as "e" is.
//! - [`normalize`] deletes commas before anything else ("1,000" → "1000"), while the
//!   multi-hop [`multi_answer_f1`] first splits on them ("1,000" is "1" and "000").
//! - A category-3 gold answer is cut at its first ";" before scoring.

use crate::metrics::bag_f1;
use crate::porter;

/// The LoCoMo F1 of `prediction` against the `gold` answer of a question of
/// `category`, as `eval_question_answering` computes it: [`multi_answer_f1`] for
/// category 1 (multi-hop); [`stemmed_f1`] for categories 2 (temporal), 3 (open-domain,
/// with the gold answer cut at its first ";") and 4 (single-hop).
///
/// `None` for any other category. LoCoMo scores category 5 (adversarial) by looking
/// for a refusal in the prediction, not by F1.
///
/// `gold` is Python's `str(answer)`: a numeric answer such as `2022` is passed as
/// `"2022"`.
pub fn locomo_f1(category: u8, prediction: &str, gold: &str) -> Option<f64> {
    match category {
        1 => Some(multi_answer_f1(prediction, gold)),
        2 | 4 => Some(stemmed_f1(prediction, gold)),
        3 => {
            let first = gold.split_once(';').map_or(gold, |(first, _)| first);
            Some(stemmed_f1(prediction, python_strip(first)))
        }
        _ => None,
    }
}

/// LoCoMo's `normalize_answer`: deletes commas, lowercases, deletes ASCII punctuation,
/// replaces the words "a", "an", "the" and "and" with a space, and collapses
/// whitespace.
pub fn normalize(text: &str) -> String {
    let lowered = text.replace(',', "").to_lowercase();
    let unpunctuated: String = lowered
        .chars()
        .filter(|c| !c.is_ascii_punctuation())
        .collect();
    python_split(&without_articles(&unpunctuated)).join(" ")
}

/// LoCoMo's `f1_score`: token F1 between the stemmed tokens of the normalised
/// prediction and gold answer (a bag of tokens, counted with multiplicity). 0 when they
/// share no token, which includes either or both being empty.
pub fn stemmed_f1(prediction: &str, gold: &str) -> f64 {
    bag_f1(&stemmed_tokens(prediction), &stemmed_tokens(gold))
}

/// LoCoMo's `f1` for multi-hop answers: both answers are split on commas into
/// sub-answers; each gold sub-answer takes the best [`stemmed_f1`] of any predicted
/// one, and the result is the mean over the gold sub-answers.
///
/// The mean is a plain sum divided by the count; NumPy's `np.mean` sums eight or more
/// values pairwise, which may differ in the last bits.
pub fn multi_answer_f1(prediction: &str, gold: &str) -> f64 {
    let predictions: Vec<&str> = prediction.split(',').map(python_strip).collect();
    let golds: Vec<&str> = gold.split(',').map(python_strip).collect();
    let best: Vec<f64> = golds
        .iter()
        .map(|g| {
            predictions
                .iter()
                .map(|p| stemmed_f1(p, g))
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .collect();
    // `str::split` yields at least one piece, so neither list is empty.
    best.iter().sum::<f64>() / best.len() as f64
}

fn stemmed_tokens(text: &str) -> Vec<String> {
    python_split(&normalize(text))
        .into_iter()
        .map(porter::stem)
        .collect()
}

/// `re.sub(r'\b(a|an|the|and)\b', ' ', text)`: a match is a whole run of word
/// characters, so each run that is one of the four words becomes a space.
fn without_articles(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let word_run = is_word_char(c);
        let end = rest
            .find(|c: char| is_word_char(c) != word_run)
            .unwrap_or(rest.len());
        let (run, tail) = rest.split_at(end);
        if word_run && matches!(run, "a" | "an" | "the" | "and") {
            out.push(' ');
        } else {
            out.push_str(run);
        }
        rest = tail;
    }
    out
}

/// Python's `\w` on `str`: a letter, a digit or another numeric character, or "_".
/// Rust's `is_alphanumeric` also accepts the few combining marks that are
/// `Other_Alphabetic` (Indic vowel signs, for instance), which Python does not; an
/// article would have to touch one for the results to differ.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Python's `str.isspace`, which adds the separators U+001C to U+001F to Unicode's
/// `White_Space`.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.split()` with no argument.
fn python_split(text: &str) -> Vec<&str> {
    text.split(is_python_space)
        .filter(|piece| !piece.is_empty())
        .collect()
}

/// Python's `str.strip()` with no argument.
fn python_strip(text: &str) -> &str {
    text.trim_matches(is_python_space)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_keeps_python_quirks() {
        assert_eq!(normalize("The cat, and a dog!"), "cat dog");
        assert_eq!(normalize("1,000 Dollars"), "1000 dollars");
        assert_eq!(normalize("don't don’t"), "dont don’t");
        assert_eq!(normalize("the’s"), "’s");
        // U+001F separates words for Python, and "a" is then an article.
        assert_eq!(normalize("a\u{1f}b"), "b");
        assert_eq!(normalize(""), "");
    }

    #[test]
    fn category_five_is_not_scored() {
        assert_eq!(locomo_f1(5, "no information available", "x"), None);
        assert_eq!(locomo_f1(0, "x", "x"), None);
    }
}
