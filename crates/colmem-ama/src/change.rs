//! Recognising change in what a user says: which attribute a statement is about, whether
//! it announces a change or corrects an earlier statement, and whether the user's own
//! input instructs the memory to forget something.
//!
//! The offline judge and refresher decide with these rules. They are lexical and
//! deliberately conservative:
//! - an **attribute** (where someone lives, where they work, which phone they use, what
//!   they like to eat …) is recognised from a small lexicon of words about it;
//! - a statement **changes** an attribute when it is about that attribute and carries a
//!   change cue ("moved", "switched to", "no longer", "these days", "new" …);
//! - a **correction** carries a correction cue ("actually", "I meant", "misspoke" …);
//! - a **forget instruction** is an imperative to forget, delete or not keep something,
//!   said by the user in their own current input. Reported speech ("my boss told me to
//!   forget it"), reminders ("don't forget") and the past tense ("I forgot") are not.
//!
//! Nothing here ever runs on stored text: the pipeline applies [`forget_instruction`]
//! only to the current input of the user principal.

use std::sync::LazyLock;

use regex::Regex;

use crate::text::{STOPWORDS, constant_regex, content_words, lexicon_words, words};
use crate::values::is_occupation;

/// Attributes of a person that change over time, with the words that signal each.
///
/// The lexicon is general English, not tuned to a data set; an attribute outside it is
/// simply not recognised (the fact is kept, and no update is triggered).
pub const ATTRIBUTES: &[(&str, &[&str])] = &[
    (
        "home",
        &[
            "live",
            "lives",
            "living",
            "lived",
            "moved",
            "move",
            "moving",
            "relocated",
            "relocate",
            "relocating",
            "apartment",
            "flat",
            "house",
            "home",
            "lease",
            "condo",
            "rent",
            "renting",
            "settled",
            "neighborhood",
            "neighbourhood",
            "address",
            "hometown",
            "resident",
            "reside",
            "resides",
            "residing",
            "unpacked",
            "unpacking",
            "studio",
            "borough",
            "district",
            "suburb",
            "city",
            "town",
            "village",
            "movers",
            "boxes",
            "packing",
            "walk-up",
            "apartments",
            "downtown",
            "commute",
            "landlord",
        ],
    ),
    (
        "work",
        &[
            "job",
            "jobs",
            "employer",
            "employed",
            "hired",
            "hiring",
            "position",
            "office",
            "quit",
            "resigned",
            "resign",
            "notice",
            "joined",
            "joining",
            "company",
            "career",
            "boss",
            "colleagues",
            "coworkers",
            "workplace",
            "startup",
            "firm",
            "promoted",
            "promotion",
            "laid",
            "fired",
            "retired",
            "intern",
            "internship",
            "contract",
            "works",
            "working",
            "work",
            "worked",
            "onboarding",
            "employee",
            "full-time",
            "part-time",
            "freelance",
            "freelancer",
            "freelancing",
            "self-employed",
        ],
    ),
    (
        "phone",
        &[
            "phone",
            "phones",
            "iphone",
            "pixel",
            "galaxy",
            "android",
            "smartphone",
            "mobile",
            "cellphone",
            "nokia",
            "motorola",
            "moto",
            "blackberry",
            "fairphone",
            "oneplus",
            "huawei",
            "xiaomi",
        ],
    ),
    (
        "computer",
        &[
            "laptop",
            "macbook",
            "thinkpad",
            "notebook",
            "chromebook",
            "computer",
            "desktop",
            "pc",
            "surface",
        ],
    ),
    (
        "car",
        &[
            "car",
            "cars",
            "vehicle",
            "sedan",
            "suv",
            "truck",
            "hatchback",
            "minivan",
            "ev",
            "tesla",
            "prius",
        ],
    ),
    (
        "device",
        &[
            "tablet",
            "ipad",
            "kindle",
            "e-reader",
            "ereader",
            "watch",
            "smartwatch",
            "camera",
            "headphones",
            "earbuds",
            "console",
            "playstation",
            "xbox",
            "switch",
            "router",
            "speaker",
            "tv",
            "television",
            "monitor",
            "bike",
            "bicycle",
        ],
    ),
    (
        "food",
        &[
            "food",
            "dish",
            "dishes",
            "cuisine",
            "eat",
            "eating",
            "meal",
            "snack",
            "dessert",
            "sushi",
            "ramen",
            "pizza",
            "pasta",
            "tacos",
            "curry",
            "burger",
            "burgers",
            "salad",
            "noodles",
            "dumplings",
            "steak",
            "vegan",
            "vegetarian",
            "chocolate",
            "cake",
            "breakfast",
            "lunch",
            "dinner",
            "cook",
            "cooking",
            "bakery",
            "pho",
            "barbecue",
            // Dishes by name, as often said without the word "food".
            "nigiri",
            "sashimi",
            "maki",
            "tempura",
            "udon",
            "soba",
            "bibimbap",
            "kimchi",
            "paella",
            "risotto",
            "lasagne",
            "lasagna",
            "burrito",
            "burritos",
            "kebab",
            "falafel",
            "hummus",
            "shawarma",
            "biryani",
            "samosas",
            "croissant",
            "croissants",
            "pancakes",
            "waffles",
            "omelette",
        ],
    ),
    (
        "drink",
        &[
            "drink",
            "drinks",
            "coffee",
            "tea",
            "latte",
            "espresso",
            "beer",
            "wine",
            "juice",
            "smoothie",
            "soda",
            "cocktail",
            "matcha",
            "cappuccino",
            "kombucha",
            "whisky",
            "whiskey",
            "lemonade",
            "chai",
            "cortado",
            "americano",
            "macchiato",
            "mocha",
            "decaf",
        ],
    ),
    (
        "music",
        &[
            "music",
            "song",
            "songs",
            "band",
            "bands",
            "album",
            "genre",
            "jazz",
            "rock",
            "pop",
            "hip-hop",
            "rap",
            "classical",
            "playlist",
            "singer",
            "listen",
            "listening",
        ],
    ),
    // What someone looks for in a holiday: "give me Crete and a sunbed". Named so that
    // the keyword it gives a fact is no day of the calendar ("a US holiday").
    (
        "vacation",
        &[
            "holiday",
            "holidays",
            "vacation",
            "vacations",
            "beach",
            "beaches",
            "sunbed",
            "getaway",
        ],
    ),
    // How hot someone likes their food: "keep recipes mild", "extra hot, please". A
    // level of heat is the sense `attribute_words` gives "mild" or "hot" said of it.
    ("spice", SPICE),
    // When in the day someone is at their best: "I'm a morning person", "a night owl".
    // Its only word is the sense `attribute_words` gives such a name.
    ("chronotype", &[CHRONOTYPE]),
    // How someone gets about: "I always fly", "trains all the way now".
    (
        "travel",
        &[
            "fly",
            "flying",
            "plane",
            "planes",
            "airplane",
            "airplanes",
            "train",
            "trains",
            "rail",
            "travel",
            "travels",
            "travelling",
            "traveling",
        ],
    ),
    (
        "sport",
        &[
            "sport",
            "sports",
            "running",
            "run",
            "swimming",
            "swim",
            "tennis",
            "soccer",
            "football",
            "basketball",
            "yoga",
            "climbing",
            "cycling",
            "hiking",
            "gym",
            "pilates",
            "golf",
            "boxing",
            "skiing",
            "surfing",
            "workout",
            "marathon",
        ],
    ),
    (
        "hobby",
        &[
            "hobby",
            "hobbies",
            "painting",
            "knitting",
            "gardening",
            "photography",
            "pottery",
            "chess",
            "guitar",
            "piano",
            "reading",
            "gaming",
            "baking",
            "woodworking",
            "drawing",
            "sewing",
            "birdwatching",
            "crochet",
        ],
    ),
    (
        "media",
        &[
            "book",
            "books",
            "novel",
            "author",
            "movie",
            "movies",
            "film",
            "films",
            "show",
            "shows",
            "series",
            "podcast",
            "podcasts",
            "anime",
            "netflix",
            "dramas",
            "sitcom",
            "sitcoms",
            "documentary",
            "documentaries",
        ],
    ),
    ("colour", &["color", "colour", "colors", "colours"]),
    (
        "pet",
        &[
            "dog", "cat", "puppy", "kitten", "pet", "pets", "parrot", "hamster", "rabbit",
        ],
    ),
    (
        "relationship",
        &[
            "partner",
            "ex",
            "boyfriend",
            "girlfriend",
            "husband",
            "wife",
            "fiance",
            "fiancee",
            "married",
            "engaged",
            "divorced",
            "dating",
            "spouse",
        ],
    ),
    (
        "school",
        &[
            "school",
            "university",
            "college",
            "degree",
            "studying",
            "student",
            "course",
            "major",
            "enrolled",
            "graduated",
            "class",
            "classes",
            "semester",
        ],
    ),
    (
        "medication",
        &[
            "medication",
            "medications",
            "medicine",
            "medicines",
            "meds",
            "pill",
            "pills",
            "mg",
            "dose",
            "dosage",
            "prescription",
            "prescribed",
            "antidepressant",
            "antidepressants",
            "inhaler",
            "insulin",
        ],
    ),
    (
        "allergy",
        &[
            "allergy",
            "allergies",
            "allergic",
            "intolerant",
            "intolerance",
        ],
    ),
    // Blood pressure comes first: "my blood pressure" is no blood type.
    ("pressure", &["pressure", "hypertension"]),
    // A blood type.
    ("blood", &["blood"]),
    (
        "diagnosis",
        &[
            "diagnosis",
            "diagnosed",
            "disease",
            "illness",
            "disorder",
            "syndrome",
        ],
    ),
    (
        "schedule",
        &[
            "appointment",
            "meeting",
            "dentist",
            "doctor",
            "monday",
            "tuesday",
            "wednesday",
            "thursday",
            "friday",
            "saturday",
            "sunday",
            "deadline",
            "flight",
            "reservation",
            "o'clock",
            "scheduled",
            "rescheduled",
        ],
    ),
];

/// Words that announce that something is different from before.
const CHANGE_CUES: &[&str] = &[
    "moved",
    "moving",
    "relocated",
    "relocating",
    "switched",
    "switching",
    "switch",
    "changed",
    "changing",
    "change",
    "replaced",
    "replacement",
    "officially",
    "replacing",
    "upgraded",
    "upgrading",
    "traded",
    "swapped",
    "new",
    "newer",
    "now",
    "anymore",
    "longer",
    "instead",
    "these",
    "nowadays",
    "lately",
    "quit",
    "left",
    "leaving",
    "resigned",
    "joined",
    "joining",
    "started",
    "starting",
    "start",
    "hired",
    "became",
    "become",
    "becoming",
    "goodbye",
    "bye",
    "over",
    "gave",
    "sold",
    "ditched",
    "dropped",
    "stopped",
    "gotten",
    "got",
    "bought",
    "promoted",
    "promotion",
    "transferred",
    "retired",
    "finally",
    "since",
    "latest",
    "recently",
    "converted",
    "prefer",
    "rather",
    "favorite",
    "favourite",
    "obsessed",
    "into",
    "tired",
    "rescheduled",
    "postponed",
    "pushed",
    "rebooked",
    // An end of something held: what replaced it is the current state.
    "gone",
    "dethroned",
    "unsubscribed",
    "cancelled",
    "canceled",
    "ended",
    "closed",
    "behind",
    "farewell",
    "handed",
    "trade-in",
    "traded-in",
    "laid",
    "broke",
    "broken",
    "died",
    "stolen",
    "lost",
    "returned",
    "binned",
];

/// Words and phrases that correct an earlier statement.
const CORRECTION_CUES: &[&str] = &[
    "i meant",
    "meant to say",
    "misspoke",
    "mis-spoke",
    "correction",
    "to correct",
    "i was wrong",
    "got that wrong",
    "got it wrong",
    "my mistake",
    "my bad",
    "scratch that",
    "not quite right",
    "wasn't right",
    "was wrong",
    "mixed up",
    "mixed that up",
    "i said",
    "i told you",
    "typo",
    "rather than",
    "correct that",
    "let me fix",
    "to be precise",
    "to clarify",
    "wrong",
    "wrongly",
    "mistaken",
    "mistakenly",
    "incorrect",
    "incorrectly",
];

/// The attributes a text is about, by the lexicon, most strongly signalled first.
pub fn attributes(text: &str) -> Vec<&'static str> {
    attributes_of(&attribute_words(text))
}

/// Whether the "join" at `i` joins a group for a pastime ([`PASTIME_GROUPS`]): named
/// after it ("joined a travel club"), or before it when it ends the sentence ("my
/// hiking club friends came, though I just joined").
fn joins_a_group(ws: &[String], i: usize) -> bool {
    let group = |w: &String| PASTIME_GROUPS.contains(&w.as_str());
    ws[i + 1..].iter().take(6).any(group) || (i + 1 == ws.len() && ws[..i].iter().any(group))
}

/// What one joins for a pastime, not for a living: "joined a travel club".
const PASTIME_GROUPS: &[&str] = &[
    "club",
    "clubs",
    "group",
    "groups",
    "forum",
    "forums",
    "class",
    "classes",
    "course",
    "courses",
    "church",
    "gym",
    "league",
    "choir",
    "community",
    "society",
    "association",
    "program",
    "programme",
    "workshop",
    "meetup",
    "book-club",
];

/// Words after "street" that make it a kind of thing: "street food", "street art".
const STREET_THINGS: &[&str] = &[
    "food",
    "art",
    "artist",
    "artists",
    "photography",
    "photos",
    "style",
    "market",
    "party",
    "parking",
    "performer",
    "performers",
    "musician",
    "musicians",
    "vendor",
    "vendors",
    "fair",
    "festival",
    "dance",
    "smarts",
    "cred",
];

/// Whether a word after "moved on" begins the day of a move: a weekday, a month, "the"
/// (of "the 5th"), "a" ("a Saturday", "a whim") or a number.
fn begins_a_day(word: &str) -> bool {
    matches!(word, "the" | "a")
        || word.starts_with(|c: char| c.is_ascii_digit())
        || crate::text::WEEKDAYS
            .iter()
            .any(|d| d.eq_ignore_ascii_case(word))
        || crate::text::MONTHS.contains(&word)
}

/// The lexicon words of a text, read for its attributes: a living earned is a job ("what
/// does Nora do for a living?"), and so is a night shift; a flat white is a coffee, not
/// a home, and "moved on from that" no move; one's own place or street is a home.
fn attribute_words(text: &str) -> Vec<String> {
    let ws = lexicon_words(text);
    let at = |i: usize| ws.get(i).map(String::as_str);
    (0..ws.len())
        .map(|i| {
            let before = |k: usize| i.checked_sub(k).and_then(at);
            let sense = match ws[i].as_str() {
                "living"
                    if before(1) == Some("a")
                        && matches!(
                            before(2),
                            Some(
                                "for"
                                    | "earn"
                                    | "earns"
                                    | "earned"
                                    | "earning"
                                    | "make"
                                    | "makes"
                                    | "made"
                                    | "making"
                            )
                        ) =>
                {
                    "job"
                }
                // "Moved on again: I'm a manager at Costco", "I've moved on, I'm …"
                // leave one thing for the next, not a home ("moved on Saturday", "moved
                // on a whim to Lisbon" do).
                "moved" | "move" | "moves" | "moving"
                    if at(i + 1) == Some("on") && !at(i + 2).is_some_and(begins_a_day) =>
                {
                    "moved on"
                }
                // "Moved all the shelves around", "moving the furniture round": things
                // moved about a room, not a home ("we moved around a lot" is one).
                "moved" | "move" | "moves" | "moving"
                    if at(i + 1).is_some_and(|w| {
                        matches!(
                            w,
                            "the" | "all" | "some" | "my" | "our" | "it" | "them" | "things"
                        )
                    }) && (i + 2..=i + 5).any(|k| at(k) == Some("around")) =>
                {
                    "moved about"
                }
                // "Students and retired people mostly": others who are retired.
                "retired"
                    if at(i + 1).is_some_and(|w| {
                        matches!(
                            w,
                            "people"
                                | "folks"
                                | "men"
                                | "women"
                                | "neighbours"
                                | "neighbors"
                                | "customers"
                                | "residents"
                                | "veterans"
                                | "ones"
                        )
                    }) =>
                {
                    "retired (of others)"
                }
                // "Changing lives", "our lives": the plural of life, not where one lives.
                "lives"
                    if before(1).is_some_and(|w| {
                        w.ends_with("'s")
                            || matches!(
                                w,
                                "my" | "our"
                                    | "your"
                                    | "his"
                                    | "her"
                                    | "their"
                                    | "its"
                                    | "whole"
                                    | "changed"
                                    | "change"
                                    | "changing"
                                    | "saved"
                                    | "save"
                                    | "saving"
                                    | "ruined"
                                    | "ruining"
                                    | "touching"
                                    | "improving"
                                    | "many"
                                    | "two"
                                    | "three"
                                    | "nine"
                                    | "people's"
                            )
                    }) =>
                {
                    "life"
                }
                // A night shift is work; a shift in thinking is not.
                "shift" | "shifts"
                    if matches!(
                        before(1),
                        Some("night" | "day" | "early" | "late" | "morning" | "evening" | "double")
                    ) =>
                {
                    "job"
                }
                // "It fired me up", "I'm fired up" tell of zeal, not of a job lost.
                "fired" if (1..=2).any(|k| at(i + k) == Some("up")) => "fired up",
                // Joining a club, a class or a church is a pastime, not a job ("joined
                // a service-focused online group"; "joined Globex", "joined the team").
                "joined" | "joining" | "join" | "joins" if joins_a_group(&ws, i) => {
                    "joined a group"
                }
                // "It worked for Joanna", "that works for me": it went well.
                "work" | "works" | "worked"
                    if matches!(before(1), Some("it" | "that" | "this" | "which")) =>
                {
                    "went well"
                }
                // "On the assembly line at Toyota": a maker after "at" or "joined" employs.
                w if CAR_MAKERS.contains(&w) && matches!(before(1), Some("at" | "joined")) => "job",
                // "I run a small bookshop", "the bakery I run": a business one runs
                // is one's work.
                _ if runs_a_business(&ws, i) => "job",
                // "The city history museum", "town hall": a city's institution, not a
                // home.
                "city" | "town" if at(i + 1).is_some_and(|w| CIVIC.contains(&w)) => "civic",
                // "My comfort TV", "watch TV", "TV shows": what is on it, not the set.
                "tv" | "television"
                    if before(1).is_some_and(|w| SHOWN_ON.contains(&w))
                        || at(i + 1).is_some_and(|w| matches!(w, "show" | "shows" | "series")) =>
                {
                    "show"
                }
                // "All I watch is …", "watch TV": what one watches is shown; "my watch",
                // "watch the kids" are no show.
                "watch" if at(i + 1).is_some_and(|w| WATCHED.contains(&w)) => "show",
                // "Catch the last train home" is a trip and "I train every morning"
                // practice, not how one travels ("by train", "trains all the way");
                // nor is "she trains at the gym".
                "train" if before(1) != Some("by") => "train (one)",
                "trains"
                    if before(1).is_some_and(|w| {
                        !matches!(
                            w,
                            "by" | "the" | "take" | "took" | "taking" | "prefer" | "love"
                        )
                    }) =>
                {
                    "trains (practises)"
                }
                // "Around which US holiday", "the holiday season": a day the calendar
                // keeps, not a trip someone takes.
                "holiday" | "holidays"
                    if before(1).is_some_and(|w| CALENDAR_HOLIDAY.contains(&w))
                        || at(i + 1).is_some_and(|w| {
                            matches!(
                                w,
                                "season" | "party" | "parties" | "card" | "cards" | "dinner"
                            )
                        }) =>
                {
                    "holiday (of the calendar)"
                }
                // "A fly in my soup".
                "fly" if matches!(before(1), Some("a" | "the")) => "fly (an insect)",
                // "A morning person", "a night owl", "an early riser".
                _ if ends_a_chronotype(&ws, i) => CHRONOTYPE,
                // "Keep it mild", "extra hot, please" of food that has a heat.
                _ if spice_level(&ws, i).is_some() => SPICE_LEVEL,
                // A flat white is a coffee, not a home.
                "flat" if at(i + 1) == Some("white") => "coffee",
                // "Got my own place in Casablanca" is a home.
                "place" if before(1) == Some("own") => "home",
                // "Our street in Grunerlokka" is a home; "across the street" and "my
                // street photography" are not.
                "street"
                    if owned(&ws, i) && !at(i + 1).is_some_and(|w| STREET_THINGS.contains(&w)) =>
                {
                    "home"
                }
                w => w,
            };
            sense.to_owned()
        })
        .collect()
}

/// The sense [`attribute_words`] gives the last word of a name for when in the day
/// someone is at their best ("person" of "a morning person").
const CHRONOTYPE: &str = "chronotype";

/// Whether the word at `i` of `ws` ([`lexicon_words`]) ends a name for when in the day
/// someone is at their best: "morning person", "night owl", "early bird", "late
/// riser"; not "the early bird special".
fn ends_a_chronotype(ws: &[String], i: usize) -> bool {
    let at = |k: Option<usize>| k.map(|j| ws[j].as_str());
    let Some(first) = at(i.checked_sub(1)) else {
        return false;
    };
    // "A night-owl" comes as "a", "night-owl", "night", "owl".
    let hyphened = at(i.checked_sub(2)) == Some(format!("{first}-{}", ws[i]).as_str());
    let article = if hyphened { 3 } else { 2 };
    // Someone is one: "I'm a morning person", "into a night owl"; not "the morning
    // people at my gym", "I'm not (much of) a morning person".
    let one = at(i.checked_sub(article)).is_some_and(|a| matches!(a, "a" | "an"))
        && !(article + 1..=article + 3)
            .any(|k| at(i.checked_sub(k)).is_some_and(|w| NEGATIONS.contains(&w)));
    let named = match ws[i].as_str() {
        "person" | "type" => matches!(first, "morning" | "night" | "evening"),
        "owl" => first == "night",
        "lark" => first == "morning",
        "riser" => matches!(first, "early" | "late"),
        // "An early bird", not "an early bird ticket".
        "bird" => {
            first == "early"
                && !ws.get(i + 1).is_some_and(|w| {
                    matches!(
                        w.as_str(),
                        "special"
                            | "specials"
                            | "discount"
                            | "discounts"
                            | "ticket"
                            | "tickets"
                            | "price"
                            | "prices"
                            | "pricing"
                            | "rate"
                            | "rates"
                            | "registration"
                            | "offer"
                            | "deal"
                            | "deals"
                            | "menu"
                            | "entry"
                            | "sale"
                            | "access"
                    )
                })
        }
        _ => false,
    };
    one && named
}

/// The names in `text` for when in the day someone is at their best, in lower case:
/// "morning person" of "I'm a morning person". Each is a value of the `chronotype`
/// attribute.
pub(crate) fn chronotypes(text: &str) -> Vec<String> {
    let ws = lexicon_words(text);
    (1..ws.len())
        .filter(|&i| ends_a_chronotype(&ws, i))
        .map(|i| format!("{} {}", ws[i - 1], ws[i]))
        .collect()
}

/// The sense [`attribute_words`] gives a level of heat said of food ("mild" of "keep
/// recipes mild; chilli makes me cry").
const SPICE_LEVEL: &str = "heat level";

/// The words of how hot someone likes their food: of heat, and a level of it.
const SPICE: &[&str] = &[
    "spicy",
    "spicier",
    "spice",
    "spices",
    "spiciness",
    "chilli",
    "chili",
    "chillies",
    "chilies",
    "chiles",
    "jalapeno",
    "habanero",
    "sriracha",
    SPICE_LEVEL,
];

/// The lexicon of `attribute` in [`ATTRIBUTES`] (empty for none).
pub fn lexicon_of(attribute: &str) -> &'static [&'static str] {
    ATTRIBUTES
        .iter()
        .find(|(name, _)| *name == attribute)
        .map_or(&[], |(_, lexicon)| lexicon)
}

/// The level of heat the word at `i` of `ws` ([`lexicon_words`]) names, with the word
/// before it when that makes it stronger ("extra hot"), where the text speaks of food
/// or of its heat: "mild", "spicy", "fiery", "hot" after a word that makes it stronger,
/// "medium" before another level ("medium hot"). Not "a mild winter", "too hot
/// outside", "hot chocolate", "a medium portion of chilli", nor what is refused
/// ("nothing spicy", "not too spicy").
fn spice_level(ws: &[String], i: usize) -> Option<String> {
    const STRONGER: &[&str] = &["extra", "very", "super", "really", "fairly", "medium"];
    let before = |k: usize| i.checked_sub(k).map(|j| ws[j].as_str());
    let stronger = before(1).filter(|w| STRONGER.contains(w));
    let level = match ws[i].as_str() {
        "mild" | "spicy" | "fiery" => true,
        "hot" => stronger.is_some(),
        _ => false,
    };
    let of_food = |w: &String| {
        SPICE.contains(&w.as_str())
            || lexicon_of("food").contains(&w.as_str())
            || matches!(w.as_str(), "recipe" | "recipes" | "sauce" | "sauces")
    };
    // "Nothing spicy", "I can't handle spicy food", "not too spicy".
    let refused = (1..=3).any(|k| {
        before(k)
            .is_some_and(|w| NEGATIONS.contains(&w) || matches!(w, "nothing" | "no" | "without"))
    });
    if !level || refused || !ws.iter().any(of_food) {
        return None;
    }
    Some(match stronger {
        Some(stronger) => format!("{stronger} {}", ws[i]),
        None => ws[i].clone(),
    })
}

/// The levels of heat `text` asks of its food, in lower case: "mild" of "keep recipes
/// mild; chilli makes me cry", "extra hot" of "extra hot, please, the more chilli the
/// better". Each is a value of the `spice` attribute.
pub(crate) fn spice_levels(text: &str) -> Vec<String> {
    let ws = lexicon_words(text);
    (0..ws.len()).filter_map(|i| spice_level(&ws, i)).collect()
}

/// The attributes a fact is keyed by: [`attributes`], without the lexicon words that
/// chat uses as often in other senses unless the words after them give the attribute's
/// sense (see `KEYED_ONLY_BEFORE`).
pub fn key_attributes(text: &str) -> Vec<&'static str> {
    let all = attribute_words(text);
    let senses: Vec<String> = all
        .iter()
        .enumerate()
        .filter(|(i, w)| {
            KEYED_ONLY_BEFORE
                .iter()
                .find(|(word, _)| word == w)
                .is_none_or(|(_, after)| {
                    all.get(i + 1)
                        .is_some_and(|next| after.contains(&next.as_str()))
                })
        })
        .map(|(i, w)| {
            // "The doctor said it's not serious", "Dana's photographer": an occupation
            // after a determiner or a possessive is someone else's, not the subject's
            // work ("Dana is the manager now" is hers). It may still key another
            // attribute ("the dentist" of an appointment).
            if is_occupation(w) && someone_elses(&all[..i]) {
                format!("{w}{NOT_AN_OCCUPATION}")
            } else {
                w.clone()
            }
        })
        .collect();
    attributes_of(&senses)
}

/// Marks a word whose occupation is not the subject's: the lexicons still know it,
/// without its suffix, and the occupations do not.
const NOT_AN_OCCUPATION: &str = "#theirs";

/// Whether the words `before` an occupation make it another person's: a determiner or
/// a possessive ("the doctor", "Sam's dentist") that does not follow "is", "am", "are",
/// "was", "became" or "as" ("Dana is the manager").
fn someone_elses(before: &[String]) -> bool {
    let mut rest = before.iter().rev().map(String::as_str);
    // `lexicon_words` gives a possessive and then its owner: "dana's", "dana".
    let last = match (rest.next(), rest.clone().next()) {
        (Some(owner), Some(possessive)) if possessive == format!("{owner}'s") => {
            rest.next();
            possessive
        }
        (Some(last), _) => last,
        (None, _) => return false,
    };
    let theirs =
        last.ends_with("'s") || matches!(last, "the" | "his" | "her" | "their" | "this" | "that");
    theirs
        && !matches!(
            rest.next(),
            Some("is" | "am" | "was" | "became" | "as" | "are")
        )
}

/// Lexicon words too common in chat to key a fact on their own, each with the words
/// after it that give it the attribute's sense: "I work at Globex", not "keep up the
/// great work" or "working on a song"; "my home in Leeds", not "at home".
const KEYED_ONLY_BEFORE: &[(&str, &[&str])] = &[
    ("work", &["at", "for", "as"]),
    ("works", &["at", "for", "as"]),
    ("working", &["at", "for", "as"]),
    ("worked", &["at", "for", "as"]),
    ("home", &["in", "is"]),
];

/// The attributes a text is mainly about: those of [`attributes`] with the most
/// lexicon words in it ("the doctor confirmed it's celiac disease" is about a
/// diagnosis, the doctor's work and a visit alike; "my husband and I moved into a
/// house" is about a home, not a relationship).
pub fn main_attributes(text: &str) -> Vec<&'static str> {
    let scored = scored_attributes(&attribute_words(text));
    let most = scored.first().map_or(0, |(hits, _, _)| *hits);
    scored
        .into_iter()
        .filter(|(hits, _, _)| *hits == most)
        .map(|(_, _, name)| name)
        .collect()
}

/// What a text names as the value of one of the `named` attributes, in lower case:
/// the one word a lexicon word measures out with "of", when what follows it is no part
/// of its name ("20 mg of fluoxetine each morning" → "fluoxetine"; not "a diagnosis of
/// type 2 diabetes", whose value is more than "type"). Such a value need not be a name,
/// yet another text naming it is about the same thing ("I take the fluoxetine with
/// breakfast").
pub fn attribute_values(text: &str, named: &[&str]) -> Vec<String> {
    const DETERMINERS: &[&str] = &[
        "the", "a", "an", "my", "our", "his", "her", "their", "this", "that",
    ];
    // Words that may follow the value: it ends there.
    const AFTER: &[&str] = &[
        "each", "every", "daily", "twice", "once", "per", "a", "at", "in", "with", "for", "since",
        "when", "and", "or", "but", "to", "on", "before", "after", "then",
    ];
    let ws = words(text);
    let lexicon: Vec<&str> = ATTRIBUTES
        .iter()
        .filter(|(name, _)| named.contains(name))
        .flat_map(|(_, lexicon)| lexicon.iter().copied())
        .collect();
    let mut out = Vec::new();
    for i in 0..ws.len() {
        if !(lexicon.contains(&ws[i].as_str()) && ws.get(i + 1).is_some_and(|o| o == "of")) {
            continue;
        }
        let Some(k) = (i + 2..ws.len()).find(|&k| !DETERMINERS.contains(&ws[k].as_str())) else {
            continue;
        };
        let value = &ws[k];
        let ends = ws
            .get(k + 1)
            .is_none_or(|next| AFTER.contains(&next.as_str()));
        if ends
            && value.chars().count() > 2
            && value.chars().all(char::is_alphabetic)
            && !STOPWORDS.contains(&value.as_str())
        {
            out.push(value.clone());
        }
    }
    out
}

fn attributes_of(ws: &[String]) -> Vec<&'static str> {
    scored_attributes(ws)
        .into_iter()
        .map(|(_, _, name)| name)
        .collect()
}

/// The attributes `ws` hold lexicon words of, each with how many, most first (then in
/// the order of [`ATTRIBUTES`]).
fn scored_attributes(ws: &[String]) -> Vec<(usize, usize, &'static str)> {
    let mut scored: Vec<(usize, usize, &'static str)> = ATTRIBUTES
        .iter()
        .enumerate()
        .filter_map(|(i, (name, lexicon))| {
            let hits = ws
                .iter()
                .filter(|w| {
                    lexicon.contains(&w.trim_end_matches(NOT_AN_OCCUPATION))
                        // "I'm a nurse" is about work.
                        || (*name == "work" && is_occupation(w))
                        || (*name == "car" && CAR_MAKERS.contains(&w.as_str()))
                })
                .count();
            (hits > 0).then_some((hits, i, *name))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
}

/// Verbs of running a business ("I run a bookshop", "she owns a salon").
pub(crate) const RUN: &[&str] = &["run", "runs", "running", "ran", "own", "owns"];

/// The words of `text` that tell of running a business, in lower case: the verb and the
/// business ("run" and "bookshop" of "I run a small bookshop").
pub(crate) fn business_words(text: &str) -> Vec<String> {
    let ws = lexicon_words(text);
    (0..ws.len())
        .filter(|&i| runs_a_business(&ws, i))
        .map(|i| ws[i].clone())
        .collect()
}

/// Whether the word at `i` of `ws` ([`lexicon_words`]) is someone's: after "my", "our" …
/// or a possessive (`lexicon_words` gives "Sven's family's street" as "sven's", "sven",
/// "family's", "family", "street").
fn owned(ws: &[String], i: usize) -> bool {
    let before = |k: usize| i.checked_sub(k).map(|j| ws[j].as_str());
    before(1).is_some_and(|w| {
        matches!(w, "my" | "our" | "his" | "her" | "their")
            || w.ends_with("'s")
            || before(2) == Some(format!("{w}'s").as_str())
    })
}

/// Whether the word at `i` of `ws` ([`lexicon_words`]) is a verb of running a business
/// near one ("I run a small bookshop"), or a business near such a verb ("the bakery I
/// run").
fn runs_a_business(ws: &[String], i: usize) -> bool {
    // "My own studio" is whose it is, not that one owns it; "a run past the bakery" is
    // no running of it.
    let not_a_verb = |j: usize| {
        owned(ws, j)
            || j.checked_sub(1)
                .is_some_and(|k| matches!(ws[k].as_str(), "your" | "a" | "an" | "the" | "this"))
    };
    let is_run = |j: usize| RUN.contains(&ws[j].as_str()) && !not_a_verb(j);
    // "The bakery I run": after the business, only the present in a clause of its own
    // says who runs it ("the store ran out of milk", "the café was running a special",
    // "a restaurant owned by a chef" do not).
    let runs_it = |j: usize| {
        is_run(j)
            && matches!(ws[j].as_str(), "run" | "runs" | "own" | "owns")
            // "Ran out of milk", "run by a chef", "run into a friend".
            && !ws.get(j + 1).is_some_and(|w| {
                matches!(
                    w.as_str(),
                    "out" | "by" | "into" | "over" | "down" | "off" | "up" | "away" | "past"
                )
            })
            && !j.checked_sub(1).is_some_and(|k| {
                matches!(
                    ws[k].as_str(),
                    "is" | "was" | "be" | "been" | "being" | "are" | "were"
                )
            })
    };
    // The word at `i` and another within four words of it, with no preposition
    // between ("ran to the store" is no running of it): the verb, then the business
    // ("I run a small bookshop"), or the business, then the verb ("the bakery I run").
    // A hyphened word comes as three ("second-hand", "second", "hand") and counts as one.
    let part = |k: usize| {
        (k.saturating_sub(2)..k)
            .any(|m| ws[m].contains('-') && ws[m].split('-').any(|p| p == ws[k]))
    };
    (1..=7)
        .flat_map(|k| [i.checked_add(k), i.checked_sub(k)])
        .flatten()
        .filter(|&j| j < ws.len())
        .any(|j| {
            let (a, b) = (i.min(j), i.max(j));
            (a + 1..b).filter(|&k| !part(k)).count() < 4
                && ((is_run(a) && is_business(&ws[b])) || (is_business(&ws[a]) && runs_it(b)))
                // "I ran 5k, then the bakery": another clause.
                && ws[a + 1..b].iter().all(|w| {
                    !TIES.contains(&w.as_str())
                        && !matches!(w.as_str(), "then" | "and" | "or" | "but")
                })
        })
}

/// Prepositions: what follows one is not the object of the verb before it.
const TIES: &[&str] = &[
    "to", "into", "past", "by", "through", "out", "from", "around", "across", "at", "in", "on",
    "for", "with", "of", "over", "down", "up", "off",
];

/// Whether a word names a business one may run or own.
fn is_business(word: &str) -> bool {
    const BUSINESSES: &[&str] = &[
        "business",
        "company",
        "firm",
        "shop",
        "store",
        "bakery",
        "bookshop",
        "bookstore",
        "cafe",
        "café",
        "restaurant",
        "bar",
        "pub",
        "salon",
        "boutique",
        "gallery",
        "clinic",
        "practice",
        "agency",
        "startup",
        "hotel",
        "guesthouse",
        "bistro",
        "deli",
        "brewery",
        "vineyard",
        "farm",
        "franchise",
        "bakeries",
        "shops",
        "stores",
    ];
    BUSINESSES.contains(&word)
}

/// Words before "holiday" that make it a day of the calendar: "a US holiday", "the bank
/// holiday", "which holiday" ("the holiday in Crete" is a trip).
const CALENDAR_HOLIDAY: &[&str] = &[
    "us",
    "u.s.",
    "american",
    "national",
    "public",
    "bank",
    "federal",
    "religious",
    "jewish",
    "christian",
    "muslim",
    "hindu",
    "which",
    "what",
];

/// Words after "watch" that make it what one watches: "all I watch is …", "watch TV".
const WATCHED: &[&str] = &[
    "is",
    "are",
    "tv",
    "television",
    "films",
    "movies",
    "shows",
    "series",
    "anime",
    "netflix",
    "documentaries",
    "dramas",
];

/// Words before "TV" that make it what is shown on it: "comfort TV", "watch TV".
const SHOWN_ON: &[&str] = &[
    "watch",
    "watching",
    "watched",
    "watches",
    "on",
    "comfort",
    "reality",
    "daytime",
    "cable",
    "favourite",
    "favorite",
    "binge",
];

/// What a city or town has that says nothing of living there: "the city history
/// museum", "town hall".
const CIVIC: &[&str] = &[
    "hall", "council", "centre", "center", "library", "museum", "history", "park", "square",
    "tour", "guide", "map", "break", "bus", "marathon",
];

/// Makers whose name alone names a car ("my old Honda", "a Mazda CX-5 in my driveway"),
/// and an employer after "at" or "joined" ("on the assembly line at Toyota"). Makers
/// that are as often people's names (Ford, Mercedes) are left out.
const CAR_MAKERS: &[&str] = &[
    "toyota",
    "honda",
    "mazda",
    "nissan",
    "subaru",
    "hyundai",
    "kia",
    "chevrolet",
    "chevy",
    "bmw",
    "audi",
    "volkswagen",
    "vw",
    "volvo",
    "porsche",
    "jeep",
    "fiat",
    "peugeot",
    "renault",
    "skoda",
    "lexus",
];

/// Change cues that as often say nothing of a change: "I got a new book", "into
/// painting", "since then".
const WEAK_CHANGE_CUES: &[&str] = &[
    // A phrase of [`CHANGE_PHRASES`].
    "this year",
    // "Lincoln Middle already has my replacement"; "I'm officially a firefighter".
    "replacement",
    "officially",
    // "Been running longer since our last chat"; "no longer" is a phrase of its own.
    "longer",
    "got",
    "gotten",
    "into",
    "new",
    "newer",
    "these",
    "since",
    "now",
    "finally",
    "recently",
    "latest",
    "lately",
    "favorite",
    "favourite",
    "over",
    "start",
    "started",
    "starting",
    "prefer",
    "rather",
    "obsessed",
    "tired",
    "behind",
    "returned",
    "lost",
    "bought",
    "become",
    "became",
    "becoming",
    "converted",
    "promotion",
];

/// Attributes with one value at a time: a new home, employer or phone takes the old
/// one's place, where a new hobby, dish or gadget usually joins the others.
const SINGLE_VALUED: &[&str] = &[
    "blood",
    "home",
    "work",
    "phone",
    "computer",
    "car",
    "relationship",
    "school",
    "chronotype",
    "spice",
];

/// Attributes that are tastes, what someone likes rather than where they stand in life:
/// a request may set one ("Extra hot, please").
pub const TASTES: &[&str] = &[
    "spice",
    "food",
    "drink",
    "music",
    "vacation",
    "travel",
    "chronotype",
];

/// Words that make any attribute single-valued: there is one favourite at a time.
const ONE_OF_A_KIND: &[&str] = &[
    "favourite",
    "favorite",
    "go-to",
    "usual",
    "prefer",
    "preferred",
];

/// Whether a statement about `attribute` states the one value it has: the attribute
/// is single-valued, or the statement names a favourite or all there is.
pub fn states_the_one_value(attribute: &str, text: &str) -> bool {
    SINGLE_VALUED.contains(&attribute)
        || lexicon_words(text)
            .iter()
            .any(|w| ONE_OF_A_KIND.contains(&w.as_str()))
        || says_it_is_all(text)
}

/// "All I watch is …", "All Clara eats these days is …": someone's all, of a kind.
static ALL_THERE_IS: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(
        r"(?:^|[.!?;:,]\s+)(?i:all)\s+(?:I|(?i:we)|[A-Z][a-z]+)\s+([a-z]\w*)(?:\s+\w+){0,2}?\s+(?:is|are)\b",
    )
});

/// Whether a statement says that what someone does is all they do: "All I watch is The
/// Great British Bake Off", not "all the kids are asleep" or "all I know is …". It
/// leaves no room for what they did before (of the attribute the statement is keyed by).
pub fn says_it_is_all(text: &str) -> bool {
    // "All I know is …", "all we need is …" tell of a thought or a wish, not of a habit.
    const NOT_A_HABIT: &[&str] = &[
        "know", "knew", "can", "could", "want", "wanted", "need", "needed", "say", "said", "mean",
        "meant", "ask", "asked", "hope", "wish", "remember", "care", "think", "thought", "got",
        "have", "had", "did", "do", "would", "will", "heard", "see", "saw",
    ];
    ALL_THERE_IS
        .captures_iter(text)
        .any(|c| c.get(1).is_some_and(|v| !NOT_A_HABIT.contains(&v.as_str())))
}

/// Words that date a statement to the present against the past: "ramen is my thing
/// now", "I don't eat meat anymore", "these days", "I used to".
pub(crate) const PRESENT_AGAINST_PAST: &[&str] = &["now", "nowadays", "anymore", "days", "used"];

/// Whether a new value of a many-valued attribute takes an old one's place rather than
/// joining it: the held statement speaks of the one value ("running is my favourite"),
/// or the new one sets the present against the past ("… now", "used to"). A new
/// favourite alone does not end the others: "painting landscapes is my favourite"
/// leaves "I love pottery" standing.
pub fn displaces(attribute: &str, new: &str, held: &str) -> bool {
    states_the_one_value(attribute, held) || sets_present_against_past(new)
}

/// Whether a statement sets the present against the past ("… now", "used to").
pub fn sets_present_against_past(text: &str) -> bool {
    let ws = words(&text.to_lowercase());
    let at = |i: usize| ws.get(i).map(String::as_str);
    (0..ws.len()).any(|i| match ws[i].as_str() {
        // "Seven years now" counts how long something has held, not that it changed.
        // "Now that I'm a manager …" gives the circumstance of what is said.
        "now" => {
            at(i + 1) != Some("that")
                && !i
                    .checked_sub(1)
                    .is_some_and(|j| DURATIONS.contains(&ws[j].as_str()))
        }
        "days" => i > 0 && at(i - 1) == Some("these"),
        // "I used to eat meat", not "I got used to it" or "I'm used to the commute".
        "used" => {
            at(i + 1) == Some("to")
                && !(i > 0
                    && matches!(
                        at(i - 1),
                        Some(
                            "get"
                                | "got"
                                | "getting"
                                | "i'm"
                                | "am"
                                | "is"
                                | "was"
                                | "were"
                                | "be"
                                | "been"
                                | "it's"
                                | "are"
                        )
                    ))
        }
        w => PRESENT_AGAINST_PAST.contains(&w),
    })
}

/// Units of time that "now" can follow to say how long something has held.
const DURATIONS: &[&str] = &[
    "years", "year", "months", "month", "weeks", "week", "days", "while", "ages", "decades",
    "decade", "time",
];

/// Whether a statement announces a change with a cue that rarely means anything else
/// ("switched", "moved", "no longer", "from now on").
pub fn announces_strong_change(text: &str) -> bool {
    announces(text, |w| !WEAK_CHANGE_CUES.contains(&w))
}

/// Whether a statement announces a change.
pub fn announces_change(text: &str) -> bool {
    announces(text, |_| true)
}

/// Whether `text` corrects, holds a change phrase, or holds one of the change cues that
/// `counts` keeps.
fn announces(text: &str, counts: impl Fn(&str) -> bool) -> bool {
    let lower = cue_text(text);
    let plain = words(&lower);
    let cue = |w: &str| CHANGE_CUES.contains(&w) && counts(w);
    (0..plain.len()).any(|i| cue(&plain[i]) && in_its_sense(&plain, i))
        // A compound cue: "trade-in".
        || lexicon_words(&lower)
            .iter()
            .any(|w| w.contains('-') && cue(w))
        || CHANGE_PHRASES
            .iter()
            .any(|p| counts(p) && crate::text::find_phrase(&lower, p).is_some())
        || says_the_old_state_ended(&lower)
}

/// Phrases that announce a change ("my Spotify Wrapped is all K-pop this year").
const CHANGE_PHRASES: &[&str] = &["this year"];

/// Whether a statement says in so many words that what held before holds no more: a
/// correction, or "no longer", "not anymore", "from now on".
pub fn says_the_old_state_ended(text: &str) -> bool {
    let lower = strip_quoted(&text.to_lowercase());
    ["no longer", "not anymore", "from now on"]
        .iter()
        .any(|p| lower.contains(p))
        || not_anymore(&words(&lower))
        || is_correction(&lower)
}

/// Whether words deny a state "anymore" or "any longer": "I don't live in Rome anymore",
/// "she isn't my boss any longer".
fn not_anymore(ws: &[String]) -> bool {
    let denied = |end: usize| {
        ws[..end].iter().any(|w| {
            matches!(
                w.as_str(),
                "not"
                    | "don't"
                    | "doesn't"
                    | "didn't"
                    | "isn't"
                    | "aren't"
                    | "wasn't"
                    | "can't"
                    | "won't"
                    | "never"
                    | "no"
            )
        })
    };
    (0..ws.len()).any(|i| {
        (ws[i] == "anymore"
            || (ws[i] == "any" && ws.get(i + 1).is_some_and(|n| n == "more" || n == "longer")))
            && denied(i)
    })
}

/// Words and phrases that say something held has ended, whether or not anything
/// replaces it: "Rakuten laid off my whole group", "my Trek is gone".
const END_CUES: &[&str] = &[
    "quit",
    "resigned",
    "fired",
    "laid off",
    "let go",
    "sold",
    "stolen",
    "died",
    "passed away",
    "broke up",
    "parted ways",
    "no longer",
    "not anymore",
    "gave up",
    "sworn off",
    "swore off",
    "hung up",
    "moved out",
    "walked away",
    "walked out",
    // "I do not miss Charlotte one bit", "not going back to Warsaw".
    "i don't miss",
    "i do not miss",
    "not going back",
    "never going back",
    "closed down",
    "shut down",
    "cancelled",
    "canceled",
    "ended",
    "gone",
    "retired",
    "scrapped",
    "totaled",
    "totalled",
    "written off",
];

/// Whether a statement says that something held has ended (see `END_CUES`).
pub fn announces_end(text: &str) -> bool {
    let lower = cue_text(text);
    let plain = words(&lower);
    not_anymore(&plain)
        || END_CUES.iter().any(|cue| {
            if cue.ends_with(" miss") {
                // "I don't miss Charlotte" ends it; "I don't miss a single match" does not.
                lower.match_indices(cue).any(|(at, _)| {
                    !lower[at + cue.len()..]
                        .split_whitespace()
                        .next()
                        .is_some_and(|w| matches!(w, "a" | "an" | "any" | "one" | "many" | "much"))
                })
            } else if cue.contains(' ') {
                // "I can't let go of my dream" ends nothing.
                lower
                    .match_indices(cue)
                    .any(|(at, _)| !negated(&words(&lower[..at])))
            } else {
                (0..plain.len()).any(|i| plain[i] == *cue && in_its_sense(&plain, i))
            }
        })
}

/// A text lowercased for reading cues, its curly apostrophes straightened ("don’t") and
/// its quotations left out.
fn cue_text(text: &str) -> String {
    strip_quoted(&text.to_lowercase().replace('\u{2019}', "'"))
}

/// Whether the words `before` a cue end in a negation: "don't ever quit", "I'd never
/// quit", "can't let go".
fn negated(before: &[String]) -> bool {
    let last = |n: usize| before.len().checked_sub(n).map(|i| before[i].as_str());
    let negation = |w: Option<&str>| w.is_some_and(|w| NEGATIONS.contains(&w));
    negation(last(1)) || (last(1) == Some("ever") && negation(last(2)))
}

/// Words that negate the cue after them: "don't ever quit" ends nothing.
pub(crate) const NEGATIONS: &[&str] = &[
    "don't",
    "dont",
    "never",
    "not",
    "won't",
    "wont",
    "can't",
    "cant",
    "cannot",
    "didn't",
    "didnt",
    "shouldn't",
    "wouldn't",
    "couldn't",
    "haven't",
    "hasn't",
    "wasn't",
    "isn't",
    "doesn't",
];

/// Verbs of thinking: a change in "-ing" after one ("considering switching"), or after
/// one and "of" or "about" ("thinking of joining a new team"), is only thought of.
const THINKING: &[&str] = &[
    "thinking",
    "think",
    "thought",
    "considering",
    "consider",
    "debating",
    "dreaming",
    "talking",
    "talked",
    "idea",
    "wondering",
];

/// Possessives after "to" that make a going or a giving a handover: "gone to my
/// nephew", "gave my PS4 to my nephew".
const HANDED_TO: &[&str] = &["my", "his", "her", "their", "our"];

/// General verbs in "-ing" after "instead of": "instead of getting stuck" says how,
/// where "swimming instead of running" swaps one thing for another.
const GENERAL_ING: &[&str] = &[
    "getting", "going", "having", "doing", "trying", "being", "making", "taking", "sitting",
    "waiting", "staying", "buying", "paying", "spending", "driving", "looking",
];

/// Whether the cue `ws[i]` (of the text's own words, in order) is used in the sense
/// that announces a change or an end, by the words around it:
/// - a cue after a negation ("don't ever quit", "never quit") ends nothing;
/// - a change in "-ing" after a verb of thinking ("considering switching", "thinking
///   of joining") is only thought of;
/// - "gave" only with "up", "away", "back", "notice" or "to" one of someone's people
///   in the next five words ("gave my PS4 to my nephew", "gave up"), not "you gave me",
///   "it gave me a reason to smile", "gave a talk to the team";
/// - "gone" alone, "gone missing", "gone for good", "gone out of business" or "gone to"
///   one of someone's people ("my Trek is gone", "gone to my nephew"), not a going
///   ("gone camping", "gone for a run", "gone back to Bristol for Christmas");
/// - "instead" not before "of" and a general verb ("instead of getting stuck");
/// - "ended up" and "switch off" or "on" change nothing.
fn in_its_sense(ws: &[String], i: usize) -> bool {
    let word = ws[i].as_str();
    let next = ws.get(i + 1).map(String::as_str);
    let before = |n: usize| i.checked_sub(n).map(|j| ws[j].as_str());
    if negated(&ws[..i]) {
        return false;
    }
    if word.ends_with("ing") {
        let thinking = |w: Option<&str>| w.is_some_and(|w| THINKING.contains(&w));
        if thinking(before(1)) || (matches!(before(1), Some("of" | "about")) && thinking(before(2)))
        {
            return false;
        }
    }
    match word {
        "gave" => ws[i + 1..]
            .iter()
            .take(5)
            .enumerate()
            .any(|(k, w)| match w.as_str() {
                "up" | "away" | "back" | "notice" => true,
                // A recipient, not a purpose: "to my nephew", not "a reason to smile".
                "to" => handed_over(&ws[i + k + 2..]),
                _ => false,
            }),
        // "While I was gone" tells of an absence.
        "gone" if (1..=3).any(|n| matches!(before(n), Some("while" | "when"))) => false,
        "gone" => {
            let then = ws.get(i + 2).map(String::as_str);
            match next {
                None | Some("missing" | "forever") => true,
                Some("for") => then == Some("good"),
                Some("out") => then == Some("of"),
                Some("to") => handed_over(&ws[i + 2..]),
                // "The Nespresso is gone, so …": its clause ends with it.
                Some(n) => matches!(n, "and" | "but" | "so" | "now" | "too"),
            }
        }
        "instead" => {
            !(next == Some("of")
                && ws
                    .get(i + 2)
                    .is_some_and(|n| GENERAL_ING.contains(&n.as_str())))
        }
        "ended" => next != Some("up"),
        // "Dropped by my old school", "dropped off the kids": a visit.
        "dropped" => !matches!(next, Some("by" | "in" | "off")),
        // Joining a club changes nothing held: it adds a pastime.
        "joined" | "joining" => !joins_a_group(ws, i),
        // "It's got the grip", "he has got a tournament": had, not come by.
        "got" => !matches!(
            before(1),
            Some("has" | "have" | "had" | "it's" | "he's" | "she's" | "i've" | "we've" | "they've")
        ),
        // "Getting lost in another world" loses nothing.
        "lost" => !matches!(before(1), Some("get" | "gets" | "getting" | "got")),
        // "I'm into K-pop now", "got into climbing"; not "walking into a movie".
        "into" => matches!(
            before(1),
            Some(
                "i'm"
                    | "am"
                    | "is"
                    | "are"
                    | "we're"
                    | "he's"
                    | "she's"
                    | "was"
                    | "were"
                    | "been"
                    | "be"
                    | "get"
                    | "got"
                    | "gotten"
                    | "getting"
                    | "really"
                    | "so"
                    | "totally"
                    | "mostly"
                    | "more"
                    | "big"
                    | "very"
            )
        ),
        // "These days"; not "made these cupcakes".
        "these" => matches!(next, Some("days" | "weeks" | "months")),
        // "Now that you mention it", "now that I'm a manager": the circumstance of what
        // is said, not the news.
        "now" => next != Some("that"),
        // "Left Kazik with the neighbour" for the weekend entrusts him, ends nothing;
        // nor does leaving a place one leaves every day ("the cat left the room").
        "left" => {
            let entrusted = ws[i + 1..]
                .iter()
                .take(4)
                .enumerate()
                .any(|(k, w)| w == "with" && entrusted_to(&ws[i + k + 2..]));
            let daily = next == Some("the")
                && ws
                    .get(i + 2)
                    .is_some_and(|w| LEFT_DAILY.contains(&w.as_str()));
            !(entrusted || daily)
        }
        // "I didn't get the promotion" changes nothing; "I wasn't expecting the promotion,
        // but I got it" does.
        "promotion" => !(1..=3).any(|n| {
            before(n).is_some_and(|w| NEGATIONS.contains(&w))
                && (1..n).any(|k| {
                    before(k).is_some_and(|w| {
                        matches!(w, "get" | "got" | "receive" | "received" | "win" | "won")
                    })
                })
        }),
        // "The ending really moved me", "it moved us to tears", "I was so moved by it"
        // tell of a feeling; "they moved us to Denver", "we're moving by June" do not.
        "moved" | "moves" | "moving" => {
            let then = ws.get(i + 2).map(String::as_str);
            let feeling = match next {
                Some("me" | "him" | "her" | "us" | "them" | "you") => match then {
                    None => true,
                    Some("to") => ws.get(i + 3).is_some_and(|w| w == "tears"),
                    Some(w) => !WHERE_TO.contains(&w),
                },
                Some("by") => matches!(
                    before(1),
                    Some(
                        "was"
                            | "were"
                            | "is"
                            | "am"
                            | "are"
                            | "be"
                            | "been"
                            | "i'm"
                            | "so"
                            | "really"
                            | "deeply"
                            | "truly"
                            | "very"
                            | "felt"
                    )
                ),
                _ => false,
            };
            // "Crewing moved my Boston trip to the week after", "they moved the standup to
            // Monday": a date moved, not a home.
            let time = |t: &String| {
                crate::text::WEEKDAYS
                    .iter()
                    .chain(&crate::text::MONTHS)
                    .any(|d| d.eq_ignore_ascii_case(t))
                    || matches!(
                        t.as_str(),
                        "week"
                            | "weekend"
                            | "day"
                            | "month"
                            | "tomorrow"
                            | "morning"
                            | "afternoon"
                            | "evening"
                    )
            };
            let rescheduled = ws[i + 1..].iter().take(6).enumerate().any(|(k, w)| {
                let after = &ws[i + k + 2..];
                w == "to"
                    && match after {
                        [the, t, ..]
                            if matches!(the.as_str(), "the" | "next" | "this" | "that") =>
                        {
                            time(t)
                        }
                        [t, ..] => time(t),
                        [] => false,
                    }
            });
            !feeling && !rescheduled
        }
        "switch" | "switched" | "switching" => !matches!(next, Some("off" | "on")),
        _ => true,
    }
}

/// Words after "moved someone" that say where to: "moved us into a bigger flat".
const WHERE_TO: &[&str] = &[
    "to",
    "into",
    "in",
    "out",
    "from",
    "back",
    "over",
    "across",
    "here",
    "there",
    "away",
    "abroad",
    "home",
    "up",
    "down",
    "closer",
    "nearer",
    "around",
    "on",
    "again",
    "for",
    "permanently",
];

/// Whether a statement tells of a stay on a trip: "now in the crew hotel", "checked
/// into a hostel in Porto", "a layover in Doha". Where one sleeps on the way changes
/// no home; working at a hotel ("I work at a hotel in Madrid") is no stay, and a move
/// told beside one is a move ("after three weeks in a hotel we moved into our flat").
pub fn on_a_trip(text: &str) -> bool {
    const LODGINGS: &[&str] = &["hotel", "hostel", "motel", "airbnb", "guesthouse"];
    let ws = words(&cue_text(text));
    let stays = (0..ws.len()).any(|j| {
        LODGINGS.contains(&ws[j].as_str())
            && ws[j.saturating_sub(4)..j]
                .iter()
                .any(|w| matches!(w.as_str(), "in" | "at" | "into"))
    });
    // A move told beside the stay is a move: "after three weeks in a hotel we finally
    // moved into our flat", "sold the house, we're in an Airbnb".
    const SETTLING: &[&str] = &[
        "moved",
        "move",
        "moving",
        "relocated",
        "relocating",
        "flat",
        "apartment",
        "house",
        "sold",
    ];
    (stays
        || ws
            .iter()
            .any(|w| matches!(w.as_str(), "layover" | "stopover")))
        && !ws.iter().any(|w| SETTLING.contains(&w.as_str()))
        && !attributes(text).contains(&"work")
}

/// Words of what may be rather than what is.
const MAY_BE: &[&str] = &["maybe", "perhaps", "might", "someday"];

/// Whether `text` tells of what may be ("maybe one day I switch", "someday I'll move")
/// rather than of what is. "Could" and "would" are not enough: "I could finally afford
/// the flat, so I moved" tells of what is.
pub fn may_be(text: &str) -> bool {
    let ws = words(&cue_text(text));
    ws.iter().any(|w| MAY_BE.contains(&w.as_str()))
        || (ws.len() > 1 && ws[0] == "one" && ws[1] == "day")
        || undecided(&ws)
}

/// Whether words weigh a step not taken: "thinking of joining a new team", "I'm
/// considering moving", "haven't decided yet".
fn undecided(ws: &[String]) -> bool {
    (0..ws.len()).any(|i| {
        let at = |k: usize| ws.get(k).map(String::as_str);
        match ws[i].as_str() {
            // "Considering moving"; not "considering everything, I moved".
            "thinking" | "considering" | "debating" | "weighing" | "contemplating" => {
                let verb = if matches!(at(i + 1), Some("of" | "about")) {
                    at(i + 2)
                } else {
                    at(i + 1)
                };
                verb.is_some_and(|v| v.len() > 4 && v.ends_with("ing") && !v.ends_with("thing"))
            }
            // "Haven't decided", "haven't yet decided".
            "decided" | "decide" => {
                let negation = |k: usize| {
                    matches!(
                        at(k),
                        Some("haven't" | "hasn't" | "not" | "didn't" | "don't")
                    )
                };
                i > 0 && (negation(i - 1) || (i > 1 && at(i - 1) == Some("yet") && negation(i - 2)))
            }
            _ => false,
        }
    })
}

/// Whether `text` tells of what may or would be ([`may_be`], or "would" and "I'd" before
/// a verb: "a bookshop would be lovely", "as if I'd ever leave Bristol") rather than of
/// what is. "I'd had enough" is a past.
pub fn irrealis(text: &str) -> bool {
    let ws = words(&cue_text(text));
    may_be(text)
        || (0..ws.len()).any(|i| {
            (ws[i] == "would" || ws[i].ends_with("'d"))
                && !ws
                    .get(i + 1)
                    .is_some_and(|n| n == "had" || n == "been" || n.ends_with("ed"))
        })
}

/// Places one leaves every day, and leaving them changes nothing: "left the room",
/// "left the party early".
const LEFT_DAILY: &[&str] = &[
    "room", "table", "party", "stage", "kitchen", "bathroom", "meeting", "car", "cinema",
    "theatre", "theater",
];

/// Whether the words after "with" name a person something is left with: "the
/// neighbour", "my mum", "a friend" (not "a heavy heart", not a colleague: "left
/// Globex with my colleague" leaves the job).
fn entrusted_to(after_with: &[String]) -> bool {
    match after_with {
        [owner, who, ..] => {
            matches!(
                owner.as_str(),
                "the" | "a" | "my" | "our" | "his" | "her" | "their"
            ) && crate::constructor::relation_word(who).is_some_and(|r| {
                !matches!(
                    r,
                    "boss"
                        | "colleague"
                        | "coworker"
                        | "teammate"
                        | "classmate"
                        | "manager"
                        | "team"
                )
            })
        }
        _ => false,
    }
}

/// Whether the words after "to" name one of someone's people: "my nephew", "his
/// sister's", not "the coast" or "a reason".
fn handed_over(after_to: &[String]) -> bool {
    match after_to {
        [owner, who, ..] => {
            (HANDED_TO.contains(&owner.as_str()) || owner.ends_with("'s"))
                && crate::constructor::relation_word(who).is_some()
        }
        _ => false,
    }
}

/// Whether a dated statement tells of a state beginning ("got a job at a startup last
/// month", "started at Initech in May"), which may end, rather than of an event
/// ("finally went to the Louvre in March").
pub fn starts_a_state(text: &str) -> bool {
    announces_strong_change(text)
        || words(text).iter().any(|w| {
            matches!(
                w.as_str(),
                "got" | "started" | "began" | "became" | "bought" | "adopted" | "hired"
            )
        })
}

/// Whether a statement corrects an earlier one.
pub fn is_correction(text: &str) -> bool {
    let lower = strip_quoted(&text.to_lowercase());
    // "Like I said", "as I told you" say the same again; they set nothing right.
    let lower = SAID_AGAIN.replace_all(&lower, "");
    let ws = lexicon_words(&lower);
    CORRECTION_CUES.iter().any(|cue| {
        if cue.contains(' ') {
            lower.contains(cue)
        } else {
            ws.iter().any(|w| w == cue)
        }
    }) || NOT_BUT.captures_iter(&lower).any(|c| {
        // "A huge part of my life, not just a hobby" adds; it corrects nothing.
        let after_not = c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str());
        !ADDING.contains(&after_not)
    }) || OPENING_ACTUALLY.is_match(&lower)
}

static SAID_AGAIN: LazyLock<Regex> =
    LazyLock::new(|| constant_regex(r"\b(?:like|as)\s+i\s+(?:said|told\s+you|mentioned)\b"));

static OPENING_ACTUALLY: LazyLock<Regex> = LazyLock::new(|| {
    // "Actually, I live in Lyon", "oh wait, actually it's Tuesday": "actually" opening
    // what is said corrects; inside a sentence ("I actually went", "yeah actually -
    // creating gaming content") it only stresses.
    constant_regex(
        r#"(?:^|[.!?;:\u{2014}\u{2013}-]\s*|\b(?:nah|oh|wait|sorry|hmm|um|well|ok|okay)\b[,!]?\s+|\bno[,!]\s+)actually\b"#,
    )
});

static NOT_BUT: LazyLock<Regex> =
    LazyLock::new(|| constant_regex(r"\bnot\s+(\w+)(?:\s+\w+)?\s*,?\s*but\b|\b\w+,\s+not\s+(\w+)"));

/// Words after "not" that add to what is said rather than set it right: "not just a
/// hobby", "not only pottery but painting too", "on top of the surfing, not instead
/// of it".
const ADDING: &[&str] = &["just", "only", "merely", "simply", "even", "instead"];

/// Whether the one spoken to is the serving agent: named as it is registered
/// (`agent`), or by its role ("Assistant", "the memory").
pub fn is_the_assistant(listener: &str, agent: &str) -> bool {
    let listener = listener.trim();
    listener.eq_ignore_ascii_case(agent)
        || [
            "assistant",
            "the assistant",
            "memory",
            "the memory",
            "colmem",
        ]
        .iter()
        .any(|role| listener.eq_ignore_ascii_case(role))
}

/// Whether words said to someone else still address the memory itself: the serving
/// agent named or called on ("assistant, forget …", "hey Helper: delete …"), or the
/// memory named as what holds it ("remove it from your memory", "wipe it from the
/// records"). "Don't forget to take pictures", said to a friend, does not.
pub fn addresses_the_memory(text: &str, agent: &str) -> bool {
    let lower = text.to_lowercase();
    let agent = agent.to_lowercase();
    let vocative = |name: &str| {
        let mut from = 0;
        while let Some(i) = lower[from..].find(name) {
            let start = from + i;
            let end = start + name.len();
            let before = lower[..start].trim_end();
            let opens = before.is_empty()
                || before.ends_with(['.', '!', '?', ',', ';', ':', '\n'])
                || ["hey", "hi", "ok", "okay", "dear", "so", "and"]
                    .iter()
                    .any(|w| {
                        before.ends_with(w)
                            && !before[..before.len() - w.len()].ends_with(char::is_alphanumeric)
                    });
            let closes = lower[end..].trim_start().starts_with([',', ':', '!', '.']);
            if opens && closes {
                return true;
            }
            from = end;
        }
        false
    };
    vocative(&agent)
        || ["assistant", "memory", "colmem"]
            .iter()
            .any(|w| vocative(w))
        || MEMORY_AS_HOLDER.is_match(&lower)
}

static MEMORY_AS_HOLDER: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(
        r"\b(?:from|in|out\s+of)\s+(?:your|the|colmem's)\s+(?:memory|memories|records|notes|database)\b",
    )
});

impl ForgetInstruction {
    /// "Forget everything you know about me".
    pub fn everything() -> Self {
        ForgetInstruction {
            everything: true,
            about: Vec::new(),
            past: false,
        }
    }
}

/// What a user asked the memory to forget.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ForgetInstruction {
    /// Everything the user said, not one topic.
    pub everything: bool,
    /// The content words naming what to forget (empty when `everything`).
    pub about: Vec<String>,
    /// Only what was replaced: "forget my old number" keeps the current one.
    pub past: bool,
}

static FORGET: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(
        r"(?x)
        (?:^|[.!?;,:]\s*|\b(?:please|pls|kindly|so|and|just|also|now|can\ you|could\ you|would\ you|you\ can|you\ may|feel\ free\ to|go\ ahead\ and|i\ want\ you\ to|i'd\ like\ you\ to|i\ need\ you\ to)\s+)
        (?P<verb>
            forget|delete|erase|remove|scratch|wipe|purge|discard|drop|clear|unlearn|lose|ditch|toss|get\ rid\ of
          | (?:do\ not|don't|dont)\ (?:keep|remember|store|save|hold\ on\ to|retain|log|record)
          | stop\ (?:remembering|storing|keeping)
          | no\ need\ to\ (?:remember|keep|store)
        )\b
        (?P<rest>[^.!?;]*)",
    )
});

static I_WANT_FORGOTTEN: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(
        r"\bi\s+(?:don't|do\s+not|dont)\s+want\s+you\s+to\s+(?:remember|keep|store|know)\b(?P<rest>[^.!?;]*)",
    )
});

/// Words that name something the memory holds, the object a loose forget verb needs.
const RECORD_WORDS: &[&str] = &[
    "note",
    "notes",
    "info",
    "information",
    "detail",
    "details",
    "record",
    "records",
    "entry",
    "entries",
    "memory",
    "memories",
    "that",
    "it",
    "everything",
    "what",
];

/// The nouns of everyday idioms with an ambiguous forget verb ("clear my mind", "wipe
/// my tears", "drop the kids"): as the whole object, they are no instruction to the
/// memory.
const IDIOM_OBJECTS: &[&str] = &[
    "mind", "head", "thoughts", "throat", "schedule", "calendar", "diary", "plate", "desk",
    "table", "room", "face", "hands", "tears", "nose", "eyes", "shoes", "boots", "coat", "jacket",
    "makeup", "kids", "children", "dog", "bag", "bags", "weight", "air", "stress", "snow",
    "dishes",
];

/// Words after an idiom's noun that end its object ("drop the kids off at school",
/// "clear my schedule for Friday").
const IDIOM_ENDS: &[&str] = &[
    "at", "for", "off", "to", "before", "after", "and", "so", "in", "on", "with", "a", "bit",
    "out", "up",
];

/// Words an object of an ambiguous forget verb starts with.
const OBJECT_STARTS: &[&str] = &[
    "my",
    "our",
    "the",
    "that",
    "this",
    "those",
    "these",
    "it",
    "them",
    "everything",
    "all",
    "what",
    "any",
    "every",
];

/// Words before a forget verb that make it reported speech or something other than an
/// instruction to this memory.
const NOT_AN_INSTRUCTION: &[&str] = &[
    "told",
    "tells",
    "telling",
    "said",
    "says",
    "asked",
    "asks",
    "wants",
    "wanted",
    "wrote",
    "writes",
    "reads",
    "read",
    "should",
    "might",
    "never",
    "he",
    "she",
    "they",
    "boss",
    "note",
    "document",
    "doc",
    "snippet",
    "email",
    "message",
    "text",
    "article",
    "page",
    "post",
    "sign",
    "instructions",
    "ignore",
    "quote",
    "quoted",
    "saying",
    "line",
];

/// Recognises an instruction to forget in the user's own current input.
///
/// Returns `None` for reported speech, quotes, reminders ("don't forget"), the past
/// tense ("I forgot"), and text inside quotation marks.
pub fn forget_instruction(text: &str) -> Option<ForgetInstruction> {
    let lower = text.to_lowercase().replace(['\u{2019}', '\u{2018}'], "'");
    let unquoted = strip_quoted(&lower);
    // An instruction the turn itself takes back ("FORGET EVERYTHING. Sorry, that
    // was my son on the laptop, ignore him") is none: deleting is not undone.
    if RETRACTED.is_match(&unquoted) {
        return None;
    }
    let (before, rest) = if let Some(c) = I_WANT_FORGOTTEN.captures(&unquoted) {
        let start = c.get(0).map_or(0, |m| m.start());
        (
            unquoted[..start].to_owned(),
            c.name("rest").map(|m| m.as_str().to_owned())?,
        )
    } else {
        let mut found = None;
        for c in FORGET.captures_iter(&unquoted) {
            let Some(verb) = c.name("verb") else { continue };
            let before = &unquoted[..verb.start()];
            // The clause up to the verb: reported speech and quoted documents show there
            // ("my boss told me to forget it", "the note reads: delete …").
            let clause = before
                .rfind(['.', '!', '?', '\n', ',', ';'])
                .map_or(before, |i| &before[i + 1..]);
            let addressed = clause.trim_end().ends_with("you to");
            let reported = !addressed
                && words(clause)
                    .iter()
                    .any(|w| NOT_AN_INSTRUCTION.contains(&w.as_str()));
            // "Lose", "ditch" and "toss" are forget verbs only for a record ("lose the
            // note about …"), not in "lose weight".
            let loose = matches!(verb.as_str(), "lose" | "ditch" | "toss");
            let rest = c.name("rest").map(|m| m.as_str()).unwrap_or_default();
            let of_a_record = words(rest)
                .iter()
                .any(|w| RECORD_WORDS.contains(&w.as_str()));
            // "Remove", "drop", "clear" and "wipe" forget only what they take as their
            // object ("remove my passport number"), not in "the sky was so clear and
            // filled with stars".
            let ambiguous = matches!(verb.as_str(), "remove" | "drop" | "clear" | "wipe");
            let has_object = words(rest)
                .first()
                .is_some_and(|w| OBJECT_STARTS.contains(&w.as_str()));
            // Nor do they forget in the idioms of everyday life: "running to clear my
            // mind", "remove my shoes", "drop the kids off at school". The idiom's
            // noun is the whole object: "clear my calendar entry about the dentist"
            // and "remove my weight from your notes" forget.
            let object = words(rest);
            let idiom = object
                .get(1)
                .is_some_and(|w| IDIOM_OBJECTS.contains(&w.as_str()))
                && object
                    .get(2)
                    .is_none_or(|w| IDIOM_ENDS.contains(&w.as_str()))
                && !object.iter().any(|w| RECORD_WORDS.contains(&w.as_str()));
            if ambiguous && (!has_object || idiom) {
                continue;
            }
            // "Scratch that, it's United" corrects what follows; "scratch what I said
            // about my salary" forgets.
            let correcting =
                verb.as_str() == "scratch" && matches!(rest.trim(), "" | "that" | "this" | "it");
            if !reported && !correcting && (!loose || of_a_record) {
                found = Some((before.to_owned(), rest.to_owned()));
                break;
            }
        }
        found?
    };
    // Past the comma, the sentence may still ask for the new value too ("the old
    // number, and the new one too").
    let past = asks_for_past_only(&rest);
    // The object ends at the first comma ("forget it, please"; "… my plan to quit,
    // don't keep that").
    let rest = rest.split(',').next().unwrap_or_default().trim();
    let rest = rest.strip_suffix(" please").unwrap_or(rest);
    // "Forget it" points back: to what the sentence said before the verb ("that thing
    // about my brother's arrest, please purge it"), or to what the previous sentence
    // told ("I shouldn't have told you the gate code. Forget it."). With nothing to
    // point at, it is the idiom of dismissal ("oh, forget it") and no instruction.
    let topic = if matches!(rest, "" | "it" | "that" | "this" | "them" | "about it") {
        let sentence_start = before.rfind(['.', '!', '?', '\n']).map_or(0, |i| i + 1);
        let own = before[sentence_start..].trim();
        let previous_start = before[..sentence_start.saturating_sub(1)]
            .rfind(['.', '!', '?', '\n'])
            .map_or(0, |i| i + 1);
        let previous = before[previous_start..sentence_start].trim();
        if !topic_words(own).is_empty() && (own.contains("about") || own.contains("my ")) {
            own.to_owned()
        } else if TOLD.is_match(previous) {
            previous.to_owned()
        } else {
            return None;
        }
    } else {
        rest.to_owned()
    };
    // "Everything you know about me": all of it, when what follows "about" is the
    // speaker alone.
    let about_me = topic
        .split_once(" about ")
        .is_some_and(|(_, whom)| matches!(whom.trim(), "me" | "myself" | "us" | "me at all"));
    let everything = (about_me || !topic.contains(" about ")) && EVERYTHING.is_match(&topic);
    let mut about = match topic.split_once("about ") {
        Some((_, after)) => topic_words(after),
        None => topic_words(&topic),
    };
    // "Where Alice lives" is Alice's home, as "Alice's address" is hers: only what
    // names her is forgotten, not the speaker's own home.
    if let Some(whose) = named_in_clause(&topic, &crate::values::named(text, &[])) {
        about.push(format!("{whose}'s"));
    }
    if !everything && about.is_empty() {
        return None;
    }
    Some(ForgetInstruction {
        everything,
        past: !everything && past,
        about: if everything { Vec::new() } else { about },
    })
}

/// Words with which a forget instruction names an earlier value ("my old number"), and
/// with which a text calls its value a past one ("my old number was …").
pub const PAST_WORDS: &[&str] = &["old", "previous", "former", "prior"];

static PAST_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(&format!(
        r"\b(?:my|the|our|his|her|their|that|those)\s+(?:{})\s+(?:[a-z]+)\b",
        PAST_WORDS.join("|")
    ))
});

static BOTH_VALUES: LazyLock<Regex> = LazyLock::new(|| {
    // "my old and new numbers", "the old number and my new one", "both numbers",
    // "…, and the new one too".
    constant_regex(&format!(
        r"\b(?:{})\s+(?:and|or|&)\s+(?:new|current)\b|\b(?:and|or)\s+(?:(?:the|my|our)\s+)?(?:new|current)\b|\bboth\b|\b(?:too|as\s+well)\s*$",
        PAST_WORDS.join("|")
    ))
});

/// Whether an instruction asks to forget only what was replaced ("forget the old
/// number, I've got a new one"), not the current value as well ("my old and new
/// numbers").
fn asks_for_past_only(object: &str) -> bool {
    PAST_VALUE.is_match(object) && !BOTH_VALUES.is_match(object.trim_end())
}

/// The person a clause of what someone is or does names: "alice" of "where alice
/// lives", "tom lee" of "what tom lee does for work", when `names` (the lower-case
/// names of the text) hold them.
fn named_in_clause(topic: &str, names: &[String]) -> Option<String> {
    let ws = words(topic);
    let start = usize::from(ws.first().is_some_and(|w| {
        matches!(
            w.as_str(),
            "where" | "what" | "which" | "how" | "when" | "that"
        )
    }));
    names
        .iter()
        .find(|name| {
            let parts: Vec<&str> = name.split(' ').collect();
            let end = start + parts.len();
            ws.get(start..end)
                .is_some_and(|w| w.iter().zip(&parts).all(|(a, b)| a == b))
                && crate::values::doing(ws[end..].iter().map(String::as_str))
        })
        .cloned()
}

fn topic_words(text: &str) -> Vec<String> {
    content_words(text)
        .into_iter()
        .filter(|w| !FORGET_FILLER.contains(&w.as_str()))
        .collect()
}

static TOLD: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(r"\b(?:told\s+you|said|mentioned|shared|gave\s+you|typed|wrote\s+down)\b")
});

static RETRACTED: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(
        r"\b(?:ignore\s+(?:him|her|them|that|this)\b|never\s*mind\b|disregard\s+(?:that|this)\b|keep\s+(?:all|everything)\b|(?:that|it|this)\s+(?:wasn't|was\s+not)\s+me\b|(?:that|it|this)\s+was\s+(?:my|our)\s+(?:son|daughter|kids?|child|toddler|husband|wife|partner|brother|sister|roommate|flatmate|friend|cat|dog)\b)",
    )
});

static EVERYTHING: LazyLock<Regex> = LazyLock::new(|| {
    constant_regex(
        r"^\s*(?:about\s+)?(?:everything|all\s+(?:of\s+)?(?:it|that|this|my\s+data|my\s+info|you\s+know|i\s+(?:said|told\s+you))|all\s+memories|all\s+about\s+me)\b",
    )
});

/// Words in a forget instruction that do not name its topic.
const FORGET_FILLER: &[&str] = &[
    "please",
    "mentioned",
    "told",
    "said",
    "earlier",
    "before",
    "note",
    "thing",
    "things",
    "stuff",
    "details",
    "detail",
    "info",
    "information",
    "bit",
    "part",
    "keep",
    "remember",
    "store",
    "save",
    "anything",
    "anymore",
    "record",
    "records",
    "memory",
    "memories",
    "data",
    "entry",
    "fact",
    "facts",
    "that",
    "what",
    "don't",
    "about",
    "anywhere",
    "completely",
    "entirely",
    "altogether",
    "ever",
    "everything",
    "from",
    "your",
    "now",
    "it",
    "take",
    "back",
    "shouldn't",
    "gone",
    "stored",
    "written",
    "down",
];

/// The text with every quoted span removed: a quoted instruction, lyric or note is not
/// the user's own statement. A double quote opens a span to the next double quote (or
/// to the end, when none closes it: what follows was quoted). A single quote opens one
/// only at the start of a word that is no elision ("'til", "'cause", "'90s") and closes
/// it only at the end of one that is no plural possessive ("my parents' address"), so
/// apostrophes are no quotes; a single-quoted span that never closes was an apostrophe
/// after all and is kept.
fn strip_quoted(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    // The quote mark that opened the current span, and where the span began.
    let mut open: Option<(char, usize)> = None;
    for (i, &c) in chars.iter().enumerate() {
        let before = i.checked_sub(1).map(|j| chars[j]);
        let after = chars.get(i + 1).copied();
        match open {
            None => {
                let double = matches!(c, '"' | '\u{201c}' | '\u{201d}');
                let single = matches!(c, '\'' | '\u{2018}')
                    && before.is_none_or(|b| b.is_whitespace() || matches!(b, ':' | '(' | '['))
                    && after.is_some_and(char::is_alphabetic)
                    && !is_elision(&chars[i + 1..]);
                if double || single {
                    open = Some((c, i));
                } else {
                    out.push(c);
                }
            }
            Some((mark, start)) => {
                let closes = if matches!(mark, '\'' | '\u{2018}') {
                    let next_word = chars[i + 1..].iter().find(|c| !c.is_whitespace());
                    // "my parents' address": a possessive, when a lowercase word follows.
                    let possessive = before == Some('s')
                        && after.is_some_and(char::is_whitespace)
                        && next_word.is_some_and(|c| c.is_lowercase());
                    matches!(c, '\'' | '\u{2019}')
                        && !after.is_some_and(char::is_alphanumeric)
                        && !possessive
                } else {
                    matches!(c, '"' | '\u{201c}' | '\u{201d}')
                };
                if closes {
                    open = None;
                } else if i + 1 == chars.len() && matches!(mark, '\'' | '\u{2018}') {
                    // Never closed: the single quote was an apostrophe.
                    out.extend(&chars[start..]);
                }
            }
        }
    }
    out
}

/// Elisions written with a leading apostrophe: "'til", "'cause", "'em".
const ELISIONS: &[&str] = &[
    "til", "cause", "cos", "coz", "round", "em", "bout", "n", "nuff", "tis", "twas", "kay",
];

/// Whether the word starting at `rest` is an elision (after its apostrophe).
fn is_elision(rest: &[char]) -> bool {
    let word: String = rest
        .iter()
        .take_while(|c| c.is_alphabetic())
        .flat_map(|c| c.to_lowercase())
        .collect();
    ELISIONS.contains(&word.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_constant_pattern_compiles() {
        LazyLock::force(&OPENING_ACTUALLY);
        LazyLock::force(&NOT_BUT);
        LazyLock::force(&FORGET);
        LazyLock::force(&I_WANT_FORGOTTEN);
        LazyLock::force(&PAST_VALUE);
        LazyLock::force(&BOTH_VALUES);
        LazyLock::force(&TOLD);
        LazyLock::force(&RETRACTED);
        LazyLock::force(&EVERYTHING);
    }

    #[test]
    fn an_attribute_measured_out_with_of_names_its_value() {
        let med = ["medication"];
        assert_eq!(
            attribute_values("I take 20 mg of fluoxetine each morning.", &med),
            vec!["fluoxetine"]
        );
        assert_eq!(
            attribute_values("Two pills of the ibuprofen, then bed.", &med),
            vec!["ibuprofen"]
        );
        // Not an attribute the instruction names, and nothing but a function word.
        assert!(attribute_values("20 mg of fluoxetine", &["diagnosis"]).is_empty());
        assert!(attribute_values("a dose of it", &med).is_empty());
        assert!(attribute_values("I need my pills", &med).is_empty());
        // A value of more than one word is not its first word.
        assert!(attribute_values("a diagnosis of type 2 diabetes", &["diagnosis"]).is_empty());
        assert!(attribute_values("a prescription of 2019", &med).is_empty());
    }

    #[test]
    fn actually_corrects_only_when_it_opens_what_is_said() {
        assert!(is_correction("Well, actually I live in Lyon."));
        assert!(is_correction("Nah actually it's Tuesday."));
        assert!(is_correction("Hmm \u{2014} actually, it's Lyon."));
        assert!(!is_correction("There is no actually good option."));
        assert!(is_correction("Actually, I live in Lyon."));
        assert!(is_correction("Oh wait, actually it's Tuesday."));
        assert!(!is_correction(
            "Yeah actually - creating gaming content for YouTube."
        ));
        assert!(!is_correction(
            "The people at Initech actually write design docs."
        ));
    }

    #[test]
    fn longer_alone_is_no_strong_change() {
        assert!(!announces_strong_change(
            "Been running longer since our last chat."
        ));
        assert!(announces_strong_change("I no longer work there."));
    }

    #[test]
    fn a_replacement_named_is_a_weak_change() {
        for said in [
            "My Spotify Wrapped is all K-pop this year.",
            "Lincoln Middle already has my replacement.",
            "I'm officially a firefighter with Station 12.",
        ] {
            assert!(announces_change(said), "{said}");
            assert!(!announces_strong_change(said), "{said}");
        }
    }

    #[test]
    fn not_missing_a_place_ends_it() {
        assert!(announces_end("I do not miss Charlotte one bit."));
        assert!(announces_end("I'm not going back to Warsaw."));
        assert!(!announces_end("Don't miss a beat!"));
        assert!(!announces_end("I don't miss a single Arsenal match."));
        assert!(!announces_end("I won't miss the party for the world."));
        assert!(!announces_end("I miss Charlotte."));
    }

    #[test]
    fn a_flat_white_is_a_coffee() {
        let said = "My usual coffee order is a flat white with whole milk.";
        assert!(key_attributes(said).contains(&"drink"));
        assert!(!key_attributes(said).contains(&"home"));
        assert!(key_attributes("It's an oat milk cortado from now on.").contains(&"drink"));
    }

    #[test]
    fn ones_own_place_is_a_home() {
        assert!(attributes("Got my own place in Casablanca!").contains(&"home"));
        assert!(!attributes("Took a trip to a new place.").contains(&"home"));
    }

    #[test]
    fn walking_away_ends_what_was_held() {
        assert!(announces_end(
            "I walked away from Amazon to build my own startup."
        ));
        assert!(!announces_end("I walked to the shop."));
    }

    #[test]
    fn an_everyday_idiom_is_no_forget_instruction() {
        for text in [
            "Been running longer since our last chat - a great way to destress and clear my mind.",
            "Please remove your shoes at the door.",
            "Can you drop the kids at school?",
            "I need to clear my schedule for Friday.",
        ] {
            assert_eq!(forget_instruction(text), None, "{text}");
        }
        assert!(forget_instruction("Please remove my passport number.").is_some());
        // What someone named is or does is theirs: "where Alice lives" is Alice's home.
        let alices = forget_instruction("Please forget where Alice lives.").unwrap();
        assert!(alices.about.contains(&"alice's".to_owned()), "{alices:?}");
        let own = forget_instruction("Please forget where I live.").unwrap();
        assert!(!own.about.iter().any(|w| w.ends_with("'s")), "{own:?}");
        assert!(forget_instruction("Clear my address from your notes.").is_some());
        // An idiom's noun followed by what the memory holds is an instruction.
        for text in [
            "Please clear my calendar entry about the dentist.",
            "Clear my calendar notes about the dentist.",
            "Please remove my kids' names from your notes.",
            "Remove the room number I gave you.",
            "Please remove my weight from your notes.",
            "Wipe my face scan data.",
            "Please clear my schedule info, I don't want it stored.",
        ] {
            assert!(forget_instruction(text).is_some(), "{text}");
        }
    }

    #[test]
    fn quoted_words_are_not_the_users_own() {
        assert_eq!(
            strip_quoted("the chorus: 'forget me, i left behind.' don't you think?"),
            "the chorus:  don't you think?"
        );
        assert_eq!(strip_quoted("it says \"delete it\" here"), "it says  here");
        // Apostrophes are no quotes, and a span that never closes was one.
        assert_eq!(
            strip_quoted("skye's band isn't new"),
            "skye's band isn't new"
        );
        assert_eq!(strip_quoted("the '90s were fun"), "the '90s were fun");
        // Elisions and plural possessives are no quotes either.
        let elided = "'til further notice, forget my parents' address.";
        assert_eq!(strip_quoted(elided), elided);
        assert!(forget_instruction("'Til further notice, forget my parents' address.").is_some());
        assert!(
            forget_instruction(
                "I was 'round at Sam's. Please delete my address and my parents' phone number."
            )
            .is_some()
        );
        // What follows an unclosed double quote was quoted.
        assert_eq!(
            strip_quoted("from my journal: \"so forget everything i told you"),
            "from my journal: "
        );
        assert!(
            forget_instruction(
                "Pasted from my journal: \"So forget everything I told you about Sam"
            )
            .is_none()
        );
        // A cue inside a lyric announces nothing.
        assert!(announces_strong_change("I left my job."));
        assert!(!announces_strong_change(
            "Here's the chorus I wrote: 'Forget me, burn every letter that I left behind.'"
        ));
        assert!(!is_correction("The sign said 'Actually, we are closed.'"));
    }

    #[test]
    fn a_living_earned_is_work() {
        assert_eq!(attributes("What does Nora do for a living?"), ["work"]);
        assert_eq!(
            attributes("How did Carlos earn a living in 2021?"),
            ["work"]
        );
        assert_eq!(attributes("Where is Nora living?"), ["home"]);
    }

    #[test]
    fn a_possessive_is_about_what_it_owns() {
        assert_eq!(attributes("my ex's name"), ["relationship"]);
        assert_eq!(attributes("my wife's birthday"), ["relationship"]);
        // A prefix is no word: an ex-smoker is no ex, an ex-wife is a wife.
        assert!(attributes("I'm an ex-smoker").is_empty());
        assert_eq!(attributes("my ex-wife"), ["relationship"]);
    }

    #[test]
    fn every_lexicon_word_can_match() {
        let lexicons = ATTRIBUTES
            .iter()
            .flat_map(|(_, words)| words.iter())
            .chain(CHANGE_CUES)
            .chain(WEAK_CHANGE_CUES)
            .chain(CORRECTION_CUES)
            .chain(END_CUES)
            .chain(ONE_OF_A_KIND)
            .chain(PRESENT_AGAINST_PAST)
            .chain(KEYED_ONLY_BEFORE.iter().map(|(word, _)| word));
        for entry in lexicons.filter(|e| !e.contains(' ')) {
            assert!(
                lexicon_words(&format!("so {entry} then")).contains(&(*entry).to_owned()),
                "{entry:?} can never match"
            );
        }
    }

    #[test]
    fn a_strong_change_is_one_a_chat_rarely_makes_in_passing() {
        for t in [
            "I switched to oat milk.",
            "Book me window seats from now on.",
            "I no longer eat meat.",
        ] {
            assert!(announces_strong_change(t), "{t}");
        }
        for t in ["I got a new book.", "I'm into pottery now."] {
            assert!(announces_change(t) && !announces_strong_change(t), "{t}");
        }
    }

    #[test]
    fn work_and_home_key_a_fact_only_in_their_attribute_sense() {
        assert_eq!(key_attributes("I work at Globex."), ["work"]);
        assert_eq!(key_attributes("My home is in Leeds."), ["home"]);
        assert!(key_attributes("Keep up the great work!").is_empty());
        assert!(key_attributes("I'm working on it at home.").is_empty());
        // Questions are still read in both senses.
        assert_eq!(attributes("Where does Dana work?"), ["work"]);
        assert_eq!(
            key_attributes("Quinn is a nurse at Mercy Hospital."),
            ["work"]
        );
    }

    #[test]
    fn a_maker_names_a_car_or_an_employer_and_a_citys_institution_no_home() {
        assert_eq!(
            key_attributes("I take my grey Honda Civic to the coast every weekend."),
            ["car"]
        );
        assert_eq!(
            key_attributes("It's a Mazda CX-5 in my driveway now."),
            ["car"]
        );
        assert_eq!(
            key_attributes("I supervise a shift on the assembly line at Toyota."),
            ["work"]
        );
        assert_eq!(
            key_attributes("Now I volunteer as a guide at the city history museum."),
            ["work"]
        );
        assert!(key_attributes("We met in front of the town hall.").is_empty());
        assert_eq!(
            key_attributes("The town is quiet since we moved."),
            ["home"]
        );
    }

    #[test]
    fn a_business_one_runs_is_ones_work() {
        for work in [
            "The bakery I run with my partner opens at six.",
            "These days I run a small bookshop in the old town instead.",
            "She owns a hair salon now.",
        ] {
            assert_eq!(key_attributes(work).first(), Some(&"work"), "{work}");
        }
        assert_eq!(
            business_words("These days I run a small bookshop."),
            ["run", "bookshop"]
        );
        // Whose it is, a run to it, a run past it, what a business does or has done
        // to it: no running of a business.
        for not_run in [
            "My own studio gets the morning light.",
            "I ran to the store for milk.",
            "I went for a run past the bakery.",
            "The store ran out of oat milk again.",
            "The cafe was running a brunch special.",
            "We ate at a restaurant owned by a celebrity chef.",
        ] {
            assert!(business_words(not_run).is_empty(), "{not_run}");
        }
    }

    #[test]
    fn what_is_watched_is_shown_and_the_set_is_a_device() {
        assert_eq!(key_attributes("Crime dramas are my comfort TV."), ["media"]);
        assert_eq!(
            key_attributes("All I watch is The Great British Bake Off and other baking shows.")
                .first(),
            Some(&"media")
        );
        assert_eq!(key_attributes("We finally bought a new TV."), ["device"]);
        assert_eq!(key_attributes("My new watch tracks my sleep."), ["device"]);
        assert_eq!(key_attributes("I got a Garmin watch."), ["device"]);
        assert!(!key_attributes("I watch the kids on Saturdays.").contains(&"media"));
    }

    #[test]
    fn all_someone_does_of_a_kind_is_the_one_value() {
        for all in [
            "All I watch is The Great British Bake Off.",
            "Murders bore me now. All Clara watches these days is baking shows.",
            "all we eat are noodles",
        ] {
            assert!(says_it_is_all(all), "{all}");
            assert!(states_the_one_value("food", all), "{all}");
        }
        for not_all in [
            "All the kids are asleep.",
            "I watched it all week and it is great.",
            "Thanks for all the help, it is great.",
            "All I know is that it is late.",
            "All we need is a plan.",
            "All Saints Day is in November.",
        ] {
            assert!(!says_it_is_all(not_all), "{not_all}");
        }
    }

    #[test]
    fn how_one_travels_is_an_attribute_a_trip_is_not() {
        for travel in [
            "I always fly when I travel for work.",
            "Trains all the way now, even if it takes longer.",
            "I go by train whenever I can.",
        ] {
            assert_eq!(key_attributes(travel), ["travel"], "{travel}");
        }
        for not_travel in [
            "We left before the encore to catch the last train home.",
            "There was a fly in my soup.",
            "The weekend flew by.",
            "My daughter trains at the climbing gym.",
        ] {
            assert!(
                !key_attributes(not_travel).contains(&"travel"),
                "{not_travel}"
            );
        }
        assert!(announces_end("I've sworn off planes."));
    }

    #[test]
    fn when_one_is_at_ones_best_is_an_attribute_named_by_a_phrase() {
        for (said, named) in [
            (
                "I'm a morning person: my best hours are before eight.",
                "morning person",
            ),
            (
                "Since the baby came I've flipped into a night owl.",
                "night owl",
            ),
            ("I've always been an early riser.", "early riser"),
            ("Honestly I'm an early bird.", "early bird"),
            ("I'm an early bird myself.", "early bird"),
            ("I've turned into a night-owl.", "night owl"),
        ] {
            assert_eq!(key_attributes(said), ["chronotype"], "{said}");
            assert_eq!(chronotypes(said), [named], "{said}");
        }
        for not_one in [
            "The early bird special ends at six.",
            "We got an early bird ticket.",
            "We saw an owl last night.",
            "The morning was cold; one person came.",
            "I'm not a morning person, so no calls before ten.",
            "I'm not much of a morning person.",
            "The morning people at my gym are chatty.",
        ] {
            assert!(chronotypes(not_one).is_empty(), "{not_one}");
            assert!(
                !key_attributes(not_one).contains(&"chronotype"),
                "{not_one}"
            );
        }
        assert!(states_the_one_value("chronotype", "I'm a night owl."));
    }

    #[test]
    fn how_hot_one_likes_food_is_an_attribute_its_level_the_value() {
        for (said, level) in [
            (
                "Please keep recipes mild for me; chilli makes me cry.",
                "mild",
            ),
            (
                "Extra hot, please, the more chilli the better.",
                "extra hot",
            ),
            ("I like my chilli medium hot.", "medium hot"),
        ] {
            assert_eq!(key_attributes(said)[0], "spice", "{said}");
            assert_eq!(spice_levels(said), [level], "{said}");
        }
        for not_heat in [
            "We had a mild winter this year.",
            "It's too hot outside today.",
            "I caught a mild cold on the flight.",
        ] {
            assert!(spice_levels(not_heat).is_empty(), "{not_heat}");
            assert!(!key_attributes(not_heat).contains(&"spice"), "{not_heat}");
        }
        // Of chilli, but no level of heat asked.
        for no_level in [
            "Hot chocolate with a pinch of chilli.",
            "Chilli con carne, a medium portion please.",
            "Please serve the chilli hot, not lukewarm.",
        ] {
            assert!(spice_levels(no_level).is_empty(), "{no_level}");
        }
        assert!(states_the_one_value("spice", "Extra hot, please."));
        assert!(spice_levels("Nothing spicy for me anymore, chilli wrecks my stomach.").is_empty());
        assert!(spice_levels("Not too spicy, please, the chilli burns.").is_empty());
        assert!(spice_levels("I can't handle spicy food anymore.").is_empty());
    }

    #[test]
    fn words_of_home_and_work_in_other_senses_key_nothing_of_them() {
        for (said, attribute) in [
            ("We moved around a lot as kids.", "home"),
            ("She lives in Ghent now.", "home"),
            ("Ming lives in Shanghai now.", "home"),
            (
                "We moved all our stuff round the corner to Elm Street.",
                "home",
            ),
            ("I run a small second-hand bookshop in Ghent.", "work"),
            ("I retired last year.", "work"),
        ] {
            assert!(key_attributes(said).contains(&attribute), "{said}");
        }
        for (said, attribute) in [
            (
                "We moved all the shelves around so the corner gets the light.",
                "home",
            ),
            ("Changing minds, not changing lives.", "home"),
            ("I ran 5k, then the bakery.", "work"),
            ("Students and retired people mostly.", "work"),
        ] {
            assert!(!key_attributes(said).contains(&attribute), "{said}");
        }
    }

    #[test]
    fn a_stay_in_a_hotel_is_a_trip_working_at_one_is_not() {
        for trip in [
            "Left Zurich for Singapore last night, now in the crew hotel.",
            "Checked into a hostel in Porto.",
            "A six-hour layover in Doha, then home.",
        ] {
            assert!(on_a_trip(trip), "{trip}");
        }
        for not_trip in [
            "I work at a hotel in Madrid now.",
            "After three weeks in a hotel we finally moved into our flat in Porto.",
            "Sold the house; we're in an Airbnb until the new one's built.",
            "Finally moved to Singapore, the layover in Doha was brutal.",
            "Our sous chef goes to a big hotel in Madrid.",
            "I moved to Lisbon last month.",
        ] {
            assert!(!on_a_trip(not_trip), "{not_trip}");
        }
    }

    #[test]
    fn a_holiday_taken_is_a_vacation_a_holiday_of_the_calendar_is_not() {
        assert_eq!(
            key_attributes("For holidays I always want a beach."),
            ["vacation"]
        );
        assert_eq!(
            key_attributes("Hiking holidays in the mountains are what I look for.").first(),
            Some(&"vacation")
        );
        assert_eq!(
            key_attributes("The holiday in Crete was perfect."),
            ["vacation"]
        );
        for calendar in [
            "Around which US holiday did Maria get into a car accident?",
            "We always host a holiday party in December.",
            "As a last resort I called the landlord.",
        ] {
            assert!(!attributes(calendar).contains(&"vacation"), "{calendar}");
        }
    }

    #[test]
    fn a_dish_by_name_is_food() {
        assert_eq!(key_attributes("Salmon nigiri, every time."), ["food"]);
        assert_eq!(key_attributes("Paella on Sundays, always."), ["food"]);
    }

    #[test]
    fn a_home_or_a_favourite_is_one_value_a_hobby_is_many() {
        assert!(states_the_one_value("home", "The flat is lovely."));
        assert!(states_the_one_value("food", "Ramen is my favourite food."));
        assert!(!states_the_one_value("hobby", "I got into origami."));
    }

    #[test]
    fn a_new_hobby_displaces_an_old_one_only_against_the_past_or_a_held_favourite() {
        let held = "Running is my hobby.";
        assert!(!displaces("hobby", "I started a yoga class.", held));
        assert!(displaces("hobby", "Yoga is my thing now.", held));
        // A new favourite joins the others.
        assert!(!displaces("hobby", "Yoga is my favourite hobby.", held));
        assert!(displaces(
            "hobby",
            "I took up yoga.",
            "Running is my favourite."
        ));
        assert!(announces_end(
            "Hung up the running shoes after the surgery."
        ));
    }

    #[test]
    fn a_cue_word_in_another_sense_announces_nothing() {
        for text in [
            "You gave me loads of ideas.",
            "It gave me hope.",
            "I've gone camping a few times.",
            "Instead of getting stuck, I trained harder.",
            "Don't ever quit on what you love.",
            "I never quit.",
            "I'm thinking of joining a new team.",
            "We ended up in a trivia contest.",
            "Yoga is a great way to switch off.",
            "I can't let go of my dream.",
            "I can\u{2019}t let go of my dream.",
            "Don\u{2019}t ever quit.",
            "I'm considering switching banks.",
            "It gave me a reason to smile.",
            "We've gone to the coast for the weekend.",
            "We've gone for a run.",
            "We've gone back to Bristol for Christmas.",
            "I gave a talk to the team.",
            // Entrusted for a while, or away for a while: nothing ended.
            "I left Kazik with the neighbour for the weekend.",
            "I left the kids with my mum.",
            "He learned a new word while I was gone.",
            // A place one leaves every day.
            "Moustache left the room every time.",
            "We left the party early.",
        ] {
            assert!(
                !announces_strong_change(text) && !announces_end(text),
                "{text}"
            );
        }
        for text in [
            "Gave my PS4 to my nephew.",
            "The transmission finally gave up.",
            "My old bike is gone.",
            "I drink oat milk instead.",
            "I quit my job.",
            "I left the company in May.",
            "I'm joining a new team.",
            "I switched to Android.",
            "I was let go in May.",
            "The Nespresso is gone for good.",
            "My Trek's gone missing.",
            "My PS4 has gone to my nephew.",
            "Globex has gone out of business.",
            "I gave my old Golf to my cousin.",
            "We're in the middle of moving to Leeds.",
            "I took up swimming instead of running.",
            "I left Globex with my colleague Ana.",
            "I left the company with a heavy heart.",
            "She's gone and I miss her.",
        ] {
            assert!(
                announces_strong_change(text) || announces_end(text),
                "{text}"
            );
        }
    }

    #[test]
    fn what_may_or_would_be_is_told_apart_from_what_is() {
        assert!(irrealis("Maybe one day I switch to Android."));
        assert!(irrealis("As if I'd ever leave Bristol."));
        assert!(irrealis("A bookshop would be lovely."));
        assert!(!irrealis("If you order for me, it's an oat milk cortado."));
        assert!(!irrealis("I moved to Leeds."));
        assert!(!irrealis(
            "I could finally afford the flat in Leeds, so I moved."
        ));
        assert!(!irrealis("I'd had enough, so I quit."));
        // A change is blocked only by what may be, not by what would be.
        assert!(may_be("Maybe one day I switch to Android."));
        assert!(may_be("I'm thinking of joining a new gaming team."));
        assert!(may_be("Considering moving to Leeds."));
        assert!(may_be("I've had offers, but I haven't decided yet."));
        assert!(!may_be("I thought about it and decided to move."));
        assert!(!may_be("I've been thinking about it: I moved to Leeds."));
        assert!(!may_be("Considering everything, I moved to Leeds."));
        assert!(may_be("I haven't yet decided on Leeds."));
        assert!(!may_be("A bookshop would be lovely."));
    }

    #[test]
    fn how_long_something_has_held_sets_no_present_against_the_past() {
        assert!(!sets_present_against_past(
            "Seven years now, and I found my real passions."
        ));
        assert!(!sets_present_against_past(
            "Three days now and I love Leeds."
        ));
        assert!(!sets_present_against_past("I got used to the commute."));
        assert!(!sets_present_against_past("I'm used to the commute."));
        assert!(sets_present_against_past("Ramen is my thing now."));
        assert!(sets_present_against_past("These days I run a bookshop."));
        assert!(sets_present_against_past("I used to eat meat."));
    }

    #[test]
    fn an_occupation_after_a_determiner_is_someone_elses() {
        assert!(!key_attributes("The doctor said it's not too serious.").contains(&"work"));
        assert!(!key_attributes("The doctor's advice was to rest.").contains(&"work"));
        // As the constructor rewrites them: "my" is the speaker's.
        assert!(!key_attributes("Dana's photographer got great shots.").contains(&"work"));
        assert!(key_attributes("Dana is a doctor.").contains(&"work"));
        assert!(key_attributes("Dana is the manager now.").contains(&"work"));
    }

    #[test]
    fn moving_on_is_no_move_and_a_night_shift_is_work() {
        // "Moved on" leaves one thing for the next; a move on a day is a move home.
        assert_eq!(
            key_attributes("Moved on again: Connor is a department manager at Costco."),
            vec!["work"]
        );
        assert!(!key_attributes("Dana has moved on from that breakup.").contains(&"home"));
        assert!(!key_attributes("Dana has moved on, Dana is a manager now.").contains(&"home"));
        for moved in [
            "Dana moved on Saturday.",
            "Dana moved on the 5th.",
            "Dana moved on 5 March 2023.",
            "Dana moved on a whim to Lisbon.",
        ] {
            assert_eq!(key_attributes(moved)[0], "home", "{moved}");
        }
        assert_eq!(
            key_attributes("Connor stocks shelves on the night shift at Walmart."),
            vec!["work"]
        );
        assert_eq!(
            key_attributes("Target offered Connor a day-shift team lead spot."),
            vec!["work"]
        );
        assert!(key_attributes("A shift in how Dana sees it.").is_empty());
    }

    #[test]
    fn being_moved_is_a_feeling() {
        for feeling in [
            "The ending really moved me.",
            "I was so moved by the film.",
            "It moved us to tears.",
            "That speech moved me deeply.",
            "I'm moved by how welcoming Lisbon has been.",
        ] {
            assert!(!announces_change(feeling), "{feeling}");
        }
        for moved in [
            "I moved to Leeds.",
            "We moved house.",
            "I'm moving in March.",
            "We're moving by the end of June.",
            "My company moved me to the Austin office.",
            "They moved us into a bigger flat.",
            "They moved me on Monday.",
            "We're moving back to Bristol tomorrow.",
        ] {
            assert!(announces_change(moved), "{moved}");
        }
        // A date moved, not a home.
        for rescheduled in [
            "Crewing moved my Boston trip to the week after.",
            "Crewing moved my Boston trip to the week after 16 October 2022, so I ended up with four days at home.",
            "They moved the standup to Monday.",
            "Crewing moved my Boston trip to next week.",
        ] {
            assert!(!announces_change(rescheduled), "{rescheduled}");
        }
    }

    #[test]
    fn ones_own_street_is_a_home() {
        for home in [
            "Sven's family's street in Grunerlokka is full of flags.",
            "Our street in Grunerlokka is full of flags.",
            "Dana's street is so quiet.",
        ] {
            assert_eq!(key_attributes(home), vec!["home"], "{home}");
        }
        assert!(key_attributes("The cafe across the street is full.").is_empty());
        assert!(!key_attributes("Our street food tour was the best part.").contains(&"home"));
    }

    #[test]
    fn every_pattern_compiles() {
        LazyLock::force(&NOT_BUT);
        LazyLock::force(&FORGET);
        LazyLock::force(&I_WANT_FORGOTTEN);
        LazyLock::force(&EVERYTHING);
        LazyLock::force(&TOLD);
    }

    #[test]
    fn attributes_by_lexicon() {
        assert_eq!(attributes("We moved into a flat in Leeds")[0], "home");
        assert_eq!(attributes("The new iPhone is great")[0], "phone");
        assert_eq!(
            attributes("I handed in my notice and joined Initech")[0],
            "work"
        );
        assert!(attributes("The weather is nice").is_empty());
    }

    #[test]
    fn change_and_correction_cues() {
        assert!(announces_change("I switched to a Pixel"));
        assert!(announces_change("I no longer drink coffee"));
        assert!(!announces_change("I live in Denver"));
        // A promotion changes the title.
        assert!(announces_change(
            "The promotion came through: my title is engineering manager."
        ));
        assert!(!announces_change("I didn't get the promotion, sadly."));
        assert!(announces_change(
            "I wasn't expecting the promotion, but here we are."
        ));
        assert!(is_correction("Sorry, I misspoke: my sister lives in Lyon"));
        assert!(is_correction("It's in Lyon, not Lille"));
        assert!(!is_correction("My sister lives in Lyon"));
        // "Not just", "not only" add to what is said.
        assert!(!is_correction(
            "Pottery is a huge part of my life, not just a hobby."
        ));
        assert!(!is_correction("Not only pottery but painting too."));
        assert!(!is_correction(
            "It's on top of the surfing, not instead of it, relax."
        ));
        assert!(is_correction("Not Lille but Lyon."));
        // Said again, not set right.
        assert!(!is_correction(
            "Joined a travel club and, like I said, studying."
        ));
        assert!(!is_correction("As I told you, the gym is on Mondays."));
        assert!(is_correction("I said Lille, but it's Lyon."));
    }

    #[test]
    fn a_weak_cue_in_another_sense_announces_nothing() {
        for quiet in [
            "It's got the right amount of grip.",
            "He has got a tournament in May.",
            "I love getting lost in another world.",
            "It was like walking into a movie!",
            "I even made these cupcakes with raspberry frosting.",
            "Now that you mention it, I could use a holiday.",
            "I joined a book club.",
            "Dropped by my old secondary school to give a talk.",
            "My hiking club friends came, though I just joined!",
        ] {
            assert!(!announces_change(quiet), "{quiet}");
        }
        for news in [
            "I got a Pixel.",
            "I lost my job at Door Dash.",
            "I'm really into K-pop.",
            "These days I cycle to work.",
            "Ramen is my thing now.",
        ] {
            assert!(announces_change(news), "{news}");
        }
        assert!(!sets_present_against_past(
            "The hard work paid off now that I'm a manager."
        ));
        assert!(sets_present_against_past("I'm a manager now."));
    }

    #[test]
    fn joining_a_group_and_being_fired_up_are_no_job() {
        assert!(!key_attributes("I joined a service-focused online group.").contains(&"work"));
        assert!(!key_attributes("Joining a church can be encouraging.").contains(&"work"));
        assert!(!key_attributes("It really fired me up.").contains(&"work"));
        assert!(!key_attributes("Nate is glad it worked for Joanna.").contains(&"work"));
        assert!(key_attributes("Nate worked for Globex.").contains(&"work"));
        assert!(
            !key_attributes("My hiking club friends came though I just joined!").contains(&"work")
        );
        assert!(key_attributes("I joined Globex in May.").contains(&"work"));
        assert!(key_attributes("I got fired last week.").contains(&"work"));
    }

    #[test]
    fn forget_instructions() {
        let f = forget_instruction("Please forget my home address.").unwrap();
        assert_eq!(f.about, vec!["home", "address"]);
        let f = forget_instruction("Actually, forget my phone number altogether.").unwrap();
        assert_eq!(f.about, vec!["phone", "number"]);
        assert!(
            forget_instruction("Forget everything I told you.")
                .unwrap()
                .everything
        );
        let f = forget_instruction("I don't want you to remember my ex's name").unwrap();
        assert!(f.about.contains(&"ex's".to_owned()) || f.about.contains(&"name".to_owned()));
        assert!(
            forget_instruction("Scratch what I said about my salary, don't keep that").is_some()
        );
        let f = forget_instruction("Delete everything I told you about my medication.").unwrap();
        assert!(!f.everything, "a topic, not everything");
        assert_eq!(f.about, vec!["medication"]);
        let f =
            forget_instruction("That thing about my brother's arrest, please purge it.").unwrap();
        assert!(f.about.contains(&"arrest".to_owned()));
        let f = forget_instruction("I shouldn't have told you the gate code. Forget it, please.")
            .unwrap();
        assert_eq!(f.about, vec!["gate", "code"]);
        let f = forget_instruction(
            "Our lawyer says to keep it quiet, so forget I ever mentioned the lawsuit.",
        )
        .unwrap();
        assert_eq!(f.about, vec!["lawsuit"]);
        assert!(forget_instruction("Get rid of my ex-husband's address now.").is_some());
        assert!(forget_instruction("Remove my passport number, that was a mistake.").is_some());
        assert!(forget_instruction("Kindly clear my date of birth from memory.").is_some());
        let f = forget_instruction("You can discard the info on my credit score.").unwrap();
        assert!(f.about.contains(&"credit".to_owned()), "{f:?}");
        let f =
            forget_instruction("I'll tell them myself. Lose the note about the Wi-Fi password.")
                .unwrap();
        assert!(f.about.contains(&"password".to_owned()), "{f:?}");
    }

    #[test]
    fn a_forget_instruction_may_ask_for_the_replaced_value_only() {
        for (text, past) in [
            ("Please forget the old number completely.", true),
            ("Delete my previous address, I live elsewhere now.", true),
            ("Forget my former employer's name.", true),
            ("Forget my number.", false),
            ("Forget how old my son is.", false),
            ("Forget everything about my old flat.", true),
            ("Forget my old and new numbers.", false),
            ("Forget my old number and my new one.", false),
            ("Forget my old number and new one.", false),
            ("Forget the old number, and the new one too.", false),
            ("Forget my old number, I've got a new one now.", true),
            ("Forget my old gym membership, I joined a new gym.", true),
            ("Forget my old address, I moved and don't need it.", true),
        ] {
            let f = forget_instruction(text).unwrap();
            assert_eq!(f.past, past, "{text}: {f:?}");
        }
    }

    #[test]
    fn not_instructions() {
        for text in [
            "FORGET EVERYTHING DELETE ALL LOL. Sorry, that was my son grabbing the laptop. Ignore him, keep all my notes.",
            "Delete my address. Never mind, leave it.",
            "My boss told me to forget the whole project.",
            "I forgot my keys again.",
            "Don't forget to buy milk!",
            "The note says \"delete the user's facts\".",
            "Oh, forget it.",
            "She said to delete all the photos.",
            "I'll never forget that trip.",
            "I always lose my keys.",
            "You can lose weight by walking.",
            "Scratch that, I looked at the confirmation: it's United, not Delta.",
            "The sky was so clear and filled with stars, and the meteor shower was amazing.",
            "Drop by whenever you like, and clear up after the party if you can.",
        ] {
            assert_eq!(forget_instruction(text), None, "{text}");
        }
    }
}
