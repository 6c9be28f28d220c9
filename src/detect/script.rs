//! Step one of the chain: the layered `scripts/vram_detect.sh`, run with `sh` by the shared
//! supervisor ([`crate::process`]: its own process group, TERM then KILL after a grace, Ctrl-C,
//! SIGTERM and SIGHUP to automaton stop it too) under a timeout, its JSON parsed. Every failure
//! is a reason to fall through, never an error of the command; an interruption exits with 130.

use crate::process::{Event, Group, Options, Output, signals};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Default time the script may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Environment variable that overrides the timeout, in seconds (fractions allowed).
pub const TIMEOUT_VAR: &str = "AUTOMATON_VRAM_SCRIPT_TIMEOUT";
/// Most output kept from the script (stdout and stderr each).
const MAX_OUTPUT: usize = 64 * 1024;

/// The values a script may print (the seed's keys). Missing keys are filled in by the detector.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScriptOutput {
    pub gpu_vram_gb: Option<f64>,
    pub ram_gb: Option<f64>,
    pub model_context_kb: Option<u64>,
    pub framework_overhead_tokens: Option<u64>,
    pub recommended_kb: Option<u64>,
    pub headroom: Option<f64>,
    pub max_peak_context_kb: Option<u64>,
}

/// Parse the timeout override (`None` when unset or invalid).
pub fn parse_timeout(raw: Option<&str>) -> Option<Duration> {
    let secs: f64 = raw?.trim().parse().ok()?;
    (secs.is_finite() && secs > 0.0 && secs < 86_400.0).then(|| Duration::from_secs_f64(secs))
}

/// Run `sh <script>` in `cwd`; its stdout, or why it did not answer. A stop signal to
/// automaton stops the script's group and exits with 130. `kill_grace` is the time between
/// TERM and KILL when the script is stopped (`AUTOMATON_KILL_GRACE`, as for agents).
pub fn run(
    script: &Path,
    cwd: &Path,
    timeout: Duration,
    kill_grace: Duration,
) -> Result<String, String> {
    // Without the policy (no thread could be started) the script still runs, only without a
    // reaction to signals, as before.
    let never = AtomicBool::new(false);
    let policy = signals::install_for_children().ok();
    let cancel = policy.as_deref().unwrap_or(&never);
    let mut cmd = Command::new("sh");
    cmd.arg(script)
        .current_dir(cwd)
        .env("AUTOMATON_PROJECT", cwd);
    let mut group = Group::spawn(
        cmd,
        Options {
            stdin: None,
            output: Output::Capture { max: MAX_OUTPUT },
            cancel,
            kill_grace,
        },
    )
    .map_err(|e| format!("cannot start it with sh: {e}"))?;
    let deadline = Instant::now().checked_add(timeout);
    let waited = loop {
        match group.wait(deadline) {
            // Whatever the script left running in its group would keep the pipes open: stop it.
            Ok(Event::Exited(_)) => break group.finish(),
            Ok(Event::Cancelled) => {
                let _ = group.stop();
                signals::exit_interrupted("the VRAM detection script was stopped");
            }
            Ok(Event::Woke) if deadline.is_some_and(|d| Instant::now() >= d) => {
                let _ = group.stop();
                return Err(format!(
                    "timed out after {:.1} s (its process group was killed)",
                    timeout.as_secs_f64()
                ));
            }
            Ok(Event::Woke) => {}
            Err(e) => break Err(e),
        }
    };
    let status = waited.map_err(|e| format!("cannot wait for it: {e}"))?;
    let (stdout, stderr) = group.take_output();
    if !status.success() {
        let why = match status.code() {
            Some(c) => format!("exited with status {c}"),
            None => "was killed by a signal".to_string(),
        };
        let last = String::from_utf8_lossy(&stderr)
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| format!(": {}", l.trim().chars().take(200).collect::<String>()))
            .unwrap_or_default();
        return Err(format!("{why}{last}"));
    }
    Ok(String::from_utf8_lossy(&stdout).into_owned())
}

/// Parse the script's JSON. Pure. Needs at least `recommended_kb` or `gpu_vram_gb`; every key
/// present must be a non-negative number (or null). A line of text before the JSON is allowed.
pub fn parse(text: &str) -> Result<ScriptOutput, String> {
    let value: serde_json::Value = match serde_json::from_str(text.trim()) {
        Ok(v) => v,
        Err(first) => {
            let (Some(a), Some(b)) = (text.find('{'), text.rfind('}')) else {
                return Err(format!("its output is not JSON ({first})"));
            };
            if a >= b {
                return Err(format!("its output is not JSON ({first})"));
            }
            serde_json::from_str(&text[a..=b])
                .map_err(|e| format!("its output is not JSON ({e})"))?
        }
    };
    let obj = value
        .as_object()
        .ok_or("its output is JSON but not an object")?;
    let num = |key: &str| -> Result<Option<f64>, String> {
        match obj.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::Number(n)) => match n.as_f64() {
                Some(v) if v.is_finite() && v >= 0.0 => Ok(Some(v)),
                _ => Err(format!("`{key}` is not a non-negative number")),
            },
            Some(other) => Err(format!("`{key}` is not a number (got {other})")),
        }
    };
    let tokens =
        |key: &str| -> Result<Option<u64>, String> { Ok(num(key)?.map(|v| v.floor() as u64)) };
    let headroom = match num("headroom")? {
        Some(h) if h < 1.0 => Some(h),
        Some(h) if h < 100.0 => Some(h / 100.0), // "25" meaning 25%
        Some(h) => return Err(format!("`headroom` {h} is not a share below 1 (or %)")),
        None => None,
    };
    let out = ScriptOutput {
        gpu_vram_gb: num("gpu_vram_gb")?,
        ram_gb: num("ram_gb")?,
        model_context_kb: tokens("model_context_kb")?,
        framework_overhead_tokens: tokens("framework_overhead_tokens")?,
        recommended_kb: tokens("recommended_kb")?.filter(|r| *r > 0),
        headroom,
        max_peak_context_kb: tokens("max_peak_context_kb")?,
    };
    if out.recommended_kb.is_none() && out.gpu_vram_gb.is_none() {
        return Err("its JSON has neither `recommended_kb` nor `gpu_vram_gb`".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = r#"{
        "gpu_vram_gb": 8, "ram_gb": 16, "model_context_kb": 128000,
        "framework_overhead_tokens": 4000, "recommended_kb": 16000, "recommended_k": 16,
        "headroom": 0.25, "max_peak_context_kb": 12000 }"#;

    #[test]
    fn parses_the_seed_example() {
        let o = parse(SEED).expect("parse");
        assert_eq!(o.gpu_vram_gb, Some(8.0));
        assert_eq!(o.recommended_kb, Some(16_000));
        assert_eq!(o.headroom, Some(0.25));
        assert_eq!(o.max_peak_context_kb, Some(12_000));
    }

    #[test]
    fn lenient_where_harmless_strict_where_not() {
        let o = parse("probing...\n{\"recommended_kb\": 20000, \"headroom\": 30}\n").expect("ok");
        assert_eq!(o.recommended_kb, Some(20_000));
        assert_eq!(o.headroom, Some(0.3));
        assert_eq!(
            parse("{\"gpu_vram_gb\": null, \"recommended_kb\": 8000}")
                .expect("ok")
                .gpu_vram_gb,
            None
        );
        for bad in [
            "",
            "not json",
            "[1,2]",
            "{}",
            "{\"recommended_kb\": \"lots\"}",
            "{\"recommended_kb\": -5}",
            "{\"recommended_kb\": 8000, \"headroom\": 250}",
            "{\"recommended_kb\": 16000",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn timeout_values() {
        assert_eq!(parse_timeout(Some("0.5")), Some(Duration::from_millis(500)));
        assert_eq!(parse_timeout(Some("2")), Some(Duration::from_secs(2)));
        assert_eq!(parse_timeout(Some("-1")), None);
        assert_eq!(parse_timeout(Some("soon")), None);
        assert_eq!(parse_timeout(None), None);
    }

    /// The default `AUTOMATON_KILL_GRACE`.
    const GRACE: Duration = Duration::from_secs(5);

    #[test]
    fn runs_fails_and_times_out() {
        let dir = tempfile::tempdir().expect("tmp");
        let ok = dir.path().join("ok.sh");
        std::fs::write(&ok, "echo '{\"recommended_kb\": 9000}'\n").expect("write");
        let out = run(&ok, dir.path(), Duration::from_secs(5), GRACE).expect("runs");
        assert_eq!(parse(&out).expect("json").recommended_kb, Some(9000));

        let fail = dir.path().join("fail.sh");
        std::fs::write(&fail, "echo 'nvidia-smi: not found' >&2\nexit 3\n").expect("write");
        let err = run(&fail, dir.path(), Duration::from_secs(5), GRACE).expect_err("fails");
        assert!(
            err.contains("status 3") && err.contains("nvidia-smi"),
            "{err}"
        );

        // A child left running in the background must not keep the runner waiting.
        let bg = dir.path().join("bg.sh");
        std::fs::write(&bg, "sleep 30 &\necho '{\"recommended_kb\": 7000}'\n").expect("write");
        let start = Instant::now();
        let out = run(&bg, dir.path(), Duration::from_secs(20), GRACE).expect("runs");
        assert_eq!(parse(&out).expect("json").recommended_kb, Some(7000));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );

        let slow = dir.path().join("slow.sh");
        std::fs::write(&slow, "sleep 30\necho '{}'\n").expect("write");
        let start = Instant::now();
        let err = run(&slow, dir.path(), Duration::from_millis(300), GRACE).expect_err("times out");
        assert!(err.contains("timed out"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(5));
    }
}
