//! `automaton watch`: a live view of every task, read from the task folders. Read-only: it
//! never takes the project lock and never writes into the project, so it runs beside an
//! orchestrator, from any terminal.
//!
//! - [`model`] reads the tasks (one part per top-level task, re-read alone when it changes);
//! - [`source`] says what changed (file notifications, or a slow poll);
//! - [`view`] draws the full-screen frame (and the `--once` text);
//! - [`plain`] prints one line per change where there is no terminal.

pub mod model;
pub mod plain;
pub mod source;
pub mod view;

use model::{Model, Touched};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use source::Source;
use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant};
use view::{Action, Ui};

/// How often running agents, the lock and elapsed times are looked at again without a file
/// event (a killed agent leaves no trace in the files).
const TICK: Duration = Duration::from_secs(1);

/// Why `watch` could not run.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error(transparent)]
    Settings(#[from] crate::settings::SettingsError),
    /// The terminal could not be set up or written (stdout for `--once`).
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// What the command line asked of `watch`.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Draw one frame as text and exit, at this size (`None`: the terminal's).
    pub once: bool,
    pub size: Option<(u16, u16)>,
    /// Colour the full-screen view.
    pub color: bool,
    /// Re-read on this timer instead of file notifications (`AUTOMATON_WATCH_POLL`).
    pub poll: Option<Duration>,
}

/// Watch `project` until the reader or the person quits; the exit code.
pub fn run(project: &Path, opts: &Options) -> Result<u8, WatchError> {
    let mut model = Model::load(project)?;
    if opts.once {
        let (w, h) = opts.size.unwrap_or_else(frame_size);
        let mut ui = Ui::default();
        ui.follow(&model);
        let frame = view::frame_text(&model, &mut ui, None, w, h);
        let mut out = std::io::stdout().lock();
        match out.write_all(frame.as_bytes()).and_then(|()| out.flush()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
            _ => return Ok(crate::exit::OK),
        }
    }
    let mut source = Source::start(project, opts.poll);
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() && !dumb {
        full_screen(&mut model, &mut source, opts.color)
    } else {
        Ok(plain_lines(&mut model, &mut source))
    }
}

/// The `--once` size without `--size`: the terminal's, else COLUMNS x LINES, else 120 x 40.
fn frame_size() -> (u16, u16) {
    if std::io::stdout().is_terminal()
        && let Ok(size) = ratatui::crossterm::terminal::size()
    {
        return size;
    }
    let env = |k: &str, d: u16| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|n| *n >= 20)
            .unwrap_or(d)
    };
    (env("COLUMNS", 120), env("LINES", 40))
}

/// Bring the model up to date with what changed.
fn apply(model: &mut Model, touched: &BTreeSet<Touched>) {
    if touched.contains(&Touched::All) {
        model.reload_all();
        return;
    }
    for t in touched {
        match t {
            Touched::Part(r, name) => model.reload_part(&(*r, name.clone())),
            Touched::Lock => model.reload_run(),
            Touched::Log | Touched::All => {}
        }
    }
}

/// The once-a-second look: agents that died, the lock.
fn tick(model: &mut Model) {
    for key in model.recheck_running() {
        model.reload_part(&key);
    }
    model.reload_run();
}

/// Plain mode: print what changed, until the reader goes away (a closed pipe ends it quietly).
fn plain_lines(model: &mut Model, source: &mut Source) -> u8 {
    let mut plain = plain::Plain::default();
    let mut out = std::io::stdout().lock();
    if let Some(n) = &source.note
        && writeln!(out, "note: {n}").is_err()
    {
        return crate::exit::OK;
    }
    let mut last_tick = Instant::now();
    loop {
        let lines = plain.lines(model);
        if !lines.is_empty() {
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            if out
                .write_all(text.as_bytes())
                .and_then(|_| out.flush())
                .is_err()
            {
                return crate::exit::OK;
            }
        }
        let touched = source.wait(TICK);
        // Nothing may change for hours, so a reader that went away (`watch | head -3`) is
        // looked for on every wake-up, not only when a write fails.
        if reader_gone(&out) {
            return crate::exit::OK;
        }
        apply(model, &touched);
        if last_tick.elapsed() >= TICK {
            tick(model);
            last_tick = Instant::now();
        }
    }
}

/// Whether stdout is a pipe or socket whose reading end is closed: `poll` reports an error or
/// a hang-up on it without writing anything.
fn reader_gone(out: &impl std::os::fd::AsFd) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut fds = [PollFd::new(out, PollFlags::empty())];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&now)), Ok(n) if n > 0)
        && fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP)
}

/// The full-screen view, until `q`, Esc at the tree, or Ctrl-C.
fn full_screen(model: &mut Model, source: &mut Source, color: bool) -> Result<u8, WatchError> {
    // Raw mode, the alternate screen, and a panic hook that restores the terminal.
    let mut terminal = ratatui::try_init()?;
    let result = (|| -> Result<(), WatchError> {
        let mut ui = Ui {
            color,
            keys: true,
            ..Ui::default()
        };
        ui.follow(model);
        let mut last_tick = Instant::now();
        let mut dirty = true;
        loop {
            if dirty {
                let note = source.note.clone();
                terminal.draw(|f| view::draw(f, model, &mut ui, note.as_deref()))?;
                dirty = false;
            }
            if event::poll(Duration::from_millis(25))? {
                let page = view::page_rows(terminal.size()?.height, model, &ui);
                match event::read()? {
                    Event::Key(k) if k.kind != KeyEventKind::Release => {
                        let Some(action) = key_action(k.code, k.modifiers, ui.log_open) else {
                            continue;
                        };
                        if action == Action::Quit {
                            return Ok(());
                        }
                        if action == Action::Attach
                            && let Some(mut window) = tmux_window(model, &ui)
                        {
                            // Hand the terminal to tmux until the person detaches (prefix + d).
                            ratatui::restore();
                            let attached = window.status();
                            terminal = ratatui::try_init()?;
                            if let Err(e) = attached {
                                ui.message = Some(format!("attach: cannot run tmux: {e}"));
                            }
                            dirty = true;
                            continue;
                        }
                        ui.act(model, action, page);
                        dirty = true;
                    }
                    Event::Resize(..) => dirty = true,
                    _ => {}
                }
            }
            let touched = source.wait(Duration::ZERO);
            if !touched.is_empty() {
                apply(model, &touched);
                ui.follow(model);
                dirty = true;
            }
            if last_tick.elapsed() >= TICK {
                tick(model);
                ui.follow(model);
                last_tick = Instant::now();
                dirty = true;
            }
        }
    })();
    ratatui::restore();
    result.map(|()| crate::exit::OK)
}

/// The `tmux attach` command for the selected task's running window (`- **Executor**: tmux`),
/// if it has one.
fn tmux_window(model: &Model, ui: &Ui) -> Option<std::process::Command> {
    let rel = ui.task(model)?.view.path.clone();
    let tmux =
        crate::run::executor::tmux::Tmux::for_project(&model.project, model.tmux_socket.as_deref())
            .ok()?;
    let (window, _) = tmux.window_of(&rel)?;
    let mut select = tmux.command();
    let _ = select.args(["select-window", "-t", &window]).output();
    let mut attach = tmux.command();
    attach.args(["attach-session", "-t", &format!("={}", tmux.session)]);
    Some(attach)
}

fn key_action(code: KeyCode, mods: KeyModifiers, log_open: bool) -> Option<Action> {
    Some(match code {
        KeyCode::Char('c') if mods.contains(KeyModifiers::CONTROL) => Action::Quit,
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Esc if log_open => Action::Back,
        KeyCode::Esc => Action::Quit,
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown | KeyCode::Char(' ') => Action::PageDown,
        KeyCode::Home | KeyCode::Char('g') => Action::Home,
        KeyCode::End | KeyCode::Char('G') => Action::End,
        KeyCode::Enter => Action::Enter,
        KeyCode::Char('a') => Action::Attach,
        _ => return None,
    })
}
