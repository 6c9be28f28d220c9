//! Executors (`- **Executor**: local | tmux | slurm`): the same lifecycle through each, and what
//! only tmux and Slurm do: a window per phase and `attach`; a batch job per phase, `scancel` on a
//! timeout, and resume after `kill -9` of automaton. The tmux tests run a real tmux on a private
//! socket (killed at the end); the Slurm tests run when a cluster answers (`.ci/slurm-one-node.sh
//! start` makes one) and say clearly that they skipped otherwise.

use crate::harness::{Project, wait_for, wait_gone};
use predicates::prelude::*;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A private tmux server for one test, killed when dropped.
struct TmuxServer(String);

impl TmuxServer {
    fn new(test: &str) -> TmuxServer {
        static N: AtomicUsize = AtomicUsize::new(0);
        TmuxServer(format!(
            "automaton-test-{}-{test}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ))
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.0)
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("tmux runs")
    }

    /// Names of every window on the server (empty when no server runs).
    fn windows(&self) -> Vec<String> {
        let out = self.tmux(&["list-windows", "-a", "-F", "#{window_name}"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Wait up to `secs` for no window to be left.
    fn wait_no_windows(&self, secs: u64) -> bool {
        let start = Instant::now();
        while start.elapsed().as_secs() < secs {
            if self.windows().is_empty() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
        // tmux leaves its socket file behind.
        let dir = std::env::var("TMUX_TMPDIR").unwrap_or_else(|_| "/tmp".into());
        let uid = unsafe { libc::getuid() };
        let _ = std::fs::remove_file(format!("{dir}/tmux-{uid}/{}", self.0));
    }
}

/// `orchestrate` through an executor; tmux on its own socket.
fn orchestrate_on(p: &Project, executor: &str, tmux: Option<&TmuxServer>) -> assert_cmd::Command {
    let mut c = p.orchestrate_cmd();
    c.env("AGENT_LOG", p.join("agent.log"))
        .args(["--executor", executor]);
    if let Some(t) = tmux {
        c.env("AUTOMATON_TMUX_SOCKET", &t.0);
    }
    if let Some(conf) = slurm_conf() {
        c.env("SLURM_CONF", conf);
    }
    c
}

const LIFECYCLE: [&str; 8] = [
    "research",
    "design",
    "test_design",
    "implement",
    "bug_find",
    "adversarial_bug_find",
    "doc_review",
    "referee",
];

/// The full lifecycle of one task through `executor`: every phase ran once, in order, each
/// log holds the agent's output, and the task is complete.
fn full_lifecycle(executor: &str, tmux: Option<&TmuxServer>) -> Project {
    let p = Project::new();
    orchestrate_on(&p, executor, tmux)
        .arg("add user auth")
        .timeout(Duration::from_secs(240))
        .assert()
        .code(0)
        .stdout(predicate::str::ends_with("ORCHESTRATION_COMPLETE\n"));
    let phases: Vec<String> = p.agent_runs().into_iter().map(|(_, ph)| ph).collect();
    assert_eq!(phases, LIFECYCLE, "{executor}");
    assert_eq!(p.read("tasks/add-user-auth/.state"), "complete\n");
    for phase in LIFECYCLE {
        let log = p.read(&format!("tasks/add-user-auth/logs/{phase}-1.log"));
        assert!(
            log.contains(&format!("working on {phase} for tasks/add-user-auth")),
            "{executor} {phase}: {log}"
        );
        assert!(log.contains("CONTRACT_MET"), "{executor} {phase}: {log}");
    }
    assert_eq!(
        p.read("tasks/add-user-auth/logs/journal.jsonl")
            .lines()
            .count(),
        8
    );
    p
}

/// A two-wave decomposition through `executor`: sub-tasks a and b (wave 1) ran at once, c
/// after them.
fn decomposition(executor: &str, tmux: Option<&TmuxServer>) -> Project {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "# Config\n\n## Phases\n- **Decomposition**: No\n- **Design**: No\n- **Test design**: No\n",
    );
    let plan = "# Decomposition\n\n| Sub-task | Wave | Depends on | Estimated peak context | Files | Scope |\n|---|---|---|---|---|---|\n\
| a | 1 | - | 4k | src/a.rs | A |\n| b | 1 | - | 4k | src/b.rs | B |\n| c | 2 | a, b | 4k | src/c.rs | C |\n";
    orchestrate_on(&p, executor, tmux)
        .env("AGENT_DECOMPOSITION", plan)
        .env("AGENT_BEHAVIOR", "*=slow p:research=decompose")
        .env("AGENT_SLEEP", "1")
        .args(["--jobs", "2", "p"])
        .timeout(Duration::from_secs(300))
        .assert()
        .code(0)
        .stdout(predicate::str::contains("ORCHESTRATION_COMPLETE"));
    let recs: Vec<(String, String, u128, u128)> = p
        .read("agent.log")
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].to_string(),
                f[1].to_string(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect();
    let span = |t: &str| {
        let of: Vec<_> = recs.iter().filter(|r| r.0 == t).collect();
        assert!(!of.is_empty(), "{t} never ran");
        (
            of.iter().map(|r| r.2).min().unwrap(),
            of.iter().map(|r| r.3).max().unwrap(),
        )
    };
    let (a, b, c) = (
        span("tasks/p/subtasks/a"),
        span("tasks/p/subtasks/b"),
        span("tasks/p/subtasks/c"),
    );
    assert!(a.0 < b.1 && b.0 < a.1, "{executor}: wave 1 did not overlap");
    assert!(
        c.0 >= a.1.max(b.1),
        "{executor}: c started before wave 1 ended"
    );
    assert_eq!(p.read("tasks/p/.state"), "complete\n");
    p
}

// ---------------------------------------------------------------- the shared matrix

#[test]
fn lifecycle_local() {
    full_lifecycle("local", None);
}

#[test]
fn lifecycle_tmux() {
    let t = TmuxServer::new("life");
    full_lifecycle("tmux", Some(&t));
    assert!(t.wait_no_windows(10), "windows left: {:?}", t.windows());
}

#[test]
#[ignore = "needs the one-node Slurm cluster: `.ci/slurm-one-node.sh start`, then `cargo test --test it -- --ignored slurm` (.ci/run does)"]
fn lifecycle_slurm() {
    require_slurm("lifecycle_slurm");
    let p = Project::new();
    // The agent records its job id: every phase ran as a Slurm job.
    let agent = format!(
        "echo \"$AUTOMATON_PHASE ${{SLURM_JOB_ID:-none}}\" >> {}; {}",
        p.join("jobs.txt").display(),
        crate::harness::agent_command()
    );
    orchestrate_on(&p, "slurm", None)
        .args(["--agent", &agent, "add user auth"])
        .timeout(Duration::from_secs(240))
        .assert()
        .code(0)
        .stdout(predicate::str::ends_with("ORCHESTRATION_COMPLETE\n"));
    let jobs = p.read("jobs.txt");
    let ids: Vec<&str> = jobs.lines().map(|l| l.split(' ').nth(1).unwrap()).collect();
    assert_eq!(ids.len(), 8, "{jobs}");
    assert!(ids.iter().all(|id| id.parse::<u64>().is_ok()), "{jobs}");
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(unique.len(), 8, "one job per phase: {jobs}");
    let log = p.read("tasks/add-user-auth/logs/referee-1.log");
    assert!(log.contains("CONTRACT_MET"), "{log}");
    assert!(!p.join("tasks/add-user-auth/logs/agent.pid").exists());
}

#[test]
fn decomposition_local() {
    decomposition("local", None);
}

#[test]
fn decomposition_tmux() {
    let t = TmuxServer::new("decomp");
    decomposition("tmux", Some(&t));
    assert!(t.wait_no_windows(10), "windows left: {:?}", t.windows());
}

#[test]
#[ignore = "needs the one-node Slurm cluster: `.ci/slurm-one-node.sh start`, then `cargo test --test it -- --ignored slurm` (.ci/run does)"]
fn decomposition_slurm() {
    require_slurm("decomposition_slurm");
    decomposition("slurm", None);
}

// ---------------------------------------------------------------- tmux

#[test]
fn tmux_agent_runs_in_a_window_and_attach_finds_it() {
    let t = TmuxServer::new("window");
    let p = Project::new();
    // The agent proves it runs inside tmux (its environment says so), then hangs.
    let agent = format!(
        "echo \"$TMUX_PANE\" > {}; {}",
        p.join("pane.txt").display(),
        crate::harness::agent_command()
    );
    let mut run = p
        .orchestrate_std()
        .env("AGENT_BEHAVIOR", "research=hang")
        .env("AUTOMATON_TMUX_SOCKET", &t.0)
        .args(["--executor", "tmux", "--agent", &agent, "watch me"])
        .spawn()
        .unwrap();
    wait_for(&p.join("tasks/watch-me/child.pid"));
    // The pid record names the pane's group and this automaton as its owner, as a local
    // agent's does: no other automaton may stop it while this one runs.
    let record = p.read("tasks/watch-me/logs/agent.pid");
    let words: Vec<&str> = record.split_whitespace().collect();
    assert_eq!(words[..2], ["v2", "group"], "{record}");
    assert_eq!(words[4], run.id().to_string(), "{record}");
    let pane = p.read("pane.txt");
    assert!(pane.trim().starts_with('%'), "not in tmux: {pane:?}");
    assert_eq!(t.windows(), ["tasks/watch-me research"]);
    // attach, without a terminal: --print names the window and the tmux command.
    let out = p
        .cmd()
        .env("AUTOMATON_TMUX_SOCKET", &t.0)
        .args(["attach", "watch-me", "--print", "-r"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("tasks/watch-me research"), "{out}");
    assert!(
        out.contains(&format!("tmux -L {} attach-session", t.0)),
        "{out}"
    );
    assert!(out.trim_end().ends_with("-r"), "{out}");
    // What the window shows is what the log holds.
    let shown = t.tmux(&["capture-pane", "-p", "-t", "tasks/watch-me research"]);
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("working on research"),
        "{}",
        String::from_utf8_lossy(&shown.stdout)
    );
    wait_for_text(
        &p,
        "tasks/watch-me/logs/research-1.log",
        "working on research",
    );
    // Ctrl-C stops the agent's whole group and closes its window.
    let child = p.wait_pid("tasks/watch-me/child.pid");
    let grandchild = p.wait_pid("tasks/watch-me/grandchild.pid");
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    assert_eq!(run.wait().unwrap().code(), Some(130));
    assert!(wait_gone(child) && wait_gone(grandchild));
    assert!(t.wait_no_windows(10), "windows left: {:?}", t.windows());
    assert!(!p.join("tasks/watch-me/logs/agent.pid").exists());
    // And the rerun resumes, in tmux again.
    p.orchestrate_cmd()
        .env("AUTOMATON_TMUX_SOCKET", &t.0)
        .args(["--executor", "tmux", "--task", "tasks/watch-me"])
        .assert()
        .code(0);
}

fn wait_for_text(p: &Project, rel: &str, text: &str) {
    let start = Instant::now();
    loop {
        let now = std::fs::read_to_string(p.join(rel)).unwrap_or_default();
        if now.contains(text) {
            return;
        }
        assert!(
            start.elapsed().as_secs() < 30,
            "{rel} never got {text:?}: {now}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn tmux_timeout_kills_the_group_and_closes_the_window() {
    let t = TmuxServer::new("timeout");
    let p = Project::new();
    orchestrate_on(&p, "tmux", Some(&t))
        .env("AGENT_BEHAVIOR", "implement=hang")
        .args(["--max-phase-time", "2s", "stop case"])
        .assert()
        .code(13)
        .stdout(predicate::str::contains(
            "phase timed out after 2s during implement",
        ));
    let child: i32 = p.read("tasks/stop-case/child.pid").trim().parse().unwrap();
    let grandchild: i32 = p
        .read("tasks/stop-case/grandchild.pid")
        .trim()
        .parse()
        .unwrap();
    assert!(wait_gone(child), "agent {child} still alive");
    assert!(wait_gone(grandchild), "grandchild {grandchild} still alive");
    assert!(t.wait_no_windows(10), "windows left: {:?}", t.windows());
    let log = p.read("tasks/stop-case/logs/implement-1.log");
    assert!(log.contains("working on implement"), "{log}");
}

#[test]
fn tmux_stall_and_failure_status_come_back() {
    let t = TmuxServer::new("stall");
    let p = Project::new();
    orchestrate_on(&p, "tmux", Some(&t))
        .env("AGENT_BEHAVIOR", "research=stall")
        .args(["--stall-timeout", "1s", "stalls"])
        .assert()
        .code(14)
        .stdout(predicate::str::contains("no output for 1s (stalled)"));
    assert!(t.wait_no_windows(10));
    // The agent's own exit status reaches automaton through the window.
    let q = Project::new();
    orchestrate_on(&q, "tmux", Some(&t))
        .env("AGENT_BEHAVIOR", "research=exit3")
        .arg("fails")
        .assert()
        .failure()
        .stdout(predicate::str::contains("status 3"));
    assert!(
        q.read("tasks/fails/logs/research-1.log")
            .contains("something broke")
    );
}

#[test]
fn attach_without_a_running_window_says_so() {
    let t = TmuxServer::new("attach");
    let p = Project::new();
    p.mkdir("tasks/idle");
    p.cmd()
        .env("AUTOMATON_TMUX_SOCKET", &t.0)
        .args(["attach", "idle"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "tasks/idle has no running tmux window: nothing runs for it now",
        ));
}

#[test]
fn executor_setting_is_shown_and_checked() {
    let p = Project::new();
    p.write(".automaton/.agent.md", "## Agent\n- **Executor**: tmux\n");
    p.cmd()
        .args(["config"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Executor"))
        .stdout(predicate::str::contains("tmux"));
    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Executor**: kubernetes\n",
    );
    // `config` shows the error at its line and still runs (issue 15); `orchestrate` refuses.
    p.cmd()
        .args(["config"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("^ error: "))
        .stderr(predicate::str::contains(
            "`Executor`: expected one of local, tmux, slurm",
        ));
    p.orchestrate_cmd()
        .arg("x")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "`Executor`: expected one of local, tmux, slurm",
        ));
}

// ---------------------------------------------------------------- Slurm

/// The cluster's config: `$SLURM_CONF`, or the one `.ci/slurm-one-node.sh` writes.
fn slurm_conf() -> Option<String> {
    std::env::var("SLURM_CONF")
        .ok()
        .filter(|c| std::path::Path::new(c).is_file())
        .or_else(|| {
            let dir = std::env::var("AUTOMATON_SLURM_DIR")
                .unwrap_or_else(|_| "/tmp/automaton-slurm".into());
            let conf = format!("{dir}/slurm.conf");
            std::path::Path::new(&conf).is_file().then_some(conf)
        })
}

/// The cluster's config; a Slurm test fails when no cluster answers. The Slurm tests are
/// `#[ignore]`d, so plain `cargo test` lists them as ignored with the reason; one run with
/// `--ignored` was asked for, and must not pass without having run.
pub fn require_slurm(test: &str) -> String {
    let conf = slurm_conf().filter(|conf| {
        Command::new("sinfo")
            .args(["-h", "-o", "%T"])
            .env("SLURM_CONF", conf)
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
    });
    conf.unwrap_or_else(|| {
        panic!(
            "{test}: no Slurm cluster answers (start one with `.ci/slurm-one-node.sh start` and \
             `export SLURM_CONF=/tmp/automaton-slurm/slurm.conf`, as .ci/run does)"
        )
    })
}

fn squeue_active(id: u64) -> bool {
    let out = Command::new("squeue")
        .args(["-h", "-o", "%T", "-j", &id.to_string()])
        .env("SLURM_CONF", slurm_conf().unwrap())
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    out.status.success()
        && matches!(
            s.trim(),
            "RUNNING" | "PENDING" | "COMPLETING" | "CONFIGURING"
        )
}

fn wait_job_gone(id: u64, secs: u64) -> bool {
    let start = Instant::now();
    while start.elapsed().as_secs() < secs {
        if !squeue_active(id) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

/// An agent that records its Slurm job id in the task folder before the scripted agent runs.
fn job_recording_agent() -> String {
    format!(
        "echo \"$SLURM_JOB_ID\" >> \"$AUTOMATON_TASK_DIR/job-$AUTOMATON_PHASE.id\"; {}",
        crate::harness::agent_command()
    )
}

#[test]
#[ignore = "needs the one-node Slurm cluster: `.ci/slurm-one-node.sh start`, then `cargo test --test it -- --ignored slurm` (.ci/run does)"]
fn slurm_timeout_cancels_the_job() {
    require_slurm("slurm_timeout_cancels_the_job");
    let p = Project::new();
    orchestrate_on(&p, "slurm", None)
        .env("AGENT_BEHAVIOR", "research=hang")
        .args(["--agent", &job_recording_agent()])
        .args(["--max-phase-time", "4s", "slow job"])
        .timeout(Duration::from_secs(120))
        .assert()
        .code(13)
        .stdout(predicate::str::contains(
            "phase timed out after 4s during research",
        ));
    let id: u64 = p
        .read("tasks/slow-job/job-research.id")
        .trim()
        .parse()
        .unwrap();
    assert!(wait_job_gone(id, 30), "job {id} still in the queue");
    let child: i32 = p.read("tasks/slow-job/child.pid").trim().parse().unwrap();
    assert!(wait_gone(child), "agent {child} outlived its cancelled job");
}

/// `orchestrate <name>` on Slurm with a design phase held at its gate; once the design job
/// runs, automaton is killed with SIGKILL. The job's id.
fn slurm_design_job_then_kill_9(p: &Project, name: &str) -> u64 {
    let mut run = p
        .orchestrate_std()
        .env("AGENT_BEHAVIOR", "design=gate")
        .env("AGENT_LOG", p.join("agent.log"))
        .env("SLURM_CONF", slurm_conf().unwrap())
        .args([
            "--executor",
            "slurm",
            "--agent",
            &job_recording_agent(),
            name,
        ])
        .spawn()
        .unwrap();
    wait_for(&p.join(&format!("tasks/{name}/child.pid")));
    let id: u64 = p
        .read(&format!("tasks/{name}/job-design.id"))
        .trim()
        .parse()
        .unwrap();
    unsafe { libc::kill(run.id() as i32, libc::SIGKILL) };
    run.wait().unwrap();
    id
}

#[test]
#[ignore = "needs the one-node Slurm cluster: `.ci/slurm-one-node.sh start`, then `cargo test --test it -- --ignored slurm` (.ci/run does)"]
fn slurm_kill_9_then_resume_reattaches_to_the_running_job() {
    require_slurm("slurm_kill_9_then_resume_reattaches_to_the_running_job");
    let p = Project::new();
    let id = slurm_design_job_then_kill_9(&p, "crashy");
    // The job outlives automaton, and its id (and log) is where a pid would be.
    assert!(squeue_active(id), "job {id} should still run");
    let record = p.read("tasks/crashy/logs/agent.pid");
    let words: Vec<&str> = record.split_whitespace().collect();
    assert_eq!(words.len(), 6, "{record}");
    assert_eq!(words[..3], ["v2", "slurm", &id.to_string()], "{record}");
    assert!(words[3].parse::<u32>().is_ok_and(|p| p > 0), "{record}");
    assert_eq!(words[5], "design-1.log", "{record}");
    // The rerun re-attaches to the job, which is still waiting at its gate; opened once the
    // rerun follows it, the job ends and its phase counts.
    let gate = p.join("tasks/crashy/gate");
    let opener = std::thread::spawn({
        let log = p.join("rerun.err");
        move || {
            let start = Instant::now();
            while !std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains("re-attached")
                && start.elapsed().as_secs() < 120
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            std::fs::write(gate, "").unwrap();
        }
    });
    let err = std::fs::File::create(p.join("rerun.err")).unwrap();
    let status = p
        .orchestrate_std()
        .env("AGENT_LOG", p.join("agent.log"))
        .env("SLURM_CONF", slurm_conf().unwrap())
        .args([
            "--executor",
            "slurm",
            "--agent",
            &job_recording_agent(),
            "--task",
            "tasks/crashy",
        ])
        .stderr(err)
        .status()
        .unwrap();
    opener.join().unwrap();
    let stderr = p.read("rerun.err");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "tasks/crashy: re-attached to Slurm job {id}, which an earlier, killed run submitted for design"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("stopped agent"), "{stderr}");
    assert!(!squeue_active(id));
    // One job for the design phase, not two; the phase ran once, in attempt 1.
    let jobs = p.read("tasks/crashy/job-design.id");
    assert_eq!(jobs.lines().collect::<Vec<_>>(), [id.to_string()], "{jobs}");
    let runs: Vec<String> = p.agent_runs().into_iter().map(|(_, ph)| ph).collect();
    assert_eq!(runs, LIFECYCLE, "{runs:?}");
    assert!(!p.join("tasks/crashy/logs/design-2.log").exists());
    let log = p.read("tasks/crashy/logs/design-1.log");
    assert!(
        log.contains("through the gate") && log.contains("CONTRACT_MET"),
        "{log}"
    );
}

#[test]
#[ignore = "needs the one-node Slurm cluster: `.ci/slurm-one-node.sh start`, then `cargo test --test it -- --ignored slurm` (.ci/run does)"]
fn slurm_kill_9_then_resume_reads_a_job_that_ended_meanwhile() {
    require_slurm("slurm_kill_9_then_resume_reads_a_job_that_ended_meanwhile");
    let p = Project::new();
    let id = slurm_design_job_then_kill_9(&p, "ended");
    // The job ends while no automaton runs.
    std::fs::write(p.join("tasks/ended/gate"), "").unwrap();
    assert!(wait_job_gone(id, 60), "job {id} never ended");
    orchestrate_on(&p, "slurm", None)
        .args(["--agent", &job_recording_agent(), "--task", "tasks/ended"])
        .timeout(Duration::from_secs(240))
        .assert()
        .code(0);
    let jobs = p.read("tasks/ended/job-design.id");
    assert_eq!(jobs.lines().collect::<Vec<_>>(), [id.to_string()], "{jobs}");
    let runs: Vec<String> = p.agent_runs().into_iter().map(|(_, ph)| ph).collect();
    assert_eq!(runs, LIFECYCLE, "{runs:?}");
}

#[test]
#[ignore = "needs the one-node Slurm cluster: `.ci/slurm-one-node.sh start`, then `cargo test --test it -- --ignored slurm` (.ci/run does)"]
fn slurm_ctrl_c_cancels_a_waves_jobs_with_one_scancel() {
    require_slurm("slurm_ctrl_c_cancels_a_waves_jobs_with_one_scancel");
    let real = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v scancel"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let p = Project::new();
    // A scancel that records its arguments, then runs Slurm's.
    p.write(
        "bin/scancel",
        format!(
            "#!/bin/sh\necho \"$*\" >> {}\nexec {} \"$@\"\n",
            p.join("scancel.log").display(),
            real.trim()
        ),
    );
    Command::new("chmod")
        .args(["+x", p.join("bin/scancel").to_str().unwrap()])
        .status()
        .unwrap();
    p.write(
        ".automaton/config.md",
        "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n",
    );
    let plan = "# Decomposition\n\n| Sub-task | Wave | Depends on | Estimated peak context | Files | Scope |\n|---|---|---|---|---|---|\n| a | 1 | - | 4k | - | A |\n| b | 1 | - | 4k | - | B |\n";
    let path = format!(
        "{}:{}",
        p.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut run = p
        .orchestrate_std()
        .env("PATH", &path)
        .env("SLURM_CONF", slurm_conf().unwrap())
        .env("AGENT_DECOMPOSITION", plan)
        .env(
            "AGENT_BEHAVIOR",
            "p:research=decompose a:research=hang b:research=hang",
        )
        .args([
            "--executor",
            "slurm",
            "--jobs",
            "2",
            "--agent",
            &job_recording_agent(),
            "p",
        ])
        .spawn()
        .unwrap();
    wait_for(&p.join("tasks/p/subtasks/a/child.pid"));
    wait_for(&p.join("tasks/p/subtasks/b/child.pid"));
    let a: u64 = p
        .read("tasks/p/subtasks/a/job-research.id")
        .trim()
        .parse()
        .unwrap();
    let b: u64 = p
        .read("tasks/p/subtasks/b/job-research.id")
        .trim()
        .parse()
        .unwrap();
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    assert_eq!(run.wait().unwrap().code(), Some(130));
    assert!(wait_job_gone(a, 30) && wait_job_gone(b, 30));
    let calls = p.read("scancel.log");
    assert!(
        calls.lines().any(|l| {
            let ids: Vec<&str> = l.split_whitespace().collect();
            ids.contains(&a.to_string().as_str()) && ids.contains(&b.to_string().as_str())
        }),
        "no one scancel for both {a} and {b}: {calls}"
    );
}

#[test]
#[ignore = "needs the one-node Slurm cluster: `.ci/slurm-one-node.sh start`, then `cargo test --test it -- --ignored slurm` (.ci/run does)"]
fn slurm_submit_failure_names_slurms_message() {
    require_slurm("slurm_submit_failure_names_slurms_message");
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Slurm options**: --partition=no-such-partition\n",
    );
    orchestrate_on(&p, "slurm", None)
        .arg("bad partition")
        .timeout(Duration::from_secs(60))
        .assert()
        .failure()
        .stderr(predicate::str::contains("invalid partition"));
}

// ---------------------------------------------------------------- VRAM admission

/// A project with a faked 24 GB GPU (the detection script), a local model of 2 GB weights and
/// about 1 MB of KV cache per token (no headroom), whose parent `p` splits into `rows`.
fn vram_project(rows: &str) -> Project {
    let p = Project::new();
    p.write(
        ".automaton/scripts/vram_detect.sh",
        "echo '{\"gpu_vram_gb\": 24}'\n",
    );
    p.write(
        ".automaton/config.md",
        "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n\n\
         ## VRAM Configuration\n- **Headroom**: 0%\n- **Model weights**: 2 GB\n\
         - **KV bytes per token**: 1048576\n",
    );
    p.write(
        "plan.md",
        format!(
            "# Decomposition\n\n| Sub-task | Wave | Depends on | Estimated peak context | Files | Scope |\n|---|---|---|---|---|---|\n{rows}"
        ),
    );
    p
}

#[test]
fn vram_admission_runs_at_most_what_fits() {
    // Three 10 GB sub-tasks beside 2 GB of weights on 24 GB: two at a time, though --jobs 3.
    let p = vram_project(
        "| a | 1 | - | 10k | - | A |\n| b | 1 | - | 10k | - | B |\n| c | 1 | - | 10k | - | C |\n",
    );
    p.orchestrate_cmd()
        .env("AGENT_LOG", p.join("agent.log"))
        .env("AGENT_DECOMPOSITION", p.read("plan.md"))
        .env("AGENT_BEHAVIOR", "*=slow p:research=decompose")
        .env("AGENT_SLEEP", "0.3")
        .args(["--jobs", "3", "p"])
        .timeout(Duration::from_secs(120))
        .assert()
        .code(0);
    let spans: Vec<(u128, u128)> = p
        .read("agent.log")
        .lines()
        .filter(|l| l.contains("/subtasks/"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[2].parse().unwrap(), f[3].parse().unwrap())
        })
        .collect();
    let most = spans
        .iter()
        .map(|(s, _)| spans.iter().filter(|(s2, e2)| s2 <= s && s < e2).count())
        .max()
        .unwrap();
    assert!(most <= 2, "{most} sub-task phases ran at once");
}

#[test]
fn vram_admission_refuses_a_sub_task_that_can_never_fit() {
    let p = vram_project("| huge | 1 | - | 30k | - | H |\n");
    p.orchestrate_cmd()
        .env("AGENT_DECOMPOSITION", p.read("plan.md"))
        .env("AGENT_BEHAVIOR", "p:research=decompose")
        .arg("p")
        .timeout(Duration::from_secs(60))
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "tasks/p/subtasks/huge needs 29.3 GB of VRAM",
        ))
        .stderr(predicate::str::contains("2.0 GB"))
        .stderr(predicate::str::contains("24.0 GB"));
}

/// The most sub-task phases that ran at once, from the scripted agent's record.
fn most_at_once(p: &Project) -> usize {
    let spans: Vec<(u128, u128)> = p
        .read("agent.log")
        .lines()
        .filter(|l| l.contains("/subtasks/"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[2].parse().unwrap(), f[3].parse().unwrap())
        })
        .collect();
    spans
        .iter()
        .map(|(s, _)| spans.iter().filter(|(s2, e2)| s2 <= s && s < e2).count())
        .max()
        .unwrap_or(0)
}

#[test]
fn jobs_auto_runs_at_most_what_fits_in_vram() {
    // Four 10 GB sub-tasks beside 2 GB of weights on a faked 24 GB GPU: two at a time.
    let p = vram_project(
        "| a | 1 | - | 10k | - | A |\n| b | 1 | - | 10k | - | B |\n| c | 1 | - | 10k | - | C |\n| d | 1 | - | 10k | - | D |\n",
    );
    p.orchestrate_cmd()
        .env("AGENT_LOG", p.join("agent.log"))
        .env("AGENT_DECOMPOSITION", p.read("plan.md"))
        .env("AGENT_BEHAVIOR", "*=slow p:research=decompose")
        .env("AGENT_SLEEP", "0.3")
        .args(["--jobs", "auto", "p"])
        .timeout(Duration::from_secs(180))
        .assert()
        .code(0)
        .stderr(predicate::str::contains(
            "--jobs auto: sub-tasks start while the model's weights (2.0 GB) and their needs fit in 24.0 GB",
        ));
    let most = most_at_once(&p);
    assert!(
        (1..=2).contains(&most),
        "{most} sub-task phases ran at once"
    );
    // status and detect-vram show the figures used.
    p.cmd()
        .args(["status"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("**VRAM admission**"))
        .stdout(predicate::str::contains("- Model weights: 2.0 GB"))
        .stdout(predicate::str::contains("- Admission budget: 24.0 GB"))
        .stdout(predicate::str::contains(
            "- tasks/p/subtasks/a: needs 9.8 GB",
        ));
    p.cmd()
        .args(["detect-vram", "--human"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Model weights: 2.0 GB"))
        .stdout(predicate::str::contains("KV bytes per token: 1048576"))
        .stdout(predicate::str::contains("Admission budget: 24.0 GB"));
}

#[test]
fn jobs_auto_refuses_a_sub_task_that_can_never_fit_before_the_wave() {
    let p = vram_project("| small | 1 | - | 5k | - | S |\n| huge | 1 | - | 30k | - | H |\n");
    p.orchestrate_cmd()
        .env("AGENT_LOG", p.join("agent.log"))
        .env("AGENT_DECOMPOSITION", p.read("plan.md"))
        .env("AGENT_BEHAVIOR", "p:research=decompose")
        .args(["--jobs", "auto", "p"])
        .timeout(Duration::from_secs(60))
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "refused before the first wave started: tasks/p/subtasks/huge needs 29.3 GB of VRAM",
        ))
        .stderr(predicate::str::contains("2.0 GB"))
        .stderr(predicate::str::contains("24.0 GB"));
    // Nothing of the wave ran, not even the sub-task that fits.
    let runs = p.read("agent.log");
    assert!(!runs.contains("/subtasks/"), "{runs}");
    p.cmd()
        .args(["status"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "- tasks/p/subtasks/huge: needs 29.3 GB (never fits: refused)",
        ));
}

#[test]
#[ignore = "needs the one-node Slurm cluster: `.ci/slurm-one-node.sh start`, then `cargo test --test it -- --ignored slurm` (.ci/run does)"]
fn slurm_jobs_request_their_vram_need_as_gres() {
    require_slurm("slurm_jobs_request_their_vram_need_as_gres");
    let p = vram_project("| a | 1 | - | 10k | - | A |\n| b | 1 | - | 5k | - | B |\n");
    p.write(".automaton/.agent.md", "## Agent\n- **Slurm GRES**: vram\n");
    // Each job shows Slurm's own view of itself.
    let agent = format!(
        "scontrol show job \"$SLURM_JOB_ID\" > \"$AUTOMATON_TASK_DIR/job-$AUTOMATON_PHASE.txt\"; {}",
        crate::harness::agent_command()
    );
    orchestrate_on(&p, "slurm", None)
        .env("AGENT_DECOMPOSITION", p.read("plan.md"))
        .env("AGENT_BEHAVIOR", "p:research=decompose")
        .args(["--agent", &agent, "--jobs", "auto", "p"])
        .timeout(Duration::from_secs(240))
        .assert()
        .code(0);
    // 10k tokens × 1 MiB = 9.8 GB → 10G; 5k → 4.9 GB → 5G. Slurm shows the request as
    // `TresPerNode=gres:vram:10G`, and the allocation (where the node has the GRES) as
    // `gres/vram:10G`.
    for (task, need) in [("a", "vram:10G"), ("b", "vram:5G")] {
        let job = p.read(&format!("tasks/p/subtasks/{task}/job-research.txt"));
        assert!(
            job.contains(&format!("gres/{need}")) || job.contains(&format!("gres:{need}")),
            "{task}: {job}"
        );
    }
}
