//! One orchestrator drives a project at a time: an flock on `.automaton/lock`.
//!
//! The lock is `File::try_lock` (flock(2) on Unix) on `<project>/.automaton/lock`. The kernel
//! drops it when the holder's process dies, even on SIGKILL, so a stale lock of a dead process
//! is simply taken over. The file is never deleted (unlinking races with a process about to open
//! it); after locking, the holder rewrites it with its pid, start time and command line so that a
//! refused second orchestrator can say who holds it. std opens files close-on-exec, so agents do
//! not inherit the lock. flock may not work on some network filesystems (NFSv4): the project must
//! be on a local filesystem; a failing flock is reported as `LockError::Io`.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Held for the life of the process (or until dropped, which releases the lock).
#[derive(Debug)]
pub struct ProjectLock {
    _file: File,
    path: PathBuf,
}

impl ProjectLock {
    /// The lock file, `<project>/.automaton/lock`.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another live process holds the lock. The fields come from the lock file and are `None`
    /// when it could not be read or parsed (e.g. the holder has locked but not yet written).
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
pub fn acquire(project: &Path) -> Result<ProjectLock, LockError> {
    let path = project.join(".automaton").join("lock");
    let io_err = |source| LockError::Io {
        path: path.clone(),
        source,
    };
    fs::create_dir_all(path.parent().unwrap_or(project)).map_err(io_err)?;
    // No truncate on open: the holder's details must survive until we own the lock.
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io_err)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            let (pid, since, command) = parse_holder(&text);
            return Err(LockError::Held {
                pid,
                since,
                command,
            });
        }
        Err(TryLockError::Error(e)) => return Err(io_err(e)),
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
    // Truncate only now that we own it; a reader racing this sees empty details, never garbage.
    file.set_len(0).map_err(io_err)?;
    file.write_all(body.as_bytes()).map_err(io_err)?;
    Ok(ProjectLock { _file: file, path })
}

/// Who holds (or last held) the lock, as the lock file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: Option<u32>,
    /// Start time, in seconds since the Unix epoch.
    pub since: Option<u64>,
    pub command: Option<String>,
}

/// Read the lock file's holder details without taking the lock (`watch`). The file outlives
/// its holder: whether that process still runs is the caller's question.
pub fn read_holder(project: &Path) -> Option<Holder> {
    let text = fs::read_to_string(project.join(".automaton").join("lock")).ok()?;
    let (pid, since, command) = parse_holder(&text);
    Some(Holder {
        pid,
        since,
        command,
    })
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
    format!("another automaton ({who}) is driving this project")
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
    fn message_names_the_holder() {
        let msg = held_message(Some(42), None, Some("automaton orchestrate"));
        assert_eq!(
            msg,
            "another automaton (pid 42: automaton orchestrate) is driving this project"
        );
        assert_eq!(ago(3725), "1h2m");
    }
}
