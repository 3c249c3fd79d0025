//! Private files: under umask 022 the data directory and everything in it are
//! their owner's only, the store's `-wal` and `-shm` files included, which SQLite
//! creates with the store file's mode. The umask is the process's, so these tests run
//! themselves again in a child process whose shell sets it.

use std::path::Path;
use std::process::Command;

use colmem::parts::store::{SqliteStore, StoreConfig};
use colmem::{Memory, STORE_FILE};

use crate::{agent, logical, setup, turn, user};

/// Set in the child process a test runs itself again in.
const CHILD: &str = "COLMEM_TEST_UMASK_CHILD";

/// Whether this is the child: if not, runs `test` again in a child under umask 022
/// and checks that it passed.
fn in_child_under_umask_022(test: &str) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg("umask 022 && exec \"$0\" \"$@\"")
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", test, "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{log}");
    assert!(log.contains("1 passed"), "the child ran no test: {log}");
    false
}

/// Every directory and file under `dir` with a mode other than 0700 and 0600.
fn open_to_others(dir: &Path) -> Vec<(String, u32)> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut found = Vec::new();
    let mut walk = vec![dir.to_path_buf()];
    while let Some(path) = walk.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = meta.permissions().mode() & 0o777;
        if meta.is_dir() {
            walk.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
        if mode != if meta.is_dir() { 0o700 } else { 0o600 } {
            found.push((path.display().to_string(), mode));
        }
    }
    found
}

#[test]
fn a_memory_keeps_every_file_private_whatever_the_umask() {
    if !in_child_under_umask_022("private::a_memory_keeps_every_file_private_whatever_the_umask") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let memory = Memory::open(&dir, logical()).unwrap();
    setup(&memory);
    memory
        .session(user("alice"), agent("planner"))
        .unwrap()
        .remember(&turn("D1:1", "alice", "I keep bees on my roof."))
        .unwrap();
    memory.flush().unwrap();
    // Open, the store has its write-ahead log and shared memory beside it.
    for name in ["colmem.db-wal", "colmem.db-shm", "lock", "index"] {
        assert!(dir.join(name).exists(), "{name}");
    }
    assert_eq!(open_to_others(&dir), Vec::new());
    drop(memory);

    // SQLite makes a new -wal and -shm with the store file's mode.
    let store_path = dir.join(STORE_FILE);
    assert!(
        !dir.join("colmem.db-wal").exists(),
        "closed, the log is gone"
    );
    let store = SqliteStore::open(&store_path, StoreConfig::default()).unwrap();
    assert!(dir.join("colmem.db-wal").exists());
    assert_eq!(open_to_others(&dir), Vec::new());
    drop(store);
}

#[test]
fn an_older_directory_is_made_private_when_opened() {
    use std::os::unix::fs::PermissionsExt as _;
    if !in_child_under_umask_022("private::an_older_directory_is_made_private_when_opened") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let memory = Memory::open(&dir, logical()).unwrap();
    setup(&memory);
    memory.flush().unwrap();
    drop(memory);
    // As an older colmem left it: readable by everyone.
    let mut walk = vec![dir.clone()];
    while let Some(path) = walk.pop() {
        let is_dir = path.is_dir();
        if is_dir {
            walk.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
        let mode = if is_dir { 0o755 } else { 0o644 };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    assert!(!open_to_others(&dir).is_empty());
    let memory = Memory::open_read_only(&dir, logical()).unwrap();
    let tightened = memory.tightened().to_vec();
    assert!(tightened.contains(&dir), "{tightened:?}");
    assert!(tightened.contains(&dir.join(STORE_FILE)), "{tightened:?}");
    assert_eq!(open_to_others(&dir), Vec::new());
    drop(memory);
    let memory = Memory::open(&dir, logical()).unwrap();
    assert_eq!(
        memory.tightened(),
        &[] as &[std::path::PathBuf],
        "nothing left to tighten"
    );
}
