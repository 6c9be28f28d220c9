//! The README cannot drift from the code: its exit-code table, its settings table, its file
//! tables and its `status --json` key list are parsed here and compared with the code's own
//! tables (`exit::TABLE`, the settings registry, `store::files::FILES`, `status --json`).

use std::collections::BTreeSet;

fn readme() -> String {
    std::fs::read_to_string(format!("{}/README.md", crate::harness::REPO)).unwrap()
}

/// The text of a `## ` or `### ` section of the README, up to the next heading of its level
/// or above.
fn section(text: &str, heading: &str) -> String {
    let level = heading.split(' ').next().unwrap().len();
    let start = text
        .lines()
        .position(|l| l == heading)
        .unwrap_or_else(|| panic!("README has no `{heading}`"));
    text.lines()
        .skip(start + 1)
        .take_while(|l| {
            let hashes = l.chars().take_while(|c| *c == '#').count();
            !(hashes > 0 && hashes <= level && l[hashes..].starts_with(' '))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The cells of a markdown table's row (`\|` is a `|` inside a cell).
fn cells(row: &str) -> Vec<String> {
    let row = row.trim().trim_start_matches('|').trim_end_matches('|');
    row.replace("\\|", "\u{0}")
        .split('|')
        .map(|c| c.trim().replace('\u{0}', "|"))
        .collect()
}

/// The body rows of the first table in `text` whose header row starts with `header`.
fn table(text: &str, header: &str) -> Vec<Vec<String>> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(header));
    assert!(lines.next().is_some(), "no table starting `{header}`");
    lines.next(); // |---|---|
    lines
        .take_while(|l| l.starts_with('|'))
        .map(cells)
        .collect()
}

#[test]
fn the_exit_code_table_is_the_codes_table() {
    let rows = table(&section(&readme(), "## Exit codes"), "| code | meaning |");
    let readme: Vec<(u8, String)> = rows
        .iter()
        .map(|r| (r[0].parse().expect("a code"), r[1].clone()))
        .collect();
    let code: Vec<(u8, String)> = automaton::exit::TABLE
        .iter()
        .map(|(c, m)| (*c, m.to_string()))
        .collect();
    assert_eq!(
        readme, code,
        "README.md's exit codes differ from src/exit.rs's TABLE"
    );
}

/// The README's settings table as the registry makes it: one row per setting.
fn settings_rows() -> Vec<String> {
    use automaton::settings::{KEYS, SettingsFile};
    let dash = |s: &str| {
        if s.is_empty() {
            "—".to_string()
        } else {
            s.to_string()
        }
    };
    KEYS.iter()
        .map(|k| {
            let (file, section) = match k.file {
                SettingsFile::Env => ("environment".to_string(), "—".to_string()),
                f => (format!("`{}`", f.name()), format!("`## {}`", k.section)),
            };
            let var = k.env.map(|v| format!("`{v}`"));
            format!(
                "| {file} | {section} | `{}` | {} | {} | {} |",
                k.key,
                dash(k.default),
                var.as_deref().unwrap_or("—"),
                k.help.replace('|', "\\|")
            )
        })
        .collect()
}

#[test]
fn the_settings_table_is_the_registry() {
    const HEADER: &str = "| file | section | key | default | variable | meaning |";
    let text = section(&readme(), "### Settings (layered)");
    let readme: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != HEADER)
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let code = settings_rows();
    assert!(
        readme == code,
        "README.md's settings table differs from the registry (src/settings/mod.rs); it should \
         read:\n\n{HEADER}\n|---|---|---|---|---|---|\n{}\n",
        code.join("\n")
    );
}

/// The `code` spans of a markdown text.
fn spans(text: &str) -> BTreeSet<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The names a README cell may give a file by: its path, or within `.automaton/` its name
/// there (`config.md` beside `.automaton/.agent.md`).
fn names_of(f: &automaton::store::files::FileSpec) -> Vec<&'static str> {
    let mut names = vec![f.path];
    if let Some(rest) = f.path.strip_prefix(".automaton/") {
        names.push(rest);
    }
    names
}

#[test]
fn the_task_folder_table_names_every_control_file() {
    use automaton::store::files::{FILES, Place};
    let rows = table(
        &section(&readme(), "### Task folders"),
        "| file | written by | meaning |",
    );
    let readme: BTreeSet<String> = rows.iter().flat_map(|r| spans(&r[0])).collect();
    let code: BTreeSet<String> = FILES
        .iter()
        .filter(|f| f.place == Place::Task && !f.artifact)
        .map(|f| f.path.to_string())
        .collect();
    assert_eq!(
        readme, code,
        "README.md's \"Task folders\" table and src/store/files.rs's FILES differ"
    );
}

#[test]
fn what_to_commit_puts_every_file_in_its_column() {
    use automaton::store::files::{FILES, Git};
    let rows = table(&section(&readme(), "### What to commit"), "| in git |");
    let in_git: BTreeSet<String> = rows.iter().flat_map(|r| spans(&r[0])).collect();
    let ignored: BTreeSet<String> = rows.iter().flat_map(|r| spans(&r[1])).collect();
    for f in FILES {
        let (right, wrong) = match f.git {
            Git::Commit => (&in_git, &ignored),
            Git::Ignore => (&ignored, &in_git),
        };
        let names = names_of(f);
        assert!(
            names.iter().any(|n| right.contains(*n)),
            "README.md's \"What to commit\" does not put {} under {:?}",
            f.path,
            f.git
        );
        assert!(
            !names.iter().any(|n| wrong.contains(*n)),
            "README.md's \"What to commit\" puts {} in the wrong column",
            f.path
        );
    }
}

/// `s` without the parts in parentheses (nested ones too).
fn without_parentheses(s: &str) -> String {
    let mut depth = 0;
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            c if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

#[test]
fn the_status_json_keys_are_the_codes_keys() {
    use automaton::report::TASK_KEYS;
    let text = section(&readme(), "## JSON for scripts");
    // The example document: its task holds every key.
    let json = text
        .split("```json\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("the status --json example");
    let doc: serde_json::Value = serde_json::from_str(json).expect("the example is JSON");
    let example: Vec<&str> = doc["tasks"][0]
        .as_object()
        .expect("a task")
        .keys()
        .map(String::as_str)
        .collect();
    let mut example_sorted = example.clone();
    example_sorted.sort_unstable();
    let mut code: Vec<&str> = TASK_KEYS.iter().map(|(k, _)| *k).collect();
    code.sort_unstable();
    assert_eq!(
        example_sorted, code,
        "README.md's status --json example and report::TASK_KEYS differ"
    );
    // The sentence that names the keys always present.
    let start = text
        .find("\n`path`, `name`,")
        .expect("the always-present list")
        + 1;
    let sentence = &text[start..];
    let sentence = &sentence[..sentence.find("are always present").expect("its end")];
    let readme_always = spans(&without_parentheses(sentence));
    let code_always: BTreeSet<String> = TASK_KEYS
        .iter()
        .filter(|(_, always)| *always)
        .map(|(k, _)| k.to_string())
        .collect();
    assert_eq!(
        readme_always, code_always,
        "README.md's always-present status --json keys and report::TASK_KEYS differ"
    );
}

/// What the binary prints agrees with the list: every task has the always-present keys and
/// no key outside it.
#[test]
fn status_json_prints_the_listed_keys() {
    use automaton::report::TASK_KEYS;
    let out = crate::status::fixture()
        .test()
        .args(["status", "--json"])
        .stdout_any()
        .run();
    let doc: serde_json::Value = serde_json::from_str(&out.raw_stdout).unwrap();
    let tasks = doc["tasks"].as_array().expect("tasks");
    assert!(!tasks.is_empty());
    for task in tasks {
        let keys: BTreeSet<&str> = task
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for (key, always) in TASK_KEYS {
            assert!(!always || keys.contains(key), "{key} missing: {task}");
        }
        for key in &keys {
            assert!(
                TASK_KEYS.iter().any(|(k, _)| k == key),
                "{key} is not in TASK_KEYS"
            );
        }
    }
}

/// The second table of "Task folders" (what survives a power cut) names every file a task
/// folder holds by the registry `automaton help files` prints, and nothing the registry does
/// not know: a file added to one and not the other fails here.
#[test]
fn the_power_cut_table_names_every_task_file() {
    use automaton::store::files::{FILES, Place};
    let rows = table(
        &section(&readme(), "### Task folders"),
        "| file | after a power cut | why |",
    );
    let named: BTreeSet<String> = rows.iter().flat_map(|r| spans(&r[0])).collect();
    let known = |name: &str| {
        FILES.iter().any(|f| names_of(f).contains(&name))
            // A file inside a task's logs/ (the registry has the folder).
            || name.starts_with("logs/")
    };
    let unknown: Vec<&String> = named.iter().filter(|n| !known(n)).collect();
    assert!(
        unknown.is_empty(),
        "README.md's power-cut table names files src/store/files.rs's FILES does not know: {unknown:?}"
    );
    let missing: Vec<&str> = FILES
        .iter()
        .filter(|f| f.place == Place::Task && !f.artifact)
        .map(|f| f.path)
        .filter(|p| !named.contains(*p))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md's power-cut table does not say what a power cut leaves of {missing:?}"
    );
    // The artifacts, in one row, from the first to the last.
    let artifacts: Vec<&str> = FILES
        .iter()
        .filter(|f| f.artifact)
        .map(|f| f.path)
        .collect();
    for a in [artifacts[0], artifacts[artifacts.len() - 1]] {
        assert!(
            named.contains(a),
            "the power-cut table's artifacts row lacks {a}"
        );
    }
}
