//! The read rule in SQL: a [`ReadFilter`] and a [`ListQuery`] become a WHERE clause.
//!
//! The clause text depends only on the shape of the request (the view, which
//! optional narrowings are present); every value — user, agent, times, and the
//! sets `A(u,t)`, `R(a,t)`, `G(a,t)` as JSON arrays — is a bound parameter. The
//! clause mirrors [`ReadFilter::admits`] condition by condition: rule 1 on each
//! fragment, rules 2–4 on its access class (see the schema); the conformance
//! suite checks the two agree.

use colmem_core::{PrincipalId, ReadFilter, View};
use rusqlite::types::Value;
use rusqlite::{Connection, params_from_iter};

use crate::codec::ts;
use crate::error::Result;
use crate::store::{ListQuery, Order};

/// SQL text with `?N` placeholders and the values bound to them.
#[derive(Debug, Default)]
pub(crate) struct Sql {
    pub(crate) text: String,
    pub(crate) params: Vec<Value>,
}

impl Sql {
    /// Binds `value` and returns its placeholder.
    pub(crate) fn bind(&mut self, value: impl Into<Value>) -> String {
        self.params.push(value.into());
        format!("?{}", self.params.len())
    }
}

fn names_json<T: PrincipalId>(ids: Vec<T>) -> Result<String> {
    let names: Vec<&str> = ids.into_iter().map(|id| id.as_str()).collect();
    crate::codec::json(&names)
}

/// The bound values of the read rule's scope and principal conditions.
struct Principals {
    user: String,
    agent: String,
    groups: String,
    agents: String,
    resources: String,
}

impl Principals {
    fn bind(sql: &mut Sql, filter: &ReadFilter) -> Result<Self> {
        Ok(Principals {
            user: sql.bind(filter.user().as_str().to_owned()),
            agent: sql.bind(filter.agent().as_str().to_owned()),
            groups: sql.bind(names_json(filter.groups().to_sorted_vec())?),
            agents: sql.bind(names_json(filter.agents().to_sorted_vec())?),
            resources: sql.bind(names_json(filter.resources().to_sorted_vec())?),
        })
    }

    /// Rules 2–4 on one access class `c`: the scope admits the reader, and the
    /// reader may use every agent's work and every resource the class holds.
    fn class_rule(&self) -> String {
        let Principals {
            user,
            agent,
            groups,
            agents,
            resources,
        } = self;
        format!(
            "(c.scope = 'global' \
              OR (c.scope = 'user' AND c.owner = {user}) \
              OR (c.scope = 'agent' AND c.owner = {user} \
                  AND EXISTS (SELECT 1 FROM json_each(c.agents) WHERE value = {agent})) \
              OR (c.scope = 'group' AND c.scope_group IN (SELECT value FROM json_each({groups})))) \
             AND NOT EXISTS (SELECT 1 FROM json_each(c.agents) \
                  WHERE value NOT IN (SELECT value FROM json_each({agents}))) \
             AND NOT EXISTS (SELECT 1 FROM json_each(c.resources) \
                  WHERE value NOT IN (SELECT value FROM json_each({resources})))"
        )
    }
}

/// Rule 1 on fragment `f`: recorded by `now`, not deleted by `now`, and the
/// version the view asks for.
fn version_rule(sql: &mut Sql, filter: &ReadFilter, now: &str) -> String {
    let version = match filter.view() {
        View::Current => format!("(f.superseded_at IS NULL OR f.superseded_at > {now})"),
        View::RecordAsOf(r) => {
            let r = sql.bind(ts(r));
            format!("f.created_at <= {r} AND (f.superseded_at IS NULL OR f.superseded_at > {r})")
        }
        View::WorldAsOf(w) => {
            let w = sql.bind(ts(w));
            format!("f.valid_from <= {w} AND (f.valid_until IS NULL OR {w} < f.valid_until)")
        }
        View::AllVersions => "1".to_owned(),
    };
    format!(
        "f.created_at <= {now} AND (f.deleted_at IS NULL OR f.deleted_at > {now}) AND {version}"
    )
}

/// Appends the WHERE clause (without the keyword) for `filter` and `query` to `sql`.
///
/// Rules 2–4 are evaluated once per access class, in a subquery the planner
/// runs once; each fragment then only needs its class looked up.
pub(crate) fn push_where(sql: &mut Sql, filter: &ReadFilter, query: &ListQuery) -> Result<()> {
    let now = sql.bind(ts(filter.now()));
    let principals = Principals::bind(sql, filter)?;
    let version = version_rule(sql, filter, &now);
    sql.text.push_str(&format!(
        "{version} AND f.class IN (SELECT c.id FROM access_classes c WHERE {})",
        principals.class_rule()
    ));
    push_narrowings(sql, query);
    Ok(())
}

/// Narrowings the caller asked for; they can only remove rows.
fn push_narrowings(sql: &mut Sql, query: &ListQuery) {
    if let Some(key) = &query.key {
        let key = sql.bind(key.clone());
        sql.text.push_str(&format!(" AND f.key = {key}"));
    }
    if let Some(granularity) = query.granularity {
        let g = sql.bind(granularity.as_str().to_owned());
        sql.text.push_str(&format!(" AND f.granularity = {g}"));
    }
    if let Some(after) = query.after {
        let after = sql.bind(crate::codec::id_param(after).unwrap_or(i64::MAX));
        let op = match query.order {
            Order::OldestFirst => ">",
            Order::NewestFirst => "<",
        };
        sql.text.push_str(&format!(" AND f.id {op} {after}"));
    }
}

/// How to count the fragments a filter admits.
#[derive(Debug)]
pub(crate) enum CountPlan {
    /// Count the rows [`push_where`] admits.
    Scan(Sql),
    /// The current view without narrowings: add the admitted classes' `live`
    /// counters (fragments neither superseded nor deleted) and the versions
    /// closed or deleted after the reader's "now" that it still sees (found
    /// through the partial indexes on those times, one range each). That is exact when no admitted class
    /// holds a fragment recorded after "now" (`newest`), which `summary`
    /// reports; otherwise the plan falls back to `scan`.
    Counters {
        /// One row: the sum of the admitted `live` counters, and whether every
        /// admitted class's `newest` is at or before "now".
        summary: Sql,
        /// One row: the admitted versions closed or deleted after "now" that are visible.
        closed: Sql,
        /// The fallback: the admitted rows, counted one by one.
        scan: Sql,
    },
}

impl CountPlan {
    /// The plan for counting what `filter` admits under `query`.
    pub(crate) fn new(filter: &ReadFilter, query: &ListQuery) -> Result<Self> {
        let mut scan = Sql {
            text: "SELECT count(*) FROM fragments f WHERE ".to_owned(),
            params: Vec::new(),
        };
        push_where(&mut scan, filter, query)?;
        let counters_apply = filter.view() == View::Current
            && query.key.is_none()
            && query.granularity.is_none()
            && query.after.is_none();
        if !counters_apply {
            return Ok(CountPlan::Scan(scan));
        }

        let mut summary = Sql::default();
        let now = summary.bind(ts(filter.now()));
        let rule = Principals::bind(&mut summary, filter)?.class_rule();
        summary.text = format!(
            "SELECT coalesce(sum(k.live), 0), coalesce(max(k.newest) <= {now}, 1) \
             FROM access_classes c JOIN class_counts k ON k.class = c.id WHERE {rule}"
        );

        let mut closed = Sql::default();
        let now = closed.bind(ts(filter.now()));
        let rule = Principals::bind(&mut closed, filter)?.class_rule();
        let version = version_rule(&mut closed, filter, &now);
        closed.text = format!(
            "SELECT count(*) FROM fragments f \
             WHERE (f.superseded_at > {now} OR f.deleted_at > {now}) \
               AND {version} AND f.class IN (SELECT c.id FROM access_classes c WHERE {rule})"
        );
        Ok(CountPlan::Counters {
            summary,
            closed,
            scan,
        })
    }

    /// Runs the plan on `conn`, which must hold one read snapshot for all its statements.
    pub(crate) fn run(&self, conn: &Connection) -> Result<u64> {
        let one = |sql: &Sql| -> Result<i64> {
            Ok(conn
                .prepare_cached(&sql.text)?
                .query_row(params_from_iter(sql.params.iter()), |row| row.get(0))?)
        };
        let n = match self {
            CountPlan::Scan(scan) => one(scan)?,
            CountPlan::Counters {
                summary,
                closed,
                scan,
            } => {
                let (live, exact): (i64, bool) = conn
                    .prepare_cached(&summary.text)?
                    .query_row(params_from_iter(summary.params.iter()), |row| {
                        Ok((row.get(0)?, row.get(1)?))
                    })?;
                if exact {
                    live + one(closed)?
                } else {
                    one(scan)?
                }
            }
        };
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

/// Appends `ORDER BY` and `LIMIT` for `query`.
pub(crate) fn push_order_limit(sql: &mut Sql, query: &ListQuery) {
    sql.text.push_str(match query.order {
        Order::OldestFirst => " ORDER BY f.id ASC",
        Order::NewestFirst => " ORDER BY f.id DESC",
    });
    if let Some(limit) = query.limit {
        let limit = sql.bind(i64::try_from(limit).unwrap_or(i64::MAX));
        sql.text.push_str(&format!(" LIMIT {limit}"));
    }
}

#[cfg(test)]
mod tests {
    use colmem_core::{AgentId, FilterParts, IdSet, Timestamp, UserId};

    use super::*;

    fn plan_of(conn: &Connection, sql: &Sql) -> String {
        let mut stmt = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", sql.text))
            .unwrap();
        let rows = stmt
            .query_map(params_from_iter(sql.params.iter()), |row| {
                row.get::<_, String>(3)
            })
            .unwrap();
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .unwrap()
            .join("\n")
    }

    #[test]
    fn the_current_count_reads_counters_and_closed_versions_by_index() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::schema::migrate_to(&mut conn, crate::schema::SCHEMA_VERSION, 0).unwrap();
        let filter = ReadFilter::from_parts(FilterParts {
            user: UserId::new("plan-user").unwrap(),
            agent: AgentId::new("plan-agent").unwrap(),
            now: Timestamp::from_millis(42),
            agents: IdSet::new(),
            resources: IdSet::new(),
            groups: IdSet::new(),
        });
        let CountPlan::Counters {
            summary, closed, ..
        } = CountPlan::new(&filter, &ListQuery::default()).unwrap()
        else {
            panic!("the current view without narrowings counts with counters")
        };
        let summary = plan_of(&conn, &summary);
        assert!(!summary.contains("fragments"), "{summary}");
        let closed = plan_of(&conn, &closed);
        assert!(
            closed.contains("fragments_superseded") && closed.contains("fragments_deleted"),
            "{closed}"
        );
        let narrowed = ListQuery {
            key: Some("k".into()),
            ..ListQuery::default()
        };
        assert!(matches!(
            CountPlan::new(&filter, &narrowed).unwrap(),
            CountPlan::Scan(_)
        ));
    }

    #[test]
    fn values_are_bound_never_spliced() {
        let user = UserId::new("robert-drop-table").unwrap();
        let filter = ReadFilter::from_parts(FilterParts {
            user,
            agent: AgentId::new("sql-agent").unwrap(),
            now: Timestamp::from_millis(42),
            agents: IdSet::new(),
            resources: IdSet::new(),
            groups: IdSet::new(),
        })
        .with_view(View::WorldAsOf(Timestamp::from_millis(7)));
        let query = ListQuery {
            key: Some("k'; DROP TABLE fragments; --".into()),
            ..ListQuery::default()
        };
        let mut sql = Sql::default();
        push_where(&mut sql, &filter, &query).unwrap();
        assert!(!sql.text.contains("robert"), "{}", sql.text);
        assert!(!sql.text.contains("DROP"), "{}", sql.text);
        assert!(!sql.text.contains("42"), "{}", sql.text);
        assert!(
            sql.params
                .contains(&Value::Text("robert-drop-table".into()))
        );
        assert!(sql.params.contains(&Value::Integer(7)));
    }
}
