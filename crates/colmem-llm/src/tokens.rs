//! Token counting for budgets: a real tokenizer when one is configured, else a documented estimate.

use std::fmt;

/// Counts the tokens a text will cost, for composing prompts into a budget.
pub trait TokenCounter: Send + Sync + fmt::Debug {
    /// The number of tokens of `text`.
    fn count(&self, text: &str) -> usize;
}

/// An estimate of GPT-style BPE token counts, used when no tokenizer is configured.
///
/// `tokens = max(ceil(latin / 4) + cjk, ceil(4 * words / 3))`, where `cjk` counts characters of
/// the CJK, Hiragana, Katakana and Hangul blocks (about one token each), `latin` counts all
/// other characters, and `words` counts whitespace-separated words. English prose runs at about
/// four characters and three quarters of a word per token, so both halves agree there; the
/// maximum keeps the estimate from falling short on text of many short words or numbers.
///
/// It is an estimate, not a tokenizer: expect ±20% on prose, and more on code, URLs and
/// languages with long words. Leave a margin in budgets, or configure a tokenizer.
#[derive(Clone, Copy, Default, Debug)]
pub struct ApproxTokenCounter;

impl TokenCounter for ApproxTokenCounter {
    fn count(&self, text: &str) -> usize {
        let mut latin = 0usize;
        let mut cjk = 0usize;
        for c in text.chars() {
            if is_cjk(c) {
                cjk += 1;
            } else {
                latin += 1;
            }
        }
        let words = text.split_whitespace().count();
        (latin.div_ceil(4) + cjk).max((4 * words).div_ceil(3))
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30ff        // Hiragana, Katakana
        | 0x3400..=0x4dbf      // CJK extension A
        | 0x4e00..=0x9fff      // CJK unified ideographs
        | 0xac00..=0xd7af      // Hangul syllables
        | 0xf900..=0xfaff      // CJK compatibility ideographs
        | 0x20000..=0x2fa1f) // CJK extensions B–F and supplement
}

/// Counts with a Hugging Face `tokenizer.json`, without special tokens.
#[cfg(feature = "local")]
#[derive(Clone)]
pub struct TokenizerCounter {
    tokenizer: std::sync::Arc<tokenizers::Tokenizer>,
}

#[cfg(feature = "local")]
impl TokenizerCounter {
    /// Loads `tokenizer.json` from `path`.
    pub fn from_file(path: &std::path::Path) -> crate::Result<Self> {
        let tokenizer =
            tokenizers::Tokenizer::from_file(path).map_err(|e| crate::Error::ModelFiles {
                dir: path.to_path_buf(),
                message: format!(
                    "the tokenizer does not load ({e}); use a Hugging Face tokenizer.json"
                ),
            })?;
        Ok(Self::new(&tokenizer))
    }

    /// Counts with a copy of this tokenizer, without its truncation and padding: long texts
    /// are counted in full.
    pub fn new(tokenizer: &tokenizers::Tokenizer) -> Self {
        let mut tokenizer = tokenizer.clone();
        tokenizer.with_padding(None);
        // Removing truncation cannot fail; the result only reports invalid truncation parameters.
        let _ = tokenizer.with_truncation(None);
        TokenizerCounter {
            tokenizer: std::sync::Arc::new(tokenizer),
        }
    }
}

#[cfg(feature = "local")]
impl fmt::Debug for TokenizerCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenizerCounter").finish_non_exhaustive()
    }
}

#[cfg(feature = "local")]
impl TokenCounter for TokenizerCounter {
    fn count(&self, text: &str) -> usize {
        match self.tokenizer.encode_fast(text, false) {
            Ok(encoding) => encoding.len(),
            // A text the tokenizer cannot encode still costs something: estimate it.
            Err(_) => ApproxTokenCounter.count(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approximation() {
        let check = |text: &str, expect: usize| {
            assert_eq!(ApproxTokenCounter.count(text), expect, "{text:?}");
        };
        check("", 0);
        check("hello", 2);
        // 44 characters, 9 words: max(11, 12).
        check("The quick brown fox jumps over the lazy dog.", 12);
        // Many short words: the word count wins.
        check("a b c d e f", 8);
        // Ideographs cost one token each.
        check("東京都", 3);
        check("東京 is big", 4);
    }
}
