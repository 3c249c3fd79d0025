//! The read rule in SQL: a [`ReadFilter`] and a [`ListQuery`] become a WHERE clause.
//!
//! The clause text depends only on the shape of the request (the view, which
//! optional narrowings are present); every value — user, agent, times, and the
//! sets `A(u,t)`, `R(a,t)`, `G(a,t)` as JSON arrays — is a bound parameter. The
//! clause mirrors [`ReadFilter::admits`] condition by condition; the conformance
//! suite checks the two agree.

use colmem_core::{PrincipalId, ReadFilter, View};
use rusqlite::types::Value;

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

/// Appends the WHERE clause (without the keyword) for `filter` and `query` to `sql`.
pub(crate) fn push_where(sql: &mut Sql, filter: &ReadFilter, query: &ListQuery) -> Result<()> {
    let now = sql.bind(ts(filter.now()));
    let user = sql.bind(filter.user().as_str().to_owned());
    let agent = sql.bind(filter.agent().as_str().to_owned());
    let groups = sql.bind(names_json(filter.groups().to_sorted_vec())?);
    let agents = sql.bind(names_json(filter.agents().to_sorted_vec())?);
    let resources = sql.bind(names_json(filter.resources().to_sorted_vec())?);

    // Rule 1: recorded by now, not deleted by now, and the version the view asks for.
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
    sql.text.push_str(&format!(
        "f.created_at <= {now} AND (f.deleted_at IS NULL OR f.deleted_at > {now}) AND {version} \
         AND (f.scope = 'global' \
              OR (f.scope = 'user' AND f.user = {user}) \
              OR (f.scope = 'agent' AND f.user = {user} AND EXISTS \
                  (SELECT 1 FROM fragment_agents fa WHERE fa.fragment = f.id AND fa.agent = {agent})) \
              OR (f.scope = 'group' AND f.scope_group IN (SELECT value FROM json_each({groups})))) \
         AND NOT EXISTS (SELECT 1 FROM fragment_agents fa WHERE fa.fragment = f.id \
              AND fa.agent NOT IN (SELECT value FROM json_each({agents}))) \
         AND NOT EXISTS (SELECT 1 FROM fragment_resources fr WHERE fr.fragment = f.id \
              AND fr.resource NOT IN (SELECT value FROM json_each({resources})))"
    ));

    // Narrowings the caller asked for; they can only remove rows.
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
    Ok(())
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
