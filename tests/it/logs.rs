//! `automaton logs <task> [--phase P] [-f]`: a finished log printed exactly, `-f` following a
//! running phase (a scripted agent waiting on a gate file) to its end, with local, tmux and
//! (when a cluster answers) Slurm.

use crate::harness::{Project, wait_for};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn logs_prints_the_latest_log_exactly() {
    let p = Project::new();
    p.orchestrate_cmd()
        .arg("print me")
        .timeout(Duration::from_secs(120))
        .assert()
        .code(0);
    let referee = p.read("tasks/print-me/logs/referee-1.log");
    p.cmd()
        .args(["logs", "print-me"])
        .assert()
        .code(0)
        .stdout(referee);
    let research = p.read("tasks/print-me/logs/research-1.log");
    assert!(research.contains("working on research"), "{research}");
    p.cmd()
        .args(["logs", "tasks/print-me", "--phase", "research"])
        .assert()
        .code(0)
        .stdout(research);
}

#[test]
fn logs_without_a_log_says_so() {
    let p = Project::new();
    p.mkdir("tasks/idle");
    p.cmd()
        .args(["logs", "idle"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "tasks/idle has no phase log yet (no tasks/idle/logs/<phase>-<n>.log)",
        ));
    p.mkdir("tasks/idle/logs");
    p.write("tasks/idle/logs/research-1.log", "x\n");
    p.cmd()
        .args(["logs", "idle", "--phase", "implement"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "tasks/idle has no log of phase implement",
        ));
    p.cmd()
        .args(["logs", "nope"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("tasks/nope is not a task folder"));
}

/// Start a run whose research phase waits on a gate, follow it with `logs -f`, open the gate,
/// and check `-f` printed the whole phase and ended when the phase did.
pub fn follow_a_running_phase(p: &Project, extra: &[(&str, String)], args: &[&str]) {
    let mut run = p.orchestrate_std();
    run.env("AGENT_BEHAVIOR", "research=gate")
        .env("AGENT_LOG", p.join("agent.log"));
    for (k, v) in extra {
        run.env(k, v);
    }
    let mut run = run
        .args(args)
        .arg("--quiet")
        .arg("follow me")
        .spawn()
        .unwrap();
    let log = p.join("tasks/follow-me/logs/research-1.log");
    wait_for(&p.join("tasks/follow-me/child.pid"));
    wait_for(&p.join("tasks/follow-me/logs/agent.pid"));
    let mut follow = p.command();
    for (k, v) in extra {
        follow.env(k, v);
    }
    let mut follow = follow
        .args(["logs", "follow-me", "-f"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // `-f` keeps running while the agent waits.
    let start = Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("waiting for the gate")
    {
        assert!(start.elapsed().as_secs() < 60, "the agent never printed");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(700));
    assert!(follow.try_wait().unwrap().is_none(), "logs -f ended early");
    std::fs::write(p.join("tasks/follow-me/gate"), "").unwrap();
    // It ends by itself once the phase has ended.
    let start = Instant::now();
    let status = loop {
        if let Some(s) = follow.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed().as_secs() < 120,
            "logs -f still running after the phase ended"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    let mut printed = String::new();
    follow
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut printed)
        .unwrap();
    assert!(printed.contains("waiting for the gate"), "{printed}");
    assert!(printed.contains("through the gate"), "{printed}");
    assert!(printed.contains("CONTRACT_MET"), "{printed}");
    let whole = std::fs::read_to_string(&log).unwrap();
    assert!(
        whole.starts_with(&printed),
        "printed {printed:?}, log {whole:?}"
    );
    // The run goes on to its end (no agent left behind).
    let start = Instant::now();
    while run.try_wait().unwrap().is_none() {
        if start.elapsed().as_secs() > 240 {
            let _ = run.kill();
            panic!("the run never ended");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn logs_follow_ends_with_the_phase_local() {
    follow_a_running_phase(&Project::new(), &[], &[]);
}

#[test]
fn logs_follow_ends_with_the_phase_tmux() {
    let socket = format!("automaton-test-logs-{}", std::process::id());
    let p = Project::new();
    follow_a_running_phase(
        &p,
        &[("AUTOMATON_TMUX_SOCKET", socket.clone())],
        &["--executor", "tmux"],
    );
    let _ = Command::new("tmux")
        .args(["-L", &socket, "kill-server"])
        .output();
}

#[test]
#[ignore = "needs the one-node Slurm cluster: `.ci/slurm-one-node.sh start`, then `cargo test --test it -- --ignored slurm` (.ci/run does)"]
fn logs_follow_ends_with_the_phase_slurm() {
    let conf = crate::executors::require_slurm("logs_follow_ends_with_the_phase_slurm");
    follow_a_running_phase(
        &Project::new(),
        &[("SLURM_CONF", conf)],
        &["--executor", "slurm"],
    );
}
