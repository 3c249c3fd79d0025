//! Integration tests of colmem-cards: the bank over a SQLite store, property tests of
//! the read path, and the model-backed roles on recorded cassettes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bank;
mod llm;
mod props;
mod server;

use std::collections::BTreeSet;
use std::sync::Arc;

use colmem_access::{AccessGraph, Context, SystemPolicy, WritePolicySet};
use colmem_cards::{BankConfig, CardBank, Decision, Outcome, Roles, Step, Trajectory};
use colmem_core::{
    AccessChange, AccessEvent, AgentId, Clock, Edge, LogicalClock, Principal, Scope, Timestamp,
    UserId,
};
use colmem_llm::{ApproxTokenCounter, OfflineConfig, OfflineEmbedder};
use colmem_store::{SqliteStore, StoreConfig};

/// A store, a clock, an access graph where `user` may invoke `agent`, and a bank.
#[allow(missing_debug_implementations)]
pub struct World {
    pub clock: Arc<LogicalClock>,
    pub store: Arc<SqliteStore>,
    pub graph: AccessGraph,
    pub bank: CardBank,
    pub user: UserId,
    pub agent: AgentId,
    pub system: SystemPolicy,
    /// The write policies cards are written under, if any.
    pub policies: Option<WritePolicySet>,
}

impl World {
    pub fn new(config: BankConfig) -> World {
        World::with_roles(config, Roles::offline())
    }

    /// A world whose bank has these roles.
    pub fn with_roles(config: BankConfig, roles: Roles) -> World {
        let clock = Arc::new(LogicalClock::new(Timestamp::from_millis(1_000)));
        let store = Arc::new(
            SqliteStore::open_in_memory(StoreConfig {
                clock: clock.clone(),
                ..StoreConfig::default()
            })
            .unwrap(),
        );
        let user = UserId::new("cards-user").unwrap();
        let agent = AgentId::new("cards-agent").unwrap();
        let mut graph = AccessGraph::new();
        for change in [
            AccessChange::Register {
                principal: Principal::User(user),
            },
            AccessChange::Register {
                principal: Principal::Agent(agent),
            },
            AccessChange::Grant {
                edge: Edge::Invoke { user, agent },
                until: None,
            },
        ] {
            graph
                .apply(AccessEvent {
                    at: clock.now(),
                    change,
                })
                .unwrap();
        }
        let embedder = Arc::new(
            OfflineEmbedder::new(OfflineConfig {
                dim: 256,
                ..OfflineConfig::default()
            })
            .unwrap(),
        );
        let bank = CardBank::new(
            store.clone(),
            embedder,
            Arc::new(ApproxTokenCounter),
            roles,
            config,
        )
        .unwrap();
        World {
            clock,
            store,
            graph,
            bank,
            user,
            agent,
            system: SystemPolicy::default(),
            policies: None,
        }
    }

    pub fn ctx(&self) -> Context {
        Context::new(self.user, self.agent, self.clock.as_ref())
    }

    pub fn learn(&self, trajectories: &[Trajectory]) -> colmem_cards::LearnReport {
        self.learn_as(self.agent, None, trajectories)
    }

    /// Learns through `agent` (one the user may invoke) into `scope`.
    pub fn learn_as(
        &self,
        agent: AgentId,
        scope: Option<Scope>,
        trajectories: &[Trajectory],
    ) -> colmem_cards::LearnReport {
        self.try_learn_as(agent, scope, trajectories).unwrap()
    }

    /// [`World::learn_as`], with the bank's error.
    pub fn try_learn_as(
        &self,
        agent: AgentId,
        scope: Option<Scope>,
        trajectories: &[Trajectory],
    ) -> colmem_cards::Result<colmem_cards::LearnReport> {
        self.clock.advance(10);
        let writer = colmem_cards::Writer {
            graph: &self.graph,
            ctx: Context::new(self.user, agent, self.clock.as_ref()),
            system: &self.system,
            scope,
            policies: self.policies.as_ref(),
        };
        let report = self.bank.learn(&writer, trajectories);
        self.clock.advance(10);
        report
    }

    /// Registers `agent` and lets the user invoke it.
    pub fn add_agent(&mut self, agent: AgentId) {
        for change in [
            AccessChange::Register {
                principal: Principal::Agent(agent),
            },
            AccessChange::Grant {
                edge: Edge::Invoke {
                    user: self.user,
                    agent,
                },
                until: None,
            },
        ] {
            self.graph
                .apply(AccessEvent {
                    at: self.clock.now(),
                    change,
                })
                .unwrap();
        }
    }
}

/// A trajectory that made one uncertain choice.
pub fn trajectory(id: &str, task: &str, chosen: &str, other: &str, success: bool) -> Trajectory {
    Trajectory {
        id: id.to_owned(),
        task: task.to_owned(),
        conditions: BTreeSet::new(),
        round: 1,
        steps: vec![
            Step {
                action: "read the numbers".to_owned(),
                decision: None,
            },
            Step {
                action: "divide and round".to_owned(),
                decision: Some(Decision {
                    name: "rounding".to_owned(),
                    chosen: chosen.to_owned(),
                    alternatives: vec![other.to_owned()],
                }),
            },
        ],
        outcome: Outcome {
            score: if success { 1.0 } else { 0.0 },
            success,
            feedback: if success { "correct" } else { "wrong answer" }.to_owned(),
            infrastructure_error: false,
        },
    }
}
