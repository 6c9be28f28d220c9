//! The one way commands write to stdout. A reader that closes early (`automaton status |
//! head -1`) ends the command quietly with exit 0, as ripgrep does: no `println!`, which
//! panics on a closed pipe.

use std::fmt;
use std::io::{self, Write};

/// Writing to stdout failed.
#[derive(Debug, thiserror::Error)]
pub enum StdoutError {
    /// The reader went away: not a failure of the command.
    #[error("stdout was closed")]
    BrokenPipe,
    #[error("cannot write to stdout: {0}")]
    Write(#[source] io::Error),
}

impl From<io::Error> for StdoutError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            StdoutError::BrokenPipe
        } else {
            StdoutError::Write(e)
        }
    }
}

/// Write `text` to stdout and flush it (through a buffer: a long text displayed piece by
/// piece is not one write per line).
pub fn print(text: impl fmt::Display) -> Result<(), StdoutError> {
    let mut out = io::BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    write!(out, "{text}")?;
    out.flush()?;
    Ok(())
}

/// Write raw bytes (a log's own text, not necessarily UTF-8) to stdout and flush them.
pub fn write_bytes(bytes: &[u8]) -> Result<(), StdoutError> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(())
}

/// Write `text` and a newline to stdout and flush it.
pub fn println(text: impl fmt::Display) -> Result<(), StdoutError> {
    print(format_args!("{text}\n"))
}

/// Write a value as pretty JSON and a newline to stdout, streamed through a buffer (a large
/// document is never held whole in memory).
pub fn json_pretty(value: &impl serde::Serialize) -> Result<(), StdoutError> {
    let mut out = io::BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, value).map_err(io::Error::from)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

/// Write a value as compact JSON on one line to stdout (one JSON-lines event).
pub fn json_line(value: &impl serde::Serialize) -> Result<(), StdoutError> {
    let mut out = io::BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    serde_json::to_writer(&mut out, value).map_err(io::Error::from)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

/// For output that must not change the exit code (how an `orchestrate` run ended): a closed
/// pipe is not an error there.
pub fn closed_is_ok(e: StdoutError) -> Result<(), StdoutError> {
    match e {
        StdoutError::BrokenPipe => Ok(()),
        other => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_is_its_own_error() {
        let e = StdoutError::from(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(matches!(e, StdoutError::BrokenPipe));
        let e = StdoutError::from(io::Error::from(io::ErrorKind::StorageFull));
        assert!(matches!(e, StdoutError::Write(_)));
    }
}
