//! LoCoMo's scorer against the Python original on synthetic answers.

use colmem_eval::locomo_score::locomo_f1;

/// `(category, prediction, gold, expected)`. The expected scores were computed by
/// running the scorer of LoCoMo's `task_eval/evaluation.py` (`normalize_answer`,
/// `f1_score` and `f1` copied verbatim, and the per-category choice of
/// `eval_question_answering`) with NLTK 3.10.4's `PorterStemmer()` and NumPy 2.4 under
/// Python 3.11, printing `float(score)`; `None` stands for a category not scored by
/// F1. The answers are made up, not taken from LoCoMo.
const CASES: &[(u8, &str, &str, Option<f64>)] = &[
    (4, "running", "run", Some(1.0)),
    (
        4,
        "He was running daily",
        "runs every day",
        Some(0.28571428571428575),
    ),
    (4, "generously given", "generous gift", Some(0.5)),
    (4, "She studied psychology", "psychologist", Some(0.0)),
    (4, "flies and skies", "fly sky", Some(1.0)),
    (4, "dying lying", "die lie", Some(1.0)),
    (4, "news", "new", Some(0.0)),
    (4, "hopefulness", "hopeful", Some(1.0)),
    (4, "relational databases", "relation database", Some(1.0)),
    (4, "Running, Jumping; Swimming!", "run jump swim", Some(1.0)),
    (4, "", "", Some(0.0)),
    (4, "something", "", Some(0.0)),
    (4, "", "gold", Some(0.0)),
    (4, "a the an and", "nothing", Some(0.0)),
    (4, "the the the", "the", Some(0.0)),
    (4, "cats and dogs", "cat, dog", Some(1.0)),
    (4, "Anne and Andy", "anne andy", Some(1.0)),
    (4, "An apple and a pear", "apple pear banana", Some(0.8)),
    (4, "don't", "dont", Some(1.0)),
    (4, "don\u{2019}t", "dont", Some(0.0)),
    (4, "the\u{2019}s", "\u{2019}s", Some(1.0)),
    (4, "a\u{2014}b", "\u{2014}b", Some(1.0)),
    (4, "a.m.", "am", Some(1.0)),
    (4, "the_end", "theend", Some(1.0)),
    (4, "K-pop", "kpop", Some(1.0)),
    (4, "mother-in-law", "mother in law", Some(0.0)),
    (4, "Dr. Smith", "dr smith", Some(1.0)),
    (4, "the Beatles' songs", "Beatles song", Some(1.0)),
    (4, "caf\u{e9} na\u{ef}ve", "Caf\u{e9} naive", Some(0.5)),
    (
        4,
        "\u{39f}\u{394}\u{39f}\u{3a3}",
        "\u{3bf}\u{3b4}\u{3bf}\u{3c2}",
        Some(1.0),
    ),
    (4, "\u{130}stanbul trip", "istanbul", Some(0.0)),
    (4, "Hello\u{1f}world", "hello world", Some(1.0)),
    (4, "Hello\u{a0}world", "hello world", Some(1.0)),
    (4, "x x y", "x y y", Some(0.6666666666666666)),
    (4, "x x x y", "x y", Some(0.6666666666666666)),
    (4, "3.5 hours", "35 hours", Some(1.0)),
    (4, "1,000 dollars", "1000 dollars", Some(1.0)),
    (2, "7 May 2023", "7 May, 2023", Some(1.0)),
    (2, "May 7th, 2023", "7 May 2023", Some(0.6666666666666666)),
    (
        2,
        "The week before 9 June 2023",
        "the week before 9 June 2023",
        Some(1.0),
    ),
    (
        2,
        "The Sunday before 25 May 2023",
        "Sunday before 25 May 2023",
        Some(1.0),
    ),
    (2, "2022", "2022", Some(1.0)),
    (2, "in 2022", "2022", Some(0.6666666666666666)),
    (2, "last   week", "Last week.", Some(1.0)),
    (1, "1,000 dollars", "1000 dollars", Some(0.5)),
    (
        1,
        "painting, hiking",
        "hiking, painting, swimming",
        Some(0.6666666666666666),
    ),
    (
        1,
        "Painting and hiking",
        "hiking, painting",
        Some(0.6666666666666666),
    ),
    (1, "", "a, b", Some(0.0)),
    (1, "", "", Some(0.0)),
    (1, "sunsets, beaches", "beach", Some(1.0)),
    (1, "reading books", "read, book", Some(0.6666666666666666)),
    (1, "apples,,pears", "pears,apples", Some(1.0)),
    (1, "Alice, Bob", "Bob and Alice", Some(0.6666666666666666)),
    (
        1,
        "red, green, blue, cyan, magenta, yellow, black, white, grey",
        "grey, white, black, yellow, magenta, cyan, blue, green, red, pink",
        Some(0.9),
    ),
    (
        3,
        "likely yes; because she likes it",
        "Likely yes; she said so",
        Some(0.5),
    ),
    (3, "Yes", "yes; since she loves dogs", Some(1.0)),
    (3, "no", "; nothing", Some(0.0)),
    (
        3,
        "Liberal, progressive",
        "Liberal; progressive",
        Some(0.6666666666666666),
    ),
    (
        3,
        "An artist; a painter",
        "artist; painter",
        Some(0.6666666666666666),
    ),
    (3, "Probably not", "  probably not  ", Some(1.0)),
    (5, "Not mentioned", "anything", None),
    (0, "x", "x", None),
];

#[test]
fn locomo_f1_matches_the_python_scorer() {
    let mut mismatches = Vec::new();
    for &(category, prediction, gold, expected) in CASES {
        let got = locomo_f1(category, prediction, gold);
        let same = match (got, expected) {
            (Some(g), Some(e)) => (g - e).abs() < 1e-9,
            (None, None) => true,
            _ => false,
        };
        if !same {
            mismatches.push(format!(
                "category {category}, {prediction:?} vs {gold:?}: got {got:?}, Python gives {expected:?}"
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
