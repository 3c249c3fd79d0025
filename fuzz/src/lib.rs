//! What each fuzz target does with its input: one function per parser of untrusted
//! input, calling the program's own parse functions. The targets in `fuzz_targets/`
//! are one line each over [`TARGETS`]; xtask's corpus test compiles this same file
//! (`#[path]`) and replays every corpus file through it, so CI needs no fuzzer.
//! Nothing here catches a panic: a panic is a crash.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use colmem_access::{Redaction, Redactor};
use colmem_core::{
    AgentId, Change, ChangeFeed, ChangeOp, Embedding, FeedError, Fragment, FragmentId, Granularity,
    GroupId, Kind, Provenance, ResourceId, Scope, Source, StoredFragment, Timestamp, UserId,
    Validity,
};
use colmem_index::{HnswConfig, HnswIndex, HybridConfig, HybridIndex, MemoryBm25, Quantization};
use colmem_store::fuzzing::{self as codec, Value};

/// What a target does with one input.
pub type Target = fn(&[u8]);

/// Every target by name, with the function its input goes through.
pub const TARGETS: &[(&str, Target)] = &[
    ("locomo", locomo),
    ("trajectories", trajectories),
    ("config", config),
    ("time", time),
    ("names", names),
    ("redact", redact),
    ("codec", store_codec),
    ("snapshot", snapshot),
];

/// A LoCoMo file (`colmem import locomo`): the loader reads UTF-8 text only.
pub fn locomo(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = colmem_eval::locomo::parse(text, "fuzz.json");
    }
}

/// The trajectory JSONL of `colmem cards learn`.
pub fn trajectories(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(parsed) = colmem_cards::parse_trajectories(text) {
        for t in &parsed {
            assert!(
                (0.0..=1.0).contains(&t.outcome.score),
                "an accepted score lies in [0, 1]"
            );
            let _ = t.transcript();
        }
    }
}

/// `colmem.toml` and the `COLMEM_…` overrides, through `Config::load` (the program's
/// entry): the bytes up to the first NUL are the file; after it, each line
/// `KEY=VALUE` is the variable `COLMEM_KEY`.
pub fn config(data: &[u8]) {
    static FILE: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    static LOCK: Mutex<()> = Mutex::new(());
    let (file, vars) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let vars: Vec<(String, String)> = String::from_utf8_lossy(vars)
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (format!("COLMEM_{k}"), v.to_owned()))
        .collect();
    let (_, path) = FILE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("colmem.toml");
        (dir, path)
    });
    let _one_at_a_time = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    std::fs::write(path, file).expect("writing the configuration file");
    let _ = colmem::Config::load(path, true, vars);
}

/// The times the program parses (`--at`, `--since`, configuration times) and the
/// LoCoMo session dates and turn ids. An accepted time reads back as itself.
pub fn time(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(t) = Timestamp::parse(text) {
        let shown = t.to_string();
        if !shown.ends_with("ms") {
            assert_eq!(Timestamp::parse(&shown).ok(), Some(t), "{text:?} → {shown}");
        }
    }
    let _ = colmem_eval::locomo::parse_session_date(text);
    let _ = text.parse::<colmem_eval::locomo::DiaId>();
    let _ = colmem_eval::locomo::parse_evidence(text);
}

/// Principal names, scopes and fragment ids as the program reads them from its
/// command line. An accepted name is kept as given.
pub fn names(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(u) = UserId::new(text) {
        assert_eq!(u.as_str(), text);
    }
    let _ = AgentId::new(text);
    let _ = ResourceId::new(text);
    let _ = GroupId::new(text);
    if let Ok(scope) = text.parse::<Scope>() {
        assert_eq!(scope.to_string().parse::<Scope>().ok(), Some(scope));
    }
    let _ = text.parse::<FragmentId>();
}

/// The redactors on arbitrary text. The first byte's low four bits choose e-mails,
/// phones, card numbers and names; with names, the first line lists them, split by
/// `|`, and the text follows.
pub fn redact(data: &[u8]) {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let Ok(rest) = std::str::from_utf8(rest) else {
        return;
    };
    let mut kinds = Vec::new();
    let mut text = rest;
    if choice & 1 != 0 {
        kinds.push(Redaction::Emails);
    }
    if choice & 2 != 0 {
        kinds.push(Redaction::Phones);
    }
    if choice & 4 != 0 {
        kinds.push(Redaction::CardNumbers);
    }
    if choice & 8 != 0 {
        let (names, after) = rest.split_once('\n').unwrap_or((rest, ""));
        kinds.push(Redaction::Names(
            names.split('|').map(str::to_owned).collect(),
        ));
        text = after;
    }
    let Ok(redactor) = Redactor::new(&kinds) else {
        return;
    };
    let out = redactor.apply(text);
    if kinds.is_empty() {
        assert_eq!(out, text, "no redaction leaves the text as it is");
    }
}

/// Reads column values: a tag byte (0 NULL, 1 integer, 2 real, 3 text, 4 blob),
/// then 8 bytes for a number, or a length byte and that many bytes. A read past the
/// end gives NULL (or nothing).
struct Columns<'a>(&'a [u8]);

impl Columns<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        head
    }

    fn eight(&mut self) -> [u8; 8] {
        let mut out = [0u8; 8];
        let got = self.take(8);
        out[..got.len()].copy_from_slice(got);
        out
    }

    fn bytes(&mut self) -> Vec<u8> {
        let n = self.take(1).first().copied().unwrap_or(0) as usize;
        self.take(n).to_vec()
    }

    fn text(&mut self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }

    fn value(&mut self) -> Value {
        match self.take(1).first().map(|t| t % 5) {
            None | Some(0) => Value::Null,
            Some(1) => Value::Integer(i64::from_le_bytes(self.eight())),
            Some(2) => Value::Real(f64::from_le_bytes(self.eight())),
            Some(3) => Value::Text(self.text()),
            _ => Value::Blob(self.bytes()),
        }
    }
}

/// The store's value codec: a card row of 21 column values (a fragment row and the
/// card's fields) as SQLite hands them over, then an embedding (embedder name and
/// blob), a card edge (relation and precondition) and an access event's body.
pub fn store_codec(data: &[u8]) {
    let mut columns = Columns(data);
    let row: Vec<Value> = (0..codec::CARD_COLUMNS).map(|_| columns.value()).collect();
    let _ = codec::card_row(&row);
    let embedder = columns.text();
    let blob = columns.bytes();
    if let Ok(e) = codec::embedding(embedder, &blob) {
        assert_eq!(e.vector.len() * 4, blob.len());
    }
    let relation = columns.text();
    let precondition = Some(columns.text()).filter(|p| !p.is_empty());
    let _ = codec::card_relation(&relation, precondition);
    let _ = codec::access_event(&columns.text());
}

/// A change feed of a few fragments, as a store would expose it.
struct Feed(Vec<StoredFragment>);

const DIM: usize = 8;

impl Feed {
    fn new() -> Feed {
        let user = UserId::new("fuzz-user").expect("a valid name");
        let agent = AgentId::new("fuzz-agent").expect("a valid name");
        let group = GroupId::new("fuzz-crew").expect("a valid name");
        let words = ["apples", "boats", "clouds", "dunes"];
        Feed(
            (1..=12u64)
                .map(|id| StoredFragment {
                    fragment: Fragment {
                        id: FragmentId(id),
                        key: None,
                        content: format!("entry {id} about {}", words[id as usize % 4]),
                        granularity: Granularity::Fact,
                        kind: Kind::Observation,
                        scope: if id % 2 == 0 {
                            Scope::Group(group)
                        } else {
                            Scope::User
                        },
                        provenance: Provenance {
                            created_at: Timestamp::from_millis(1_000),
                            user,
                            agents: BTreeSet::from([agent]),
                            resources: BTreeSet::new(),
                            source: Source::default(),
                        },
                        validity: Validity::always(),
                        keywords: Vec::new(),
                        superseded_at: None,
                        superseded_by: None,
                        deleted_at: None,
                    },
                    embedding: Some(Embedding {
                        embedder: "fuzz".into(),
                        vector: (0..DIM)
                            .map(|i| ((id as usize * 7 + i) % 5) as f32 - 2.0)
                            .collect(),
                    }),
                })
                .collect(),
        )
    }
}

impl ChangeFeed for Feed {
    fn head(&self) -> Result<u64, FeedError> {
        Ok(self.0.len() as u64)
    }

    fn changes_after(&self, after: u64, limit: usize) -> Result<Vec<Change>, FeedError> {
        Ok((after + 1..=self.0.len() as u64)
            .take(limit)
            .map(|seq| Change {
                seq,
                fragment: FragmentId(seq),
                op: ChangeOp::Put,
                stamp: seq * 7919,
            })
            .collect())
    }

    fn load(&self, ids: &[FragmentId]) -> Result<Vec<StoredFragment>, FeedError> {
        Ok(self
            .0
            .iter()
            .filter(|s| ids.contains(&s.fragment.id))
            .cloned()
            .collect())
    }
}

fn open_index(dir: &Path, feed: &Feed) -> colmem_index::OpenReport {
    let config = HnswConfig {
        quantization: Quantization::I8,
        threads: 1,
        max_concurrent_searches: 1,
        partition_min: Some(2),
        ..HnswConfig::default()
    };
    let vector = Arc::new(HnswIndex::new(DIM, config).expect("an HNSW index"));
    let hybrid = HybridConfig {
        embedder: Some("fuzz".into()),
        ..HybridConfig::default()
    };
    let lexical = Arc::new(MemoryBm25::new());
    HybridIndex::load(dir, vector, Some(lexical), hybrid, feed)
        .expect("opening an index never fails on a bad snapshot: it rebuilds")
        .1
}

/// A whole snapshot (usearch graphs, exact copies, postings, lexical index, manifest),
/// written once, by relative path.
struct Baseline {
    feed: Feed,
    files: BTreeMap<String, Vec<u8>>,
    work: tempfile::TempDir,
}

fn read_tree(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).expect("reading the snapshot") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            read_tree(root, &path, out);
        } else {
            let rel = path.strip_prefix(root).expect("inside the snapshot");
            let rel = rel.to_string_lossy().replace('\\', "/");
            out.insert(rel, std::fs::read(&path).expect("reading a snapshot file"));
        }
    }
}

fn baseline() -> &'static Mutex<Baseline> {
    static BASELINE: OnceLock<Mutex<Baseline>> = OnceLock::new();
    BASELINE.get_or_init(|| {
        let feed = Feed::new();
        let made = tempfile::tempdir().expect("a temporary directory");
        let (index, _) = {
            let config = HnswConfig {
                quantization: Quantization::I8,
                threads: 1,
                max_concurrent_searches: 1,
                partition_min: Some(2),
                ..HnswConfig::default()
            };
            let vector = Arc::new(HnswIndex::new(DIM, config).expect("an HNSW index"));
            let hybrid = HybridConfig {
                embedder: Some("fuzz".into()),
                ..HybridConfig::default()
            };
            HybridIndex::open(
                made.path(),
                vector,
                Some(Arc::new(MemoryBm25::new())),
                hybrid,
                &feed,
            )
            .expect("writing the baseline snapshot")
        };
        drop(index);
        let mut files = BTreeMap::new();
        read_tree(made.path(), made.path(), &mut files);
        let work = tempfile::tempdir().expect("a temporary directory");
        Mutex::new(Baseline { feed, files, work })
    })
}

/// Index snapshot files. A valid snapshot is written once; each input edits one of
/// its files and opens the index over it. Byte 0 picks the file (in path order),
/// byte 1 the edit (low two bits: 0 the file becomes the rest of the input, 1 the
/// rest is XORed in from the offset in bytes 2–3, 2 the file is cut at that
/// offset, 3 the rest is appended; bit 7 set: the manifest is re-sealed with the
/// edited file's new hash, unless the file is one a third-party library parses, a
/// usearch graph). A data file whose bytes changed without a matching manifest
/// must be rebuilt from the feed, never trusted; a re-sealed one of our own formats must be
/// refused or read, never crash.
pub fn snapshot(data: &[u8]) {
    let [pick, edit, rest @ ..] = data else {
        return;
    };
    let baseline = baseline().lock().unwrap_or_else(|p| p.into_inner());
    let mut files = baseline.files.clone();
    let names: Vec<String> = files.keys().cloned().collect();
    let name = &names[*pick as usize % names.len()];
    let offset = match rest {
        [a, b, ..] => u16::from_le_bytes([*a, *b]) as usize,
        _ => 0,
    };
    let body = files.get_mut(name).expect("a listed file");
    match edit & 3 {
        0 => *body = rest.to_vec(),
        1 => {
            for (i, b) in rest.iter().skip(2).enumerate() {
                if let Some(at) = body.get_mut(offset + i) {
                    *at ^= b;
                }
            }
        }
        2 => body.truncate(offset),
        _ => body.extend_from_slice(rest),
    }
    let changed = files[name] != baseline.files[name];
    let third_party = name.ends_with(".usearch");
    let reseal = edit & 0x80 != 0 && !third_party && !name.ends_with("manifest.json");
    if reseal {
        let hash = blake3::hash(&files[name]).to_hex().to_string();
        let manifest = names
            .iter()
            .find(|n| n.ends_with("manifest.json"))
            .expect("a manifest");
        let mut json: serde_json::Value =
            serde_json::from_slice(&files[manifest]).expect("the baseline manifest");
        let rel = name.split_once('/').map_or(name.as_str(), |(_, r)| r);
        json["files"][rel] = serde_json::Value::String(hash);
        *files.get_mut(manifest).expect("a manifest") =
            serde_json::to_vec(&json).expect("a manifest");
    }
    let root = baseline.work.path();
    let _ = std::fs::remove_dir_all(root.join("current"));
    for (rel, bytes) in &files {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("a snapshot directory");
        }
        std::fs::write(&path, bytes).expect("writing a snapshot file");
    }
    let report = open_index(root, &baseline.feed);
    // An edit of the manifest may keep its meaning (a space): only a data file's
    // edit is sure to be refused.
    if changed && !reseal && !name.ends_with("manifest.json") {
        assert!(
            !report.restored,
            "{name} was edited but the snapshot was trusted"
        );
    }
    if !changed {
        assert!(
            report.restored,
            "an intact snapshot is restored: {:?}",
            report.rebuild_reason
        );
    }
}
