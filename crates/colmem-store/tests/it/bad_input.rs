//! Bad files and bad values: each gives a typed error and leaves stored data as it was.

use colmem_core::ErrorKind;
use colmem_store::{Error, FragmentStore, ListQuery, Mode, SqliteStore, StoreConfig};

use super::{clock, everything, fact, interaction, open};

#[test]
fn a_file_that_is_not_a_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        (
            "notes.txt",
            b"these are my notes, not a database\n".repeat(300),
        ),
        (
            "noise.bin",
            (0..20_000u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
        ),
        ("short", b"SQL".to_vec()),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let err = SqliteStore::open(&path, StoreConfig::default()).unwrap_err();
        assert!(matches!(err, Error::NotADatabase { .. }), "{name}: {err}");
        assert_eq!(err.kind(), ErrorKind::Corrupt);
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name} was changed");
    }
}

#[test]
fn an_empty_file_is_refused_and_no_store_is_ever_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.db");
    std::fs::write(&path, b"").unwrap();
    let err = SqliteStore::open(&path, StoreConfig::default()).unwrap_err();
    assert!(matches!(err, Error::EmptyFile { .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    assert!(err.to_string().contains("remove it"), "{err}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0, "it was written");

    // A new store's file holds its first page as soon as it is opened, before any
    // write, and even if the process dies then: no store is refused as empty.
    let path = dir.path().join("new.db");
    let store = open(&path);
    assert!(std::fs::metadata(&path).unwrap().len() > 0);
    std::mem::forget(store);
    open(&path);
}

#[test]
fn a_damaged_database_gives_a_corrupt_error_and_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    {
        let store = open(&path);
        for i in 0..30 {
            store
                .write(&interaction(vec![fact(&format!(
                    "fragment {i} {}",
                    "x".repeat(500)
                ))]))
                .unwrap();
        }
    }
    // Keep the header page, scribble over every page after it.
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 3 * 4096);
    for (i, b) in bytes[4096..].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31) ^ 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();

    let outcome = SqliteStore::open(&path, StoreConfig::default()).and_then(|store| {
        store.integrity_check()?;
        store.count(&everything(), &ListQuery::default())?;
        Ok(())
    });
    let err = outcome.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the damaged file was written to"
    );
}

#[test]
fn a_read_only_store_reads_and_refuses_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let id = open(&path)
        .write(&interaction(vec![fact("read me")]))
        .unwrap()
        .ids[0];
    let before = std::fs::read(&path).unwrap();

    let store = SqliteStore::open(
        &path,
        StoreConfig {
            mode: Mode::ReadOnly,
            clock: clock(),
            ..StoreConfig::default()
        },
    )
    .unwrap();
    assert_eq!(store.get(id).unwrap().content, "read me");
    assert_eq!(
        store.count(&everything(), &ListQuery::default()).unwrap(),
        1
    );
    let refusals = [
        store.write(&interaction(vec![fact("no")])).map(drop),
        store.delete(&colmem_store::Delete {
            user: super::user(),
            agent: super::agent(),
            fragment: id,
        }),
        store.purge(&colmem_store::Purge {
            admin: "root".into(),
            fragment: id,
        }),
        store.record_reads(&[colmem_store::ReadRecord {
            user: super::user(),
            agent: super::agent(),
            returned: vec![id],
        }]),
    ];
    for r in refusals {
        let err = r.unwrap_err();
        assert!(matches!(err, Error::ReadOnly), "{err}");
        assert_eq!(err.kind(), ErrorKind::Unavailable);
    }
    assert!(matches!(
        store.verify_audit().unwrap(),
        colmem_store::AuditStatus::Intact { entries: 1, .. }
    ));
    drop(store);
    assert_eq!(std::fs::read(&path).unwrap(), before);

    // SQLite itself refuses writes through a mode=ro connection, whatever the store checks.
    let raw = rusqlite::Connection::open_with_flags(
        format!("file:{}?mode=ro", path.display()),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    let err = raw.execute("DELETE FROM fragments", []).unwrap_err();
    assert!(matches!(Error::from(err), Error::ReadOnly));
}

#[test]
fn a_full_disk_refuses_the_whole_interaction_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = SqliteStore::open(
        &path,
        StoreConfig {
            max_pages: Some(80),
            clock: clock(),
            ..StoreConfig::default()
        },
    )
    .unwrap();
    let mut written = Vec::new();
    let err = loop {
        let n = written.len();
        let batch = (0..3)
            .map(|j| fact(&format!("interaction {n} part {j} {}", "y".repeat(3000))))
            .collect();
        match store.write(&interaction(batch)) {
            Ok(receipt) => written.push(receipt.ids),
            Err(err) => break err,
        }
        assert!(written.len() < 1000, "the page limit never bit");
    };
    assert!(matches!(err, Error::Full), "{err}");
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(
        written.len() >= 3,
        "some interactions fit before the disk filled"
    );
    let listed = store.list(&everything(), &ListQuery::default()).unwrap();
    assert_eq!(
        listed.len(),
        written.len() * 3,
        "no part of the refused interaction is stored"
    );
    for (n, ids) in written.iter().enumerate() {
        for (j, id) in ids.iter().enumerate() {
            assert!(
                store
                    .get(*id)
                    .unwrap()
                    .content
                    .starts_with(&format!("interaction {n} part {j} "))
            );
        }
    }
    store.integrity_check().unwrap();
    assert!(matches!(
        store.verify_audit().unwrap(),
        colmem_store::AuditStatus::Intact { .. }
    ));
}

#[test]
fn the_value_limit_is_configurable() {
    let store = SqliteStore::open_in_memory(StoreConfig {
        max_value_bytes: 10,
        clock: clock(),
        ..StoreConfig::default()
    })
    .unwrap();
    store.write(&interaction(vec![fact("0123456789")])).unwrap();
    let err = store
        .write(&interaction(vec![fact("0123456789a")]))
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooLarge {
                len: 11,
                limit: 10,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("max_value_bytes"), "{err}");
    assert_eq!(
        store.count(&everything(), &ListQuery::default()).unwrap(),
        1
    );
}
