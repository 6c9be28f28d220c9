//! `.automaton/.vram_cache.json`: the last report, so repeated runs do not probe again.
//! Written atomically; a corrupt file is reported and replaced, never trusted.
//!
//! The file is the report's JSON (the seed's keys at the top level, so a shell script can read
//! it) plus a `cache_key` naming the inputs it was computed from. A cache whose key or
//! `format_version` differs is stale: it is replaced without a warning.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize, Serializer};

/// Where the cache lives, relative to the project.
pub const CACHE_REL: &str = ".automaton/.vram_cache.json";
/// Bump when the report's shape changes; older caches are then stale.
pub const FORMAT_VERSION: u32 = 3;
/// `max_peak_source` when the peak is derived from the target and the headroom.
pub const PEAK_FROM_HEADROOM: &str = "target less headroom";
/// A cache larger than this is not a cache automaton wrote.
const MAX_CACHE_BYTES: usize = 256 * 1024;

/// Which step of the chain gave the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// `scripts/vram_detect.sh` answered.
    Script,
    /// NVML found at least one GPU; the VRAM-only rule sized the budget.
    Nvml,
    /// A known hosted model: its window sized the budget (local VRAM does not limit it).
    Model,
    /// config.md's manual values (`Auto-detect: No`, or nothing was detected).
    Config,
    /// Nothing answered: the seed's defaults.
    Default,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Script => "script",
            Source::Nvml => "nvml",
            Source::Model => "model",
            Source::Config => "config",
            Source::Default => "default",
        }
    }
}

/// The detection result. Its JSON always has every key of the seed's example.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VramReport {
    /// Total VRAM of all GPUs in GiB; `null` when no GPU was found.
    #[serde(serialize_with = "gb_number")]
    pub gpu_vram_gb: Option<f64>,
    /// Host RAM in GiB (limited to the cgroup); `null` when it could not be read.
    #[serde(serialize_with = "gb_number")]
    pub ram_gb: Option<f64>,
    /// The model's context window, in tokens (the seed's `_kb` keys hold tokens).
    pub model_context_kb: u64,
    pub framework_overhead_tokens: u64,
    /// Target context per sub-task, in tokens.
    pub recommended_kb: u64,
    /// `recommended_kb / 1000`.
    pub recommended_k: u64,
    /// Share of the target kept free (0.25 = 25%).
    pub headroom: f64,
    /// The most one sub-task may plan for: the detection script's or config.md's value when
    /// given, else `floor(recommended_kb x (1 - headroom))`.
    pub max_peak_context_kb: u64,
    /// Where `max_peak_context_kb` came from, in words (`detection script`, `config.md`,
    /// `target less headroom`).
    #[serde(default)]
    pub max_peak_source: String,
    pub source: Source,
    /// config.md's `Auto-detect` (Yes when there is no section).
    pub auto_detect: bool,
    /// The model name as found, if any.
    pub model: Option<String>,
    /// Where the model name came from.
    pub model_source: String,
    /// Where the context window came from (`model table`, a config line, `script`, `default`).
    pub model_context_source: String,
    /// Whether the model is served by a provider rather than run locally.
    pub model_hosted: bool,
    /// Every GPU found.
    pub gpus: Vec<GpuReport>,
    /// The local engine that answered at the model endpoint, when one is set and answered.
    #[serde(default)]
    pub engine: Option<EngineReport>,
    /// Why no GPU was found, when none was (or the probe did not run).
    pub gpu_reason: Option<String>,
    pub format_version: u32,
    /// Whether this report came from the cache.
    #[serde(default)]
    pub cached: bool,
    /// What went wrong on the way (one line each, never a secret).
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// Whole numbers print as integers (`8`, like the seed), others as decimals.
fn gb_number<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) if x.fract() == 0.0 && *x >= 0.0 && *x < 1e15 => s.serialize_u64(*x as u64),
        Some(x) => s.serialize_f64(*x),
        None => s.serialize_none(),
    }
}

/// One GPU in the report, in GiB (two decimals).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuReport {
    pub index: u32,
    pub name: String,
    pub total_gb: f64,
    pub free_gb: f64,
}

/// The engine serving the model, as it answered (`detect-vram`'s `engine` key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineReport {
    /// `ollama`, `llama.cpp`, `vllm` or `lmstudio`.
    pub name: String,
    pub url: String,
    /// The loaded model, when the engine names one.
    pub model: Option<String>,
    /// The window the engine serves the model with (per slot for llama.cpp), in tokens.
    pub context_tokens: Option<u64>,
    /// Parallel slots (llama.cpp's `total_slots`), when reported.
    pub slots: Option<u64>,
    /// VRAM the loaded model holds (Ollama's `size_vram`), when reported.
    pub vram_bytes: Option<u64>,
    /// A digest of the engine's answer: a cached report whose engine now answers differently
    /// is probed again.
    pub answer_hash: String,
}

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
    // A cache: a lost write means one more probe.
    crate::fsx::write_rebuildable(&path(project), &json)
}

/// Remove the cache; a missing one is fine.
pub fn invalidate(project: &Path) -> io::Result<()> {
    match std::fs::remove_file(path(project)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The seed's example as a report.
    pub(crate) fn sample_report() -> VramReport {
        VramReport {
            gpu_vram_gb: Some(8.0),
            ram_gb: Some(16.0),
            model_context_kb: 128_000,
            framework_overhead_tokens: 4000,
            recommended_kb: 16_000,
            recommended_k: 16,
            headroom: 0.25,
            max_peak_context_kb: 12_000,
            max_peak_source: PEAK_FROM_HEADROOM.to_string(),
            source: Source::Nvml,
            auto_detect: true,
            model: None,
            model_source: "none found".into(),
            model_context_source: "default".into(),
            model_hosted: false,
            engine: None,
            gpus: vec![GpuReport {
                index: 0,
                name: "Fake".into(),
                total_gb: 8.0,
                free_gb: 7.5,
            }],
            gpu_reason: None,
            format_version: FORMAT_VERSION,
            cached: false,
            warnings: vec![],
        }
    }

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
            good.replace(
                &format!("\"format_version\": {FORMAT_VERSION}"),
                "\"format_version\": 99",
            ),
        )
        .expect("write");
        assert!(matches!(load(dir.path(), "k"), Loaded::Miss));
    }
}
