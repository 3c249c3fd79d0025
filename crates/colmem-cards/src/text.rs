//! Lexical signals: words, keywords, overlap, cosine, and the `use name=value` /
//! `avoid name=value` directives that cards carry in their plan and execution.

use std::collections::BTreeSet;

/// Words too common to say anything about a task.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "each", "every", "for", "from", "has", "have",
    "how", "if", "in", "into", "is", "it", "its", "many", "much", "of", "on", "one", "or", "that",
    "the", "then", "there", "this", "to", "was", "what", "when", "which", "with", "you", "your",
    "does", "do", "will", "can", "after", "before", "all", "any", "than", "so",
];

/// The lowercase alphanumeric words of `text`, in order.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The distinct content words of `text` (no stopwords, no numbers, at least three letters).
pub fn keywords(text: &str) -> BTreeSet<String> {
    words(text)
        .into_iter()
        .filter(|w| w.len() >= 3 && !w.chars().all(|c| c.is_ascii_digit()))
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect()
}

/// A light English stemmer: drops a plural or a few common endings so "crates" meets "crate".
pub fn stem(word: &str) -> String {
    if let Some(base) = word.strip_suffix("ies")
        && base.len() >= 2
    {
        return format!("{base}y");
    }
    if let Some(base) = word.strip_suffix("es")
        && base.len() >= 2
        && ["x", "ch", "sh", "ss", "z"]
            .iter()
            .any(|end| base.ends_with(end))
    {
        return base.to_owned();
    }
    if let Some(base) = word.strip_suffix('s')
        && base.len() >= 3
        && !base.ends_with('s')
        && !base.ends_with('u')
    {
        return base.to_owned();
    }
    word.to_owned()
}

/// `|a ∩ b| / |a ∪ b|`, 0 for two empty sets.
pub fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f32 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f32 / union as f32
}

/// The share of `card`'s keywords that `task` also has, 0 when `card` has none.
pub fn coverage(card: &BTreeSet<String>, task: &BTreeSet<String>) -> f32 {
    if card.is_empty() {
        return 0.0;
    }
    card.intersection(task).count() as f32 / card.len() as f32
}

/// The cosine of two vectors, 0 when either is zero or their lengths differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    (dot / (na.sqrt() * nb.sqrt())).clamp(-1.0, 1.0)
}

/// Whether a directive recommends or forbids its setting.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Polarity {
    /// `use name=value`.
    Use,
    /// `avoid name=value`.
    Avoid,
}

/// One `use name=value` or `avoid name=value` in a card's text.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Directive {
    /// Use or avoid.
    pub polarity: Polarity,
    /// The decision's name.
    pub name: String,
    /// The setting.
    pub value: String,
}

impl Directive {
    /// Whether following both would be impossible: the same setting used and avoided,
    /// or two different settings of one decision both used.
    pub fn contradicts(&self, other: &Directive) -> bool {
        if self.name != other.name {
            return false;
        }
        match (self.polarity, other.polarity) {
            (Polarity::Use, Polarity::Use) => self.value != other.value,
            (Polarity::Use, Polarity::Avoid) | (Polarity::Avoid, Polarity::Use) => {
                self.value == other.value
            }
            (Polarity::Avoid, Polarity::Avoid) => false,
        }
    }

    /// Whether both push the decision the same way (the same directive, or avoiding the
    /// setting the other does not use).
    pub fn agrees(&self, other: &Directive) -> bool {
        self.name == other.name && !self.contradicts(other)
    }
}

impl std::fmt::Display for Directive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verb = match self.polarity {
            Polarity::Use => "use",
            Polarity::Avoid => "avoid",
        };
        write!(f, "{verb} {}={}", self.name, self.value)
    }
}

/// The directives in `text`, in order: each `use` or `avoid` followed by a `name=value` word.
pub fn directives(text: &str) -> Vec<Directive> {
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let mut out = Vec::new();
    for pair in tokens.windows(2) {
        let polarity = match pair[0]
            .to_lowercase()
            .trim_matches(|c: char| !c.is_alphabetic())
        {
            "use" => Polarity::Use,
            "avoid" => Polarity::Avoid,
            _ => continue,
        };
        let setting =
            pair[1].trim_matches(|c: char| !(c.is_alphanumeric() || c == '=' || c == '_'));
        if let Some((name, value)) = setting.split_once('=')
            && is_token(name)
            && is_token(value)
        {
            out.push(Directive {
                polarity,
                name: name.to_lowercase(),
                value: value.to_lowercase(),
            });
        }
    }
    out
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

/// `text` cut to at most `max` characters at a word boundary, with an ellipsis when cut
/// (nothing at all when `max` is 0: the ellipsis takes a character).
pub fn clip(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    for word in text.split_whitespace() {
        if out.chars().count() + word.chars().count() + 2 > max {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_are_found_and_compared() {
        let d = directives("Avoid rounding=floor; use rounding=ceil instead. use it well");
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].to_string(), "avoid rounding=floor");
        assert_eq!(d[1].to_string(), "use rounding=ceil");
        assert!(!d[0].contradicts(&d[1]));
        assert!(d[0].agrees(&d[1]));
        let floor = directives("use rounding=floor")[0].clone();
        assert!(floor.contradicts(&d[0]));
        assert!(floor.contradicts(&d[1]));
    }

    #[test]
    fn keywords_drop_stopwords_numbers_and_plurals() {
        let k = keywords("How many crates are needed for 17 boxes?");
        assert_eq!(
            k.into_iter().collect::<Vec<_>>(),
            vec!["box", "crate", "needed"]
        );
    }

    #[test]
    fn clipping_keeps_whole_words() {
        assert_eq!(clip("one two three four", 12), "one two…");
        assert_eq!(clip("short", 12), "short");
        assert_eq!(clip("short", 0), "");
    }

    #[test]
    fn cosine_of_mismatched_or_zero_vectors_is_zero() {
        assert_eq!(cosine(&[1.0, 0.0], &[1.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert!((cosine(&[1.0, 1.0], &[2.0, 2.0]) - 1.0).abs() < 1e-6);
    }
}
