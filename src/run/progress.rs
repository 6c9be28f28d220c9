//! Progress and events of a run: plain lines (or one live line on a terminal) on stderr for
//! people, one JSON object per line on stdout with `--json` for CI, nothing with `-q`.

use serde_json::{Value, json};
use std::io::{IsTerminal, Write};
use std::sync::Mutex;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Human { live: bool },
    Json,
    Quiet,
}

pub struct Progress {
    mode: Mode,
    color: bool,
    /// Whether a live line is on screen (to clear it before a plain line).
    live_shown: Mutex<bool>,
}

impl Progress {
    /// `color` decides for stderr (see [`crate::Ctx::colors`]).
    pub fn new(json: bool, quiet: bool, color: impl FnOnce(bool) -> bool) -> Self {
        let mode = if json {
            Mode::Json
        } else if quiet {
            Mode::Quiet
        } else {
            Mode::Human {
                live: std::io::stderr().is_terminal(),
            }
        };
        Progress {
            mode,
            color: color(std::io::stderr().is_terminal()),
            live_shown: Mutex::new(false),
        }
    }

    /// Whether a live line is drawn (people at a terminal).
    pub fn is_live(&self) -> bool {
        self.mode == Mode::Human { live: true }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// An event: a JSON line in `--json` mode, else `human` as a plain line on stderr.
    pub fn event(&self, kind: &str, mut fields: Value, human: impl FnOnce() -> String) {
        match self.mode {
            Mode::Json => {
                if let Value::Object(map) = &mut fields {
                    map.insert("event".into(), json!(kind));
                    map.insert("ts".into(), json!(unix_seconds()));
                }
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{fields}");
                let _ = out.flush();
            }
            Mode::Human { .. } => {
                let text = human();
                if !text.is_empty() {
                    self.line(&text);
                }
            }
            Mode::Quiet => {}
        }
    }

    /// A plain line for people (stderr), clearing a live line first.
    pub fn line(&self, text: &str) {
        if let Mode::Human { .. } = self.mode {
            let mut shown = self.live_shown.lock().unwrap_or_else(|e| e.into_inner());
            let mut err = std::io::stderr().lock();
            if *shown {
                let _ = write!(err, "\r\x1b[2K");
                *shown = false;
            }
            let _ = writeln!(err, "{}", self.paint(text));
        }
    }

    /// Colour a progress line by its leading mark.
    fn paint(&self, text: &str) -> String {
        if !self.color {
            return text.to_string();
        }
        let code = if text.starts_with('✔') {
            "32"
        } else if text.starts_with('✘') {
            "31"
        } else if text.starts_with("warning") {
            "33"
        } else if text.starts_with('▶') {
            "36"
        } else {
            return text.to_string();
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }

    /// The live line (terminal only): task, phase, elapsed time, the agent's last line.
    pub fn live(&self, text: &str) {
        if let Mode::Human { live: true } = self.mode {
            let mut shown = self.live_shown.lock().unwrap_or_else(|e| e.into_inner());
            let width = terminal_width();
            let clipped: String = text.chars().take(width.saturating_sub(1)).collect();
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K{clipped}");
            let _ = err.flush();
            *shown = true;
        }
    }
}

fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|w| *w > 20)
        .unwrap_or(100)
}

pub fn unix_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
