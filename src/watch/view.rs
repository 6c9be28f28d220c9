//! The full-screen view: a header with the run, the task tree (only the rows on screen are
//! built), the selected task's log tail, and the keys. `--once` draws the same frame into a
//! buffer and prints it as text.

use super::model::{Model, Row, StateFile, TaskInfo};
use crate::state::{Phase, State};
use crate::units::thousands;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row as TableRow, Table};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What the person did: the selection, the scroll, whether the log is open.
#[derive(Debug, Default)]
pub struct Ui {
    /// Index into `Model::rows`.
    pub selected: usize,
    /// The first row on screen.
    pub offset: usize,
    /// The task the selection is on, kept across refreshes (rows move as tasks come and go).
    pub selected_path: Option<String>,
    /// Enter: the log fills the body.
    pub log_open: bool,
    /// A one-line message in the footer (`a` without a tmux session).
    pub message: Option<String>,
    pub color: bool,
    /// The full-screen view reads keys, so its footer lists them; `--once` reads none.
    pub keys: bool,
}

/// What a key asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    Enter,
    Back,
    Attach,
    Quit,
}

impl Ui {
    /// Apply a key; `page` is the number of rows on screen.
    pub fn act(&mut self, model: &Model, action: Action, page: usize) {
        let last = model.rows.len().saturating_sub(1);
        self.message = None;
        match action {
            Action::Up => self.selected = self.selected.saturating_sub(1),
            Action::Down => self.selected = (self.selected + 1).min(last),
            Action::PageUp => self.selected = self.selected.saturating_sub(page.max(1)),
            Action::PageDown => self.selected = (self.selected + page.max(1)).min(last),
            Action::Home => self.selected = 0,
            Action::End => self.selected = last,
            Action::Enter => self.log_open = !self.log_open,
            Action::Back => self.log_open = false,
            Action::Attach => {
                self.message = Some(match self.task(model).and_then(|t| t.running.as_ref()) {
                    Some(r) => format!(
                        "attach: agent pid {} runs without a tmux session; its log is followed here (Enter)",
                        r.pid
                    ),
                    None => "attach: no agent is running for this task".into(),
                })
            }
            Action::Quit => {}
        }
        self.selected_path = self.task(model).map(|t| t.view.path.clone());
    }

    /// Put the selection back on the same task after the rows changed.
    pub fn follow(&mut self, model: &Model) {
        if let Some(path) = &self.selected_path
            && self.task(model).is_none_or(|t| &t.view.path != path)
            && let Some(i) = model
                .rows
                .iter()
                .position(|r| model.info(r).is_some_and(|t| &t.view.path == path))
        {
            self.selected = i;
        }
        self.selected = self.selected.min(model.rows.len().saturating_sub(1));
        if self.selected_path.is_none() {
            self.selected_path = self.task(model).map(|t| t.view.path.clone());
        }
    }

    pub fn task<'m>(&self, model: &'m Model) -> Option<&'m TaskInfo> {
        model.rows.get(self.selected).and_then(|r| model.info(r))
    }
}

/// The rows of the tree the body has room for, given the frame's height.
pub fn page_rows(height: u16, model: &Model, ui: &Ui) -> usize {
    let body = height.saturating_sub(header_height(model) + 1);
    table_height(body, ui).saturating_sub(3) as usize
}

fn header_height(model: &Model) -> u16 {
    if model.warnings().is_empty() { 3 } else { 4 }
}

/// The tree's height: the body less a third of it (at least 5 rows) for the log; none while
/// the log is open.
fn table_height(body: u16, ui: &Ui) -> u16 {
    if ui.log_open {
        0
    } else {
        body - (body / 3).max(5).min(body)
    }
}

/// Draw one frame.
pub fn draw(frame: &mut Frame, model: &Model, ui: &mut Ui, note: Option<&str>) {
    let area = frame.area();
    let [header, body, footer] = Layout::vertical([
        Constraint::Length(header_height(model)),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(header_lines(model, ui, note)), header);
    let [table, log] = Layout::vertical([
        Constraint::Length(table_height(body.height, ui)),
        Constraint::Min(0),
    ])
    .areas(body);
    if table.height > 0 {
        draw_table(frame, table, model, ui);
    }
    draw_log(frame, log, model, ui);
    let keys = ui.message.clone().unwrap_or_else(|| {
        let pos = if model.rows.is_empty() {
            "no tasks".to_string()
        } else {
            format!("row {}/{}", ui.selected + 1, model.rows.len())
        };
        if !ui.keys {
            return format!(" {pos}");
        }
        let enter = if ui.log_open {
            "Enter/Esc back"
        } else {
            "Enter log"
        };
        format!(" {pos} · ↑↓/j k move · PgUp/PgDn · {enter} · a attach · q quit")
    });
    frame.render_widget(
        Paragraph::new(keys).style(ui.style(Style::new().add_modifier(Modifier::REVERSED))),
        footer,
    );
}

impl Ui {
    /// A style, or none at all without colour (`--color never`, NO_COLOR, `--once`).
    fn style(&self, s: Style) -> Style {
        if self.color { s } else { Style::new() }
    }
}

fn header_lines(model: &Model, ui: &Ui, note: Option<&str>) -> Vec<Line<'static>> {
    let t = model.totals();
    let run = &model.run;
    let drive = match &run.holder {
        Some(h) => {
            let age = h
                .since
                .map(|s| now_secs().saturating_sub(s))
                .map(|s| format!(" · {} of {}", dur(s), dur(run.total.as_secs())))
                .unwrap_or_default();
            format!(
                "run: pid {} · jobs {}/{}{age} · {}",
                h.pid.unwrap_or(0),
                t.running,
                run.jobs,
                h.command.as_deref().unwrap_or("command unknown")
            )
        }
        None => format!(
            "run: no automaton drives this project · jobs {}/{}",
            t.running, run.jobs
        ),
    };
    let mut lines = vec![
        Line::from(vec![
            Span::styled(
                "automaton watch ",
                ui.style(Style::new().add_modifier(Modifier::BOLD)),
            ),
            Span::raw(model.project.display().to_string()),
            Span::raw(note.map(|n| format!(" · {n}")).unwrap_or_default()),
        ]),
        Line::from(drive),
        Line::from(format!(
            "{} · {} complete · {} running · {} human · {} blocked · {}",
            count(t.tasks, "task"),
            t.complete,
            t.running,
            t.human,
            t.blocked,
            usage(t.tokens, t.cost)
        )),
    ];
    let warnings = model.warnings();
    if let Some(last) = warnings.last() {
        lines.push(Line::from(Span::styled(
            format!("⚠ {}; last: {last}", count(warnings.len(), "warning")),
            ui.style(Style::new().fg(Color::Yellow)),
        )));
    }
    lines
}

/// `1 task`, `7 tasks`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The project's usage as the agents reported it: what no agent reported is unknown, never 0.
fn usage(tokens: Option<u64>, cost: Option<f64>) -> String {
    match (tokens, cost) {
        (None, None) => "usage unknown".to_string(),
        (Some(n), Some(c)) => format!("{} tokens · ${c:.2}", thousands(n)),
        (Some(n), None) => format!("{} tokens · cost unknown", thousands(n)),
        (None, Some(c)) => format!("tokens unknown · ${c:.2}"),
    }
}

const WIDTHS: [Constraint; 7] = [
    Constraint::Min(24),
    Constraint::Length(18),
    Constraint::Length(16),
    Constraint::Length(7),
    Constraint::Length(9),
    Constraint::Length(7),
    Constraint::Fill(1),
];

fn draw_table(frame: &mut Frame, area: Rect, model: &Model, ui: &mut Ui) {
    // Less the borders and the column titles.
    let visible = area.height.saturating_sub(3) as usize;
    // Keep the selection on screen, scrolling no more than needed.
    if ui.selected < ui.offset {
        ui.offset = ui.selected;
    } else if visible > 0 && ui.selected >= ui.offset + visible {
        ui.offset = ui.selected + 1 - visible;
    }
    ui.offset = ui
        .offset
        .min(model.rows.len().saturating_sub(visible.max(1)));
    let end = (ui.offset + visible).min(model.rows.len());
    let rows: Vec<TableRow> = (ui.offset..end)
        .map(|i| {
            let row = table_row(model, &model.rows[i], ui);
            if i == ui.selected {
                row.style(Style::new().add_modifier(Modifier::REVERSED))
            } else {
                row
            }
        })
        .collect();
    let header = TableRow::new([
        "TASK", "STATE", "PHASE", "ELAPSED", "TOKENS", "COST", "NOTE",
    ])
    .style(ui.style(Style::new().add_modifier(Modifier::BOLD)));
    // Counted in tasks, as the header counts them: wave labels and sub-tasks not created yet
    // are rows, not tasks.
    let is_task = |r: &Row| matches!(r, Row::Task(..));
    let before = model.rows[..ui.offset.min(end)]
        .iter()
        .filter(|r| is_task(r))
        .count();
    let shown = model.rows[ui.offset.min(end)..end]
        .iter()
        .filter(|r| is_task(r))
        .count();
    let total = model.rows.iter().filter(|r| is_task(r)).count();
    let title = match shown {
        0 => format!(" {} ", count(total, "task")),
        1 => format!(" task {} of {total} ", before + 1),
        _ => format!(" tasks {}-{} of {total} ", before + 1, before + shown),
    };
    frame.render_widget(
        Table::new(rows, WIDTHS)
            .header(header)
            .column_spacing(1)
            .block(Block::bordered().title(title)),
        area,
    );
}

fn table_row<'a>(model: &Model, row: &Row, ui: &Ui) -> TableRow<'a> {
    let indent = |cols: usize| " ".repeat(cols);
    let dim = ui.style(Style::new().fg(Color::DarkGray));
    match row {
        Row::Group(label, depth) => {
            TableRow::new([Cell::from(format!("{}{label}", indent(*depth))).style(dim)])
        }
        Row::Missing(name, depth) => TableRow::new([
            Cell::from(format!("{}{name}", indent(*depth))),
            Cell::from("not created"),
        ])
        .style(dim),
        Row::Task(..) => {
            let Some(t) = model.info(row) else {
                return TableRow::new([""]);
            };
            let v = &t.view;
            let mut phase = match t.running_phase() {
                Some(l) => format!("▶ {} #{}", l.phase, l.attempt),
                None => v.next_step.clone(),
            };
            if let Some(n) = v.rework_round {
                phase.push_str(&format!(" · rework {n}"));
            }
            let elapsed = match (&t.running, &v.usage) {
                (Some(r), _) => dur(SystemTime::now()
                    .duration_since(r.since)
                    .unwrap_or_default()
                    .as_secs()),
                (None, Some(u)) => dur(u.seconds as u64),
                _ => String::new(),
            };
            let (tokens, cost) = match &v.usage {
                Some(u) => (
                    u.tokens.map(thousands).unwrap_or_default(),
                    u.cost_usd.map(|c| format!("${c:.2}")).unwrap_or_default(),
                ),
                None => Default::default(),
            };
            let note = match (&v.blocked_by, &v.reason, &t.state_file) {
                (Some(by), ..) => format!("blocked by {by}"),
                (_, Some(r), _) => r.clone(),
                _ if let Some(line) = t.person_wait() => line,
                (.., StateFile::Differs(w)) => format!(".state says {w}"),
                (.., StateFile::Unknown) => ".state unknown".into(),
                _ => match &v.subtasks {
                    Some(s) if !s.waiting_on.is_empty() => {
                        format!("waiting on {}", s.waiting_on.join(", "))
                    }
                    _ => String::new(),
                },
            };
            let state = State::parse(v.state);
            TableRow::new([
                Cell::from(format!("{}{}", indent(t.depth * 4), v.name)),
                Cell::from(v.state).style(ui.style(state_style(state, v.blocked_by.is_some()))),
                Cell::from(phase),
                Cell::from(elapsed),
                Cell::from(tokens),
                Cell::from(cost),
                Cell::from(note),
            ])
        }
    }
}

/// The colours of `graph`: green complete, red human, yellow planning, blue building, grey
/// new; a blocked sub-task red on grey.
fn state_style(state: Option<State>, blocked: bool) -> Style {
    let fg = match state {
        _ if blocked => Color::LightRed,
        Some(State::Complete) => Color::Green,
        Some(State::HumanIntervention) => Color::Red,
        Some(State::Next(Phase::Decomposition | Phase::Design | Phase::TestDesign)) => {
            Color::Yellow
        }
        Some(State::NEW) | None => Color::Gray,
        Some(_) => Color::Blue,
    };
    Style::new().fg(fg)
}

fn draw_log(frame: &mut Frame, area: Rect, model: &Model, ui: &Ui) {
    if area.height == 0 {
        return;
    }
    let task = model.rows.get(ui.selected).and_then(|r| model.info(r));
    let (title, lines) = match task {
        None => (" log ".to_string(), vec![]),
        Some(t) => match &t.last_log {
            None => (
                format!(" log: {} ", t.view.path),
                vec!["(no phase has run yet)".to_string()],
            ),
            Some(l) => {
                let rel = l
                    .path
                    .strip_prefix(&model.project)
                    .unwrap_or(&l.path)
                    .display()
                    .to_string();
                let room = area.height.saturating_sub(2) as usize;
                (format!(" log: {rel} "), tail(&l.path, room))
            }
        },
    };
    let text: Vec<Line> = lines.into_iter().map(Line::from).collect();
    frame.render_widget(
        Paragraph::new(text).block(Block::bordered().title(title)),
        area,
    );
}

/// The last `n` lines of a file, read from its end only, with control characters (an agent's
/// colours, carriage returns) taken out. A log rotated or truncated under us is just read
/// again as it now is.
pub fn tail(path: &Path, n: usize) -> Vec<String> {
    const MAX: u64 = 64 * 1024;
    let Ok(mut f) = std::fs::File::open(path) else {
        return vec!["(log gone)".into()];
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(MAX);
    let mut bytes = Vec::new();
    if f.seek(SeekFrom::Start(start)).is_err() || f.take(MAX).read_to_end(&mut bytes).is_err() {
        return vec!["(log unreadable)".into()];
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    if start > 0 && !lines.is_empty() {
        // The first line was cut by the seek.
        lines.remove(0);
    }
    let from = lines.len().saturating_sub(n);
    lines[from..].iter().map(|l| clean(l)).collect()
}

/// Drop ANSI escape sequences and other control characters; tabs become spaces.
fn clean(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                // CSI: ESC [ ... final byte in @..~
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
            }
            '\t' => out.push_str("    "),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs()
}

/// `42s`, `5m07s`, `3h12m`.
pub fn dur(s: u64) -> String {
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s / 60 % 60),
    }
}

/// Draw one frame of `width` x `height` into a buffer and return it as text, one line per
/// row, trailing spaces trimmed (`--once`).
pub fn frame_text(
    model: &Model,
    ui: &mut Ui,
    note: Option<&str>,
    width: u16,
    height: u16,
) -> String {
    let backend = ratatui::backend::TestBackend::new(width, height);
    // The test backend cannot fail (its error type is `Infallible`).
    let Ok(mut terminal) = ratatui::Terminal::new(backend);
    let _ = terminal.draw(|f| draw(f, model, ui, note));
    let buf = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleans_control_characters() {
        assert_eq!(clean("\x1b[31mred\x1b[0m\tx\r"), "red    x");
    }

    #[test]
    fn durations_read_short() {
        assert_eq!(dur(5), "5s");
        assert_eq!(dur(307), "5m07s");
        assert_eq!(dur(3725), "1h02m");
    }
}
