//! Issue 11: the crash windows a kill -9 campaign found, one test per finding, through the
//! real binary (the chaos harness in tests/chaos/ runs the campaign itself).

use crate::harness::{Project, output_text, wait_for, wait_gone};
use std::os::unix::process::CommandExt;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

const PARENT: &str = "tasks/p";

fn sub(name: &str) -> String {
    format!("{PARENT}/subtasks/{name}")
}

fn project() -> Project {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n",
    );
    p
}

fn plan(rows: &[(&str, u32)]) -> String {
    let mut s = String::from(
        "# Decomposition: test plan\n\n| Sub-task | Wave | Depends on | Estimated peak context | Files | Scope |\n|---|---|---|---|---|---|\n",
    );
    for (name, wave) in rows {
        s.push_str(&format!("| {name} | {wave} | - | 4k | - | do {name} |\n"));
    }
    s
}

/// `chattr +i` (root on a filesystem that has it), or None with a message.
fn immutable(path: &std::path::Path, on: bool) -> Option<()> {
    let ok = StdCommand::new("chattr")
        .arg(if on { "+i" } else { "-i" })
        .arg(path)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok && on {
        eprintln!("SKIP: chattr +i is not permitted here");
    }
    ok.then_some(())
}

/// Finding 1: a sub-task folder that cannot be written stops that sub-task, with the path in
/// the message, and the run ends instead of restarting it forever.
#[test]
fn f1_unwritable_subtask_folder_stops_the_run_with_the_path_and_never_spins() {
    let p = project();
    p.write(&format!("{PARENT}/TASK.md"), "# Task\n\np\n");
    p.write(&format!("{PARENT}/SPEC.md"), "# spec\n");
    p.write(
        &format!("{PARENT}/DECOMPOSITION.md"),
        plan(&[("a", 1), ("b", 1)]),
    );
    p.write(&format!("{}/.state", sub("a")), "new\n");
    p.write(&format!("{}/.state", sub("b")), "new\n");
    // Fill in what sync writes, then freeze a.
    p.orchestrate_cmd()
        .env("AGENT_BEHAVIOR", "*=none")
        .args(["--step", "--task", PARENT])
        .output()
        .unwrap();
    let a = p.join(&sub("a"));
    let _ = std::fs::remove_file(a.join(".stop"));
    std::fs::write(a.join(".state"), "new\n").unwrap();
    if immutable(&a, true).is_none() {
        return;
    }
    let start = Instant::now();
    let out = p
        .orchestrate_cmd()
        .args(["--jobs", "2", "--task", PARENT])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    immutable(&a, false);
    let text = output_text(&out);
    assert!(
        start.elapsed() < Duration::from_secs(25),
        "the run spun: {}",
        &text[..text.len().min(2000)]
    );
    assert!(!out.status.success(), "{text}");
    assert!(text.contains(&a.display().to_string()), "{text}");
    let errors = text.matches("subtasks/a: error").count();
    assert!(
        errors <= 2,
        "{errors} error lines: the sub-task was retried"
    );
}

/// The agent command of these tests: writes the phase's artifact (PASS at referee).
fn writer_agent(extra: &str) -> String {
    format!(
        "{extra} case $AUTOMATON_PHASE in referee) b='Verdict: PASS';; *) b=\"$AUTOMATON_PHASE done\";; esac; \
         printf '%s\\n' \"$b\" > \"$AUTOMATON_ARTIFACT.t\" && mv \"$AUTOMATON_ARTIFACT.t\" \"$AUTOMATON_ARTIFACT\""
    )
}

/// Finding 2: when an agent first runs, the pid file already names it (its group leader),
/// so a kill at any moment leaves nothing untracked; and names the automaton that runs it,
/// so a rerun never stops a running agent.
#[test]
fn f2_agent_is_recorded_before_it_runs() {
    let p = project();
    let track = p.join("track.log");
    let check = format!(
        "read version kind first start owner rest < \"$AUTOMATON_TASK_DIR/logs/agent.pid\" 2>/dev/null; \
         if [ \"$first\" = \"$$\" ] || [ \"$first\" = \"$PPID\" ]; then echo tracked; else echo UNTRACKED; fi >> {t}; \
         if tr '\\0' ' ' < /proc/$owner/cmdline | grep -q ' orchestrate '; then echo owned; else echo UNOWNED; fi >> {t};",
        t = track.display()
    );
    p.orchestrate_cmd()
        .args(["--agent", &writer_agent(&check), "record me"])
        .assert()
        .code(0);
    let log = std::fs::read_to_string(&track).unwrap();
    assert!(log.lines().count() >= 10, "{log}");
    assert!(!log.contains("UNTRACKED"), "{log}");
    assert!(!log.contains("UNOWNED"), "{log}");
}

/// Finding 5: an agent whose automaton was killed with SIGKILL is stopped by its watchdog
/// within a few seconds, without waiting for a rerun.
#[test]
fn f5_agent_of_a_killed_automaton_is_stopped_within_seconds() {
    let p = project();
    let pidf = p.join("agent.pid.test");
    let parent = p.join("watchdog-parent.pid");
    let agent = format!(
        "cut -d' ' -f4 /proc/$PPID/stat > {}; echo $$ > {}; exec sleep 300",
        parent.display(),
        pidf.display()
    );
    let mut run = p
        .orchestrate_std()
        .args(["--agent", &agent, "watch me"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The agent writes its pid after its watchdog's parent's, so both are whole once it is.
    let pid = p.wait_pid("agent.pid.test");
    assert_eq!(
        p.wait_pid("watchdog-parent.pid"),
        run.id() as i32,
        "the watchdog is automaton's own child"
    );
    unsafe { libc::kill(run.id() as i32, libc::SIGKILL) };
    run.wait().unwrap();
    assert!(wait_gone(pid), "agent {pid} outlived its automaton");
}

/// Finding 5: a descendant that daemonizes (setsid + double fork) does not outlive its phase.
#[test]
fn f5_daemonized_descendant_is_stopped_with_its_phase() {
    let p = project();
    let dpid = p.join("daemon.pid");
    let daemon = format!(
        "[ -f {d} ] || {{ (setsid sh -c 'echo $$ > {d}.t && mv {d}.t {d}; exec sleep 300' </dev/null >/dev/null 2>&1 &); \
         while [ ! -f {d} ]; do sleep 0.01; done; }};",
        d = dpid.display()
    );
    p.orchestrate_cmd()
        .args(["--agent", &writer_agent(&daemon), "daemonize"])
        .assert()
        .code(0);
    wait_for(&dpid);
    let pid: i32 = std::fs::read_to_string(&dpid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone = wait_gone(pid);
    if !gone {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(gone, "daemonized descendant {pid} survived its phase");
}

/// Findings 3 and 4: an agent killed while writing SPEC.md in pieces leaves a partial file;
/// the rerun stops the leftover agent first, moves the partial file under logs/ (never
/// deleting it) and runs research again.
#[test]
fn f4_partial_artifact_of_a_killed_run_never_counts() {
    let p = project();
    let agent = writer_agent(
        "if [ $AUTOMATON_PHASE = research ] && [ ! -f \"$AUTOMATON_PROJECT/killed\" ]; then \
         for i in 1 2 3 4 5; do echo \"partial line $i\" >> \"$AUTOMATON_ARTIFACT\"; done; \
         touch \"$AUTOMATON_PROJECT/half\"; sleep 300; fi;",
    );
    let mut run = p
        .orchestrate_std()
        .args(["--agent", &agent, "piecewise"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&p.join("half"));
    unsafe { libc::kill(run.id() as i32, libc::SIGKILL) };
    run.wait().unwrap();
    std::fs::write(p.join("killed"), "").unwrap();
    let out = p
        .orchestrate_cmd()
        .args(["--agent", &agent, "--task", "tasks/piecewise"])
        .output()
        .unwrap();
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(p.read("tasks/piecewise/SPEC.md"), "research done\n");
    let kept = p.read("tasks/piecewise/logs/incomplete/SPEC.md-1");
    assert!(kept.starts_with("partial line 1"), "{kept}");
    assert!(!p.join("tasks/piecewise/.incomplete").exists());
}

/// Finding 3: the leftover agent of a killed run is stopped before the rerun decides or
/// starts anything.
#[test]
fn f3_leftover_is_stopped_before_anything_is_decided() {
    let p = project();
    p.write("tasks/left/TASK.md", "# Task\n\nleft\n");
    p.write("tasks/left/.state", "new\n");
    // A leftover agent that, when stopped, writes SPEC.md (its late write).
    let spec = p.join("tasks/left/SPEC.md");
    let mut leftover = StdCommand::new("sh")
        .arg("-c")
        .arg(format!(
            "trap 'echo leftover > {}; exit 0' TERM; while :; do sleep 0.05; done",
            spec.display()
        ))
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = leftover.id();
    std::thread::sleep(Duration::from_millis(100));
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let start: u64 = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    p.write("tasks/left/logs/agent.pid", format!("{pid} {start}\n"));
    p.write("tasks/left/.incomplete", "SPEC.md\n");
    let out = p
        .orchestrate_cmd()
        .args(["--agent", &writer_agent(""), "--task", "tasks/left"])
        .output()
        .unwrap();
    let _ = leftover.wait();
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let stopped = text.find("stopped agent pid").expect(&text);
    let first_phase = text.find("▶").expect(&text);
    assert!(stopped < first_phase, "{text}");
    // Its late write never counted: set aside, and research ran again.
    assert_eq!(p.read("tasks/left/SPEC.md"), "research done\n");
    assert_eq!(p.read("tasks/left/logs/incomplete/SPEC.md-1"), "leftover\n");
}

/// Finding 6: a task folder appears whole or not at all, and a folder an older automaton left
/// without TASK.md is finished by the same request instead of refused.
#[test]
fn f6_task_creation_is_all_or_nothing() {
    let p = project();
    for i in 0..12u64 {
        let mut run = p
            .orchestrate_std()
            .args(["--agent", "sleep 5", "make it so"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(i * 3));
        unsafe { libc::kill(run.id() as i32, libc::SIGKILL) };
        run.wait().unwrap();
        let dir = p.join("tasks/make-it-so");
        if dir.exists() {
            assert!(
                dir.join("TASK.md").is_file(),
                "a task folder without TASK.md"
            );
        }
        if let Ok(entries) = std::fs::read_dir(p.join("tasks")) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                assert!(
                    name == "make-it-so" || name.starts_with(".automaton-tmp-"),
                    "{name}"
                );
            }
        }
    }
    // The remains of an older creation: only `.state`.
    p.write("tasks/half-made/.state", "new\n");
    p.orchestrate_cmd()
        .args(["--agent", &writer_agent(""), "half made"])
        .assert()
        .code(0);
    assert!(p.read("tasks/half-made/TASK.md").contains("half made"));
}

/// Finding 7: deleting `.automaton/lock` (git clean -fdX) does not let a second orchestrator
/// in, and its refusal names the holder's pid, once.
#[test]
fn f7_deleting_the_lock_file_does_not_side_step_the_lock() {
    let p = project();
    let started = p.join("started");
    let mut first = p
        .orchestrate_std()
        .args([
            "--agent",
            &format!("touch {}; sleep 300", started.display()),
            "hold it",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&started);
    std::fs::remove_dir_all(p.join(".automaton")).unwrap();
    let out = p
        .orchestrate_cmd()
        .args(["--agent", "true", "--task", "tasks/hold-it"])
        .output()
        .unwrap();
    unsafe { libc::kill(first.id() as i32, libc::SIGTERM) };
    let _ = first.wait();
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(75), "{text}");
    assert!(text.contains(&format!("pid {}", first.id())), "{text}");
    assert!(!text.contains("pid unknown"), "{text}");
    assert_eq!(text.matches("is driving this project").count(), 1, "{text}");
}

/// Finding 8: a terminal sub-task whose `.state` still says `referee` is repaired.
#[test]
fn f8_stale_subtask_state_is_repaired() {
    let p = project();
    p.write(&format!("{PARENT}/TASK.md"), "# Task\n\np\n");
    p.write(&format!("{PARENT}/SPEC.md"), "# spec\n");
    p.write(&format!("{PARENT}/DECOMPOSITION.md"), plan(&[("a", 1)]));
    for f in [
        "SPEC.md",
        "IMPLEMENTATION.md",
        "BUG_REPORT.md",
        "ADVERSARIAL_BUG_REPORT.md",
        "DOC_REVIEW.md",
        "PARENT_SPEC.md",
        "VRAM_CONFIG.md",
    ] {
        p.write(&format!("{}/{f}", sub("a")), "done\n");
    }
    p.write(&format!("{}/VERDICT.md", sub("a")), "Verdict: PASS\n");
    p.write(&format!("{}/.state", sub("a")), "referee\n");
    p.orchestrate_cmd()
        .args(["--agent", &writer_agent(""), "--task", PARENT])
        .assert()
        .code(0);
    assert_eq!(p.read(&format!("{}/.state", sub("a"))), "complete\n");
}

/// Finding 8: a stray `.automaton-tmp-*` file does not stop the PARENT_SPEC.md repair, so
/// no sub-task runs without its scope.
#[test]
fn f8_stray_temp_file_does_not_block_the_parent_spec_repair() {
    let p = project();
    p.write(&format!("{PARENT}/TASK.md"), "# Task\n\np\n");
    p.write(&format!("{PARENT}/SPEC.md"), "# spec\n");
    p.write(&format!("{PARENT}/DECOMPOSITION.md"), plan(&[("a", 1)]));
    p.write(&format!("{}/.state", sub("a")), "new\n");
    p.write(&format!("{}/.automaton-tmp-x1y2z3", sub("a")), "half");
    p.orchestrate_cmd()
        .args(["--agent", &writer_agent(""), "--task", PARENT])
        .assert()
        .code(0);
    assert!(
        p.read(&format!("{}/PARENT_SPEC.md", sub("a")))
            .contains("do a")
    );
}

/// Finding 8: a FIFO in place of an input file does not hang `status`.
#[test]
fn f8_fifo_in_place_of_an_input_does_not_hang_status() {
    let p = project();
    p.write("tasks/f/TASK.md", "# Task\n\nf\n");
    for name in [
        "SPEC.md",
        "VERDICT.md",
        "DECOMPOSITION.md",
        ".state",
        ".origin",
    ] {
        let path = p.join(&format!("tasks/f/{name}"));
        let _ = std::fs::remove_file(&path);
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &path,
            rustix::fs::Mode::from_raw_mode(0o644),
        )
        .unwrap();
    }
    p.write(".automaton/config.md", "");
    let _ = std::fs::remove_file(p.join(".automaton/config.md"));
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        p.join(".automaton/config.md"),
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .unwrap();
    let out = p
        .cmd()
        .arg("status")
        .timeout(Duration::from_secs(10))
        .output()
        .unwrap();
    assert!(out.status.code().is_some(), "status hung on a FIFO");
}

/// Finding 8: a FAIL verdict with 4,000 identical findings is read in linear time.
#[test]
fn f8_many_identical_findings_are_linear() {
    let p = project();
    let mut v = String::from("Verdict: FAIL\n\n## Findings\n");
    for _ in 0..4000 {
        v.push_str("- the same bug again\n");
    }
    p.write("tasks/v/TASK.md", "# Task\n\nv\n");
    p.write("tasks/v/SPEC.md", "s\n");
    p.write("tasks/v/VERDICT.md", v);
    let start = Instant::now();
    p.cmd()
        .args(["status", "--json"])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(0);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "status took {:?}",
        start.elapsed()
    );
}

/// Finding 8: an error for a read-only `tasks/` names the path.
#[test]
fn f8_unwritable_tasks_folder_error_names_the_path() {
    let p = project();
    p.mkdir("tasks");
    let tasks = p.join("tasks");
    if immutable(&tasks, true).is_none() {
        return;
    }
    let out = p
        .orchestrate_cmd()
        .args(["--agent", "true", "frozen task"])
        .output()
        .unwrap();
    immutable(&tasks, false);
    let text = output_text(&out);
    assert!(!out.status.success());
    assert!(text.contains(&tasks.display().to_string()), "{text}");
}

/// A small deterministic generator (xorshift64*): no dependency, reproducible by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// Text built from the tokens the formats use, plus raw bytes.
    fn text(&mut self, max: usize) -> Vec<u8> {
        const TOKENS: &[&str] = &[
            "\n",
            "|",
            " | ",
            "---",
            "Verdict:",
            "PASS",
            "FAIL",
            "NEEDS_REVIEW",
            "## Findings",
            "- ",
            "* ",
            "#",
            "**",
            "Sub-task",
            "Wave",
            "Depends on",
            "Files",
            "Scope",
            "1",
            "2",
            "-1",
            "99999999999999999999",
            "a",
            "b",
            ", ",
            "{",
            "}",
            "[",
            "]",
            "\"",
            ":",
            "null",
            "\"start\"",
            "\"inherited\"",
            "new",
            "referee",
            "complete",
            "SPEC.md",
            "- **Agent command**: ",
            "- **Autopilot**: ",
            "Enabled",
            "k",
            "tokens",
            "\u{feff}",
            "\u{fffd}",
            "\r\n",
            "\t",
            "é",
            "\\",
            "`",
            "../",
            "/",
            "\0",
        ];
        let n = self.below(max + 1);
        let mut out = Vec::new();
        for _ in 0..n {
            if self.below(10) == 0 {
                out.push(self.next() as u8);
            } else {
                out.extend_from_slice(TOKENS[self.below(TOKENS.len())].as_bytes());
            }
        }
        out
    }
}

fn fuzz_cases(default: usize) -> usize {
    std::env::var("AUTOMATON_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Every parser and reader of issue 11's list, on generated input: no panic, and every error
/// or warning names the file it is about.
#[test]
fn fuzz_every_parser_and_reader() {
    use automaton::artifact::{decomposition::parse_decomposition, verdict::parse_verdict};
    use automaton::store::{approvals, inputs, journal, task_files, vram_cache};
    let cases = fuzz_cases(2000);
    let seed = std::env::var("AUTOMATON_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x1234_5678_9abc_def1u64);
    let mut rng = Rng(seed);
    let root = tempfile::tempdir().unwrap();
    let task = root.path().join("tasks/t");
    std::fs::create_dir_all(task.join("logs")).unwrap();
    std::fs::create_dir_all(root.path().join(".automaton")).unwrap();
    let files = [
        "DECOMPOSITION.md",
        "VERDICT.md",
        "SPEC.md",
        ".state",
        ".origin",
        ".stop",
        ".incomplete",
        ".state.approvals",
        ".state.inputs",
        "logs/journal.jsonl",
    ];
    for case in 0..cases {
        let which = rng.below(files.len() + 3);
        let bytes = rng.text(200);
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse_verdict(&text);
        if let Err(e) = parse_decomposition(&text) {
            let _ = e.to_string();
        }
        let _ = task_files::parse_incomplete(&bytes);
        let _ = automaton::state::State::parse(&text);
        match which {
            w if w < files.len() => std::fs::write(task.join(files[w]), &bytes).unwrap(),
            w if w == files.len() => {
                std::fs::write(root.path().join(".automaton/config.md"), &bytes).unwrap()
            }
            w if w == files.len() + 1 => {
                std::fs::write(root.path().join(".automaton/.agent.md"), &bytes).unwrap()
            }
            _ => std::fs::write(vram_cache::path(root.path()), &bytes).unwrap(),
        }
        let mut warnings = Vec::new();
        let _ = automaton::task::snapshot::read_snapshot(&task, "tasks/t", &mut warnings);
        for w in &warnings {
            assert!(
                w.contains("tasks/t"),
                "case {case}: warning without the file: {w}"
            );
        }
        let (_, warns) = approvals::read(&task, "tasks/t");
        for w in &warns {
            assert!(w.contains("tasks/t"), "case {case}: {w}");
        }
        // `inputs::read` returns the reason; its one caller (staleness) names the file.
        let _ = inputs::read(&task);
        let tree = automaton::task::TaskTree::load_task(
            root.path(),
            "tasks/t",
            &automaton::state::PhaseConfig::default(),
        );
        for w in &tree.warnings {
            assert!(w.contains("tasks/t"), "case {case}: {w}");
        }
        if let Err(e) = task_files::read_incomplete(&task) {
            assert!(e.to_string().contains(".incomplete"), "case {case}: {e}");
        }
        let _ = journal::usage(&task);
        let _ = vram_cache::load(root.path(), "key");
        if let Err(e) = automaton::settings::Settings::load(root.path()) {
            let msg = e.to_string();
            assert!(
                msg.contains("config.md")
                    || msg.contains(".agent.md")
                    || msg.contains(".automaton"),
                "case {case}: settings error without the file: {msg}"
            );
        }
    }
    eprintln!("fuzz: {cases} cases, seed {seed}");
}

/// Every parser is linear: 8 times the input takes well under 8² times as long.
#[test]
fn parsers_are_linear_in_their_input() {
    use automaton::artifact::{decomposition::parse_decomposition, verdict::parse_verdict};
    // The fastest of several runs, the two sizes taken in turn: a loaded machine slows some
    // runs, never all, and slows both sizes alike.
    let time_both = |small: &dyn Fn(), big: &dyn Fn()| {
        let once = |f: &dyn Fn()| {
            let t = Instant::now();
            f();
            t.elapsed()
        };
        (0..15).fold((Duration::MAX, Duration::MAX), |(s, b), _| {
            (s.min(once(small)), b.min(once(big)))
        })
    };
    type Parse<'a> = &'a dyn Fn(&str);
    let patterns: [(&str, Parse<'_>); 3] = [
        ("- the same bug again\n", &|t| {
            let _ = parse_verdict(&format!("Verdict: FAIL\n## Findings\n{t}"));
        }),
        ("| a | 1 | a | 4k | src/a.rs | same |\n", &|t| {
            let _ = parse_decomposition(&format!(
                "| Sub-task | Wave | Depends on | Estimated peak context | Files | Scope |\n|---|---|---|---|---|---|\n{t}"
            ));
        }),
        ("Verdict: PASS\n", &|t| {
            let _ = parse_verdict(t);
        }),
    ];
    for (pattern, parse) in patterns {
        let small = pattern.repeat(1000);
        let big = pattern.repeat(8000);
        let (t1, t8) = time_both(&|| parse(&small), &|| parse(&big));
        assert!(
            t8 < t1 * 24 + Duration::from_millis(20),
            "{pattern:?}: 1x {t1:?}, 8x {t8:?}"
        );
    }
    // The fix tasks of a FAIL verdict with many identical findings (finding 8), through status.
    let p = project();
    let fail = |n: usize| {
        let mut v = String::from("Verdict: FAIL\n\n## Findings\n");
        v.push_str(&"- same\n".repeat(n));
        v
    };
    p.write("tasks/v/SPEC.md", "s\n");
    let mut took = Vec::new();
    for n in [500, 4000] {
        p.write("tasks/v/VERDICT.md", fail(n));
        let best = (0..3)
            .map(|_| {
                let t = Instant::now();
                p.cmd().args(["status", "--json"]).assert().code(0);
                t.elapsed()
            })
            .min()
            .unwrap();
        took.push(best);
    }
    assert!(
        took[1] < took[0] * 24 + Duration::from_millis(500),
        "status: 500 findings {:?}, 4000 {:?}",
        took[0],
        took[1]
    );
}

/// A `.incomplete` that names nothing (a power cut emptied it before its fsync, which is
/// issued as the agent starts) is cleared with a warning; nothing is set aside, and the run goes on.
#[test]
fn an_empty_incomplete_marker_is_cleared_with_a_warning() {
    let p = project();
    p.write("tasks/t/TASK.md", "# Task\n\nMarked.\n");
    p.write("tasks/t/SPEC.md", "# Spec\n\nKept.\n");
    p.write("tasks/t/.incomplete", "");
    let out = p
        .orchestrate_cmd()
        .args(["--agent", &writer_agent(""), "--task", "tasks/t"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    let all = output_text(&out);
    assert!(
        all.contains(".incomplete") && all.contains("cleared"),
        "{all}"
    );
    assert_eq!(p.read("tasks/t/SPEC.md"), "# Spec\n\nKept.\n");
    assert!(!p.join("tasks/t/logs/incomplete").exists());
    assert!(!p.join("tasks/t/.incomplete").exists());
}

/// A sub-task folder a killed run was making (its staging folder, dot-named, never renamed
/// into place) is removed by the next run once a minute old; one just made (`task create`
/// may be building it) is left, and so are a link of that name and what it points to; the
/// listed sub-tasks are made and run as usual.
#[test]
fn a_staging_folder_left_by_a_killed_run_is_removed() {
    let p = project();
    p.write(&format!("{PARENT}/SPEC.md"), "# spec\n");
    p.write(&format!("{PARENT}/DECOMPOSITION.md"), plan(&[("a", 1)]));
    let staging = format!("{PARENT}/subtasks/.automaton-tmp-Ab12Cd");
    p.write(&format!("{staging}/.state"), "new\n");
    p.write(&format!("{staging}/PARENT_SPEC.md"), "scope\n");
    let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::open(p.join(&staging))
        .unwrap()
        .set_modified(an_hour_ago)
        .unwrap();
    let fresh = format!("{PARENT}/subtasks/.automaton-tmp-Fresh1");
    p.write(&format!("{fresh}/.state"), "new\n");
    p.write("elsewhere/keep.md", "keep\n");
    let link = p.join(&format!("{PARENT}/subtasks/.automaton-tmp-link"));
    std::os::unix::fs::symlink(p.join("elsewhere"), &link).unwrap();
    let out = p
        .orchestrate_cmd()
        .args(["--step", "--task", PARENT])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(25), "{}", output_text(&out));
    assert!(!p.join(&staging).exists(), "{}", output_text(&out));
    assert!(p.join(&fresh).is_dir(), "one being built is left");
    assert!(link.symlink_metadata().is_ok(), "the link stays");
    assert_eq!(p.read("elsewhere/keep.md"), "keep\n");
    assert!(
        p.join(&format!("{}/SPEC.md", sub("a"))).is_file(),
        "a ran its step"
    );
}

/// A project whose task `tasks/t` has every report but VERDICT.md, with no retries.
fn ready_for_the_referee() -> Project {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "## Phases\n- **Design**: No\n- **Test design**: No\n\n## Limits\n- **Retries**: 0\n",
    );
    p.write("tasks/t/TASK.md", "# Task\n\nt\n");
    for a in [
        "SPEC",
        "IMPLEMENTATION",
        "BUG_REPORT",
        "ADVERSARIAL_BUG_REPORT",
        "DOC_REVIEW",
    ] {
        p.write(&format!("tasks/t/{a}.md"), format!("# {a}\n"));
    }
    p
}

/// A stop on a malformed artifact asks the person to fix the file: once they have, the rerun
/// uses their version. Only an artifact still as the stopped run left it is set aside.
#[test]
fn a_persons_fix_of_a_malformed_artifact_is_used_not_set_aside() {
    let p = ready_for_the_referee();
    // The referee writes no verdict word: a malformed VERDICT.md.
    let agent = "cat >/dev/null; echo 'looks fine to me' > \"$AUTOMATON_ARTIFACT\"";
    let run = || {
        p.orchestrate_cmd()
            .args(["--agent", agent, "--task", "tasks/t"])
            .output()
            .unwrap()
    };
    let out = run();
    let text = output_text(&out);
    assert!(text.contains("VERDICT.md is malformed"), "{text}");
    assert_eq!(p.read("tasks/t/.state"), "human_intervention\n", "{text}");
    // Status agrees that the task waits for a person, and does not count the bad verdict.
    let status = p.status_json();
    let task = crate::harness::task_of(&status, "tasks/t");
    assert_eq!(task["state"], "human_intervention", "{status}");

    // The person fixes the file as the message asks, and reruns.
    p.write("tasks/t/VERDICT.md", "# Verdict\n\nVerdict: PASS\n");
    let out = run();
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("your version is used"), "{text}");
    assert_eq!(p.read("tasks/t/VERDICT.md"), "# Verdict\n\nVerdict: PASS\n");
    assert_eq!(p.read("tasks/t/.state"), "complete\n");
    assert!(
        !p.join("tasks/t/logs/incomplete").exists(),
        "the fix was set aside"
    );
    assert!(!p.join("tasks/t/.incomplete").exists());
}

/// The same stop, and the person reruns without touching the file: the stopped run's own
/// malformed artifact is still set aside and its phase runs again.
#[test]
fn an_untouched_malformed_artifact_of_a_stopped_run_is_still_set_aside() {
    let p = ready_for_the_referee();
    let bad = "cat >/dev/null; echo 'looks fine to me' > \"$AUTOMATON_ARTIFACT\"";
    let out = p
        .orchestrate_cmd()
        .args(["--agent", bad, "--task", "tasks/t"])
        .output()
        .unwrap();
    assert!(output_text(&out).contains("VERDICT.md is malformed"));
    let out = p
        .orchestrate_cmd()
        .args(["--agent", &writer_agent(""), "--task", "tasks/t"])
        .output()
        .unwrap();
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(
        p.read("tasks/t/logs/incomplete/VERDICT.md-1"),
        "looks fine to me\n"
    );
    assert_eq!(p.read("tasks/t/VERDICT.md"), "Verdict: PASS\n");
}

/// A run killed after its agent wrote the artifact and exited, before the phase was judged:
/// the watchdog recorded the agent's end, so the rerun judges that work instead of setting it
/// aside and paying for the phase again.
#[test]
fn a_phase_whose_agent_finished_before_the_kill_is_judged_not_run_again() {
    let p = project();
    let runs = p.join("research-runs");
    let agent = writer_agent(&format!(
        "[ $AUTOMATON_PHASE = research ] && echo run >> {};",
        runs.display()
    ));
    let out = p
        .orchestrate_cmd()
        .env("AUTOMATON_TEST_KILL_AFTER", "research")
        .args(["--agent", &agent, "finished"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "killed: {}", output_text(&out));
    let task = "tasks/finished";
    assert!(p.join(&format!("{task}/.incomplete")).exists());
    assert!(p.join(&format!("{task}/logs/research-1.exit")).exists());
    let out = p
        .orchestrate_cmd()
        .args(["--agent", &agent, "--task", task])
        .output()
        .unwrap();
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("judged now, not run again"), "{text}");
    assert_eq!(
        p.read("research-runs"),
        "run\n",
        "research ran twice:\n{text}"
    );
    assert_eq!(p.read(&format!("{task}/SPEC.md")), "research done\n");
    assert!(
        !p.join(&format!("{task}/logs/incomplete")).exists(),
        "{text}"
    );
    assert_eq!(p.read(&format!("{task}/.state")), "complete\n");
}

/// The watchdog's record says the agent failed (or there is none): the kill's leftovers are
/// set aside and the phase runs again, as before.
#[test]
fn a_phase_whose_agent_failed_before_the_kill_runs_again() {
    let p = project();
    let agent = writer_agent(
        "if [ $AUTOMATON_PHASE = research ] && [ ! -f \"$AUTOMATON_PROJECT/again\" ]; then \
         echo half > \"$AUTOMATON_ARTIFACT\"; exit 3; fi;",
    );
    let out = p
        .orchestrate_cmd()
        .env("AUTOMATON_TEST_KILL_AFTER", "research")
        .args(["--agent", &agent, "failing"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "killed: {}", output_text(&out));
    p.write("again", "");
    let out = p
        .orchestrate_cmd()
        .args(["--agent", &agent, "--task", "tasks/failing"])
        .output()
        .unwrap();
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(!text.contains("judged now"), "{text}");
    assert_eq!(p.read("tasks/failing/logs/incomplete/SPEC.md-1"), "half\n");
    assert_eq!(p.read("tasks/failing/SPEC.md"), "research done\n");
}

/// A sub-task folder deleted while its phase runs stops that sub-task, naming the folder; it
/// is never taken for an edit of frozen files, and nothing is written there (it is not made
/// again by this run).
#[test]
fn a_subtask_folder_deleted_mid_run_stops_it_and_is_not_recreated() {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "## Phases\n- **Decomposition**: Yes\n- **Design**: No\n",
    );
    p.write("tasks/p/TASK.md", "# Task\n\np\n");
    let agent = "cat >/dev/null; case \"$AUTOMATON_TASK:$AUTOMATON_PHASE\" in \
        tasks/p:decomposition) printf '| Sub-task | Wave | Depends on |\\n|---|---|---|\\n| a | 1 | - |\\n| b | 1 | - |\\n' > \"$AUTOMATON_ARTIFACT\" ;; \
        tasks/p/subtasks/a:implement) rm -rf \"$AUTOMATON_TASK_DIR\" ;; \
        *:referee) echo 'Verdict: PASS' > \"$AUTOMATON_ARTIFACT\" ;; \
        *) echo done > \"$AUTOMATON_ARTIFACT\" ;; esac";
    let out = p
        .orchestrate_cmd()
        .args(["--agent", agent, "--task", "tasks/p"])
        .output()
        .unwrap();
    let text = output_text(&out);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("tasks/p/subtasks/a disappeared"), "{text}");
    assert!(!text.contains("frozen acceptance files changed"), "{text}");
    assert!(!p.join("tasks/p/subtasks/a").exists(), "recreated:\n{text}");
    assert_eq!(p.read("tasks/p/subtasks/b/.state"), "complete\n");
}

/// The same for a plain task: the run stops naming the folder and makes nothing of it again.
#[test]
fn a_task_folder_deleted_mid_run_stops_the_run_and_is_not_recreated() {
    let p = project();
    let agent = writer_agent(
        "[ $AUTOMATON_PHASE = implement ] && rm -rf \"$AUTOMATON_TASK_DIR\" && exit 0;",
    );
    let out = p
        .orchestrate_cmd()
        .args(["--agent", &agent, "gone"])
        .output()
        .unwrap();
    let text = output_text(&out);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("tasks/gone disappeared"), "{text}");
    assert!(!p.join("tasks/gone").exists(), "recreated:\n{text}");
}

/// A decomposed task of two wave-1 sub-tasks under a verify command (which notes each run in
/// `verify-runs`), design and test design off; its decomposition phase plans `a` and `b`.
fn verified_split_project() -> (Project, &'static str) {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "## Phases\n- **Decomposition**: Yes\n- **Design**: No\n- **Test design**: No\n\n\
         ## Agent\n- **Verify command**: echo ran >> \"$AUTOMATON_PROJECT/verify-runs\"\n",
    );
    p.write("tasks/p/TASK.md", "# Task\n\np\n");
    let agent = "cat >/dev/null; case \"$AUTOMATON_TASK:$AUTOMATON_PHASE\" in \
        tasks/p:decomposition) printf '| Sub-task | Wave | Depends on |\\n|---|---|---|\\n| a | 1 | - |\\n| b | 1 | - |\\n' > \"$AUTOMATON_ARTIFACT\" ;; \
        *:referee) echo 'Verdict: PASS' > \"$AUTOMATON_ARTIFACT\" ;; \
        *) echo done > \"$AUTOMATON_ARTIFACT\" ;; esac";
    (p, agent)
}

/// Every sub-task of the verified split project is complete by its verify command's pass for
/// its very verdict, and its `.state` says so.
fn assert_subtasks_verified(p: &Project, text: &str) {
    for sub in ["a", "b"] {
        let dir = format!("tasks/p/subtasks/{sub}");
        assert!(
            p.join(&format!("{dir}/logs/verified")).exists(),
            "{dir}'s PASS was never verified:\n{text}"
        );
        assert_eq!(
            p.read(&format!("{dir}/.state")),
            "complete\n",
            "{dir}:\n{text}"
        );
    }
}

/// A kill while a sub-task's PASS is being accepted, under a verify command: the rerun runs
/// its verify before the sub-task counts as complete. Its wave never takes an unverified PASS
/// for done (`.state` would say `referee` while `status` said complete).
#[test]
fn a_kill_while_a_subtasks_pass_is_accepted_leaves_it_to_be_verified() {
    let (p, agent) = verified_split_project();
    let out = p
        .orchestrate_cmd()
        .env("AUTOMATON_TEST_KILL_ACCEPTING", "referee")
        .args(["--agent", agent, "--jobs", "1", "--task", "tasks/p"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "killed: {}", output_text(&out));
    let out = p
        .orchestrate_cmd()
        .args(["--agent", agent, "--jobs", "1", "--task", "tasks/p"])
        .output()
        .unwrap();
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_subtasks_verified(&p, &text);
}

/// A person's VERDICT.md in place of the one a stopped run wrote is kept, and verified like
/// the referee's before the sub-task counts as complete.
#[test]
fn a_persons_pass_for_a_subtask_is_verified_before_it_counts() {
    let (p, agent) = verified_split_project();
    let config = p.read(".automaton/config.md");
    p.write(
        ".automaton/config.md",
        format!("{config}\n## Limits\n- **Retries**: 0\n"),
    );
    // Sub-task a's referee writes its verdict, then fails: the run stops with it unaccepted.
    let failing = format!(
        "if [ \"$AUTOMATON_TASK:$AUTOMATON_PHASE\" = tasks/p/subtasks/a:referee ]; then \
         cat >/dev/null; echo 'Verdict: FAIL' > \"$AUTOMATON_ARTIFACT\"; exit 3; fi; {agent}"
    );
    let out = p
        .orchestrate_cmd()
        .args(["--agent", &failing, "--jobs", "1", "--task", "tasks/p"])
        .output()
        .unwrap();
    let text = output_text(&out);
    // Sub-tasks failed (18): a's stop names its agent's end.
    assert_eq!(out.status.code(), Some(18), "{text}");
    assert!(
        text.contains("agent exited with status 3 during referee"),
        "{text}"
    );
    p.write(
        "tasks/p/subtasks/a/VERDICT.md",
        "Verdict: PASS\n\nChecked by hand.\n",
    );
    let out = p
        .orchestrate_cmd()
        .args(["--agent", agent, "--jobs", "1", "--task", "tasks/p"])
        .output()
        .unwrap();
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("your version is used"), "{text}");
    assert_eq!(
        p.read("tasks/p/subtasks/a/VERDICT.md"),
        "Verdict: PASS\n\nChecked by hand.\n"
    );
    assert_subtasks_verified(&p, &text);
}
