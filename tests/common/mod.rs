//! Test harness: a project folder in a temp dir, and the real binary run against it with a
//! private home folder (so no test reads the developer's ~/.automaton or agent configs).
#![allow(dead_code)]

use assert_cmd::Command;
use std::path::{Path, PathBuf};

pub struct Project {
    pub dir: tempfile::TempDir,
    pub home: tempfile::TempDir,
}

impl Project {
    pub fn new() -> Self {
        Project {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Write a file (parents created).
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> &Self {
        let p = self.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
        self
    }

    pub fn mkdir(&self, rel: &str) -> &Self {
        std::fs::create_dir_all(self.join(rel)).unwrap();
        self
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    /// The binary with `--project` and a private home.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_automaton"));
        c.arg("--project")
            .arg(self.path())
            .env("HOME", self.home.path())
            .env("AUTOMATON_HOME", self.home.path().join(".automaton"))
            .env_remove("AUTOMATON_AGENT")
            .env_remove("ANTHROPIC_MODEL")
            .env_remove("NO_COLOR")
            // A failed phase stops at once unless a test asks for retries
            // (`.env_remove("AUTOMATON_RETRIES")` and `- **Retries**` in config.md).
            .env("AUTOMATON_RETRIES", "0")
            .current_dir(self.path());
        c
    }

    /// `status --json`, parsed.
    pub fn status_json(&self) -> serde_json::Value {
        let out = self.cmd().args(["status", "--json"]).output().unwrap();
        assert!(
            out.status.success(),
            "status failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The state word `status --json` reports for a task path.
    pub fn state_of(&self, path: &str) -> String {
        let doc = self.status_json();
        doc["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["path"] == path)
            .unwrap_or_else(|| panic!("no task {path} in {doc:#}"))["state"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

/// The scripted test agent, as an agent command line.
pub fn agent_command() -> String {
    format!("sh {}/tests/agents/agent.sh", env!("CARGO_MANIFEST_DIR"))
}

impl Project {
    /// `orchestrate` with the scripted agent and short grace periods.
    pub fn orchestrate(&self) -> Command {
        let mut c = self.cmd();
        c.env("AUTOMATON_AGENT", agent_command())
            .env("AUTOMATON_KILL_GRACE", "300ms")
            .env("AUTOMATON_CONTRACT_GRACE", "2s")
            .env_remove("AGENT_BEHAVIOR")
            .timeout(std::time::Duration::from_secs(60))
            .arg("orchestrate");
        c
    }

    /// The same as a std Command, for runs that are signalled or killed mid-way.
    pub fn orchestrate_std(&self) -> std::process::Command {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_automaton"));
        c.arg("--project")
            .arg(self.path())
            .env("HOME", self.home.path())
            .env("AUTOMATON_HOME", self.home.path().join(".automaton"))
            .env("AUTOMATON_AGENT", agent_command())
            .env("AUTOMATON_KILL_GRACE", "300ms")
            .env("AUTOMATON_RETRIES", "0")
            .env_remove("AGENT_BEHAVIOR")
            .current_dir(self.path())
            .arg("orchestrate");
        c
    }

    /// Lines of the agent log: (task, phase).
    pub fn agent_runs(&self) -> Vec<(String, String)> {
        std::fs::read_to_string(self.join("agent.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let mut it = l.split_whitespace();
                (
                    it.next().unwrap().to_string(),
                    it.next().unwrap().to_string(),
                )
            })
            .collect()
    }
}

/// Wait until `path` exists (a scripted agent reached a point), up to `secs`.
pub fn wait_for(path: &Path, secs: u64) {
    let start = std::time::Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed().as_secs() < secs,
            "timed out waiting for {}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Whether a process is gone (or a zombie nobody reaped yet).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Wait up to `secs` for a process to be gone.
pub fn wait_gone(pid: i32, secs: u64) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed().as_secs() < secs {
        if process_gone(pid) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}
