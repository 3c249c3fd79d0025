//! The Refresher role: keeps facts consistent over time.
//!
//! - **Update**: a fact the judge found stale is closed (its world-time validity ends
//!   where the new one starts, `superseded_at` is stamped) and linked to the fact that
//!   replaces it; nothing is erased.
//! - **Delete**: only on an explicit forget instruction in the user's own current input,
//!   or when the retention limit has passed. Stored text never triggers a deletion.
//!
//! The pipeline carries the decisions out through the store, which audits each one.

use std::collections::HashSet;

use colmem_core::{Fragment, FragmentId, Granularity};

use crate::change::{ForgetInstruction, attributes, forget_instruction, main_attributes};
use crate::constructor::Memory;
use crate::error::Result;
use crate::judge::{Conflict, coverage};
use crate::text::words;

/// The Refresher role.
pub trait Refresher: Send + Sync + std::fmt::Debug {
    /// Which of the judge's conflicts to resolve by closing the stale fact in favour of `new`.
    fn resolve(&self, new: &Memory, conflicts: &[Conflict]) -> Result<Vec<FragmentId>>;

    /// Recognises an instruction to forget in the user's own current input.
    /// The pipeline never calls this on stored or retrieved text.
    fn forget_request(&self, user_input: &str) -> Result<Option<ForgetInstruction>>;

    /// Which of the user's fragments an instruction asks to forget.
    fn forget_targets(
        &self,
        instruction: &ForgetInstruction,
        candidates: &[&Fragment],
    ) -> Result<Vec<FragmentId>>;
}

/// The rule-based refresher: resolves every conflict, recognises forget instructions
/// with [`forget_instruction`], and targets fragments that mention what is to be
/// forgotten (by word stems, or by the attribute it names).
#[derive(Clone, Copy, Debug, Default)]
pub struct OfflineRefresher;

/// The values a text names: capitalised words past the start of a sentence, and
/// tokens with digits. Speaker prefixes ("Dana:") and the speaker's name are not values.
fn value_tokens(text: &str) -> Vec<String> {
    let body = text.split_once(": ").map_or(text, |(_, t)| t);
    let mut out = Vec::new();
    let mut sentence_start = true;
    for raw in body.split_whitespace() {
        let token: String = raw.trim_matches(|c: char| !c.is_alphanumeric()).to_owned();
        let digits = token.chars().any(|c| c.is_ascii_digit());
        let named = !sentence_start && token.starts_with(|c: char| c.is_uppercase());
        if (digits || named) && token.chars().count() > 1 && !token.contains('\'') {
            out.push(token.to_lowercase());
        }
        sentence_start = raw.ends_with(['.', '!', '?']);
    }
    out
}

/// Whether a value is a number of three digits or more that is not a year: one such
/// number shared is a repeat of it ("2019" is said of many things).
fn long_number(value: &str) -> bool {
    let year = value.len() == 4
        && value
            .parse::<u32>()
            .is_ok_and(|y| (1900..=2099).contains(&y));
    !year && value.chars().filter(char::is_ascii_digit).count() >= 3
}

/// Stem coverage of the instruction's words from which a fragment is a target.
const TARGET_COVERAGE: f64 = 0.5;

/// Words with which a fragment calls its value a past one ("my old number was …").
const PAST_VERSION_WORDS: &[&str] = &["old", "previous", "former", "prior"];

impl Refresher for OfflineRefresher {
    fn resolve(&self, _new: &Memory, conflicts: &[Conflict]) -> Result<Vec<FragmentId>> {
        Ok(conflicts.iter().map(|c| c.stale).collect())
    }

    fn forget_request(&self, user_input: &str) -> Result<Option<ForgetInstruction>> {
        Ok(forget_instruction(user_input))
    }

    fn forget_targets(
        &self,
        instruction: &ForgetInstruction,
        candidates: &[&Fragment],
    ) -> Result<Vec<FragmentId>> {
        if instruction.everything {
            return Ok(candidates.iter().map(|f| f.id).collect());
        }
        let about = instruction.about.join(" ");
        let named: Vec<&str> = attributes(&about);
        let direct: Vec<&Fragment> = candidates
            .iter()
            .copied()
            .filter(|f| {
                coverage(&about, &f.content) >= TARGET_COVERAGE
                    // Mainly about an attribute the instruction names: "the doctor
                    // confirmed it's celiac disease" is about a diagnosis as much as
                    // anything. An episode spans a session's topics: never by attribute.
                    || (f.granularity != Granularity::Episode
                        && main_attributes(&f.content).iter().any(|a| named.contains(a)))
            })
            .collect();
        // "The old number": when the targets hold a past version (one superseded, or
        // one that calls itself old: "my old number was …"), only the past versions go,
        // and what they share with the current ones (the country code) names nothing
        // forgotten.
        let past = |f: &&Fragment| {
            f.superseded_by.is_some()
                || words(&f.content).iter().any(|w| {
                    PAST_VERSION_WORDS.contains(&w.as_str()) && instruction.about.contains(w)
                })
        };
        let (direct, kept): (Vec<&Fragment>, Vec<&Fragment>) =
            if instruction.past && direct.iter().any(past) {
                direct.into_iter().partition(past)
            } else {
                (direct, Vec::new())
            };
        // What was drawn from the same turns goes too: a fact of a forgotten turn would
        // otherwise keep what the user asked to forget. Not the turns of an episode:
        // they are a whole session.
        let turns: HashSet<&String> = direct
            .iter()
            .filter(|f| f.granularity != Granularity::Episode)
            .flat_map(|f| &f.provenance.source.turns)
            .collect();
        // And what repeats the forgotten values elsewhere (an assistant echoing the
        // number, an episode summary): two of their names, or one long number.
        let kept_values: HashSet<String> =
            kept.iter().flat_map(|f| value_tokens(&f.content)).collect();
        let values: HashSet<String> = direct
            .iter()
            .flat_map(|f| value_tokens(&f.content))
            .filter(|v| !kept_values.contains(v))
            .collect();
        let repeats = |f: &Fragment| {
            let shared: Vec<String> = value_tokens(&f.content)
                .into_iter()
                .filter(|v| values.contains(v))
                .collect();
            shared.len() >= 2 || shared.iter().any(|v| long_number(v))
        };
        Ok(candidates
            .iter()
            .filter(|f| {
                direct.iter().any(|d| d.id == f.id)
                    || (!f.provenance.source.turns.is_empty()
                        && f.provenance.source.turns.iter().all(|t| turns.contains(t)))
                    || repeats(f)
            })
            .map(|f| f.id)
            .collect())
    }
}
