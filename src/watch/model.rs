//! What `watch` shows, read from the task folders: the tree of tasks split into one part per
//! top-level task (so a change under `tasks/x/` re-reads only `tasks/x`), the rows of the tree
//! grouped by wave, and the run header (who holds the lock, jobs, caps, totals).
//!
//! Nothing here writes: states come from [`TaskTree`] and [`task_view`], exactly as `status`
//! decides them.

use crate::names::ROOTS;
use crate::report::{TaskView, task_view};
use crate::state::{PhaseConfig, State};
use crate::store::lock::{self, Holder};
use crate::task::TaskTree;
use crate::task::snapshot::STATE_FILE;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub use crate::report::waiting::{Running, pid_alive, running_agent};

/// The newest `<phase>-<n>.log` of a task.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRef {
    pub path: PathBuf,
    /// `design`, `verify`, ...
    pub phase: String,
    pub attempt: u32,
}

/// One task as `watch` shows it.
#[derive(Debug, Clone)]
pub struct TaskInfo {
    pub view: TaskView,
    pub depth: usize,
    pub running: Option<Running>,
    pub last_log: Option<LogRef>,
    pub state_file: StateFile,
}

/// What `.state` says next to what the artifacts decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateFile {
    /// The same state, or no `.state` at all.
    Agrees,
    /// Another state word: for a moment after each phase (automaton writes `.state` just
    /// after the artifact is judged), or for good when someone edited it.
    Differs(&'static str),
    /// A file that holds no state word (the walk warns about it).
    Unknown,
}

/// Where a task's row comes: what matters first. Its agent running now, then waiting for a
/// person (the `human` count: a gate, a verdict, frozen files, a stop...), then the rest; in
/// name order within each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rank {
    Running,
    Person,
    Rest,
}

impl TaskInfo {
    /// Where this task's row comes, from the one wait view `status` renders.
    pub fn rank(&self) -> Rank {
        if self.running.is_some() || self.view.waiting_for == crate::report::WaitingFor::Agent {
            Rank::Running
        } else if self.view.waiting_for == crate::report::WaitingFor::Person {
            Rank::Person
        } else {
            Rank::Rest
        }
    }

    /// The phase whose agent is at work: the next step's (or the verify command after
    /// implement). An agent still exiting once its phase was judged is not shown as running.
    pub fn running_phase(&self) -> Option<&LogRef> {
        let log = self.last_log.as_ref().filter(|_| self.running.is_some())?;
        (log.phase == self.view.next_step || log.phase == "verify").then_some(log)
    }

    /// `waits for a person (approve the gate): approval before design`, for a task that waits
    /// for a person and has no stop reason of its own to show (a gate, frozen files, stale
    /// artifacts, a sub-task's decision).
    pub fn person_wait(&self) -> Option<String> {
        let v = &self.view;
        (v.waiting_for == crate::report::WaitingFor::Person && v.reason.is_none())
            .then(|| v.wait().line())
            .flatten()
            .map(|l| format!("waits for {l}"))
    }

    /// The one-line summary plain mode prints, and compares to see a change. A `.state` that
    /// lags the artifacts by a moment is left out; one that holds no state word is not.
    pub fn summary(&self) -> String {
        let mut s = self.view.state.to_string();
        if let Some(log) = self.running_phase() {
            s.push_str(&format!(" · running {} #{}", log.phase, log.attempt));
        }
        if let Some(by) = &self.view.blocked_by {
            s.push_str(&format!(" · blocked by {by}"));
        }
        if let Some(r) = &self.view.reason {
            s.push_str(&format!(" · {r}"));
        } else if let Some(line) = self.person_wait() {
            s.push_str(&format!(" · {line}"));
        }
        if self.state_file == StateFile::Unknown {
            s.push_str(" · .state unknown");
        }
        s
    }
}

/// One top-level task and its sub-tasks.
#[derive(Debug, Clone)]
pub struct Part {
    pub tree: TaskTree,
    pub infos: Vec<TaskInfo>,
    /// Each node's rank with its sub-tasks': a parent comes where its most urgent sub-task
    /// would (`ranks[0]` places the whole part).
    ranks: Vec<Rank>,
    /// Which read this is: a part whose generation did not change needs no second look.
    pub generation: u64,
}

impl Part {
    fn new(tree: TaskTree, generation: u64) -> Part {
        let infos: Vec<TaskInfo> = (0..tree.nodes.len()).map(|i| task_info(&tree, i)).collect();
        let mut ranks: Vec<Rank> = infos.iter().map(TaskInfo::rank).collect();
        // The walk is depth first (a parent before its sub-tasks): from the last node up.
        for i in (0..tree.nodes.len()).rev() {
            if let Some(p) = tree.nodes[i].parent {
                ranks[p] = ranks[p].min(ranks[i]);
            }
        }
        Part {
            tree,
            infos,
            ranks,
            generation,
        }
    }
}

fn task_info(tree: &TaskTree, i: usize) -> TaskInfo {
    let node = &tree.nodes[i];
    let mut view = task_view(tree, i, "automaton");
    // A part is loaded alone, so its top task has no parent in it; a sub-task's parent is.
    view.parent = node.parent.map(|p| tree.nodes[p].rel.clone());
    let logs = node.dir.join("logs");
    let state_file = match node.snap.state_file {
        Some(s) if s == node.state() => StateFile::Agrees,
        Some(s) => StateFile::Differs(s.word()),
        None if node.dir.join(STATE_FILE).exists() => StateFile::Unknown,
        None => StateFile::Agrees,
    };
    TaskInfo {
        view,
        depth: node.depth,
        running: running_agent(&logs),
        last_log: last_log(&logs),
        state_file,
    }
}

/// The most recently written `<phase>-<n>.log` in `logs/`.
fn last_log(logs: &Path) -> Option<LogRef> {
    let mut best: Option<(SystemTime, u32, LogRef)> = None;
    for entry in fs::read_dir(logs).ok()?.flatten() {
        let name = entry.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".log")) else {
            continue;
        };
        let Some((phase, n)) = stem.rsplit_once('-') else {
            continue;
        };
        let Ok(attempt) = n.parse::<u32>() else {
            continue;
        };
        let mtime = entry
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        // Same second (coarse clocks): the higher attempt is the newer.
        if best
            .as_ref()
            .is_none_or(|(t, a, _)| (mtime, attempt) > (*t, *a))
        {
            best = Some((
                mtime,
                attempt,
                LogRef {
                    path: entry.path(),
                    phase: phase.to_string(),
                    attempt,
                },
            ));
        }
    }
    best.map(|(_, _, l)| l)
}

/// Which top-level task (or other place) a changed path belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Touched {
    /// `(root index, name)` of a top-level task folder (or a stray entry of a root).
    Part(usize, String),
    /// A `<phase>-<n>.log` being written: redraw the log, nothing to re-read.
    Log,
    /// `.automaton/lock`: the header.
    Lock,
    /// A root itself, the settings: read everything again.
    All,
}

/// Classify a changed path of the project; `None` for what `watch` does not show (files of
/// the project itself, the VRAM cache).
pub fn touched(project: &Path, path: &Path) -> Option<Touched> {
    let rel = path.strip_prefix(project).ok()?.to_string_lossy();
    match rel.as_ref() {
        ".automaton/lock" => return Some(Touched::Lock),
        ".automaton" | ".automaton/config.md" => return Some(Touched::All),
        _ => {}
    }
    for (r, root) in ROOTS.iter().enumerate() {
        if rel == *root {
            return Some(Touched::All);
        }
        if let Some(rest) = rel.strip_prefix(root).and_then(|s| s.strip_prefix('/')) {
            let name = rest.split('/').next().unwrap_or_default();
            let last = rest.rsplit('/').next().unwrap_or_default();
            if rest.contains("/logs/") && last.ends_with(".log") {
                return Some(Touched::Log);
            }
            return Some(Touched::Part(r, name.to_string()));
        }
    }
    None
}

/// A row of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Row {
    /// (part, node)
    Task(usize, usize),
    /// `wave N` (or `not in plan`) under a parent, with its indent in columns.
    Group(String, usize),
    /// A sub-task DECOMPOSITION.md lists that has no folder yet, with its indent.
    Missing(String, usize),
}

/// The run: who drives the project, and its caps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunInfo {
    /// The lock file's holder, when that process is alive.
    pub holder: Option<Holder>,
    /// `--jobs`: from the holder's command line, else the settings.
    pub jobs: u64,
    /// `--max-total-time`: likewise.
    pub total: Duration,
}

/// Everything `watch` shows.
pub struct Model {
    pub project: PathBuf,
    config: PhaseConfig,
    settings_jobs: u64,
    settings_total: Duration,
    /// The tmux executor's socket, from the settings (`AUTOMATON_TMUX_SOCKET`).
    pub tmux_socket: Option<String>,
    /// What `status` applies to a tree: the gates of `Approve before`, `Budget per task`, the
    /// wave rules; so that a row says what `status` says.
    gates: Vec<crate::plan::gate::Gate>,
    budget: Option<crate::plan::decide::Budget>,
    waves: crate::task::readiness::WaveRules,
    /// Keyed by (root index, name): the walk's order.
    pub parts: BTreeMap<(usize, String), Part>,
    /// The keys of `parts` in order: what `Row::Task` indexes.
    order: Vec<(usize, String)>,
    /// Warnings of the whole-project walk that belong to no task (stray files in a root).
    root_warnings: Vec<String>,
    pub rows: Vec<Row>,
    pub run: RunInfo,
    generation: u64,
}

impl Model {
    /// Read the settings and every task. Settings that cannot be read are an error here;
    /// later, while watching, the last good ones stay in use.
    pub fn load(project: &Path) -> Result<Model, crate::settings::SettingsError> {
        let settings = crate::settings::Settings::load(project)?;
        let mut m = Model {
            project: project.to_path_buf(),
            config: crate::report::phase_config(&settings),
            settings_jobs: settings.count(crate::settings::Key::Jobs),
            settings_total: settings.duration(crate::settings::Key::MaxTotalTime),
            tmux_socket: settings
                .text(crate::settings::Key::TmuxSocket)
                .map(str::to_string),
            gates: Vec::new(),
            budget: None,
            waves: Default::default(),
            parts: BTreeMap::new(),
            order: Vec::new(),
            root_warnings: Vec::new(),
            rows: Vec::new(),
            run: RunInfo::default(),
            generation: 0,
        };
        m.reload_all();
        Ok(m)
    }

    /// Read the settings and walk the whole project again (one parallel walk, split into
    /// parts), and the lock.
    pub fn reload_all(&mut self) {
        let mut settings_warnings = Vec::new();
        match crate::settings::Settings::load(&self.project) {
            Ok(settings) => {
                self.config = crate::report::phase_config(&settings);
                self.settings_jobs = settings.count(crate::settings::Key::Jobs);
                self.settings_total = settings.duration(crate::settings::Key::MaxTotalTime);
                self.tmux_socket = settings
                    .text(crate::settings::Key::TmuxSocket)
                    .map(str::to_string);
                self.gates = crate::report::approval_gates(&settings);
                self.budget = Some(settings.budget(crate::settings::Key::BudgetPerTask));
                let cfg = crate::run::config::RunConfig::resolve(&settings);
                self.waves = crate::run::project_wave_rules(&cfg, &self.project);
                settings_warnings = settings.warnings;
            }
            Err(e) => settings_warnings.push(format!("{e} (the settings read before stay in use)")),
        }
        let tree = TaskTree::load(&self.project, &self.config);
        let mut parts = BTreeMap::new();
        let tops: Vec<usize> = (0..tree.nodes.len())
            .filter(|i| tree.nodes[*i].parent.is_none())
            .collect();
        let mut warnings = tree.warnings;
        for (k, &start) in tops.iter().enumerate() {
            // The walk is depth first: a top-level task's sub-tasks follow it.
            let end = tops.get(k + 1).copied().unwrap_or(tree.nodes.len());
            let nodes: Vec<_> = tree.nodes[start..end]
                .iter()
                .cloned()
                .map(|mut n| {
                    n.parent = n.parent.map(|p| p - start);
                    n.children.iter_mut().for_each(|c| *c -= start);
                    n
                })
                .collect();
            let rel = nodes[0].rel.clone();
            let mine =
                |w: &String| w.starts_with(&format!("{rel}/")) || w.starts_with(&format!("{rel}:"));
            let (part_warnings, rest): (Vec<String>, Vec<String>) =
                warnings.into_iter().partition(mine);
            warnings = rest;
            let Some(key) = part_key(&rel) else { continue };
            self.generation += 1;
            let part = Part::new(
                self.settle(TaskTree {
                    nodes,
                    warnings: part_warnings,
                    budget: None,
                    waves: Default::default(),
                }),
                self.generation,
            );
            parts.insert(key, part);
        }
        self.parts = parts;
        settings_warnings.extend(warnings);
        self.root_warnings = settings_warnings;
        self.rebuild_rows();
        self.reload_run();
    }

    /// A tree read as `status` reads it: gates, budget and wave rules applied.
    fn settle(&self, mut tree: TaskTree) -> TaskTree {
        tree.apply_gates(&self.gates);
        tree.budget = self.budget;
        tree.waves = self.waves;
        tree
    }

    /// Read one top-level task again (or drop it when its folder is gone).
    pub fn reload_part(&mut self, key: &(usize, String)) {
        let rel = format!("{}/{}", ROOTS[key.0], key.1);
        let dir = self.project.join(&rel);
        if key.1.starts_with('.') {
            return;
        }
        if dir.is_dir() {
            let tree = self.settle(TaskTree::load_task(&self.project, &rel, &self.config));
            self.generation += 1;
            self.parts
                .insert(key.clone(), Part::new(tree, self.generation));
        } else if self.parts.remove(key).is_none() && dir.exists() {
            // A new stray file in a root: the whole walk words its warning.
            self.reload_all();
            return;
        }
        self.rebuild_rows();
    }

    /// The top-level tasks where an agent shown as running has since died (no file changes
    /// when a killed agent leaves its pid file behind).
    pub fn recheck_running(&mut self) -> Vec<(usize, String)> {
        self.parts
            .iter()
            .filter(|(_, p)| {
                p.infos
                    .iter()
                    .any(|i| i.running.as_ref().is_some_and(|r| !pid_alive(r.pid)))
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Read the lock holder again.
    pub fn reload_run(&mut self) {
        let holder = lock::holding(&self.project);
        let cmd = holder
            .as_ref()
            .and_then(|h| h.command.clone())
            .unwrap_or_default();
        self.run = RunInfo {
            jobs: flag_value(&cmd, "--jobs")
                .and_then(|v| crate::settings::value::parse_count(&v).ok())
                .unwrap_or(self.settings_jobs),
            total: flag_value(&cmd, "--max-total-time")
                .and_then(|v| crate::settings::value::parse_duration(&v).ok())
                .unwrap_or(self.settings_total),
            holder,
        };
    }

    /// The rows: top-level tasks by [`Rank`] (running, waiting for a person, the rest; a
    /// parent ranked by its most urgent sub-task), each in name order within its rank.
    fn rebuild_rows(&mut self) {
        let mut rows = Vec::with_capacity(self.rows.len());
        let mut keyed: Vec<(Rank, &(usize, String))> = self
            .parts
            .iter()
            .map(|(k, part)| (part.ranks.first().copied().unwrap_or(Rank::Rest), k))
            .collect();
        // Stable: name order within a rank.
        keyed.sort_by_key(|(rank, _)| *rank);
        self.order = keyed.into_iter().map(|(_, k)| k.clone()).collect();
        for (p, key) in self.order.iter().enumerate() {
            let part = &self.parts[key];
            if !part.tree.nodes.is_empty() {
                push_rows(part, p, 0, &mut rows);
            }
        }
        self.rows = rows;
    }

    /// The part and node of a row, when it is a task.
    pub fn info(&self, row: &Row) -> Option<&TaskInfo> {
        match row {
            Row::Task(p, n) => self
                .order
                .get(*p)
                .and_then(|k| self.parts.get(k))
                .and_then(|part| part.infos.get(*n)),
            _ => None,
        }
    }

    /// Every task, in name order (the plain mode's lines and the totals).
    pub fn tasks(&self) -> impl Iterator<Item = &TaskInfo> {
        self.parts.values().flat_map(|p| p.infos.iter())
    }

    /// Every warning: settings, stray entries, then each task's.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = self.root_warnings.clone();
        for p in self.parts.values() {
            w.extend(p.tree.warnings.iter().cloned());
        }
        w
    }

    /// Task counts and usage over the project.
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for i in self.tasks() {
            t.tasks += 1;
            match State::parse(i.view.state) {
                // Counted as the `Summary:` line counts them: every task a person must move on.
                _ if i.view.waiting_for == crate::report::WaitingFor::Person => t.human += 1,
                Some(State::Complete) => t.complete += 1,
                _ if i.view.blocked_by.is_some() => t.blocked += 1,
                _ => {}
            }
            if i.running.is_some() {
                t.running += 1;
            }
            if let Some(u) = &i.view.usage {
                if let Some(n) = u.tokens {
                    *t.tokens.get_or_insert(0) += n;
                }
                if let Some(c) = u.cost_usd {
                    *t.cost.get_or_insert(0.0) += c;
                }
            }
        }
        t
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    pub tasks: usize,
    pub complete: usize,
    pub human: usize,
    pub blocked: usize,
    pub running: usize,
    /// The tokens the agents reported, summed; `None` when no task's agent reported any (an
    /// agent that reports no usage is not one that used none).
    pub tokens: Option<u64>,
    /// The cost in US dollars, likewise.
    pub cost: Option<f64>,
}

/// `tasks/x` -> (0, "x"); `.automaton/tasks/x` -> (1, "x").
fn part_key(rel: &str) -> Option<(usize, String)> {
    ROOTS.iter().enumerate().find_map(|(r, root)| {
        rel.strip_prefix(root)
            .and_then(|s| s.strip_prefix('/'))
            .map(|name| (r, name.to_string()))
    })
}

/// A task's row, then its sub-tasks: grouped by wave when DECOMPOSITION.md parses (listed
/// sub-tasks without a folder as `not created`, folders it does not list under `not in plan`),
/// else in name order; within a wave (or group) by [`Rank`], then in that order.
fn push_rows(part_rows: &Part, part: usize, i: usize, rows: &mut Vec<Row>) {
    let tree = &part_rows.tree;
    let rank = |c: Option<usize>| c.map_or(Rank::Rest, |c| part_rows.ranks[c]);
    let node = &tree.nodes[i];
    rows.push(Row::Task(part, i));
    // A task is indented 4 columns a level, the wave it sits in 2.
    let (group, sub) = (node.depth * 4 + 2, node.depth * 4 + 4);
    let child = |name: &str| {
        node.children
            .iter()
            .copied()
            .find(|c| tree.nodes[*c].name() == name)
    };
    match node.snap.plan.as_ref().and_then(|p| p.as_ref().ok()) {
        Some(plan) => {
            for (w, mut listed) in plan.by_wave() {
                listed.sort_by_key(|r| rank(child(&r.name)));
                rows.push(Row::Group(format!("wave {w}"), group));
                for r in listed {
                    match child(&r.name) {
                        Some(c) => push_rows(part_rows, part, c, rows),
                        None => rows.push(Row::Missing(r.name.clone(), sub)),
                    }
                }
            }
            let mut orphans: Vec<usize> = node
                .children
                .iter()
                .copied()
                .filter(|c| plan.row(tree.nodes[*c].name()).is_none())
                .collect();
            orphans.sort_by_key(|c| rank(Some(*c)));
            if !orphans.is_empty() {
                rows.push(Row::Group("not in plan".into(), group));
                for c in orphans {
                    push_rows(part_rows, part, c, rows);
                }
            }
        }
        None => {
            let mut children = node.children.clone();
            children.sort_by_key(|c| rank(Some(*c)));
            for c in children {
                push_rows(part_rows, part, c, rows);
            }
        }
    }
}

/// The value of `--flag V` or `--flag=V` in a command line.
fn flag_value(cmd: &str, flag: &str) -> Option<String> {
    let mut words = cmd.split_whitespace();
    while let Some(w) = words.next() {
        if w == flag {
            return words.next().map(str::to_string);
        }
        if let Some(v) = w.strip_prefix(flag).and_then(|v| v.strip_prefix('=')) {
            return Some(v.to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_changed_paths() {
        let p = Path::new("/p");
        let t = |s: &str| touched(p, Path::new(s));
        let part = |r, n: &str| Some(Touched::Part(r, n.into()));
        assert_eq!(t("/p/tasks/a/SPEC.md"), part(0, "a"));
        assert_eq!(t("/p/tasks/a/subtasks/b/.state"), part(0, "a"));
        assert_eq!(t("/p/.automaton/tasks/x"), part(1, "x"));
        assert_eq!(t("/p/tasks/a/logs/design-1.log"), Some(Touched::Log));
        assert_eq!(t("/p/tasks/a/logs/agent.pid"), part(0, "a"));
        assert_eq!(t("/p/.automaton/lock"), Some(Touched::Lock));
        assert_eq!(t("/p/tasks"), Some(Touched::All));
        assert_eq!(t("/p/.automaton/config.md"), Some(Touched::All));
        assert_eq!(t("/p/tasksfoo/x"), None);
        assert_eq!(t("/p/agent.log"), None);
        assert_eq!(t("/p/.automaton/.vram_cache.json"), None);
        assert_eq!(t("/elsewhere"), None);
    }

    #[test]
    fn reads_flags_of_the_holder() {
        let cmd = "automaton orchestrate --jobs 3 --max-total-time=2h";
        assert_eq!(flag_value(cmd, "--jobs").as_deref(), Some("3"));
        assert_eq!(flag_value(cmd, "--max-total-time").as_deref(), Some("2h"));
        assert_eq!(flag_value(cmd, "--agent"), None);
    }
}
