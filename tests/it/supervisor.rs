//! The one process supervisor (`src/process/`) against real processes: SIGTERM and SIGHUP to
//! automaton stop the agent's whole group and leave the task resumable, the VRAM detection
//! script is stopped the same way (TERM, grace, KILL; Ctrl-C reaches it), and a child's exit is
//! learnt from the kernel, not from a polling tick. No timing bound here is tight: what is
//! checked is ordering and counts.

use crate::harness::{Project, SpawnGuarded, process_gone, wait_gone};
use automaton::process::{Event, Group, Options, Output};
use automaton::run::agent::{AgentEnd, AgentSpec, run_agent};
use rustix::process::{Pid, Signal, kill_process};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

fn signal(pid: u32, sig: Signal) {
    kill_process(Pid::from_raw(pid as i32).unwrap(), sig).unwrap();
}

/// A stop signal to automaton while an agent (and its grandchild) runs a phase: exit 130, both
/// processes gone, the task still at the interrupted phase with nothing half-written, and a
/// rerun completes it.
fn stop_signal_mid_phase(sig: Signal, named: &str, task: &str) {
    let p = Project::new();
    let run = p
        .orchestrate_std()
        .env("AGENT_BEHAVIOR", "design=hang")
        .arg(task.replace('-', " "))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let dir = format!("tasks/{task}");
    let grandchild = p.wait_pid(&format!("{dir}/grandchild.pid"));
    let child = p.wait_pid(&format!("{dir}/child.pid"));
    assert!(!process_gone(child) && !process_gone(grandchild));
    signal(run.id(), sig);
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{sig:?}: {out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "interrupted by {named}: every agent was stopped; run `"
        )) && stderr.contains(&format!(" orchestrate --task {dir}` to resume")),
        "{stderr}"
    );
    assert!(wait_gone(child), "agent {child} alive after {sig:?}");
    assert!(
        wait_gone(grandchild),
        "grandchild {grandchild} alive after {sig:?}"
    );
    assert_eq!(p.read(&format!("{dir}/.state")), "design\n");
    assert!(!p.join(&format!("{dir}/.stop")).exists());
    assert!(
        !p.join(&format!("{dir}/logs/agent.pid")).exists(),
        "a stopped agent leaves no pid file behind"
    );
    let tmp = std::fs::read_dir(p.join(&dir))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("tmp"))
        .count();
    assert_eq!(tmp, 0);
    p.orchestrate_cmd().args(["--task", &dir]).assert().code(0);
    assert_eq!(p.read(&format!("{dir}/.state")), "complete\n");
}

#[test]
fn sigterm_during_a_phase_stops_the_agent_group_and_the_task_resumes() {
    stop_signal_mid_phase(Signal::TERM, "SIGTERM", "term-me");
}

#[test]
fn sighup_during_a_phase_stops_the_agent_group_and_the_task_resumes() {
    stop_signal_mid_phase(Signal::HUP, "SIGHUP (the terminal closed)", "hang-up-on-me");
}

/// An interrupted run ends as every run does, with the report of the task it drove and its
/// `Summary:` line, and says which signal stopped it: `sig` sent to `orchestrate` once its
/// design phase's agent runs. Returns the exit status, stdout and stderr.
fn interrupted_mid_phase(sig: Signal, task: &str, json: bool) -> (Option<i32>, String, String) {
    let p = Project::new();
    let mut cmd = p.orchestrate_std();
    if json {
        cmd.arg("--json");
    }
    let run = cmd
        .env("AGENT_BEHAVIOR", "design=hang")
        .arg(task.replace('-', " "))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let child = p.wait_pid(&format!("tasks/{task}/child.pid"));
    signal(run.id(), sig);
    let out = run.wait_with_output().unwrap();
    assert!(wait_gone(child), "agent {child} alive after {sig:?}");
    assert_eq!(p.read(&format!("tasks/{task}/.state")), "design\n");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn ctrl_c_ends_with_the_report_the_summary_and_the_signal() {
    let (code, stdout, stderr) = interrupted_mid_phase(Signal::INT, "ctrl-c-me", false);
    assert_eq!(code, Some(130), "{stdout}{stderr}");
    // The task's block, then the summary as the last line of the report.
    assert!(
        stdout.starts_with("\n**Task: tasks/ctrl-c-me**\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("- **Command**:\n  automaton orchestrate --task tasks/ctrl-c-me\n"),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().last(),
        Some("Summary: 0 complete, 0 waiting for a person, 0 not started, 1 in progress"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("HUMAN INTERVENTION"),
        "not a person's stop: {stdout}"
    );
    assert_eq!(
        stderr.lines().last(),
        Some(
            "interrupted by SIGINT (Ctrl-C): every agent was stopped; run \
             `automaton orchestrate --task tasks/ctrl-c-me` to resume"
        ),
        "{stderr}"
    );
}

#[test]
fn sigterm_ends_with_the_report_the_summary_and_the_signal() {
    let (code, stdout, stderr) = interrupted_mid_phase(Signal::TERM, "term-report", false);
    assert_eq!(code, Some(130), "{stdout}{stderr}");
    assert_eq!(
        stdout.lines().last(),
        Some("Summary: 0 complete, 0 waiting for a person, 0 not started, 1 in progress"),
        "{stdout}"
    );
    assert_eq!(
        stderr.lines().last(),
        Some(
            "interrupted by SIGTERM: every agent was stopped; run \
             `automaton orchestrate --task tasks/term-report` to resume"
        ),
        "{stderr}"
    );
}

#[test]
fn an_interrupted_json_run_ends_with_summary_then_a_stop_naming_the_signal() {
    let (code, stdout, stderr) = interrupted_mid_phase(Signal::INT, "json-ctrl-c", true);
    assert_eq!(code, Some(130), "{stdout}{stderr}");
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let [.., summary, stop] = &events[..] else {
        panic!("{stdout}")
    };
    assert_eq!(summary["event"], "summary", "{stdout}");
    assert_eq!(
        (
            &summary["complete"],
            &summary["waiting"],
            &summary["not_started"],
            &summary["in_progress"]
        ),
        (&0.into(), &0.into(), &0.into(), &1.into()),
        "{stdout}"
    );
    assert_eq!(stop["event"], "stop", "{stdout}");
    assert_eq!(stop["kind"], "interrupted", "{stdout}");
    assert_eq!(stop["reason"], "interrupted by SIGINT (Ctrl-C)", "{stdout}");
    assert_eq!(stop["exit_code"], 130, "{stdout}");
    assert_eq!(stop["task"], "tasks/json-ctrl-c", "{stdout}");
    assert!(
        stderr.contains("interrupted by SIGINT (Ctrl-C): every agent was stopped"),
        "{stderr}"
    );
}

/// `automaton detect-vram` with `body` as the project's detection script.
fn detect(p: &Project, body: &str) -> Command {
    p.write(".automaton/scripts/vram_detect.sh", body);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_automaton"));
    cmd.arg("--project")
        .arg(p.path())
        .arg("detect-vram")
        .arg("--refresh")
        .env("HOME", p.home())
        .env("AUTOMATON_HOME", p.home().join(".automaton"))
        .env_remove("AUTOMATON_AGENT")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

#[test]
fn a_detection_script_that_ignores_sigterm_is_killed_after_the_grace() {
    let p = Project::new();
    let out = detect(
        &p,
        "trap '' TERM\necho $$ > script.pid\nsleep 1000 &\necho $! > sleeper.pid\nwait\n",
    )
    .env("AUTOMATON_VRAM_SCRIPT_TIMEOUT", "0.5")
    .env("AUTOMATON_KILL_GRACE", "300ms")
    .output()
    .unwrap();
    // It timed out, was stopped, and detection fell through to the next probe.
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("timed out"), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json.get("recommended_kb").is_some(), "{json}");
    // The script shrugged off TERM, so only the KILL after the grace ended it (and its child).
    let script = p.wait_pid("script.pid");
    let sleeper = p.wait_pid("sleeper.pid");
    assert!(wait_gone(script), "script {script} alive");
    assert!(wait_gone(sleeper), "sleeper {sleeper} alive");
}

#[test]
fn ctrl_c_during_the_detection_script_stops_it_and_exits_130() {
    let p = Project::new();
    let run = detect(
        &p,
        "echo $$ > script.pid\nsleep 1000 &\necho $! > sleeper.pid\nwait\n",
    )
    .env("AUTOMATON_VRAM_SCRIPT_TIMEOUT", "600")
    .env("AUTOMATON_KILL_GRACE", "300ms")
    .spawn()
    .unwrap();
    let script = p.wait_pid("script.pid");
    let sleeper = p.wait_pid("sleeper.pid");
    signal(run.id(), Signal::INT);
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("interrupted"),
        "{out:?}"
    );
    assert!(out.stdout.is_empty(), "no report after an interruption");
    assert!(wait_gone(script), "script {script} alive");
    assert!(wait_gone(sleeper), "sleeper {sleeper} alive");
    assert!(!p.join(".automaton/.vram_cache.json").exists());
}

/// Voluntary context switches of the calling thread so far: each time it blocked.
fn blocked_count() -> u64 {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// The runner learns that the agent exited (and printed) from the kernel: an agent that runs
/// for two seconds costs the waiting thread a handful of blocking waits, however long it runs,
/// where a polling loop blocks once per tick (a 1–10 ms loop: 200 or more; even a 50 ms one:
/// 40). Measured as a count, so a loaded machine cannot make it flaky.
#[test]
fn a_child_that_exits_is_noticed_from_the_kernel_not_a_tick() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("agent.log");
    // The signal policy's flag, as `orchestrate` passes it: its changes come with a wake-up, so
    // the runner needs no tick to see a stop either. (Nothing signals this test process.)
    let cancel = automaton::process::signals::install().unwrap();
    let spec = AgentSpec {
        command: "echo start; sleep 2; echo end",
        cwd: dir.path(),
        env: &[],
        prompt: "",
        log_path: &log,
        phase_timeout: Duration::from_secs(600),
        stall_timeout: Some(Duration::from_secs(600)),
        deadline: Some(Instant::now() + Duration::from_secs(600)),
        cancel: &cancel,
        contract_grace: Duration::from_secs(600),
        kill_grace: Duration::from_secs(5),
        on_line: None,
        on_output: None,
        pid_file: None,
        sync_once_started: None,
        stop: None,
    };
    let before = blocked_count();
    let out = run_agent(&spec).unwrap();
    let blocked = blocked_count() - before;
    assert_eq!(
        out.end,
        AgentEnd::Exited(automaton::run::agent::ExitStatusInfo {
            code: Some(0),
            signal: None
        })
    );
    assert_eq!(out.last_line.as_deref(), Some("end"));
    // Wake-ups: the spawn, the two lines, the exit, and a few for the filesystem.
    assert!(blocked < 20, "the runner blocked {blocked} times");
}

#[test]
fn a_process_that_left_the_group_does_not_hold_up_the_exit() {
    // The leader starts a process in a session of its own (out of the supervisor's reach on
    // purpose) that holds the output pipes and sleeps, then exits. The exit is noticed and
    // the group finished while that process still sleeps: nothing waits for the pipes to close.
    let dir = tempfile::tempdir().unwrap();
    let cancel = AtomicBool::new(false);
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(
            "setsid sh -c 'echo $$ > straggler.pid; exec sleep 30' & \
             while [ ! -s straggler.pid ]; do sleep 0.01; done; exit 0",
        )
        .current_dir(dir.path());
    let mut group = Group::spawn(
        cmd,
        Options {
            stdin: None,
            output: Output::Capture { max: 1024 },
            cancel: &cancel,
            kill_grace: Duration::from_secs(5),
        },
    )
    .unwrap();
    let status = loop {
        match group.wait(None).unwrap() {
            Event::Exited(status) => break status,
            Event::Woke => {}
            Event::Cancelled => panic!("not cancelled"),
        }
    };
    group.finish().unwrap();
    assert!(status.success());
    assert!(group.leftovers().is_empty());
    let straggler: i32 = std::fs::read_to_string(dir.path().join("straggler.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Outside the group, so the supervisor left it alone: still asleep, 30 s to go.
    assert!(
        !process_gone(straggler),
        "the straggler is not the supervisor's to stop"
    );
    let _ = kill_process(Pid::from_raw(straggler).unwrap(), Signal::KILL);
    assert!(wait_gone(straggler));
}

#[test]
fn capture_keeps_stdout_and_stderr_apart_and_stops_the_group_on_exit() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = AtomicBool::new(false);
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("sleep 1000 & echo $! > bg.pid; echo out; echo err >&2; exit 4")
        .current_dir(dir.path());
    let mut group = Group::spawn(
        cmd,
        Options {
            stdin: None,
            output: Output::Capture { max: 1024 },
            cancel: &cancel,
            kill_grace: Duration::from_secs(5),
        },
    )
    .unwrap();
    let status = loop {
        if let Event::Exited(s) = group.wait(None).unwrap() {
            break s;
        }
    };
    assert_eq!(status.code(), Some(4));
    // The background sleeper holds the pipes open; finishing stops it (TERM is enough).
    assert_eq!(group.finish().unwrap().code(), Some(4));
    let bg: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_gone(bg), "background member {bg} alive");
    let (out, err) = group.take_output();
    assert_eq!(out, b"out\n");
    assert_eq!(err, b"err\n");
}

/// The watchdog every agent runs under (`src/process/shim.rs`) waits on the kernel too: over a
/// 2 s phase it blocks a handful of times, where a 20 ms polling tick would block about 100.
/// A command the shell would only split into words is started by the watchdog itself (no
/// `sh -c` in between), so the agent's parent is the watchdog.
#[test]
fn the_watchdog_waits_on_the_kernel_and_starts_a_plain_command_itself() {
    let p = Project::new();
    p.write(
        "agent.sh",
        "cat >/dev/null; sleep 2\n\
         cat /proc/$PPID/comm > \"$AUTOMATON_PROJECT/parent.comm\"\n\
         tr '\\0' ' ' < /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/cmdline > \"$AUTOMATON_PROJECT/grandparent\"\n\
         grep '^voluntary_ctxt_switches' /proc/$PPID/status > \"$AUTOMATON_PROJECT/parent.ctx\"\n\
         echo done > \"$AUTOMATON_ARTIFACT\"\n",
    );
    let agent = format!("sh {}", p.join("agent.sh").display());
    p.orchestrate_cmd()
        .args(["--step", "--agent", &agent, "watch the watchdog"])
        .assert()
        .code(25); // one step done: waiting for the next

    assert_eq!(p.read("parent.comm").trim(), "automaton");
    // The watchdog is automaton's own child, one per agent.
    assert!(
        p.read("grandparent").contains(" orchestrate "),
        "{}",
        p.read("grandparent")
    );
    let switches = voluntary_switches(&p.read("parent.ctx"));
    assert!(
        switches < 20,
        "the watchdog blocked {switches} times in 2 s"
    );
}

/// An agent command (`sh agent.sh`) that reads its prompt, runs `body`, then writes its
/// phase's artifact (a passing verdict for the referee).
fn phase_agent(p: &Project, body: &str) -> String {
    p.write(
        "agent.sh",
        format!(
            "cat >/dev/null\n{body}\
             case $AUTOMATON_PHASE in referee) echo 'Verdict: PASS' ;; *) echo done ;; esac \
               > \"$AUTOMATON_ARTIFACT\"\n"
        ),
    );
    format!("sh {}", p.join("agent.sh").display())
}

/// An agent may change its watchdog's priority or limits (`renice -p $PPID`,
/// `prlimit --pid $PPID`); the next agent must not inherit that: every agent gets a watchdog
/// of its own.
#[test]
fn an_agent_that_renices_or_limits_its_watchdog_changes_no_later_agent() {
    let p = Project::new();
    let agent = phase_agent(
        &p,
        "echo \"$AUTOMATON_PHASE $PPID $(nice) $(ulimit -n)\" >> \"$AUTOMATON_PROJECT/runs\"\n\
         case $AUTOMATON_PHASE in\n\
           research) renice -n 5 -p $PPID >/dev/null ;;\n\
           design) prlimit --pid $PPID --nofile=100: ;;\n\
         esac\n",
    );
    p.orchestrate_cmd()
        .args(["--agent", &agent, "change my watchdog"])
        .assert()
        .success();
    let runs = p.read("runs");
    let runs: Vec<Vec<&str>> = runs.lines().map(|l| l.split(' ').collect()).collect();
    assert_eq!(runs.len(), 8, "{runs:?}");
    // Every agent starts with the priority and limit the first one had.
    for run in &runs {
        assert_eq!(run[2..], runs[0][2..], "{runs:?}");
    }
    // The two watchdogs that were changed ran no later agent.
    assert_ne!(runs[0][1], runs[1][1], "{runs:?}");
    assert_ne!(runs[1][1], runs[2][1], "{runs:?}");
}

/// The watchdog's own stop of a leftover waits on the kernel as well: a daemonized descendant
/// that ignores SIGTERM keeps it waiting for the whole kill grace, and in that time it blocks
/// a handful of times, where a 10 ms nap between looks would block about 80 times in 0.8 s.
#[test]
fn the_watchdog_waits_for_leftovers_without_a_tick() {
    let p = Project::new();
    p.write(
        "agent.sh",
        "cat >/dev/null\n\
         (setsid sh -c 'trap \"\" TERM; touch \"$AUTOMATON_PROJECT/ready\"; sleep 0.8; \
           w=$(cut -d\" \" -f4 /proc/$$/stat); \
           grep ^voluntary_ctxt_switches /proc/$w/status > \"$AUTOMATON_PROJECT/watchdog.ctx\"; \
           exec sleep 30' </dev/null >/dev/null 2>&1 &)\n\
         while [ ! -f \"$AUTOMATON_PROJECT/ready\" ]; do sleep 0.01; done\n\
         echo done > \"$AUTOMATON_ARTIFACT\"\n",
    );
    let agent = format!("sh {}", p.join("agent.sh").display());
    p.orchestrate_cmd()
        .env("AUTOMATON_KILL_GRACE", "3s")
        .args(["--step", "--agent", &agent, "leave a daemon behind"])
        .assert()
        .code(25);
    let switches = voluntary_switches(&p.read("watchdog.ctx"));
    assert!(
        switches < 20,
        "the watchdog blocked {switches} times while it waited for a leftover"
    );
}

/// The count of a `voluntary_ctxt_switches:` line of `/proc/<pid>/status`.
fn voluntary_switches(line: &str) -> u64 {
    line.split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a voluntary_ctxt_switches line: {line:?}"))
}

/// An agent starts with no signal blocked and every signal at its default disposition but
/// those automaton itself was started ignoring (as `nohup` or a shell's background job leaves
/// them) and does not handle: SIGUSR1, ignored by automaton's parent, stays ignored; SIGPIPE,
/// which Rust ignores for itself, is the default again, and so is SIGQUIT, which automaton
/// handles.
#[test]
fn an_agent_starts_with_the_signals_automaton_was_given() {
    use std::os::unix::process::CommandExt;
    let p = Project::new();
    // The agent's own process reads its status: `exec` makes grep that process (its mask and
    // dispositions are the shell's as started; the shell blocks every signal while it waits
    // for a child, so a child reading the shell's status could see them all blocked).
    p.write(
        "agent.sh",
        "echo done > \"$AUTOMATON_ARTIFACT\"\n\
         exec grep -E '^Sig(Blk|Ign):' /proc/self/status > \"$AUTOMATON_PROJECT/signals\"\n",
    );
    let mut run = p.orchestrate_std();
    run.args(["--agent", "sh agent.sh", "--step", "show the signals"]);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        run.pre_exec(|| {
            for sig in [libc::SIGUSR1, libc::SIGPIPE, libc::SIGQUIT] {
                libc::signal(sig, libc::SIG_IGN);
            }
            Ok(())
        });
    }
    let status = run.status().unwrap();
    assert_eq!(status.code(), Some(25), "one step done");
    let text = p.read("signals");
    let mask = |name: &str| {
        let line = text.lines().find(|l| l.starts_with(name)).expect(name);
        u64::from_str_radix(line[name.len()..].trim(), 16).unwrap()
    };
    assert_eq!(mask("SigBlk:"), 0, "{text}");
    // The standard signals (glibc keeps two real-time ones of its own ignored).
    let standard = mask("SigIgn:") & 0x7fff_ffff;
    assert_eq!(standard, 1 << (libc::SIGUSR1 - 1), "{text}");
}

/// The state letter of `/proc/<pid>/stat` (`T`: stopped), or `None` once the process is gone.
fn proc_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Wait (up to `PATIENCE`) for a process to be in state `want`.
fn wait_state(pid: i32, want: char) -> Option<char> {
    let start = Instant::now();
    loop {
        let now = proc_state(pid);
        if now == Some(want) || start.elapsed() > crate::harness::PATIENCE {
            return now;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Job control: Ctrl-Z (SIGTSTP) stops automaton and its agent's whole group, and the phase,
/// stall and total-time clocks stand still meanwhile; `fg` (SIGCONT) resumes both. An agent
/// that needs about 2 s of running (short sleeps, so time spent stopped does not count for it
/// either) under a 3 s phase cap, stopped for longer than the cap, still completes its phase,
/// where a clock that ran on would have timed it out (exit 13) or called it stalled (exit 14).
#[test]
fn ctrl_z_stops_the_agents_and_the_clocks_and_fg_resumes_them() {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n",
    );
    let agent = phase_agent(
        &p,
        "if [ \"$AUTOMATON_PHASE\" = research ]; then\n\
           echo $$ > \"$AUTOMATON_PROJECT/agent.pid.t\" && mv \"$AUTOMATON_PROJECT/agent.pid.t\" \"$AUTOMATON_PROJECT/agent.pid\"\n\
           i=0; while [ $i -lt 15 ]; do sleep 0.1; i=$((i + 1)); done\n\
         fi\n",
    );
    let mut run = p
        .orchestrate_std()
        .args(["--max-phase-time", "3s", "--stall-timeout", "3s"])
        .args(["--max-total-time", "20s", "--agent", &agent, "pause me"])
        .spawn_guarded();
    let agent_pid = p.wait_pid("agent.pid");
    signal(run.id(), Signal::TSTP);
    assert_eq!(wait_state(run.id() as i32, 'T'), Some('T'), "automaton");
    assert_eq!(wait_state(agent_pid, 'T'), Some('T'), "the agent runs on");
    // Stopped for longer than the phase cap and the stall timeout: still stopped.
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(proc_state(agent_pid), Some('T'));
    assert_eq!(proc_state(run.id() as i32), Some('T'));
    signal(run.id(), Signal::CONT);
    let status = run.wait().unwrap();
    assert_eq!(status.code(), Some(0), "the phase did not complete");
    let task = std::fs::read_dir(p.join("tasks"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(
        std::fs::read_to_string(task.join(".state")).unwrap(),
        "complete\n"
    );
    assert!(task.join("logs/research-1.log").exists());
    assert!(
        !task.join("logs/research-2.log").exists(),
        "research ran again"
    );
}
