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

use crate::change::{
    ForgetInstruction, PAST_WORDS, attribute_values, attributes, forget_instruction,
    main_attributes,
};
use crate::constructor::{Memory, Subject, relation_word, subject_of};
use crate::error::Result;
use crate::judge::{Conflict, coverage, stem};
use crate::text::{NOT_OWNERS, content_words, sentences, words};
use crate::values::{is_date_word, is_year};

/// The Refresher role.
pub trait Refresher: Send + Sync + std::fmt::Debug {
    /// Which of the judge's conflicts to resolve by closing the stale fact in favour of `new`.
    fn resolve(&self, new: &Memory, conflicts: &[Conflict]) -> Result<Vec<FragmentId>>;

    /// Recognises an instruction to forget in the user's own current input.
    /// The pipeline never calls this on stored or retrieved text.
    fn forget_request(&self, user_input: &str) -> Result<Option<ForgetInstruction>>;

    /// Whether words said to someone other than the serving agent (named `agent`)
    /// still address the memory: only then can they instruct it to forget.
    fn addresses_memory(&self, text: &str, agent: &str) -> bool {
        crate::change::addresses_the_memory(text, agent)
    }

    /// What is left of a turn or an episode once what `instruction` names is taken
    /// out: its other sentences and clauses, so the other things it told stay
    /// recallable. `None` when nothing else is left (the fragment goes whole) or
    /// when no part of it names what is forgotten (it was chosen for another reason:
    /// it repeats a forgotten value, or is a reply to a forgotten statement).
    /// `forgotten` are all the fragments the instruction targets: a value they name
    /// is forgotten here too.
    fn remainder(
        &self,
        instruction: &ForgetInstruction,
        fragment: &Fragment,
        forgotten: &[&Fragment],
    ) -> Result<Option<String>> {
        Ok(remainder(instruction, fragment, forgotten))
    }

    /// Which of the user's fragments an instruction asks to forget. The candidates are
    /// the user's current fragments and past versions (superseded ones).
    fn forget_targets(
        &self,
        instruction: &ForgetInstruction,
        candidates: &[&Fragment],
    ) -> Result<Vec<FragmentId>>;
}

/// The rule-based refresher: resolves every conflict, recognises forget instructions
/// with [`forget_instruction`], and targets fragments that mention what is to be
/// forgotten (by word stems, or by the attribute it names), with what was drawn from the
/// same turns, the episodes that summarise them, the other party's replies to them and
/// what repeats their values. An instruction for the old value only spares
/// what states the current one (see `current_values`).
#[derive(Clone, Copy, Debug, Default)]
pub struct OfflineRefresher;

/// The values a text names: capitalised words past the start of a sentence, and
/// tokens with digits. Speaker prefixes ("Dana:") and the speaker's name are not values,
/// nor what dates them ("January", "2024": every episode summary is dated).
fn value_tokens(text: &str) -> Vec<String> {
    let body = text.split_once(": ").map_or(text, |(_, t)| t);
    let mut out = Vec::new();
    let mut sentence_start = true;
    for raw in body.split_whitespace() {
        let trimmed = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let token = trimmed.to_lowercase();
        let digits = token.chars().any(|c| c.is_ascii_digit());
        let named = !sentence_start && trimmed.starts_with(|c: char| c.is_uppercase());
        let dates = is_date_word(&token) || is_year(&token);
        if (digits || named) && !dates && token.chars().count() > 1 && !token.contains('\'') {
            out.push(token);
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

/// The numbers a text holds, each as one string of its digits ("+44 20 7946 0018" is
/// "442079460018", "£85,000" is "85000"), years and numbers under three digits aside.
fn numbers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut run = String::new();
    for token in text.split_whitespace() {
        let core = token.trim_matches(|c: char| !c.is_alphanumeric());
        let numeric = core.chars().any(|c| c.is_ascii_digit())
            && core
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '-' | ',' | '.' | '(' | ')' | '/'));
        if numeric {
            run.extend(core.chars().filter(char::is_ascii_digit));
            // A number ends with its token's punctuation ("0018;", "0018.").
            if !token.ends_with(|c: char| c.is_ascii_digit() || c == ')') {
                out.push(std::mem::take(&mut run));
            }
        } else if !run.is_empty() {
            out.push(std::mem::take(&mut run));
        }
    }
    out.push(run);
    out.retain(|n| long_number(n));
    out
}

/// Whether two numbers are one: the same digits, or the same last seven of a phone
/// number written with and without its country code ("020 7946 0018" and
/// "+44 20 7946 0018").
fn same_number(a: &str, b: &str) -> bool {
    const LOCAL: usize = 7;
    a == b || (a.len() >= LOCAL && b.len() >= LOCAL && a[a.len() - LOCAL..] == b[b.len() - LOCAL..])
}

/// Words with which a text says its value is a past one, besides [`PAST_WORDS`].
const PAST_MARKERS: &[&str] = &["previously", "formerly"];

/// Among the fragments an instruction to forget an old value targets, those that state
/// the current value, when the targets hold a past version (superseded, or one that
/// calls its value old: "my old number was …"). A fragment states the current value
/// when it replaced a past version or calls its value new or current in lower case
/// ("my new number is …", not "New Cross"), and names neither a past word nor a number
/// of a past version.
fn current_values(direct: &[&Fragment]) -> HashSet<FragmentId> {
    let says_past = |f: &Fragment| {
        words(&f.content)
            .iter()
            .any(|w| PAST_WORDS.contains(&w.as_str()) || PAST_MARKERS.contains(&w.as_str()))
    };
    let says_new = |f: &Fragment| {
        f.content.split_whitespace().any(|t| {
            matches!(
                t.trim_matches(|c: char| !c.is_alphanumeric()),
                "new" | "current" | "currently"
            )
        })
    };
    let past: Vec<&Fragment> = direct
        .iter()
        .copied()
        .filter(|f| f.superseded_by.is_some() || says_past(f))
        .collect();
    if past.is_empty() {
        return HashSet::new();
    }
    let past_numbers: Vec<String> = past.iter().flat_map(|f| numbers(&f.content)).collect();
    direct
        .iter()
        .filter(|f| f.superseded_by.is_none())
        .filter(|f| past.iter().any(|p| p.superseded_by == Some(f.id)) || says_new(f))
        .filter(|f| !says_past(f))
        .filter(|f| {
            !numbers(&f.content)
                .iter()
                .any(|n| past_numbers.iter().any(|p| same_number(n, p)))
        })
        .map(|f| f.id)
        .collect()
}

/// Stem coverage of the instruction's words from which a fragment is a target.
const TARGET_COVERAGE: f64 = 0.5;

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
        // "The old number": the past word names which versions, not what they are about
        // ("my son is six years old" is no target).
        let about = instruction
            .about
            .iter()
            .filter(|w| !(instruction.past && PAST_WORDS.contains(&w.as_str())))
            .cloned()
            .collect::<Vec<_>>()
            .join(" ");
        let named: Vec<&str> = attributes(&about);
        // "My son's school": a text that names a school but not the son is about
        // someone else's ("we're both nurses, so school pick-ups are a puzzle").
        // So does one of the speaker's people named as theirs ("where my sister lives").
        let mut owners: Vec<String> = instruction
            .about
            .iter()
            .filter_map(|w| w.strip_suffix("'s"))
            .filter(|w| !NOT_OWNERS.contains(w))
            .chain(instruction.about.iter().filter_map(|w| relation_word(w)))
            .map(stem)
            .collect();
        owners.sort();
        owners.dedup();
        let owned = |text: &str| {
            let said: Vec<String> = words(text).iter().map(|w| stem(w)).collect();
            owners.is_empty() || owners.iter().any(|o| said.contains(o))
        };
        // With no one named, the speaker's own is meant: "forget where I live" leaves
        // "my sister lives in Paris".
        let someone_elses = |f: &Fragment| {
            owners.is_empty()
                && match f.granularity {
                    Granularity::RawTurn => {
                        f.content.split_once(": ").is_some_and(|(speaker, said)| {
                            sentences(said)
                                .iter()
                                .all(|s| subject_of(s, speaker) != Subject::Speaker)
                        })
                    }
                    _ => f.key.as_deref().is_some_and(|k| k.split('/').count() > 2),
                }
        };
        let direct: Vec<&Fragment> = candidates
            .iter()
            .copied()
            .filter(|f| {
                owned(&f.content)
                    && !someone_elses(f)
                    && (coverage(&about, &f.content) >= TARGET_COVERAGE
                    // Mainly about an attribute the instruction names: "the doctor
                    // confirmed it's celiac disease" is about a diagnosis as much as
                    // anything. An episode spans a session's topics: never by attribute.
                    || (f.granularity != Granularity::Episode
                        && main_attributes(&f.content).iter().any(|a| named.contains(a))))
            })
            .collect();
        let spared = if instruction.past {
            current_values(&direct)
        } else {
            HashSet::new()
        };
        let direct: Vec<&Fragment> = direct
            .into_iter()
            .filter(|f| !spared.contains(&f.id))
            .collect();
        // What was drawn from the same turns goes too: a fact of a forgotten turn would
        // otherwise keep what the user asked to forget. Not the turns of an episode:
        // they are a whole session.
        let forgotten: HashSet<(&Option<String>, &String)> = direct
            .iter()
            .filter(|f| f.granularity != Granularity::Episode)
            .flat_map(|f| {
                f.provenance
                    .source
                    .turns
                    .iter()
                    .map(|t| (&f.provenance.source.session, t))
            })
            .collect();
        let turns: HashSet<&String> = forgotten.iter().map(|(_, t)| *t).collect();
        // And what repeats the forgotten values elsewhere (an assistant echoing the
        // number, an episode summary): two of their names, or one long number.
        // Of a turn or an episode that told other things too, only what its forgotten
        // parts say.
        let values: HashSet<String> = direct
            .iter()
            .flat_map(|f| value_tokens(&forgotten_text(instruction, f)))
            .collect();
        // A value of a named attribute ("20 mg of fluoxetine") is one even in lower case:
        // naming it once is a repeat, in what is the owner's ("my son's meds" leave
        // mine). Not for an old value only: the current one names it too ("now 40 mg
        // of fluoxetine a day").
        let measured: HashSet<String> = if instruction.past {
            HashSet::new()
        } else {
            direct
                .iter()
                .flat_map(|f| attribute_values(&forgotten_text(instruction, f), &named))
                .collect()
        };
        let repeats = |f: &Fragment| {
            if owned(&f.content) && words(&f.content).iter().any(|w| measured.contains(w)) {
                return true;
            }
            let shared: Vec<String> = value_tokens(&f.content)
                .into_iter()
                .filter(|v| values.contains(v))
                .collect();
            shared.len() >= 2 || shared.iter().any(|v| long_number(v))
        };
        // A fact of another attribute told in the same turn stays: "… and I work at
        // Statoil" says nothing of where I live ("I work at Statoil in Oslo" does).
        let stated: HashSet<String> = direct
            .iter()
            .filter(|f| f.granularity == Granularity::Fact)
            .flat_map(|f| value_tokens(&f.content))
            .collect();
        let of_another_attribute = |f: &Fragment| {
            f.granularity == Granularity::Fact
                && !named.is_empty()
                && f.key
                    .as_deref()
                    .and_then(|k| k.rsplit('/').next())
                    .is_some_and(|a| !named.contains(&a))
                && value_tokens(&f.content).iter().all(|v| !stated.contains(v))
        };
        // A turn that also told other things keeps them: what was drawn from it goes
        // only if it states one of the turn's parts that name what is forgotten.
        let told = |f: &Fragment| {
            f.provenance.source.turns.iter().all(|t| {
                candidates
                    .iter()
                    .find(|c| {
                        c.granularity == Granularity::RawTurn
                            && c.provenance.source.turns == [t.clone()]
                    })
                    .is_none_or(|turn| {
                        states_a_named_part(instruction, &turn.content, &f.content, &values)
                    })
            })
        };
        let targets: Vec<&Fragment> = candidates
            .iter()
            .copied()
            .filter(|f| !spared.contains(&f.id))
            .filter(|f| {
                let drawn = &f.provenance.source.turns;
                direct.iter().any(|d| d.id == f.id)
                    || (!drawn.is_empty()
                        && drawn.iter().all(|t| turns.contains(t))
                        && !of_another_attribute(f)
                        && told(f))
                    // An episode summarises every turn of its span, quoting them
                    // offline: one forgotten turn of its session takes the summary.
                    || (f.granularity == Granularity::Episode
                        && drawn
                            .iter()
                            .any(|t| forgotten.contains(&(&f.provenance.source.session, t))))
                    || repeats(f)
            })
            .collect();
        // And the other party's reply to a forgotten statement, which answers what it
        // said ("the doctor confirmed it's celiac disease" → "would gluten-free recipes
        // help?"): the next turn of the dialogue, by its id, when the forgotten turn
        // yielded a fact and the reply yielded none (it states nothing of its own).
        let replies: Vec<FragmentId> = targets
            .iter()
            .filter(|f| {
                f.granularity == Granularity::RawTurn
                    && remainder(instruction, f, &targets).is_none()
            })
            .filter_map(|turn| reply_to(turn, candidates))
            .filter(|r| !spared.contains(r))
            .collect();
        let mut out: Vec<FragmentId> = targets.iter().map(|f| f.id).collect();
        for r in replies {
            if !out.contains(&r) {
                out.push(r);
            }
        }
        Ok(out)
    }
}

/// Whether a part of a text (a sentence, or a clause of one attribute joined to
/// others by "and") names what `instruction` asks to forget: its words cover the
/// instruction's, or it is mainly about an attribute the instruction names.
fn names(instruction: &ForgetInstruction, part: &str) -> bool {
    if instruction.everything {
        return true;
    }
    let about = instruction.about.join(" ");
    let named = attributes(&about);
    coverage(&about, part) >= TARGET_COVERAGE
        || main_attributes(part).iter().any(|a| named.contains(a))
}

/// The parts of a text, each with whether it names what is forgotten: its sentences,
/// and within a sentence its clauses joined by "and" when they tell of different
/// attributes ("My favourite food is ramen and I live in Lisbon").
/// A part naming one of `values` (what the forgotten fragments say) names it too.
fn parts(
    instruction: &ForgetInstruction,
    body: &str,
    values: &HashSet<String>,
) -> Vec<Vec<(String, bool)>> {
    let names = |part: &str| {
        names(instruction, part)
            || words(part).iter().any(|w| values.contains(w))
            || value_tokens(part).iter().any(|v| values.contains(v))
    };
    sentences(body)
        .into_iter()
        .map(|sentence| {
            let clauses = crate::text::split_and(&sentence);
            let mut attrs: Vec<&str> = clauses
                .iter()
                .filter_map(|c| main_attributes(c).first().copied())
                .collect();
            attrs.sort_unstable();
            attrs.dedup();
            if clauses.len() < 2 || attrs.len() < 2 {
                let named = names(&sentence);
                return vec![(sentence, named)];
            }
            clauses
                .into_iter()
                .map(|c| (c.trim().to_owned(), names(c)))
                .collect()
        })
        .collect()
}

/// What a targeted fragment says of what is forgotten: all of a fact or a profile
/// entry; of a turn or an episode, which may tell other things too, only its parts
/// that name it.
fn forgotten_text(instruction: &ForgetInstruction, f: &Fragment) -> String {
    match f.granularity {
        Granularity::RawTurn | Granularity::Episode => {
            let body = f
                .content
                .split_once(": ")
                .map_or(f.content.as_str(), |(_, s)| s);
            parts(instruction, body, &HashSet::new())
                .into_iter()
                .flatten()
                .filter(|(_, named)| *named)
                .map(|(p, _)| p)
                .collect::<Vec<_>>()
                .join(" ")
        }
        _ => f.content.clone(),
    }
}

/// The values the forgotten fragments name: in facts and profile entries, and in
/// the parts of turns that name what is forgotten (not in episodes, which name the
/// people of a whole session).
fn forgotten_values(instruction: &ForgetInstruction, forgotten: &[&Fragment]) -> HashSet<String> {
    let named = attributes(&instruction.about.join(" "));
    let mut out = HashSet::new();
    for f in forgotten {
        if f.granularity == Granularity::Episode {
            continue;
        }
        let text = forgotten_text(instruction, f);
        out.extend(value_tokens(&text));
        if !instruction.past {
            out.extend(attribute_values(&text, &named));
        }
    }
    out
}

/// The content words that only the forgotten parts of the targeted turns and facts
/// say: none that a part they keep also says, nor who speaks.
fn forgotten_words(instruction: &ForgetInstruction, forgotten: &[&Fragment]) -> HashSet<String> {
    let mut gone = HashSet::new();
    let mut kept = HashSet::new();
    for f in forgotten {
        if f.granularity == Granularity::Episode {
            continue;
        }
        let (speaker, body) = f
            .content
            .split_once(": ")
            .filter(|_| f.granularity == Granularity::RawTurn)
            .map_or(("", f.content.as_str()), |(s, b)| (s, b));
        kept.insert(speaker.to_lowercase());
        for (part, named) in parts(instruction, body, &HashSet::new())
            .into_iter()
            .flatten()
        {
            let words = content_words(&part);
            // A fact opens with whom it is about.
            if f.granularity != Granularity::RawTurn
                && let Some(first) = words.first()
            {
                kept.insert(first.trim_end_matches("'s").to_owned());
            }
            if named {
                gone.extend(words)
            } else {
                kept.extend(words)
            }
        }
    }
    gone.retain(|w| {
        !kept.contains(w) && !kept.contains(w.trim_end_matches("'s")) && w.chars().count() > 3
    });
    gone
}

/// See [`Refresher::remainder`]: a raw turn keeps its speaker ("Ana: …").
pub fn remainder(
    instruction: &ForgetInstruction,
    fragment: &Fragment,
    forgotten: &[&Fragment],
) -> Option<String> {
    if instruction.everything
        || !matches!(
            fragment.granularity,
            Granularity::RawTurn | Granularity::Episode
        )
    {
        return None;
    }
    let (prefix, body) = match fragment.content.split_once(": ") {
        Some((speaker, said))
            if fragment.granularity == Granularity::RawTurn && !speaker.contains(' ') =>
        {
            (format!("{speaker}: "), said)
        }
        _ => (String::new(), fragment.content.as_str()),
    };
    let mut values = forgotten_values(instruction, forgotten);
    if fragment.granularity == Granularity::Episode {
        // An episode quotes its turns and lists their topic words: the words only the
        // forgotten parts said go with them.
        values.extend(forgotten_words(instruction, forgotten));
    }
    let parts = parts(instruction, body, &values);
    let any_named = parts.iter().flatten().any(|(_, named)| *named);
    let kept: Vec<String> = parts
        .iter()
        .filter_map(|sentence| {
            let left: Vec<&str> = sentence
                .iter()
                .filter(|(_, named)| !named)
                .map(|(p, _)| p.as_str())
                .collect();
            if left.is_empty() {
                return None;
            }
            if left.len() == sentence.len() {
                return Some(left.join(" and "));
            }
            // A sentence that lost a clause ends as the sentence did.
            let end = sentence
                .last()
                .and_then(|(p, _)| p.chars().last())
                .filter(|c| matches!(c, '.' | '!' | '?'));
            let mut joined = left
                .join(" and ")
                .trim_end_matches(['.', '!', '?', ','])
                .to_owned();
            joined.extend(end);
            Some(joined)
        })
        .collect();
    let left_words = kept.iter().map(|k| words(k).len()).sum::<usize>();
    (any_named && !kept.is_empty() && left_words >= 2)
        .then(|| format!("{prefix}{}", kept.join(" ")))
}

/// Whether `drawn` (a fact or an entry drawn from the turn `turn`) states one of the
/// turn's parts that name what is forgotten: the part it shares most words with, or
/// every part when the turn has only one.
fn states_a_named_part(
    instruction: &ForgetInstruction,
    turn: &str,
    drawn: &str,
    values: &HashSet<String>,
) -> bool {
    let body = turn.split_once(": ").map_or(turn, |(_, said)| said);
    let parts: Vec<(String, bool)> = parts(instruction, body, values)
        .into_iter()
        .flatten()
        .collect();
    match parts.as_slice() {
        [] => true,
        [_] => true,
        _ => parts
            .iter()
            .map(|(p, named)| (coverage(p, drawn), *named))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .is_none_or(|(_, named)| named),
    }
}

/// The reply to a raw turn: the raw turn of the next dialogue id in the same session
/// (`D3:7` after `D3:6`), said by another speaker, when `turn` yielded a fact (it stated
/// something) and the reply yielded none (it only answers).
fn reply_to(turn: &Fragment, candidates: &[&Fragment]) -> Option<FragmentId> {
    let speaker = |f: &Fragment| f.content.split_once(": ").map(|(s, _)| s.to_owned());
    let [said] = turn.provenance.source.turns.as_slice() else {
        return None;
    };
    let (dialogue, n) = said.rsplit_once(':')?;
    let next_id = format!("{dialogue}:{}", n.parse::<u32>().ok()?.checked_add(1)?);
    let yielded_fact = |id: &String| {
        candidates
            .iter()
            .any(|f| f.granularity == Granularity::Fact && f.provenance.source.turns.contains(id))
    };
    if !yielded_fact(said) || yielded_fact(&next_id) {
        return None;
    }
    let next = candidates.iter().find(|f| {
        f.granularity == Granularity::RawTurn
            && f.provenance.source.session == turn.provenance.source.session
            && f.provenance.source.session.is_some()
            && f.provenance.source.turns == [next_id.clone()]
    })?;
    (speaker(next).is_some() && speaker(next) != speaker(turn)).then_some(next.id)
}
