//! Private files through the program, under umask 022: the data directory 0700 and
//! every file in it 0600; an older directory made private when opened, and saying
//! so; backups and exports 0600, never over a file nor through a symbolic link.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use crate::Env;

/// A directory with alice served by helper, every command run under umask 022.
fn under_umask_022() -> Env {
    let mut env = Env::new();
    env.umask = Some("022");
    for args in [
        &["init"][..],
        &["principal", "add", "user", "alice"],
        &["principal", "add", "agent", "helper"],
        &["grant", "invoke", "--user", "alice", "--agent", "helper"],
    ] {
        env.ok(args);
    }
    env.alice_tells_helper("My bike lock code is 1842.");
    env
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

/// Every directory and file under `dir` (itself included) whose mode is not 0700
/// for a directory, 0600 for a file.
fn open_to_others(dir: &Path) -> Vec<(String, u32)> {
    let mut found = Vec::new();
    let mut walk = vec![dir.to_path_buf()];
    while let Some(path) = walk.pop() {
        let is_dir = std::fs::symlink_metadata(&path).unwrap().is_dir();
        if is_dir {
            walk.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
        if mode(&path) != if is_dir { 0o700 } else { 0o600 } {
            found.push((path.display().to_string(), mode(&path)));
        }
    }
    found
}

#[test]
fn the_data_directory_and_every_file_in_it_are_private() {
    let env = under_umask_022();
    for name in ["colmem.db", "colmem.toml", "lock", "index"] {
        assert!(env.dir.join(name).exists(), "{name}");
    }
    assert_eq!(open_to_others(&env.dir), Vec::new());
}

#[test]
fn an_older_directory_is_made_private_when_opened_and_says_so() {
    let env = under_umask_022();
    let mut walk = vec![env.dir.clone()];
    while let Some(path) = walk.pop() {
        let is_dir = path.is_dir();
        if is_dir {
            walk.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
        let mode = if is_dir { 0o755 } else { 0o644 };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let out = env.run(&["audit", "verify"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("private") && out.stderr.contains("colmem.db"),
        "{out:?}"
    );
    assert_eq!(open_to_others(&env.dir), Vec::new());
    let out = env.run(&["audit", "verify"]);
    assert_eq!(out.stderr, "", "nothing left to tighten");
}

#[test]
fn a_backup_is_private_and_never_written_through_a_link() {
    let env = under_umask_022();
    let copy = env.path("copy.db");
    assert!(
        env.ok(&["backup", copy.to_str().unwrap()])
            .contains("backed up")
    );
    assert_eq!(mode(&copy), 0o600);

    // A dangling link where the backup should go: refused, nothing at its target.
    let target = env.path("elsewhere.db");
    let link = env.path("link.db");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let err = env.fails(&["backup", link.to_str().unwrap()], 3);
    assert!(err.contains("never overwrites"), "{err}");
    assert!(!target.exists(), "the backup went through the link");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    // A link to an existing file: refused, the file unchanged.
    std::fs::write(&target, "mine").unwrap();
    env.fails(&["backup", link.to_str().unwrap()], 3);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");

    // The same for an export.
    std::fs::remove_file(&target).unwrap();
    let err = env.fails(&["export", "--output", link.to_str().unwrap()], 3);
    assert!(err.contains("never overwrites"), "{err}");
    assert!(!target.exists(), "the export went through the link");
    let export = env.path("export.jsonl");
    env.ok(&["export", "--output", export.to_str().unwrap()]);
    assert_eq!(mode(&export), 0o600);
    // Nothing is left beside them.
    let names: Vec<String> = std::fs::read_dir(env.path(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.starts_with(".tmp")), "{names:?}");
}
