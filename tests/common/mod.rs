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
