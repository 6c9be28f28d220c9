//! Issue 14: the durability split (`- **Durability**: full`) and the status index
//! (`.automaton/.index`), which is a cache: no state of it may change an answer.

use crate::harness::Project;
use predicates::prelude::*;

#[test]
fn durability_full_is_accepted_and_shown_by_config() {
    let p = Project::new();
    p.cmd()
        .arg("config")
        .assert()
        .success()
        .stdout(predicate::str::contains("Durability").and(predicate::str::contains("normal")));
    p.write(
        ".automaton/config.md",
        "## Storage\n- **Durability**: full\n",
    );
    let out = p.cmd().args(["config", "--json"]).output().unwrap();
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = doc
        .as_array()
        .or_else(|| doc["settings"].as_array())
        .unwrap()
        .iter()
        .find(|r| r["id"] == "storage.durability")
        .unwrap_or_else(|| panic!("no storage.durability in {doc:#}"))
        .clone();
    assert_eq!(row["value"], "full");
    assert!(row["origin"].as_str().unwrap().ends_with("config.md:2"));
    // A word it does not know is an error naming the file and line: `config` shows it (and
    // still runs, issue 15), `orchestrate` refuses.
    p.write(
        ".automaton/config.md",
        "## Storage\n- **Durability**: paranoid\n",
    );
    p.cmd()
        .arg("config")
        .assert()
        .success()
        .stderr(predicate::str::contains("config.md:2"));
    p.orchestrate_cmd()
        .arg("x")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("config.md:2"));
}

/// Every file automaton writes is still a whole file, in both modes: a full run leaves no temp
/// file behind and `.state`, the prompts and the artifacts are complete.
#[test]
fn both_durability_modes_run_a_task_to_complete_with_whole_files() {
    for mode in ["normal", "full"] {
        let p = Project::new();
        p.orchestrate_cmd()
            .env("AUTOMATON_DURABILITY", mode)
            .arg("add user auth")
            .assert()
            .code(0)
            .stdout(predicate::str::ends_with("ORCHESTRATION_COMPLETE\n"));
        assert_eq!(p.read("tasks/add-user-auth/.state"), "complete\n", "{mode}");
        assert!(
            p.read("tasks/add-user-auth/TASK.md")
                .contains("add user auth")
        );
        let logs = p.join("tasks/add-user-auth/logs");
        let mut prompts = 0;
        for e in std::fs::read_dir(&logs).unwrap().flatten() {
            let name = e.file_name().into_string().unwrap();
            assert!(
                !name.starts_with(".automaton-tmp-"),
                "{mode}: temp file {name} left"
            );
            if name.ends_with(".prompt.md") {
                prompts += 1;
                assert!(!std::fs::read(e.path()).unwrap().is_empty());
            }
        }
        assert_eq!(prompts, 8, "{mode}");
        for e in std::fs::read_dir(p.join("tasks/add-user-auth"))
            .unwrap()
            .flatten()
        {
            let name = e.file_name().into_string().unwrap();
            assert!(
                !name.starts_with(".automaton-tmp-"),
                "{mode}: temp file {name} left"
            );
        }
    }
}

/// A tree of `n` tasks at varied states (every tenth a parent with three sub-tasks), with the
/// control files and odd cases status reads: a FAIL verdict, a malformed one, a bad `.state`
/// word, a `.stop`, a whitespace-only artifact and a non-UTF-8 one.
fn tree(p: &Project, n: usize) {
    let life = [
        "SPEC.md",
        "DESIGN.md",
        "TEST_PLAN.md",
        "IMPLEMENTATION.md",
        "BUG_REPORT.md",
        "ADVERSARIAL_BUG_REPORT.md",
        "DOC_REVIEW.md",
    ];
    for i in 0..n {
        let t = format!("tasks/t{i:04}");
        for a in life.iter().take(i % 8) {
            p.write(&format!("{t}/{a}"), format!("# {a}\n\nwork of {i}\n"));
        }
        match i % 10 {
            0 => {
                p.write(&format!("{t}/SPEC.md"), "spec\n");
                p.write(
                    &format!("{t}/DECOMPOSITION.md"),
                    "| Sub-task | Wave | Depends on |\n|---|---|---|\n| s1 | 1 | - |\n| s2 | 1 | - |\n| s3 | 2 | s1, s2 |\n",
                );
                p.write(&format!("{t}/subtasks/s1/VERDICT.md"), "Verdict: PASS\n");
                p.write(&format!("{t}/subtasks/s2/SPEC.md"), "spec\n");
                p.mkdir(&format!("{t}/subtasks/s3"));
            }
            7 => {
                p.write(&format!("{t}/VERDICT.md"), "Verdict: PASS\n");
            }
            8 => {
                p.write(&format!("{t}/SPEC.md"), "spec\n");
                p.write(&format!("{t}/.state"), "bogus\n");
            }
            9 => {
                p.write(&format!("{t}/SPEC.md"), " \n\t\n");
                p.write(&format!("{t}/DESIGN.md"), b"\xff\xfe design\n");
                p.write(&format!("{t}/.stop"), "the agent failed (exit 3)\n");
            }
            _ => {}
        }
    }
    p.write(
        "tasks/t0007/VERDICT.md",
        "Verdict: FAIL\n\n## Findings\n- race: it races\n",
    );
    p.write("tasks/t0017/VERDICT.md", "Verdict: PASS FAIL\n");
}

fn status_out(p: &Project) -> String {
    let out = p.cmd().args(["status", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn set_mtime(path: &std::path::Path, t: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// The index is a cache: the same `status --json` with no index, a fresh one, a warm one, a
/// corrupted one, a deleted one, a stale one (files rewritten with the same size and the
/// mtime put back) and one that cannot be written.
#[test]
fn the_index_never_changes_an_answer() {
    let p = Project::new();
    tree(&p, 300);
    let index = p.join(".automaton/.index");
    // Files younger than 2 s are never recorded (the racy-clean rule): let the tree age.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let truth = status_out(&p);
    assert!(index.is_file(), "a tree of 300 tasks gets an index");
    let doc: serde_json::Value = serde_json::from_str(&truth).unwrap();
    assert!(doc["tasks"].as_array().unwrap().len() > 300);
    let warm = status_out(&p);
    assert_eq!(warm, truth, "warm index");
    assert_eq!(status_out(&p), truth, "warm index, second time");

    // Corrupted: a byte flipped in the middle, the file cut short, garbage.
    let bytes = std::fs::read(&index).unwrap();
    let mut flipped = bytes.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x01;
    for bad in [
        flipped,
        bytes[..bytes.len() / 3].to_vec(),
        b"garbage".to_vec(),
    ] {
        std::fs::write(&index, bad).unwrap();
        assert_eq!(status_out(&p), truth, "corrupted index");
    }
    // Deleted.
    std::fs::remove_file(&index).unwrap();
    assert_eq!(status_out(&p), truth, "deleted index");
    assert!(index.is_file(), "rebuilt");
    assert_eq!(status_out(&p), truth, "rebuilt index");

    // Stale: rewritten in place with the same size, the mtime put back as it was.
    let v = p.join("tasks/t0027/VERDICT.md");
    let d = p.join("tasks/t0013/SPEC.md");
    let (vt, dt) = (
        std::fs::metadata(&v).unwrap().modified().unwrap(),
        std::fs::metadata(&d).unwrap().modified().unwrap(),
    );
    let before_len = std::fs::metadata(&v).unwrap().len();
    std::fs::write(&v, "Verdict: FAIL\n").unwrap();
    assert_eq!(std::fs::metadata(&v).unwrap().len(), before_len);
    set_mtime(&v, vt);
    let spec = std::fs::read(&d).unwrap();
    std::fs::write(&d, vec![b' '; spec.len()]).unwrap();
    set_mtime(&d, dt);
    let stale = status_out(&p);
    std::fs::remove_file(&index).unwrap();
    assert_eq!(status_out(&p), stale, "stale index vs none");
    let doc: serde_json::Value = serde_json::from_str(&stale).unwrap();
    let task = |path: &str| {
        doc["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["path"] == path)
            .unwrap()
            .clone()
    };
    assert_eq!(task("tasks/t0027")["state"], "human_intervention");
    assert_eq!(task("tasks/t0027")["verdict"], "FAIL");
    assert!(
        !task("tasks/t0013")["artifacts"]
            .as_array()
            .unwrap()
            .contains(&"SPEC.md".into())
    );

    // Racy: written just before an index is made, rewritten at once with the same size.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    p.write("tasks/t0037/VERDICT.md", "Verdict: PASS\n");
    let racy_before = status_out(&p);
    assert!(racy_before.contains("\"path\": \"tasks/t0037\""));
    let t = std::fs::metadata(p.join("tasks/t0037/VERDICT.md"))
        .unwrap()
        .modified()
        .unwrap();
    p.write("tasks/t0037/VERDICT.md", "Verdict: FAIL\n");
    set_mtime(&p.join("tasks/t0037/VERDICT.md"), t);
    let racy = status_out(&p);
    std::fs::remove_file(&index).unwrap();
    assert_eq!(status_out(&p), racy, "racy rewrite vs no index");
    assert_ne!(racy, racy_before);

    // An index that cannot be written (a folder in its place): status still answers.
    let truth = status_out(&p);
    std::fs::remove_file(&index).unwrap();
    std::fs::create_dir(&index).unwrap();
    assert_eq!(status_out(&p), truth, "unwritable index");
    assert!(index.is_dir());
}

/// Small projects get no index: `status` leaves them untouched.
#[test]
fn small_trees_keep_no_index() {
    let p = Project::new();
    tree(&p, 20);
    status_out(&p);
    assert!(!p.join(".automaton").exists());
}
