//! Posting lists per [`Granularity`]: a query narrowed to raw turns, facts,
//! episodes or profiles intersects one of these bitmaps with the admitted set
//! *before* the search is planned, so the narrowing happens inside the search
//! like the read filter (a post-filter would starve a rare granularity).

use std::io::{BufWriter, Write};
use std::path::Path;

use colmem_core::Granularity;
use roaring::{MultiOps, RoaringTreemap};

use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"CMGRAN01";

/// The position of `granularity` in [`Granularity::ALL`].
fn slot(granularity: Granularity) -> usize {
    match granularity {
        Granularity::RawTurn => 0,
        Granularity::Fact => 1,
        Granularity::Episode => 2,
        Granularity::Profile => 3,
        Granularity::Card => 4,
    }
}

/// One roaring bitmap of fragment ids per granularity.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct GranularityPostings {
    lists: [RoaringTreemap; Granularity::ALL.len()],
}

impl GranularityPostings {
    /// Records that fragment `id` has `granularity` (replacing any earlier one).
    pub(crate) fn insert(&mut self, id: u64, granularity: Granularity) {
        let at = slot(granularity);
        for (i, list) in self.lists.iter_mut().enumerate() {
            if i == at {
                list.insert(id);
            } else {
                list.remove(id);
            }
        }
    }

    /// Forgets fragment `id`.
    pub(crate) fn remove(&mut self, id: u64) {
        for list in &mut self.lists {
            list.remove(id);
        }
    }

    /// The fragments of any of `granularities`, or `None` when the slice names
    /// no granularity or every one (no narrowing).
    pub(crate) fn narrowing(&self, granularities: &[Granularity]) -> Option<RoaringTreemap> {
        let mut wanted = [false; Granularity::ALL.len()];
        for &g in granularities {
            wanted[slot(g)] = true;
        }
        if wanted.iter().all(|&w| !w) || wanted.iter().all(|&w| w) {
            return None;
        }
        Some(
            self.lists
                .iter()
                .zip(wanted)
                .filter(|(_, w)| *w)
                .map(|(list, _)| list)
                .union(),
        )
    }

    /// Every fragment id with a recorded granularity.
    pub(crate) fn ids(&self) -> RoaringTreemap {
        self.lists.iter().union()
    }

    /// Writes every list to `path`, each under its granularity's name.
    pub(crate) fn save(&self, path: &Path) -> Result<()> {
        let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
        let mut out = BufWriter::new(file);
        let io = |e| Error::io(path, e);
        out.write_all(MAGIC).map_err(io)?;
        out.write_all(&(self.lists.len() as u64).to_le_bytes())
            .map_err(io)?;
        for (granularity, list) in Granularity::ALL.iter().zip(&self.lists) {
            let name = granularity.as_str().as_bytes();
            out.write_all(&(name.len() as u64).to_le_bytes())
                .map_err(io)?;
            out.write_all(name).map_err(io)?;
            out.write_all(&(list.serialized_size() as u64).to_le_bytes())
                .map_err(io)?;
            list.serialize_into(&mut out).map_err(io)?;
        }
        out.flush().map_err(io)
    }

    /// Reads what [`GranularityPostings::save`] wrote.
    pub(crate) fn load(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let mut input = Cursor { rest: &bytes, path };
        if input.take(MAGIC.len())? != MAGIC {
            return Err(Error::corrupt(path, "not a granularity postings file"));
        }
        let count = input.word()?;
        let mut postings = GranularityPostings::default();
        let mut seen = [false; Granularity::ALL.len()];
        for _ in 0..count {
            let name_len = input.length()?;
            let name = input.take(name_len)?;
            let granularity = Granularity::ALL
                .iter()
                .copied()
                .find(|g| g.as_str().as_bytes() == name)
                .ok_or_else(|| Error::corrupt(path, "an unknown granularity"))?;
            let size = input.length()?;
            let mut body = input.take(size)?;
            let list = RoaringTreemap::deserialize_from(&mut body)
                .map_err(|e| Error::corrupt(path, e.to_string()))?;
            if !body.is_empty() {
                return Err(Error::corrupt(path, "a list has trailing bytes"));
            }
            let at = slot(granularity);
            if std::mem::replace(&mut seen[at], true) {
                return Err(Error::corrupt(path, "a granularity appears twice"));
            }
            postings.lists[at] = list;
        }
        if !input.rest.is_empty() {
            return Err(Error::corrupt(path, "the file has trailing bytes"));
        }
        Ok(postings)
    }
}

/// Reads length-prefixed fields off a byte slice.
struct Cursor<'a> {
    rest: &'a [u8],
    path: &'a Path,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.rest.len() < n {
            return Err(Error::corrupt(self.path, "the file is truncated"));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn word(&mut self) -> Result<u64> {
        let mut w = [0u8; 8];
        w.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(w))
    }

    fn length(&mut self) -> Result<usize> {
        let n = self.word()?;
        usize::try_from(n).map_err(|_| Error::corrupt(self.path, "a length does not fit"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lists_follow_inserts_and_removals_and_survive_a_round_trip() {
        let mut postings = GranularityPostings::default();
        postings.insert(1, Granularity::Fact);
        postings.insert(2, Granularity::RawTurn);
        postings.insert(3, Granularity::Fact);
        postings.insert(3, Granularity::Episode);
        postings.insert(1 << 40, Granularity::Profile);
        postings.remove(2);
        let facts = postings.narrowing(&[Granularity::Fact]).unwrap();
        assert_eq!(facts.iter().collect::<Vec<_>>(), vec![1]);
        let some = postings
            .narrowing(&[Granularity::Episode, Granularity::Profile])
            .unwrap();
        assert_eq!(some.iter().collect::<Vec<_>>(), vec![3, 1 << 40]);
        assert!(postings.narrowing(&[]).is_none());
        assert!(postings.narrowing(&Granularity::ALL).is_none());
        assert_eq!(postings.ids().len(), 3);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.bin");
        postings.save(&path).unwrap();
        assert_eq!(GranularityPostings::load(&path).unwrap(), postings);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(GranularityPostings::load(&path).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        std::fs::write(&path, &longer).unwrap();
        assert!(GranularityPostings::load(&path).is_err());
    }
}
