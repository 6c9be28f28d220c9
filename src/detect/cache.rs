//! `.automaton/.vram_cache.json`: the last report, so repeated runs do not probe again
//! (seed 000, "VRAM Detection Caching"). Written atomically; a corrupt file is reported and
//! replaced, never trusted.
//!
//! The file is the report's JSON (the seed's keys at the top level, so a shell script can read
//! it) plus a `cache_key` naming the inputs it was computed from. A cache whose key or
//! `format_version` differs is stale: it is replaced without a warning.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::VramReport;

/// Where the cache lives, relative to the project.
pub const CACHE_REL: &str = ".automaton/.vram_cache.json";
/// Bump when the report's shape changes; older caches are then stale.
pub const FORMAT_VERSION: u32 = 1;
/// A cache larger than this is not a cache automaton wrote.
const MAX_CACHE_BYTES: usize = 256 * 1024;

#[derive(Serialize, Deserialize)]
struct CacheFile {
    cache_key: String,
    #[serde(flatten)]
    report: VramReport,
}

/// What was found on disk.
#[derive(Debug)]
pub enum Loaded {
    Hit(Box<VramReport>),
    /// No cache, or one computed from other inputs or by another format version.
    Miss,
    /// Unreadable, truncated, wrong-typed or out-of-range: the reason.
    Corrupt(String),
}

pub fn path(project: &Path) -> PathBuf {
    project.join(CACHE_REL)
}

/// Read the cache if it holds a valid report for `key`.
pub fn load(project: &Path, key: &str) -> Loaded {
    let p = path(project);
    let bytes = match crate::fsx::read_prefix(&p, MAX_CACHE_BYTES) {
        Ok((_, true)) => return Loaded::Corrupt("larger than any cache automaton writes".into()),
        Ok((b, false)) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Loaded::Miss,
        Err(e) => return Loaded::Corrupt(format!("cannot read it ({e})")),
    };
    // Read the version and key loosely first: a cache from another version is stale, not corrupt.
    let value: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => return Loaded::Corrupt(format!("not valid JSON ({e})")),
    };
    if value.get("format_version").and_then(|v| v.as_u64()) != Some(u64::from(FORMAT_VERSION))
        && value.get("format_version").is_some_and(|v| v.is_u64())
    {
        return Loaded::Miss;
    }
    let file: CacheFile = match serde_json::from_value(value) {
        Ok(f) => f,
        Err(e) => return Loaded::Corrupt(format!("not a VRAM report ({e})")),
    };
    if let Err(why) = check(&file.report) {
        return Loaded::Corrupt(why);
    }
    if file.cache_key != key {
        return Loaded::Miss;
    }
    Loaded::Hit(Box::new(file.report))
}

/// The invariants every report automaton writes keeps.
fn check(r: &VramReport) -> Result<(), String> {
    if r.recommended_kb == 0 {
        return Err("`recommended_kb` is 0".into());
    }
    if r.recommended_k != r.recommended_kb / 1000 {
        return Err("`recommended_k` does not match `recommended_kb`".into());
    }
    if !(0.0..1.0).contains(&r.headroom) {
        return Err(format!("`headroom` {} is out of range", r.headroom));
    }
    if r.max_peak_context_kb > r.recommended_kb {
        return Err("`max_peak_context_kb` is above `recommended_kb`".into());
    }
    for (k, v) in [("gpu_vram_gb", r.gpu_vram_gb), ("ram_gb", r.ram_gb)] {
        if v.is_some_and(|v| !v.is_finite() || v < 0.0) {
            return Err(format!("`{k}` is out of range"));
        }
    }
    Ok(())
}

/// Write the report atomically, with the key of its inputs.
pub fn store(project: &Path, key: &str, report: &VramReport) -> io::Result<()> {
    let mut report = report.clone();
    report.cached = false;
    let file = CacheFile {
        cache_key: key.to_string(),
        report,
    };
    let mut json = serde_json::to_vec_pretty(&file).map_err(io::Error::other)?;
    json.push(b'\n');
    crate::fsx::write_atomic(&path(project), &json)
}

/// Remove the cache; a missing one is fine.
pub fn invalidate(project: &Path) -> io::Result<()> {
    match std::fs::remove_file(path(project)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::tests::sample_report;

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().expect("tmp");
        let r = sample_report();
        store(dir.path(), "k1", &r).expect("store");
        match load(dir.path(), "k1") {
            Loaded::Hit(got) => assert_eq!(*got, r),
            other => panic!("{other:?}"),
        }
        // Another key: stale, not corrupt.
        assert!(matches!(load(dir.path(), "k2"), Loaded::Miss));
        invalidate(dir.path()).expect("invalidate");
        assert!(matches!(load(dir.path(), "k1"), Loaded::Miss));
        invalidate(dir.path()).expect("missing is fine");
    }

    #[test]
    fn the_seed_keys_are_at_the_top_level() {
        let dir = tempfile::tempdir().expect("tmp");
        store(dir.path(), "k", &sample_report()).expect("store");
        let text = std::fs::read_to_string(path(dir.path())).expect("read");
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["recommended_kb"], 16_000);
        assert_eq!(v["max_peak_context_kb"], 12_000);
        assert_eq!(v["gpu_vram_gb"], 8);
        assert_eq!(v["cache_key"], "k");
    }

    #[test]
    fn corrupt_truncated_and_wrong_typed() {
        let dir = tempfile::tempdir().expect("tmp");
        store(dir.path(), "k", &sample_report()).expect("store");
        let good = std::fs::read_to_string(path(dir.path())).expect("read");
        let cases = [
            good[..good.len() / 2].to_string(),
            "garbage".to_string(),
            String::new(),
            "[]".to_string(),
            good.replace("\"recommended_kb\": 16000", "\"recommended_kb\": \"16000\""),
            good.replace("\"headroom\": 0.25", "\"headroom\": 7.5"),
            good.replace("\"recommended_k\": 16", "\"recommended_k\": 99"),
            good.replace("\"source\": \"nvml\"", "\"source\": \"crystal-ball\""),
        ];
        for (i, bad) in cases.iter().enumerate() {
            assert_ne!(bad, &good, "case {i} did not change the file");
            std::fs::write(path(dir.path()), bad).expect("write");
            assert!(
                matches!(load(dir.path(), "k"), Loaded::Corrupt(_)),
                "case {i}: {bad}"
            );
        }
        // Another format version is stale, not corrupt.
        std::fs::write(
            path(dir.path()),
            good.replace("\"format_version\": 1", "\"format_version\": 99"),
        )
        .expect("write");
        assert!(matches!(load(dir.path(), "k"), Loaded::Miss));
    }
}
