//! The typed card graph on petgraph, rebuilt from the store's card edges, and the
//! bounded expansion the read path runs on it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use colmem_core::{CardEdge, CardRelation, FragmentId};
use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;

/// Cards as nodes and their typed, weighted relations as edges.
#[derive(Clone, Debug, Default)]
pub struct CardGraph {
    graph: DiGraph<FragmentId, (CardRelation, f32)>,
    nodes: BTreeMap<FragmentId, NodeIndex>,
}

impl CardGraph {
    /// A graph over `cards` with those `edges` whose two ends are both among them.
    pub fn new(cards: impl IntoIterator<Item = FragmentId>, edges: &[CardEdge]) -> Self {
        let mut g = CardGraph::default();
        for id in cards {
            g.node(id);
        }
        for e in edges {
            if let (Some(&a), Some(&b)) = (g.nodes.get(&e.from), g.nodes.get(&e.to)) {
                g.graph.add_edge(a, b, (e.relation.clone(), e.weight));
            }
        }
        g
    }

    fn node(&mut self, id: FragmentId) -> NodeIndex {
        if let Some(&n) = self.nodes.get(&id) {
            return n;
        }
        let n = self.graph.add_node(id);
        self.nodes.insert(id, n);
        n
    }

    /// The number of cards.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph has no card.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The edges, as stored.
    pub fn edges(&self) -> Vec<CardEdge> {
        self.graph
            .edge_references()
            .map(|e| CardEdge {
                from: self.graph[e.source()],
                to: self.graph[e.target()],
                relation: e.weight().0.clone(),
                weight: e.weight().1,
            })
            .collect()
    }

    /// Whether a `conflicts` edge joins `a` and `b`, in either direction.
    pub fn conflicting(&self, a: FragmentId, b: FragmentId) -> bool {
        let (Some(&x), Some(&y)) = (self.nodes.get(&a), self.nodes.get(&b)) else {
            return false;
        };
        self.graph
            .edges_connecting(x, y)
            .chain(self.graph.edges_connecting(y, x))
            .any(|e| e.weight().0 == CardRelation::Conflicts)
    }

    /// The cards reachable from `seeds` in at most `hops` steps, with the hop at which
    /// each was reached (seeds at 0), in the order reached.
    ///
    /// Only cards in `visible` are entered (the reader's read rule); a `conflicts` edge is
    /// never followed; a `constrains` edge only when `live` says its precondition holds.
    /// `supports` and `satisfies` edges are followed both ways, `constrains` from the
    /// constraining card to the one it narrows and back.
    pub fn expand(
        &self,
        seeds: &[FragmentId],
        visible: &BTreeSet<FragmentId>,
        hops: usize,
        live: &dyn Fn(&str) -> bool,
    ) -> Vec<(FragmentId, usize)> {
        let mut reached: Vec<(FragmentId, usize)> = Vec::new();
        let mut seen = BTreeSet::new();
        let mut queue = VecDeque::new();
        for &s in seeds {
            if visible.contains(&s) && seen.insert(s) {
                reached.push((s, 0));
                queue.push_back((s, 0));
            }
        }
        while let Some((id, hop)) = queue.pop_front() {
            if hop >= hops {
                continue;
            }
            let Some(&n) = self.nodes.get(&id) else {
                continue;
            };
            let mut next: Vec<(FragmentId, f32)> = Vec::new();
            for direction in [Direction::Outgoing, Direction::Incoming] {
                for e in self.graph.edges_directed(n, direction) {
                    let other = if direction == Direction::Outgoing {
                        e.target()
                    } else {
                        e.source()
                    };
                    let passable = match &e.weight().0 {
                        CardRelation::Conflicts => false,
                        CardRelation::Constrains { precondition } => live(precondition),
                        CardRelation::Supports | CardRelation::Satisfies => true,
                    };
                    if passable {
                        next.push((self.graph[other], e.weight().1));
                    }
                }
            }
            // Stronger edges first, then ids, so expansion is deterministic.
            next.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            for (other, _) in next {
                if visible.contains(&other) && seen.insert(other) {
                    reached.push((other, hop + 1));
                    queue.push_back((other, hop + 1));
                }
            }
        }
        reached
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(from: u64, to: u64, relation: CardRelation) -> CardEdge {
        CardEdge {
            from: FragmentId(from),
            to: FragmentId(to),
            relation,
            weight: 0.5,
        }
    }

    #[test]
    fn expansion_follows_typed_edges_within_hops_and_visibility() {
        let edges = vec![
            edge(1, 2, CardRelation::Supports),
            edge(3, 2, CardRelation::Satisfies),
            edge(2, 4, CardRelation::Supports),
            edge(1, 5, CardRelation::Conflicts),
            edge(
                6,
                1,
                CardRelation::Constrains {
                    precondition: "both ends count".into(),
                },
            ),
            edge(1, 7, CardRelation::Supports),
        ];
        let g = CardGraph::new((1..=7).map(FragmentId), &edges);
        let visible: BTreeSet<FragmentId> =
            [1, 2, 3, 4, 5, 6].into_iter().map(FragmentId).collect();
        let ids = |r: Vec<(FragmentId, usize)>| {
            let mut v: Vec<u64> = r.into_iter().map(|(id, _)| id.0).collect();
            v.sort();
            v
        };
        let dead = |_: &str| false;
        assert_eq!(
            ids(g.expand(&[FragmentId(1)], &visible, 1, &dead)),
            vec![1, 2]
        );
        assert_eq!(
            ids(g.expand(&[FragmentId(1)], &visible, 2, &dead)),
            vec![1, 2, 3, 4]
        );
        let live = |p: &str| p == "both ends count";
        assert_eq!(
            ids(g.expand(&[FragmentId(1)], &visible, 1, &live)),
            vec![1, 2, 6]
        );
        assert!(g.conflicting(FragmentId(5), FragmentId(1)));
        assert!(!g.conflicting(FragmentId(1), FragmentId(2)));
    }
}
