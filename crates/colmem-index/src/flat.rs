//! The exact flat scan: the reference vector index, and the planner's path for
//! small or highly filtered admitted sets.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::admit::Admit;
use crate::error::{Error, Result};
use crate::vector::{Effort, TopK, VectorHit, VectorIndex, dot, normalized};

const MAGIC: &[u8; 8] = b"CMFLAT01";
const FILE: &str = "flat.bin";

#[derive(Debug, Default)]
struct Rows {
    slots: HashMap<u64, usize>,
    ids: Vec<u64>,
    data: Vec<f32>,
}

/// Exact cosine search by scanning every admitted vector. Always built.
#[derive(Debug)]
pub struct FlatIndex {
    dim: usize,
    rows: RwLock<Rows>,
}

impl FlatIndex {
    /// An empty index of `dim`-dimensional vectors.
    pub fn new(dim: usize) -> Self {
        FlatIndex {
            dim,
            rows: RwLock::new(Rows::default()),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Rows> {
        self.rows.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Rows> {
        self.rows.write().unwrap_or_else(|p| p.into_inner())
    }
}

impl Rows {
    fn row(&self, slot: usize, dim: usize) -> &[f32] {
        &self.data[slot * dim..(slot + 1) * dim]
    }
}

impl VectorIndex for FlatIndex {
    fn name(&self) -> &'static str {
        "flat"
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn len(&self) -> usize {
        self.read().ids.len()
    }

    fn is_exact(&self) -> bool {
        true
    }

    fn insert(&self, id: u64, vector: &[f32]) -> Result<()> {
        let vector = normalized(vector, self.dim)?;
        let dim = self.dim;
        let mut rows = self.write();
        match rows.slots.get(&id) {
            Some(&slot) => rows.data[slot * dim..(slot + 1) * dim].copy_from_slice(&vector),
            None => {
                let slot = rows.ids.len();
                rows.slots.insert(id, slot);
                rows.ids.push(id);
                rows.data.extend_from_slice(&vector);
            }
        }
        Ok(())
    }

    fn remove(&self, id: u64) -> Result<bool> {
        let dim = self.dim;
        let mut rows = self.write();
        let Some(slot) = rows.slots.remove(&id) else {
            return Ok(false);
        };
        let last = rows.ids.len() - 1;
        if slot != last {
            let moved = rows.ids[last];
            rows.ids[slot] = moved;
            rows.data
                .copy_within(last * dim..(last + 1) * dim, slot * dim);
            rows.slots.insert(moved, slot);
        }
        rows.ids.pop();
        rows.data.truncate(last * dim);
        Ok(true)
    }

    fn clear(&self) -> Result<()> {
        *self.write() = Rows::default();
        Ok(())
    }

    fn contains(&self, id: u64) -> bool {
        self.read().slots.contains_key(&id)
    }

    fn vector(&self, id: u64, out: &mut Vec<f32>) -> Result<bool> {
        let rows = self.read();
        out.clear();
        match rows.slots.get(&id) {
            Some(&slot) => {
                out.extend_from_slice(rows.row(slot, self.dim));
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn search(
        &self,
        query: &[f32],
        k: usize,
        admit: &Admit,
        _effort: Effort,
    ) -> Result<Vec<VectorHit>> {
        let query = normalized(query, self.dim)?;
        let rows = self.read();
        let mut top = TopK::new(k);
        match admit.ids() {
            Some(ids) if ids.len() < rows.ids.len() as u64 => {
                for id in ids {
                    if let Some(&slot) = rows.slots.get(&id) {
                        top.push(id, dot(&query, rows.row(slot, self.dim)));
                    }
                }
            }
            _ => {
                for (slot, &id) in rows.ids.iter().enumerate() {
                    if admit.contains(id) {
                        top.push(id, dot(&query, rows.row(slot, self.dim)));
                    }
                }
            }
        }
        Ok(top.into_sorted())
    }

    fn scan(
        &self,
        query: &[f32],
        k: usize,
        ids: &mut dyn Iterator<Item = u64>,
    ) -> Result<Vec<VectorHit>> {
        let query = normalized(query, self.dim)?;
        let rows = self.read();
        let mut top = TopK::new(k);
        for id in ids {
            if let Some(&slot) = rows.slots.get(&id) {
                top.push(id, dot(&query, rows.row(slot, self.dim)));
            }
        }
        Ok(top.into_sorted())
    }

    fn save(&self, dir: &Path) -> Result<()> {
        let path = dir.join(FILE);
        let rows = self.read();
        let file = std::fs::File::create(&path).map_err(|e| Error::io(&path, e))?;
        let mut out = BufWriter::new(file);
        let mut write = |bytes: &[u8]| out.write_all(bytes).map_err(|e| Error::io(&path, e));
        write(MAGIC)?;
        write(&(self.dim as u64).to_le_bytes())?;
        write(&(rows.ids.len() as u64).to_le_bytes())?;
        for id in &rows.ids {
            write(&id.to_le_bytes())?;
        }
        for x in &rows.data {
            write(&x.to_le_bytes())?;
        }
        out.flush().map_err(|e| Error::io(&path, e))
    }

    fn load(&self, dir: &Path) -> Result<()> {
        let path = dir.join(FILE);
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let word = |at: usize| -> Result<u64> {
            bytes
                .get(at..at + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(u64::from_le_bytes)
                .ok_or_else(|| Error::corrupt(&path, "the file is truncated"))
        };
        if bytes.get(..8) != Some(MAGIC.as_slice()) {
            return Err(Error::corrupt(&path, "not a flat index file"));
        }
        let dim = word(8)? as usize;
        if dim != self.dim {
            return Err(Error::corrupt(
                &path,
                format!("it holds {dim}-dimensional vectors, not {}", self.dim),
            ));
        }
        let count = word(16)? as usize;
        let ids_at = 24usize;
        let data_at = count
            .checked_mul(8)
            .and_then(|n| n.checked_add(ids_at))
            .ok_or_else(|| Error::corrupt(&path, "bad count"))?;
        let end = count
            .checked_mul(dim * 4)
            .and_then(|n| n.checked_add(data_at))
            .ok_or_else(|| Error::corrupt(&path, "bad count"))?;
        if end != bytes.len() {
            return Err(Error::corrupt(&path, "the file has the wrong length"));
        }
        let mut rows = Rows::default();
        for slot in 0..count {
            let id = word(ids_at + slot * 8)?;
            if rows.slots.insert(id, slot).is_some() {
                return Err(Error::corrupt(&path, "a fragment id appears twice"));
            }
            rows.ids.push(id);
        }
        rows.data = bytes[data_at..end]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        *self.write() = rows;
        Ok(())
    }
}
