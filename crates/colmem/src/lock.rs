//! The data directory's lock: an OS file lock on `dir/lock`, exclusive while a
//! [`Memory`](crate::Memory) is open for writing, so two processes never update the
//! same index files, and shared while one is open beside others that never write
//! them ([`Memory::open_shared`](crate::Memory::open_shared)).
//!
//! The lock is the operating system's (`flock` on Unix, `LockFileEx` on
//! Windows, through `std::fs::File::try_lock`): it is released when the holder
//! exits, even by a crash, so a stale lock file never blocks anyone.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// The lock file's name inside the data directory.
pub const LOCK_FILE: &str = "lock";

/// A lock on a data directory, released on drop.
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes the lock on `dir`, exclusive or `shared` with other shared holders
    /// (an exclusive one excludes all others), trying again for up to `wait` while
    /// another process (or another open memory in this one) holds it; then
    /// [`Error::Locked`].
    pub(crate) fn acquire(dir: &Path, shared: bool, wait: Duration) -> Result<DirLock> {
        let deadline = Instant::now() + wait;
        let mut pause = Duration::from_millis(10);
        loop {
            match DirLock::take(dir, shared) {
                Err(Error::Locked { .. }) if Instant::now() + pause <= deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                taken => return taken,
            }
        }
    }

    /// One try at the lock.
    fn take(dir: &Path, shared: bool) -> Result<DirLock> {
        let path = dir.join(LOCK_FILE);
        let io = |source| Error::Io {
            what: "cannot open the lock file",
            path: path.clone(),
            source,
        };
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            // Its owner's only, as every file of the directory.
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let mut file = options.open(&path).map_err(io)?;
        let taken = if shared {
            file.try_lock_shared()
        } else {
            file.try_lock()
        };
        match taken {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(Error::Locked {
                    dir: dir.to_path_buf(),
                    holder: holder(&mut file),
                });
            }
            Err(TryLockError::Error(source)) => return Err(io(source)),
        }
        // Say who holds it, for the error another process will print: in one write
        // of a fixed width over what was there, so no reader finds it empty.
        let pid = std::process::id();
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.write_all(format!("{pid:<20}\n").as_bytes()))
            .map_err(io)?;
        Ok(DirLock { _file: file })
    }
}

/// ` (pid N)` from a lock file the holder wrote its pid into, else empty.
fn holder(file: &mut File) -> String {
    let mut text = String::new();
    match file.read_to_string(&mut text) {
        Ok(_) => match text.trim().parse::<u32>() {
            Ok(pid) => format!(" (pid {pid})"),
            Err(_) => String::new(),
        },
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path(), false, Duration::ZERO).unwrap();
        let err = DirLock::acquire(dir.path(), false, Duration::ZERO).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::Locked { .. }), "{text}");
        assert!(
            text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
        assert!(dir.path().join(LOCK_FILE).exists());
        drop(first);
        assert!(DirLock::acquire(dir.path(), false, Duration::ZERO).is_ok());
    }

    #[test]
    fn a_taker_waits_its_time_for_the_holder_to_let_go() {
        let dir = tempfile::tempdir().unwrap();
        let held = DirLock::acquire(dir.path(), false, Duration::ZERO).unwrap();
        // Shared holders exclude the exclusive taker, and an exclusive holder them.
        let err = DirLock::acquire(dir.path(), true, Duration::from_millis(50)).unwrap_err();
        assert!(matches!(err, Error::Locked { .. }), "{err}");
        let letting_go = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(held);
        });
        let began = Instant::now();
        let shared = DirLock::acquire(dir.path(), true, Duration::from_secs(10)).unwrap();
        assert!(began.elapsed() >= Duration::from_millis(250));
        letting_go.join().unwrap();
        let also = DirLock::acquire(dir.path(), true, Duration::ZERO).unwrap();
        let err = DirLock::acquire(dir.path(), false, Duration::ZERO).unwrap_err();
        assert!(matches!(err, Error::Locked { .. }), "{err}");
        drop((shared, also));
        assert!(DirLock::acquire(dir.path(), false, Duration::ZERO).is_ok());
    }
}
