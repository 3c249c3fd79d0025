//! Integration tests of colmem-eval: the loader on the real LoCoMo dev file, when it is
//! beside the repository, and the LoCoMo scorer and Porter stemmer against their Python
//! originals.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod locomo_score;
mod porter;

use std::path::PathBuf;

use colmem_eval::locomo;

fn dev_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/locomo/locomo-dev.json")
}

#[test]
fn loads_the_locomo_dev_split() {
    let path = dev_file();
    assert!(
        path.exists(),
        "the LoCoMo dev file is expected at {} (../shared beside the repository)",
        path.display()
    );
    let convs = locomo::load(&path).unwrap();
    assert_eq!(convs.len(), 5);
    let turns: usize = convs.iter().map(|c| c.dialogue.turns().count()).sum();
    let questions: usize = convs.iter().map(|c| c.questions.len()).sum();
    assert!(turns > 2000, "{turns} turns");
    assert_eq!(questions, 999);
    // Every session with turns has a parsed date.
    for c in &convs {
        for s in &c.dialogue.sessions {
            assert!(
                s.date.is_some(),
                "{} session {} date {:?}",
                c.sample_id,
                s.number,
                s.date_text
            );
        }
    }
    // Evidence refers to turns that exist, apart from the few malformed entries.
    let mut dangling = 0;
    for c in &convs {
        let ids: std::collections::HashSet<_> = c.dialogue.turns().map(|(_, t)| t.id).collect();
        dangling += c
            .questions
            .iter()
            .flat_map(|q| &q.evidence)
            .filter(|e| !ids.contains(e))
            .count();
    }
    assert!(dangling < 10, "{dangling} evidence ids point at no turn");
}
