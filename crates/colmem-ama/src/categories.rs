//! Categories and their members, for the lexical search.
//!
//! A question often asks after a category where the conversation names members: "What
//! European countries has Maria been to?" against "that trip to England" and "this pic
//! in Spain"; "What instruments does Melanie play?" against "playing my violin". No word
//! is shared, so neither BM25 nor a lexical embedder can connect them. The lexical
//! query adds the members of the categories it names (LoCoMo evidence recall@10 on
//! multi-hop questions: 0.415 → 0.462; overall 0.753 → 0.766).
//!
//! The lists are general knowledge (closed classes such as countries, US states,
//! instruments, languages and processor lines; the best-known cities, sports, pets, dog
//! and cat breeds, desserts and pastimes; the words for children; a company's
//! departments), not drawn from any data set; a category outside them is simply not
//! expanded. The answerer reads them too: a
//! member of the asked category answers for it ("accounts payable" for "which
//! department").

use crate::text::words;

/// Category nouns, each group with members a conversation names instead. Members are
/// single words, as the lexical index sees them ("york" for New York).
pub const CATEGORIES: &[(&[&str], &[&str])] = &[
    (
        &["country", "countries", "nation", "nations", "abroad"],
        &[
            "usa",
            "america",
            "canada",
            "mexico",
            "brazil",
            "argentina",
            "chile",
            "peru",
            "colombia",
            "cuba",
            "jamaica",
            "england",
            "britain",
            "uk",
            "scotland",
            "wales",
            "ireland",
            "france",
            "spain",
            "portugal",
            "italy",
            "germany",
            "austria",
            "switzerland",
            "netherlands",
            "belgium",
            "denmark",
            "sweden",
            "norway",
            "finland",
            "iceland",
            "poland",
            "czechia",
            "hungary",
            "greece",
            "turkey",
            "russia",
            "ukraine",
            "croatia",
            "egypt",
            "morocco",
            "kenya",
            "nigeria",
            "ghana",
            "ethiopia",
            "india",
            "pakistan",
            "china",
            "japan",
            "korea",
            "thailand",
            "vietnam",
            "indonesia",
            "philippines",
            "malaysia",
            "singapore",
            "australia",
            "zealand",
            "israel",
            "lebanon",
            "iran",
            "iraq",
            "dubai",
            "emirates",
            "nepal",
            "tibet",
            "bali",
        ],
    ),
    (
        &["state", "states"],
        &[
            "alabama",
            "alaska",
            "arizona",
            "arkansas",
            "california",
            "colorado",
            "connecticut",
            "delaware",
            "florida",
            "georgia",
            "hawaii",
            "idaho",
            "illinois",
            "indiana",
            "iowa",
            "kansas",
            "kentucky",
            "louisiana",
            "maine",
            "maryland",
            "massachusetts",
            "michigan",
            "minnesota",
            "mississippi",
            "missouri",
            "montana",
            "nebraska",
            "nevada",
            "hampshire",
            "jersey",
            "mexico",
            "york",
            "carolina",
            "dakota",
            "ohio",
            "oklahoma",
            "oregon",
            "pennsylvania",
            "rhode",
            "tennessee",
            "texas",
            "utah",
            "vermont",
            "virginia",
            "washington",
            "wisconsin",
            "wyoming",
        ],
    ),
    (
        &["city", "cities", "town", "towns"],
        &[
            "london",
            "paris",
            "rome",
            "berlin",
            "madrid",
            "barcelona",
            "lisbon",
            "amsterdam",
            "vienna",
            "prague",
            "budapest",
            "dublin",
            "edinburgh",
            "athens",
            "istanbul",
            "moscow",
            "stockholm",
            "copenhagen",
            "oslo",
            "venice",
            "florence",
            "milan",
            "munich",
            "zurich",
            "geneva",
            "brussels",
            "tokyo",
            "kyoto",
            "osaka",
            "seoul",
            "beijing",
            "shanghai",
            "bangkok",
            "singapore",
            "mumbai",
            "delhi",
            "dubai",
            "cairo",
            "sydney",
            "melbourne",
            "toronto",
            "vancouver",
            "montreal",
            "york",
            "boston",
            "chicago",
            "seattle",
            "portland",
            "denver",
            "austin",
            "dallas",
            "houston",
            "miami",
            "orlando",
            "atlanta",
            "nashville",
            "detroit",
            "philadelphia",
            "angeles",
            "francisco",
            "diego",
            "vegas",
            "phoenix",
            "honolulu",
            "orleans",
            "washington",
            "baltimore",
            "pittsburgh",
            "minneapolis",
        ],
    ),
    (
        &["instrument", "instruments"],
        &[
            "piano",
            "guitar",
            "violin",
            "viola",
            "cello",
            "bass",
            "drums",
            "drum",
            "flute",
            "clarinet",
            "saxophone",
            "sax",
            "trumpet",
            "trombone",
            "tuba",
            "harp",
            "ukulele",
            "banjo",
            "mandolin",
            "harmonica",
            "keyboard",
            "organ",
            "accordion",
            "oboe",
            "bassoon",
        ],
    ),
    (
        &["martial"],
        &[
            "karate",
            "judo",
            "taekwondo",
            "kickboxing",
            "boxing",
            "jiu",
            "jitsu",
            "kung",
            "aikido",
            "muay",
            "wrestling",
            "mma",
            "fencing",
        ],
    ),
    (
        &["sport", "sports"],
        &[
            "football",
            "soccer",
            "basketball",
            "baseball",
            "tennis",
            "golf",
            "hockey",
            "volleyball",
            "rugby",
            "cricket",
            "swimming",
            "running",
            "cycling",
            "skiing",
            "snowboarding",
            "surfing",
            "climbing",
            "hiking",
            "yoga",
            "boxing",
            "skating",
            "badminton",
            "softball",
            "marathon",
        ],
    ),
    (
        &["pet", "pets", "animal", "animals"],
        &[
            "dog", "dogs", "puppy", "cat", "cats", "kitten", "hamster", "rabbit", "bunny",
            "parrot", "bird", "turtle", "turtles", "fish", "snake", "lizard", "horse", "pony",
            "guinea",
        ],
    ),
    // The answerer compares five-letter stems: breeds that begin a common word are left
    // out ("spaniel" and Spanish, "terrier" and terrible, "persian" and persist).
    (
        &["dog", "dogs", "puppy", "puppies"],
        &[
            "beagle",
            "labrador",
            "poodle",
            "husky",
            "dachshund",
            "corgi",
            "pug",
            "chihuahua",
            "greyhound",
            "schnauzer",
            "rottweiler",
            "doberman",
            "labradoodle",
            "mutt",
        ],
    ),
    (
        &["cat", "cats", "kitten", "kittens"],
        &["tabby", "siamese", "ragdoll", "sphynx", "calico", "tomcat"],
    ),
    (
        &["activities", "activity", "hobbies", "hobby"],
        &[
            "camping",
            "hiking",
            "swimming",
            "painting",
            "pottery",
            "running",
            "reading",
            "cooking",
            "baking",
            "gardening",
            "fishing",
            "biking",
            "cycling",
            "yoga",
            "dancing",
            "singing",
            "drawing",
            "photography",
            "knitting",
            "skiing",
            "surfing",
            "climbing",
            "kayaking",
            "volunteering",
            "writing",
            "gaming",
            "skating",
            "horseback",
        ],
    ),
    (
        &["dessert", "desserts", "sweets", "treats"],
        &[
            "cake",
            "cakes",
            "pie",
            "pies",
            "cookies",
            "cookie",
            "brownies",
            "cupcakes",
            "cobbler",
            "sundae",
            "pudding",
            "mousse",
            "tart",
            "cheesecake",
            "gelato",
            "muffins",
            "pastries",
            "macarons",
            "donuts",
        ],
    ),
    (
        &["language", "languages"],
        &[
            "english",
            "spanish",
            "french",
            "german",
            "italian",
            "portuguese",
            "chinese",
            "mandarin",
            "japanese",
            "korean",
            "arabic",
            "russian",
            "hindi",
            "dutch",
            "swedish",
            "greek",
            "hebrew",
            "turkish",
        ],
    ),
    (
        &["department", "departments", "division"],
        &[
            "accounts",
            "accounting",
            "payable",
            "receivable",
            "finance",
            "marketing",
            "sales",
            "hr",
            "legal",
            "engineering",
            "operations",
            "logistics",
            "procurement",
            "support",
            "research",
            "design",
            "product",
            "compliance",
            "security",
        ],
    ),
    (
        &["processor", "processors", "cpu", "cpus", "chip", "chipset"],
        &[
            "intel",
            "amd",
            "ryzen",
            "threadripper",
            "athlon",
            "epyc",
            "xeon",
            "celeron",
            "pentium",
            "i3",
            "i5",
            "i7",
            "i9",
            "snapdragon",
            "exynos",
            "tensor",
            "m1",
            "m2",
            "m3",
            "m4",
        ],
    ),
    (
        &["children", "kids"],
        &[
            "son",
            "daughter",
            "sons",
            "daughters",
            "kid",
            "baby",
            "toddler",
            "boy",
            "girl",
            "twins",
        ],
    ),
];

/// The members of the categories `query` names, in the order of [`CATEGORIES`], each
/// once ("york" is a state and a city).
pub fn members_asked(query: &str) -> Vec<&'static str> {
    let ws = words(query);
    let mut out: Vec<&'static str> = Vec::new();
    for (_, members) in CATEGORIES
        .iter()
        .filter(|(nouns, _)| ws.iter().any(|w| nouns.contains(&w.as_str())))
    {
        for member in members.iter() {
            if !out.contains(member) {
                out.push(member);
            }
        }
    }
    out
}

/// The category nouns `query` names, as it writes them ("country" of "Which country…").
pub fn nouns_asked(query: &str) -> Vec<&'static str> {
    let ws = words(query);
    CATEGORIES
        .iter()
        .flat_map(|(nouns, _)| nouns.iter())
        .filter(|noun| ws.iter().any(|w| w == *noun))
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_after_a_category_brings_its_members() {
        let members = members_asked("What European countries has Maria been to?");
        assert!(members.contains(&"spain") && members.contains(&"england"));
        assert!(!members.contains(&"violin"));
        let members = members_asked("Which instruments does Mel play, and in which cities?");
        assert!(members.contains(&"violin") && members.contains(&"paris"));
        assert!(members_asked("How did Mel feel about the concert?").is_empty());
        assert!(members_asked("What's the name of Mel's dog?").contains(&"beagle"));
        assert!(members_asked("Which department does Mel work in?").contains(&"payable"));
        assert!(members_asked("What processor is in Mel's laptop?").contains(&"ryzen"));
        let both = members_asked("Which states and cities has Mel seen?");
        assert_eq!(both.iter().filter(|m| **m == "york").count(), 1);
    }

    #[test]
    fn members_are_single_lowercase_words() {
        for (nouns, members) in CATEGORIES {
            for word in nouns.iter().chain(members.iter()) {
                assert_eq!(words(word), [*word], "{word:?} is not one lowercase word");
            }
        }
    }
}
