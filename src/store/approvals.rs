//! `.state.approvals`: the decisions people took on a task's gates, one JSON object per line,
//! append-only (format version 1, [`APPROVALS_VERSION`]):
//!
//! | field | meaning |
//! |---|---|
//! | `v` | `1` |
//! | `kind` | `approve` or `reject` |
//! | `gate` | the phase word the approval opens (`design`); for a rejection, the gate the task waited at (null when it waited at none) |
//! | `who` | `$USER` of the person (`unknown` when unset) |
//! | `when` | RFC 3339 UTC (`2026-05-01T09:30:00Z`) |
//! | `note` | `approve --note` (null when none) |
//! | `reason` | `reject --reason` (null for an approval) |
//! | `artifacts` | artifact file name → SHA-256 (hex) of the content the decision covers |
//! | `phase` | rejection: the phase that runs again (the one that wrote the rejected artifact) |
//! | `rejected` | rejection: where the rejected artifact was moved, relative to the task folder |
//!
//! Each record is appended with one `write` of the whole line and an fsync, so a crash leaves
//! at most a torn last line; [`read`] reports it and ignores it, keeping every earlier line.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

pub const APPROVALS_FILE: &str = ".state.approvals";
/// The version written on every new line.
pub const APPROVALS_VERSION: u32 = 1;

/// Largest file read (a person's decisions: small).
const MAX_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    Approve,
    Reject,
}

/// One line of `.state.approvals` (the table above).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub v: u32,
    pub kind: RecordKind,
    pub gate: Option<String>,
    pub who: String,
    pub when: String,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub artifacts: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<String>,
}

/// SHA-256 of some bytes, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// SHA-256 of a file's content; `None` when it cannot be read.
pub fn sha256_file(path: &Path) -> Option<String> {
    crate::fsx::read(path).ok().map(|b| sha256_hex(&b))
}

/// Who is deciding: `$USER`, else `$LOGNAME`, else the name of the account the process runs
/// as (CI, cron and containers often set neither variable), else `unknown`.
pub fn who() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        .or_else(account_name)
        .unwrap_or_else(|| "unknown".into())
}

/// The login name of the real user id, from the password database (`getpwuid_r`); `None` when
/// the uid has no entry (a container's arbitrary uid) or the name is empty.
fn account_name() -> Option<String> {
    let uid = rustix::process::getuid().as_raw();
    let mut buf = vec![0u8; 1024];
    loop {
        // SAFETY: `pwd` and `buf` outlive the call; on success `pw_name` points into `buf`,
        // which is read before either is dropped or reused.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let rc = unsafe {
            libc::getpwuid_r(
                uid,
                &mut pwd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut found,
            )
        };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 4, 0);
            continue;
        }
        if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        // SAFETY: a successful getpwuid_r leaves a NUL-terminated name in `buf`.
        let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
        let name = name.to_string_lossy().trim().to_string();
        return (!name.is_empty()).then_some(name);
    }
}

/// Unix seconds as RFC 3339 UTC.
pub fn rfc3339(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Now, as RFC 3339 UTC.
pub fn now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(secs)
}

/// Append one record: the whole line in one write, then fsync. A torn last line left by an
/// earlier crash is closed first (in the same write), so it stays a line of its own.
pub fn append(task_dir: &Path, record: &Record) -> io::Result<()> {
    let line = serde_json::to_string(record).map_err(io::Error::other)?;
    crate::fsx::append_line(
        &task_dir.join(APPROVALS_FILE),
        &line,
        crate::fsx::Durability::Durable,
    )
}

/// Every readable record, oldest first, and a warning for each line that is not one (a torn
/// last line from a crash mid-write, a line of an unknown version). `rel` names the task.
pub fn read(task_dir: &Path, rel: &str) -> (Vec<Record>, Vec<String>) {
    let mut warnings = Vec::new();
    let bytes = match crate::fsx::read_prefix(&task_dir.join(APPROVALS_FILE), MAX_BYTES) {
        Ok((b, truncated)) => {
            if truncated {
                warnings.push(format!(
                    "{rel}/{APPROVALS_FILE}: larger than {} MiB; only the start was read",
                    MAX_BYTES >> 20
                ));
            }
            b
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return (Vec::new(), warnings),
        Err(e) => {
            warnings.push(format!("{rel}/{APPROVALS_FILE}: cannot read: {e}"));
            return (Vec::new(), warnings);
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let ends_whole = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut records = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let last = i + 1 == lines.len();
        match serde_json::from_str::<Record>(line) {
            Ok(r) if r.v == APPROVALS_VERSION => records.push(r),
            Ok(r) => warnings.push(format!(
                "{rel}/{APPROVALS_FILE}:{}: record version {} is not known to this automaton (ignored)",
                i + 1,
                r.v
            )),
            Err(_) if last && !ends_whole => warnings.push(format!(
                "{rel}/{APPROVALS_FILE}:{}: torn last line (a write cut short by a crash?); ignored, earlier lines kept",
                i + 1
            )),
            Err(e) => warnings.push(format!(
                "{rel}/{APPROVALS_FILE}:{}: not a valid record ({e}); ignored",
                i + 1
            )),
        }
    }
    (records, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kind: RecordKind, gate: &str) -> Record {
        Record {
            v: APPROVALS_VERSION,
            kind,
            gate: Some(gate.into()),
            who: "ann".into(),
            when: rfc3339(0),
            note: None,
            reason: None,
            artifacts: BTreeMap::from([("SPEC.md".into(), sha256_hex(b"x"))]),
            phase: None,
            rejected: None,
        }
    }

    #[test]
    fn dates_and_hashes() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_777_627_845), "2026-05-01T09:30:45Z");
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_torn_last_line_is_reported_and_the_next_append_starts_a_new_line() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), &rec(RecordKind::Approve, "design")).unwrap();
        let path = dir.path().join(APPROVALS_FILE);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, b"{\"v\":1,\"kind\":\"appr").unwrap();
        let (records, warnings) = read(dir.path(), "t");
        assert_eq!(records, vec![rec(RecordKind::Approve, "design")]);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains(":2: torn last line"), "{warnings:?}");
        append(dir.path(), &rec(RecordKind::Reject, "implement")).unwrap();
        let (records, warnings) = read(dir.path(), "t");
        assert_eq!(records.len(), 2);
        assert_eq!(records[1].kind, RecordKind::Reject);
        assert!(
            warnings[0].contains(":2: not a valid record"),
            "{warnings:?}"
        );
    }
}
