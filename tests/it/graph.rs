//! `automaton graph`: the task DAG as Mermaid and Graphviz DOT, from a fixture tree.

use crate::harness::{Project, Test};

const DECOMP: &str = "| Sub-task | Wave | Depends on | Estimated peak context |\n|---|---|---|---|\n| a | 1 | - | 6k |\n| b | 1 | - | 6k |\n| c | 2 | a | 8k |\n| d | 3 | b, c | 8k |\n| e | 2 | b | 8k |\n";

/// Every state colour: complete, human_intervention (FAIL), a building phase, a planning phase
/// (the parent waiting on its sub-tasks), new, blocked (c, by a) and not created (e, d).
pub fn fixture() -> Project {
    let p = Project::new();
    p.mkdir("tasks/fresh")
        .write("tasks/done/VERDICT.md", "Verdict: PASS\n")
        .write("tasks/odd.name/SPEC.md", "x")
        .write("tasks/parent/SPEC.md", "x")
        .write("tasks/parent/DECOMPOSITION.md", DECOMP)
        .write("tasks/parent/subtasks/a/VERDICT.md", "Verdict: FAIL\n")
        .write("tasks/parent/subtasks/b/IMPLEMENTATION.md", "x")
        .write("tasks/parent/subtasks/c/.state", "new\n");
    p
}

fn graph(p: &Project, args: &[&str]) -> String {
    p.test().arg("graph").args(args).stdout_any().run().stdout
}

/// The id the graph gave the node whose label starts with `name` (Mermaid `id["name<br/>...`).
fn mermaid_id(out: &str, name: &str) -> String {
    let needle = format!("[\"{name}<br/>");
    let line = out
        .lines()
        .find(|l| l.contains(&needle))
        .unwrap_or_else(|| panic!("no node {name} in\n{out}"));
    line.trim().split('[').next().unwrap().to_string()
}

fn dot_id(out: &str, name: &str) -> String {
    let needle = format!("[label=\"{name}\\n");
    let line = out
        .lines()
        .find(|l| l.contains(&needle))
        .unwrap_or_else(|| panic!("no node {name} in\n{out}"));
    line.trim().split(' ').next().unwrap().to_string()
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !id.starts_with(|c: char| c.is_ascii_digit())
}

#[test]
fn mermaid_shows_nodes_containment_dependencies_and_colours() {
    let p = fixture();
    let out = graph(&p, &[]);
    assert_eq!(
        out,
        graph(&p, &["--format", "mermaid"]),
        "mermaid is the default"
    );
    assert!(out.starts_with("flowchart TD\n"), "{out}");
    // Every task with its state, coloured by state.
    for (name, state, class) in [
        ("done", "complete", "st_complete"),
        ("fresh", "new", "st_new"),
        ("odd.name", "design", "st_planning"),
        ("parent", "decomposition", "st_planning"),
        ("a", "human_intervention", "st_human"),
        ("b", "bug_find", "st_building"),
        ("c", "new<br/>blocked by a", "st_blocked"),
        ("d", "not created<br/>blocked by c", "st_blocked"),
        ("e", "not created", "st_missing"),
    ] {
        let id = mermaid_id(&out, name);
        assert!(valid_id(&id), "bad id {id}");
        assert!(
            out.contains(&format!("{id}[\"{name}<br/>{state}\"]:::{class}\n")),
            "{name}: {out}"
        );
    }
    for (class, fill) in [
        ("st_complete", "#a5d6a7"),
        ("st_human", "#ef9a9a"),
        ("st_planning", "#fff59d"),
        ("st_building", "#90caf9"),
        ("st_new", "#e0e0e0"),
    ] {
        assert!(
            out.contains(&format!("classDef {class} fill:{fill},")),
            "{class}: {out}"
        );
    }
    // The parent and its sub-tasks share a subgraph; top-level tasks stay outside it.
    let start = out.find("subgraph ").expect("no subgraph");
    let end = start + out[start..].find("\n  end\n").expect("subgraph not closed");
    let inside = &out[start..end];
    assert!(inside.contains("[\"tasks/parent\"]"), "{inside}");
    for name in ["parent", "a", "b", "c", "d", "e"] {
        assert!(
            inside.contains(&mermaid_id(&out, name)),
            "{name} not in {inside}"
        );
    }
    for name in ["done", "fresh", "odd.name"] {
        assert!(
            !inside.contains(&mermaid_id(&out, name)),
            "{name} in {inside}"
        );
    }
    // Dependency edges, dependency -> dependent, and no others.
    let edges: Vec<&str> = out.lines().filter(|l| l.contains("-->")).collect();
    let id = |n: &str| mermaid_id(&out, n);
    for (from, to) in [("a", "c"), ("b", "d"), ("c", "d"), ("b", "e")] {
        let edge = format!("  {} --> {}", id(from), id(to));
        assert!(edges.contains(&edge.as_str()), "missing {edge} in\n{out}");
    }
    assert_eq!(edges.len(), 4, "{out}");
}

#[test]
fn dot_is_a_balanced_digraph_with_clusters_edges_and_colours() {
    let p = fixture();
    let out = graph(&p, &["--format", "dot"]);
    assert!(out.starts_with("digraph automaton {\n"), "{out}");
    assert!(out.trim_end().ends_with('}'), "{out}");
    // Braces balance and never close more than they opened (outside quoted strings).
    let mut depth: i64 = 0;
    let mut quoted = false;
    let mut escaped = false;
    for ch in out.chars() {
        match ch {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '{' if !quoted => depth += 1,
            '}' if !quoted => {
                depth -= 1;
                assert!(depth >= 0, "unbalanced braces in\n{out}");
            }
            _ => {}
        }
    }
    assert_eq!(depth, 0, "unbalanced braces in\n{out}");
    assert!(!quoted, "unclosed string in\n{out}");
    // Nodes: label = name and state, fill by state.
    for (name, state, fill) in [
        ("done", "complete", "#a5d6a7"),
        ("fresh", "new", "#e0e0e0"),
        ("odd.name", "design", "#fff59d"),
        ("a", "human_intervention", "#ef9a9a"),
        ("b", "bug_find", "#90caf9"),
        ("c", "new\\nblocked by a", "#e0e0e0"),
    ] {
        let id = dot_id(&out, name);
        assert!(valid_id(&id), "bad id {id}");
        assert!(
            out.contains(&format!(
                "{id} [label=\"{name}\\n{state}\", fillcolor=\"{fill}\""
            )),
            "{name}: {out}"
        );
    }
    assert!(out.contains("subgraph cluster_"), "{out}");
    assert!(out.contains("label=\"tasks/parent\";"), "{out}");
    let id = |n: &str| dot_id(&out, n);
    let edges: Vec<&str> = out.lines().filter(|l| l.contains(" -> ")).collect();
    for (from, to) in [("a", "c"), ("b", "d"), ("c", "d"), ("b", "e")] {
        let edge = format!("  {} -> {};", id(from), id(to));
        assert!(edges.contains(&edge.as_str()), "missing {edge} in\n{out}");
    }
    assert_eq!(edges.len(), 4, "{out}");
}

#[test]
fn empty_project_is_an_empty_graph() {
    let p = Test::new().arg("graph").stdout_any().run();
    assert_eq!(p.stdout.lines().next(), Some("flowchart TD"));
    assert!(!p.stdout.contains("-->"), "{}", p.stdout);
    insta::assert_snapshot!("graph_empty_mermaid", p.stdout);
    let dot = p
        .test()
        .args(["graph", "--format", "dot"])
        .stdout_any()
        .run()
        .stdout;
    assert!(dot.starts_with("digraph automaton {") && dot.ends_with("}\n"));
    assert!(!dot.contains(" -> "));
    insta::assert_snapshot!("graph_empty_dot", dot);
}
