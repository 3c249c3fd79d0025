//! The value codec's entry points for the fuzz targets (`fuzz/` at the repository
//! root) and the test that replays their corpora: what the store decodes from its
//! columns, fed arbitrary column values. Only built with the `fuzzing` feature.

use std::cell::RefCell;

use colmem_core::{AccessEvent, CardRelation, Embedding};
use rusqlite::Connection;
pub use rusqlite::types::Value;

use crate::codec;
use crate::error::Result;
use crate::store::CardRecord;

/// How many columns a card row has: the fragment's, then the card's fields.
pub const CARD_COLUMNS: usize = 21;

thread_local! {
    static CONNECTION: RefCell<Option<Connection>> = const { RefCell::new(None) };
}

/// Decodes `values` as the row of a card (a fragment row and the card's fields), as
/// the store does a row it reads: the values go through SQLite (`SELECT ?1, …, ?21`),
/// so each keeps the type SQLite gives it. Missing values are NULL.
pub fn card_row(values: &[Value]) -> Result<CardRecord> {
    CONNECTION.with(|cell| {
        let mut slot = cell.borrow_mut();
        let conn = match slot.as_mut() {
            Some(conn) => conn,
            None => slot.insert(Connection::open_in_memory()?),
        };
        let placeholders: Vec<String> = (1..=CARD_COLUMNS).map(|i| format!("?{i}")).collect();
        let mut stmt = conn.prepare_cached(&format!("SELECT {}", placeholders.join(", ")))?;
        let params: Vec<&Value> = (0..CARD_COLUMNS)
            .map(|i| values.get(i).unwrap_or(&Value::Null))
            .collect();
        stmt.query_row(rusqlite::params_from_iter(params), |row| {
            Ok(crate::sqlite::card_from_row(row))
        })?
    })
}

/// Decodes an embedding's columns.
pub fn embedding(embedder: String, blob: &[u8]) -> Result<Embedding> {
    codec::embedding_from_columns(embedder, blob)
}

/// Decodes a card edge's columns.
pub fn card_relation(relation: &str, precondition: Option<String>) -> Result<CardRelation> {
    codec::relation_from_columns(relation, precondition)
}

/// Decodes the body of an access event.
pub fn access_event(body: &str) -> Result<AccessEvent> {
    codec::from_json("access event", body)
}
