//! DECOMPOSITION.md: a Markdown table of sub-tasks in dependency waves.
//!
//! ```text
//! | Sub-task     | Wave | Depends on          | Estimated peak context | Files         | Scope |
//! |--------------|------|---------------------|------------------------|---------------|-------|
//! | parse-config | 1    | -                   | 6k                     | src/config.rs | ...   |
//! | cli          | 2    | parse-config, cache | 10k                    | src/cli.rs    | ...   |
//! ```
//! `Sub-task`, `Wave` and `Depends on` are required, the other columns optional. Names are
//! kebab-case. Errors name the line and cell; unknown dependencies, duplicates, cycles (named:
//! `a -> b -> a`) and waves that contradict the dependencies are refused.

use crate::names::is_kebab;
use crate::state::PlannedSubtask;
use std::collections::HashMap;

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubtaskRow {
    pub name: String,
    pub wave: u32,
    pub depends_on: Vec<String>,
    /// Estimated peak context in tokens.
    pub estimate: Option<u64>,
    /// Files or globs the sub-task owns (empty when the column is absent or `-`).
    pub files: Vec<String>,
    pub scope: String,
    /// 1-based line of the row.
    pub line: usize,
}

/// A parsed and checked decomposition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub rows: Vec<SubtaskRow>,
    /// Name -> index in `rows`: a lookup per sub-task must not scan the plan.
    index: HashMap<String, usize>,
}

impl Plan {
    /// The rows grouped by wave, lowest first, each wave in plan order (one pass, not one per
    /// wave number: waves may be numbered up to the row count).
    pub fn by_wave(&self) -> Vec<(u32, Vec<&SubtaskRow>)> {
        let mut waves: std::collections::BTreeMap<u32, Vec<&SubtaskRow>> = Default::default();
        for r in &self.rows {
            waves.entry(r.wave).or_default().push(r);
        }
        waves.into_iter().collect()
    }

    /// The dependency view the state machine needs.
    pub fn planned(&self) -> Vec<PlannedSubtask> {
        self.rows
            .iter()
            .map(|r| PlannedSubtask {
                name: r.name.clone(),
                depends_on: r.depends_on.clone(),
            })
            .collect()
    }

    pub fn row(&self, name: &str) -> Option<&SubtaskRow> {
        self.index.get(name).map(|i| &self.rows[*i])
    }
}

/// One problem of a DECOMPOSITION.md. `line` is 0 when the problem is the whole file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if *line > 0 { format!("line {line}: ") } else { String::new() })]
pub struct Problem {
    pub line: usize,
    pub message: String,
}

/// Why a DECOMPOSITION.md was refused: every problem of its table, in line order (so one fix
/// cycle can mend them all). The message lists the first [`SHOWN_PROBLEMS`] and counts the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError {
    pub problems: Vec<Problem>,
}

/// How many problems a [`PlanError`]'s message spells out.
pub const SHOWN_PROBLEMS: usize = 50;

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.problems.len();
        if n > 1 {
            write!(f, "{n} errors: ")?;
        }
        for (i, p) in self.problems.iter().take(SHOWN_PROBLEMS).enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        if n > SHOWN_PROBLEMS {
            write!(f, "; and {} more", n - SHOWN_PROBLEMS)?;
        }
        Ok(())
    }
}

impl std::error::Error for PlanError {}

impl PlanError {
    /// A refusal of one problem.
    pub fn one(line: usize, message: impl Into<String>) -> Self {
        PlanError {
            problems: vec![Problem {
                line,
                message: message.into(),
            }],
        }
    }
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError::one(line, message))
}

#[derive(Default)]
struct Columns {
    name: Option<usize>,
    wave: Option<usize>,
    deps: Option<usize>,
    estimate: Option<usize>,
    files: Option<usize>,
    scope: Option<usize>,
}

/// The cells of a table row, as GitHub-flavoured Markdown splits them: on every `|` that is not
/// escaped, inside code spans too; `\|` is a `|` in the cell's text (other backslashes are kept
/// as written). The leading and trailing `|` are optional.
fn cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let mut out = Vec::new();
    let mut cell = String::new();
    let mut chars = t.chars();
    let mut trailing_pipe = false;
    while let Some(c) = chars.next() {
        trailing_pipe = false;
        match c {
            '\\' => match chars.next() {
                Some('|') => cell.push('|'),
                Some(next) => {
                    cell.push('\\');
                    cell.push(next);
                }
                None => cell.push('\\'),
            },
            '|' => {
                out.push(std::mem::take(&mut cell));
                trailing_pipe = true;
            }
            c => cell.push(c),
        }
    }
    if !trailing_pipe {
        out.push(cell);
    }
    // A leading `|` opens the row; it does not close an empty first cell.
    if t.starts_with('|') && !out.is_empty() {
        out.remove(0);
    }
    out.into_iter()
        .map(|c| c.trim().trim_matches('`').trim().to_string())
        .collect()
}

/// The columns a table's header names (any table's: see [`Columns::of_subtasks`]).
fn header_columns(cells: &[String]) -> Columns {
    let mut c = Columns::default();
    for (i, cell) in cells.iter().enumerate() {
        let h: String = cell
            .to_ascii_lowercase()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        match h.as_str() {
            "subtask" | "name" | "task" => c.name = Some(i),
            "wave" => c.wave = Some(i),
            "dependson" | "depends" | "dependencies" | "deps" => c.deps = Some(i),
            "files" | "filesowned" | "owns" => c.files = Some(i),
            "scope" | "description" | "acceptancecriteria" => c.scope = Some(i),
            h if h.starts_with("estimated")
                || h.starts_with("peak")
                || h.starts_with("estimate") =>
            {
                c.estimate = Some(i)
            }
            _ => {}
        }
    }
    c
}

impl Columns {
    /// Whether these are a sub-task table's: it names a `Sub-task` and a `Wave` column.
    fn of_subtasks(&self) -> bool {
        self.name.is_some() && self.wave.is_some()
    }
}

fn is_separator(cells: &[String]) -> bool {
    cells
        .iter()
        .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
}

fn list(cell: &str) -> Vec<String> {
    let t = cell.trim();
    if matches!(t, "" | "-" | "—" | "–") || t.eq_ignore_ascii_case("none") {
        return Vec::new();
    }
    t.split(',')
        .map(|s| s.trim().trim_matches('`').trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// A row as read, before the graph is checked: `wave_ok` is false when its cell is bad.
struct Read {
    row: SubtaskRow,
    wave_ok: bool,
}

/// Parse and check a DECOMPOSITION.md, naming every problem of its table at once. Linear in
/// the text: each line is split once, and names are looked up in a hash map.
pub fn parse_decomposition(text: &str) -> Result<Plan, PlanError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let (header_line, cols) = find_header(&mut lines)?;
    let mut table = Table::new(cols);
    for (i, line) in lines.by_ref() {
        if !line.trim_start().starts_with('|') {
            break;
        }
        table.read_row(i, line);
    }
    // Only one table is read: the rows of another would be dropped without a word (an agent
    // may well write one table per wave).
    for (n, line) in lines {
        if line.trim_start().starts_with('|') && header_columns(&cells(line)).of_subtasks() {
            table.problem(
                n,
                format!(
                    "a second sub-task table (the first starts on line {header_line}): every \
                     sub-task goes in the one table"
                ),
            );
        }
    }
    let Table {
        rows,
        index,
        seen,
        mut problems,
        ..
    } = table;
    if rows.is_empty() && problems.is_empty() {
        return err(header_line, "the sub-task table has no rows");
    }
    check_graph(&rows, &index, &seen, &mut problems);
    if !problems.is_empty() {
        // In line order; a row's own problems before its graph's (the sort is stable).
        problems.sort_by_key(|p| p.line);
        return Err(PlanError { problems });
    }
    Ok(Plan {
        rows: rows.into_iter().map(|r| r.row).collect(),
        index,
    })
}

/// The first table row that is a sub-task table's header (it names a `Sub-task` and a `Wave`
/// column, and needs a `Depends on` one): its line and columns.
fn find_header<'a>(
    lines: &mut impl Iterator<Item = (usize, &'a str)>,
) -> Result<(usize, TableColumns), PlanError> {
    let expected = "expected a header like `| Sub-task | Wave | Depends on | Estimated peak \
                    context |`";
    // A table of sub-tasks and their dependencies without a Wave column is, when no other
    // table is the plan, the plan wrongly headed: said at its line.
    let mut without_wave = None;
    for (n, line) in lines {
        if !line.trim_start().starts_with('|') {
            continue;
        }
        let c = header_columns(&cells(line));
        let (Some(name), Some(wave)) = (c.name, c.wave) else {
            if c.name.is_some() && c.deps.is_some() {
                without_wave.get_or_insert(n);
            }
            continue;
        };
        let Some(deps) = c.deps else {
            return err(n, "the table has no `Depends on` column");
        };
        let columns = TableColumns {
            name,
            wave,
            deps,
            rest: c,
        };
        return Ok((n, columns));
    }
    match without_wave {
        Some(n) => err(n, format!("the table has no `Wave` column ({expected})")),
        None => err(0, format!("no sub-task table ({expected})")),
    }
}

/// The columns of a sub-task table: the three it must have, and the optional ones.
struct TableColumns {
    name: usize,
    wave: usize,
    deps: usize,
    rest: Columns,
}

/// A sub-task table as its rows are read: the rows, the problems, and the names seen.
struct Table {
    cols: TableColumns,
    rows: Vec<Read>,
    /// Name -> index in `rows`, for the rows whose name is good.
    index: HashMap<String, usize>,
    /// The line of each name seen (duplicates say where).
    seen: HashMap<String, usize>,
    problems: Vec<Problem>,
}

impl Table {
    fn new(cols: TableColumns) -> Table {
        Table {
            cols,
            rows: Vec::new(),
            index: HashMap::new(),
            seen: HashMap::new(),
            problems: Vec::new(),
        }
    }

    fn problem(&mut self, line: usize, message: String) {
        self.problems.push(Problem { line, message });
    }

    /// Read row `i`: its problems are recorded, and a row with a good name is kept.
    fn read_row(&mut self, i: usize, line: &str) {
        let cs = cells(line);
        if is_separator(&cs) {
            return;
        }
        let cell = |col: Option<usize>| {
            col.and_then(|c| cs.get(c))
                .map(String::as_str)
                .unwrap_or("")
        };
        let name = cell(Some(self.cols.name)).to_string();
        let name_ok = self.check_name(i, &name);
        let wave = self.wave(i, cell(Some(self.cols.wave)));
        let estimate = self.estimate(i, cell(self.cols.rest.estimate));
        let depends_on = self.dependencies(i, cell(Some(self.cols.deps)));
        if !name.is_empty() {
            if let Some(prev) = self.seen.get(&name) {
                let message = format!("sub-task `{name}` is listed twice (also on line {prev})");
                self.problem(i, message);
                return;
            }
            self.seen.insert(name.clone(), i);
        }
        if !name_ok {
            return;
        }
        self.index.insert(name.clone(), self.rows.len());
        self.rows.push(Read {
            row: SubtaskRow {
                name,
                wave: wave.unwrap_or(0),
                depends_on,
                estimate,
                files: list(cell(self.cols.rest.files)),
                scope: cell(self.cols.rest.scope).to_string(),
                line: i,
            },
            wave_ok: wave.is_some(),
        });
    }

    /// Whether `name` is a good sub-task name (else the problem is recorded).
    fn check_name(&mut self, i: usize, name: &str) -> bool {
        if name.is_empty() {
            self.problem(i, "cell `Sub-task` is empty".into());
            return false;
        }
        if !is_kebab(name) {
            let message = format!(
                "cell `Sub-task`: `{name}` is not a kebab-case name (try `{}`)",
                crate::names::kebab(name)
            );
            self.problem(i, message);
            return false;
        }
        true
    }

    fn wave(&mut self, i: usize, text: &str) -> Option<u32> {
        match text
            .trim_start_matches(|c: char| c.is_alphabetic() || c == ' ')
            .parse::<u32>()
        {
            Ok(w) if w > 0 => Some(w),
            _ => {
                let message = format!("cell `Wave`: `{text}` is not a wave number (1, 2, ...)");
                self.problem(i, message);
                None
            }
        }
    }

    fn estimate(&mut self, i: usize, text: &str) -> Option<u64> {
        if list(text).is_empty() {
            return None;
        }
        match crate::settings::value::parse_tokens(text.trim_start_matches('~')) {
            Ok(t) => t,
            Err(_) => {
                let message =
                    format!("cell `Estimated peak context`: `{text}` is not a token count like 6k");
                self.problem(i, message);
                None
            }
        }
    }

    /// The dependencies named in `text`, each once (one named twice is a slip of the plan's
    /// author, said at its line).
    fn dependencies(&mut self, i: usize, text: &str) -> Vec<String> {
        let mut named = std::collections::HashSet::new();
        let mut out: Vec<String> = Vec::new();
        for d in list(text) {
            if named.insert(d.clone()) {
                out.push(d);
            } else {
                self.problem(i, format!("cell `Depends on`: `{d}` is named twice"));
            }
        }
        out
    }
}

/// Every problem of the dependency graph (`listed`: every name in the table, also those with
/// problems of their own): unknown dependencies, self-dependencies, cycles
/// (each named by its path, `a -> b -> a`), and waves no later than a dependency's (rows on a
/// cycle, or with a bad wave cell, are not compared). Linear in rows plus dependencies.
fn check_graph(
    rows: &[Read],
    index: &HashMap<String, usize>,
    listed: &HashMap<String, usize>,
    problems: &mut Vec<Problem>,
) {
    // The known dependencies of each row, as indexes.
    let mut edges: Vec<Vec<usize>> = Vec::with_capacity(rows.len());
    for r in rows {
        let r = &r.row;
        let mut out = Vec::new();
        for d in &r.depends_on {
            match index.get(d) {
                // Listed with a bad name: that row's own problem says so.
                None if listed.contains_key(d) => {}
                None => problems.push(Problem {
                    line: r.line,
                    message: format!(
                        "cell `Depends on`: `{}` depends on unknown sub-task `{d}`",
                        r.name
                    ),
                }),
                Some(_) if *d == r.name => problems.push(Problem {
                    line: r.line,
                    message: format!("dependency cycle: {0} -> {0}", r.name),
                }),
                Some(&j) => out.push(j),
            }
        }
        edges.push(out);
    }
    let on_cycle = cycles(rows, &edges, problems);
    for (i, r) in rows.iter().enumerate() {
        if !r.wave_ok || on_cycle[i] {
            continue;
        }
        for &j in &edges[i] {
            let dep = &rows[j];
            if dep.wave_ok && !on_cycle[j] && dep.row.wave >= r.row.wave {
                problems.push(Problem {
                    line: r.row.line,
                    message: format!(
                        "cell `Wave`: `{}` is in wave {} but depends on `{}` in wave {} (a sub-task's wave must be later than its dependencies')",
                        r.row.name, r.row.wave, dep.row.name, dep.row.wave
                    ),
                });
            }
        }
    }
}

/// Every dependency cycle, each reported by its path at the row that closes it; which rows
/// lie on one. A depth-first search, iterative (a plan may be a chain of thousands).
fn cycles(rows: &[Read], edges: &[Vec<usize>], problems: &mut Vec<Problem>) -> Vec<bool> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let mut marks = vec![Mark::New; rows.len()];
    let mut on_cycle = vec![false; rows.len()];
    let mut path: Vec<usize> = Vec::new();
    let mut position = vec![0usize; rows.len()];
    for start in 0..rows.len() {
        if marks[start] != Mark::New {
            continue;
        }
        // (row, next edge to follow)
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        marks[start] = Mark::OnPath;
        position[start] = path.len();
        path.push(start);
        while let Some(&mut (at, ref mut next)) = stack.last_mut() {
            let Some(&to) = edges[at].get(*next) else {
                marks[at] = Mark::Done;
                path.pop();
                stack.pop();
                continue;
            };
            *next += 1;
            match marks[to] {
                Mark::OnPath => {
                    let cycle = &path[position[to]..];
                    for &c in cycle {
                        on_cycle[c] = true;
                    }
                    let mut names: Vec<&str> =
                        cycle.iter().map(|i| rows[*i].row.name.as_str()).collect();
                    names.push(rows[to].row.name.as_str());
                    problems.push(Problem {
                        line: rows[to].row.line,
                        message: format!("dependency cycle: {}", names.join(" -> ")),
                    });
                }
                Mark::New => {
                    marks[to] = Mark::OnPath;
                    position[to] = path.len();
                    path.push(to);
                    stack.push((to, 0));
                }
                Mark::Done => {}
            }
        }
    }
    on_cycle
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "# Plan\n\n| Sub-task | Wave | Depends on | Estimated peak context | Files | Scope |\n|---|---|---|---|---|---|\n";

    #[test]
    fn parses_rows() {
        let plan = parse_decomposition(&format!(
            "{HEADER}| parse-config | 1 | - | 6k | src/config.rs | Parse it |\n| `cache` | 1 | none | 4000 | - | Cache |\n| cli | 2 | parse-config, cache | 10k | src/cli.rs, src/main.rs | The CLI |\n\nProse after.\n"
        ))
        .unwrap();
        assert_eq!(plan.rows.len(), 3);
        let cli = plan.row("cli").unwrap();
        assert_eq!(cli.depends_on, vec!["parse-config", "cache"]);
        assert_eq!(cli.estimate, Some(10000));
        assert_eq!(cli.files, vec!["src/cli.rs", "src/main.rs"]);
        assert_eq!(cli.line, 7);
        assert_eq!(plan.row("cache").unwrap().estimate, Some(4000));
        assert!(plan.row("nope").is_none());
        let waves: Vec<(u32, Vec<&str>)> = plan
            .by_wave()
            .into_iter()
            .map(|(w, rows)| (w, rows.iter().map(|r| r.name.as_str()).collect()))
            .collect();
        assert_eq!(
            waves,
            [(1, vec!["parse-config", "cache"]), (2, vec!["cli"])]
        );
        assert!(plan.row("cache").unwrap().files.is_empty());
    }

    /// One table per wave is refused at the second table's line: its rows would have been
    /// dropped without a word.
    #[test]
    fn a_second_table_is_refused_naming_its_line() {
        let text = format!(
            "{HEADER}| a | 1 | - | 4k | - | One |\n\n## Wave 2\n\n| Sub-task | Wave | Depends on |\n|---|---|---|\n| b | 2 | a |\n"
        );
        let e = parse_decomposition(&text).unwrap_err();
        assert_eq!(e.problems.len(), 1, "{e}");
        assert_eq!(e.problems[0].line, 9);
        assert!(
            e.problems[0]
                .message
                .starts_with("a second sub-task table (the first starts on line 3)"),
            "{e}"
        );
        // A table of another kind after the plan is prose, not a plan.
        let other = format!(
            "{HEADER}| a | 1 | - | 4k | - | One |\n\n| Risk | Odds |\n|---|---|\n| x | low |\n"
        );
        assert!(parse_decomposition(&other).is_ok());
    }

    #[test]
    fn cells_split_on_unescaped_pipes_only() {
        assert_eq!(cells("| a | b |"), ["a", "b"]);
        assert_eq!(cells("a | b"), ["a", "b"]);
        assert_eq!(cells("| a | b"), ["a", "b"]);
        assert_eq!(cells("| a |  |"), ["a", ""]);
        assert_eq!(cells("|"), Vec::<String>::new());
        assert_eq!(cells("| x \\| y | z |"), ["x | y", "z"]);
        assert_eq!(cells("| `a \\|\\| b` | c |"), ["a || b", "c"]);
        // An escaped pipe at the end is text, not the row's closing pipe.
        assert_eq!(cells("| a | b \\|"), ["a", "b |"]);
        // Other backslashes stay; `\\` escapes the backslash, so the pipe after it splits.
        assert_eq!(cells(r"| C:\dir | a\\| b |"), [r"C:\dir", r"a\\", "b"]);
        assert_eq!(cells(r"| end \"), [r"end \"]);
    }

    #[test]
    fn escaped_pipes_stay_in_their_cell() {
        let plan = parse_decomposition(&format!(
            "{HEADER}| a | 1 | - | 6k | src/a.rs | Parse `x \\| y` and a\\|b |\n| b | 2 | a | 4k | - | Or \\| and |\n"
        ))
        .unwrap();
        let a = plan.row("a").unwrap();
        assert_eq!(a.scope, "Parse `x | y` and a|b");
        assert_eq!(a.files, vec!["src/a.rs"]);
        assert_eq!(a.line, 5);
        let b = plan.row("b").unwrap();
        assert_eq!((b.wave, b.scope.as_str()), (2, "Or | and"));
        assert_eq!(b.depends_on, vec!["a"]);
        // Errors still name the right line and cell when a row before or the row itself has
        // escaped pipes.
        let e = |rows: &str| {
            parse_decomposition(&format!("{HEADER}{rows}"))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            e("| a | 1 | - | 6k | - | x \\| y \\| z |\n| b | 2 | zed | 6k | - | p \\| q |\n"),
            "line 6: cell `Depends on`: `b` depends on unknown sub-task `zed`"
        );
        assert!(
            e("| a | 1 | - | 6k | - | x |\n| b \\| c | 2 | a | 6k | - | y |\n")
                .contains("line 6: cell `Sub-task`: `b | c` is not a kebab-case name")
        );
        assert!(
            e("| a | 1 | - | 6\\|k | - | x |\n")
                .contains("line 5: cell `Estimated peak context`: `6|k` is not a token count")
        );
        // Unescaped, the same pipe splits the cell and shifts the columns after it.
        assert!(
            e("| a | 1 | - | 6k | - | x |\n| b | - | 2 | a | 6k | y |\n")
                .contains("line 6: cell `Wave`: `-` is not a wave number")
        );
    }

    #[test]
    fn every_problem_of_the_table_is_named_at_once() {
        let e = parse_decomposition(&format!(
            "{HEADER}| a | x | - | 6k | - | x |\n| b | 2 | zed | 6k | - | x |\n\
             | Bad Name | 1 | - | lots | - | x |\n| c | 2 | Bad Name, a | 6k | - | x |\n\
             | b | 3 | - | 6k | - | x |\n| d | 1 | e | 6k | - | x |\n| e | 2 | d | 6k | - | x |\n"
        ))
        .unwrap_err();
        let lines: Vec<usize> = e.problems.iter().map(|p| p.line).collect();
        // a's wave; b's unknown dependency; Bad Name's name and estimate; b twice; the cycle
        // d -> e -> d (no wave complaint on it); c's wave is not compared with a's bad one.
        assert_eq!(lines, [5, 6, 7, 7, 9, 10], "{e}");
        let text = e.to_string();
        assert!(
            text.starts_with("6 errors: line 5: cell `Wave`: `x`"),
            "{text}"
        );
        for part in [
            "line 6: cell `Depends on`: `b` depends on unknown sub-task `zed`",
            "line 7: cell `Sub-task`: `Bad Name` is not a kebab-case name",
            "line 7: cell `Estimated peak context`: `lots`",
            "line 9: sub-task `b` is listed twice (also on line 6)",
            "line 10: dependency cycle: d -> e -> d",
        ] {
            assert!(text.contains(part), "{part} in {text}");
        }
        // Many problems: the first ones are spelled out, the rest counted.
        let rows: String = (0..80)
            .map(|i| format!("| t{i} | 0 | - | - | - | x |\n"))
            .collect();
        let e = parse_decomposition(&format!("{HEADER}{rows}")).unwrap_err();
        assert_eq!(e.problems.len(), 80);
        assert!(e.to_string().ends_with("; and 30 more"), "{e}");
    }

    /// A chain of `n` rows, each depending on the one before (the longest path the graph
    /// checks walk).
    fn chain(n: usize) -> String {
        let mut s = String::from(HEADER);
        for i in 0..n {
            let dep = if i == 0 {
                "-".to_string()
            } else {
                format!("t{}", i - 1)
            };
            s.push_str(&format!(
                "| t{i} | {} | {dep} | 4k | src/t{i}.rs | Part {i} |\n",
                i + 1
            ));
        }
        s
    }

    #[test]
    fn parsing_is_linear_in_the_rows() {
        // Best of five, so that a busy machine's pauses do not count; linear is ~16x for 16x
        // the rows, quadratic ~256x: the bound sits between, far from both.
        let best = |text: &str| {
            (0..5)
                .map(|_| {
                    let t = std::time::Instant::now();
                    let plan = parse_decomposition(text).unwrap();
                    let d = t.elapsed();
                    assert!(plan.rows.len() >= 1000);
                    d
                })
                .min()
                .unwrap()
        };
        let (small, large) = (chain(1000), chain(16_000));
        let (a, b) = (best(&small), best(&large));
        let ratio = b.as_secs_f64() / a.as_secs_f64().max(1e-6);
        assert!(ratio < 64.0, "1k rows {a:?}, 16k rows {b:?}: {ratio:.0}x");
    }

    #[test]
    fn refusals_name_line_and_cell() {
        let e = |rows: &str| {
            parse_decomposition(&format!("{HEADER}{rows}"))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            e("| a | 1 | - | 6k | - | x |\n| b | 2 | zed | 6k | - | x |\n"),
            "line 6: cell `Depends on`: `b` depends on unknown sub-task `zed`"
        );
        assert!(
            e("| a | 1 | - | 6k | - | x |\n| a | 1 | - | 6k | - | x |\n")
                .contains("line 6: sub-task `a` is listed twice (also on line 5)")
        );
        assert_eq!(
            e("| a | 1 | b | 6k | - | x |\n| b | 2 | a | 6k | - | x |\n"),
            "line 5: dependency cycle: a -> b -> a"
        );
        assert!(
            e("| a | 1 | - | 6k | - | x |\n| b | 1 | a | 6k | - | x |\n")
                .contains("line 6: cell `Wave`: `b` is in wave 1 but depends on `a` in wave 1")
        );
        assert!(e("| Parse Config | 1 | - | 6k | - | x |\n").contains(
            "line 5: cell `Sub-task`: `Parse Config` is not a kebab-case name (try `parse-config`)"
        ));
        assert!(e("| a | first | - | 6k | - | x |\n").contains("line 5: cell `Wave`"));
        assert!(
            e("| a | 1 | - | lots | - | x |\n").contains("line 5: cell `Estimated peak context`")
        );
        assert_eq!(
            e("| a | 1 | - | 6k | - | x |\n| b | 2 | a, a | 6k | - | x |\n"),
            "line 6: cell `Depends on`: `a` is named twice"
        );
        assert!(e("").contains("no rows"));
        // A table of sub-tasks headed without a Wave column is named at its line; the same
        // table before the plan is prose.
        let no_wave = "# Plan\n\n| Sub-task | Depends on |\n|---|---|\n| a | - |\n";
        assert!(
            parse_decomposition(no_wave)
                .unwrap_err()
                .to_string()
                .starts_with("line 3: the table has no `Wave` column (expected a header like"),
        );
        let plan = parse_decomposition(&format!("{no_wave}\n{HEADER}| a | 1 | - | 6k | - | x |\n"));
        assert_eq!(plan.unwrap().rows.len(), 1);
        assert!(
            parse_decomposition("just prose\n")
                .unwrap_err()
                .to_string()
                .contains("no sub-task table")
        );
    }
}
