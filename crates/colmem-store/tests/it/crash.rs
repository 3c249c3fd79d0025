//! Crash safety: a child process writes interactions in a loop and reports each
//! commit; the parent kills it with SIGKILL at random moments and checks the file.
//!
//! The child is this same test binary, re-run on the `crash_child_writer` test
//! with an environment variable that tells it where to write. It is stopped
//! (SIGSTOP) just before the kill, and the kill counted as inside a transaction when
//! it holds SQLite's WAL write lock then (byte 120 of the `-shm` file, from
//! `BEGIN IMMEDIATE` to the end of the commit, as `/proc/locks` lists it).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use colmem_store::{AuditStatus, FragmentStore, ListQuery, SqliteStore, StoreConfig};

use super::{everything, fact, interaction, with_embedding};

const CHILD_PATH: &str = "COLMEM_STORE_CRASH_CHILD";
const CHILD_START: &str = "COLMEM_STORE_CRASH_START";
const KILLS: usize = 100;

/// How many fragments interaction `i` has: never the same for neighbours, so a
/// torn interaction would show.
fn parts(i: u64) -> usize {
    1 + (i % 4) as usize
}

fn session(i: u64) -> String {
    format!("crash-{i}")
}

/// The child's loop; a no-op unless the crash test spawned this process.
#[test]
fn crash_child_writer() {
    let Ok(path) = std::env::var(CHILD_PATH) else {
        return;
    };
    let start: u64 = std::env::var(CHILD_START).unwrap().parse().unwrap();
    let store = SqliteStore::open(&path, StoreConfig::default()).unwrap();
    let mut out = std::io::stdout().lock();
    for i in start.. {
        let fragments = (0..parts(i))
            .map(|j| {
                let mut f =
                    with_embedding(fact(&format!("interaction {i} part {j}")), 384, i as f32);
                f.provenance.source.session = Some(session(i));
                f
            })
            .collect();
        let mut write = interaction(fragments);
        write.idempotency_key = Some(session(i));
        store.write(&write).unwrap();
        writeln!(out, "COMMITTED {i}").unwrap();
        out.flush().unwrap();
    }
}

/// Whether process `pid` holds SQLite's WAL write lock on `shm` (not for a
/// checkpoint, which also holds byte 121).
fn in_transaction(pid: u32, shm: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(inode) = std::fs::metadata(shm).map(|m| m.ino().to_string()) else {
        return false;
    };
    // Linux lists every lock there; elsewhere no kill is counted.
    let Ok(locks) = std::fs::read_to_string("/proc/locks") else {
        return false;
    };
    let held: BTreeSet<&str> = locks
        .lines()
        .filter(|l| !l.contains("->"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        // "1: POSIX  ADVISORY  WRITE 4242 fe:00:123456 120 120"
        .filter(|f| f.len() >= 8 && f[1] == "POSIX" && f[3] == "WRITE")
        .filter(|f| f[4] == pid.to_string() && f[5].rsplit(':').next() == Some(&inode))
        .map(|f| f[6])
        .collect();
    held.contains("120") && !held.contains("121")
}

#[allow(unsafe_code)]
fn stop(child: &std::process::Child) {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: `kill` has no memory effects; the child is not yet reaped, so its pid
    // still names it.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

#[test]
fn killed_writers_leave_every_reported_write_and_no_torn_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let exe = std::env::current_exe().unwrap();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut rng = Rng(seed);
    let mut reported = BTreeSet::new();
    let mut next = 0u64;
    let shm = dir.path().join("crash.db-shm");
    let mut inside = 0;
    for kill in 0..KILLS {
        let mut child = Command::new(&exe)
            .args([
                "crash::crash_child_writer",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_PATH, &path)
            .env(CHILD_START, next.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let target = 1 + rng.below(12);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        while seen < target {
            let line = lines
                .next()
                .unwrap_or_else(|| {
                    panic!("seed {seed}: child {kill} exited early: {:?}", child.wait())
                })
                .unwrap();
            if let Some(i) = line.strip_prefix("COMMITTED ") {
                reported.insert(i.parse::<u64>().unwrap());
                seen += 1;
            }
        }
        stop(&child);
        inside += usize::from(in_transaction(child.id(), &shm));
        child.kill().unwrap();
        child.wait().unwrap();

        let store = SqliteStore::open(&path, StoreConfig::default()).unwrap();
        store
            .integrity_check()
            .unwrap_or_else(|e| panic!("seed {seed}, kill {kill}: {e}"));
        assert!(
            matches!(store.verify_audit().unwrap(), AuditStatus::Intact { .. }),
            "seed {seed}, kill {kill}: audit chain broken"
        );
        let mut sessions: BTreeMap<u64, usize> = BTreeMap::new();
        for f in store.list(&everything(), &ListQuery::default()).unwrap() {
            let s = f.provenance.source.session.unwrap();
            let i: u64 = s.strip_prefix("crash-").unwrap().parse().unwrap();
            *sessions.entry(i).or_default() += 1;
            assert_eq!(
                store.embedding(f.id).unwrap().map(|e| e.vector.len()),
                Some(384)
            );
        }
        for (&i, &n) in &sessions {
            assert_eq!(
                n,
                parts(i),
                "seed {seed}, kill {kill}: interaction {i} is torn"
            );
        }
        for i in &reported {
            assert!(
                sessions.contains_key(i),
                "seed {seed}, kill {kill}: reported write {i} is lost"
            );
        }
        let stored: Vec<u64> = sessions.keys().copied().collect();
        assert_eq!(
            stored,
            (0..stored.len() as u64).collect::<Vec<_>>(),
            "interactions are a prefix"
        );
        next = stored.len() as u64;
    }
    assert!(reported.len() >= KILLS);
    eprintln!(
        "store crash test (seed {seed}): {KILLS} SIGKILLs, {inside} inside a write transaction"
    );
}
