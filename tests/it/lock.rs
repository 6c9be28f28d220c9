//! The project lock: one holder at a time, a readable refusal, and takeover of a dead holder's
//! lock.

use automaton::store::lock::{LockError, acquire};
use std::fs;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::harness::PATIENCE;

#[test]
fn second_acquire_is_refused_until_the_first_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let lock = acquire(dir.path()).unwrap();
    assert_eq!(lock.path(), dir.path().join(".automaton/lock"));
    let text = fs::read_to_string(lock.path()).unwrap();
    assert!(
        text.contains(&format!("pid: {}\n", std::process::id())),
        "{text}"
    );

    // flock is per open file, so a second open in the same process conflicts too.
    match acquire(dir.path()) {
        Err(e @ LockError::Held { .. }) => {
            let LockError::Held { pid, since, .. } = &e else {
                unreachable!()
            };
            assert_eq!(*pid, Some(std::process::id()));
            assert!(since.is_some());
            assert_eq!(e.exit_code(), automaton::exit::LOCKED);
            let msg = e.to_string();
            assert!(
                msg.starts_with(&format!(
                    "another automaton (pid {}, started ",
                    std::process::id()
                )),
                "{msg}"
            );
            assert!(msg.ends_with(") is driving this project"), "{msg}");
        }
        other => panic!("expected Held, got {other:?}"),
    }

    drop(lock);
    // Another test thread forking a child can hold a copy of our descriptor for the instant
    // between fork and exec (close-on-exec applies only at exec), so allow a short retry.
    let start = Instant::now();
    let again = loop {
        match acquire(dir.path()) {
            Ok(l) => break l,
            Err(e) if start.elapsed() < PATIENCE => {
                let _ = e;
                thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("lock not released after drop: {e}"),
        }
    };
    // The lock file is never deleted.
    assert!(again.path().exists());
}

#[test]
fn lock_of_a_killed_holder_is_taken_over() {
    // The holder locks the project folder itself (issue 11: deleting the lock file must not
    // side-step the lock), and writes its details into .automaton/lock.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".automaton/lock");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let script = "import fcntl, os, sys, time\n\
                  f = os.open(os.path.dirname(os.path.dirname(sys.argv[1])), os.O_RDONLY)\n\
                  fcntl.flock(f, fcntl.LOCK_EX)\n\
                  open(sys.argv[1], 'w').write('pid: %d\\ncommand: fake holder\\n' % os.getpid())\n\
                  time.sleep(30)\n";
    let mut holder = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&path)
        .stdin(Stdio::null())
        .spawn()
        .expect("python3 is needed for this test");
    let expected = format!("pid: {}", holder.id());
    let t0 = Instant::now();
    while !fs::read_to_string(&path)
        .unwrap_or_default()
        .contains(&expected)
    {
        assert!(t0.elapsed() < PATIENCE, "holder never locked");
        thread::sleep(Duration::from_millis(20));
    }

    match acquire(dir.path()) {
        Err(LockError::Held { pid, command, .. }) => {
            assert_eq!(pid, Some(holder.id()));
            assert_eq!(command.as_deref(), Some("fake holder"));
        }
        other => panic!("expected Held, got {other:?}"),
    }

    holder.kill().unwrap();
    holder.wait().unwrap();
    let lock = acquire(dir.path()).expect("a dead holder's lock must be taken over");
    let text = fs::read_to_string(lock.path()).unwrap();
    assert!(
        text.starts_with(&format!("pid: {}\n", std::process::id())),
        "{text}"
    );
    assert!(
        !text.contains("fake holder"),
        "old details must be replaced: {text}"
    );
}

#[test]
fn unusable_project_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    fs::write(&file, "x").unwrap();
    match acquire(&file) {
        Err(e @ LockError::Io { .. }) => assert_eq!(e.exit_code(), automaton::exit::ERROR),
        other => panic!("expected Io, got {other:?}"),
    }
}
