//! The agent runner against real `sh` scripts: exit statuses, stdin and env, every stop reason,
//! and that no process of the agent's group outlives `run_agent`.

use automaton::run::agent::{AgentEnd, AgentOutcome, AgentSpec, run_agent};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::harness::{PATIENCE, process_gone, wait_gone};

struct Fx {
    dir: tempfile::TempDir,
    log: PathBuf,
    cancel: AtomicBool,
}

impl Fx {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("logs").join("implement-1.log");
        Fx {
            dir,
            log,
            cancel: AtomicBool::new(false),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Generous defaults; each test tightens the one cap it exercises.
    fn spec<'a>(&'a self, command: &'a str) -> AgentSpec<'a> {
        AgentSpec {
            command,
            cwd: self.dir.path(),
            env: &[],
            prompt: "",
            log_path: &self.log,
            phase_timeout: Duration::from_secs(20),
            stall_timeout: None,
            deadline: None,
            cancel: &self.cancel,
            contract_grace: Duration::from_secs(20),
            kill_grace: Duration::from_millis(200),
            on_line: None,
            on_output: None,
            pid_file: None,
            sync_once_started: None,
            stop: None,
        }
    }

    fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Wait (up to 5 s) for a pid file the script writes, and return the pid.
    fn read_pid(&self, name: &str) -> i32 {
        let path = self.path().join(name);
        let t0 = Instant::now();
        loop {
            if let Ok(s) = fs::read_to_string(&path)
                && let Ok(pid) = s.trim().parse()
            {
                return pid;
            }
            assert!(t0.elapsed() < PATIENCE, "{name} never written");
            thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Alive = present in /proc and not a zombie (a killed grandchild is reparented to init, which
/// may reap it late or, in some containers, never).
fn alive(pid: i32) -> bool {
    !process_gone(pid)
}

fn exit_code(out: &AgentOutcome) -> Option<i32> {
    match out.end {
        AgentEnd::Exited(info) => info.code,
        _ => None,
    }
}

#[test]
fn normal_exit_with_prompt_on_stdin() {
    let fx = Fx::new();
    let prompt = "line one\nline two with ünïcode\n";
    let mut spec = fx.spec("cat > got.txt; echo done");
    spec.prompt = prompt;
    let out = run_agent(&spec).unwrap();
    assert_eq!(exit_code(&out), Some(0), "{out:?}");
    assert!(!out.contract_met);
    assert_eq!(
        fs::read_to_string(fx.path().join("got.txt")).unwrap(),
        prompt
    );
    assert_eq!(out.last_line.as_deref(), Some("done"));
    assert!(fx.log_text().contains("done\n"));
    assert!(!alive(out.pid as i32));
}

#[test]
fn env_and_cwd_are_passed() {
    let fx = Fx::new();
    let env = vec![
        ("AUTOMATON_PHASE".to_string(), "implement".to_string()),
        ("AUTOMATON_ARTIFACT".to_string(), "/x/y z".to_string()),
    ];
    let mut spec = fx.spec(
        "printf '%s|%s' \"$AUTOMATON_PHASE\" \"$AUTOMATON_ARTIFACT\" > env.txt; pwd -P > pwd.txt",
    );
    spec.env = &env;
    let out = run_agent(&spec).unwrap();
    assert_eq!(exit_code(&out), Some(0));
    assert_eq!(
        fs::read_to_string(fx.path().join("env.txt")).unwrap(),
        "implement|/x/y z"
    );
    let pwd = fs::read_to_string(fx.path().join("pwd.txt")).unwrap();
    assert_eq!(
        Path::new(pwd.trim()),
        fx.path().canonicalize().unwrap().as_path()
    );
}

#[test]
fn nonzero_exit_and_stderr_in_log() {
    let fx = Fx::new();
    let out = run_agent(&fx.spec("echo oops >&2; exit 3")).unwrap();
    assert_eq!(exit_code(&out), Some(3));
    assert_eq!(out.end.describe(), "agent exited with status 3");
    assert_eq!(out.last_line.as_deref(), Some("oops"));
    assert!(fx.log_text().contains("oops"));
}

#[test]
fn log_is_appended_and_old_content_ignored() {
    let fx = Fx::new();
    fs::create_dir_all(fx.log.parent().unwrap()).unwrap();
    fs::write(&fx.log, "earlier attempt\nCONTRACT_MET\n").unwrap();
    let out = run_agent(&fx.spec("echo new")).unwrap();
    assert_eq!(exit_code(&out), Some(0));
    assert!(!out.contract_met, "old log content must not count");
    assert_eq!(fx.log_text(), "earlier attempt\nCONTRACT_MET\nnew\n");
}

#[test]
fn phase_timeout_kills_child_and_grandchild() {
    let fx = Fx::new();
    let mut spec = fx.spec("sleep 1000 & echo $! > gc.pid; echo started; sleep 1000");
    spec.phase_timeout = Duration::from_millis(400);
    let out = run_agent(&spec).unwrap();
    assert_eq!(out.end, AgentEnd::PhaseTimeout);
    assert_eq!(
        out.end.describe_with(Some(spec.phase_timeout), None),
        "phase timed out after 400ms"
    );
    assert!(out.duration < PATIENCE, "{:?}", out.duration);
    let gc = fx.read_pid("gc.pid");
    assert!(!alive(out.pid as i32), "agent still alive");
    assert!(wait_gone(gc), "grandchild {gc} alive");
}

#[test]
fn agent_ignoring_term_is_killed_after_grace() {
    let fx = Fx::new();
    let mut spec = fx.spec("trap '' TERM; echo $$ > agent.pid; sleep 1000");
    spec.phase_timeout = Duration::from_millis(400);
    spec.kill_grace = Duration::from_millis(300);
    let out = run_agent(&spec).unwrap();
    assert_eq!(out.end, AgentEnd::PhaseTimeout);
    // TERM was ignored, so the runner had to wait out the grace before KILL.
    assert!(
        out.duration >= Duration::from_millis(650),
        "{:?}",
        out.duration
    );
    assert!(out.duration < PATIENCE, "{:?}", out.duration);
    assert!(!alive(fx.read_pid("agent.pid")));
}

#[test]
fn contract_met_then_exit_is_a_normal_exit() {
    let fx = Fx::new();
    let out = run_agent(&fx.spec("echo working; echo '**CONTRACT_MET**'; exit 0")).unwrap();
    assert_eq!(exit_code(&out), Some(0));
    assert!(out.contract_met);
}

#[test]
fn contract_met_then_lingering_agent_is_stopped_after_grace() {
    let fx = Fx::new();
    let mut spec = fx.spec("echo working; printf 'CONTRACT'; sleep 0.1; echo _MET; sleep 1000");
    spec.contract_grace = Duration::from_millis(300);
    let out = run_agent(&spec).unwrap();
    assert!(out.contract_met, "split line must still be seen");
    match out.end {
        AgentEnd::Exited(info) => assert_eq!(info.signal, Some(libc::SIGTERM), "{info:?}"),
        ref other => panic!("expected Exited, got {other:?}"),
    }
    assert!(out.duration >= Duration::from_millis(300));
    assert!(out.duration < PATIENCE, "{:?}", out.duration);
    assert!(!alive(out.pid as i32));
}

#[test]
fn contract_mentioned_but_not_met() {
    let fx = Fx::new();
    let out = run_agent(&fx.spec("echo 'I will print CONTRACT_MET when done'; echo bye")).unwrap();
    assert_eq!(exit_code(&out), Some(0));
    assert!(!out.contract_met);
    assert_eq!(out.last_line.as_deref(), Some("bye"));
}

#[test]
fn silent_agent_is_stalled() {
    let fx = Fx::new();
    let mut spec = fx.spec("echo hello; sleep 1000");
    spec.stall_timeout = Some(Duration::from_millis(400));
    let out = run_agent(&spec).unwrap();
    assert_eq!(out.end, AgentEnd::Stalled);
    assert_eq!(out.last_line.as_deref(), Some("hello"));
    assert!(out.duration < PATIENCE);
    assert!(!alive(out.pid as i32));
}

#[test]
fn steady_output_is_not_a_stall() {
    let fx = Fx::new();
    let mut spec = fx.spec("for i in 1 2 3 4 5 6 7 8; do echo tick $i; sleep 0.1; done");
    spec.stall_timeout = Some(Duration::from_millis(600));
    let out = run_agent(&spec).unwrap();
    assert_eq!(exit_code(&out), Some(0), "{out:?}");
    assert_eq!(out.last_line.as_deref(), Some("tick 8"));
}

#[test]
fn cancel_flag_stops_the_group() {
    let fx = Fx::new();
    let spec = fx.spec("sleep 1000 & echo $! > gc.pid; sleep 1000");
    let out = thread::scope(|s| {
        s.spawn(|| {
            thread::sleep(Duration::from_millis(300));
            fx.cancel.store(true, Ordering::SeqCst);
        });
        run_agent(&spec).unwrap()
    });
    assert_eq!(out.end, AgentEnd::Cancelled);
    assert!(out.duration >= Duration::from_millis(300));
    assert!(out.duration < PATIENCE);
    assert!(!alive(out.pid as i32));
    let gc = fx.read_pid("gc.pid");
    assert!(wait_gone(gc), "grandchild {gc} alive");
}

#[test]
fn passed_deadline_is_total_timeout() {
    let fx = Fx::new();
    let mut spec = fx.spec("sleep 1000");
    spec.deadline = Some(Instant::now() + Duration::from_millis(100));
    let out = run_agent(&spec).unwrap();
    assert_eq!(out.end, AgentEnd::TotalTimeout);
    assert!(out.duration < PATIENCE);
    assert!(!alive(out.pid as i32));
}

#[test]
fn unread_large_prompt_does_not_block() {
    let fx = Fx::new();
    let prompt = "x".repeat(1 << 20);
    let mut spec = fx.spec("sleep 0.2; echo ok");
    spec.prompt = &prompt;
    spec.phase_timeout = Duration::from_secs(10);
    let out = run_agent(&spec).unwrap();
    assert_eq!(exit_code(&out), Some(0), "{out:?}");
    assert!(out.duration < PATIENCE, "{:?}", out.duration);
}

#[test]
fn large_prompt_is_delivered_whole() {
    let fx = Fx::new();
    let prompt = "y".repeat(1 << 20);
    let mut spec = fx.spec("wc -c < /dev/stdin | tr -d ' ' > n.txt");
    spec.prompt = &prompt;
    let out = run_agent(&spec).unwrap();
    assert_eq!(exit_code(&out), Some(0));
    let n = fs::read_to_string(fx.path().join("n.txt")).unwrap();
    assert_eq!(n.trim(), "1048576");
}

#[test]
fn escaped_grandchild_is_killed_after_normal_exit() {
    let fx = Fx::new();
    let out = run_agent(&fx.spec("sleep 1000 & echo $! > gc.pid; echo bye; exit 0")).unwrap();
    assert_eq!(exit_code(&out), Some(0));
    let gc = fx.read_pid("gc.pid");
    assert!(wait_gone(gc), "grandchild {gc} alive");
    assert!(out.duration < PATIENCE);
}

#[test]
fn on_line_sees_the_latest_line() {
    let fx = Fx::new();
    let seen = Mutex::new(Vec::<String>::new());
    let record = |line: &str| seen.lock().unwrap().push(line.to_string());
    let mut spec = fx.spec(
        "echo one; sleep 0.1; echo two; printf '   \\n'; sleep 0.1; printf '\\033[1mthree\\033[0m'",
    );
    spec.on_line = Some(&record);
    let out = run_agent(&spec).unwrap();
    assert_eq!(out.last_line.as_deref(), Some("three"));
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.last().map(String::as_str), Some("three"), "{seen:?}");
    // Called on change only: no two equal neighbours.
    assert!(seen.windows(2).all(|w| w[0] != w[1]), "{seen:?}");
}

#[test]
fn missing_cwd_is_an_error() {
    let fx = Fx::new();
    let missing = fx.path().join("nope");
    let mut spec = fx.spec("true");
    spec.cwd = &missing;
    assert!(run_agent(&spec).is_err());
}

/// Runs in a child copy of this test binary (selected by an env var), because signal handlers
/// are process-wide: the first SIGINT sets the cancel flag, the second SIGKILLs the agent group
/// (which ignores TERM here, so only the forced path can end it quickly) and exits with 130.
#[test]
fn second_interrupt_kills_groups_and_exits_130() {
    const CHILD_ENV: &str = "AUTOMATON_TEST_SIGNAL_CHILD";
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        let dir = PathBuf::from(dir);
        let cancel = automaton::run::agent::install_signal_handlers().unwrap();
        let log = dir.join("agent.log");
        let runner_dir = dir.clone();
        thread::spawn(move || {
            let spec = AgentSpec {
                command: "trap '' TERM; echo $$ > agent.pid; sleep 1000",
                cwd: &runner_dir,
                env: &[],
                prompt: "",
                log_path: &log,
                phase_timeout: Duration::from_secs(60),
                stall_timeout: None,
                deadline: None,
                cancel: &cancel,
                contract_grace: Duration::from_secs(60),
                kill_grace: Duration::from_secs(600),
                on_line: None,
                on_output: None,
                pid_file: None,
                sync_once_started: None,
                stop: None,
            };
            let _ = run_agent(&spec);
        });
        let t0 = Instant::now();
        while !dir.join("agent.pid").exists() {
            assert!(t0.elapsed() < PATIENCE);
            thread::sleep(Duration::from_millis(10));
        }
        thread::sleep(Duration::from_millis(50));
        signal_hook::low_level::raise(libc::SIGINT).unwrap();
        // The runner now sends TERM and waits out its 600 s grace.
        thread::sleep(Duration::from_millis(300));
        signal_hook::low_level::raise(libc::SIGINT).unwrap();
        thread::sleep(PATIENCE);
        panic!("second SIGINT did not exit");
    }

    let fx = Fx::new();
    let exe = std::env::current_exe().unwrap();
    let t0 = Instant::now();
    let status = std::process::Command::new(exe)
        .args([
            "--exact",
            "agent_runner::second_interrupt_kills_groups_and_exits_130",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, fx.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    // Far below the 600 s grace: only the forced path can have ended it.
    assert!(t0.elapsed() < PATIENCE, "{:?}", t0.elapsed());
    let agent = fx.read_pid("agent.pid");
    assert!(wait_gone(agent), "agent {agent} alive");
}
