//! Progress and events of a run: plain lines (or one live line on a terminal) on stderr for
//! people, one JSON object per line on stdout with `--json` for CI, nothing with `-q`.

use super::event::Event;
use anstream::stream::{AsLockedWrite, RawStream};
use anstream::{AutoStream, ColorChoice};
use anstyle::{AnsiColor, Style};
use serde_json::{Value, json};
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use unicode_width::UnicodeWidthChar;

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

    /// An event: a JSON line in `--json` mode, else its human line (if it has one) as a plain
    /// line on stderr. Each form is built only when shown.
    pub fn event(&self, event: &Event<'_>) {
        match self.mode {
            Mode::Json => {
                let line = json_line(event, unix_seconds());
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            Mode::Human { .. } => {
                if let Some(text) = event.human() {
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
                let _ = write!(err, "{CLEAR_LINE}");
                *shown = false;
            }
            let _ = write_painted(&mut err, text, self.color);
        }
    }

    /// The live line (terminal only): task, phase, elapsed time, the agent's last line, cut to
    /// the terminal's width so that it never wraps (a wrapped line cannot be cleared with `\r`).
    pub fn live(&self, text: &str) {
        if let Mode::Human { live: true } = self.mode {
            let mut shown = self.live_shown.lock().unwrap_or_else(|e| e.into_inner());
            // One column spare: some terminals wrap as soon as the last column is written.
            let clipped = clip_to_width(text, terminal_width().saturating_sub(1));
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{CLEAR_LINE}{clipped}");
            let _ = err.flush();
            *shown = true;
        }
    }
}

/// Back to the start of the line and erase it (cursor control, not colour: written whatever the
/// colour decision, and only where a live line was drawn, i.e. on a terminal).
const CLEAR_LINE: &str = "\r\x1b[2K";

/// The style of a progress line, by its leading mark.
fn style_of(text: &str) -> Style {
    let color = if text.starts_with('✔') {
        AnsiColor::Green
    } else if text.starts_with('✘') {
        AnsiColor::Red
    } else if text.starts_with("warning") || text.starts_with('⏸') {
        AnsiColor::Yellow
    } else if text.starts_with('▶') {
        AnsiColor::Cyan
    } else {
        return Style::new();
    };
    Style::new().fg_color(Some(color.into()))
}

/// Write one line in its style; `color` false (the [`crate::Ctx::colors`] decision) strips the
/// styling, which `anstream` does for every escape in the text.
fn write_painted<W: RawStream + AsLockedWrite>(
    out: W,
    text: &str,
    color: bool,
) -> std::io::Result<()> {
    let choice = if color {
        ColorChoice::Always
    } else {
        ColorChoice::Never
    };
    let style = style_of(text);
    let mut out = AutoStream::new(out, choice);
    writeln!(out, "{style}{text}{style:#}")?;
    out.flush()
}

/// The width of the terminal on stderr; `$COLUMNS` when stderr is not one (or cannot say), else
/// 100.
fn terminal_width() -> usize {
    terminal_size::terminal_size_of(std::io::stderr())
        .map(|(terminal_size::Width(w), _)| usize::from(w))
        .filter(|w| *w > 0)
        .or_else(|| {
            std::env::var("COLUMNS")
                .ok()
                .and_then(|c| c.parse().ok())
                .filter(|w| *w > 20)
        })
        .unwrap_or(100)
}

/// The longest start of `text` that takes at most `width` terminal columns (wide characters
/// count two, combining marks none). Control characters are left out and a tab becomes a space,
/// so that what is counted is what is drawn.
fn clip_to_width(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let c = if c == '\t' { ' ' } else { c };
        if c.is_control() {
            continue;
        }
        let w = UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out
}

/// The JSON form of an event: its fields and `event` (from serde), and `ts`, the Unix time in
/// seconds. Keys come out sorted (serde_json's map is ordered by key), as scripts have always
/// seen them.
pub fn json_line(event: &Event<'_>, ts: f64) -> String {
    let mut value = serde_json::to_value(event).unwrap_or_else(|e| {
        // Every field is a plain value, so this cannot happen; if it ever did, the stream says
        // so rather than lose the line or stop the run.
        json!({"event": "warning", "message": format!("cannot write an event: {e}")})
    });
    if let Value::Object(map) = &mut value {
        map.insert("ts".into(), json!(ts));
    }
    value.to_string()
}

pub fn unix_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_width::UnicodeWidthStr;

    #[test]
    fn clipping_counts_display_columns() {
        assert_eq!(clip_to_width("abcdef", 4), "abcd");
        assert_eq!(clip_to_width("abc", 10), "abc");
        assert_eq!(clip_to_width("abc", 0), "");
        // Wide characters take two columns: never half of one.
        assert_eq!(clip_to_width("日本語です", 5), "日本");
        assert_eq!(clip_to_width("ab日本", 3), "ab");
        // Emoji and the marks the progress line uses.
        assert_eq!(clip_to_width("▶ 🚀 go", 4), "▶ 🚀");
        // Combining marks take none; controls are dropped; a tab is one space.
        assert_eq!(clip_to_width("e\u{301}e\u{301}x", 2), "e\u{301}e\u{301}");
        assert_eq!(clip_to_width("a\x1b[31mb\tc", 8), "a[31mb c");
        assert_eq!(clip_to_width("a\x1b[31mb\tc", 7), "a[31mb ");
        for width in 0..30 {
            for text in [
                "tasks/p · implement · 1m05s · 日本語のログ行 🚀 …",
                "x\ty",
                "",
            ] {
                let c = clip_to_width(text, width);
                assert!(c.width() <= width, "{text:?} at {width}: {c:?}");
                assert!(text.replace('\t', " ").starts_with(&c), "{c:?}");
            }
        }
    }

    #[test]
    fn lines_are_coloured_only_when_the_decision_says_so() {
        let render = |text: &str, color: bool| {
            let mut out = Vec::new();
            write_painted(&mut out, text, color).expect("write");
            String::from_utf8(out).expect("utf-8")
        };
        assert_eq!(render("✔ done", true), "\x1b[32m✔ done\x1b[0m\n");
        assert_eq!(render("✘ failed", true), "\x1b[31m✘ failed\x1b[0m\n");
        assert_eq!(render("warning: w", true), "\x1b[33mwarning: w\x1b[0m\n");
        assert_eq!(render("▶ research", true), "\x1b[36m▶ research\x1b[0m\n");
        assert_eq!(render("plain", true), "plain\n");
        for text in ["✔ done", "✘ failed", "warning: w", "▶ research", "plain"] {
            assert_eq!(render(text, false), format!("{text}\n"));
        }
    }
}
