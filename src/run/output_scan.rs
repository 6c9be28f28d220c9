//! What the runner reads from an agent's output as it comes: the done signal (`CONTRACT_MET`
//! alone on a line, across read boundaries) and the last line with something visible on it,
//! cleaned of escape sequences, for the live line.

/// Longest `last_line` kept, in characters.
const LAST_LINE_MAX_CHARS: usize = 200;
/// Bytes of an unfinished line kept between reads (longer lines keep their tail).
const PARTIAL_MAX: usize = 8 * 1024;

/// Whether an output line is the done signal: `CONTRACT_MET` alone on the line, allowing
/// surrounding whitespace, markdown decoration (`**CONTRACT_MET**`, `` `CONTRACT_MET` ``, `# `,
/// `> `, `- `) and quotes. A sentence that merely mentions the word does not count, so an agent
/// that echoes its prompt ("print CONTRACT_MET when done") is not stopped early.
pub fn is_contract_line(line: &str) -> bool {
    let cleaned = strip_controls(line);
    cleaned
        .trim_matches(|c: char| {
            c.is_whitespace() || matches!(c, '*' | '`' | '_' | '#' | '>' | '-' | '"' | '\'' | '.')
        })
        .eq("CONTRACT_MET")
}

/// Reads the output as it comes: detects contract lines across read boundaries and keeps the
/// last non-empty line for display.
pub(super) struct LogScan {
    /// The unfinished last line (at most `PARTIAL_MAX` bytes, its tail).
    partial: Vec<u8>,
    /// The last complete line with something visible on it.
    last_complete: Vec<u8>,
    pub(super) contract_met: bool,
    pub(super) last_line: Option<String>,
}

impl LogScan {
    pub(super) fn new() -> Self {
        LogScan {
            partial: Vec::new(),
            last_complete: Vec::new(),
            contract_met: false,
            last_line: None,
        }
    }

    /// Take in what the agent printed since the last call; the latest visible line when it
    /// changed.
    pub(super) fn take(&mut self, bytes: &[u8]) -> Option<&str> {
        self.feed(bytes);
        let latest = display_line(&self.partial).or_else(|| display_line(&self.last_complete));
        if latest.is_none() || latest == self.last_line {
            return None;
        }
        self.last_line = latest;
        self.last_line.as_deref()
    }

    fn feed(&mut self, chunk: &[u8]) {
        let mut rest = chunk;
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            if self.partial.is_empty() {
                self.complete_line(&rest[..i]);
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&rest[..i]);
                self.complete_line(&line);
            }
            rest = &rest[i + 1..];
        }
        self.partial.extend_from_slice(rest);
        if self.partial.len() > PARTIAL_MAX {
            let cut = self.partial.len() - PARTIAL_MAX;
            self.partial.drain(..cut);
        }
    }

    fn complete_line(&mut self, line: &[u8]) {
        if contains(line, b"CONTRACT_MET") && is_contract_line(&String::from_utf8_lossy(line)) {
            self.contract_met = true;
        }
        if line.iter().any(|b| !b.is_ascii_whitespace()) {
            let keep = &line[line.len().saturating_sub(PARTIAL_MAX)..];
            self.last_complete.clear();
            self.last_complete.extend_from_slice(keep);
        }
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The visible text of a raw output line: the last carriage-return segment (progress bars
/// redraw with `\r`), without escape sequences, trimmed, at most `LAST_LINE_MAX_CHARS`.
fn display_line(raw: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(raw);
    let segment = text
        .rsplit('\r')
        .find(|s| !strip_controls(s).trim().is_empty())?;
    let clean = strip_controls(segment);
    let clean = clean.trim();
    if clean.chars().count() > LAST_LINE_MAX_CHARS {
        let mut s: String = clean.chars().take(LAST_LINE_MAX_CHARS - 1).collect();
        s.push('…');
        Some(s)
    } else {
        Some(clean.to_string())
    }
}

/// Drop ANSI escape sequences (CSI `ESC [ ... final`, and two-byte `ESC x`) and other control
/// characters except tab, so colored output displays and matches as plain text.
fn strip_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            match chars.next() {
                Some('[') => {
                    // Parameters and intermediates, up to the final byte in '@'..='~'.
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    // OSC: up to BEL or ESC \.
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            chars.next_if_eq(&'\\');
                            break;
                        }
                    }
                }
                _ => {}
            }
        } else if c == '\t' || !c.is_control() {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_line_matching() {
        assert!(is_contract_line("CONTRACT_MET"));
        assert!(is_contract_line("  **CONTRACT_MET**\r"));
        assert!(is_contract_line("`CONTRACT_MET`"));
        assert!(is_contract_line("\u{1b}[32mCONTRACT_MET\u{1b}[0m"));
        assert!(!is_contract_line("print CONTRACT_MET when done"));
        assert!(!is_contract_line("CONTRACT_MET_NOT"));
        assert!(!is_contract_line(""));
    }

    #[test]
    fn display_line_cleans_and_truncates() {
        assert_eq!(display_line(b"  hello \r\n").as_deref(), Some("hello"));
        assert_eq!(display_line(b"10%\r50%\r").as_deref(), Some("50%"));
        assert_eq!(display_line(b"\x1b[1mbold\x1b[0m").as_deref(), Some("bold"));
        assert_eq!(display_line(b"   "), None);
        let long = "x".repeat(500);
        let shown = display_line(long.as_bytes()).unwrap();
        assert_eq!(shown.chars().count(), LAST_LINE_MAX_CHARS);
    }

    #[test]
    fn scan_handles_split_lines() {
        let mut scan = LogScan::new();
        scan.feed(b"working\nCONTR");
        assert!(!scan.contract_met);
        scan.feed(b"ACT_MET\n");
        assert!(scan.contract_met);
        assert_eq!(
            display_line(&scan.last_complete).as_deref(),
            Some("CONTRACT_MET")
        );
    }
}
