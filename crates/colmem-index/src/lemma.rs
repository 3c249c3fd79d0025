//! The base form of irregular English verbs, so a question in the present ("what did
//! she buy?", "when did he go?") finds a statement in the past ("I bought", "we went");
//! the singular of irregular plurals ("children" → "child"); and chat's short forms in
//! full ("biz" → "business"). Suffix stemmers (Snowball, the `-ed`/`-ing` stripper of
//! [`crate::analyze`]) leave these forms apart; both lexical backends map them, then
//! stem.
//!
//! Forms that are as often another word are left out ("left", "rose", "lay", "bore").

/// The base form of `word` (lowercase) when it is the past tense or past participle of
/// an irregular verb.
pub fn base_form(word: &str) -> Option<&'static str> {
    looked_up(IRREGULAR, word)
}

/// The word both lexical backends index `word` (lowercase) as, before stemming: its
/// full form ([`full_form`]) in the singular ([`singular`]), an irregular plural's
/// singular, an irregular verb's base form ([`base_form`]); `None` when it is indexed
/// as it is.
pub fn normal_form(word: &str) -> Option<&'static str> {
    match full_form(word) {
        Some(full) => Some(singular(full).unwrap_or(full)),
        None => singular(word).or_else(|| base_form(word)),
    }
}

/// The singular of an irregular plural: "children" is "child", "women" "woman". A
/// question about someone's children finds "my child" (and, through `full_form`,
/// "the kids").
pub fn singular(word: &str) -> Option<&'static str> {
    looked_up(IRREGULAR_PLURALS, word)
}

/// What `word` maps to in `table`, a list of (form, word) pairs sorted by form.
fn looked_up(table: &[(&str, &'static str)], word: &str) -> Option<&'static str> {
    table
        .binary_search_by(|(form, _)| (*form).cmp(word))
        .ok()
        .map(|i| table[i].1)
}

/// (plural, singular), sorted by plural. Forms that are as often another word are left
/// out ("lives" of "she lives", "leaves").
const IRREGULAR_PLURALS: &[(&str, &str)] = &[
    ("children", "child"),
    ("feet", "foot"),
    ("geese", "goose"),
    ("grandchildren", "grandchild"),
    ("men", "man"),
    ("mice", "mouse"),
    ("teeth", "tooth"),
    ("wives", "wife"),
    ("women", "woman"),
];

/// The word `word` (lowercase) is chat's short form or British spelling of: "biz" is
/// "business", "fave" "favorite", "pic" "picture". A question asked in full ("what is
/// her favorite business?") finds a turn that said it short ("my fave biz").
pub fn full_form(word: &str) -> Option<&'static str> {
    looked_up(SHORT_FORMS, word)
}

/// (short form, full form), sorted by form. Forms that are as often another word are
/// left out ("comp", "sis" of "this is", "mum" of "keep mum").
const SHORT_FORMS: &[(&str, &str)] = &[
    ("bday", "birthday"),
    ("biz", "business"),
    ("colour", "color"),
    ("colours", "colors"),
    ("convo", "conversation"),
    ("convos", "conversations"),
    ("dad", "father"),
    ("daddy", "father"),
    ("dads", "fathers"),
    ("fam", "family"),
    ("fav", "favorite"),
    ("fave", "favorite"),
    ("faves", "favorites"),
    ("favourite", "favorite"),
    ("favourites", "favorites"),
    ("grandma", "grandmother"),
    ("grandpa", "grandfather"),
    ("hubby", "husband"),
    ("info", "information"),
    ("kid", "child"),
    ("kids", "children"),
    ("mins", "minutes"),
    ("mom", "mother"),
    ("mommy", "mother"),
    ("moms", "mothers"),
    ("pic", "picture"),
    ("pics", "pictures"),
    ("tourney", "tournament"),
    ("tourneys", "tournaments"),
    ("vacay", "vacation"),
    ("vid", "video"),
    ("vids", "videos"),
];

/// (inflected form, base form), sorted by form.
const IRREGULAR: &[(&str, &str)] = &[
    ("ate", "eat"),
    ("awoke", "awake"),
    ("beaten", "beat"),
    ("became", "become"),
    ("began", "begin"),
    ("begun", "begin"),
    ("bent", "bend"),
    ("bitten", "bite"),
    ("blew", "blow"),
    ("blown", "blow"),
    ("bought", "buy"),
    ("broke", "break"),
    ("broken", "break"),
    ("brought", "bring"),
    ("built", "build"),
    ("burnt", "burn"),
    ("came", "come"),
    ("caught", "catch"),
    ("chose", "choose"),
    ("chosen", "choose"),
    ("dealt", "deal"),
    ("drank", "drink"),
    ("drawn", "draw"),
    ("dreamt", "dream"),
    ("drew", "draw"),
    ("driven", "drive"),
    ("drove", "drive"),
    ("drunk", "drink"),
    ("dug", "dig"),
    ("eaten", "eat"),
    ("fallen", "fall"),
    ("fed", "feed"),
    ("fell", "fall"),
    ("felt", "feel"),
    ("flew", "fly"),
    ("flown", "fly"),
    ("forgave", "forgive"),
    ("forgiven", "forgive"),
    ("forgot", "forget"),
    ("forgotten", "forget"),
    ("fought", "fight"),
    ("found", "find"),
    ("froze", "freeze"),
    ("frozen", "freeze"),
    ("gave", "give"),
    ("given", "give"),
    ("gone", "go"),
    ("got", "get"),
    ("gotten", "get"),
    ("grew", "grow"),
    ("grown", "grow"),
    ("heard", "hear"),
    ("held", "hold"),
    ("hid", "hide"),
    ("hidden", "hide"),
    ("hung", "hang"),
    ("kept", "keep"),
    ("knew", "know"),
    ("known", "know"),
    ("led", "lead"),
    ("lent", "lend"),
    ("lost", "lose"),
    ("made", "make"),
    ("meant", "mean"),
    ("met", "meet"),
    ("paid", "pay"),
    ("ran", "run"),
    ("rang", "ring"),
    ("ridden", "ride"),
    ("rode", "ride"),
    ("sang", "sing"),
    ("sat", "sit"),
    ("saw", "see"),
    ("seen", "see"),
    ("sent", "send"),
    ("shaken", "shake"),
    ("shook", "shake"),
    ("shot", "shoot"),
    ("shown", "show"),
    ("slept", "sleep"),
    ("sold", "sell"),
    ("sought", "seek"),
    ("spent", "spend"),
    ("spoke", "speak"),
    ("spoken", "speak"),
    ("stole", "steal"),
    ("stolen", "steal"),
    ("stood", "stand"),
    ("stuck", "stick"),
    ("sung", "sing"),
    ("swam", "swim"),
    ("swum", "swim"),
    ("taken", "take"),
    ("taught", "teach"),
    ("thought", "think"),
    ("threw", "throw"),
    ("thrown", "throw"),
    ("told", "tell"),
    ("took", "take"),
    ("understood", "understand"),
    ("went", "go"),
    ("woke", "wake"),
    ("woken", "wake"),
    ("won", "win"),
    ("wore", "wear"),
    ("worn", "wear"),
    ("written", "write"),
    ("wrote", "write"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_maps_forms_to_their_base() {
        assert!(IRREGULAR.windows(2).all(|w| w[0].0 < w[1].0), "unsorted");
        assert_eq!(base_form("bought"), Some("buy"));
        assert_eq!(base_form("went"), Some("go"));
        assert_eq!(base_form("written"), Some("write"));
        assert_eq!(base_form("buy"), None);
        assert_eq!(base_form("walked"), None);
    }

    #[test]
    fn the_plurals_are_sorted_and_a_short_form_is_taken_to_its_singular() {
        assert!(IRREGULAR_PLURALS.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(normal_form("children"), Some("child"));
        assert_eq!(normal_form("kids"), Some("child"));
        assert_eq!(normal_form("kid"), Some("child"));
        assert_eq!(normal_form("dads"), Some("fathers"));
        assert_eq!(normal_form("bought"), Some("buy"));
        assert_eq!(normal_form("child"), None);
    }

    #[test]
    fn the_short_forms_are_sorted_and_map_to_full_words() {
        assert!(SHORT_FORMS.windows(2).all(|w| w[0].0 < w[1].0), "unsorted");
        assert_eq!(full_form("biz"), Some("business"));
        assert_eq!(full_form("favourite"), Some("favorite"));
        assert_eq!(full_form("business"), None);
        // No word is in both tables, nor is a full form a short one: the backends may
        // look a word up in either order.
        for (form, full) in SHORT_FORMS {
            assert_eq!(base_form(form), None, "{form}");
            assert_eq!(full_form(full), None, "{full}");
            assert_eq!(normal_form(form), Some(singular(full).unwrap_or(full)));
        }
    }
}
