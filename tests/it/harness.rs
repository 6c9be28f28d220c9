//! The one test harness: a fixture project in a temp dir (with a private home folder, so no test
//! reads the developer's ~/.automaton or agent configs), and the `Test` builder that runs the
//! real binary against it and checks exit code, stdout and stderr, exactly unless told otherwise.
//!
//! Output is normalised before it is checked: the project folder reads `[PROJECT]`, the home
//! folder `[HOME]`, this repository `[REPO]`, and durations such as `(0.3s` read `([ELAPSED]`.

// A toolkit: not every helper is used by every area at every moment.
#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

/// Where the scripted agents and fixtures live.
pub const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// A bound no loaded machine comes near: long enough to never flake, short enough that a hung
/// child fails the test instead of the whole run. Use it for waits, never as a speed claim.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The phases of a full lifecycle with the default phase settings.
pub const LIFECYCLE_PHASES: [&str; 8] = [
    "research",
    "design",
    "test_design",
    "implement",
    "bug_find",
    "adversarial_bug_find",
    "doc_review",
    "referee",
];

struct Dirs {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
}

/// The fixture project. Cheap to clone: clones share one folder, removed with the last one.
#[derive(Clone)]
pub struct Project(Rc<Dirs>);

impl Default for Project {
    fn default() -> Self {
        Self::new()
    }
}

impl Project {
    pub fn new() -> Self {
        Project(Rc::new(Dirs {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }))
    }

    pub fn path(&self) -> &Path {
        self.0.dir.path()
    }

    pub fn home(&self) -> &Path {
        self.0.home.path()
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.path().join(rel)
    }

    /// Write a file (parents created).
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> &Self {
        write_file(&self.join(rel), content.as_ref());
        self
    }

    /// Write a file under the private home folder.
    pub fn write_home(&self, rel: &str, content: impl AsRef<[u8]>) -> &Self {
        write_file(&self.home().join(rel), content.as_ref());
        self
    }

    pub fn mkdir(&self, rel: &str) -> &Self {
        std::fs::create_dir_all(self.join(rel)).unwrap();
        self
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    /// Wait for a pid file (written by a scripted agent) to hold a pid, and return it.
    pub fn wait_pid(&self, rel: &str) -> i32 {
        let start = std::time::Instant::now();
        loop {
            if let Ok(text) = std::fs::read_to_string(self.join(rel))
                && let Ok(pid) = text.trim().parse()
            {
                return pid;
            }
            assert!(start.elapsed() < PATIENCE, "{rel} never held a pid");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A new run against this project (exit 0 and empty output expected until told otherwise).
    pub fn test(&self) -> Test {
        Test::with_project(self.clone())
    }

    /// `orchestrate` with the scripted agent (tests/agents/agent.sh) and short grace periods.
    pub fn orchestrate(&self) -> Test {
        self.test()
            .env("AUTOMATON_AGENT", agent_command())
            .env("AUTOMATON_KILL_GRACE", "300ms")
            .env("AUTOMATON_CONTRACT_GRACE", "2s")
            .env_remove("AGENT_BEHAVIOR")
            .arg("orchestrate")
    }

    /// The binary as an `assert_cmd::Command` with `--project` and the private home, for the
    /// areas that check output with `predicates` (prefer `test()`, which checks it exactly).
    pub fn cmd(&self) -> assert_cmd::Command {
        let mut c = assert_cmd::Command::new(env!("CARGO_BIN_EXE_automaton"));
        c.arg("--project").arg(self.path());
        for (k, v) in base_env(self) {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c.current_dir(self.path()).timeout(PATIENCE);
        c
    }

    /// `orchestrate` with the scripted agent and short grace periods, as an
    /// `assert_cmd::Command` (see `cmd`; prefer `orchestrate()`).
    pub fn orchestrate_cmd(&self) -> assert_cmd::Command {
        let mut c = self.cmd();
        c.env("AUTOMATON_AGENT", agent_command())
            .env("AUTOMATON_KILL_GRACE", "300ms")
            .env("AUTOMATON_CONTRACT_GRACE", "2s")
            .env_remove("AGENT_BEHAVIOR")
            .arg("orchestrate");
        c
    }

    /// The binary as a std Command with `--project` and the private home, for runs that are
    /// spawned and then signalled or killed mid-way.
    pub fn command(&self) -> std::process::Command {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_automaton"));
        c.arg("--project").arg(self.path());
        for (k, v) in base_env(self) {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c.current_dir(self.path());
        c
    }

    /// `orchestrate` with the scripted agent, as a std Command to spawn.
    pub fn orchestrate_std(&self) -> std::process::Command {
        let mut c = self.command();
        c.env("AUTOMATON_AGENT", agent_command())
            .env("AUTOMATON_KILL_GRACE", "300ms")
            .env_remove("AGENT_BEHAVIOR")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .arg("orchestrate");
        c
    }

    /// `status --json`, parsed.
    pub fn status_json(&self) -> serde_json::Value {
        self.test()
            .args(["status", "--json"])
            .stdout_any()
            .run()
            .json()
    }

    /// `status` (text), normalised.
    pub fn status_text(&self) -> String {
        self.test().arg("status").stdout_any().run().stdout
    }

    /// The task `status --json` reports at `path`.
    pub fn task_json(&self, path: &str) -> serde_json::Value {
        task_of(&self.status_json(), path).clone()
    }

    /// The state word `status --json` reports for a task path.
    pub fn state_of(&self, path: &str) -> String {
        self.task_json(path)["state"].as_str().unwrap().to_string()
    }

    /// The runs the scripted agent recorded in `agent.log` (see `Test::agent_log`).
    pub fn records(&self) -> Vec<Rec> {
        std::fs::read_to_string(self.join("agent.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                assert_eq!(f.len(), 4, "bad agent log line {l:?}");
                Rec {
                    task: f[0].to_string(),
                    phase: f[1].to_string(),
                    start: f[2].parse().unwrap(),
                    end: f[3].parse().unwrap(),
                }
            })
            .collect()
    }

    /// (task, phase) of each recorded agent run.
    pub fn agent_runs(&self) -> Vec<(String, String)> {
        self.records()
            .into_iter()
            .map(|r| (r.task, r.phase))
            .collect()
    }

    /// The phases the agent ran, in order.
    pub fn phases_run(&self) -> Vec<String> {
        self.records().into_iter().map(|r| r.phase).collect()
    }

    /// Replace this project's paths (and the repository's) in `text` with placeholders.
    pub fn normalize(&self, text: &str) -> String {
        let mut s = text.to_string();
        for (dir, name) in [
            (self.home().to_path_buf(), "[HOME]"),
            (self.path().to_path_buf(), "[PROJECT]"),
            (PathBuf::from(REPO), "[REPO]"),
        ] {
            if let Ok(canon) = dir.canonicalize()
                && canon != dir
            {
                s = s.replace(&canon.display().to_string(), name);
            }
            s = s.replace(&dir.display().to_string(), name);
        }
        elapsed_re().replace_all(&s, "[ELAPSED]").into_owned()
    }
}

fn elapsed_re() -> &'static regex::Regex {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| regex::Regex::new(r"\b\d+\.\d+s\b").unwrap())
}

fn write_file(path: &Path, content: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// The environment every run starts from: a private home, nothing of the developer's agent or
/// model settings, and no retries: a failed phase stops at once unless a test asks for retries
/// (`.env_remove("AUTOMATON_RETRIES")` and `- **Retries**` in config.md).
fn base_env(p: &Project) -> Vec<(OsString, Option<OsString>)> {
    let mut env = vec![
        ("HOME".into(), Some(p.home().into())),
        (
            "AUTOMATON_HOME".into(),
            Some(p.home().join(".automaton").into()),
        ),
        ("AUTOMATON_RETRIES".into(), Some("0".into())),
    ];
    for k in [
        "AUTOMATON_AGENT",
        "AUTOMATON_VRAM_SCRIPT_TIMEOUT",
        "ANTHROPIC_MODEL",
        "OPENAI_MODEL",
        "GEMINI_MODEL",
        "AIDER_MODEL",
        "OLLAMA_HOST",
        "NO_COLOR",
        "AGENT_LOG",
        "COLUMNS",
        "LINES",
    ] {
        env.push((k.into(), None));
    }
    env
}

/// A finished command's stdout then stderr, as text (for assertions and their messages).
pub fn output_text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// One task of a `status --json` document.
pub fn task_of<'a>(doc: &'a serde_json::Value, path: &str) -> &'a serde_json::Value {
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["path"] == path)
        .unwrap_or_else(|| panic!("no task {path} in {doc:#}"))
}

/// The scripted test agent, as an agent command line.
pub fn agent_command() -> String {
    format!("sh {REPO}/tests/agents/agent.sh")
}

/// A recorded fixture of tests/fixtures/.
pub fn fixture_path(rel: &str) -> String {
    format!("{REPO}/tests/fixtures/{rel}")
}

/// One run the scripted agent recorded: (task, phase, start ns, end ns).
#[derive(Debug, Clone)]
pub struct Rec {
    pub task: String,
    pub phase: String,
    pub start: u128,
    pub end: u128,
}

/// What a stream must hold.
#[derive(Debug, Clone)]
enum Expect {
    Exact(String),
    /// Each check must hold; an empty list accepts anything.
    Checks(Vec<Check>),
}

#[derive(Debug, Clone)]
enum Check {
    Contains(String),
    Lacks(String),
    Regex(regex::Regex),
    EndsWith(String),
}

impl Expect {
    fn push(&mut self, check: Check) {
        match self {
            Expect::Checks(list) => list.push(check),
            Expect::Exact(_) => *self = Expect::Checks(vec![check]),
        }
    }

    fn failures(&self, actual: &str) -> Vec<String> {
        match self {
            Expect::Exact(want) if want == actual => vec![],
            Expect::Exact(want) => vec![format!(
                "expected exactly:\n{want}\n--- diff (-want +got):\n{}",
                diff(want, actual)
            )],
            Expect::Checks(list) => list
                .iter()
                .filter_map(|c| match c {
                    Check::Contains(s) if !actual.contains(s.as_str()) => {
                        Some(format!("does not contain {s:?}"))
                    }
                    Check::Lacks(s) if actual.contains(s.as_str()) => {
                        Some(format!("contains {s:?}"))
                    }
                    Check::Regex(r) if !r.is_match(actual) => Some(format!("does not match /{r}/")),
                    Check::EndsWith(s) if !actual.ends_with(s.as_str()) => {
                        Some(format!("does not end with {s:?}"))
                    }
                    _ => None,
                })
                .collect(),
        }
    }
}

fn diff(want: &str, got: &str) -> String {
    similar::TextDiff::from_lines(want, got)
        .unified_diff()
        .context_radius(3)
        .to_string()
}

/// A run of the binary against a fixture project, in the style of just's `Test`:
/// `Test::new().write(..).args([..]).status(n).stdout("..").run()`.
#[must_use = "a Test does nothing until .run()"]
pub struct Test {
    project: Project,
    args: Vec<OsString>,
    env: Vec<(OsString, Option<OsString>)>,
    stdin: Vec<u8>,
    status: Option<i32>,
    stdout: Expect,
    stderr: Expect,
    timeout: Duration,
    project_flag: bool,
}

impl Default for Test {
    fn default() -> Self {
        Self::new()
    }
}

impl Test {
    /// A fresh, empty project.
    pub fn new() -> Self {
        Self::with_project(Project::new())
    }

    pub fn with_project(project: Project) -> Self {
        Test {
            project,
            args: Vec::new(),
            env: Vec::new(),
            stdin: Vec::new(),
            status: Some(0),
            stdout: Expect::Exact(String::new()),
            stderr: Expect::Exact(String::new()),
            timeout: PATIENCE,
            project_flag: true,
        }
    }

    pub fn project(&self) -> &Project {
        &self.project
    }

    // --- the fixture ---

    pub fn write(self, rel: &str, content: impl AsRef<[u8]>) -> Self {
        self.project.write(rel, content);
        self
    }

    pub fn write_home(self, rel: &str, content: impl AsRef<[u8]>) -> Self {
        self.project.write_home(rel, content);
        self
    }

    pub fn mkdir(self, rel: &str) -> Self {
        self.project.mkdir(rel);
        self
    }

    /// `.automaton/config.md`.
    pub fn config(self, text: &str) -> Self {
        self.write(".automaton/config.md", text)
    }

    /// `.automaton/.agent.md`.
    pub fn agent_md(self, text: &str) -> Self {
        self.write(".automaton/.agent.md", text)
    }

    /// Every artifact of `artifacts` in the task folder `task`, with `content`.
    pub fn task(self, task: &str, artifacts: &[(&str, &str)]) -> Self {
        self.project.mkdir(task);
        for (name, content) in artifacts {
            self.project.write(&format!("{task}/{name}"), content);
        }
        self
    }

    // --- the command ---

    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), Some(value.into())));
        self
    }

    /// [`Test::env`] for each pair.
    pub fn envs(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Self {
        for (k, v) in vars {
            self = self.env(k, v);
        }
        self
    }

    pub fn env_remove(mut self, key: impl Into<OsString>) -> Self {
        self.env.push((key.into(), None));
        self
    }

    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Self {
        self.stdin = input.into();
        self
    }

    /// Leave out the `--project <tmp>` the run otherwise starts with (the test names its own).
    pub fn no_project_flag(mut self) -> Self {
        self.project_flag = false;
        self
    }

    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = limit;
        self
    }

    /// The scripted agent's behaviour list (AGENT_BEHAVIOR; see tests/agents/agent.sh).
    pub fn behavior(self, list: &str) -> Self {
        self.env("AGENT_BEHAVIOR", list)
    }

    /// Have the scripted agent record its runs in `agent.log` (see `Project::records`).
    pub fn agent_log(self) -> Self {
        let log = self.project.join("agent.log");
        self.env("AGENT_LOG", log)
    }

    // --- the expectations ---

    pub fn status(mut self, code: i32) -> Self {
        self.status = Some(code);
        self
    }

    /// Stdout, exactly (after normalisation).
    pub fn stdout(mut self, text: impl Into<String>) -> Self {
        self.stdout = Expect::Exact(text.into());
        self
    }

    /// Stderr, exactly (after normalisation).
    pub fn stderr(mut self, text: impl Into<String>) -> Self {
        self.stderr = Expect::Exact(text.into());
        self
    }

    /// Opt-out of the exact check: stdout holds `part` (may be repeated).
    pub fn stdout_contains(mut self, part: impl Into<String>) -> Self {
        self.stdout.push(Check::Contains(part.into()));
        self
    }

    pub fn stdout_lacks(mut self, part: impl Into<String>) -> Self {
        self.stdout.push(Check::Lacks(part.into()));
        self
    }

    pub fn stdout_ends_with(mut self, part: impl Into<String>) -> Self {
        self.stdout.push(Check::EndsWith(part.into()));
        self
    }

    pub fn stdout_regex(mut self, re: &str) -> Self {
        self.stdout
            .push(Check::Regex(regex::Regex::new(re).unwrap()));
        self
    }

    /// No check of stdout (the test reads `Ran::stdout` itself, or snapshots it).
    pub fn stdout_any(mut self) -> Self {
        self.stdout = Expect::Checks(vec![]);
        self
    }

    pub fn stderr_contains(mut self, part: impl Into<String>) -> Self {
        self.stderr.push(Check::Contains(part.into()));
        self
    }

    pub fn stderr_lacks(mut self, part: impl Into<String>) -> Self {
        self.stderr.push(Check::Lacks(part.into()));
        self
    }

    pub fn stderr_ends_with(mut self, part: impl Into<String>) -> Self {
        self.stderr.push(Check::EndsWith(part.into()));
        self
    }

    pub fn stderr_regex(mut self, re: &str) -> Self {
        self.stderr
            .push(Check::Regex(regex::Regex::new(re).unwrap()));
        self
    }

    pub fn stderr_any(mut self) -> Self {
        self.stderr = Expect::Checks(vec![]);
        self
    }

    /// No check of the exit status (the test reads `Ran::code` itself).
    pub fn status_any(mut self) -> Self {
        self.status = None;
        self
    }

    /// Run it, check everything, and hand back the project and the (normalised) output.
    #[track_caller]
    pub fn run(self) -> Ran {
        let mut cmd = assert_cmd::Command::new(env!("CARGO_BIN_EXE_automaton"));
        if self.project_flag {
            cmd.arg("--project").arg(self.project.path());
        }
        for (k, v) in base_env(&self.project).into_iter().chain(self.env) {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd.args(&self.args)
            .current_dir(self.project.path())
            .write_stdin(self.stdin)
            .timeout(self.timeout);
        let out = cmd.output().expect("run automaton");
        let raw_stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stdout = self.project.normalize(&raw_stdout);
        let stderr = self
            .project
            .normalize(&String::from_utf8_lossy(&out.stderr));
        let code = out.status.code();
        if std::env::var_os("HARNESS_DUMP").is_some() {
            eprintln!(
                "=== automaton {:?} -> {code:?}\n--- stdout:\n{stdout}--- stderr:\n{stderr}=== end",
                self.args
            );
        }
        let mut failures = Vec::new();
        if let Some(want) = self.status
            && code != Some(want)
        {
            failures.push(format!(
                "exit status: expected {want}, got {:?}",
                out.status
            ));
        }
        for f in self.stdout.failures(&stdout) {
            failures.push(format!("stdout {f}"));
        }
        for f in self.stderr.failures(&stderr) {
            failures.push(format!("stderr {f}"));
        }
        if !failures.is_empty() {
            panic!(
                "automaton {:?}\n{}\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}",
                self.args,
                failures.join("\n")
            );
        }
        Ran {
            project: self.project,
            code,
            stdout,
            raw_stdout,
            stderr,
        }
    }
}

/// A finished run: the project (for file checks and further runs) and its output.
pub struct Ran {
    pub project: Project,
    pub code: Option<i32>,
    /// Normalised stdout.
    pub stdout: String,
    /// Stdout as printed (for JSON, which holds real paths).
    pub raw_stdout: String,
    /// Normalised stderr.
    pub stderr: String,
}

impl Ran {
    /// Stdout parsed as one JSON document.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.raw_stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }

    /// Stdout parsed as JSON lines.
    pub fn json_lines(&self) -> Vec<serde_json::Value> {
        self.raw_stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
            .collect()
    }
}

impl std::ops::Deref for Ran {
    type Target = Project;
    fn deref(&self) -> &Project {
        &self.project
    }
}

/// Wait until `path` exists (a scripted agent reached a point).
pub fn wait_for(path: &Path) {
    let start = std::time::Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < PATIENCE,
            "timed out waiting for {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a process is gone (or a zombie nobody reaped yet).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            state.starts_with('Z') || state.starts_with('X')
        }
    }
}

/// Wait (up to `PATIENCE`) for a process to be gone; true when it is.
pub fn wait_gone(pid: i32) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < PATIENCE {
        if process_gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Every file under the project with its content, sorted (to prove a run changed nothing).
pub fn files(p: &Project) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![p.path().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(p.path()).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Every file under `dir` with its size, sorted.
pub fn walk(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = std::fs::symlink_metadata(e.path()).unwrap();
        if m.is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push((e.path().display().to_string(), m.len()));
        }
    }
    out.sort();
    out
}

/// A spawned automaton that is interrupted (then killed) if the test ends while it still runs,
/// so a failing test leaves no orchestrator and no agent behind.
pub struct Running(pub std::process::Child);

pub trait SpawnGuarded {
    fn spawn_guarded(&mut self) -> Running;
}

impl SpawnGuarded for std::process::Command {
    fn spawn_guarded(&mut self) -> Running {
        Running(self.spawn().expect("spawn automaton"))
    }
}

impl std::ops::Deref for Running {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Running {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !matches!(self.0.try_wait(), Ok(None)) {
            return;
        }
        // SIGINT: automaton stops its agents' groups, then exits.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGINT) };
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if !matches!(self.0.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
