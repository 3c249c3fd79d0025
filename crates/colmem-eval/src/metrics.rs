//! Answer and retrieval metrics: token F1, BLEU-1, exact match, recall@k and NDCG@k.
//!
//! Answers are compared after SQuAD-style normalisation: lowercase, punctuation
//! removed, the articles "a", "an" and "the" dropped, whitespace collapsed.

use std::collections::HashMap;
use std::hash::Hash;

/// Lowercases, deletes punctuation ("don't" → "dont", as SQuAD's script does: a
/// possessive stays one token), drops the articles and collapses whitespace.
pub fn normalize_answer(text: &str) -> String {
    let lowered: String = text
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace())
        .collect();
    lowered
        .split_whitespace()
        .filter(|w| !matches!(*w, "a" | "an" | "the"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn tokens(text: &str) -> Vec<String> {
    normalize_answer(text)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

fn counts(tokens: &[String]) -> HashMap<&str, usize> {
    let mut map = HashMap::new();
    for t in tokens {
        *map.entry(t.as_str()).or_insert(0) += 1;
    }
    map
}

/// Tokens shared by the two bags, counted with multiplicity.
fn overlap(prediction: &[String], gold: &[String]) -> usize {
    let gold = counts(gold);
    counts(prediction)
        .iter()
        .map(|(t, n)| (*n).min(gold.get(t).copied().unwrap_or(0)))
        .sum()
}

/// Token-level F1 between a predicted and a gold answer. Two empty answers score 1;
/// one empty answer scores 0.
pub fn token_f1(prediction: &str, gold: &str) -> f64 {
    let (p, g) = (tokens(prediction), tokens(gold));
    if p.is_empty() || g.is_empty() {
        return if p.is_empty() && g.is_empty() {
            1.0
        } else {
            0.0
        };
    }
    bag_f1(&p, &g)
}

/// F1 of two bags of tokens, counted with multiplicity: 0 when they share none.
pub(crate) fn bag_f1(prediction: &[String], gold: &[String]) -> f64 {
    let common = overlap(prediction, gold);
    if common == 0 {
        return 0.0;
    }
    let precision = common as f64 / prediction.len() as f64;
    let recall = common as f64 / gold.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// 1 when the normalised answers are equal, else 0.
pub fn exact_match(prediction: &str, gold: &str) -> f64 {
    if normalize_answer(prediction) == normalize_answer(gold) {
        1.0
    } else {
        0.0
    }
}

/// BLEU-1: clipped unigram precision times the brevity penalty `exp(1 − r/c)` when
/// the prediction (length `c`) is shorter than the reference (length `r`).
pub fn bleu1(prediction: &str, gold: &str) -> f64 {
    let (p, g) = (tokens(prediction), tokens(gold));
    if p.is_empty() || g.is_empty() {
        return 0.0;
    }
    let precision = overlap(&p, &g) as f64 / p.len() as f64;
    let (c, r) = (p.len() as f64, g.len() as f64);
    let brevity = if c > r { 1.0 } else { (1.0 - r / c).exp() };
    brevity * precision
}

/// Recall of the relevant items within the first `k` of a ranking.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Recall {
    /// Share of the relevant items found: |relevant ∩ top-k| / |relevant|.
    pub fraction: f64,
    /// 1 if any relevant item is in the top k (recall_any).
    pub any: f64,
    /// 1 if every relevant item is in the top k (recall_all).
    pub all: f64,
}

/// Recall@k of `ranked` against `relevant` (duplicates in either count once).
/// `None` when there is nothing relevant: recall is undefined then.
pub fn recall_at_k<T: Eq + Hash>(ranked: &[T], relevant: &[T], k: usize) -> Option<Recall> {
    let relevant: std::collections::HashSet<&T> = relevant.iter().collect();
    if relevant.is_empty() {
        return None;
    }
    let top: std::collections::HashSet<&T> = ranked.iter().take(k).collect();
    let found = relevant.iter().filter(|r| top.contains(*r)).count();
    Some(Recall {
        fraction: found as f64 / relevant.len() as f64,
        any: if found > 0 { 1.0 } else { 0.0 },
        all: if found == relevant.len() { 1.0 } else { 0.0 },
    })
}

fn discount(position: usize) -> f64 {
    1.0 / ((position + 2) as f64).log2()
}

/// NDCG@k of a ranking given the gains of its items in ranked order (linear gain,
/// discount `1/log2(i+2)`). 0 when no item has a positive gain.
pub fn ndcg_at_k(gains: &[f64], k: usize) -> f64 {
    let dcg: f64 = gains
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, g)| g * discount(i))
        .sum();
    normalise(dcg, gains.iter().copied(), k)
}

/// NDCG@k of ranking `(score, gain)` items by score (higher first), with ties in the
/// scores handled fairly: tied items share the average discount of the positions they
/// occupy (McSherry and Najork), so no tie-break order favours them.
pub fn ndcg_by_scores(items: &[(f64, f64)], k: usize) -> f64 {
    let mut order: Vec<(f64, f64)> = items.to_vec();
    order.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut dcg = 0.0;
    let mut start = 0;
    while start < order.len() {
        let end = start
            + order[start..]
                .iter()
                .take_while(|x| x.0 == order[start].0)
                .count();
        let discounts: f64 = (start..end)
            .map(|p| if p < k { discount(p) } else { 0.0 })
            .sum();
        let mean_discount = discounts / (end - start) as f64;
        dcg += order[start..end].iter().map(|x| x.1).sum::<f64>() * mean_discount;
        start = end;
    }
    normalise(dcg, items.iter().map(|x| x.1), k)
}

/// `dcg` divided by the DCG@k of the ideal ordering of `gains`; 0 when that is 0.
fn normalise(dcg: f64, gains: impl Iterator<Item = f64>, k: usize) -> f64 {
    let mut ideal: Vec<f64> = gains.collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, g)| g * discount(i))
        .sum();
    if idcg > 0.0 { dcg / idcg } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn normalisation() {
        assert_eq!(normalize_answer("The  Cat, sat!"), "cat sat");
        assert_eq!(normalize_answer("An apple a day"), "apple day");
        assert_eq!(normalize_answer("7 May 2023"), "7 may 2023");
        // Punctuation goes, and leaves no token behind: "Melanie's" is one word.
        assert_eq!(
            normalize_answer("Melanie's K-pop, don't"),
            "melanies kpop dont"
        );
        assert!(close(token_f1("Melanie's", "melanies"), 1.0));
    }

    #[test]
    fn token_f1_hand_computed() {
        // pred: [cat, sat, on, mat]; gold: [cat, on, mat, today] → common 3; p = 3/4, r = 3/4.
        assert!(close(
            token_f1("the cat sat on the mat", "cat on mat today"),
            0.75
        ));
        // pred: [x, x, y]; gold: [x, y, y] → common min(2,1)+min(1,2) = 2; p = 2/3, r = 2/3.
        assert!(close(token_f1("x x y", "x y y"), 2.0 / 3.0));
        assert!(close(token_f1("", ""), 1.0));
        assert!(close(token_f1("something", ""), 0.0));
        assert!(close(token_f1("dog", "cat"), 0.0));
    }

    #[test]
    fn exact_match_hand_computed() {
        assert!(close(exact_match("The Eiffel Tower.", "eiffel tower"), 1.0));
        assert!(close(exact_match("Eiffel", "eiffel tower"), 0.0));
    }

    #[test]
    fn bleu1_hand_computed() {
        // pred [cat, sat] (c=2), gold [cat, sat, down] (r=3): precision 1, BP = exp(1 - 3/2).
        assert!(close(
            bleu1("cat sat", "cat sat down"),
            (1.0f64 - 1.5).exp()
        ));
        // pred [x, x, x, y] (c=4) vs gold [x, y] (r=2): clipped 1+1 = 2 → 2/4, no penalty.
        assert!(close(bleu1("x x x y", "x y"), 0.5));
        assert!(close(bleu1("", "x"), 0.0));
    }

    #[test]
    fn recall_hand_computed() {
        let ranked = ["d1", "d2", "d3", "d4"];
        let r = recall_at_k(&ranked, &["d2", "d4", "d9"], 2).unwrap();
        assert!(close(r.fraction, 1.0 / 3.0) && close(r.any, 1.0) && close(r.all, 0.0));
        let r = recall_at_k(&ranked, &["d2", "d4"], 4).unwrap();
        assert!(close(r.fraction, 1.0) && close(r.all, 1.0));
        let r = recall_at_k(&ranked, &["d9"], 4).unwrap();
        assert!(close(r.any, 0.0));
        assert!(recall_at_k::<&str>(&ranked, &[], 4).is_none());
    }

    #[test]
    fn ndcg_hand_computed() {
        // gains [3, 2, 3, 0, 1, 2]: DCG@6 = 3 + 2/log2 3 + 3/2 + 0 + 1/log2 6 + 2/log2 7.
        let dcg = 3.0 + 2.0 / 3f64.log2() + 1.5 + 1.0 / 6f64.log2() + 2.0 / 7f64.log2();
        // ideal [3, 3, 2, 2, 1, 0]
        let idcg = 3.0 + 3.0 / 3f64.log2() + 1.0 + 2.0 / 5f64.log2() + 1.0 / 6f64.log2();
        assert!(close(
            ndcg_at_k(&[3.0, 2.0, 3.0, 0.0, 1.0, 2.0], 6),
            dcg / idcg
        ));
        assert!(close(ndcg_at_k(&[1.0, 0.0], 2), 1.0));
        assert!(close(ndcg_at_k(&[0.0, 1.0], 2), 1.0 / 3f64.log2()));
        assert!(close(ndcg_at_k(&[0.0, 0.0], 2), 0.0));
    }

    #[test]
    fn ndcg_by_scores_shares_discounts_among_ties() {
        // Scores rank item 1 first; perfect.
        assert!(close(ndcg_by_scores(&[(0.2, 0.0), (0.9, 1.0)], 2), 1.0));
        // Reversed: the relevant item is second.
        assert!(close(
            ndcg_by_scores(&[(0.9, 0.0), (0.2, 1.0)], 2),
            1.0 / 3f64.log2()
        ));
        // A full tie: the relevant item gets the mean of both discounts.
        let mean = (1.0 + 1.0 / 3f64.log2()) / 2.0;
        assert!(close(ndcg_by_scores(&[(0.5, 0.0), (0.5, 1.0)], 2), mean));
    }
}
