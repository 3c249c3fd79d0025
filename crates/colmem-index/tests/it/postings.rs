//! The admitted set from posting lists equals `ReadFilter::admits` on every fragment,
//! and the set begun in a window equals the validity starts inside it.

use colmem_core::{FragmentMeta, ReadFilter, Scope, Validity, View};
use colmem_index::AccessPostings;
use proptest::prelude::*;

use crate::support::{agent, group, reader, resource, t, user};

fn pick<T: Copy>(all: &[T], mask: u8) -> Vec<T> {
    all.iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, x)| *x)
        .collect()
}

#[derive(Clone, Debug)]
struct MetaSpec {
    user: usize,
    scope: u8,
    agents: u8,
    resources: u8,
    created: i64,
    superseded: Option<i64>,
    deleted: Option<i64>,
    validity: Option<(i64, i64)>,
}

fn meta_spec() -> impl Strategy<Value = MetaSpec> {
    (
        0usize..3,
        0u8..6,
        0u8..16,
        0u8..8,
        0i64..100,
        proptest::option::of(0i64..100),
        proptest::option::weighted(0.2, 0i64..100),
        proptest::option::of((0i64..100, 1i64..50)),
    )
        .prop_map(
            |(user, scope, agents, resources, created, superseded, deleted, validity)| MetaSpec {
                user,
                scope,
                agents,
                resources,
                created,
                superseded,
                deleted,
                validity,
            },
        )
}

fn to_meta(s: &MetaSpec) -> FragmentMeta {
    let users = [user("pu0"), user("pu1"), user("pu2")];
    let agents = [agent("pa0"), agent("pa1"), agent("pa2"), agent("pa3")];
    let resources = [resource("pr0"), resource("pr1"), resource("pr2")];
    let groups = [group("pg0"), group("pg1"), group("pg2")];
    FragmentMeta {
        user: users[s.user],
        scope: match s.scope {
            0 => Scope::Agent,
            1 => Scope::User,
            2..=4 => Scope::Group(groups[(s.scope - 2) as usize]),
            _ => Scope::Global,
        },
        agents: pick(&agents, s.agents).into_boxed_slice(),
        resources: pick(&resources, s.resources).into_boxed_slice(),
        created_at: t(s.created),
        superseded_at: s.superseded.map(|x| t(s.created + x)),
        deleted_at: s.deleted.map(|x| t(s.created + x)),
        validity: match s.validity {
            None => Validity::always(),
            Some((from, len)) => Validity::new(t(from), Some(t(from + len))).unwrap(),
        },
    }
}

#[derive(Clone, Debug)]
struct FilterSpec {
    user: usize,
    agent: usize,
    agents: u8,
    resources: u8,
    groups: u8,
    now: i64,
    view: (u8, i64),
}

fn filter_spec() -> impl Strategy<Value = FilterSpec> {
    (
        0usize..3,
        0usize..4,
        0u8..16,
        0u8..8,
        0u8..8,
        0i64..220,
        (0u8..4, 0i64..220),
    )
        .prop_map(
            |(user, agent, agents, resources, groups, now, view)| FilterSpec {
                user,
                agent,
                agents,
                resources,
                groups,
                now,
                view,
            },
        )
}

fn to_filter(s: &FilterSpec) -> ReadFilter {
    let users = [user("pu0"), user("pu1"), user("pu2")];
    let agents = [agent("pa0"), agent("pa1"), agent("pa2"), agent("pa3")];
    let resources = [resource("pr0"), resource("pr1"), resource("pr2")];
    let groups = [group("pg0"), group("pg1"), group("pg2")];
    let filter = reader(
        users[s.user],
        agents[s.agent],
        &pick(&agents, s.agents),
        &pick(&resources, s.resources),
        &pick(&groups, s.groups),
        s.now,
    );
    let view = match s.view.0 {
        0 => View::Current,
        1 => View::RecordAsOf(t(s.view.1)),
        2 => View::WorldAsOf(t(s.view.1)),
        _ => View::AllVersions,
    };
    filter.with_view(view)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn admitted_equals_the_read_rule_on_every_fragment(
        metas in proptest::collection::vec(meta_spec(), 0..60),
        updates in proptest::collection::vec((0usize..60, meta_spec()), 0..10),
        removals in proptest::collection::vec(0usize..60, 0..10),
        filters in proptest::collection::vec(filter_spec(), 1..8),
        windows in proptest::collection::vec((0i64..120, 1i64..60), 1..4),
    ) {
        let mut postings = AccessPostings::new();
        let mut live: std::collections::BTreeMap<u64, FragmentMeta> = Default::default();
        for (i, spec) in metas.iter().enumerate() {
            let meta = to_meta(spec);
            postings.upsert(i as u64 * 7 + 1, meta.clone());
            live.insert(i as u64 * 7 + 1, meta);
        }
        for (i, spec) in &updates {
            let id = *i as u64 * 7 + 1;
            if live.contains_key(&id) {
                let meta = to_meta(spec);
                postings.upsert(id, meta.clone());
                live.insert(id, meta);
            }
        }
        for i in &removals {
            let id = *i as u64 * 7 + 1;
            prop_assert_eq!(postings.remove(id), live.remove(&id).is_some());
        }
        prop_assert_eq!(postings.len(), live.len() as u64);
        for spec in &filters {
            let filter = to_filter(spec);
            let admitted: Vec<u64> = postings.admitted(&filter).iter().collect();
            let oracle: Vec<u64> = live
                .iter()
                .filter(|(_, meta)| filter.admits(meta))
                .map(|(id, _)| *id)
                .collect();
            prop_assert_eq!(admitted, oracle, "filter {:?}", spec);
        }
        // What began in a window, after the same upserts, updates and removals.
        for (from, len) in windows {
            let window = Validity::new(t(from), Some(t(from + len))).unwrap();
            let began: Vec<u64> = postings.begun_in(&window).iter().collect();
            let oracle: Vec<u64> = live
                .iter()
                .filter(|(_, meta)| window.contains(meta.validity.from()))
                .map(|(id, _)| *id)
                .collect();
            prop_assert_eq!(began, oracle, "window {:?}", window);
        }
    }
}

/// Many single-agent fragments over many agents, a few multi-agent and agentless
/// ones, group scopes over many groups: readers with few and with most agents and
/// groups take both ways of computing rules 2 and 3, and both agree with the rule.
#[test]
fn both_ways_of_combining_agent_and_group_lists_agree_with_the_read_rule() {
    let agents: Vec<_> = (0..20).map(|i| agent(&format!("ma{i}"))).collect();
    let groups: Vec<_> = (0..20).map(|i| group(&format!("mg{i}"))).collect();
    let mut postings = AccessPostings::new();
    let mut live = Vec::new();
    for i in 0..2000usize {
        let written_by: Vec<_> = match i % 50 {
            0 => vec![],
            1 => vec![agents[i % 20], agents[(i / 20) % 20]],
            _ => vec![agents[i % 20]],
        };
        let meta = FragmentMeta {
            user: user("mu"),
            scope: if i % 3 == 0 {
                Scope::Global
            } else {
                Scope::Group(groups[(i / 3) % 20])
            },
            agents: written_by.into_boxed_slice(),
            resources: Box::new([]),
            created_at: t(1),
            superseded_at: None,
            deleted_at: None,
            validity: Validity::always(),
        };
        postings.upsert(i as u64, meta.clone());
        live.push(meta);
    }
    for (a, g) in [(1, 1), (2, 19), (19, 2), (19, 19), (20, 20), (0, 0)] {
        let filter = reader(user("mu"), agents[0], &agents[..a], &[], &groups[..g], 10);
        let admitted: Vec<u64> = postings.admitted(&filter).iter().collect();
        let oracle: Vec<u64> = (0..live.len() as u64)
            .filter(|&id| filter.admits(&live[id as usize]))
            .collect();
        assert_eq!(admitted, oracle, "{a} agents, {g} groups");
    }
}
