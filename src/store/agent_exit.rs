//! `logs/<phase>-<n>.exit`, beside the phase's log: how its agent ended. The watchdog
//! ([`crate::process::shim`]) writes it the moment the agent exits, whether or not automaton
//! is still there to see it, so a run killed between the agent's end and the judging of its
//! work does not cost the phase again: the next run judges the artifact the agent left.
//!
//! One line: `v1 <wait status> <boot id>`. The wait status is the raw one `waitpid` gave. The
//! boot id (`/proc/sys/kernel/random/boot_id`) tells a record made on this boot, when the page
//! cache still holds everything the agent wrote, from one made before a reboot (a power cut
//! may have lost the agent's last writes, which nothing fsynced): only the first is trusted.
//! Written in one `write`, not fsynced; a torn or unknown record reads as nothing.

use std::io;
use std::path::{Path, PathBuf};

/// How a phase's agent ended, as its watchdog saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitRecord {
    /// The raw wait status.
    pub status: i32,
    /// The boot it was made on.
    pub boot: String,
}

impl ExitRecord {
    /// The record beside a phase's log (`research-1.log` → `research-1.exit`).
    pub fn path_for(log: &Path) -> PathBuf {
        log.with_extension("exit")
    }

    /// A record of `status` on this boot; `None` where the boot id cannot be read.
    pub fn now(status: i32) -> Option<ExitRecord> {
        boot_id().map(|boot| ExitRecord { status, boot })
    }

    pub fn render(&self) -> String {
        format!("v1 {} {}\n", self.status, self.boot)
    }

    pub fn parse(text: &str) -> Option<ExitRecord> {
        let mut words = text.split_whitespace();
        if words.next()? != "v1" {
            return None;
        }
        let status = words.next()?.parse().ok()?;
        let boot = words.next()?.to_string();
        words
            .next()
            .is_none()
            .then_some(ExitRecord { status, boot })
    }

    pub fn write(&self, path: &Path) -> io::Result<()> {
        std::fs::write(path, self.render())
    }

    pub fn read(path: &Path) -> Option<ExitRecord> {
        Self::parse(&crate::fsx::read_to_string(path).ok()?)
    }

    /// Whether the agent exited with status 0, on this boot.
    pub fn succeeded_this_boot(&self) -> bool {
        libc::WIFEXITED(self.status)
            && libc::WEXITSTATUS(self.status) == 0
            && boot_id().is_some_and(|b| b == self.boot)
    }
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_only_a_success_of_this_boot_counts() {
        let ok = ExitRecord::now(0).expect("a boot id on Linux");
        assert_eq!(ExitRecord::parse(&ok.render()), Some(ok.clone()));
        assert!(ok.succeeded_this_boot());
        assert!(
            !ExitRecord::now(1 << 8).unwrap().succeeded_this_boot(),
            "exit 1"
        );
        assert!(!ExitRecord::now(9).unwrap().succeeded_this_boot(), "killed");
        let before_a_reboot = ExitRecord {
            status: 0,
            boot: "another-boot".into(),
        };
        assert!(!before_a_reboot.succeeded_this_boot());
        for torn in ["", "v1", "v1 0", "v2 0 x", "v1 x y", "v1 0 b extra"] {
            assert_eq!(ExitRecord::parse(torn), None, "{torn:?}");
        }
        assert_eq!(
            ExitRecord::path_for(Path::new("/t/logs/research-2.log")),
            Path::new("/t/logs/research-2.exit")
        );
    }
}
