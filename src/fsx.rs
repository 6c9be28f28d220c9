//! The one place that writes files: atomically (temp file in the same folder, fsync, rename),
//! so a reader or a crash sees the old content or the new, never half of it.

use std::fs;
use std::io::{self, Read, Write};
use std::path::Path;

/// Write `bytes` to `path` atomically, creating parent folders as needed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".automaton-tmp-")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // Make the rename itself durable; a failure here loses nothing already written.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Read at most `limit` bytes of a file. Returns the bytes and whether the file was longer.
pub fn read_prefix(path: &Path, limit: usize) -> io::Result<(Vec<u8>, bool)> {
    let file = fs::File::open(path)?;
    let mut buf = Vec::new();
    file.take(limit as u64 + 1).read_to_end(&mut buf)?;
    let truncated = buf.len() > limit;
    buf.truncate(limit);
    Ok((buf, truncated))
}
