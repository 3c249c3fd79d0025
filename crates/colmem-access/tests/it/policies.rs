//! Write-policy precedence and transformations; read policies only narrow.

use colmem_access::{
    Hit, PairPolicy, Part, PartPolicy, PolicyLevel, PseudonymKey, ReadPolicy, Redaction, Transform,
    WritePolicies, WritePolicy, WritePolicySet, pseudonym,
};
use colmem_core::{
    AgentId, Fragment, FragmentId, Granularity, GroupId, Kind, Provenance, Scope, Source,
    Timestamp, UserId, Validity,
};
use proptest::prelude::*;

fn u(name: &str) -> UserId {
    UserId::new(name).unwrap()
}
fn a(name: &str) -> AgentId {
    AgentId::new(name).unwrap()
}

fn marked(marker: &str) -> WritePolicy {
    // A policy recognisable by the word it blocks.
    WritePolicy {
        private: PartPolicy {
            enabled: true,
            transforms: vec![Transform::Block {
                pattern: marker.into(),
            }],
        },
        shared: PartPolicy {
            enabled: false,
            transforms: vec![],
        },
    }
}

fn policies() -> WritePolicySet {
    WritePolicySet::new(
        WritePolicies {
            system: marked("SYSTEM"),
            mandatory: vec![Redaction::CardNumbers],
            agents: [(a("pol-agent"), marked("AGENT"))].into(),
            users: [(u("pol-user"), marked("USER"))].into(),
            pairs: vec![PairPolicy {
                user: u("pol-user"),
                agent: a("pol-agent"),
                policy: marked("PAIR"),
            }],
        },
        key(),
    )
    .unwrap()
}

fn key() -> PseudonymKey {
    PseudonymKey::new([7; 32])
}

#[test]
fn the_most_specific_level_wins() {
    let set = policies();
    let cases = [
        ("pol-user", "pol-agent", PolicyLevel::Pair, "PAIR"),
        ("pol-user", "pol-other-agent", PolicyLevel::User, "USER"),
        ("pol-other-user", "pol-agent", PolicyLevel::Agent, "AGENT"),
        (
            "pol-other-user",
            "pol-other-agent",
            PolicyLevel::System,
            "SYSTEM",
        ),
    ];
    for (user, agent, level, marker) in cases {
        let split = set
            .split(u(user), a(agent), &format!("text with {marker}"), &[])
            .unwrap();
        assert_eq!(split.level, level, "{user}/{agent}");
        assert!(
            matches!(split.private, Part::Blocked { .. }),
            "{user}/{agent}: {:?}",
            split.private
        );
        assert_eq!(split.shared, Part::Disabled);
        // Another level's marker does not block here.
        let other = set
            .split(u(user), a(agent), "text with NOTHING", &[])
            .unwrap();
        assert_eq!(other.private, Part::Kept("text with NOTHING".into()));
    }
}

#[test]
fn mandatory_redaction_is_never_dropped() {
    let set = policies();
    for (user, agent) in [
        ("pol-user", "pol-agent"),
        ("pol-user", "x"),
        ("y", "pol-agent"),
        ("y", "x"),
    ] {
        let split = set
            .split(u(user), a(agent), "card 4111 1111 1111 1111", &[])
            .unwrap();
        assert_eq!(
            split.private,
            Part::Kept("card [card]".into()),
            "{user}/{agent}"
        );
    }
}

#[test]
fn default_split_keeps_private_verbatim_and_redacts_the_shared_part() {
    let set = WritePolicySet::new(WritePolicies::default(), key()).unwrap();
    let text = "I am dana, reach me at dana@example.org or +1 415 555 0100";
    let split = set.split(u("dana"), a("helper"), text, &[]).unwrap();
    assert_eq!(split.private.text(), Some(text));
    assert_eq!(
        split.shared.text(),
        Some("I am dana, reach me at [email] or [phone]")
    );
}

#[test]
fn anonymise_replaces_user_ids_with_stable_keyed_pseudonyms() {
    let mut policies = WritePolicies::default();
    policies.system.shared.transforms = vec![Transform::AnonymiseUsers {}];
    let set = WritePolicySet::new(policies.clone(), key()).unwrap();
    let text = "Erin told erin-2 that Erin likes tea; erinaceous stays";
    let split = set
        .split(u("erin"), a("helper"), text, &[u("erin-2")])
        .unwrap();
    let k = key();
    let expected = format!(
        "{} told {} that {} likes tea; erinaceous stays",
        pseudonym(u("erin"), &k),
        pseudonym(u("erin-2"), &k),
        pseudonym(u("erin"), &k)
    );
    assert_eq!(split.shared.text(), Some(expected.as_str()));
    assert_eq!(pseudonym(u("erin"), &k), pseudonym(u("erin"), &k));
    assert_ne!(pseudonym(u("erin"), &k), pseudonym(u("erin-2"), &k));
    // Keyed: another memory's key gives other pseudonyms, and none is the plain
    // hash of the user id, which anyone could compute to name the user.
    let other = PseudonymKey::new([8; 32]);
    assert_ne!(pseudonym(u("erin"), &k), pseudonym(u("erin"), &other));
    let elsewhere = WritePolicySet::new(policies, other)
        .unwrap()
        .split(u("erin"), a("helper"), text, &[u("erin-2")])
        .unwrap();
    assert_ne!(elsewhere.shared, split.shared);
    let shared = split.shared.text().unwrap();
    for user in ["erin", "erin-2"] {
        let plain = blake3::hash(user.as_bytes()).to_hex();
        assert!(!shared.contains(&plain[..8]), "{shared}");
    }
    assert!(!format!("{k:?}").contains('7'), "the key's Debug hides it");
}

#[test]
fn anonymise_finds_every_name_in_the_text_as_written() {
    let mut policies = WritePolicies::default();
    policies.system.shared.transforms = vec![Transform::AnonymiseUsers {}];
    let set = WritePolicySet::new(policies, key()).unwrap();
    // A user called "user" is not found again inside the pseudonym given to another
    // ("user-…"), whichever is replaced first.
    let text = "Zoe-Smith met user; ZOE-SMITH left";
    let split = set
        .split(u("zoe-smith"), a("helper"), text, &[u("user")])
        .unwrap();
    let k = key();
    let zoe = pseudonym(u("zoe-smith"), &k);
    let expected = format!("{zoe} met {}; {zoe} left", pseudonym(u("user"), &k));
    assert_eq!(split.shared.text(), Some(expected.as_str()));
}

#[test]
fn invalid_patterns_are_refused_when_loading() {
    let mut policies = WritePolicies::default();
    policies.system.private.transforms = vec![Transform::Block {
        pattern: "(unclosed".into(),
    }];
    let err = WritePolicySet::new(policies, key()).unwrap_err();
    assert!(err.to_string().contains("invalid policy pattern"), "{err}");
}

#[test]
fn policies_deserialize_from_configuration() {
    let json = r#"{
        "mandatory": [{"type": "emails"}],
        "system": {"shared": {"transforms": [{"type": "redact", "redact": {"type": "names", "names": ["Zed"]}}]}},
        "pairs": [{"user": "cfg-u", "agent": "cfg-a", "private": {"enabled": false}}]
    }"#;
    let policies: WritePolicies = serde_json::from_str(json).unwrap();
    let set = WritePolicySet::new(policies, key()).unwrap();
    let split = set
        .split(u("cfg-u"), a("cfg-a"), "Zed wrote z@x.io", &[])
        .unwrap();
    assert_eq!(split.level, PolicyLevel::Pair);
    assert_eq!(split.private, Part::Disabled);
    assert_eq!(
        split.shared.text(),
        Some("Zed wrote [email]"),
        "pair level without a shared part keeps the default"
    );
    let split = set
        .split(u("cfg-other"), a("cfg-a"), "Zed wrote z@x.io", &[])
        .unwrap();
    assert_eq!(split.shared.text(), Some("[name] wrote [email]"));
    assert!(
        serde_json::from_str::<WritePolicies>(r#"{"sytem": {}}"#).is_err(),
        "unknown keys are refused"
    );
}

#[derive(Clone, Debug)]
struct Scored(Fragment, f32);

impl Hit for Scored {
    fn fragment(&self) -> &Fragment {
        &self.0
    }
    fn fragment_mut(&mut self) -> &mut Fragment {
        &mut self.0
    }
    fn score(&self) -> f32 {
        self.1
    }
}

fn hit(id: u64, scope: Scope, content: &str, score: f32) -> Scored {
    Scored(
        Fragment {
            id: FragmentId(id),
            key: None,
            content: content.into(),
            granularity: Granularity::Fact,
            kind: Kind::Observation,
            scope,
            provenance: Provenance {
                created_at: Timestamp::EPOCH,
                user: u("reader"),
                agents: [a("reader-agent")].into(),
                resources: Default::default(),
                source: Source::default(),
            },
            validity: Validity::always(),
            keywords: vec![],
            superseded_at: None,
            superseded_by: None,
            deleted_at: None,
        },
        score,
    )
}

#[test]
fn read_policy_limits_tiers_thresholds_keywords_and_redacts() {
    let crew = Scope::Group(GroupId::new("crew-rp").unwrap());
    let hits = vec![
        hit(1, Scope::User, "tea at noon", 0.9),
        hit(2, Scope::User, "coffee with ann@example.com", 0.8),
        hit(3, crew, "tea with the crew", 0.7),
        hit(4, Scope::User, "tea again", 0.6),
        hit(5, Scope::Global, "global tea", 0.1),
    ];
    let policy = ReadPolicy {
        top_k_per_tier: Some(1),
        min_score: Some(0.5),
        keywords: vec![],
        redact: vec![Redaction::Emails],
    };
    let ids: Vec<u64> = policy
        .apply(hits.clone())
        .unwrap()
        .iter()
        .map(|h| h.0.id.0)
        .collect();
    assert_eq!(ids, vec![1, 3], "one per tier, global below threshold");

    let policy = ReadPolicy {
        keywords: vec!["COFFEE".into()],
        redact: vec![Redaction::Emails],
        ..ReadPolicy::default()
    };
    let out = policy.apply(hits).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0.content, "coffee with [email]");

    // A redacted name leaves no trace in the keywords or the key shown beside the text.
    let mut oslo = hit(6, Scope::User, "Ann lives in Oslo", 0.9);
    oslo.0.key = Some("ann/home".into());
    oslo.0.keywords = vec!["ann".into(), "lives".into(), "oslo".into()];
    let policy = ReadPolicy {
        redact: vec![Redaction::Names(vec!["Ann".into(), "Oslo".into()])],
        ..ReadPolicy::default()
    };
    let shown = &policy.apply(vec![oslo]).unwrap()[0].0;
    assert_eq!(shown.content, "[name] lives in [name]");
    assert_eq!(shown.keywords, vec!["lives".to_owned()]);
    assert_eq!(shown.key.as_deref(), Some("[name]/home"));
}

proptest! {
    #[test]
    fn read_policies_only_narrow(
        scores in prop::collection::vec(-1.0f32..1.0, 0..30),
        k in prop::option::of(0usize..4),
        min in prop::option::of(-1.0f32..1.0),
        keyword in prop::option::of("[a-c]"),
    ) {
        let hits: Vec<Scored> = scores
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let scope = if i % 3 == 0 { Scope::Global } else { Scope::User };
                hit(i as u64, scope, ["a b", "b c", "c a"][i % 3], *s)
            })
            .collect();
        let policy = ReadPolicy {
            top_k_per_tier: k,
            min_score: min,
            keywords: keyword.into_iter().collect(),
            redact: vec![],
        };
        let input: Vec<u64> = hits.iter().map(|h| h.0.id.0).collect();
        let output: Vec<u64> = policy.apply(hits).unwrap().iter().map(|h| h.0.id.0).collect();
        // A subsequence of the input, in order.
        let mut rest = input.iter();
        for id in &output {
            prop_assert!(rest.any(|x| x == id), "{output:?} is not a subsequence of {input:?}");
        }
        if let Some(k) = k {
            prop_assert!(output.len() <= 2 * k);
        }
    }
}
