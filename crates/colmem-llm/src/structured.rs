//! JSON-structured answers: ask for JSON, extract it robustly, repair once, or fail with a typed error.
//!
//! [`complete_json`] sends the schema as `response_format` to a model that supports it; to the
//! others it adds an instruction holding the schema. Either way it then extracts the first JSON
//! value that deserialises into the wanted type from the answer: the whole answer, then each code
//! fence, then each balanced `{…}` or `[…]` span (so leading prose and trailing text are skipped).
//! If none does, it asks once more with a repair prompt that quotes the parse error; a second
//! failure is [`Error::UnparseableJson`], never an empty or default value.

use serde::de::DeserializeOwned;

use crate::chat::{ChatModel, ChatRequest, JsonSchema, Message, Usage};
use crate::error::{Error, Result};

/// How many characters of a bad answer an error quotes.
const EXCERPT_CHARS: usize = 200;

/// How many `{`/`[` positions the balanced scan tries before giving up.
const MAX_SCAN_STARTS: usize = 256;

/// Asks `model` for an answer shaped by `schema` and deserialises it into `T`.
///
/// Returns the value and the usage of every completion it took (one, or two after a repair).
pub fn complete_json<T: DeserializeOwned>(
    model: &dyn ChatModel,
    request: &ChatRequest,
    schema: &JsonSchema,
) -> Result<(T, Usage)> {
    let mut first = request.clone();
    if model.supports_json_schema() {
        first.response_format = Some(schema.clone());
    } else {
        first.response_format = None;
        first.messages.push(Message::system(instruction(schema)));
    }
    let answer = model.complete(&first)?;
    let mut usage = answer.usage;
    let reason = match extract_json::<T>(&answer.text) {
        Ok(value) => return Ok((value, usage)),
        Err(reason) => reason,
    };

    let mut repair = first;
    repair.messages.push(Message::assistant(answer.text));
    repair
        .messages
        .push(Message::user(repair_prompt(schema, &reason)));
    let answer = model.complete(&repair)?;
    usage += answer.usage;
    match extract_json::<T>(&answer.text) {
        Ok(value) => Ok((value, usage)),
        Err(reason) => Err(Error::UnparseableJson {
            attempts: 2,
            reason,
            excerpt: answer.text.chars().take(EXCERPT_CHARS).collect(),
        }),
    }
}

fn instruction(schema: &JsonSchema) -> String {
    format!(
        "Answer with one JSON value that follows this JSON schema, and nothing else: no prose, no code fences.\nSchema: {}",
        schema.schema
    )
}

fn repair_prompt(schema: &JsonSchema, reason: &str) -> String {
    format!(
        "Your previous answer could not be used: {reason}. Reply again with only the corrected JSON value, following this JSON schema, with no prose and no code fences.\nSchema: {}",
        schema.schema
    )
}

/// Finds the first JSON value in `text` that deserialises into `T`.
///
/// Tries the whole text, then the contents of each Markdown code fence, then each balanced
/// `{…}` or `[…]` span from left to right. The error says why nothing fit.
pub fn extract_json<T: DeserializeOwned>(text: &str) -> std::result::Result<T, String> {
    let mut first_error: Option<String> = None;
    let mut note = |error: String| {
        if first_error.is_none() {
            first_error = Some(error);
        }
    };
    let whole = text.trim();
    if whole.is_empty() {
        return Err("the answer is empty".to_owned());
    }
    match serde_json::from_str::<T>(whole) {
        Ok(value) => return Ok(value),
        Err(e) if e.is_data() => note(format!("the JSON does not fit the schema: {e}")),
        Err(_) => {}
    }
    for fenced in code_fences(text) {
        match serde_json::from_str::<T>(fenced.trim()) {
            Ok(value) => return Ok(value),
            Err(e) if e.is_data() => note(format!("the JSON does not fit the schema: {e}")),
            Err(e) => note(format!("the code block is not valid JSON: {e}")),
        }
    }
    for span in balanced_spans(text) {
        match serde_json::from_str::<T>(span) {
            Ok(value) => return Ok(value),
            Err(e) if e.is_data() => note(format!("the JSON does not fit the schema: {e}")),
            Err(_) => {}
        }
    }
    Err(first_error.unwrap_or_else(|| "the answer holds no JSON object or array".to_owned()))
}

/// The contents of each ```` ``` ```` fence, with any language tag dropped.
fn code_fences(text: &str) -> Vec<&str> {
    let mut fences = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        // Skip the info string (`json`, `JSON`, …) up to the end of the line.
        let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
        let body = &after[body_start..];
        match body.find("```") {
            Some(close) => {
                fences.push(&body[..close]);
                rest = &body[close + 3..];
            }
            None => {
                // An unclosed fence (a truncated answer): take what is there.
                fences.push(body);
                break;
            }
        }
    }
    fences
}

/// Each balanced `{…}` or `[…]` span, by start position; brackets inside strings do not count.
fn balanced_spans(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'{' || **b == b'[')
        .take(MAX_SCAN_STARTS)
        .filter_map(move |(start, _)| balanced_end(bytes, start).map(|end| &text[start..end]))
}

/// The end (exclusive) of the bracketed value starting at `start`, if it closes.
fn balanced_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut stack: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => stack.push(b'}'),
            b'[' => stack.push(b']'),
            b'}' | b']' => {
                if stack.pop() != Some(b) {
                    return None;
                }
                if stack.is_empty() {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Replaces each `{{name}}` of a prompt `template` with its value, in one pass: a value
/// that itself contains `{{…}}` (a user's text, a stored card) is not expanded again, and
/// an unknown placeholder is left as written.
pub fn fill_prompt(template: &str, vars: &[(&str, String)]) -> String {
    let mut out =
        String::with_capacity(template.len() + vars.iter().map(|v| v.1.len()).sum::<usize>());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let value = after.find("}}").and_then(|close| {
            let name = &after[..close];
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (v, close))
        });
        match value {
            Some((value, close)) => {
                out.push_str(value);
                rest = &after[close + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[test]
    fn fill_does_not_expand_placeholders_inside_values() {
        let filled = fill_prompt(
            "a {{x}} b {{y}} c {{unknown}}",
            &[("x", "{{y}}".to_owned()), ("y", "Y".to_owned())],
        );
        assert_eq!(filled, "a {{y}} b Y c {{unknown}}");
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Fact {
        subject: String,
        score: f64,
    }

    fn check(text: &str, expect: Option<(&str, f64)>) {
        let got = extract_json::<Fact>(text)
            .ok()
            .map(|f| (f.subject, f.score));
        let expect = expect.map(|(s, n)| (s.to_owned(), n));
        assert_eq!(got, expect, "extracting from {text:?}");
    }

    #[test]
    fn extraction() {
        check(r#"{"subject": "alice", "score": 1}"#, Some(("alice", 1.0)));
        check(
            "```json\n{\"subject\": \"bob\", \"score\": 2}\n```",
            Some(("bob", 2.0)),
        );
        check(
            "Sure! Here is the JSON:\n```\n{\"subject\": \"c\", \"score\": 3}\n```\nHope it helps.",
            Some(("c", 3.0)),
        );
        check(
            r#"The answer is {"subject": "d } {", "score": 4} and that is all {"#,
            Some(("d } {", 4.0)),
        );
        check(
            r#"{"note": {"x": 1}} then {"subject": "e", "score": 5}"#,
            Some(("e", 5.0)),
        );
        check(
            "```json\n{\"subject\": \"f\", \"score\": 6}",
            Some(("f", 6.0)),
        );
        check(r#"{"subject": "g", "score": "#, None);
        check("no json here", None);
        check("", None);
        check(r#"{"subject": "h"}"#, None);
    }

    #[test]
    fn errors_say_why() {
        let err = extract_json::<Fact>(r#"{"subject": "h"}"#).unwrap_err();
        assert!(err.contains("does not fit the schema"), "{err}");
        let err = extract_json::<Fact>("nothing").unwrap_err();
        assert!(err.contains("no JSON"), "{err}");
    }

    proptest::proptest! {
        /// Whatever prose surrounds it, an embedded object comes back intact.
        #[test]
        fn embedded_objects_are_found(
            subject in ".*",
            score in -1_000_000i32..1_000_000,
            before in "[^{\\[]*",
            after in ".*",
            fenced in proptest::bool::ANY,
        ) {
            let score = f64::from(score);
            let object = serde_json::json!({"subject": subject, "score": score}).to_string();
            let text = if fenced {
                format!("{before}\n```json\n{object}\n```\n{after}")
            } else {
                format!("{before}{object}{after}")
            };
            let fact: Fact = extract_json(&text).unwrap();
            proptest::prop_assert_eq!(fact, Fact { subject, score });
        }
    }

    #[test]
    fn arrays_and_escapes() {
        let v: Vec<u32> = extract_json("numbers: [1, 2, 3].").unwrap();
        assert_eq!(v, vec![1, 2, 3]);
        let s: Vec<String> = extract_json(r#"x ["a\"]", "b"] y"#).unwrap();
        assert_eq!(s, vec!["a\"]".to_owned(), "b".to_owned()]);
    }
}
