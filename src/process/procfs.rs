//! What `/proc` says of a process, parsed in one place: a group's members (who is left after a
//! stop), a watchdog's descendants (what an agent daemonized), and a process's start time,
//! which tells a recorded pid from the same number the kernel gave to another process since.

use std::path::PathBuf;

/// The fields automaton reads from `/proc/<pid>/stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    pub pid: i32,
    /// The command name (`comm`: at most 15 bytes, may hold spaces and parentheses).
    pub name: String,
    pub parent: i32,
    pub group: i32,
    /// When it started, in clock ticks since boot.
    pub start: u64,
    /// Exited but not reaped yet (state `Z`, or `X` while it goes).
    pub zombie: bool,
}

impl Proc {
    /// The process `pid`, if it exists and can be read.
    pub fn read(pid: i32) -> Option<Proc> {
        let path = PathBuf::from(format!("/proc/{pid}/stat"));
        // A stat line is well under 4 KiB: one read (`read_to_string` would take growing
        // pieces from 32 bytes up).
        let (bytes, _) = crate::fsx::read_prefix(&path, 4096).ok()?;
        Proc::parse(pid, std::str::from_utf8(&bytes).ok()?)
    }

    /// `<pid> (<name>) <state> <ppid> <pgrp> …`, the start time being the 22nd field. The
    /// name may hold `)`, so the fields are those after the last one.
    fn parse(pid: i32, stat: &str) -> Option<Proc> {
        let (head, rest) = stat.rsplit_once(')')?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        Some(Proc {
            pid,
            name: head.split_once('(')?.1.to_string(),
            zombie: matches!(*fields.first()?, "Z" | "X"),
            parent: fields.get(1)?.parse().ok()?,
            group: fields.get(2)?.parse().ok()?,
            start: fields.get(19)?.parse().ok()?,
        })
    }

    /// Every process this one can see.
    pub fn all() -> Vec<Proc> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .filter_map(Proc::read)
            .collect()
    }

    /// Every process of group `pgid`, zombies included.
    pub fn in_group(pgid: i32) -> Vec<Proc> {
        Proc::all()
            .into_iter()
            .filter(|p| p.group == pgid)
            .collect()
    }
}

/// The start time of a process, in clock ticks since boot (this process's own is read once;
/// a forked child, whose pid differs from the one cached, reads its own).
pub fn start_time(pid: u32) -> Option<u64> {
    static MINE: std::sync::OnceLock<(u32, Option<u64>)> = std::sync::OnceLock::new();
    let read = || Some(Proc::read(i32::try_from(pid).ok()?)?.start);
    if pid == std::process::id() {
        let (cached_pid, start) = *MINE.get_or_init(|| (pid, read()));
        if cached_pid == pid {
            return start;
        }
    }
    read()
}

#[cfg(test)]
mod tests {
    use super::Proc;

    #[test]
    fn a_stat_line_is_read_after_the_last_parenthesis_of_the_name() {
        let tail = "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 4242 1 2";
        let line = format!("77 (my (odd) name) S 12 70 70 {tail}\n");
        let p = Proc::parse(77, &line).unwrap();
        assert_eq!(
            (p.name.as_str(), p.parent, p.group, p.start, p.zombie),
            ("my (odd) name", 12, 70, 4242, false)
        );
        let zombie = Proc::parse(77, &format!("77 (z) Z 12 70 70 {tail}")).unwrap();
        assert!(zombie.zombie);
        assert_eq!(Proc::parse(77, "77 (cut) S 12"), None);
        let me = Proc::read(std::process::id() as i32).unwrap();
        assert_eq!(me.start, super::start_time(std::process::id()).unwrap());
    }
}
