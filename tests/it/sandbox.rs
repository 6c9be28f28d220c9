//! `- **Sandbox**: bwrap`: a scripted agent inside bubblewrap writes its worktree and its task
//! folder and nothing else of the machine; sees no secret of automaton's environment, no real
//! home, no process outside; reaches only the endpoints `Network: model` allows (a refused
//! host is logged and counted in the journal); and a timeout or Ctrl-C still leaves nothing
//! running. Without bubblewrap the run is refused (exit 24), never run unsandboxed.
//!
//! These tests need `bwrap` on PATH (`apt-get install bubblewrap`; `.ci/run` installs it);
//! they fail, not pass, where it is missing.

use crate::harness::{PATIENCE, Project};
use crate::isolation::git;
use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

/// The probing agent: each phase writes its artifact (a PASS verdict at the referee) after
/// `probe`'s lines, which go to `$AUTOMATON_TASK_DIR/probe.txt`.
fn agent(probe: &str) -> String {
    format!(
        "#!/bin/sh\n\
         exec 3>\"$AUTOMATON_TASK_DIR/probe.txt\"\n\
         {probe}\n\
         if [ \"$AUTOMATON_PHASE\" = referee ]; then\n\
           printf '# Verdict\\n\\nVerdict: PASS\\n' > \"$AUTOMATON_ARTIFACT\"\n\
         else\n\
           printf '# %s\\n\\ndone\\n' \"$AUTOMATON_PHASE\" > \"$AUTOMATON_ARTIFACT\"\n\
         fi\n\
         echo CONTRACT_MET\n"
    )
}

/// A git project whose agent is `probe.sh` (committed, so a worktree has it), run sandboxed.
fn project(probe: &str, agent_md_extra: &str) -> Project {
    let p = Project::new();
    p.write("README.md", "# demo\n")
        .write("probe.sh", agent(probe))
        .write(
            ".automaton/.agent.md",
            format!(
                "# Agent\n- **Agent command**: sh ./probe.sh\n- **Sandbox**: bwrap\n{agent_md_extra}"
            ),
        )
        .write("tasks/a/SPEC.md", "# Spec\nprobe the sandbox\n");
    git(p.path(), &["init", "-q"]);
    git(p.path(), &["add", "README.md", "probe.sh", ".automaton"]);
    git(p.path(), &["commit", "-q", "-m", "init"]);
    p
}

fn probe_lines(p: &Project) -> String {
    p.read("tasks/a/probe.txt")
}

#[test]
fn the_agent_writes_its_worktree_and_task_folder_and_nothing_else() {
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("victim"), "keep me\n").unwrap();
    let mut victim = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let probe = format!(
        "try() {{ if eval \"$2\" 2>/dev/null; then echo \"$1: yes\" >&3; else echo \"$1: no\" >&3; fi; }}\n\
         try worktree 'echo w > \"$PWD/from-agent.txt\"'\n\
         try task-folder 'echo t > \"$AUTOMATON_TASK_DIR/from-agent.txt\"'\n\
         try project-root 'echo r > \"$AUTOMATON_PROJECT/from-agent.txt\"'\n\
         try etc 'echo e > /etc/automaton-sandbox-probe'\n\
         try other-checkout 'echo o > {other}/victim'\n\
         try home-victim 'cat \"$HOME/victim\" >/dev/null'\n\
         try ssh-key 'cat \"$HOME/.ssh/id_ed25519\" >/dev/null'\n\
         try kill-outside 'kill -9 \"$VICTIM_PID\"'\n\
         echo \"secret: ${{MY_SECRET:-absent}}\" >&3\n\
         echo \"passed: ${{PASSED_ON:-absent}}\" >&3\n",
        other = other.path().display()
    );
    let p = project(
        &probe,
        "- **Isolation**: worktree\n- **Pass env**: VICTIM_PID, PASSED_*\n- **Network**: none\n",
    );
    p.write_home("victim", "keep me\n")
        .write_home(".ssh/id_ed25519", "FAKE PRIVATE KEY\n");
    p.orchestrate()
        .env_remove("AUTOMATON_AGENT")
        .env("MY_SECRET", "sk-live-0123456789abcdef")
        .env("PASSED_ON", "yes-please")
        .env("VICTIM_PID", victim.id().to_string())
        .args(["--task", "tasks/a"])
        .stdout_any()
        .stderr_any()
        .run();
    let lines = probe_lines(&p);
    for want in [
        "worktree: yes",
        "task-folder: yes",
        "project-root: no",
        "etc: no",
        "home-victim: no",
        "ssh-key: no",
        "kill-outside: no",
        "secret: absent",
        "passed: yes-please",
    ] {
        assert!(
            lines.contains(want),
            "{want:?} not in the probe's lines:\n{lines}"
        );
    }
    // Whatever the agent wrote elsewhere went to its private /tmp, not to the machine.
    assert_eq!(
        std::fs::read_to_string(other.path().join("victim")).unwrap(),
        "keep me\n"
    );
    assert_eq!(
        std::fs::read_to_string(p.home().join("victim")).unwrap(),
        "keep me\n"
    );
    assert!(
        !p.join("from-agent.txt").exists(),
        "the agent wrote the project root"
    );
    assert!(!Path::new("/etc/automaton-sandbox-probe").exists());
    assert!(
        victim.try_wait().unwrap().is_none(),
        "the agent killed a process outside"
    );
    victim.kill().unwrap();
    let _ = victim.wait();
    // The worktree's file came back with the task's branch: the agent's work is kept.
    assert_eq!(p.state_of("tasks/a"), "complete");
    assert_eq!(p.read("tasks/a/from-agent.txt"), "t\n");
}

/// A loopback server answering every connection with `hello <port>`.
fn server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let _ = conn.write_all(format!("hello {port}\n").as_bytes());
        }
    });
    port
}

/// Probe lines that connect to each port of `ports` and ask the proxy (when there is one)
/// for `refused.example`.
fn network_probe(ports: &[u16]) -> String {
    let ports = ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let script = r#"
import os, socket, urllib.request
for port in (PORTS,):
    try:
        s = socket.create_connection(('127.0.0.1', port), timeout=5)
        print('port', port, s.recv(64).decode().strip())
    except OSError as e:
        print('port', port, 'failed', type(e).__name__)
try:
    urllib.request.urlopen('http://refused.example/', timeout=5)
    print('refused.example: reached')
except Exception as e:
    print('refused.example:', getattr(e, 'code', type(e).__name__))
print('proxy:', os.environ.get('HTTPS_PROXY', 'none'))
"#;
    format!(
        "python3 - <<'PY' >&3 2>&1\n{}\nPY\n",
        script.replace("PORTS", &ports)
    )
}

#[test]
fn network_model_reaches_the_allowed_port_only_and_counts_what_it_refused() {
    let (allowed, other) = (server(), server());
    let p = project(
        &network_probe(&[allowed, other]),
        &format!(
            "- **Isolation**: none\n- **Network allow**: 127.0.0.1:{allowed}, models.example\n"
        ),
    );
    p.orchestrate()
        .env_remove("AUTOMATON_AGENT")
        .args(["--task", "tasks/a"])
        .stdout_any()
        .stderr_any()
        .run();
    let lines = probe_lines(&p);
    assert!(
        lines.contains(&format!("port {allowed} hello {allowed}")),
        "{lines}"
    );
    assert!(lines.contains(&format!("port {other} failed")), "{lines}");
    assert!(lines.contains("refused.example: 403"), "{lines}");
    assert!(lines.contains("proxy: http://127.0.0.1:"), "{lines}");
    let log = p.read("tasks/a/logs/referee-1.log");
    assert!(
        log.contains("the sandbox refused 1 connection(s) to refused.example:80"),
        "{log}"
    );
    let journal = p.read("tasks/a/logs/journal.jsonl");
    let last: serde_json::Value = serde_json::from_str(journal.lines().last().unwrap()).unwrap();
    assert_eq!(last["refused_hosts"]["refused.example:80"], 1, "{journal}");
}

#[test]
fn network_none_reaches_nothing() {
    let allowed = server();
    let p = project(
        &network_probe(&[allowed]),
        &format!(
            "- **Isolation**: none\n- **Network**: none\n- **Network allow**: 127.0.0.1:{allowed}\n"
        ),
    );
    p.orchestrate()
        .env_remove("AUTOMATON_AGENT")
        .args(["--task", "tasks/a"])
        .stdout_any()
        .stderr_any()
        .run();
    let lines = probe_lines(&p);
    assert!(lines.contains(&format!("port {allowed} failed")), "{lines}");
    assert!(lines.contains("proxy: none"), "{lines}");
    assert!(!lines.contains("refused.example: reached"), "{lines}");
}

/// Processes of this machine whose command line holds `marker`.
fn running_with(marker: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .collect()
}

fn wait_until(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < PATIENCE, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An agent that leaves a daemon behind inside the sandbox and then hangs.
fn hanging(marker: &str) -> String {
    format!("(setsid sleep {marker} &) ; echo started >&3; sleep {marker}\n")
}

#[test]
fn a_timeout_leaves_nothing_running_in_the_sandbox() {
    let marker = "3133.25";
    let p = project(
        &hanging(marker),
        "- **Isolation**: none\n- **Network**: none\n",
    );
    p.orchestrate()
        .env_remove("AUTOMATON_AGENT")
        .args(["--task", "tasks/a", "--max-phase-time", "3s"])
        .status(13)
        .stdout_any()
        .stderr_any()
        .run();
    assert_eq!(probe_lines(&p), "started\n");
    wait_until("a process of the sandbox outlived the timeout", || {
        running_with(marker).is_empty()
    });
}

#[test]
fn ctrl_c_leaves_nothing_running_in_the_sandbox() {
    let marker = "3133.75";
    let p = project(
        &hanging(marker),
        "- **Isolation**: none\n- **Network**: none\n",
    );
    let mut run = p
        .orchestrate_std()
        .env_remove("AUTOMATON_AGENT")
        .args(["--task", "tasks/a"])
        .spawn()
        .unwrap();
    wait_until("the sandboxed agent never started", || {
        running_with(marker).len() >= 2
    });
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(run.id() as i32).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let status = run.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    wait_until("a process of the sandbox outlived Ctrl-C", || {
        running_with(marker).is_empty()
    });
}

#[test]
fn without_bubblewrap_the_run_is_refused_and_nothing_runs() {
    let p = project("echo ran >&3", "- **Isolation**: none\n");
    // A PATH with git and sh but no bwrap.
    let bin = tempfile::tempdir().unwrap();
    for tool in ["git", "sh"] {
        let real = which(tool);
        std::os::unix::fs::symlink(real, bin.path().join(tool)).unwrap();
    }
    p.orchestrate()
        .env_remove("AUTOMATON_AGENT")
        .env("PATH", bin.path())
        .args(["--task", "tasks/a"])
        .status(24)
        .stderr_contains("needs bubblewrap, and `bwrap` is not on PATH: install it")
        .stderr_contains("or set `- **Sandbox**: none`")
        .run();
    assert!(!p.join("tasks/a/probe.txt").exists());
    assert!(!p.join("tasks/a/logs").exists());
}

#[test]
fn network_model_with_the_slurm_executor_is_refused_in_one_readable_sentence() {
    let p = project(
        "echo ran >&3",
        "- **Isolation**: none\n- **Executor**: slurm\n",
    );
    p.orchestrate()
        .env_remove("AUTOMATON_AGENT")
        .args(["--task", "tasks/a"])
        .status(2)
        .stderr_contains(
            "bridges the agent's network through automaton on this machine, and a Slurm job \
             runs elsewhere: set `- **Network**: none` or `open` for the slurm executor",
        )
        .run();
    assert!(!p.join("tasks/a/probe.txt").exists());
}

fn which(tool: &str) -> std::path::PathBuf {
    std::env::var("PATH")
        .unwrap()
        .split(':')
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{tool} not on PATH"))
}

/// The sandbox tests need bubblewrap: say so plainly rather than fail obscurely.
#[test]
fn bubblewrap_is_installed_for_these_tests() {
    let found = std::process::Command::new("bwrap")
        .arg("--version")
        .output()
        .map(|o| o.status.success());
    assert!(
        matches!(found, Ok(true)),
        "the sandbox tests need bubblewrap: apt-get install bubblewrap"
    );
}

#[test]
fn an_agent_script_outside_the_project_under_tmp_still_runs_in_the_sandbox() {
    // `/tmp` is private inside the sandbox; the agent command's own script is bound back
    // read-only, so the line that passed the preflight runs as it does without the sandbox.
    let scripts = tempfile::tempdir().unwrap();
    let script = scripts.path().join("agent.sh");
    std::fs::write(&script, agent("true")).unwrap();
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        format!(
            "# Agent\n- **Agent command**: sh {}\n- **Sandbox**: bwrap\n- **Network**: none\n",
            script.display()
        ),
    )
    .write("tasks/a/SPEC.md", "# Spec\nrun from /tmp\n");
    p.orchestrate()
        .env_remove("AUTOMATON_AGENT")
        .args(["--task", "tasks/a"])
        .stdout_any()
        .stderr_any()
        .run();
    assert_eq!(p.state_of("tasks/a"), "complete");
}

#[test]
fn config_shows_what_passes_into_the_sandbox_names_only() {
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        "# Agent\n- **Agent**: claude\n- **Sandbox**: bwrap\n- **Pass env**: MY_TOKEN\n\
         - **Network allow**: 127.0.0.1:9\n- **Sandbox writable**: /srv/cache\n",
    );
    let out = p
        .command()
        .arg("config")
        .env("MY_TOKEN", "sk-live-0123456789abcdef")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let block = &text[text
        .find("sandbox (bwrap) of the claude agent")
        .unwrap_or_else(|| panic!("no sandbox block in:\n{text}"))..];
    for want in [
        "ANTHROPIC_*",
        "MY_TOKEN",
        "~/.claude",
        "/srv/cache",
        "network                        model: 127.0.0.1:9, api.anthropic.com:443",
    ] {
        assert!(block.contains(want), "{want:?} not in:\n{block}");
    }
    assert!(!text.contains("sk-live"), "a value was shown:\n{text}");
    let json = p.command().args(["config", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["sandbox"]["agent"], "claude");
    assert_eq!(v["sandbox"]["network"], "model");
    assert!(
        v["sandbox"]["env"]
            .as_array()
            .unwrap()
            .contains(&"MY_TOKEN".into()),
        "{v}"
    );
}
