//! `automaton watch`: the `--once` frame, the plain lines of a pipe, and the full-screen view
//! in a real terminal (tmux), over real project folders, while real runs change them.

use crate::harness::Project;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// How long anything may take on a loaded machine before a test gives up.
const DEADLINE: Duration = Duration::from_secs(60);

const DECOMP: &str = "| Sub-task | Wave | Depends on | Estimated peak context |\n|---|---|---|---|\n| a | 1 | - | 6k |\n| b | 1 | - | 6k |\n| c | 2 | a | 8k |\n| d | 2 | b | 8k |\n";

/// A parent with waves (a sub-task that failed, one in progress with usage and a log, one
/// blocked, one not created yet), a complete task with usage and a corrupt `.state`.
fn fixture() -> Project {
    let p = Project::new();
    p.write("tasks/auth/SPEC.md", "x")
        .write("tasks/auth/DECOMPOSITION.md", DECOMP)
        .write("tasks/auth/subtasks/a/VERDICT.md", "Verdict: FAIL\n")
        .write("tasks/auth/subtasks/b/SPEC.md", "x")
        .write("tasks/auth/subtasks/b/DESIGN.md", "x")
        .write(
            "tasks/auth/subtasks/b/logs/journal.jsonl",
            "{\"v\":2,\"phase\":\"research\",\"seconds\":65.2,\"tokens\":12345,\"cost_usd\":0.5}\n\
             {\"v\":2,\"phase\":\"design\",\"seconds\":10,\"tokens\":1000,\"cost_usd\":0.25}\n",
        )
        .write(
            "tasks/auth/subtasks/b/logs/design-1.log",
            "\x1b[32mthinking\x1b[0m about the design\nwrote DESIGN.md\n",
        )
        .mkdir("tasks/auth/subtasks/c")
        .write("tasks/docs/VERDICT.md", "Verdict: PASS\n")
        .write(
            "tasks/docs/logs/journal.jsonl",
            "{\"v\":2,\"phase\":\"referee\",\"seconds\":3,\"tokens\":2000000,\"cost_usd\":12}\n",
        )
        .write("tasks/docs/.state", "nonsense\n");
    p
}

fn once(p: &Project, size: &str) -> String {
    let out = p
        .cmd()
        .args(["watch", "--once", "--size", size])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .replace(&p.path().display().to_string(), "<project>")
}

#[test]
fn once_frame_shows_waves_blocked_human_usage_and_warnings() {
    let p = fixture();
    let frame = once(&p, "110x24");
    let expected = "\
automaton watch <project>
run: no automaton drives this project · jobs 0/4
5 tasks · 1 complete · 0 running · 1 human · 1 blocked · 2,013,345 tokens · $12.75
⚠ 1 warning; last: tasks/docs/.state: unknown state `nonsense` (ignored; the artifacts decide)
┌ tasks 1-5 of 5 ────────────────────────────────────────────────────────────────────────────────────────────┐
│TASK                     STATE              PHASE            ELAPSED TOKENS    COST    NOTE                 │
│auth                     decomposition      subtasks                                   waiting on b, d      │
│  wave 1                                                                                                    │
│    a                    human_intervention human                                      referee verdict is FA│
│    b                    test_design        test_design      1m15s   13,345    $0.75                        │
│  wave 2                                                                                                    │
│    c                    new                blocked                                    blocked by a         │
│    d                    not created                                                                        │
│docs                     complete           none             3s      2,000,000 $12.00  .state unknown       │
│                                                                                                            │
│                                                                                                            │
└────────────────────────────────────────────────────────────────────────────────────────────────────────────┘
┌ log: tasks/auth ───────────────────────────────────────────────────────────────────────────────────────────┐
│(no phase has run yet)                                                                                      │
│                                                                                                            │
│                                                                                                            │
│                                                                                                            │
└────────────────────────────────────────────────────────────────────────────────────────────────────────────┘
 row 1/8
";
    assert_eq!(frame, expected, "frame:\n{frame}");
    // `--once` reads no keys: it lists none.
    assert!(!frame.contains("q quit"), "{frame}");
    // Reads only: nothing was written into the project (no lock, no cache).
    assert!(!p.join(".automaton").exists());
}

/// The header and the table's title count the same tasks (wave labels and sub-tasks not
/// created yet are rows, not tasks), a single one as "1 task"; and an agent that reports no
/// usage is shown as unknown usage, not as 0 tokens and $0.00.
#[test]
fn once_frame_counts_agree_and_unreported_usage_is_unknown() {
    let p = Project::new();
    p.write("tasks/solo/SPEC.md", "x").write(
        "tasks/solo/logs/journal.jsonl",
        "{\"v\":2,\"phase\":\"research\",\"seconds\":4}\n",
    );
    let frame = once(&p, "110x20");
    let lines: Vec<&str> = frame.lines().collect();
    assert_eq!(
        lines[2], "1 task · 0 complete · 0 running · 0 human · 0 blocked · usage unknown",
        "{frame}"
    );
    assert!(lines[3].starts_with("┌ task 1 of 1 ─"), "{frame}");
    assert!(
        !frame.contains("$0.00") && !frame.contains("0 tokens"),
        "{frame}"
    );
    assert!(!frame.contains("1 tasks"), "{frame}");

    // Tokens reported without a cost: the cost alone is unknown.
    p.write(
        "tasks/other/logs/journal.jsonl",
        "{\"v\":2,\"phase\":\"research\",\"seconds\":4,\"tokens\":1500}\n",
    );
    let frame = once(&p, "110x20");
    assert!(
        frame.contains(
            "2 tasks · 0 complete · 0 running · 0 human · 0 blocked · 1,500 tokens · cost unknown\n"
        ),
        "{frame}"
    );
    assert!(frame.contains("┌ tasks 1-2 of 2 ─"), "{frame}");

    // A parent's plan rows: the title counts the two tasks, not the four rows.
    let q = Project::new();
    q.write("tasks/auth/SPEC.md", "x")
        .write(
            "tasks/auth/DECOMPOSITION.md",
            "| Sub-task | Wave | Depends on | Estimated peak context |\n|---|---|---|---|\n| a | 1 | - | 6k |\n| b | 1 | - | 6k |\n",
        )
        .mkdir("tasks/auth/subtasks/a");
    let frame = once(&q, "110x20");
    assert!(frame.contains("\n2 tasks · "), "{frame}");
    assert!(frame.contains("┌ tasks 1-2 of 2 ─"), "{frame}");
}

/// What matters comes first, whatever the names: the task whose agent runs, then those
/// waiting for a person (the note says for what: the gate; a parent comes where its failed
/// sub-task does, the sub-task blocked by it below), then the rest in name order.
#[test]
fn once_frame_puts_running_then_waiting_for_a_person_first() {
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        "# Agent\n\n## Agent\n- **Approve before**: design\n",
    )
    .mkdir("tasks/alpha")
    .write("tasks/api/SPEC.md", "x")
    .write("tasks/build/SPEC.md", "x")
    .write(
        "tasks/build/DECOMPOSITION.md",
        "| Sub-task | Wave | Depends on | Estimated peak context |\n|---|---|---|---|\n| x | 1 | - | 6k |\n| y | 2 | x | 6k |\n",
    )
    .write("tasks/build/subtasks/x/VERDICT.md", "Verdict: FAIL\n")
    .mkdir("tasks/build/subtasks/y")
    .write("tasks/zeta/SPEC.md", "x")
    .write("tasks/zeta/DESIGN.md", "x")
    .write("tasks/zeta/logs/test_design-1.log", "drafting the test plan\n")
    // A live process (this test's) as the phase agent's group: the task runs now.
    .write(
        "tasks/zeta/logs/agent.pid",
        format!("v2 group {} 0 0 0\n", std::process::id()),
    );
    let frame = once(&p, "150x22");
    // The running phase's elapsed time is the clock's: shown as `<t>`, same width.
    let frame = regex::Regex::new(r"(▶ test_design #1 +)(\d+s)( +)")
        .unwrap()
        .replace(&frame, |c: &regex::Captures| {
            format!("{}{:<w$}", &c[1], "<t>", w = c[2].len() + c[3].len())
        })
        .into_owned();
    insta::assert_snapshot!("watch_once_running_gated_blocked", frame);
}

#[test]
fn once_frame_draws_only_what_fits() {
    let p = Project::new();
    for i in 0..300 {
        p.mkdir(&format!("tasks/t{i:03}"));
    }
    let frame = once(&p, "80x20");
    assert_eq!(frame.lines().count(), 20);
    // 20 rows: 3 of header, 1 of keys, 5 of log, the tree's borders and titles: 8 tasks.
    assert!(frame.contains("┌ tasks 1-8 of 300 "), "{frame}");
    assert!(
        frame.contains("│t007 ") && !frame.contains("t008"),
        "{frame}"
    );
    assert!(frame.contains("300 tasks · 0 complete"), "{frame}");
}

#[test]
fn once_with_no_tasks_and_bad_size() {
    let p = Project::new();
    let frame = once(&p, "60x20");
    assert!(frame.contains("0 tasks"), "{frame}");
    assert!(frame.contains("no tasks"), "{frame}");
    p.cmd()
        .args(["watch", "--once", "--size", "60"])
        .assert()
        .code(2);
}

/// `watch` in a pipe, its lines read on a thread; killed when dropped.
struct Piped {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Piped {
    fn start(p: &Project, env: &[(&str, &str)]) -> Piped {
        let mut c = Command::new(env!("CARGO_BIN_EXE_automaton"));
        c.arg("--project")
            .arg(p.path())
            .arg("watch")
            .env("HOME", p.home())
            .env("AUTOMATON_HOME", p.home().join(".automaton"))
            .env_remove("AUTOMATON_WATCH_POLL")
            .stdout(Stdio::piped())
            .stdin(Stdio::null());
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c.spawn().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Piped {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Wait for this exact line (lines before it are kept in `seen`).
    fn expect(&mut self, line: &str) {
        self.expect_where(line, |l| l == line);
    }

    /// Wait for a line that starts with `prefix`.
    fn expect_prefix(&mut self, prefix: &str) {
        self.expect_where(prefix, |l| l.starts_with(prefix));
    }

    fn expect_where(&mut self, what: &str, hit: impl Fn(&str) -> bool) {
        let start = Instant::now();
        loop {
            let left = DEADLINE.saturating_sub(start.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    let hit = hit(&l);
                    self.seen.push(l);
                    if hit {
                        return;
                    }
                }
                Err(_) => panic!("no line {what:?}; saw:\n{}", self.seen.join("\n")),
            }
        }
    }
}

impl Drop for Piped {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn piped_prints_one_line_per_change() {
    let p = fixture();
    let mut w = Piped::start(&p, &[]);
    // The start: every task once, the warning first.
    for l in [
        "warning: tasks/docs/.state: unknown state `nonsense` (ignored; the artifacts decide)",
        "tasks/auth: decomposition",
        "tasks/auth/subtasks/a: human_intervention · referee verdict is FAIL",
        "tasks/auth/subtasks/b: test_design",
        "tasks/auth/subtasks/c: new · blocked by a",
        "tasks/docs: complete · .state unknown",
    ] {
        w.expect(l);
    }
    assert_eq!(w.seen.len(), 6, "{:#?}", w.seen);
    // A task folder appears.
    p.mkdir("tasks/new-one");
    w.expect("tasks/new-one: new");
    // A phase ends: its artifact, then .state, as the orchestrator writes them.
    p.write("tasks/new-one/SPEC.md", "# Spec\n");
    p.write("tasks/new-one/.state", "design\n");
    w.expect("tasks/new-one: design (was new)");
    // A corrupt .state is a warning, and the artifacts still decide; mended, it is quiet.
    p.write("tasks/new-one/.state", "garbage");
    w.expect(
        "warning: tasks/new-one/.state: unknown state `garbage` (ignored; the artifacts decide)",
    );
    w.expect("tasks/new-one: design · .state unknown");
    p.write("tasks/new-one/.state", "design\n");
    w.expect("tasks/new-one: design");
    // A sub-task not created yet appears, in its wave.
    p.mkdir("tasks/auth/subtasks/d");
    w.expect("tasks/auth/subtasks/d: new");
    // A task folder vanishes, sub-tasks and all.
    std::fs::remove_dir_all(p.join("tasks/auth")).unwrap();
    for gone in ["a", "b", "c", "d"] {
        w.expect(&format!("tasks/auth/subtasks/{gone}: gone"));
    }
    // The whole tasks/ root vanishing and coming back.
    std::fs::remove_dir_all(p.join("tasks")).unwrap();
    w.expect("tasks/new-one: gone");
    p.mkdir("tasks/again");
    w.expect("tasks/again: new");
    assert!(!p.join(".automaton").exists());
}

#[test]
fn piped_with_the_poll_fallback() {
    let p = Project::new();
    p.mkdir("tasks/one");
    let mut w = Piped::start(&p, &[("AUTOMATON_WATCH_POLL", "200ms")]);
    w.expect("tasks/one: new");
    p.write("tasks/one/SPEC.md", "x");
    w.expect("tasks/one: design (was new)");
    std::fs::remove_dir_all(p.join("tasks/one")).unwrap();
    w.expect("tasks/one: gone");
}

#[test]
fn piped_follows_a_scripted_run_without_taking_the_lock() {
    let p = Project::new();
    p.cmd().args(["task", "create", "feature"]).assert().code(0);
    let mut w = Piped::start(&p, &[]);
    w.expect("tasks/feature: new");
    // The orchestrator gets the lock while watch runs: watch never holds it.
    p.orchestrate_cmd()
        .args(["--task", "tasks/feature"])
        .assert()
        .code(0);
    // watch reports what it reads on each change, so under load a short phase (referee) can
    // fall between two reads: the end state and the order are what it promises.
    w.expect_prefix("tasks/feature: complete (was ");
    // Every phase that ended moved the state on, in lifecycle order.
    let states: Vec<&str> = w
        .seen
        .iter()
        .filter_map(|l| l.strip_prefix("tasks/feature: "))
        .filter(|l| l.contains("(was "))
        .map(|l| l.split([' ']).next().unwrap())
        .collect();
    let order = [
        "design",
        "test_design",
        "implement",
        "bug_find",
        "adversarial_bug_find",
        "doc_review",
        "referee",
        "complete",
    ];
    let mut last = 0;
    for s in &states {
        let at = order.iter().position(|o| o == s).unwrap_or_else(|| {
            panic!("unexpected state {s}: {:#?}", w.seen);
        });
        assert!(at >= last, "out of order: {:#?}", w.seen);
        last = at;
    }
}

/// A tmux server of its own (a private socket), killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// Run `command` in a detached 120x40 session; `None` where tmux is not installed.
    fn start(command: &str) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("tmux not installed: skipped");
            return None;
        }
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let socket = format!(
            "automaton-watch-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        );
        let t = Tmux { socket };
        t.tmux(&[
            "new-session",
            "-d",
            "-s",
            "w",
            "-x",
            "120",
            "-y",
            "40",
            command,
        ]);
        Some(t)
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "w"])
    }

    fn keys(&self, keys: &str) {
        self.tmux(&["send-keys", "-t", "w", keys]);
    }

    /// Wait until the screen shows all of `what`; the screen.
    fn wait_for(&self, what: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if what.iter().all(|w| s.contains(w)) {
                return s;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "screen never showed {what:?}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

fn quote(s: &std::path::Path) -> String {
    format!("'{}'", s.display().to_string().replace('\'', "'\\''"))
}

/// `watch` in the terminal; when it exits the shell says how.
fn watch_in_tmux(p: &Project, env: &str) -> Option<Tmux> {
    Tmux::start(&format!(
        "env HOME={} AUTOMATON_HOME={} TERM=xterm-256color {env} {} --project {} watch; echo WATCH_EXIT=$?; sleep 600",
        quote(p.home()),
        quote(&p.home().join(".automaton")),
        quote(std::path::Path::new(env!("CARGO_BIN_EXE_automaton"))),
        quote(p.path()),
    ))
}

#[test]
fn tmux_keys_move_open_the_log_and_quit() {
    let p = fixture();
    let Some(t) = watch_in_tmux(&p, "") else {
        return;
    };
    t.wait_for(&["automaton watch", "row 1/8", "log: tasks/auth "]);
    // j j j: auth -> wave 1 -> a -> b, whose log is followed in the pane.
    t.keys("j");
    t.wait_for(&["row 2/8"]);
    t.keys("j");
    t.keys("j");
    let s = t.wait_for(&["row 4/8", "log: tasks/auth/subtasks/b/logs/design-1.log"]);
    assert!(s.contains("│thinking about the design"), "{s}");
    // k goes back up.
    t.keys("k");
    t.wait_for(&["row 3/8", "log: tasks/auth/subtasks/a "]);
    t.keys("j");
    // Enter: the log fills the body (the tree is gone); Enter again: back.
    t.keys("Enter");
    let s = t.wait_for(&["Enter/Esc back", "wrote DESIGN.md"]);
    assert!(!s.contains("TASK "), "{s}");
    t.keys("Enter");
    t.wait_for(&["TASK ", "Enter log"]);
    // a: there is no agent to attach to.
    t.keys("a");
    t.wait_for(&["attach: no agent is running for this task"]);
    // q: exits 0 and gives the terminal back (the alternate screen is gone).
    t.keys("q");
    let s = t.wait_for(&["WATCH_EXIT=0"]);
    assert!(!s.contains("automaton watch"), "{s}");
    assert!(!p.join(".automaton").exists());
}

#[test]
fn tmux_shows_a_scripted_run_as_it_progresses() {
    let p = Project::new();
    p.cmd().args(["task", "create", "feature"]).assert().code(0);
    // An agent that holds its research phase until the test opens the gate.
    p.write(
        "agent.sh",
        "cat >/dev/null\necho \"agent working on $AUTOMATON_PHASE\"\n\
         while [ \"$AUTOMATON_PHASE\" = research ] && [ ! -e \"$AUTOMATON_PROJECT/gate\" ]; do sleep 0.05; done\n\
         case $AUTOMATON_PHASE in referee) echo 'Verdict: PASS' ;; *) echo done ;; esac > \"$AUTOMATON_ARTIFACT\"\n",
    );
    let Some(t) = watch_in_tmux(&p, "") else {
        return;
    };
    t.wait_for(&["feature", "new", "run: no automaton drives this project"]);
    let mut run = p.orchestrate_std();
    run.env(
        "AUTOMATON_AGENT",
        format!("sh {}", quote(&p.join("agent.sh"))),
    )
    .args(["--quiet", "--task", "tasks/feature"])
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let mut child = run.spawn().unwrap();
    let pid = child.id();
    // The running phase, its agent's log, and who drives the project.
    t.wait_for(&[
        "▶ research #1",
        "agent working on research",
        "log: tasks/feature/logs/research-1.log",
        &format!("run: pid {pid} "),
        "jobs 1/4",
        "1 running",
    ]);
    p.write("gate", "");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let s = t.wait_for(&[
        "complete",
        "run: no automaton drives this project",
        "agent working on referee",
    ]);
    assert!(s.contains("1 complete · 0 running"), "{s}");
    t.keys("q");
    t.wait_for(&["WATCH_EXIT=0"]);
}

#[test]
fn a_attaches_to_the_tmux_window_of_the_running_phase_and_comes_back() {
    let p = Project::new();
    p.cmd().args(["task", "create", "feature"]).assert().code(0);
    // The agent holds its research phase, printing a marker, until the gate opens.
    p.write(
        "agent.sh",
        "cat >/dev/null\necho \"INSIDE-THE-AGENT-WINDOW $AUTOMATON_PHASE\"\n\
         while [ \"$AUTOMATON_PHASE\" = research ] && [ ! -e \"$AUTOMATON_PROJECT/gate\" ]; do sleep 0.05; done\n\
         case $AUTOMATON_PHASE in referee) echo 'Verdict: PASS' ;; *) echo done ;; esac > \"$AUTOMATON_ARTIFACT\"\n",
    );
    let inner = format!("automaton-attach-test-{}", std::process::id());
    let Some(t) = watch_in_tmux(&p, &format!("AUTOMATON_TMUX_SOCKET={inner}")) else {
        return;
    };
    let kill_inner = || {
        let _ = Command::new("tmux")
            .args(["-L", &inner, "kill-server"])
            .output();
    };
    t.wait_for(&["feature", "new"]);
    let mut run = p.orchestrate_std();
    run.env(
        "AUTOMATON_AGENT",
        format!("sh {}", quote(&p.join("agent.sh"))),
    )
    .env("AUTOMATON_TMUX_SOCKET", &inner)
    .args(["--quiet", "--executor", "tmux", "--task", "tasks/feature"])
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let mut child = run.spawn().unwrap();
    t.wait_for(&["▶ research #1"]);
    // `a` hands the terminal to tmux: the agent's own window (named after its task and
    // phase in the inner tmux's status line) replaces watch's view.
    t.keys("a");
    let attached = t.wait_for(&[
        "INSIDE-THE-AGENT-WINDOW research",
        "tasks/feature research*",
    ]);
    assert!(!attached.contains("▶ research #1"), "{attached}");
    // Detaching (what prefix + d does) gives the terminal back to watch.
    let clients = Command::new("tmux")
        .args(["-L", &inner, "list-clients", "-F", "#{client_tty}"])
        .output()
        .unwrap();
    let clients = String::from_utf8_lossy(&clients.stdout).into_owned();
    assert_eq!(
        clients.lines().count(),
        1,
        "one attached client: {clients:?}"
    );
    let detached = Command::new("tmux")
        .args(["-L", &inner, "detach-client", "-t", clients.trim()])
        .status()
        .unwrap();
    assert!(detached.success());
    t.wait_for(&["▶ research #1"]);
    p.write("gate", "");
    let status = child.wait().unwrap();
    kill_inner();
    assert_eq!(status.code(), Some(0));
    t.wait_for(&["complete"]);
    t.keys("q");
    t.wait_for(&["WATCH_EXIT=0"]);
}
