//! The exact flat scan: the reference vector index, and the planner's path for
//! small or highly filtered admitted sets.
//!
//! Beside each f32 row it keeps an i8 code (a quarter of the bytes to read) with
//! a bound on the code's error. A scan scores every admitted row on its code,
//! then re-ranks in f32 only the rows whose score interval can still reach the
//! top-k, so the result is the exact top-k at about a quarter of the memory traffic.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::admit::Admit;
use crate::error::{Error, Result};
use crate::vector::{Effort, TopK, VectorHit, VectorIndex, dot, normalized};

const MAGIC: &[u8; 8] = b"CMFLAT01";
const FILE: &str = "flat.bin";

/// A hasher for fragment ids: one multiply and a fold (ids are not adversarial:
/// the store assigns them), several times cheaper than SipHash per lookup.
#[derive(Default, Clone, Copy, Debug)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, id: u64) {
        let x = (self.0 ^ id).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = x ^ (x >> 32);
    }
}

/// A map keyed by fragment id with [`IdHasher`].
pub(crate) type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

#[derive(Debug, Default)]
struct Rows {
    slots: IdMap<usize>,
    ids: Vec<u64>,
    data: Vec<f32>,
    /// Per row: `dim` i8 codes; the row is approximately `scale · code`.
    codes: Vec<i8>,
    /// Per row: the code's scale, `‖row − scale·code‖` and `‖scale·code‖`.
    code_meta: Vec<CodeMeta>,
}

/// How an i8 code relates to its f32 row.
#[derive(Clone, Copy, Debug, Default)]
struct CodeMeta {
    scale: f32,
    error: f32,
    norm: f32,
}

/// The i8 code of `row`, written into `out`, and how it relates to the row.
#[inline(always)]
fn quantize(row: &[f32], out: &mut [i8]) -> CodeMeta {
    let max = row.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        out.fill(0);
        return CodeMeta::default();
    }
    let scale = max / 127.0;
    let (mut error, mut norm) = (0.0f64, 0.0f64);
    for (x, c) in row.iter().zip(out.iter_mut()) {
        let code = (x / scale).round().clamp(-127.0, 127.0);
        *c = code as i8;
        let approx = f64::from(code) * f64::from(scale);
        error += (f64::from(*x) - approx).powi(2);
        norm += approx * approx;
    }
    CodeMeta {
        scale,
        error: error.sqrt() as f32,
        norm: norm.sqrt() as f32,
    }
}

/// The dot product of two i8 codes.
#[inline(always)]
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    // Independent i32 lanes let the compiler vectorise the widening multiply.
    let mut acc = [0i32; 16];
    let chunks_a = a.chunks_exact(16);
    let chunks_b = b.chunks_exact(16);
    let tail: i32 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum();
    for (ca, cb) in chunks_a.zip(chunks_b) {
        for i in 0..16 {
            acc[i] += i32::from(ca[i]) * i32::from(cb[i]);
        }
    }
    acc.iter().sum::<i32>() + tail
}

/// Slack for f32 rounding in the scores compared by the two-pass scan.
const ROUNDING: f32 = 1e-5;

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

    /// Every id with its (normalised) vector, in slot order.
    #[cfg(feature = "usearch")]
    pub(crate) fn rows(&self) -> Vec<(u64, Vec<f32>)> {
        let rows = self.read();
        rows.ids
            .iter()
            .enumerate()
            .map(|(slot, id)| (*id, rows.row(slot, self.dim).to_vec()))
            .collect()
    }

    fn write(&self) -> RwLockWriteGuard<'_, Rows> {
        self.rows.write().unwrap_or_else(|p| p.into_inner())
    }
}

impl Rows {
    fn row(&self, slot: usize, dim: usize) -> &[f32] {
        &self.data[slot * dim..(slot + 1) * dim]
    }

    fn code(&self, slot: usize, dim: usize) -> &[i8] {
        &self.codes[slot * dim..(slot + 1) * dim]
    }

    /// Recomputes the code of `slot` from its row.
    fn encode(&mut self, slot: usize, dim: usize) {
        let meta = quantize(
            &self.data[slot * dim..(slot + 1) * dim],
            &mut self.codes[slot * dim..(slot + 1) * dim],
        );
        self.code_meta[slot] = meta;
    }

    /// The exact top-`k` of the rows at `slots` for the normalised `query`:
    /// scores every row on its i8 code with an error bound, then re-ranks in f32
    /// every row whose bound can still reach the top-k.
    fn scan(
        &self,
        query: &[f32],
        dim: usize,
        k: usize,
        slots: impl Iterator<Item = usize>,
    ) -> Vec<VectorHit> {
        if k == 0 {
            return Vec::new();
        }
        // Compiled for the widest SIMD the CPU has (AVX2 on x86-64, else the
        // baseline), chosen at run time: the dot products below vectorise to it.
        pulp::Arch::new().dispatch(
            #[inline(always)]
            || self.scan_with(query, dim, k, slots),
        )
    }

    /// The body of [`Rows::scan`], inlined into each SIMD variant.
    #[inline(always)]
    fn scan_with(
        &self,
        query: &[f32],
        dim: usize,
        k: usize,
        slots: impl Iterator<Item = usize>,
    ) -> Vec<VectorHit> {
        let mut code = vec![0i8; dim];
        let q = quantize(query, &mut code);
        // Per row: the code score and the bound on its distance to the f32 score,
        // |q·x − q̂·x̂| ≤ ‖q‖·‖x − x̂‖ + ‖q − q̂‖·‖x̂‖ with ‖q‖ ≤ 1.
        let mut scored: Vec<(f32, f32, usize)> = slots
            .map(|slot| {
                let m = self.code_meta[slot];
                let approx = dot_i8(&code, self.code(slot, dim)) as f32 * q.scale * m.scale;
                (approx, m.error + q.error * m.norm + ROUNDING, slot)
            })
            .collect();
        let mut top = TopK::new(k);
        if scored.len() > k {
            // The k-th best lower bound: no row whose upper bound is below it can be in the top-k.
            let mut lower: Vec<f32> = scored.iter().map(|(a, e, _)| a - e).collect();
            let (_, kth, _) = lower.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
            let floor = *kth;
            scored.retain(|(a, e, _)| a + e >= floor);
        }
        for (_, _, slot) in scored {
            top.push(self.ids[slot], dot(query, self.row(slot, dim)));
        }
        top.into_sorted()
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
        let slot = match rows.slots.get(&id) {
            Some(&slot) => {
                rows.data[slot * dim..(slot + 1) * dim].copy_from_slice(&vector);
                slot
            }
            None => {
                let slot = rows.ids.len();
                rows.slots.insert(id, slot);
                rows.ids.push(id);
                rows.data.extend_from_slice(&vector);
                rows.codes.resize((slot + 1) * dim, 0);
                rows.code_meta.push(CodeMeta::default());
                slot
            }
        };
        rows.encode(slot, dim);
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
            rows.codes
                .copy_within(last * dim..(last + 1) * dim, slot * dim);
            rows.code_meta[slot] = rows.code_meta[last];
            rows.slots.insert(moved, slot);
        }
        rows.ids.pop();
        rows.data.truncate(last * dim);
        rows.codes.truncate(last * dim);
        rows.code_meta.truncate(last);
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
        Ok(match admit.ids() {
            Some(ids) if ids.len() < rows.ids.len() as u64 => rows.scan(
                &query,
                self.dim,
                k,
                ids.iter().filter_map(|id| rows.slots.get(&id).copied()),
            ),
            _ => rows.scan(
                &query,
                self.dim,
                k,
                (0..rows.ids.len()).filter(|&slot| admit.contains(rows.ids[slot])),
            ),
        })
    }

    fn scan(
        &self,
        query: &[f32],
        k: usize,
        ids: &mut dyn Iterator<Item = u64>,
    ) -> Result<Vec<VectorHit>> {
        let query = normalized(query, self.dim)?;
        let rows = self.read();
        Ok(rows.scan(
            &query,
            self.dim,
            k,
            ids.filter_map(|id| rows.slots.get(&id).copied()),
        ))
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
        rows.codes = vec![0; count * dim];
        rows.code_meta = vec![CodeMeta::default(); count];
        for slot in 0..count {
            rows.encode(slot, dim);
        }
        *self.write() = rows;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_code_bound_holds_and_the_two_pass_scan_is_exact() {
        let dim = 48;
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let index = FlatIndex::new(dim);
        let centre: Vec<f32> = (0..dim).map(|_| next()).collect();
        for id in 0..3000u64 {
            // Tight clusters make many near-ties, the hard case for a code pass.
            let v: Vec<f32> = centre.iter().map(|c| c + 0.05 * next()).collect();
            index.insert(id, &v).unwrap();
        }
        index.remove(17).unwrap();
        let rows = index.read();
        for _ in 0..20 {
            let q = normalized(
                &centre.iter().map(|c| c + 0.1 * next()).collect::<Vec<_>>(),
                dim,
            )
            .unwrap();
            let mut code = vec![0i8; dim];
            let qm = quantize(&q, &mut code);
            for slot in 0..rows.ids.len() {
                let m = rows.code_meta[slot];
                let approx = dot_i8(&code, rows.code(slot, dim)) as f32 * qm.scale * m.scale;
                let exact = dot(&q, rows.row(slot, dim));
                assert!((approx - exact).abs() <= m.error + qm.error * m.norm + ROUNDING);
            }
            let mut brute = TopK::new(10);
            for (slot, &id) in rows.ids.iter().enumerate() {
                brute.push(id, dot(&q, rows.row(slot, dim)));
            }
            let got = rows.scan(&q, dim, 10, 0..rows.ids.len());
            assert_eq!(got, brute.into_sorted());
        }
    }
}
