//! The Constructor role: turns dialogue into memories of four granularities — raw
//! turns, atomic facts, episode summaries and profile entries.
//!
//! The offline constructor is rule-based and deterministic:
//! - **raw turns** keep the text verbatim with its speaker, dialogue id and time;
//! - **facts** are the turn's declarative sentences rewritten to stand alone: first
//!   person becomes the speaker's name, second person the listener's, and relative
//!   dates ("yesterday", "last week") become absolute ones from the session date; each
//!   is labelled with its sentence pattern (S-V, S-V-O, S-V-C, S-V-O-O, S-V-O-C) and
//!   keeps the id of its turn;
//! - **episodes** close on a topic shift (little word overlap between the recent turns
//!   and the next), an explicit request ("let's sum up", "remember this"), or a full
//!   window, and summarise extractively: the most central sentences, with every turn
//!   id of the episode;
//! - **profile entries** are stable preferences ("I love …", "my favourite … is …").

use std::sync::LazyLock;

use colmem_core::Timestamp;
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::change::key_attributes;
use crate::error::Result;
use crate::text::{
    NOT_OWNERS, WEEKDAYS, constant_regex, content_words, find_phrase, jaccard, keywords, map_words,
    sentences, words,
};

/// One dialogue turn as the constructor sees it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TurnInput {
    /// The dialogue id, e.g. `D3:7`.
    pub dialogue_id: String,
    /// The session the turn belongs to.
    pub session: String,
    /// Who spoke.
    pub speaker: String,
    /// The other party, for resolving "you".
    pub listener: String,
    /// What was said (an image caption already appended).
    pub text: String,
    /// When it was said (world time), if known; the pipeline takes a turn without one
    /// as said at the moment it is remembered.
    pub time: Option<Timestamp>,
    /// Whose input it is. Only the user's own current input can instruct the memory
    /// to forget; an agent's words, quotes and documents never can.
    pub origin: Origin,
}

/// Whose words a turn carries.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The user of the session, speaking for themself.
    User,
    /// The serving agent or another participant.
    Other,
}

/// A sentence pattern of an atomic fact.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum Pattern {
    /// Subject–verb: "Caroline ran."
    #[serde(rename = "S-V")]
    Sv,
    /// Subject–verb–object: "Caroline adopted a dog."
    #[serde(rename = "S-V-O")]
    Svo,
    /// Subject–verb–complement: "Caroline is a counselor."
    #[serde(rename = "S-V-C")]
    Svc,
    /// Subject–verb–indirect object–direct object: "Melanie gave Caroline a book."
    #[serde(rename = "S-V-O-O")]
    Svoo,
    /// Subject–verb–object–complement: "They named the dog Max."
    #[serde(rename = "S-V-O-C")]
    Svoc,
}

/// One memory the constructor proposes, before the write rule.
#[derive(Clone, PartialEq, Debug)]
pub struct Memory {
    /// The text.
    pub content: String,
    /// The dialogue ids it came from.
    pub turns: Vec<String>,
    /// The session it came from.
    pub session: String,
    /// World time it refers to.
    pub time: Option<Timestamp>,
    /// Keywords for lexical matching.
    pub keywords: Vec<String>,
    /// A subject key shared by facts about the same thing (for updates).
    pub key: Option<String>,
    /// The sentence pattern, for facts.
    pub pattern: Option<Pattern>,
    /// The speaker, for raw turns and facts.
    pub speaker: Option<String>,
    /// The one spoken to, for raw turns and facts: rewritten in for "you", so a person
    /// and never a value ("Book Assistant a window seat").
    pub listener: Option<String>,
}

/// What one construction step produced.
#[derive(Clone, PartialEq, Debug, Default)]
pub struct Construction {
    /// Raw-turn memories.
    pub raw: Vec<Memory>,
    /// Atomic facts.
    pub facts: Vec<Memory>,
    /// Episode summaries closed by this step.
    pub episodes: Vec<Memory>,
    /// Profile entries.
    pub profile: Vec<Memory>,
}

/// Settings of the offline constructor.
#[derive(Clone, Copy, PartialEq, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConstructorConfig {
    /// An episode closes when it holds this many turns.
    pub episode_window: usize,
    /// A topic shift: word overlap between the last turns and the next below this.
    pub topic_shift_overlap: f64,
    /// How many recent turns the topic-shift test compares.
    pub topic_span: usize,
    /// Sentences an episode summary keeps.
    pub summary_sentences: usize,
    /// Facts shorter than this many words are dropped (greetings, fillers).
    pub min_fact_words: usize,
    /// Whether an agent's turns ([`Origin::Other`]) yield facts and profile entries too.
    /// Off by default: the user is the authority on their own state, and an agent's
    /// reply mostly echoes it ("Noted, aisle seats it is") or advises; its words stay
    /// as its raw turn and in the episodes. An echo kept as a fact outlives the change
    /// of what it echoed (knowledge-update suite: stale facts 46 on, 39 off; accuracy
    /// 0.899 on, 0.902 off).
    pub agent_facts: bool,
}

impl Default for ConstructorConfig {
    fn default() -> Self {
        ConstructorConfig {
            episode_window: 12,
            topic_shift_overlap: 0.04,
            topic_span: 3,
            summary_sentences: 3,
            min_fact_words: 4,
            agent_facts: false,
        }
    }
}

/// The Constructor role.
pub trait Constructor: Send + Sync + std::fmt::Debug {
    /// Processes the next turn of a conversation. `open_episode` holds the turns of the
    /// episode not yet summarised; the constructor updates it (an episode that closes is
    /// summarised and the buffer starts again). Returns the memories to write.
    fn observe(&self, turn: &TurnInput, open_episode: &mut Vec<TurnInput>) -> Result<Construction>;

    /// Closes the open episode at the end of a session or conversation, emptying it.
    fn close(&self, open_episode: &mut Vec<TurnInput>) -> Result<Option<Memory>>;
}

/// The rule-based constructor.
#[derive(Clone, Debug, Default)]
pub struct OfflineConstructor {
    config: ConstructorConfig,
}

const EXPLICIT_REQUESTS: &[&str] = &[
    "sum up",
    "summarize",
    "summarise",
    "remember this",
    "to recap",
    "recap",
];

impl OfflineConstructor {
    /// A constructor with these settings.
    pub fn new(config: ConstructorConfig) -> Self {
        OfflineConstructor { config }
    }

    /// Whether facts and profile entries are drawn from `turn`: the user's own turns,
    /// and an agent's when [`ConstructorConfig::agent_facts`] is on.
    pub fn draws_facts_from(&self, turn: &TurnInput) -> bool {
        turn.origin == Origin::User || self.config.agent_facts
    }

    /// Whether `turn` starts a new topic after `open`.
    pub fn topic_shift(&self, open: &[TurnInput], turn: &TurnInput) -> bool {
        if open.len() < self.config.topic_span {
            return false;
        }
        let recent: Vec<String> = open[open.len() - self.config.topic_span..]
            .iter()
            .flat_map(|t| content_words(&t.text))
            .collect();
        let next = content_words(&turn.text);
        next.len() >= 3 && jaccard(&recent, &next) < self.config.topic_shift_overlap
    }

    fn raw(&self, turn: &TurnInput) -> Memory {
        Memory {
            content: format!("{}: {}", turn.speaker, turn.text),
            turns: vec![turn.dialogue_id.clone()],
            session: turn.session.clone(),
            time: turn.time,
            keywords: keywords(&turn.text, 12),
            key: None,
            pattern: None,
            speaker: Some(turn.speaker.clone()),
            listener: Some(turn.listener.clone()),
        }
    }

    fn facts(&self, turn: &TurnInput) -> Vec<Memory> {
        let mut out = Vec::new();
        let people = [turn.speaker.to_lowercase(), turn.listener.to_lowercase()];
        for whole in telegraphic(sentences(&turn.text), self.config.min_fact_words, &people) {
            if whole.ends_with('?') {
                continue;
            }
            for sentence in per_attribute(&whole) {
                let rewritten = rewrite_person(&sentence, &turn.speaker, &turn.listener);
                let rewritten = match turn.time {
                    Some(t) => absolutise_dates(&rewritten, t),
                    None => rewritten,
                };
                // A fact refers to the moment it looks ahead or back to: "next month we're
                // moving" holds from next month, so a history read of the weeks between
                // still finds the old home; "we moved last month" from last month.
                let time = turn.time.map(|t| {
                    let lower = sentence.to_lowercase();
                    ahead(&lower, t)
                        .or_else(|| behind(&sentence, t))
                        .unwrap_or(t)
                });
                if words(&rewritten).len() < self.config.min_fact_words
                    || content_words(&rewritten).len() < 2
                {
                    continue;
                }
                let pattern = classify(&rewritten);
                let mut kw = keywords(&rewritten, 10);
                // Facts about one attribute of the speaker share a key, so a later change
                // finds the facts it makes stale; the attribute's name is a keyword too.
                let subject = match subject_of(&rewritten, &turn.speaker) {
                    Subject::Speaker => Some(turn.speaker.clone()),
                    Subject::Relation(r) => Some(format!("{}/{r}", turn.speaker)),
                    Subject::TheirPeople => None,
                    // "Alice moved to Paris": Alice's, under her name.
                    Subject::Other => crate::values::opens_with_someone(
                        &rewritten,
                        &[turn.speaker.to_lowercase()],
                    ),
                };
                // A bracketed sentence describes what was shared ("[shares an image: a
                // photo of a cake]"): it states nothing about the speaker.
                let annotation = sentence.starts_with('[') && sentence.ends_with(']');
                let about_listener = about_the_listener(&sentence);
                let key = key_attributes(&rewritten)
                    .first()
                    .filter(|_| !annotation && !about_listener)
                    .zip(subject)
                    .map(|(attribute, subject)| {
                        kw.push((*attribute).to_owned());
                        subject_key(&subject, attribute)
                    });
                out.push(Memory {
                    content: rewritten,
                    turns: vec![turn.dialogue_id.clone()],
                    session: turn.session.clone(),
                    time,
                    keywords: kw,
                    key,
                    pattern: Some(pattern),
                    speaker: Some(turn.speaker.clone()),
                    listener: Some(turn.listener.clone()),
                });
            }
        }
        out
    }

    fn profile(&self, turn: &TurnInput) -> Vec<Memory> {
        let mut out = Vec::new();
        // One entry per attribute, as for facts: "my favourite food is ramen and I live
        // in Lisbon" prefers ramen, and a move leaves it.
        for sentence in sentences(&turn.text).iter().flat_map(|s| per_attribute(s)) {
            if let Some(entry) = preference(&sentence, &turn.speaker) {
                out.push(Memory {
                    keywords: keywords(&entry, 8),
                    key: Some(format!(
                        "{}/profile/{}",
                        turn.speaker.to_lowercase(),
                        keywords(&entry, 3).last().cloned().unwrap_or_default()
                    )),
                    content: entry,
                    turns: vec![turn.dialogue_id.clone()],
                    session: turn.session.clone(),
                    time: turn.time,
                    pattern: None,
                    speaker: Some(turn.speaker.clone()),
                    listener: Some(turn.listener.clone()),
                });
            }
        }
        out
    }

    /// An extractive summary of an episode.
    pub fn summarise(&self, episode: &[TurnInput]) -> Option<Memory> {
        let first = episode.first()?;
        let mut freq: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for t in episode {
            for w in content_words(&t.text) {
                *freq.entry(w).or_insert(0) += 1;
            }
        }
        let mut scored: Vec<(f64, usize, String)> = Vec::new();
        for (i, t) in episode.iter().enumerate() {
            for s in sentences(&t.text) {
                let cw = content_words(&s);
                if cw.len() < 3 || s.ends_with('?') {
                    continue;
                }
                let score = cw
                    .iter()
                    .map(|w| freq.get(w).copied().unwrap_or(0) as f64)
                    .sum::<f64>()
                    / (cw.len() as f64).sqrt();
                scored.push((score, i, rewrite_person(&s, &t.speaker, &t.listener)));
            }
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.truncate(self.config.summary_sentences);
        scored.sort_by_key(|s| s.1);
        let mut topics: Vec<(&String, &usize)> = freq.iter().collect();
        topics.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let topic_words: Vec<&str> = topics.iter().take(4).map(|(w, _)| w.as_str()).collect();
        let mut speakers: Vec<&str> = episode.iter().map(|t| t.speaker.as_str()).collect();
        speakers.sort_unstable();
        speakers.dedup();
        let when = first
            .time
            .map(|t| format!("On {}, ", human_date(t)))
            .unwrap_or_default();
        let body: Vec<String> = scored.into_iter().map(|s| s.2).collect();
        let content = format!(
            "{when}{} talked about {}. {}",
            speakers.join(" and "),
            topic_words.join(", "),
            body.join(" ")
        );
        Some(Memory {
            keywords: keywords(&content, 16),
            content,
            turns: episode.iter().map(|t| t.dialogue_id.clone()).collect(),
            session: first.session.clone(),
            time: first.time,
            key: None,
            pattern: None,
            speaker: None,
            listener: None,
        })
    }
}

impl Constructor for OfflineConstructor {
    fn observe(&self, turn: &TurnInput, open_episode: &mut Vec<TurnInput>) -> Result<Construction> {
        let mut raw = self.raw(turn);
        // A reply is found by the words of what it answers: "It was Matt Patterson"
        // answers "Who performed at the concert?".
        if let Some(asked) = open_episode
            .last()
            .filter(|t| t.session == turn.session && t.text.contains('?'))
        {
            let questions: String = sentences(&asked.text)
                .into_iter()
                .filter(|s| s.ends_with('?'))
                .collect::<Vec<_>>()
                .join(" ");
            for word in content_words(&questions) {
                if !raw.keywords.contains(&word) {
                    raw.keywords.push(word);
                }
            }
        }
        let (facts, profile) = if self.draws_facts_from(turn) {
            (self.facts(turn), self.profile(turn))
        } else {
            (Vec::new(), Vec::new())
        };
        let mut out = Construction {
            raw: vec![raw],
            facts,
            profile,
            episodes: Vec::new(),
        };
        let same_session = open_episode
            .last()
            .is_none_or(|t| t.session == turn.session);
        let lower = turn.text.to_lowercase();
        let requested = EXPLICIT_REQUESTS.iter().any(|r| lower.contains(r));
        let full = open_episode.len() >= self.config.episode_window;
        if !open_episode.is_empty()
            && (!same_session || full || self.topic_shift(open_episode, turn))
        {
            out.episodes.extend(self.summarise(open_episode));
            open_episode.clear();
            open_episode.push(turn.clone());
        } else if requested {
            open_episode.push(turn.clone());
            out.episodes.extend(self.summarise(open_episode));
            open_episode.clear();
        } else {
            open_episode.push(turn.clone());
        }
        Ok(out)
    }

    fn close(&self, open_episode: &mut Vec<TurnInput>) -> Result<Option<Memory>> {
        let summary = self.summarise(open_episode);
        open_episode.clear();
        Ok(summary)
    }
}

/// People and animals a speaker talks about as "my …": a fact about "Dana's sister"
/// is about the sister, not about Dana.
const RELATIONS: &[&str] = &[
    "sister",
    "brother",
    "mother",
    "mom",
    "mum",
    "father",
    "dad",
    "parents",
    "wife",
    "husband",
    "partner",
    "boyfriend",
    "girlfriend",
    "son",
    "daughter",
    "kids",
    "children",
    "cousin",
    "friend",
    "boss",
    "aunt",
    "uncle",
    "grandma",
    "grandmother",
    "grandpa",
    "grandfather",
    "niece",
    "nephew",
    "roommate",
    "neighbour",
    "neighbor",
    "colleague",
    "dog",
    "cat",
    "puppy",
    "kitten",
    "ex",
    "fiance",
    "fiancee",
    "team",
    "manager",
    "mate",
    "flatmate",
    "housemate",
    "coworker",
    "classmate",
    "teammate",
    "grandson",
    "granddaughter",
    "mam",
];

/// Whom a sentence is about, by its subject.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Subject {
    /// The speaker: "Dana moved to Leeds", "Moved to Leeds".
    Speaker,
    /// One of the speaker's people: "Dana's sister".
    Relation(&'static str),
    /// Someone else's people, by a possessive or a count: "Jess's sister moved", "two
    /// colleagues were transferred", "a colleague of Dana's quit".
    TheirPeople,
    /// Someone else otherwise: "the manager of the team quit", "colleagues were
    /// transferred" (but "Mom and I left Brooklyn" opens with a relation too).
    Other,
}

/// `sentences` with each run of two or more too short to be facts alone (fewer than
/// `min_words` words, no question) joined into one where together they tell of a
/// change of an attribute, in so many words, and name a value, none of `people`:
/// "Dubai. Moved. Still jetlagged." is one statement of a home. Any other run ("Sounds
/// great, Jon! Next Friday works.", "Paris. Loved it. Home now.") stays as it was.
fn telegraphic(sentences: Vec<String>, min_words: usize, people: &[String]) -> Vec<String> {
    let short = |s: &String| words(s).len() < min_words && !s.ends_with('?');
    let mut out = Vec::with_capacity(sentences.len());
    let mut run: Vec<String> = Vec::new();
    let flush = |run: &mut Vec<String>, out: &mut Vec<String>| {
        let joined = run.join(" ");
        if run.len() > 1
            && !key_attributes(&joined).is_empty()
            && crate::change::announces_strong_change(&joined)
            && !crate::values::named(&joined, people).is_empty()
        {
            out.push(joined);
        } else {
            out.append(run);
        }
        run.clear();
    };
    for sentence in sentences {
        if short(&sentence) {
            run.push(sentence);
        } else {
            flush(&mut run, &mut out);
            out.push(sentence);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// A sentence in which the speaker tells two of their attributes in clauses joined by
/// "and" ("I live in Porto and work as a nurse"), as one sentence per clause, "I" put
/// before a clause that leaves it out: a later move then replaces the home alone. Only
/// a plain statement splits: each clause opens with "I" or a bare word that is no
/// function word ("I work at Globex and the office is downtown" stays whole), and none
/// says what was, would or might be ("I used to live in Porto and work as a nurse").
/// Any other sentence stays whole.
fn per_attribute(sentence: &str) -> Vec<String> {
    let whole = vec![sentence.to_owned()];
    let parts = crate::text::split_and(sentence);
    if parts.len() < 2 {
        return whole;
    }
    let mut attributes: Vec<&str> = parts
        .iter()
        .filter_map(|p| key_attributes(p).first().copied())
        .collect();
    attributes.sort_unstable();
    attributes.dedup();
    if attributes.len() < 2 {
        return whole;
    }
    let mut out = Vec::with_capacity(parts.len());
    let opens_with_i = words(parts[0])
        .first()
        .is_some_and(|w| matches!(w.as_str(), "i" | "i'm"));
    for (i, part) in parts.iter().enumerate() {
        let ws = words(part);
        let plain = match ws.first().map(String::as_str) {
            Some("i" | "i'm") => ws.get(1).is_some_and(|w| !NOT_PLAIN.contains(&w.as_str())),
            // "My favourite food is ramen", "my rent is 900": the speaker's own thing
            // (not one of their people: "my brother lives in Porto and works as a
            // nurse" is his).
            Some("my" | "our") => ws
                .get(1)
                .is_some_and(|w| relation_word(w).is_none() && !NOT_PLAIN.contains(&w.as_str())),
            // A clause with no subject of its own shares the first one's: only "I"'s
            // is the speaker's.
            Some(w) if i > 0 && opens_with_i => {
                !NOT_PLAIN.contains(&w) && !FUNCTION_WORDS.contains(&w)
            }
            _ => false,
        };
        if !plain || content_words(part).len() < 2 {
            return whole;
        }
        out.push(
            if i > 0 && !matches!(ws[0].as_str(), "i" | "i'm" | "my" | "our") {
                format!("I {part}")
            } else {
                (*part).to_owned()
            },
        );
    }
    out
}

/// Words after "I" that make a clause tell what was, would, might or should be, or
/// what is not.
const NOT_PLAIN: &[&str] = &[
    "used", "would", "will", "might", "may", "could", "should", "must", "want", "wanted", "wish",
    "hope", "hoped", "plan", "planned", "was", "were", "had", "never", "don't", "didn't", "can't",
    "won't", "wouldn't", "not", "also", "still",
];

/// Words that open a clause with a subject or an adverbial of its own: "the office is
/// downtown", "next month we move".
const FUNCTION_WORDS: &[&str] = &[
    "the", "a", "an", "my", "our", "his", "her", "their", "its", "it", "it's", "we", "we're", "he",
    "she", "they", "you", "there", "this", "that", "these", "those", "so", "then", "now", "next",
    "last", "in", "on", "at", "for", "since", "from", "to", "with", "just", "only", "all", "both",
    "me", "him", "them", "us", "one",
];

/// Whom a sentence is about, from its subject: a relation word up to the seventh word
/// after the speaker's possessive makes it the speaker's relation ("Dana's sister", "my
/// sister");
/// after another's possessive ("Jess's sister"), opening the sentence ("colleagues
/// were transferred"), after "a", "one", "two"… as the first words ("a colleague of
/// Dana's", "two colleagues") or before "of", someone else. So is an unnamed subject
/// doing something to the speaker ("A recruiter called me", "Guy at the shop tried to
/// talk me into…") in a sentence where neither the speaker nor theirs opens a clause.
/// So is a worker named by occupation after a possessive ("our sous chef quit", "my
/// dentist retired"). "Dana became a manager" and "I moved with a friend" are the
/// speaker's.
pub(crate) fn subject_of(sentence: &str, speaker: &str) -> Subject {
    let ws = words(sentence);
    let speaker = speaker.to_lowercase();
    let possessive = format!("{speaker}'s");
    for i in 0..ws.len().min(7) {
        let w = ws[i].as_str();
        let Some(relation) = relation_word(w) else {
            continue;
        };
        // "Ottilie's best mate", "my little sister": a word of kin or friendship may
        // stand between the owner and the relation ("my new boss" may not: it tells of
        // the speaker's job as much).
        let owner_at = match i.checked_sub(1).map(|j| ws[j].as_str()) {
            Some(w) if KIN_ADJECTIVES.contains(&w) && !ROLES.contains(&relation) => {
                i.checked_sub(2)
            }
            _ => i.checked_sub(1),
        };
        let before = owner_at.map(|j| ws[j].as_str());
        // "The bakery I run with my partner", "moved in with my girlfriend": who comes
        // along is not who does it, unless the sentence goes on about them ("argued
        // with my sister because she quit").
        if owner_at
            .and_then(|j| j.checked_sub(1))
            .is_some_and(|j| ws[j] == "with")
            && !ws[i + 1..].iter().any(|w| {
                matches!(
                    w.as_str(),
                    "he" | "she" | "they" | "his" | "her" | "their" | "him" | "them"
                )
            })
        {
            continue;
        }
        return match before {
            Some(owner) if owner == possessive || matches!(owner, "my" | "our") => {
                Subject::Relation(relation)
            }
            // "Jess's sister"; not "it's", "that's".
            Some(owner)
                if owner
                    .strip_suffix("'s")
                    .is_some_and(|o| !NOT_OWNERS.contains(&o)) =>
            {
                Subject::TheirPeople
            }
            None => Subject::Other,
            Some("a" | "an" | "one" | "two" | "three" | "some") if owner_at == Some(0) => {
                Subject::TheirPeople
            }
            _ if ws.get(i + 1).is_some_and(|n| n == "of") => Subject::Other,
            _ => continue,
        };
    }
    // "Our sous chef quit", "my dentist retired": who works for or with the speaker.
    if opens_with_a_worker(&ws, &speaker) {
        return Subject::TheirPeople;
    }
    // "He moved to Berlin last year": another person, unless the speaker is in it too
    // ("he moved Dana to the Berlin office").
    if matches!(
        ws.first().map(String::as_str),
        Some("he" | "she" | "he's" | "she's")
    ) && !ws.iter().any(|w| *w == speaker || *w == possessive)
    {
        return Subject::Other;
    }
    // "Alice moved to Paris", "Tom works at Google now": someone named doing something,
    // unless the speaker is in it too ("Globex moved Dana to Berlin").
    let names = [speaker.clone()];
    if crate::values::opens_with_someone(sentence, &names).is_some()
        && !ws.iter().any(|w| *w == speaker || *w == possessive)
    {
        return Subject::Other;
    }
    // "A studio in Mexico City offered Dana a position", "Guy at the shop tried to talk
    // me into a Kia": someone unnamed doing something to the speaker, unless the speaker
    // or theirs is in it as a subject ("A friend and I…", "A Mazda is in my driveway",
    // "…, so Dana bought…"). "A new job at Airbus starts Monday" names no one: it is
    // the speaker's.
    if matches!(
        ws.first().map(String::as_str),
        Some("a" | "an" | "someone" | "somebody" | "guy")
    ) && ws
        .iter()
        .any(|w| matches!(w.as_str(), "me" | "us") || *w == speaker)
        && !ws
            .iter()
            .any(|w| matches!(w.as_str(), "i" | "we" | "my" | "our") || *w == possessive)
        && !opens_a_clause(sentence, &speaker)
    {
        return Subject::TheirPeople;
    }
    Subject::Speaker
}

/// Whether words open with someone named by their occupation after a possessive, whose
/// own job or home changes: "our sous chef quit", "Dana's family's nanny moved to
/// Leeds", "my dentist retired"; not "Dana's a nurse", "my dentist appointment moved",
/// "our teacher moved the exam", nor a sentence that goes on about the speaker ("our
/// manager quit, so Dana is the manager now").
fn opens_with_a_worker(ws: &[String], speaker: &str) -> bool {
    const OWN_CHANGES: &[&str] = &[
        "quit", "quits", "resigned", "retired", "retires", "left", "leaves", "joined", "joins",
        "died",
    ];
    let owner = |w: &String| {
        matches!(w.as_str(), "my" | "our")
            || w.strip_suffix("'s")
                .is_some_and(|o| !crate::text::NOT_OWNERS.contains(&o))
    };
    let owners = ws.iter().take_while(|w| owner(w)).count();
    let rest = &ws[owners..];
    let Some(k) = rest
        .iter()
        .take(3)
        .position(|w| crate::values::is_occupation(w))
    else {
        return false;
    };
    let at = |n: usize| rest.get(k + n).map(String::as_str);
    let changes = at(1).is_some_and(|v| OWN_CHANGES.contains(&v))
        || (matches!(at(1), Some("moved" | "moves" | "goes" | "went"))
            && matches!(
                at(2),
                Some("to" | "away" | "abroad" | "back" | "out" | "home")
            ));
    owners > 0
        && changes
        && rest[..k].iter().all(|w| {
            !matches!(
                w.as_str(),
                "a" | "an" | "the" | "job" | "work" | "role" | "as" | "is" | "was"
            )
        })
        && !rest[k..]
            .iter()
            .any(|w| w == speaker || matches!(w.as_str(), "i" | "i'm" | "we"))
}

/// Whether `speaker` (lowercase) opens a clause of `sentence`: after a comma or a
/// conjunction ("…, so Maya bought a MacBook"), not as an object ("talk Radek into").
fn opens_a_clause(sentence: &str, speaker: &str) -> bool {
    let tokens: Vec<&str> = sentence.split_whitespace().collect();
    tokens.iter().enumerate().skip(1).any(|(i, t)| {
        let t = t
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        let before = tokens[i - 1];
        t == speaker
            && (before.ends_with([',', ';', ':'])
                || matches!(
                    before.to_lowercase().as_str(),
                    "so" | "and"
                        | "but"
                        | "then"
                        | "because"
                        | "while"
                        | "when"
                        | "after"
                        | "before"
                        | "until"
                        | "since"
                ))
    })
}

/// Words that may stand between an owner and a relation: "my best friend", "her little
/// brother".
const KIN_ADJECTIVES: &[&str] = &[
    "best", "oldest", "closest", "dearest", "little", "big", "older", "younger", "elder", "eldest",
    "baby", "twin", "late",
];

/// Relations of work or a shared roof, which no word of kin or friendship precedes:
/// "Spotify's best team hired me" is no relation of Spotify's.
pub(crate) const ROLES: &[&str] = &[
    "boss",
    "colleague",
    "coworker",
    "teammate",
    "classmate",
    "manager",
    "team",
    "neighbour",
    "neighbor",
    "flatmate",
    "housemate",
    "roommate",
    "landlord",
];

/// Words by which the speaker speaks of themselves.
pub(crate) const FIRST_PERSON: &[&str] = &[
    "i", "me", "myself", "i'm", "i've", "i'll", "i'd", "we", "us", "we're", "we've",
];

/// The relation a word names: "sister", "sisters", "sister's", "boss".
pub(crate) fn relation_word(word: &str) -> Option<&'static str> {
    let bare = word.strip_suffix("'s").unwrap_or(word);
    let singular = bare.strip_suffix('s').unwrap_or(bare);
    RELATIONS
        .iter()
        .find(|r| **r == bare || **r == singular)
        .copied()
}

/// An episode summary's speakers and body, apart from its header ("On 3 May 2023, Dana
/// and Assistant talked about rent, lease. …"); `None` for text without that header.
pub fn episode_parts(content: &str) -> Option<(Vec<&str>, &str)> {
    let (head, rest) = content.split_once(" talked about ")?;
    let speakers = head.rsplit_once(", ").map_or(head, |(_, s)| s);
    let body = rest.split_once(". ").map_or("", |(_, b)| b);
    Some((speakers.split(" and ").collect(), body))
}

/// Whether a sentence speaks of the one spoken to and not of the speaker: "your new
/// job sounds great", "congrats on the promotion!", "what's the last book that moved
/// you?" tell nothing of the speaker's own attributes. A sentence that opens with a
/// verb has the speaker for its subject ("Finally got the job, thanks to you!").
pub(crate) fn about_the_listener(sentence: &str) -> bool {
    let ws = words(sentence);
    let has = |set: &[&str]| ws.iter().any(|w| set.contains(&w.as_str()));
    let second = has(&[
        "you",
        "your",
        "yours",
        "you're",
        "you've",
        "you'd",
        "you'll",
        "yourself",
        "congrats",
        "congratulations",
    ]);
    let first = has(FIRST_PERSON) || has(&["my", "mine", "our"]);
    // Past the opening adverbs: "Finally got the job".
    let opening = ws.iter().position(|w| {
        !matches!(
            w.as_str(),
            "just" | "so" | "and" | "also" | "well" | "oh" | "yeah" | "finally" | "really"
        )
    });
    // "Excited for your new job!", "Heard you moved!" are about the listener.
    let opens_with_a_verb = opening.is_some_and(|i| {
        let w = &ws[i];
        let verb = (w.ends_with("ed") && w.len() > 3)
            || colmem_index::base_form(w).is_some_and(|b| b != w);
        verb && !ws[i + 1..]
            .iter()
            .take(2)
            .any(|n| matches!(n.as_str(), "you" | "your"))
    });
    second && !first && !opens_with_a_verb
}

/// The key shared by facts about one attribute of one person, e.g. `dana/home`.
pub fn subject_key(person: &str, attribute: &str) -> String {
    format!("{}/{attribute}", person.to_lowercase())
}

/// Rewrites first and second person to the speaker's and listener's names.
pub fn rewrite_person(sentence: &str, speaker: &str, listener: &str) -> String {
    let many_words = sentence.split(' ').count() > 1;
    let joined = map_words(sentence, |i, lower| match lower {
        "i" | "me" | "myself" => Some(speaker.to_owned()),
        "i'm" => Some(format!("{speaker} is")),
        "i've" => Some(format!("{speaker} has")),
        "i'll" => Some(format!("{speaker} will")),
        "i'd" => Some(format!("{speaker} would")),
        "my" | "mine" => Some(format!("{speaker}'s")),
        "we" | "us" => Some(format!("{speaker} and family")),
        "our" => Some(format!("{speaker}'s family's")),
        "you" if i > 0 || many_words => Some(listener.to_owned()),
        "your" | "yours" => Some(format!("{listener}'s")),
        "you're" => Some(format!("{listener} is")),
        "you've" => Some(format!("{listener} has")),
        _ => None,
    });
    // "Caroline am" → "Caroline is"
    joined.replace(&format!("{speaker} am "), &format!("{speaker} is "))
}

/// The calendar date of `t` in UTC, as session dates are read; `None` out of range.
pub(crate) fn utc_date(t: Timestamp) -> Option<jiff::civil::Date> {
    let ts = jiff::Timestamp::from_millisecond(t.as_millis()).ok()?;
    Some(ts.to_zoned(jiff::tz::TimeZone::UTC).date())
}

/// The date as "7 May 2023".
pub fn human_date(t: Timestamp) -> String {
    match utc_date(t) {
        Some(d) => format!(
            "{} {} {}",
            d.day(),
            MONTH_NAMES[(d.month() - 1) as usize],
            d.year()
        ),
        None => t.to_string(),
    }
}

const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Verbs of which "by" is a particle: "she dropped by today" keeps its "on".
const DROPPED_BY: &[&str] = &[
    "dropped", "drop", "stopped", "stop", "popped", "pop", "came", "come", "swung", "swing",
    "stopping", "dropping", "popping", "coming",
];

/// Prepositions that take a date of their own: after one, a relative date loses its
/// "on" or "in" ("as of today" → "as of 3 April 2023"), as does "by" unless it is a
/// particle of a visit ("she dropped by today"). Not "in" or "on", as often particles
/// of a verb ("we moved in yesterday").
const DATE_PREPOSITIONS: &[&str] = &[
    "of", "since", "until", "till", "from", "to", "by", "before", "after", "for",
];

/// Dates relative to the moment they are said ("the day before yesterday" before
/// "yesterday": the longer phrase is replaced first).
const RELATIVE_DATES: [&str; 14] = [
    "the day before yesterday",
    "yesterday",
    "today",
    "this morning",
    "last night",
    "tomorrow",
    "last week",
    "next week",
    "last weekend",
    "last month",
    "last year",
    "next month",
    "this month",
    "this weekend",
];

/// Whether `text` tells a time: a date or a year ([`date_phrase`]), or one relative to
/// when it was said ("yesterday", "last week", "last Fri", "two weekends ago").
pub fn tells_a_time(text: &str) -> bool {
    let lower = text.to_lowercase();
    date_phrase(text).is_some()
        || RELATIVE_DATES
            .iter()
            .any(|p| find_phrase(&lower, p).is_some())
        || LAST_WEEKDAY.is_match(text)
        || AGO.is_match(text)
}

/// Replaces relative dates with absolute ones, given when the sentence was said.
pub fn absolutise_dates(sentence: &str, said: Timestamp) -> String {
    const DAY: i64 = 86_400_000;
    let at = |days: i64| human_date(said.plus_millis(days * DAY));
    let year = |delta: i64| {
        utc_date(said)
            .map(|d| (d.year() as i64 + delta).to_string())
            .unwrap_or_default()
    };
    // The calendar month, not 30 days: "last month" said on 31 March is February.
    let month_of = |months: i64| {
        let full = first_of_month(said, months).map_or_else(|| at(months * 30), human_date);
        full.split_once(' ')
            .map(|(_, rest)| rest.to_owned())
            .unwrap_or(full)
    };
    // In the order of RELATIVE_DATES.
    let absolutes: [String; 14] = [
        format!("on {}", at(-2)),
        format!("on {}", at(-1)),
        format!("on {}", at(0)),
        format!("on the morning of {}", at(0)),
        format!("on the night of {}", at(-1)),
        format!("on {}", at(1)),
        format!("in the week before {}", at(0)),
        format!("in the week after {}", at(0)),
        format!("on the weekend before {}", at(0)),
        format!("in {}", month_of(-1)),
        format!("in {}", year(-1)),
        format!("in {}", month_of(1)),
        format!("in {}", month_of(0)),
        format!("on the weekend of {}", at(0)),
    ];
    let mut out = sentence.to_owned();
    for (phrase, absolute) in RELATIVE_DATES.iter().zip(absolutes.iter()) {
        // ASCII lower case keeps every byte where it was: a position in `lower` is
        // one in `out` ("İzmir" lower-cased in full is a byte longer).
        let lower = out.to_ascii_lowercase();
        if let Some(pos) = find_phrase(&lower, phrase) {
            // "As of today", "since last year", "today's news": a preposition of its
            // own, or none, is kept ("as of 3 April 2023", not "as of on 3 April 2023").
            let mut before = lower[..pos].split_whitespace().rev();
            let after_preposition = match (before.next(), before.next()) {
                // "Decide by tomorrow" is a deadline; "she dropped by today" a visit.
                (Some("by"), previous) => !previous.is_some_and(|w| DROPPED_BY.contains(&w)),
                (Some(w), _) => DATE_PREPOSITIONS.contains(&w),
                (None, _) => false,
            };
            let rest = &lower[pos + phrase.len()..];
            let possessive = rest.starts_with("'s") || rest.starts_with("\u{2019}s");
            let absolute = match absolute.split_once(' ') {
                Some(("on" | "in", rest)) if after_preposition || possessive => rest,
                _ => absolute.as_str(),
            };
            out.replace_range(pos..pos + phrase.len(), absolute);
        }
    }
    // "last Fri" → "on the Friday before 15 July 2023"; not "the last Friday of the
    // month", "every last Sunday".
    let out = LAST_WEEKDAY.replace_all(&out, |c: &regex::Captures<'_>| {
        match last_weekday(&out, c) {
            Some(day) => format!("on the {} before {}", WEEKDAYS[day], at(0)),
            None => c[0].to_owned(),
        }
    });
    // "two days ago" → "on 8 July 2023"; "two weekends ago" → "two weekends before
    // 17 July 2023".
    let out = AGO.replace_all(&out, |c: &regex::Captures<'_>| {
        let count = &c[1];
        let unit = c[2].to_lowercase();
        match number(count) {
            Some(n) if unit.starts_with("day") => format!("on {}", at(-n)),
            _ => format!("{count} {unit} before {}", at(0)),
        }
    });
    out.into_owned()
}

/// The day (0 for Monday) a [`LAST_WEEKDAY`] match `c` in `text` names as the last one
/// before it was said: "last Fri"; not "the last Friday of the month", "every last
/// Sunday".
fn last_weekday(text: &str, c: &regex::Captures<'_>) -> Option<usize> {
    let whole = c.get(0)?;
    let before = text[..whole.start()].to_lowercase();
    let after = text[whole.end()..].to_lowercase();
    if before.ends_with("the ")
        || before.ends_with("every ")
        || after.trim_start().starts_with("of ")
    {
        return None;
    }
    WEEKDAYS.iter().position(|d| d.starts_with(&c[1]))
}

/// Counts written as words, "a" for one.
const COUNTS: [&str; 11] = [
    "a", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
];

/// A count of days, weeks or weekends, in words or digits.
fn count_pattern() -> String {
    format!(r"(?:{}|\d{{1,2}})", COUNTS.join("|"))
}

/// "last Friday", "last Tues": a capitalised day, as dates write it ("I last sat on a
/// horse" names none).
static LAST_WEEKDAY: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(
        r"\b(?i:last)\s+(Mon|Tues?|Wed|Thu|Thurs?|Fri|Sat|Sun)(?:day|nesday|rsday|urday|sday)?\b",
    )
});
/// "two days ago", "a week ago", "three weekends ago".
static AGO: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(&format!(
        r"(?i)\b({})\s+(days?|weeks?|weekends?)\s+ago\b",
        count_pattern()
    ))
});
/// "two months ago", "a year ago", "three years ago".
static MONTHS_AGO: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(&format!(
        r"(?i)\b({})\s+(months?|years?)\s+ago\b",
        count_pattern()
    ))
});
/// A date as a text writes it: "7 May 2023", "June 6", "the week before 9 June 2023",
/// "two weekends before 17 July 2023", "May 2023". Month and day names are capitalised
/// ("it may rain" names no date).
static DATE: LazyLock<Regex> = LazyLock::new(|| {
    let month = format!("(?:{})", MONTH_NAMES.join("|"));
    let weekday = WEEKDAYS.join("|");
    constant_regex(&format!(
        r"(?:(?:(?i:the)\s+)?(?:(?i:week|weekend|morning|night|evening|afternoon)|{weekday})\s+(?i:before|after|of)\s+|(?i:{count})\s+(?i:days?|weeks?|weekends?)\s+(?i:before)\s+)?(?:\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{month}(?:,?\s+\d{{4}})?|\b{month}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?|\b{month}\s+\d{{4}})\b",
        count = count_pattern(),
    ))
});
/// A year that dates something: "in 2022", "since 2019", "back in 1998"; not "my 1967
/// Mustang" or "2000 miles".
static YEAR: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(r"\b(?i:in|since|during|from|until|around|of)\s+((?:19|20)\d{2})\b")
});

/// A count written as a word or in digits ("two", "a", "12").
fn number(count: &str) -> Option<i64> {
    let lower = count.to_lowercase();
    COUNTS
        .iter()
        .position(|w| *w == lower)
        .map(|i| i.max(1) as i64)
        .or_else(|| lower.parse().ok())
}

/// The first date `text` names, as written ("the week before 9 June 2023" of "Caroline
/// gave a talk in the week before 9 June 2023"); else the year it dates something in
/// ("2022" of "painted in 2022").
pub fn date_phrase(text: &str) -> Option<&str> {
    DATE.find(text)
        .or_else(|| YEAR.captures(text).and_then(|c| c.get(1)))
        .map(|m| m.as_str())
}

/// The moment a sentence said at `said` looks ahead to, when it names one: "next month
/// we're moving to Valparaiso" is about the first day of next month, "tomorrow" about
/// the next day.
fn ahead(lower: &str, said: Timestamp) -> Option<Timestamp> {
    const DAY: i64 = 86_400_000;
    if find_phrase(lower, "tomorrow").is_some() {
        return Some(said.plus_millis(DAY));
    }
    if find_phrase(lower, "next week").is_some() {
        return Some(said.plus_millis(7 * DAY));
    }
    find_phrase(lower, "next month")?;
    first_of_month(said, 1)
}

/// The moment a sentence said at `said` looks back to, when it names one: "I moved to
/// Hamburg last month" holds from the first day of last month, "last year" from the
/// first of last year, "yesterday" from the day before, "two weeks ago" from fourteen
/// days before, "two years ago" from the first of that month, "last Friday" from the
/// Friday before.
fn behind(sentence: &str, said: Timestamp) -> Option<Timestamp> {
    const DAY: i64 = 86_400_000;
    let days = |n: i64| Some(said.plus_millis(-n * DAY));
    let lower = sentence.to_lowercase();
    let says = |phrase: &str| find_phrase(&lower, phrase).is_some();
    if says("the day before yesterday") {
        return days(2);
    }
    if says("yesterday") || says("last night") {
        return days(1);
    }
    if says("last week") || says("last weekend") {
        return days(7);
    }
    if let Some(c) = AGO.captures(sentence) {
        let n = number(&c[1])?;
        return days(if c[2].to_lowercase().starts_with("day") {
            n
        } else {
            7 * n
        });
    }
    // "Two years ago I moved to Oslo": the first of that month.
    if let Some(c) = MONTHS_AGO.captures(sentence) {
        let n = number(&c[1])?;
        let months = if c[2].to_lowercase().starts_with("year") {
            12 * n
        } else {
            n
        };
        return first_of_month(said, -months);
    }
    if let Some(day) = LAST_WEEKDAY
        .captures(sentence)
        .and_then(|c| last_weekday(sentence, &c))
    {
        let today = utc_date(said)?.weekday().to_monday_zero_offset() as usize;
        let back = (today + 7 - day) % 7;
        return days(if back == 0 { 7 } else { back as i64 });
    }
    if says("last month") {
        return first_of_month(said, -1);
    }
    if says("last year") {
        return first_of_month(said, -(utc_date(said)?.month() as i64 - 1) - 12);
    }
    None
}

/// The first moment (UTC) of the month `months` after the one `said` falls in.
fn first_of_month(said: Timestamp, months: i64) -> Option<Timestamp> {
    day_start(
        utc_date(said)?
            .first_of_month()
            .checked_add(jiff::Span::new().months(months))
            .ok()?,
    )
}

/// The first moment (UTC) of `date`: the inverse of [`utc_date`].
pub(crate) fn day_start(date: jiff::civil::Date) -> Option<Timestamp> {
    let start = date.to_zoned(jiff::tz::TimeZone::UTC).ok()?.timestamp();
    Some(Timestamp::from_millis(start.as_millisecond()))
}

const COPULAS: &[&str] = &[
    "is", "am", "are", "was", "were", "be", "been", "become", "became", "seems", "seemed", "feels",
    "felt", "looks", "looked", "remains", "stayed",
];
const DITRANSITIVE: &[&str] = &[
    "give", "gave", "given", "gives", "send", "sent", "tell", "told", "show", "showed", "bring",
    "brought", "buy", "bought", "offer", "offered", "teach", "taught", "lend", "lent", "owe",
    "hand", "handed", "promise", "promised", "wrote", "write", "read",
];
const OBJECT_COMPLEMENT: &[&str] = &[
    "name",
    "named",
    "call",
    "called",
    "consider",
    "considered",
    "find",
    "found",
    "make",
    "made",
    "keep",
    "kept",
    "elect",
    "elected",
    "paint",
    "painted",
    "leave",
    "left",
];
const OBJECT_PRONOUNS: &[&str] = &["me", "him", "her", "them", "us", "you", "it"];
const DETERMINERS: &[&str] = &[
    "a", "an", "the", "some", "my", "his", "her", "their", "our", "your", "this", "that", "these",
    "those", "two", "three",
];

/// Labels a sentence with its pattern, by the verb and what follows it.
pub fn classify(sentence: &str) -> Pattern {
    let w = words(sentence);
    let Some(v) = w.iter().position(|x| is_verb(x)) else {
        return if w.len() <= 2 {
            Pattern::Sv
        } else {
            Pattern::Svo
        };
    };
    let verb = w[v].as_str();
    let rest: Vec<&str> = w[v + 1..]
        .iter()
        .map(String::as_str)
        .take_while(|x| !matches!(*x, "because" | "when" | "while" | "since"))
        .collect();
    if COPULAS.contains(&verb) {
        return if rest.is_empty() {
            Pattern::Sv
        } else {
            Pattern::Svc
        };
    }
    if rest.is_empty()
        || rest.first().is_some_and(|x| {
            matches!(
                *x,
                "to" | "at"
                    | "in"
                    | "on"
                    | "for"
                    | "with"
                    | "from"
                    | "around"
                    | "away"
                    | "home"
                    | "out"
                    | "up"
            )
        }) && !OBJECT_COMPLEMENT.contains(&verb)
    {
        return Pattern::Sv;
    }
    let first_is_np_head = rest
        .first()
        .is_some_and(|x| OBJECT_PRONOUNS.contains(x) || proper(sentence, x));
    if DITRANSITIVE.contains(&verb)
        && first_is_np_head
        && rest.get(1).is_some_and(|x| DETERMINERS.contains(x))
    {
        return Pattern::Svoo;
    }
    if OBJECT_COMPLEMENT.contains(&verb) && rest.len() >= 2 {
        // object (a pronoun or determiner phrase) followed by a complement
        let object_len = if OBJECT_PRONOUNS.contains(&rest[0]) || proper(sentence, rest[0]) {
            1
        } else if DETERMINERS.contains(&rest[0]) {
            2
        } else {
            0
        };
        if object_len > 0
            && rest.len() > object_len
            && !matches!(
                rest[object_len],
                "to" | "for" | "with" | "at" | "in" | "on" | "from"
            )
        {
            return Pattern::Svoc;
        }
    }
    Pattern::Svo
}

fn proper(sentence: &str, lower: &str) -> bool {
    sentence
        .split(|c: char| !c.is_alphanumeric())
        .any(|t| t.to_lowercase() == lower && t.chars().next().is_some_and(char::is_uppercase))
}

fn is_verb(word: &str) -> bool {
    COPULAS.contains(&word)
        || DITRANSITIVE.contains(&word)
        || OBJECT_COMPLEMENT.contains(&word)
        || matches!(
            word,
            "has"
                | "have"
                | "had"
                | "went"
                | "go"
                | "goes"
                | "did"
                | "do"
                | "does"
                | "got"
                | "get"
                | "love"
                | "loves"
                | "like"
                | "likes"
                | "enjoy"
                | "enjoys"
                | "want"
                | "wants"
                | "need"
                | "needs"
                | "started"
                | "ran"
                | "run"
                | "saw"
                | "see"
                | "took"
                | "take"
                | "joined"
                | "moved"
                | "adopted"
                | "visited"
                | "play"
                | "plays"
                | "played"
                | "works"
                | "worked"
                | "lives"
                | "lived"
                | "will"
                | "would"
                | "can"
                | "could"
        )
        || (word.len() > 4 && word.ends_with("ed") && !word.ends_with("eed"))
}

/// A stable preference stated in the sentence, rewritten with the speaker as subject.
pub fn preference(sentence: &str, speaker: &str) -> Option<String> {
    let lower = sentence.to_lowercase().replace('’', "'");
    let trimmed = lower.trim_end_matches(['.', '!']).trim();
    const CUES: &[(&str, &str)] = &[
        ("i really love ", "loves"),
        ("i love ", "loves"),
        ("i really like ", "likes"),
        ("i like ", "likes"),
        ("i enjoy ", "enjoys"),
        ("i prefer ", "prefers"),
        ("i hate ", "hates"),
        ("i can't stand ", "dislikes"),
        ("i'm a big fan of ", "is a big fan of"),
        ("i'm a fan of ", "is a fan of"),
        ("i'm into ", "is into"),
        ("i'm allergic to ", "is allergic to"),
        ("i always ", "always"),
        ("i usually ", "usually"),
    ];
    for (cue, verb) in CUES {
        if let Some(pos) = find_phrase(trimmed, cue.trim_end()) {
            // After the cue's words and the character that ends them, which may take
            // several bytes ("I love—really—sushi").
            let rest = &trimmed[pos + cue.trim_end().len()..];
            let object = rest
                .chars()
                .next()
                .map_or(rest, |c| &rest[c.len_utf8()..])
                .trim();
            let object: String = object
                .split([',', ';'])
                .next()
                .unwrap_or("")
                .trim()
                .to_owned();
            if content_words(&object).is_empty() {
                return None;
            }
            return Some(format!(
                "{speaker} {verb} {}",
                rewrite_person(&object, speaker, "them")
            ));
        }
    }
    if let Some(pos) = trimmed
        .find("my favorite ")
        .or_else(|| trimmed.find("my favourite "))
    {
        let rest = &trimmed[pos + "my favorite ".len()..];
        if let Some((what, value)) = rest.split_once(" is ").or_else(|| rest.split_once(" are ")) {
            let value = value.split([',', ';']).next().unwrap_or("").trim();
            if !value.is_empty() {
                return Some(format!("{speaker}'s favorite {} is {value}", what.trim()));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn telegraphic_fragments_of_one_attribute_make_one_statement() {
        let people = ["noor".to_owned(), "assistant".to_owned()];
        let said = |text: &str| telegraphic(sentences(text), 4, &people);
        assert_eq!(
            said("Dubai. Moved. Still jetlagged. Amman already feels like a dream."),
            [
                "Dubai. Moved. Still jetlagged.",
                "Amman already feels like a dream."
            ]
        );
        // No attribute, no value, or one fragment alone: as they were.
        assert_eq!(said("Wow. Thanks, Noor!"), ["Wow.", "Thanks, Noor!"]);
        assert_eq!(
            said("Sounds great, Noor! Next Friday works."),
            ["Sounds great, Noor!", "Next Friday works."]
        );
        assert_eq!(
            said("Paris. Loved it. Home now."),
            ["Paris.", "Loved it.", "Home now."]
        );
        assert_eq!(
            said("Moved. I live in Dubai now."),
            ["Moved.", "I live in Dubai now."]
        );
    }

    #[test]
    fn a_text_tells_a_time_by_a_date_a_year_or_one_relative_to_its_saying() {
        for text in [
            "Signed up for a pottery class yesterday.",
            "We had a blast last year at the Pride fest.",
            "My car broke down last Fri.",
            "We went camping two weekends ago.",
            "I moved to Leeds on 3 May 2023.",
            "Painted it in 2022.",
            "On 8 May 2023, Dana and Assistant talked about rent.",
        ] {
            assert!(tells_a_time(text), "{text}");
        }
        for text in ["I love pottery.", "Yesterdays is my favourite song title."] {
            assert!(!tells_a_time(text), "{text}");
        }
    }

    #[test]
    fn a_sentence_about_the_one_spoken_to_is_not_about_the_speaker() {
        assert!(about_the_listener("Congrats on the promotion!"));
        assert!(about_the_listener("Your new job sounds great."));
        assert!(!about_the_listener("I got promoted at work."));
        assert!(!about_the_listener("You know, I moved to Leeds."));
        // Subjectless, the speaker's own.
        assert!(!about_the_listener(
            "Finally got the job at Initech, thanks to you!"
        ));
        assert!(!about_the_listener(
            "Moved to Leeds last month, you should visit!"
        ));
        assert!(about_the_listener("Excited for your new job!"));
    }

    #[test]
    fn a_worker_named_by_occupation_after_a_possessive_is_someone_else() {
        for worker in [
            "Dana's family's sous chef quit this week.",
            "My dentist retired in May.",
            "Our new accountant moved to Leeds.",
        ] {
            assert_eq!(subject_of(worker, "Dana"), Subject::TheirPeople, "{worker}");
        }
        for own in [
            "Dana's a nurse in Leeds.",
            "My job as a nurse is tiring.",
            "Dana is a sous chef at Marea.",
            "My dentist appointment moved to Friday.",
            "Our teacher moved the exam to June 12.",
            "Our chef quit, so Dana is the chef now!",
            "It's student-loan season.",
        ] {
            assert_eq!(subject_of(own, "Dana"), Subject::Speaker, "{own}");
        }
    }

    #[test]
    fn a_sentence_about_someone_elses_relation_is_not_the_speakers() {
        assert_eq!(subject_of("Dana moved to Leeds.", "Dana"), Subject::Speaker);
        // Who comes along is not who does it.
        assert_eq!(
            subject_of(
                "The bakery Dana run with Dana's partner opens at six.",
                "Dana"
            ),
            Subject::Speaker
        );
        assert_eq!(
            subject_of(
                "Dana argued with Dana's sister because she quit her job.",
                "Dana"
            ),
            Subject::Relation("sister")
        );
        // "He", "she" opening a sentence that names the speaker nowhere.
        assert_eq!(
            subject_of("He moved to Berlin last year.", "Dana"),
            Subject::Other
        );
        assert_eq!(
            subject_of("She's a nurse in Leeds.", "Dana"),
            Subject::Other
        );
        assert_eq!(
            subject_of("He moved Dana to the Leeds office.", "Dana"),
            Subject::Speaker
        );
        // Someone named doing something, the speaker nowhere.
        for other in [
            "Alice moved to Paris.",
            "Tom Lee just started at Google.",
            "Alice lives in Lyon now.",
        ] {
            assert_eq!(subject_of(other, "Dana"), Subject::Other, "{other}");
        }
        for own in [
            "Alice and Dana moved to Paris.",
            "Globex moved Dana to Berlin.",
            "Moved to Paris last week.",
            "Data analyst at Flutterwave, based in Lagos.",
            "Autumn wins now: sweaters, leaves, no sweat.",
            "Kazik is enough parrot for one lifetime.",
        ] {
            assert_eq!(subject_of(own, "Dana"), Subject::Speaker, "{own}");
        }
        // "A manager", "a friend" later in the sentence are no subject.
        assert_eq!(
            subject_of("Dana became a manager at Globex.", "Dana"),
            Subject::Speaker
        );
        assert_eq!(
            subject_of("Dana moved to Leeds with a friend.", "Dana"),
            Subject::Speaker
        );
        assert_eq!(relation_word("parents"), Some("parents"));
        assert_eq!(relation_word("sister's"), Some("sister"));
        assert_eq!(relation_word("boss"), Some("boss"));
        assert_eq!(
            subject_of("Dana's sister moved to Leeds.", "Dana"),
            Subject::Relation("sister")
        );
        assert_eq!(
            subject_of("My sister moved to Leeds.", "Dana"),
            Subject::Relation("sister")
        );
        assert_eq!(
            subject_of("One of Dana's flatmates is moving out.", "Dana"),
            Subject::Relation("flatmate")
        );
        assert_eq!(
            subject_of("Jess's sister moved to Stirling.", "Dana"),
            Subject::TheirPeople
        );
        // A word of kin or friendship may stand between; "new" may not.
        assert_eq!(
            subject_of("Dana's best mate Jess finally moved to Edinburgh.", "Dana"),
            Subject::Relation("mate")
        );
        assert_eq!(
            subject_of("Jess's little brother moved to Leeds.", "Dana"),
            Subject::TheirPeople
        );
        assert_eq!(
            subject_of("Dana's new boss at Spotify is great.", "Dana"),
            Subject::Speaker
        );
        assert_eq!(
            subject_of("A best friend from school moved to Leeds.", "Dana"),
            Subject::TheirPeople
        );
        assert_eq!(
            subject_of("Spotify's best team hired Dana.", "Dana"),
            Subject::Speaker
        );
        assert_eq!(
            subject_of("It's late, mate, Dana finally moved.", "Dana"),
            Subject::Speaker
        );
        for sentence in [
            "Two colleagues were transferred to Osaka.",
            "A colleague of Dana's has taken a job in Bergen.",
            "A studio in Mexico City offered Dana a full-time position.",
            "Guy at the shop tried to talk Dana into trading it in for a new Kia, no thanks.",
        ] {
            assert_eq!(
                subject_of(sentence, "Dana"),
                Subject::TheirPeople,
                "{sentence}"
            );
        }
        for sentence in [
            "Colleagues were transferred to Osaka.",
            "Mom and Dana left Brooklyn.",
        ] {
            assert_eq!(subject_of(sentence, "Dana"), Subject::Other, "{sentence}");
        }
        for sentence in [
            "A full mug of coffee went into the Dell's keyboard, so Dana bought a MacBook.",
            "A Mazda CX-5 is in my driveway now.",
            "A new job at Airbus starts Monday for Dana's team, and Dana leads it.",
            "A new job at Airbus starts on Monday.",
        ] {
            assert_eq!(subject_of(sentence, "Dana"), Subject::Speaker, "{sentence}");
        }
    }

    #[test]
    fn every_constant_pattern_compiles() {
        LazyLock::force(&LAST_WEEKDAY);
        LazyLock::force(&AGO);
        LazyLock::force(&DATE);
        LazyLock::force(&YEAR);
    }

    fn turn(id: &str, speaker: &str, text: &str) -> TurnInput {
        TurnInput {
            dialogue_id: id.into(),
            session: "S1".into(),
            speaker: speaker.into(),
            listener: if speaker == "Caroline" {
                "Melanie".into()
            } else {
                "Caroline".into()
            },
            text: text.into(),
            time: colmem_core::Timestamp::parse("2023-05-08T13:56:00Z").ok(),
            origin: Origin::User,
        }
    }

    #[test]
    fn a_bracketed_annotation_is_a_fact_about_no_one() {
        let c = OfflineConstructor::default();
        let facts = c
            .observe(
                &turn(
                    "D1:1",
                    "Caroline",
                    "I finished my painting. [shares an image: a photo of a painting of a sunset]",
                ),
                &mut Vec::new(),
            )
            .unwrap()
            .facts;
        let keys: Vec<(&str, Option<&str>)> = facts
            .iter()
            .map(|f| (f.content.as_str(), f.key.as_deref()))
            .collect();
        assert_eq!(
            keys,
            [
                (
                    "Caroline finished Caroline's painting.",
                    Some("caroline/hobby")
                ),
                ("[shares an image: a photo of a painting of a sunset]", None)
            ]
        );
    }

    #[test]
    fn a_reply_carries_the_words_of_the_question_it_answers() {
        let c = OfflineConstructor::default();
        let mut open = Vec::new();
        c.observe(
            &turn(
                "D1:1",
                "Caroline",
                "Wow, that sounds fun! Who performed at the concert?",
            ),
            &mut open,
        )
        .unwrap();
        let reply = c
            .observe(
                &turn("D1:2", "Melanie", "It was Matt Patterson, so talented!"),
                &mut open,
            )
            .unwrap();
        let keywords = &reply.raw[0].keywords;
        assert!(
            keywords.iter().any(|k| k == "performed") && keywords.iter().any(|k| k == "concert"),
            "{keywords:?}"
        );
        // Words of the asking turn that ask nothing are not carried.
        assert!(!keywords.iter().any(|k| k == "fun"), "{keywords:?}");
        // A turn after a statement carries nothing of it.
        let next = c
            .observe(
                &turn("D1:3", "Caroline", "I saw him live in Boston."),
                &mut open,
            )
            .unwrap();
        assert!(!next.raw[0].keywords.iter().any(|k| k == "patterson"));
    }

    #[test]
    fn facts_stand_alone_with_absolute_dates() {
        let c = OfflineConstructor::default();
        let out = c
            .observe(
                &turn(
                    "D1:3",
                    "Caroline",
                    "I went to a LGBTQ support group yesterday and it was so powerful. Did you go?",
                ),
                &mut Vec::new(),
            )
            .unwrap();
        assert_eq!(out.raw.len(), 1);
        assert_eq!(out.facts.len(), 1, "{:?}", out.facts);
        let fact = &out.facts[0];
        assert_eq!(
            fact.content,
            "Caroline went to a LGBTQ support group on 7 May 2023 and it was so powerful."
        );
        assert_eq!(fact.turns, vec!["D1:3".to_string()]);
    }

    #[test]
    fn a_sentence_telling_two_attributes_gives_a_fact_for_each() {
        assert_eq!(
            per_attribute("I live in Porto and work as a nurse."),
            ["I live in Porto", "I work as a nurse."]
        );
        assert_eq!(
            per_attribute("I'm a nurse at Santo Antonio and I live in Porto."),
            ["I'm a nurse at Santo Antonio", "I live in Porto."]
        );
        // One attribute, someone else's, a clause with a subject of its own, what was
        // or would be: the sentence stays whole.
        for whole in [
            "I'm a nurse and I live in Porto.",
            "I sold the Ford and bought a Rivian.",
            "My brother lives in Porto and works as a nurse.",
            "I work at Globex and the office is downtown.",
            "I used to live in Porto and work as a nurse.",
            "I'd love to live in Porto and work as a nurse.",
            "I work as a nurse and next month we move to Porto.",
        ] {
            assert_eq!(per_attribute(whole), [whole]);
        }
        let c = OfflineConstructor::default();
        let facts = c.facts(&turn(
            "D1:1",
            "Ines",
            "I live in Porto and work as a nurse.",
        ));
        let keys: Vec<Option<&str>> = facts.iter().map(|f| f.key.as_deref()).collect();
        assert_eq!(keys, [Some("ines/home"), Some("ines/work")]);
    }

    #[test]
    fn sentence_patterns() {
        let cases = [
            ("Caroline laughed.", Pattern::Sv),
            ("Caroline went to the park.", Pattern::Sv),
            ("Caroline adopted a rescue dog.", Pattern::Svo),
            ("Caroline is a counselor.", Pattern::Svc),
            ("Melanie gave Caroline a painting.", Pattern::Svoo),
            ("Caroline named the dog Max.", Pattern::Svoc),
        ];
        for (s, p) in cases {
            assert_eq!(classify(s), p, "{s}");
        }
    }

    #[test]
    fn person_rewriting() {
        assert_eq!(
            rewrite_person(
                "I think your painting is great, I'm impressed!",
                "Ann",
                "Bo"
            ),
            "Ann think Bo's painting is great, Ann is impressed!"
        );
        assert_eq!(
            rewrite_person("My kids love it.", "Mel", "Caro"),
            "Mel's kids love it."
        );
    }

    #[test]
    fn a_sentence_looking_ahead_refers_to_the_moment_it_names() {
        let said = Timestamp::parse("2022-04-09T10:00:00Z").unwrap();
        assert_eq!(
            ahead("next month we're moving to valparaiso.", said),
            Some(Timestamp::parse("2022-05-01T00:00:00Z").unwrap())
        );
        assert_eq!(
            ahead("the movers come tomorrow.", said),
            Some(Timestamp::parse("2022-04-10T10:00:00Z").unwrap())
        );
        assert_eq!(ahead("we moved last month.", said), None);
        let december = Timestamp::parse("2022-12-20T00:00:00Z").unwrap();
        assert_eq!(
            ahead("next month i start at initech.", december),
            Some(Timestamp::parse("2023-01-01T00:00:00Z").unwrap())
        );
    }

    #[test]
    fn a_sentence_looking_back_refers_to_the_moment_it_names() {
        // Saturday 9 April 2022.
        let said = Timestamp::parse("2022-04-09T10:00:00Z").unwrap();
        let at = |s: &str| Some(Timestamp::parse(s).unwrap());
        for (text, moment) in [
            (
                "We moved to Hamburg last month.",
                at("2022-03-01T00:00:00Z"),
            ),
            ("I moved here last year.", at("2021-01-01T00:00:00Z")),
            ("I started at Globex yesterday.", at("2022-04-08T10:00:00Z")),
            (
                "We moved in the day before yesterday.",
                at("2022-04-07T10:00:00Z"),
            ),
            ("I got a Pixel two weeks ago.", at("2022-03-26T10:00:00Z")),
            ("I quit three days ago.", at("2022-04-06T10:00:00Z")),
            (
                "I started at Initech last Monday.",
                at("2022-04-04T10:00:00Z"),
            ),
            ("I sold the car last Sat.", at("2022-04-02T10:00:00Z")),
            ("Two years ago I moved to Oslo.", at("2020-04-01T00:00:00Z")),
            (
                "I quit smoking three months ago.",
                at("2022-01-01T00:00:00Z"),
            ),
            // Neither a day before this one nor any looking back.
            ("The last Friday of the month is payday.", None),
            ("I live in Leeds.", None),
            ("Next week I start at Initech.", None),
        ] {
            assert_eq!(behind(text, said), moment, "{text}");
        }
    }

    #[test]
    fn a_relative_date_after_a_preposition_or_before_a_possessive_takes_no_other() {
        let said = Timestamp::parse("2023-04-03T10:00:00Z").unwrap();
        for (text, absolute) in [
            (
                "As of today my title is engineering manager.",
                "As of 3 April 2023 my title is engineering manager.",
            ),
            (
                "I'm a manager at Costco as of this month.",
                "I'm a manager at Costco as of April 2023.",
            ),
            (
                "I've lived here since last year.",
                "I've lived here since 2022.",
            ),
            (
                "They moved my trip to next week.",
                "They moved my trip to the week after 3 April 2023.",
            ),
            (
                "Today's standup ran long.",
                "3 April 2023's standup ran long.",
            ),
            (
                "Today\u{2019}s standup ran long.",
                "3 April 2023\u{2019}s standup ran long.",
            ),
            ("She dropped by today.", "She dropped by on 3 April 2023."),
            ("Decide by tomorrow.", "Decide by 4 April 2023."),
            (
                "İzmir was hot yesterday, so we stayed in.",
                "İzmir was hot on 2 April 2023, so we stayed in.",
            ),
            // "In" and "on" are as often particles: "moved in", "logged on".
            ("We moved in yesterday.", "We moved in on 2 April 2023."),
            // Without a preposition before it, the date brings its own.
            ("I quit today.", "I quit on 3 April 2023."),
        ] {
            assert_eq!(absolutise_dates(text, said), absolute, "{text}");
        }
    }

    #[test]
    fn a_month_named_relatively_is_the_calendar_month() {
        let end_of_january = Timestamp::parse("2023-01-31T12:00:00Z").unwrap();
        assert_eq!(
            absolutise_dates("We move next month.", end_of_january),
            "We move in February 2023."
        );
        let end_of_march = Timestamp::parse("2023-03-31T12:00:00Z").unwrap();
        assert_eq!(
            absolutise_dates("I started last month.", end_of_march),
            "I started in February 2023."
        );
        let january = Timestamp::parse("2023-01-05T12:00:00Z").unwrap();
        assert_eq!(
            absolutise_dates("I started last month.", january),
            "I started in December 2022."
        );
    }

    #[test]
    fn a_weekday_or_a_count_of_days_ago_is_made_absolute() {
        let said = Timestamp::parse("2023-07-15T12:00:00Z").unwrap();
        assert_eq!(
            absolutise_dates("Last Fri I took the kids to a pottery workshop.", said),
            "on the Friday before 15 July 2023 I took the kids to a pottery workshop."
        );
        assert_eq!(
            absolutise_dates("I joined an activist group last Tues.", said),
            "I joined an activist group on the Tuesday before 15 July 2023."
        );
        assert_eq!(
            absolutise_dates("I went to a conference two days ago", said),
            "I went to a conference on 13 July 2023"
        );
        assert_eq!(
            absolutise_dates("We went camping two weekends ago.", said),
            "We went camping two weekends before 15 July 2023."
        );
        assert_eq!(
            absolutise_dates("I'm going to a conference this month.", said),
            "I'm going to a conference in July 2023."
        );
        assert_eq!(
            absolutise_dates("We're hiking this weekend.", said),
            "We're hiking on the weekend of 15 July 2023."
        );
        // Not a relative date.
        for text in [
            "The last fridge we had was loud.",
            "I last sat on a horse in 2010.",
            "Payday is the last Friday of the month.",
            "We soaked up the last sun of the year.",
        ] {
            assert_eq!(absolutise_dates(text, said), text);
        }
    }

    #[test]
    fn a_date_phrase_is_found_as_written() {
        let cases = [
            (
                "Caroline went to a support group on 7 May 2023.",
                Some("7 May 2023"),
            ),
            (
                "Caroline gave a talk in the week before 9 June 2023.",
                Some("the week before 9 June 2023"),
            ),
            (
                "We went camping two weekends before 17 July 2023.",
                Some("two weekends before 17 July 2023"),
            ),
            ("Abby's birthday is March 14.", Some("March 14")),
            (
                "The reunion is on the 4th of May, 2024.",
                Some("4th of May, 2024"),
            ),
            ("Melanie painted that lake sunrise in 2022!", Some("2022")),
            ("We're moving in August 2023.", Some("August 2023")),
            ("Gate 12 may change.", None),
            ("I drove 200,000 miles.", None),
            ("My 1967 Mustang needs 2000 dollars of work.", None),
            ("We have lived here since 2019.", Some("2019")),
        ];
        for (text, want) in cases {
            assert_eq!(date_phrase(text), want, "{text}");
        }
    }

    #[test]
    fn profile_entries() {
        assert_eq!(
            preference("I love hiking in the mountains, it's calming.", "Ann").as_deref(),
            Some("Ann loves hiking in the mountains")
        );
        assert_eq!(
            preference("My favorite book is Dune.", "Bo").as_deref(),
            Some("Bo's favorite book is dune")
        );
        assert_eq!(preference("I went out.", "Bo"), None);
        assert_eq!(preference("I love it!", "Bo"), None, "nothing concrete");
        // What follows the cue may open with a character of several bytes.
        assert_eq!(
            preference("I love—really—sushi", "Bo").as_deref(),
            Some("Bo loves really—sushi")
        );
    }

    #[test]
    fn episodes_close_on_window_shift_and_request() {
        let c = OfflineConstructor::new(ConstructorConfig {
            episode_window: 3,
            ..ConstructorConfig::default()
        });
        let open: Vec<TurnInput> = (1..=3)
            .map(|i| {
                turn(
                    &format!("D1:{i}"),
                    "Caroline",
                    "We painted the fence blue together",
                )
            })
            .collect();
        let mut buffer = open.clone();
        let out = c
            .observe(
                &turn("D1:4", "Melanie", "The fence looks great"),
                &mut buffer,
            )
            .unwrap();
        assert_eq!(out.episodes.len(), 1, "a full window closes");
        assert_eq!(out.episodes[0].turns, vec!["D1:1", "D1:2", "D1:3"]);
        assert_eq!(buffer.len(), 1, "the next episode starts with the turn");
        assert!(
            out.episodes[0]
                .content
                .starts_with("On 8 May 2023, Caroline talked about"),
            "{}",
            out.episodes[0].content
        );

        let c = OfflineConstructor::default();
        let out = c
            .observe(
                &turn(
                    "D1:4",
                    "Melanie",
                    "Quantum chromodynamics lectures bored everyone terribly",
                ),
                &mut open.clone(),
            )
            .unwrap();
        assert_eq!(out.episodes.len(), 1, "a topic shift closes");
        let mut buffer = open[..1].to_vec();
        let out = c
            .observe(
                &turn("D1:4", "Melanie", "Let's sum up the fence plan"),
                &mut buffer,
            )
            .unwrap();
        assert_eq!(
            out.episodes.len(),
            1,
            "an explicit request closes, with the request"
        );
        assert_eq!(out.episodes[0].turns.len(), 2);
        assert!(buffer.is_empty());
        let mut buffer = open[..1].to_vec();
        let out = c
            .observe(
                &turn("D1:2", "Melanie", "The fence paint is drying"),
                &mut buffer,
            )
            .unwrap();
        assert!(out.episodes.is_empty());
        assert_eq!(buffer.len(), 2, "the turn joins the open episode");
        assert!(c.close(&mut buffer).unwrap().is_some());
        assert!(buffer.is_empty());
    }

    #[test]
    fn deterministic() {
        let c = OfflineConstructor::default();
        let t = turn(
            "D2:1",
            "Melanie",
            "I told you my sister bought a house last year. We love it.",
        );
        assert_eq!(
            c.observe(&t, &mut Vec::new()).unwrap(),
            c.observe(&t, &mut Vec::new()).unwrap()
        );
    }
}
