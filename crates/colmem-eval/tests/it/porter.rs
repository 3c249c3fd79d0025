//! The Porter stemmer against NLTK on a vocabulary of several thousand words.

use std::path::PathBuf;

use colmem_eval::porter::stem;

/// Every `word<TAB>stem` pair of `tests/data/porter_nltk.tsv`, whose header says how
/// NLTK produced it, matches; all mismatches are reported at once.
#[test]
fn stems_match_nltk_on_the_vocabulary() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/porter_nltk.tsv");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut checked = 0;
    let mut mismatches = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (word, expected) = line
            .split_once('\t')
            .unwrap_or_else(|| panic!("{line:?} is not word<TAB>stem"));
        let got = stem(word);
        if got != expected {
            mismatches.push(format!("{word:?}: got {got:?}, NLTK gives {expected:?}"));
        }
        checked += 1;
    }
    assert!(checked > 5000, "only {checked} words in {}", path.display());
    assert!(
        mismatches.is_empty(),
        "{} of {checked} words differ from NLTK:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
