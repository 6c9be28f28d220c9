//! Issue 14: the durability split (`- **Durability**: full`) and the status index
//! (`.automaton/.index`), which is a cache: no state of it may change an answer.

mod common;
use common::Project;
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
    // A word it does not know is an error naming the file and line.
    p.write(
        ".automaton/config.md",
        "## Storage\n- **Durability**: paranoid\n",
    );
    p.cmd()
        .arg("config")
        .assert()
        .failure()
        .stderr(predicate::str::contains("config.md:2"));
}

/// Every file automaton writes is still a whole file, in both modes: a full run leaves no temp
/// file behind and `.state`, the prompts and the artifacts are complete.
#[test]
fn both_durability_modes_run_a_task_to_complete_with_whole_files() {
    for mode in ["normal", "full"] {
        let p = Project::new();
        p.orchestrate()
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
