//! Text helpers shared by the offline roles: sentences, words, content words and keywords.

/// Common English function words, skipped when picking content words.
pub const STOPWORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "because", "been", "before", "being", "but", "by", "can", "could", "did", "do", "does",
    "doing", "for", "from", "get", "got", "had", "has", "have", "having", "he", "her", "here",
    "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "me", "more",
    "my", "no", "not", "now", "of", "on", "one", "only", "or", "our", "out", "really", "she", "so",
    "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "those", "to", "too", "up", "us", "very", "was", "we", "were", "what", "when", "where",
    "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
    "yeah", "oh", "wow", "hey", "hi", "thanks", "thank", "lot", "much", "many", "well", "like",
    "im", "ive", "dont", "it's", "i'm",
];

/// The weekdays, as dates name them.
pub const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Words before "'s" that own nothing: a contraction ("she's", "what's") or a time
/// ("today's").
pub const NOT_OWNERS: &[&str] = &[
    "it",
    "he",
    "she",
    "that",
    "what",
    "who",
    "there",
    "here",
    "where",
    "when",
    "why",
    "how",
    "let",
    "one",
    "today",
    "tonight",
    "tomorrow",
    "yesterday",
    "everyone",
    "everything",
];

/// The months, lowercase, January first.
pub const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Prefixes that make a compound of a word without being one: "ex-boss" is no "ex".
const PREFIXES: &[&str] = &[
    "ex", "non", "anti", "co", "pre", "post", "self", "semi", "un",
];

/// The words of a text for matching against lexicons, in order: as [`words`], but a
/// hyphenated compound comes whole and then in its parts, without a leading prefix
/// ("walk-up", "walk", "up"; "ex-wife", "wife"), and a possessive also without its "'s"
/// ("my ex's name" → "ex's", "ex").
pub fn lexicon_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for token in text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-')) {
        let token = token.trim_matches(['\'', '-']).to_lowercase();
        if token.contains('-') {
            let parts = words(&token);
            let skip = usize::from(
                parts
                    .first()
                    .is_some_and(|p| PREFIXES.contains(&p.as_str())),
            );
            out.push(token);
            out.extend(parts.into_iter().skip(skip));
        } else {
            out.extend(words(&token));
        }
    }
    let mut with_bases = Vec::with_capacity(out.len());
    for w in out {
        let base = w.strip_suffix("'s").map(str::to_owned);
        with_bases.push(w);
        with_bases.extend(base);
    }
    with_bases
}

/// Lowercase words (letters, digits and inner apostrophes).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\'').to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Words that carry content: not stop words, longer than two characters or numeric.
pub fn content_words(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| {
            !STOPWORDS.contains(&w.as_str())
                && (w.chars().count() > 2 || w.chars().all(|c| c.is_ascii_digit()))
        })
        .collect()
}

/// Up to `n` distinct content words, in order of first appearance.
pub fn keywords(text: &str, n: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if n == 0 {
        return out;
    }
    for w in content_words(text) {
        if !out.contains(&w) {
            out.push(w);
            if out.len() == n {
                break;
            }
        }
    }
    out
}

/// Splits text into sentences at `.`, `!` or `?` followed by whitespace or the end.
/// Abbreviations with a single capital letter (`J. Smith`) and decimals do not split.
pub fn sentences(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        current.push(c);
        if matches!(c, '.' | '!' | '?') {
            let next = chars.get(i + 1);
            let at_boundary = next.is_none_or(|n| n.is_whitespace());
            let initial = c == '.'
                && i >= 1
                && chars[i - 1].is_uppercase()
                && (i < 2 || !chars[i - 2].is_alphanumeric());
            let abbreviation = c == '.' && ends_with_abbreviation(&current[..current.len() - 1]);
            if at_boundary && !initial && !abbreviation {
                let s = current.trim().to_owned();
                if !s.is_empty() {
                    out.push(s);
                }
                current.clear();
            }
        }
    }
    let rest = current.trim();
    if !rest.is_empty() {
        out.push(rest.to_owned());
    }
    out
}

/// The share of `text`, in characters, that asks: its sentences ending with `?` (or
/// `?!`). "You drew it? What does it mean to you?" is all asking; "Love that purple!
/// For walking or running?" half.
pub fn asked_share(text: &str) -> f64 {
    let all: usize = text.chars().filter(|c| !c.is_whitespace()).count();
    if all == 0 {
        return 0.0;
    }
    let asked: usize = sentences(text)
        .iter()
        .filter(|s| s.trim_end_matches('!').ends_with('?'))
        .map(|s| s.chars().filter(|c| !c.is_whitespace()).count())
        .sum();
    asked as f64 / all as f64
}

/// Abbreviations whose period does not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "st", "dr", "mr", "mrs", "ms", "prof", "jr", "sr", "vs", "etc", "e.g", "i.e", "no", "mt", "ft",
    "ave", "approx", "dept", "inc", "ltd", "co", "corp",
];

fn ends_with_abbreviation(text: &str) -> bool {
    let last = text
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or_default()
        .to_lowercase();
    ABBREVIATIONS.contains(&last.as_str())
}

/// Rewrites `text` word by word: `f` gets each space-separated token's position and
/// its lowercase core (letters, digits, apostrophes) and may return a replacement,
/// which keeps the token's leading and trailing punctuation.
pub fn map_words(text: &str, mut f: impl FnMut(usize, &str) -> Option<String>) -> String {
    text.split(' ')
        .enumerate()
        .map(|(i, token)| {
            let core: String = token
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == '\'' || *c == '’')
                .collect::<String>()
                .to_lowercase()
                .replace('’', "'");
            let lead: String = token.chars().take_while(|c| !c.is_alphanumeric()).collect();
            let mut trail: Vec<char> = token
                .chars()
                .rev()
                .take_while(|c| !c.is_alphanumeric())
                .collect();
            trail.reverse();
            match f(i, &core) {
                Some(r) => format!("{lead}{r}{}", trail.into_iter().collect::<String>()),
                None => token.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` without its bracketed annotations ("[shares an image: a photo of a cake]"):
/// they describe what was shared, and state nothing.
pub fn without_annotations(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '[' => depth += 1,
            ']' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Jaccard similarity of two sets of words.
pub fn jaccard(a: &[String], b: &[String]) -> f64 {
    let a: std::collections::HashSet<&String> = a.iter().collect();
    let b: std::collections::HashSet<&String> = b.iter().collect();
    let union = a.union(&b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

/// The byte position of `phrase` in `lower` as whole words.
pub fn find_phrase(lower: &str, phrase: &str) -> Option<usize> {
    if phrase.is_empty() {
        return None;
    }
    let mut start = 0;
    while let Some(pos) = lower[start..].find(phrase) {
        let at = start + pos;
        let before = lower[..at].chars().next_back();
        let after = lower[at + phrase.len()..].chars().next();
        if !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric) {
            return Some(at);
        }
        start = at + phrase.len();
    }
    None
}

/// Compiles a pattern the crate writes itself: a constant, or one built from constant
/// words. Such a pattern is valid by construction, and every static that holds one is
/// compiled by an `every_constant_pattern_compiles` test.
#[allow(clippy::expect_used)]
pub(crate) fn constant_regex(pattern: &str) -> regex::Regex {
    regex::Regex::new(pattern).expect("constant pattern") // invariant: callers pass only patterns built from constants, each compiled by a test
}

/// `text` split at each " and " that does not join two capitalised words: "Crown and
/// Anchor" and "Petal and Stem" are names, "I sold the Ford and bought a Rivian" two
/// clauses.
pub(crate) fn split_and(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (at, _) in text.match_indices(" and ") {
        let before = text[start..at].split_whitespace().next_back();
        let after = text[at + 5..].split_whitespace().next();
        // "I" is no name: "I moved to Paris and I love it" is two clauses.
        let capital = |w: Option<&str>| {
            w.is_some_and(|w| w.starts_with(char::is_uppercase) && w != "I" && !w.starts_with("I'"))
        };
        // "between 5 and 8 am" is one span too.
        let number =
            |w: Option<&str>| w.is_some_and(|w| w.starts_with(|c: char| c.is_ascii_digit()));
        // "My husband and I are both nurses", "Selin's husband and Selin were …": a
        // compound subject ("I sold the car and we were relieved" is two clauses).
        let joined_subject = after.is_some_and(|w| w == "I" || w.starts_with(char::is_uppercase));
        let subject = joined_subject
            && text[at + 5..]
                .split_whitespace()
                .nth(1)
                .is_some_and(|w| matches!(w, "are" | "were" | "both"));
        let one_span =
            (capital(before) && capital(after)) || (number(before) && number(after)) || subject;
        if !one_span {
            out.push(&text[start..at]);
            start = at + 5;
        }
    }
    out.push(&text[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_phrase_is_found_nowhere_and_no_keywords_are_none() {
        assert_eq!(find_phrase("i love tea", ""), None);
        assert_eq!(find_phrase("i love tea", "love"), Some(2));
        assert!(keywords("painting the fence blue", 0).is_empty());
        assert_eq!(
            keywords("painting the fence blue", 2),
            ["painting", "fence"]
        );
    }

    #[test]
    fn annotations_are_taken_out() {
        assert_eq!(
            without_annotations("Look at this! [shares an image: a cake] Nice, right?"),
            "Look at this!  Nice, right?"
        );
        assert_eq!(without_annotations("no brackets"), "no brackets");
        assert_eq!(without_annotations("a stray ] stays"), "a stray ] stays");
    }

    #[test]
    fn abbreviations_do_not_split() {
        assert_eq!(
            sentences("It says St. Mary's Hospital now. Dr. Patel agrees."),
            vec!["It says St. Mary's Hospital now.", "Dr. Patel agrees."]
        );
    }

    #[test]
    fn sentence_splitting() {
        assert_eq!(
            sentences("I met J. Smith today. It cost 3.5 dollars! Was it fun? Yes"),
            vec![
                "I met J. Smith today.",
                "It cost 3.5 dollars!",
                "Was it fun?",
                "Yes"
            ]
        );
        assert!(sentences("").is_empty());
        assert_eq!(sentences("Wait... what?!"), vec!["Wait...", "what?!"]);
    }

    #[test]
    fn the_share_that_asks_counts_the_questions_characters() {
        assert_eq!(asked_share("You drew it? What does it mean to you?"), 1.0);
        assert_eq!(asked_share("I ran the Berlin marathon."), 0.0);
        assert_eq!(asked_share(""), 0.0);
        assert_eq!(asked_share("You did what?!"), 1.0);
        // "Love it!" is 7 characters without spaces, "Why?" 4.
        let share = asked_share("Love it! Why?");
        assert!((share - 4.0 / 11.0).abs() < 1e-9, "{share}");
        // A question mark inside a sentence ends no question.
        assert_eq!(asked_share("The sign said \"open?\" and it was."), 0.0);
    }

    #[test]
    fn content_and_keywords() {
        assert_eq!(
            content_words("I went to the LGBTQ support group"),
            vec!["went", "lgbtq", "support", "group"]
        );
        assert_eq!(keywords("dogs and dogs and cats", 5), vec!["dogs", "cats"]);
        assert!((jaccard(&words("a b c"), &words("b c d")) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn lexicon_words_keep_compounds_whole_and_possessives_bare() {
        assert_eq!(
            lexicon_words("My Brooklyn walk-up's AC - broken."),
            vec![
                "my",
                "brooklyn",
                "walk-up's",
                "walk-up",
                "walk",
                "up's",
                "up",
                "ac",
                "broken"
            ]
        );
        assert_eq!(
            lexicon_words("my go-to drink"),
            vec!["my", "go-to", "go", "to", "drink"]
        );
        assert_eq!(
            lexicon_words("my ex-boss and my ex's name"),
            vec!["my", "ex-boss", "boss", "and", "my", "ex's", "ex", "name"]
        );
    }
}
