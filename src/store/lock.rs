//! One orchestrator drives a project at a time: an flock on the project folder itself, with
//! the holder's details in `.automaton/lock` (see [`acquire`]).
//!
//! The lock is `File::try_lock` (flock(2) on Unix) on a descriptor of `<project>`. The kernel
//! drops it when the holder's process dies, even on SIGKILL, so a stale lock of a dead process
//! is simply taken over. The file is never deleted (unlinking races with a process about to open
//! it); after locking, the holder rewrites it with its pid, start time and command line so that a
//! refused second orchestrator can say who holds it. std opens files close-on-exec, so agents do
//! not inherit the lock. flock may not work on some network filesystems (NFSv4): the project must
//! be on a local filesystem; a failing flock is reported as `LockError::Io`.

use std::fs::{self, File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Held for the life of the process (or until dropped, which releases the lock).
#[derive(Debug)]
pub struct ProjectLock {
    _dir: File,
    path: PathBuf,
}

impl ProjectLock {
    /// The holder file, `<project>/.automaton/lock`.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another live process holds the lock. The fields come from the holder file, or from the
    /// kernel's lock table when that file is missing or names someone else.
    #[error("{}", held_message(*pid, *since, command.as_deref()))]
    Held {
        pid: Option<u32>,
        /// Start time of the holder, in seconds since the Unix epoch.
        since: Option<u64>,
        command: Option<String>,
    },
    #[error("cannot lock {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

impl LockError {
    /// The documented exit code: [`crate::exit::LOCKED`] (75) for `Held`, else `ERROR`.
    pub fn exit_code(&self) -> u8 {
        match self {
            LockError::Held { .. } => crate::exit::LOCKED,
            LockError::Io { .. } => crate::exit::ERROR,
        }
    }
}

/// Take the project lock, or say who holds it. Never blocks.
///
/// The flock is on the project folder itself (a directory descriptor), not on a file in it:
/// deleting `.automaton/lock` (`git clean -fdX`) or all of `.automaton/` cannot side-step it.
/// The holder then writes `.automaton/lock` (atomically) with its pid, start time and command
/// line. A refused process reads that file; when it is missing, not written yet, or names a
/// process that does not hold the lock, the holder's pid comes from the kernel's lock table
/// (`/proc/locks`), so the message always names a pid.
pub fn acquire(project: &Path) -> Result<ProjectLock, LockError> {
    let path = project.join(".automaton").join("lock");
    let io_err = |p: &Path, source| LockError::Io {
        path: p.to_path_buf(),
        source,
    };
    let dir = File::open(project).map_err(|e| io_err(project, e))?;
    match dir.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Err(holder(project, &dir, &path)),
        Err(TryLockError::Error(e)) => return Err(io_err(project, e)),
    }
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let command = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let body = format!(
        "pid: {}\nstarted: {since}\ncommand: {}\n",
        std::process::id(),
        command.replace('\n', " ")
    );
    fs::create_dir_all(path.parent().unwrap_or(project)).map_err(|e| io_err(&path, e))?;
    // Who holds the lock, for the message of a second writer: no process survives a power
    // cut, so there is nothing to keep.
    crate::fsx::write_rebuildable(&path, body.as_bytes()).map_err(|e| io_err(&path, e))?;
    Ok(ProjectLock { _dir: dir, path })
}

/// Who holds the lock on `project`: the holder file when the kernel agrees, else the kernel.
fn holder(project: &Path, dir: &File, path: &Path) -> LockError {
    // The holder file is not read yet (see below): only a lock the kernel table names with
    // this very device counts here.
    let kernel = kernel_holder(dir, || None);
    // The holder writes its file just after locking: give it a moment.
    for _ in 0..20 {
        let text = crate::fsx::read_prefix(path, 4096)
            .map(|(b, _)| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let (pid, since, command) = parse_holder(&text);
        if pid.is_some() && (kernel.is_none() || pid == kernel) {
            return LockError::Held {
                pid,
                since,
                command,
            };
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = project;
    let command = kernel.and_then(|p| {
        crate::fsx::read(format!("/proc/{p}/cmdline"))
            .ok()
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .split('\0')
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|c| !c.is_empty())
    });
    LockError::Held {
        pid: kernel,
        since: None,
        command,
    }
}

/// The pid holding an flock on the file `dir` is open on, from `/proc/locks`
/// (`1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF`). The table names the file system's own
/// device, which is not the one `stat` gives on btrfs (a subvolume has a device number of its
/// own): there, a lock on the same inode held by `expected` (the pid the holder file names,
/// asked only then) is the one, once that process is seen to hold this very folder open.
fn kernel_holder(dir: &File, expected: impl FnOnce() -> Option<u32>) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let meta = dir.metadata().ok()?;
    let (dev, ino) = (meta.dev(), meta.ino());
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let table = crate::fsx::read_to_string("/proc/locks").ok()?;
    match holder_in_table(&table, (major, minor), ino, expected)? {
        Found::OnThisDevice(pid) => Some(pid),
        Found::SameInode(pid) => holds_open(pid, dev, ino).then_some(pid),
    }
}

/// A lock of [`holder_in_table`]'s finding.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    OnThisDevice(u32),
    /// On another device number, held by the pid expected.
    SameInode(u32),
}

/// [`kernel_holder`] in the text of `/proc/locks`.
fn holder_in_table(
    table: &str,
    (major, minor): (u32, u32),
    ino: u64,
    expected: impl FnOnce() -> Option<u32>,
) -> Option<Found> {
    let (mut expected, mut wanted) = (Some(expected), None);
    let mut same_inode = None;
    for line in table.lines() {
        let Some((pid, maj, min)) = flock_on(line, ino) else {
            continue;
        };
        if maj == major && min == minor {
            return Some(Found::OnThisDevice(pid));
        }
        // Asked once, at the first lock on this inode elsewhere: where there is none (no
        // run, or any file system but btrfs), the holder file is not read.
        let want = *wanted.get_or_insert_with(|| expected.take().and_then(|f| f()));
        if same_inode.is_none() && Some(pid) == want {
            same_inode = Some(Found::SameInode(pid));
        }
    }
    same_inode
}

/// Whether process `pid` has the file `(dev, ino)` open (one of `/proc/<pid>/fd`).
fn holds_open(pid: u32, dev: u64, ino: u64) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| fs::metadata(fd.path()).is_ok_and(|m| m.dev() == dev && m.ino() == ino))
}

/// The pid and device of a `/proc/locks` line that is an flock on inode `ino`.
fn flock_on(line: &str, ino: u64) -> Option<(u32, u32, u32)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let (kind, pid, id) = (f.get(1)?, f.get(4)?, f.get(5)?);
    let mut parts = id.split(':');
    let maj = u32::from_str_radix(parts.next()?, 16).ok()?;
    let min = u32::from_str_radix(parts.next()?, 16).ok()?;
    let i: u64 = parts.next()?.parse().ok()?;
    (*kind == "FLOCK" && i == ino).then_some((pid.parse().ok()?, maj, min))
}

/// Who holds (or last held) the lock, as the lock file says.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Holder {
    pub pid: Option<u32>,
    /// Start time, in seconds since the Unix epoch.
    pub since: Option<u64>,
    pub command: Option<String>,
}

/// Read the lock file's holder details. The file outlives its holder: whether that process
/// still holds the lock is [`holding`]'s question.
fn read_holder(project: &Path) -> Option<Holder> {
    let text = fs::read_to_string(project.join(".automaton").join("lock")).ok()?;
    let (pid, since, command) = parse_holder(&text);
    Some(Holder {
        pid,
        since,
        command,
    })
}

/// Who holds the lock on `project` now, without taking it (`status`): the kernel's lock table
/// says whether anyone does, the holder file who (when it names the same process; on btrfs,
/// where the table's device number is not `stat`'s, it also says which lock is this one).
pub fn holding(project: &Path) -> Option<Holder> {
    let mut file = None;
    let kernel = kernel_holder(&File::open(project).ok()?, || {
        file = read_holder(project);
        file.as_ref().and_then(|h| h.pid)
    })?;
    let file = file.or_else(|| read_holder(project));
    Some(file.filter(|h| h.pid == Some(kernel)).unwrap_or(Holder {
        pid: Some(kernel),
        since: None,
        command: None,
    }))
}

impl Holder {
    /// `pid 42, started 3m ago: automaton orchestrate x`.
    pub fn describe(&self) -> String {
        held_who(self.pid, self.since, self.command.as_deref())
    }
}

/// Parse `pid: N`, `started: SECS`, `command: ...` lines; a bare number is taken as the pid.
fn parse_holder(text: &str) -> (Option<u32>, Option<u64>, Option<String>) {
    let (mut pid, mut since, mut command) = (None, None, None);
    for line in text.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("pid:") {
            pid = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("started:") {
            since = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("command:") {
            command = Some(v.trim().to_string()).filter(|c| !c.is_empty());
        } else if pid.is_none() {
            pid = line.parse().ok();
        }
    }
    (pid, since, command)
}

fn held_message(pid: Option<u32>, since: Option<u64>, command: Option<&str>) -> String {
    format!(
        "another automaton ({}) is driving this project",
        held_who(pid, since, command)
    )
}

fn held_who(pid: Option<u32>, since: Option<u64>, command: Option<&str>) -> String {
    let mut who = match pid {
        Some(p) => format!("pid {p}"),
        None => "pid unknown".to_string(),
    };
    if let Some(s) = since {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        who.push_str(&format!(", started {} ago", ago(now.saturating_sub(s))));
    }
    if let Some(c) = command {
        who.push_str(": ");
        who.push_str(c);
    }
    who
}

/// "42s", "5m", "3h12m", "2d4h".
fn ago(d: u64) -> String {
    match d {
        0..60 => format!("{d}s"),
        60..3600 => format!("{}m", d / 60),
        3600..86400 => format!("{}h{}m", d / 3600, d / 60 % 60),
        _ => format!("{}d{}h", d / 86400, d / 3600 % 24),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_holder_details() {
        let (pid, since, cmd) = parse_holder("pid: 42\nstarted: 100\ncommand: automaton go\n");
        assert_eq!(
            (pid, since, cmd.as_deref()),
            (Some(42), Some(100), Some("automaton go"))
        );
        assert_eq!(parse_holder("77").0, Some(77));
        assert_eq!(parse_holder(""), (None, None, None));
    }

    #[test]
    fn the_lock_table_names_the_holder_on_this_device_or_the_expected_pid() {
        let table = "1: POSIX  ADVISORY  WRITE 7 08:01:5678 0 EOF\n\
                     2: FLOCK  ADVISORY  WRITE 42 00:2f:5678 0 EOF\n\
                     3: FLOCK  ADVISORY  WRITE 43 08:01:9999 0 EOF\n";
        // The same device and inode: its pid, whatever the holder file says.
        assert_eq!(
            holder_in_table(table, (0, 0x2f), 5678, || None),
            Some(Found::OnThisDevice(42))
        );
        // Another device number (a btrfs subvolume's): only the pid the holder file names,
        // to be confirmed.
        assert_eq!(
            holder_in_table(table, (8, 1), 5678, || Some(42)),
            Some(Found::SameInode(42))
        );
        assert_eq!(holder_in_table(table, (8, 1), 5678, || Some(41)), None);
        assert_eq!(holder_in_table(table, (8, 1), 5678, || None), None);
        // Confirmed by the folder being open in that process: this one holds its own open.
        let dir = tempfile::tempdir().unwrap();
        let open = File::open(dir.path()).unwrap();
        let (dev, ino) = {
            use std::os::unix::fs::MetadataExt;
            let m = open.metadata().unwrap();
            (m.dev(), m.ino())
        };
        assert!(holds_open(std::process::id(), dev, ino));
        drop(open);
        assert!(!holds_open(std::process::id(), dev, ino));
    }

    #[test]
    fn message_names_the_holder() {
        let msg = held_message(Some(42), None, Some("automaton orchestrate"));
        assert_eq!(
            msg,
            "another automaton (pid 42: automaton orchestrate) is driving this project"
        );
        assert_eq!(ago(3725), "1h2m");
    }
}
