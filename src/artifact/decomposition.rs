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
}

impl Plan {
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
        self.rows.iter().find(|r| r.name == name)
    }
}

/// Why a DECOMPOSITION.md was refused. `line` is 0 when the problem is the whole file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if *line > 0 { format!("line {line}: ") } else { String::new() })]
pub struct PlanError {
    pub line: usize,
    pub message: String,
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError {
        line,
        message: message.into(),
    })
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

fn header_columns(cells: &[String]) -> Option<Columns> {
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
    (c.name.is_some() && c.wave.is_some()).then_some(c)
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

/// Parse and check a DECOMPOSITION.md.
pub fn parse_decomposition(text: &str) -> Result<Plan, PlanError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    let cols = loop {
        let Some(line) = lines.get(i) else {
            return err(
                0,
                "no sub-task table (expected a header like `| Sub-task | Wave | Depends on | Estimated peak context |`)",
            );
        };
        i += 1;
        if line.trim_start().starts_with('|')
            && let Some(c) = header_columns(&cells(line))
        {
            break c;
        }
    };
    let header_line = i;
    let Some(deps_col) = cols.deps else {
        return err(header_line, "the table has no `Depends on` column");
    };
    let name_col = cols.name.unwrap_or(0);
    let wave_col = cols.wave.unwrap_or(1);
    let mut rows: Vec<SubtaskRow> = Vec::new();
    while let Some(line) = lines.get(i) {
        i += 1;
        if !line.trim_start().starts_with('|') {
            break;
        }
        let cs = cells(line);
        if is_separator(&cs) {
            continue;
        }
        let cell = |col: Option<usize>| {
            col.and_then(|c| cs.get(c))
                .map(String::as_str)
                .unwrap_or("")
        };
        let name = cell(Some(name_col)).to_string();
        if name.is_empty() {
            return err(i, "cell `Sub-task` is empty");
        }
        if !is_kebab(&name) {
            return err(
                i,
                format!(
                    "cell `Sub-task`: `{name}` is not a kebab-case name (try `{}`)",
                    crate::names::kebab(&name)
                ),
            );
        }
        let wave_text = cell(Some(wave_col));
        let wave = match wave_text
            .trim_start_matches(|c: char| c.is_alphabetic() || c == ' ')
            .parse::<u32>()
        {
            Ok(w) if w > 0 => w,
            _ => {
                return err(
                    i,
                    format!("cell `Wave`: `{wave_text}` is not a wave number (1, 2, ...)"),
                );
            }
        };
        let est_text = cell(cols.estimate);
        let estimate = if list(est_text).is_empty() {
            None
        } else {
            let tokens_text = est_text.trim_start_matches('~');
            match crate::settings::value::parse_tokens(tokens_text) {
                Ok(t) => t,
                Err(_) => {
                    return err(
                        i,
                        format!(
                            "cell `Estimated peak context`: `{est_text}` is not a token count like 6k"
                        ),
                    );
                }
            }
        };
        if let Some(prev) = rows.iter().find(|r| r.name == name) {
            return err(
                i,
                format!(
                    "sub-task `{name}` is listed twice (also on line {})",
                    prev.line
                ),
            );
        }
        rows.push(SubtaskRow {
            name,
            wave,
            depends_on: list(cell(Some(deps_col))),
            estimate,
            files: list(cell(cols.files)),
            scope: cell(cols.scope).to_string(),
            line: i,
        });
    }
    if rows.is_empty() {
        return err(header_line, "the sub-task table has no rows");
    }
    check_graph(&rows)?;
    Ok(Plan { rows })
}

fn check_graph(rows: &[SubtaskRow]) -> Result<(), PlanError> {
    let index = |name: &str| rows.iter().position(|r| r.name == name);
    for r in rows {
        for d in &r.depends_on {
            if index(d).is_none() {
                return err(
                    r.line,
                    format!(
                        "cell `Depends on`: `{}` depends on unknown sub-task `{d}`",
                        r.name
                    ),
                );
            }
            if *d == r.name {
                return err(r.line, format!("dependency cycle: {0} -> {0}", r.name));
            }
        }
    }
    // Depth-first search for a cycle, reporting its path.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    fn visit(
        at: usize,
        rows: &[SubtaskRow],
        marks: &mut [Mark],
        path: &mut Vec<usize>,
    ) -> Option<Vec<usize>> {
        marks[at] = Mark::OnPath;
        path.push(at);
        for d in &rows[at].depends_on {
            let Some(next) = rows.iter().position(|r| r.name == *d) else {
                continue;
            };
            match marks[next] {
                Mark::OnPath => {
                    let start = path.iter().position(|p| *p == next).unwrap_or(0);
                    let mut cycle = path[start..].to_vec();
                    cycle.push(next);
                    return Some(cycle);
                }
                Mark::New => {
                    if let Some(c) = visit(next, rows, marks, path) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks[at] = Mark::Done;
        None
    }
    let mut marks = vec![Mark::New; rows.len()];
    for start in 0..rows.len() {
        if marks[start] == Mark::New
            && let Some(cycle) = visit(start, rows, &mut marks, &mut Vec::new())
        {
            let names: Vec<&str> = cycle.iter().map(|i| rows[*i].name.as_str()).collect();
            return err(
                rows[cycle[0]].line,
                format!("dependency cycle: {}", names.join(" -> ")),
            );
        }
    }
    for r in rows {
        for d in &r.depends_on {
            let dep = &rows[index(d).unwrap_or(0)];
            if dep.wave >= r.wave {
                return err(
                    r.line,
                    format!(
                        "cell `Wave`: `{}` is in wave {} but depends on `{}` in wave {} (a sub-task's wave must be later than its dependencies')",
                        r.name, r.wave, dep.name, dep.wave
                    ),
                );
            }
        }
    }
    Ok(())
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
        assert!(plan.row("cache").unwrap().files.is_empty());
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
        assert!(e("").contains("no rows"));
        assert!(
            parse_decomposition("just prose\n")
                .unwrap_err()
                .to_string()
                .contains("no sub-task table")
        );
    }
}
