//! A turn longer than `[pipeline] max_turn_bytes` is refused before any work: the
//! store does not move.

use colmem::{Error, ErrorKind, Memory};

use crate::{agent, logical, setup, turn, user};

#[test]
fn a_turn_over_the_limit_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = logical();
    config.pipeline.max_turn_bytes = 2048;
    // The store would take it: the turn limit decides.
    config.store.max_value_bytes = 1 << 20;
    let memory = Memory::open(dir.path(), config).unwrap();
    setup(&memory);
    let session = memory.session(user("alice"), agent("planner")).unwrap();
    let sentence = "I walked the dog along the river. ";
    let long = sentence.repeat(2048 / sentence.len() + 1);
    let head = memory.store_head().unwrap();
    for keyed in [None, Some("k1")] {
        let err = session
            .remember_keyed(&turn("t1", "alice", &long), keyed)
            .unwrap_err();
        assert!(
            matches!(err, Error::TurnTooLong { bytes, limit: 2048 } if bytes == long.len()),
            "{err}"
        );
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains("max_turn_bytes"), "{err}");
    }
    assert!(session.remember(&turn("t1", "alice", &long)).is_err());
    assert_eq!(memory.store_head().unwrap(), head, "nothing was written");
    // At the limit, the turn is remembered.
    let fits = &long[..2048];
    assert!(
        !session
            .remember(&turn("t2", "alice", fits))
            .unwrap()
            .written
            .is_empty()
    );
}
