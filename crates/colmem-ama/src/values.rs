//! Named values: the things a statement names — a city, an employer, a phone model, a
//! dish, a number — as opposed to the words around them.
//!
//! The offline judge and answerer reason about change through values: a statement that
//! replaces a held fact brings a value the fact did not have ("… start at Initech"),
//! and once a fact is replaced its values are the old state ("Globex"), which a
//! current answer must not give. A value is
//! - a run of capitalised words or words with digits ("World Health Organization",
//!   "iPhone 14", "F-150", "9:30", "12B"), joined across short connectors ("Casa do
//!   Largo"), without people's names (and their short forms: "Mel" for Melanie),
//!   contractions ("You'd", "Can't"), months, weekdays, years and the day numbers of
//!   dates;
//! - a capitalised first word of a sentence only when it is not a common word ("Catan
//!   has been dethroned" names Catan; "Another Monday …" does not name "Another");
//! - a lowercase word that names an item of the attribute lexicon (`espresso`, `ramen`,
//!   `yoga`), never one that names the attribute itself (`food`, `drink`), a colour or
//!   an occupation (`nurse`, `engineer`).
//!
//! Values are lowercase; [`mentions`] matches them on word boundaries.

use crate::text::{MONTHS, STOPWORDS, sentences, words};

/// Lowercase words that join the capitalised words of one name.
const CONNECTORS: &[&str] = &[
    "of", "de", "do", "da", "del", "della", "la", "le", "van", "von", "der", "du", "dos", "das",
    "y", "e",
];

/// Month abbreviations and weekdays: with the months, they date a statement.
const DATE_WORDS: &[&str] = &[
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    // Days of the week date a statement more often than they are its value.
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "mondays",
    "tuesdays",
    "wednesdays",
    "thursdays",
    "fridays",
    "saturdays",
    "sundays",
];

pub(crate) fn is_date_word(word: &str) -> bool {
    MONTHS.contains(&word) || DATE_WORDS.contains(&word)
}

/// Words that often open a sentence without naming anything: fillers, determiners,
/// adverbs and the imperatives of requests.
const COMMON_OPENERS: &[&str] = &[
    "another",
    "any",
    "every",
    "each",
    "both",
    "most",
    "some",
    "said",
    "also",
    "still",
    "even",
    "maybe",
    "yes",
    "okay",
    "ok",
    "sure",
    "please",
    "sorry",
    "hello",
    "quick",
    "new",
    "old",
    "first",
    "last",
    "next",
    "second",
    "third",
    "since",
    "during",
    "though",
    "although",
    "once",
    "today",
    "tomorrow",
    "yesterday",
    "tonight",
    "book",
    "keep",
    "tell",
    "remind",
    "give",
    "take",
    "put",
    "set",
    "find",
    "help",
    "make",
    "let",
    "send",
    "call",
    "add",
    "note",
    "remember",
    "use",
    "stop",
    "start",
    "try",
    "check",
    "ask",
    "buy",
    "plan",
    "cancel",
    "update",
    "switch",
    "show",
    "forget",
    "delete",
    "drop",
    "erase",
    "remove",
    "wipe",
    "good",
    "great",
    "nice",
    "best",
    "better",
    "worst",
    "big",
    "small",
    "little",
    "long",
    "short",
    "three",
    "two",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "none",
    "nothing",
    "everything",
    "everyone",
    "someone",
    "anything",
    "same",
    "sounds",
    "noted",
    "understood",
    "got",
    "right",
    "true",
    "fair",
    "exactly",
    "definitely",
    "absolutely",
    "perfect",
    "cool",
    "awesome",
    "lovely",
    "oops",
    "ugh",
    "anyway",
    "otherwise",
    "instead",
    "apparently",
    "unfortunately",
    "luckily",
    "turns",
    "guess",
    "not",
    "never",
    "always",
    "usually",
    "back",
    "over",
    "off",
    "down",
    "around",
    "through",
    "thanks",
    "thank",
    "speaking",
    "talking",
    "mind",
    "wait",
    "look",
    "see",
    "here's",
    "there's",
    "that's",
    "what's",
    "it's",
    "let's",
    "i'm",
    "i've",
    "i'll",
    "i'd",
    "we're",
    "we've",
    "you're",
    "they're",
    "he's",
    "she's",
    // Interjections and chat words.
    "wow",
    "whoa",
    "aw",
    "aww",
    "oh",
    "hey",
    "hi",
    "yeah",
    "yep",
    "yup",
    "nah",
    "nope",
    "yay",
    "haha",
    "ha",
    "hmm",
    "done",
    "welcome",
    "congratulations",
    "congrats",
    "fine",
    "wonderful",
    "amazing",
    "typo",
    "agreed",
    "glad",
    "gonna",
    "wanna",
    "gotta",
    "lots",
    "plus",
    "btw",
    "besides",
    "almost",
    "seems",
    "looks",
    "feels",
    "must",
    "everywhere",
    "somewhere",
    // Chat's imperatives and wishes: "Stay safe", "Love the energy", "Talk soon".
    "stay",
    "love",
    "talk",
    "enjoy",
    "hope",
    "wish",
    // Nouns too general to name anything: "Things have been great", "Life's wild".
    "things",
    "stuff",
    "people",
    "life",
    "way",
    "moments",
];

/// The endings of contractions: "you'd", "can't", "we'll" name nothing.
const CONTRACTIONS: &[&str] = &["n't", "'d", "'ve", "'re", "'ll", "'m"];

/// Whether `core` (lowercase) is one of `names` or what people call them for short:
/// "mel" for "melanie".
fn is_person(core: &str, names: &[String]) -> bool {
    names
        .iter()
        .any(|n| n == core || (core.chars().count() >= 3 && n.starts_with(core)))
}

/// Words of the attribute lexicon that name the attribute, not an item of it.
const GENERIC: &[&str] = &[
    "food",
    "dish",
    "dishes",
    "cuisine",
    "eat",
    "eating",
    "meal",
    "snack",
    "dessert",
    "cook",
    "cooking",
    "breakfast",
    "lunch",
    "dinner",
    "drink",
    "drinks",
    "music",
    "song",
    "songs",
    "band",
    "bands",
    "album",
    "genre",
    "playlist",
    "singer",
    "listen",
    "listening",
    "holiday",
    "holidays",
    "vacation",
    "vacations",
    "getaway",
    "sport",
    "sports",
    "hobby",
    "hobbies",
    "workout",
    "gym",
    "bakery",
];

/// The attributes whose lexicon words are items ("espresso" is a drink).
const ITEM_ATTRIBUTES: &[&str] = &["food", "drink", "music", "sport", "hobby", "vacation"];

/// A token of text: its lowercase core, and how it was written.
struct Token {
    core: String,
    capitalised: bool,
    digits: bool,
    sentence_start: bool,
}

fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut start = true;
    for raw in text.split_whitespace() {
        let trimmed = raw.trim_matches(|c: char| !(c.is_alphanumeric()));
        let ends_sentence = raw.ends_with(['.', '!', '?']);
        let core = trimmed
            .strip_suffix("'s")
            .or_else(|| trimmed.strip_suffix("’s"))
            .unwrap_or(trimmed);
        if !core.is_empty() {
            out.push(Token {
                core: core.to_lowercase(),
                capitalised: core.chars().next().is_some_and(char::is_uppercase)
                    || core.chars().skip(1).any(char::is_uppercase),
                digits: core.chars().any(|c| c.is_ascii_digit()),
                sentence_start: start,
            });
        }
        // A token that ends in a separator also ends a name ("Leeds, and …").
        if raw.ends_with([',', ';', ':', ')']) || ends_sentence {
            out.push(Token {
                core: String::new(),
                capitalised: false,
                digits: false,
                sentence_start: false,
            });
        }
        start = ends_sentence || (start && core.is_empty());
    }
    out
}

pub(crate) fn is_year(core: &str) -> bool {
    core.len() == 4
        && core.chars().all(|c| c.is_ascii_digit())
        && (core.starts_with("19") || core.starts_with("20"))
}

/// Colours: the value of a car's, a wall's or a bike's colour.
const COLOURS: &[&str] = &[
    "red", "blue", "green", "silver", "black", "white", "grey", "gray", "yellow", "orange",
    "purple", "pink", "brown", "gold", "beige", "navy", "teal", "maroon",
];

/// Occupations: the value of what someone does for a living ("a nurse", "a data
/// engineer"). Words with a common other sense ("coach", "editor", "judge") are left out.
const OCCUPATIONS: &[&str] = &[
    "accountant",
    "actor",
    "administrator",
    "analyst",
    "architect",
    "artist",
    "baker",
    "barista",
    "bartender",
    "builder",
    "butcher",
    "carpenter",
    "cashier",
    "chef",
    "cleaner",
    "clerk",
    "consultant",
    "counselor",
    "counsellor",
    "dentist",
    "designer",
    "developer",
    "director",
    "doctor",
    "driver",
    "economist",
    "electrician",
    "engineer",
    "farmer",
    "firefighter",
    "guide",
    "hygienist",
    "instructor",
    "journalist",
    "lawyer",
    "lecturer",
    "librarian",
    "manager",
    "mechanic",
    "midwife",
    "musician",
    "nurse",
    "paralegal",
    "paramedic",
    "pharmacist",
    "photographer",
    "physician",
    "physiotherapist",
    "pilot",
    "plumber",
    "professor",
    "programmer",
    "psychologist",
    "radiographer",
    "receptionist",
    "researcher",
    "scientist",
    "secretary",
    "student",
    "supervisor",
    "surgeon",
    "tailor",
    "teacher",
    "technician",
    "tester",
    "therapist",
    "translator",
    "tutor",
    "veterinarian",
    "waiter",
    "waitress",
    "writer",
];

/// Whether a word names an occupation.
pub fn is_occupation(word: &str) -> bool {
    OCCUPATIONS.contains(&word)
}

/// Whether a value is a lowercase item of a lexicon (a dish, a colour, an occupation)
/// rather than a name.
pub fn is_item(core: &str) -> bool {
    COLOURS.contains(&core)
        || is_occupation(core)
        || !GENERIC.contains(&core)
            && crate::change::ATTRIBUTES
                .iter()
                .filter(|(name, _)| ITEM_ATTRIBUTES.contains(name))
                .any(|(_, lexicon)| lexicon.contains(&core))
}

/// The days of the year `text` names ("March 4", "4 March", "the 4th of March"), each
/// as "march 4". Dates are no values (a statement's own date says when, not what), but a
/// correction may be about one: "my birthday is March 14, I typed March 4 by mistake".
pub fn days(text: &str) -> Vec<String> {
    let tokens = tokens(text);
    let day = |t: &Token| day_number(&t.core);
    let month = |t: &Token| MONTHS.contains(&t.core.as_str()).then(|| t.core.clone());
    let mut out: Vec<String> = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let Some(m) = month(t) else { continue };
        let after = tokens.get(i + 1).and_then(day);
        let before = i
            .checked_sub(1)
            .and_then(|j| tokens.get(j))
            .and_then(|t| {
                if t.core == "of" {
                    i.checked_sub(2).and_then(|j| tokens.get(j))
                } else {
                    Some(t)
                }
            })
            .and_then(day);
        if let Some(d) = after.or(before) {
            let date = format!("{m} {d}");
            if !out.contains(&date) {
                out.push(date);
            }
        }
    }
    out
}

/// The day of the month a lowercase word gives: "4", "4th", "21st", from 1 to 31.
pub(crate) fn day_number(word: &str) -> Option<u8> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    digits.parse::<u8>().ok().filter(|d| {
        (1..=31).contains(d)
            && (digits.len() == word.len() || ORDINAL_ENDS.contains(&&word[digits.len()..]))
    })
}

const ORDINAL_ENDS: &[&str] = &["st", "nd", "rd", "th"];

/// Words with which a sentence calls a day it names wrong.
const WRONG: &[&str] = &[
    "mistake",
    "wrong",
    "typo",
    "mixed",
    "misremembered",
    "error",
];

/// The days a text calls wrong: named after "not" ("June 6, not May 30"), or in a
/// sentence that says it was a mistake ("I typed March 4 earlier by mistake").
pub fn days_called_wrong(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut out = Vec::new();
    for sentence in sentences(&lower) {
        let owned = words(&sentence);
        let wrong = owned.iter().any(|w| WRONG.contains(&w.as_str()));
        let spaced = format!(" {sentence}");
        for part in spaced.split(" not ").skip(usize::from(!wrong)) {
            // After "not", the day that follows it; in a "mistake" sentence, all.
            let named = days(part);
            out.extend(if wrong {
                named
            } else {
                named.into_iter().take(1).collect()
            });
        }
    }
    out
}

/// The values `text` names, in order, without duplicates. `names` are people's names
/// (lowercase), which are the subjects of statements, not values.
pub fn named(text: &str, names: &[String]) -> Vec<String> {
    let tokens = tokens(text);
    let is_name_part = |i: usize| -> bool {
        let t = &tokens[i];
        if t.core.is_empty()
            || is_person(&t.core, names)
            || is_date_word(&t.core)
            || CONTRACTIONS
                .iter()
                .any(|c| t.core.replace('’', "'").ends_with(c))
        {
            return false;
        }
        if t.digits {
            // The day number and the year of a date are not values.
            let near_month = |j: Option<usize>| {
                j.and_then(|j| tokens.get(j))
                    .is_some_and(|n| is_date_word(&n.core))
            };
            return !is_year(&t.core) && !near_month(i.checked_sub(1)) && !near_month(Some(i + 1));
        }
        if !t.capitalised || t.core.chars().count() < 2 {
            return false;
        }
        !t.sentence_start
            || !(STOPWORDS.contains(&t.core.as_str())
                || COMMON_OPENERS.contains(&t.core.as_str())
                || t.core.ends_with("ing")
                || t.core.ends_with("ed")
                || t.core.ends_with("ly")
                // "Gave my PS4 away", "Went with the Pixel".
                || colmem_index::base_form(&t.core).is_some())
    };
    let mut out: Vec<String> = Vec::new();
    let push = |value: String, out: &mut Vec<String>| {
        if !value.is_empty() && !out.contains(&value) {
            out.push(value);
        }
    };
    let business = crate::change::business_words(text);
    let mut i = 0;
    while i < tokens.len() {
        if is_name_part(i) {
            let mut parts = vec![tokens[i].core.clone()];
            let mut j = i + 1;
            loop {
                if j < tokens.len() && is_name_part(j) {
                    parts.push(tokens[j].core.clone());
                    j += 1;
                } else if j + 1 < tokens.len()
                    && CONNECTORS.contains(&tokens[j].core.as_str())
                    && !tokens[j].capitalised
                    && is_name_part(j + 1)
                {
                    parts.push(tokens[j].core.clone());
                    parts.push(tokens[j + 1].core.clone());
                    j += 2;
                } else {
                    break;
                }
            }
            push(parts.join(" "), &mut out);
            i = j;
        } else {
            let t = &tokens[i];
            // An item opening a sentence is still an item: "Painting keeps me calm".
            // Where a text tells of running a business, "run" is no sport and the
            // business is the value ("I run a bookshop"), wherever the word stands.
            let item = if business.contains(&t.core) {
                !crate::change::RUN.contains(&t.core.as_str())
            } else {
                is_item(&t.core)
            };
            if !t.core.is_empty() && (!t.capitalised || t.sentence_start) && item {
                push(t.core.clone(), &mut out);
            }
            i += 1;
        }
    }
    // "A morning person", "a night owl": when in the day someone is at their best.
    for chronotype in crate::change::chronotypes(text) {
        push(chronotype, &mut out);
    }
    // "Keep recipes mild", "extra hot, please": how hot someone likes their food.
    for level in crate::change::spice_levels(text) {
        push(level, &mut out);
    }
    out
}

/// Who `sentence` opens with, named (in lower case) doing something: "alice" of "Alice
/// moved to Paris", "tom lee" of "Tom Lee just started at Google": a name [`named`]
/// finds at its start (none of `names`), then a verb of where people live and work and
/// what they own (`PEOPLE_DOING`). "Moved to Paris" and "Data analyst at Flutterwave"
/// open with no one; "Autumn wins now" and "Kazik is enough parrot" with no one doing
/// such a thing ("is" tells of pets and seasons as much as of people).
pub fn opens_with_someone(sentence: &str, names: &[String]) -> Option<String> {
    let first = named(sentence, names).into_iter().next()?;
    let ts = tokens(sentence);
    let parts: Vec<&str> = first.split(' ').collect();
    let opens = ts.len() > parts.len()
        && ts
            .iter()
            .zip(&parts)
            .all(|(t, p)| t.core == *p && !t.digits);
    let after = ts.get(parts.len()..)?.iter().map(|t| t.core.as_str());
    (opens && doing(after)).then_some(first)
}

/// Whether the words after a name tell of it doing what people do ([`PEOPLE_DOING`]),
/// past an adverb or two: "just started", "lives".
pub(crate) fn doing<'a>(mut after: impl Iterator<Item = &'a str>) -> bool {
    const ADVERBS: &[&str] = &["just", "now", "finally", "recently", "also", "already"];
    after
        .find(|w| !ADVERBS.contains(w))
        .is_some_and(|w| PEOPLE_DOING.contains(&w))
}

/// Verbs that tell of what people are and do, in the third person or the past: where
/// they live and work, what they own.
const PEOPLE_DOING: &[&str] = &[
    "lives",
    "lived",
    "moved",
    "moves",
    "relocated",
    "works",
    "worked",
    "started",
    "starts",
    "joined",
    "joins",
    "quit",
    "quits",
    "left",
    "leaves",
    "retired",
    "resigned",
    "bought",
    "buys",
    "got",
    "gets",
    "drives",
    "drove",
    "became",
    "married",
    "studies",
    "studied",
    "switched",
    "changed",
    "teaches",
    "taught",
];

/// Whether `text` mentions `value` (lowercase, as [`named`] returns it) as whole words.
pub fn mentions(text: &str, value: &str) -> bool {
    let wanted: Vec<&str> = value.split(' ').collect();
    let have: Vec<String> = tokens(text).into_iter().map(|t| t.core).collect();
    !wanted.is_empty()
        && have
            .windows(wanted.len())
            .any(|w| w.iter().zip(&wanted).all(|(a, b)| a == b))
}

/// Whether `text` names a distinctive word of `value`: "the Dell's keyboard" names
/// "dell xps 13". Connectors, attribute words and short numbers do not count.
pub fn touches(text: &str, value: &str) -> bool {
    let have: Vec<String> = tokens(text).into_iter().map(|t| t.core).collect();
    value
        .split(' ')
        .filter(|w| {
            !CONNECTORS.contains(w)
                && !GENERIC.contains(w)
                && !STOPWORDS.contains(w)
                && if w.chars().all(|c| c.is_ascii_digit()) {
                    w.len() >= 3
                } else {
                    w.chars().count() >= 3
                }
        })
        .any(|w| have.iter().any(|h| h == w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_called_wrong_are_negated_or_said_by_mistake() {
        assert_eq!(
            days_called_wrong("The report is due June 6, not May 30, so shift it."),
            ["may 30"]
        );
        assert_eq!(
            days_called_wrong("My birthday is March 14. I typed March 4 earlier by mistake."),
            ["march 4"]
        );
        assert!(
            days_called_wrong("Actually, the concert on July 4 was so fun I booked July 20.")
                .is_empty()
        );
    }

    #[test]
    fn days_of_the_year() {
        assert_eq!(
            days("My birthday is March 14. I typed March 4 by mistake."),
            ["march 14", "march 4"]
        );
        assert_eq!(
            days("due on the 6th of June, not 30 May 2023"),
            ["june 6", "may 30"]
        );
        assert!(days("In May 2023 we had 40 guests.").is_empty());
    }

    fn n(text: &str) -> Vec<String> {
        named(text, &["priya".to_owned(), "omar".to_owned()])
    }

    #[test]
    fn names_runs_of_capitalised_words_and_codes() {
        assert_eq!(
            n(
                "We finally moved into the new flat in Bristol, and the kitchen is twice the size of the Leeds one."
            ),
            ["bristol", "leeds"]
        );
        assert_eq!(
            n("Priya's new boss at the World Health Organization uses an iPhone 14."),
            ["world health organization", "iphone 14"]
        );
        assert_eq!(n("We are staying at Casa do Largo."), ["casa do largo"]);
        assert_eq!(n("The standup moved to 9:30 in room 12B."), ["9:30", "12b"]);
    }

    #[test]
    fn skips_names_dates_and_common_openers() {
        assert_eq!(n("Another Monday at Globex."), ["globex"]);
        assert_eq!(
            n("Omar started at Initech on 5 September 2022."),
            ["initech"]
        );
        assert!(n("Said goodbye to it. Finally done. Walking is fun.").is_empty());
        // A lexicon item opening a sentence is still one.
        assert_eq!(n("Painting keeps me calm."), ["painting"]);
        assert_eq!(n("Catan has been dethroned."), ["catan"]);
        assert_eq!(n("Gave my PS4 to my nephew."), ["ps4"]);
        // Chat's openers: wishes, discourse words, nouns too general to name anything.
        assert!(n("Stay safe and talk soon! Plus, things have been great.").is_empty());
        assert!(n("Love the energy there. Life's been wild. Must have been fun.").is_empty());
    }

    #[test]
    fn contractions_interjections_and_short_names_are_not_values() {
        assert!(n("You'd be a great fit. Can't wait! We'll see.").is_empty());
        assert!(n("Wow, love that! Glad it went well.").is_empty());
        let people = ["melanie".to_owned()];
        assert!(named("Thanks, Mel! So cool.", &people).is_empty());
        assert_eq!(named("Thanks, Mel! I moved to Leeds.", &people), ["leeds"]);
        // Two letters are too few to stand for a name.
        assert_eq!(
            named("I met Jo in Leeds.", &["joanna".into()]),
            ["jo", "leeds"]
        );
    }

    #[test]
    fn names_lexicon_items_but_not_attribute_words() {
        assert_eq!(
            n("My go-to drink is espresso, and food is ramen."),
            ["espresso", "ramen"]
        );
        assert_eq!(
            n("Omar is a data engineer at Initech."),
            ["engineer", "initech"]
        );
        // A business one runs is the value; "run" there is no sport.
        assert_eq!(n("These days I run a small bookshop."), ["bookshop"]);
        assert_eq!(n("I run every morning."), ["run"]);
    }

    #[test]
    fn mentions_matches_whole_words() {
        assert!(mentions("I left Globex last week.", "globex"));
        assert!(mentions("The Kindle Paperwhite died", "kindle paperwhite"));
        assert!(!mentions("The Kindle died", "kindle paperwhite"));
        assert!(!mentions("at 9:30 sharp", "9"));
        assert!(mentions("Tom's bike", "tom"));
    }

    #[test]
    fn touches_matches_a_distinctive_word() {
        assert!(touches(
            "Coffee went into the Dell's keyboard",
            "dell xps 13"
        ));
        assert!(!touches("It took 13 minutes", "dell xps 13"));
        assert!(!touches("The best of times", "bank of america"));
    }
}
