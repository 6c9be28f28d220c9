//! The pages an installed binary carries about itself (`automaton help <topic>`, `man`), each
//! snapshotted, and each made from the code's own tables: no page points at automaton's own
//! repository, and `--help` and the man pages list the exit codes instead of sending the
//! reader to a README.

use crate::harness::Project;

fn page(args: &[&str]) -> String {
    Project::new()
        .test()
        .args(args.iter().copied())
        .stdout_any()
        .run()
        .stdout
}

#[test]
fn help_exit_codes() {
    let out = page(&["help", "exit-codes"]);
    for (code, _) in automaton::exit::TABLE {
        assert!(
            out.contains(&format!("\n  {code:<5}")),
            "code {code} missing"
        );
    }
    insta::assert_snapshot!(out);
}

#[test]
fn help_settings() {
    let out = page(&["help", "settings"]);
    for spec in automaton::settings::KEYS {
        assert!(
            out.contains(&format!("\n  {}  [default: ", spec.key)),
            "{}",
            spec.key
        );
    }
    insta::assert_snapshot!(out);
}

#[test]
fn help_events_is_the_event_page() {
    let out = page(&["help", "events"]);
    assert_eq!(
        out,
        std::fs::read_to_string(format!("{}/docs/events.md", crate::harness::REPO)).unwrap()
    );
}

#[test]
fn help_files() {
    let out = page(&["help", "files"]);
    for f in automaton::store::files::FILES {
        assert!(out.contains(&format!("\n  {}  (", f.path)), "{}", f.path);
    }
    insta::assert_snapshot!(out);
}

#[test]
fn help_names_its_topics_and_a_command_gets_its_own_help() {
    let out = page(&["help"]);
    for topic in ["exit-codes", "settings", "events", "files"] {
        assert!(out.contains(&format!("\n  {topic} ")), "{topic}");
    }
    let sub = page(&["help", "task", "create"]);
    assert!(sub.contains("Usage: automaton task create"), "{sub}");
    Project::new()
        .test()
        .args(["help", "nonsense"])
        .status(2)
        .stderr(
            "error: no help topic or command `nonsense`; topics: exit-codes, settings, events, \
             files; commands: see `automaton help`\n",
        )
        .run();
}

#[test]
fn help_points_at_the_exit_code_page_not_the_readme() {
    let out = page(&["--help"]);
    assert!(out.contains("automaton help exit-codes"), "{out}");
    assert!(!out.contains("README"), "{out}");
    for command in ["orchestrate", "continue"] {
        let out = page(&[command, "--help"]);
        assert!(out.contains("`automaton help exit-codes`"), "{out}");
        assert!(out.contains("`automaton help settings`"), "{out}");
    }
}

/// A man page per command: its options, every exit code, every setting.
#[test]
fn a_man_page_per_command_with_options_exit_codes_and_settings() {
    let out = page(&["man", "orchestrate"]);
    for needle in [
        ".TH automaton-orchestrate 1",
        "\\-\\-max\\-iterations",
        "\\-\\-dry\\-run",
        ".SH \"EXIT STATUS\"",
        ".SH SETTINGS",
        "\\fBBudget per task\\fR",
        "\\fBAUTOMATON_KILL_GRACE\\fR",
    ] {
        assert!(out.contains(needle), "{needle} missing");
    }
    for (code, _) in automaton::exit::TABLE {
        assert!(
            out.contains(&format!(".TP\n\\fB{code}\\fR\n")),
            "code {code}"
        );
    }
    assert!(!out.contains("README"));

    let p = Project::new();
    p.test().args(["man", "--dir", "pages"]).stdout_any().run();
    let dir = p.path().join("pages");
    for name in [
        "automaton.1",
        "automaton-orchestrate.1",
        "automaton-task-create.1",
        "automaton-status.1",
        "automaton-help.1",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).expect(name);
        assert!(text.contains(".SH \"EXIT STATUS\""), "{name}");
    }
}

/// What the binary says never points at automaton's own source tree (a user's installed
/// binary has none): errors and generated files name commands instead.
#[test]
fn no_user_facing_text_points_at_automatons_own_repository() {
    let mut files = Vec::new();
    rust_files(
        &std::path::Path::new(crate::harness::REPO).join("src"),
        &mut files,
    );
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") || code.contains("include_str!") || !code.contains('"') {
                continue;
            }
            assert!(
                !line.contains("examples/agents/") || in_tests(&text, i),
                "{}:{}: user-facing text names examples/agents/: {line}",
                file.display(),
                i + 1
            );
        }
    }
}

/// Whether line `i` is in a file's `#[cfg(test)]` part (tests may name fixtures).
fn in_tests(text: &str, i: usize) -> bool {
    text.lines()
        .take(i)
        .any(|l| l.trim_start().starts_with("#[cfg(test)]"))
}

fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `help files` says which files belong in git; the rules `init` writes agree, file by file,
/// in the project's `.automaton/` and in a task folder of each root, at any depth.
#[test]
fn init_ignores_exactly_the_files_help_files_calls_ignored() {
    use automaton::store::files::{FILES, Git, Place};
    let p = Project::new();
    let git_ok = std::process::Command::new("git")
        .arg("-C")
        .arg(p.path())
        .args(["init", "--quiet"])
        .status()
        .unwrap();
    assert!(git_ok.success());
    p.test()
        .args(["init", "--agent", "command"])
        .stdout_any()
        .run();
    let concrete = |path: &str| {
        let path = path.replace("<phase>", "research").replace('*', "x");
        match path.strip_suffix('/') {
            Some(dir) => format!("{dir}/a-file"),
            None => path,
        }
    };
    for f in FILES {
        let places: Vec<String> = match f.place {
            Place::Project | Place::Automaton => vec![concrete(f.path)],
            Place::Task => ["tasks/a", ".automaton/tasks/a", "tasks/a/subtasks/b"]
                .iter()
                .map(|t| format!("{t}/{}", concrete(f.path)))
                .collect(),
        };
        for rel in places {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(p.path())
                .args(["check-ignore", "--no-index", "-q", &rel])
                .status()
                .unwrap();
            let ignored = out.code() == Some(0);
            assert_eq!(
                ignored,
                f.git == Git::Ignore,
                "{rel}: `help files` says {:?}, init's rules {}",
                f.git,
                if ignored { "ignore it" } else { "keep it" }
            );
        }
    }
}

/// The event page names every stop kind the stream can carry, and no other.
#[test]
fn the_event_page_lists_every_stop_kind() {
    let page = page(&["help", "events"]);
    let start = page
        .find("`kind` of a stop is one of")
        .expect("the kind list");
    let list = &page[start..];
    let list = &list[..list.find("(their exit codes").expect("its end")];
    let named: Vec<&str> = list.split('`').skip(3).step_by(2).collect();
    let words: Vec<&str> = automaton::plan::decide::StopKind::TABLE
        .iter()
        .map(|(_, word, _)| *word)
        .collect();
    assert_eq!(named, words);
    assert!(!page.contains("README") && !page.contains("](../"));
}
