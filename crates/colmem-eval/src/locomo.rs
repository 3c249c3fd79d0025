//! The LoCoMo loader: conversations, sessions, turns and questions, parsed once into
//! typed values.
//!
//! The format has quirks the loader absorbs: `session_N_date_time` keys with no
//! session; image turns (`img_url`, `blip_caption`, `query`) whose caption is kept;
//! answers that are numbers; category-5 questions with only an `adversarial_answer`;
//! and malformed evidence ids such as `"D8:6; D9:17"` (two ids), `"D30:05"` (a
//! leading zero), `"D:11:26"` (a stray colon), `"D"` (nothing) or an id that names no
//! turn of the dialogue (`"D10:19"` where session 10 ends at `D10:16`): what is not a
//! turn is reported, not guessed. A field of the wrong type (a `qa` that is not a list,
//! a category that is not a whole number), a turn id given twice and a sample id given
//! to two conversations are errors.
//!
//! The dialogue ([`Dialogue`]) and the gold data ([`Question`]) are separate types:
//! ingestion takes a `Dialogue` and so cannot see answers or evidence. The file's
//! `observation`, `session_summary` and `event_summary` fields were written by a model
//! and are never read.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use colmem_core::Timestamp;
use serde_json::Value;

use crate::error::{EvalError, Result};

/// A dialogue turn id `D<session>:<turn>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct DiaId {
    /// The session number, from 1.
    pub session: u32,
    /// The turn number within the session, from 1.
    pub turn: u32,
}

impl fmt::Display for DiaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "D{}:{}", self.session, self.turn)
    }
}

impl FromStr for DiaId {
    type Err = String;

    /// Parses one id, tolerating leading zeros and a stray colon after the `D`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let body = s
            .trim()
            .strip_prefix('D')
            .ok_or_else(|| format!("{s:?} does not start with D"))?;
        let body = body.trim_start_matches(':');
        let (session, turn) = body
            .split_once(':')
            .ok_or_else(|| format!("{s:?} has no session:turn"))?;
        let session: u32 = session
            .trim()
            .parse()
            .map_err(|_| format!("{s:?} has no session number"))?;
        let turn: u32 = turn
            .trim()
            .parse()
            .map_err(|_| format!("{s:?} has no turn number"))?;
        Ok(DiaId { session, turn })
    }
}

/// Parses an evidence entry that may hold several ids separated by `;` or `,`.
/// Returns the ids and the pieces that are not ids.
pub fn parse_evidence(entry: &str) -> (Vec<DiaId>, Vec<String>) {
    let mut ids = Vec::new();
    let mut bad = Vec::new();
    for piece in entry
        .split([';', ','])
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        match piece.parse::<DiaId>() {
            Ok(id) => ids.push(id),
            Err(_) => bad.push(piece.to_owned()),
        }
    }
    (ids, bad)
}

/// One turn of the dialogue.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Turn {
    /// Its id.
    pub id: DiaId,
    /// Who spoke.
    pub speaker: String,
    /// What they said.
    pub text: String,
    /// The caption of a shared image, if any.
    pub image_caption: Option<String>,
}

impl Turn {
    /// The text with the image caption appended, as it is ingested.
    pub fn full_text(&self) -> String {
        match &self.image_caption {
            Some(caption) => format!("{} [shares an image: {caption}]", self.text),
            None => self.text.clone(),
        }
    }
}

/// One session: turns on one date.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Session {
    /// The session number.
    pub number: u32,
    /// When it happened (world time), if the file says and it parses.
    pub date: Option<Timestamp>,
    /// The date as written.
    pub date_text: Option<String>,
    /// The turns, in order.
    pub turns: Vec<Turn>,
}

/// The dialogue of one conversation: all that may be ingested.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Dialogue {
    /// The first speaker.
    pub speaker_a: String,
    /// The second speaker.
    pub speaker_b: String,
    /// The sessions, in order.
    pub sessions: Vec<Session>,
}

impl Dialogue {
    /// Every turn, in order.
    pub fn turns(&self) -> impl Iterator<Item = (&Session, &Turn)> {
        self.sessions
            .iter()
            .flat_map(|s| s.turns.iter().map(move |t| (s, t)))
    }
}

/// A question with its gold answer and evidence.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Question {
    /// The question.
    pub question: String,
    /// The gold answer (absent for adversarial category-5 questions).
    pub answer: Option<String>,
    /// The category: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial.
    pub category: u8,
    /// The evidence turns.
    pub evidence: Vec<DiaId>,
    /// Evidence entries that are not turn ids.
    pub malformed_evidence: Vec<String>,
}

/// One conversation of the file.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Conversation {
    /// The sample id (e.g. `conv-26`).
    pub sample_id: String,
    /// The dialogue.
    pub dialogue: Dialogue,
    /// The questions.
    pub questions: Vec<Question>,
}

/// Loads a LoCoMo JSON file.
pub fn load(path: &Path) -> Result<Vec<Conversation>> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Io {
        path: shown.clone(),
        source,
    })?;
    parse(&text, &shown)
}

/// Parses the text of a LoCoMo file; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<Vec<Conversation>> {
    let format = |message: String| EvalError::Format {
        path: origin.to_owned(),
        message,
    };
    let root: Value =
        serde_json::from_str(text).map_err(|e| format(format!("invalid JSON: {e}")))?;
    let samples = root
        .as_array()
        .ok_or_else(|| format("expected a JSON array of conversations".into()))?;
    let conversations = samples
        .iter()
        .enumerate()
        .map(|(i, sample)| {
            parse_sample(sample).map_err(|m| format(format!("conversation {i}: {m}")))
        })
        .collect::<Result<Vec<_>>>()?;
    // Each conversation is ingested as its own user, named by its sample id: two with
    // one id would be merged.
    let mut ids: Vec<&str> = conversations.iter().map(|c| c.sample_id.as_str()).collect();
    ids.sort_unstable();
    if let Some(pair) = ids.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(format(format!(
            "two conversations have the sample_id {:?}",
            pair[0]
        )));
    }
    Ok(conversations)
}

fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn parse_sample(sample: &Value) -> std::result::Result<Conversation, String> {
    let sample_id = sample
        .get("sample_id")
        .and_then(text_of)
        .ok_or("missing sample_id")?;
    let conv = sample
        .get("conversation")
        .and_then(Value::as_object)
        .ok_or("missing conversation object")?;
    let speaker = |key: &str| {
        conv.get(key)
            .and_then(text_of)
            .ok_or(format!("missing {key}"))
    };
    let (speaker_a, speaker_b) = (speaker("speaker_a")?, speaker("speaker_b")?);
    let mut sessions = Vec::new();
    let mut seen_turns = std::collections::HashSet::new();
    for (key, value) in conv {
        let Some(number) = key
            .strip_prefix("session_")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let turns_json = value
            .as_array()
            .ok_or(format!("{key} is not a list of turns"))?;
        let date_text = conv
            .get(&format!("session_{number}_date_time"))
            .and_then(text_of);
        let mut turns = Vec::with_capacity(turns_json.len());
        for (j, turn) in turns_json.iter().enumerate() {
            // A field that is absent is `None`; one of the wrong type is an error.
            let field = |name: &str| match turn.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(value) => text_of(value)
                    .map(Some)
                    .ok_or(format!("{key}[{j}].{name} is not text")),
            };
            let id_text = field("dia_id")?.ok_or(format!("{key}[{j}] has no dia_id"))?;
            let id: DiaId = id_text.parse().map_err(|e| format!("{key}[{j}]: {e}"))?;
            if !seen_turns.insert(id) {
                return Err(format!("{key}[{j}]: the turn id {id} appears twice"));
            }
            let text = field("text")?.unwrap_or_default();
            let image_caption = field("blip_caption")?.filter(|c| !c.trim().is_empty());
            if text.trim().is_empty() && image_caption.is_none() {
                return Err(format!("{key}[{j}] ({id}) has no text"));
            }
            turns.push(Turn {
                id,
                speaker: field("speaker")?.ok_or(format!("{key}[{j}] has no speaker"))?,
                text,
                image_caption,
            });
        }
        let date = match date_text.as_deref() {
            None => None,
            Some(text) => Some(parse_session_date(text).ok_or(format!(
                "session_{number}_date_time {text:?} is not a date like \"1:56 pm on 8 May, 2023\""
            ))?),
        };
        sessions.push(Session {
            number,
            date,
            date_text,
            turns,
        });
    }
    sessions.sort_by_key(|s| s.number);
    let mut questions = Vec::new();
    let qa = match sample.get("qa") {
        None | Some(Value::Null) => &[][..],
        Some(qa) => qa
            .as_array()
            .ok_or("qa is not a list of questions")?
            .as_slice(),
    };
    for (j, q) in qa.iter().enumerate() {
        let question = q
            .get("question")
            .and_then(text_of)
            .ok_or(format!("qa[{j}] has no question"))?;
        let category = match q.get("category") {
            None | Some(Value::Null) => return Err(format!("qa[{j}] has no category")),
            Some(c) => c
                .as_u64()
                .and_then(|c| u8::try_from(c).ok())
                .ok_or(format!(
                    "qa[{j}]'s category {c} is not a whole number from 0 to 255"
                ))?,
        };
        let entries = match q.get("evidence") {
            None | Some(Value::Null) => &[][..],
            Some(e) => e
                .as_array()
                .ok_or(format!("qa[{j}]'s evidence is not a list"))?
                .as_slice(),
        };
        let mut evidence = Vec::new();
        let mut malformed = Vec::new();
        for entry in entries {
            let text =
                text_of(entry).ok_or(format!("qa[{j}]'s evidence holds {entry}, not an id"))?;
            let (ids, bad) = parse_evidence(&text);
            // An id that names no turn of the dialogue ("D10:19" where session 10 ends
            // at D10:16) is reported with the malformed ones: no retrieval can find it.
            for id in ids {
                if seen_turns.contains(&id) {
                    evidence.push(id);
                } else {
                    malformed.push(format!("{id} (no such turn)"));
                }
            }
            malformed.extend(bad);
        }
        evidence.dedup();
        questions.push(Question {
            question,
            answer: q.get("answer").and_then(text_of),
            category,
            evidence,
            malformed_evidence: malformed,
        });
    }
    Ok(Conversation {
        sample_id,
        dialogue: Dialogue {
            speaker_a,
            speaker_b,
            sessions,
        },
        questions,
    })
}

/// Parses a session date such as `1:56 pm on 8 May, 2023` (UTC).
pub fn parse_session_date(text: &str) -> Option<Timestamp> {
    // `%B` takes a full or abbreviated month name, `%p` am or pm, in any case.
    let dt = jiff::civil::DateTime::strptime("%I:%M %p on %d %B, %Y", text.trim()).ok()?;
    let zoned = dt.to_zoned(jiff::tz::TimeZone::UTC).ok()?;
    Some(Timestamp::from_millis(zoned.timestamp().as_millisecond()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_quirks() {
        let id = |s, t| DiaId {
            session: s,
            turn: t,
        };
        assert_eq!(
            parse_evidence("D8:6; D9:17"),
            (vec![id(8, 6), id(9, 17)], vec![])
        );
        assert_eq!(parse_evidence("D30:05"), (vec![id(30, 5)], vec![]));
        assert_eq!(parse_evidence("D:11:26"), (vec![id(11, 26)], vec![]));
        assert_eq!(parse_evidence("D"), (vec![], vec!["D".to_string()]));
        assert_eq!(id(3, 7).to_string(), "D3:7");
    }

    #[test]
    fn session_dates() {
        let t = parse_session_date("1:56 pm on 8 May, 2023").unwrap();
        assert_eq!(t.to_string(), "2023-05-08T13:56:00Z");
        assert_eq!(
            parse_session_date("12:09 am on 13 September, 2023")
                .unwrap()
                .to_string(),
            "2023-09-13T00:09:00Z"
        );
        assert_eq!(
            parse_session_date("10:37 am on 27 June, 2023")
                .unwrap()
                .to_string(),
            "2023-06-27T10:37:00Z"
        );
        assert!(parse_session_date("sometime").is_none());
    }

    #[test]
    fn parses_a_small_file_with_quirks() {
        let text = r#"[{"sample_id": "c1", "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_2_date_time": "9:00 am on 2 May, 2023",
            "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "later"}],
            "session_1_date_time": "1:56 pm on 1 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "look", "img_url": ["x"], "blip_caption": "a dog", "query": "dog"},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "nice"}],
            "session_3_date_time": "9:00 am on 9 May, 2023"},
          "observation": {"should": "never be read"},
          "qa": [{"question": "q?", "answer": 2022, "evidence": ["D1:1; D2:1", "D2:9"], "category": 2},
                 {"question": "adv?", "adversarial_answer": "x", "evidence": ["D"], "category": 5}]}]"#;
        let convs = parse(text, "inline").unwrap();
        let c = &convs[0];
        assert_eq!(
            c.dialogue.sessions.len(),
            2,
            "a date without a session is not a session"
        );
        assert_eq!(c.dialogue.sessions[0].number, 1);
        let first = &c.dialogue.sessions[0].turns[0];
        assert_eq!(first.full_text(), "look [shares an image: a dog]");
        assert_eq!(c.questions[0].answer.as_deref(), Some("2022"));
        assert_eq!(c.questions[0].evidence.len(), 2);
        assert_eq!(
            c.questions[0].malformed_evidence,
            vec!["D2:9 (no such turn)".to_string()],
            "an id that names no turn of the dialogue is reported, not kept"
        );
        assert_eq!(c.questions[1].answer, None);
        assert_eq!(c.questions[1].malformed_evidence, vec!["D".to_string()]);
    }

    #[test]
    fn bad_files_are_typed_errors() {
        for (text, expected) in [
            ("not json", "invalid JSON"),
            ("{}", "expected a JSON array"),
            (r#"[{"sample_id": "x"}]"#, "missing conversation"),
            (
                r#"[{"sample_id": "x", "conversation": {"speaker_a": "a", "speaker_b": "b", "session_1": [{"speaker": "a", "dia_id": "X1"}]}}]"#,
                "does not start with D",
            ),
            (
                r#"[{"sample_id": "x", "conversation": {"speaker_a": "a", "speaker_b": "b"}, "qa": {"question": "q"}}]"#,
                "qa is not a list",
            ),
            (
                r#"[{"sample_id": "x", "conversation": {"speaker_a": "a", "speaker_b": "b"}, "qa": [{"question": "q", "category": 2.0}]}]"#,
                "category 2.0 is not a whole number",
            ),
            (
                r#"[{"sample_id": "x", "conversation": {"speaker_a": "a", "speaker_b": "b"}, "qa": [{"question": "q", "category": 2, "evidence": "D1:1"}]}]"#,
                "evidence is not a list",
            ),
            (
                r#"[{"sample_id": "x", "conversation": {"speaker_a": "a", "speaker_b": "b"}, "qa": [{"question": "q", "category": 2, "evidence": [{"id": 1}]}]}]"#,
                "not an id",
            ),
            (
                r#"[{"sample_id": "x", "conversation": {"speaker_a": "a", "speaker_b": "b", "session_1": [{"speaker": "a", "dia_id": "D1:1", "text": ["hi"]}]}}]"#,
                "session_1[0].text is not text",
            ),
            (
                r#"[{"sample_id": "x", "conversation": {"speaker_a": "a", "speaker_b": "b", "session_1": [{"speaker": "a", "dia_id": "D1:1", "text": "hi"}, {"speaker": "b", "dia_id": "D1:1", "text": "hi"}]}}]"#,
                "the turn id D1:1 appears twice",
            ),
            (
                r#"[{"sample_id": "x", "conversation": {"speaker_a": "a", "speaker_b": "b", "session_1": [{"speaker": "a", "dia_id": "D1:1", "text": " "}]}}]"#,
                "session_1[0] (D1:1) has no text",
            ),
            (
                r#"[{"sample_id": "x", "conversation": {"speaker_a": "a", "speaker_b": "b", "session_1_date_time": "not a date", "session_1": [{"speaker": "a", "dia_id": "D1:1", "text": "hi"}]}}]"#,
                "session_1_date_time \"not a date\" is not a date",
            ),
            (
                r#"[{"sample_id": "x", "conversation": {"speaker_a": "a", "speaker_b": "b"}}, {"sample_id": "x", "conversation": {"speaker_a": "c", "speaker_b": "d"}}]"#,
                "two conversations have the sample_id \"x\"",
            ),
        ] {
            let err = parse(text, "bad.json").unwrap_err();
            assert!(err.to_string().contains(expected), "{text}: {err}");
        }
        assert!(matches!(
            load(Path::new("/no/such/file.json")),
            Err(EvalError::Io { .. })
        ));
    }
}
