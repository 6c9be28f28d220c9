//! `automaton graph`: the task DAG as Mermaid or Graphviz DOT, coloured by state.
//!
//! - Every task folder is a node labelled with its name and state (and `blocked by X` where a
//!   dependency did not pass). Sub-tasks that DECOMPOSITION.md lists but that have no folder
//!   yet are drawn dashed, labelled `not created`.
//! - A parent and its sub-tasks share a box (a Mermaid `subgraph`, a DOT `cluster`), nested to
//!   any depth.
//! - An arrow `dep --> sub-task` for each `Depends on` entry of a DECOMPOSITION.md: the arrow
//!   points from the sub-task that must be terminal first to the one that waits for it.
//!
//! Legend (fill colours):
//! - green `#a5d6a7`: `complete`;
//! - red `#ef9a9a`: `human_intervention`;
//! - yellow `#fff59d`: planning phases next (`decomposition` — a parent waiting on its
//!   sub-tasks —, `design`, `test_design`);
//! - blue `#90caf9`: build and review phases next (`implement`, `bug_find`,
//!   `adversarial_bug_find`, `doc_review`, `referee`);
//! - grey `#e0e0e0`: `new` (research runs next), and sub-tasks not created yet (dashed);
//! - grey with a dashed red border: a sub-task blocked by a dependency that did not pass.
//!
//! Node ids are `t<index>_<path>` with every character outside `[A-Za-z0-9_]` replaced by `_`:
//! valid in both formats and unique (the index), whatever the folder names hold.

use super::blocked_by;
use crate::state::{Phase, State};
use crate::task::TaskTree;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;

/// The colour class of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Complete,
    Human,
    Planning,
    Building,
    New,
    Blocked,
    Missing,
}

impl Style {
    const ALL: [Style; 7] = [
        Style::Complete,
        Style::Human,
        Style::Planning,
        Style::Building,
        Style::New,
        Style::Blocked,
        Style::Missing,
    ];

    fn of(state: State, blocked: bool) -> Style {
        match state {
            _ if blocked => Style::Blocked,
            State::Complete => Style::Complete,
            State::HumanIntervention => Style::Human,
            State::NEW => Style::New,
            State::Next(Phase::Decomposition)
            | State::Next(Phase::Design)
            | State::Next(Phase::TestDesign) => Style::Planning,
            State::Next(Phase::Implement)
            | State::Next(Phase::BugFind)
            | State::Next(Phase::AdversarialBugFind)
            | State::Next(Phase::DocReview)
            | State::Next(Phase::Referee) => Style::Building,
        }
    }

    fn class(self) -> &'static str {
        match self {
            Style::Complete => "st_complete",
            Style::Human => "st_human",
            Style::Planning => "st_planning",
            Style::Building => "st_building",
            Style::New => "st_new",
            Style::Blocked => "st_blocked",
            Style::Missing => "st_missing",
        }
    }

    /// (fill, border, dashed border)
    fn colours(self) -> (&'static str, &'static str, bool) {
        match self {
            Style::Complete => ("#a5d6a7", "#2e7d32", false),
            Style::Human => ("#ef9a9a", "#c62828", false),
            Style::Planning => ("#fff59d", "#f9a825", false),
            Style::Building => ("#90caf9", "#1565c0", false),
            Style::New => ("#e0e0e0", "#616161", false),
            Style::Blocked => ("#e0e0e0", "#c62828", true),
            Style::Missing => ("#f5f5f5", "#9e9e9e", true),
        }
    }
}

/// One node of the drawing: a task's path and name are borrowed from the tree (only a planned
/// sub-task with no folder owns its own), and its id and label are made as it is drawn.
#[derive(Debug, Clone)]
struct Node<'a> {
    path: Cow<'a, str>,
    name: Cow<'a, str>,
    /// A state word, or `not created`.
    state: &'static str,
    blocked_by: Option<String>,
    style: Style,
}

impl Node<'_> {
    /// Label lines.
    fn lines(&self) -> Vec<String> {
        let mut lines = vec![self.name.to_string(), self.state.to_string()];
        if let Some(by) = &self.blocked_by {
            lines.push(format!("blocked by {by}"));
        }
        lines
    }
}

/// A box: a parent with its sub-tasks (nested boxes for nested parents).
#[derive(Debug, Clone)]
struct Cluster {
    id: String,
    title: String,
    /// The parent's own node first, then its sub-tasks' (indexes into `Graph::nodes`).
    nodes: Vec<usize>,
    clusters: Vec<Cluster>,
}

/// What both renderers draw.
#[derive(Debug, Clone, Default)]
struct Graph<'a> {
    nodes: Vec<Node<'a>>,
    /// Top-level tasks without sub-tasks.
    loose: Vec<usize>,
    clusters: Vec<Cluster>,
    /// (from, to) node indexes: dependency before dependent.
    edges: Vec<(usize, usize)>,
}

fn sanitize(path: &str) -> String {
    path.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

impl Graph<'_> {
    /// The id of node `i`.
    fn id(&self, i: usize) -> String {
        format!("t{i}_{}", sanitize(&self.nodes[i].path))
    }
}

fn build(tree: &TaskTree) -> Graph<'_> {
    // A box shows the name, the state and a blocker: no whole task view is built.
    let mut g = Graph::default();
    for (i, node) in tree.nodes.iter().enumerate() {
        let blocked_by = blocked_by(tree, i);
        g.nodes.push(Node {
            path: Cow::Borrowed(&node.rel),
            name: Cow::Borrowed(node.name()),
            state: node.state().word(),
            style: Style::of(node.state(), blocked_by.is_some()),
            blocked_by,
        });
    }
    // Planned sub-tasks with no folder yet, and the dependency edges of every plan. Looked up
    // by path (`TaskTree::find`, a binary search, and a map of the missing ones): a linear
    // search per row made large trees quadratic.
    let mut missing: HashMap<String, usize> = HashMap::new();
    // Parent path -> its planned sub-tasks with no folder.
    let mut planned_of: HashMap<&str, Vec<usize>> = HashMap::new();
    for node in &tree.nodes {
        let Some(Ok(plan)) = &node.snap.plan else {
            continue;
        };
        let mut index_of = |name: &str, g: &mut Graph| -> usize {
            let rel = format!("{}/subtasks/{name}", node.rel);
            if let Some(j) = tree.find(&rel) {
                return j;
            }
            if let Some(j) = missing.get(&rel) {
                return *j;
            }
            let j = g.nodes.len();
            let blocker = node.decision.blocked.iter().find(|(b, _)| b == name);
            g.nodes.push(Node {
                path: Cow::Owned(rel.clone()),
                name: Cow::Owned(name.to_string()),
                state: "not created",
                blocked_by: blocker.map(|(_, by)| by.clone()),
                style: if blocker.is_some() {
                    Style::Blocked
                } else {
                    Style::Missing
                },
            });
            missing.insert(rel, j);
            planned_of.entry(node.rel.as_str()).or_default().push(j);
            j
        };
        for row in &plan.rows {
            let to = index_of(&row.name, &mut g);
            for dep in &row.depends_on {
                let from = index_of(dep, &mut g);
                g.edges.push((from, to));
            }
        }
    }
    fn cluster(
        tree: &TaskTree,
        i: usize,
        g: &Graph,
        planned_of: &HashMap<&str, Vec<usize>>,
    ) -> Option<Cluster> {
        let node = &tree.nodes[i];
        let planned = planned_of
            .get(node.rel.as_str())
            .cloned()
            .unwrap_or_default();
        if node.children.is_empty() && planned.is_empty() {
            return None;
        }
        let mut c = Cluster {
            id: format!("cluster_{}", g.id(i)),
            title: node.rel.clone(),
            nodes: vec![i],
            clusters: Vec::new(),
        };
        for &child in &node.children {
            match cluster(tree, child, g, planned_of) {
                Some(sub) => c.clusters.push(sub),
                None => c.nodes.push(child),
            }
        }
        c.nodes.extend(planned);
        Some(c)
    }
    for (i, node) in tree.nodes.iter().enumerate() {
        if node.parent.is_some() {
            continue;
        }
        match cluster(tree, i, &g, &planned_of) {
            Some(c) => g.clusters.push(c),
            None => g.loose.push(i),
        }
    }
    g
}

/// Mermaid label text: quotes and angle brackets as entities, lines joined by `<br/>`.
fn mermaid_label(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| {
            l.replace('&', "#amp;")
                .replace('"', "#quot;")
                .replace('<', "#lt;")
                .replace('>', "#gt;")
        })
        .collect::<Vec<_>>()
        .join("<br/>")
}

fn dot_string(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn dot_label(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| dot_string(l))
        .collect::<Vec<_>>()
        .join("\\n")
}

const LEGEND: &str = "legend: green complete, red human_intervention, yellow planning \
     (decomposition/design/test_design), blue building (implement..referee), grey new, \
     dashed red blocked, dashed grey not created; an arrow points from a dependency to its dependent";

type NodeFn<'a> = &'a dyn Fn(&mut String, usize, &str);
type OpenFn<'a> = &'a dyn Fn(&mut String, &Cluster, &str, &str);

/// The layout both formats share: loose nodes, then each parent's box with its nodes and the
/// boxes nested in it. `open` writes a box's header (given its indent and the inner indent),
/// `close` its footer.
fn write_tree(
    out: &mut String,
    g: &Graph,
    node: NodeFn,
    open: OpenFn,
    close: &dyn Fn(&mut String, &str),
) {
    fn cluster(
        out: &mut String,
        c: &Cluster,
        depth: usize,
        node: NodeFn,
        open: OpenFn,
        close: &dyn Fn(&mut String, &str),
    ) {
        let indent = "  ".repeat(depth + 1);
        let inner = "  ".repeat(depth + 2);
        open(out, c, &indent, &inner);
        for &i in &c.nodes {
            node(out, i, &inner);
        }
        for sub in &c.clusters {
            cluster(out, sub, depth + 1, node, open, close);
        }
        close(out, &indent);
    }
    for &i in &g.loose {
        node(out, i, "  ");
    }
    for c in &g.clusters {
        cluster(out, c, 0, node, open, close);
    }
}

fn render_mermaid(g: &Graph) -> String {
    let mut out = String::from("flowchart TD\n");
    let _ = writeln!(out, "  %% automaton task graph; {LEGEND}");
    for s in Style::ALL {
        let (fill, stroke, dashed) = s.colours();
        let dash = if dashed { ",stroke-dasharray:5 5" } else { "" };
        let _ = writeln!(
            out,
            "  classDef {} fill:{fill},stroke:{stroke},color:#000{dash}",
            s.class()
        );
    }
    let node = |out: &mut String, i: usize, indent: &str| {
        let n = &g.nodes[i];
        let _ = writeln!(
            out,
            "{indent}{}[\"{}\"]:::{}",
            g.id(i),
            mermaid_label(&n.lines()),
            n.style.class()
        );
    };
    let open = |out: &mut String, c: &Cluster, indent: &str, _inner: &str| {
        let title = mermaid_label(std::slice::from_ref(&c.title));
        let _ = writeln!(out, "{indent}subgraph {} [\"{title}\"]", c.id);
    };
    write_tree(&mut out, g, &node, &open, &|out, indent| {
        let _ = writeln!(out, "{indent}end");
    });
    for (from, to) in &g.edges {
        let _ = writeln!(out, "  {} --> {}", g.id(*from), g.id(*to));
    }
    out
}

fn render_dot(g: &Graph) -> String {
    let mut out = String::from("digraph automaton {\n");
    let _ = writeln!(out, "  // automaton task graph; {LEGEND}");
    out.push_str("  rankdir=TB;\n  compound=true;\n");
    out.push_str("  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n");
    let node = |out: &mut String, i: usize, indent: &str| {
        let n = &g.nodes[i];
        let (fill, stroke, dashed) = n.style.colours();
        let style = if dashed {
            "rounded,filled,dashed"
        } else {
            "rounded,filled"
        };
        let _ = writeln!(
            out,
            "{indent}{} [label=\"{}\", fillcolor=\"{fill}\", color=\"{stroke}\", style=\"{style}\", class=\"{}\"];",
            g.id(i),
            dot_label(&n.lines()),
            n.style.class()
        );
    };
    let open = |out: &mut String, c: &Cluster, indent: &str, inner: &str| {
        let _ = writeln!(out, "{indent}subgraph {} {{", c.id);
        let _ = writeln!(
            out,
            "{inner}label=\"{}\";\n{inner}style=\"rounded\";\n{inner}color=\"#9e9e9e\";",
            dot_string(&c.title)
        );
    };
    write_tree(&mut out, g, &node, &open, &|out, indent| {
        let _ = writeln!(out, "{indent}}}");
    });
    for (from, to) in &g.edges {
        let _ = writeln!(out, "  {} -> {};", g.id(*from), g.id(*to));
    }
    out.push_str("}\n");
    out
}

/// The two picture languages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    Mermaid,
    Dot,
}

/// Render the graph of a task tree.
pub fn render_graph(tree: &TaskTree, format: GraphFormat) -> String {
    let g = build(tree);
    match format {
        GraphFormat::Mermaid => render_mermaid(&g),
        GraphFormat::Dot => render_dot(&g),
    }
}

#[cfg(test)]
mod tests {
    use super::{mermaid_label, sanitize};

    #[test]
    fn ids_and_labels_are_safe() {
        assert_eq!(sanitize("tasks/a-b/subtasks/c.d"), "tasks_a_b_subtasks_c_d");
        assert_eq!(
            mermaid_label(&["a\"<b>".to_string(), "new".to_string()]),
            "a#quot;#lt;b#gt;<br/>new"
        );
    }
}
