//! Step one of the chain: the layered `scripts/vram_detect.sh`, run with `sh` in its own process
//! group under a timeout, its JSON parsed. Every failure is a reason to fall through, never an
//! error of the command.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
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

/// Run `sh <script>` in `cwd`; its stdout, or why it did not answer.
pub fn run(script: &Path, cwd: &Path, timeout: Duration) -> Result<String, String> {
    let mut child = Command::new("sh")
        .arg(script)
        .current_dir(cwd)
        .env("AUTOMATON_PROJECT", cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start it with sh: {e}"))?;
    let pgid = child.id() as i32;
    let out = child.stdout.take().map(reader);
    let err = child.stderr.take().map(reader);
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match exited_unreaped(pgid) {
            Ok(true) => {
                // The leader is a zombie, so its pid (the group id) cannot be reused yet:
                // whatever the script left running in its group would keep the pipes open.
                kill_group(pgid);
                match child.wait() {
                    Ok(status) => break status,
                    Err(e) => return Err(format!("cannot wait for it: {e}")),
                }
            }
            Ok(false) if start.elapsed() >= timeout => {
                kill_group(pgid);
                let _ = child.wait();
                return Err(format!(
                    "timed out after {:.1} s (its process group was killed)",
                    timeout.as_secs_f64()
                ));
            }
            Ok(false) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(e) => {
                kill_group(pgid);
                let _ = child.wait();
                return Err(format!("cannot wait for it: {e}"));
            }
        }
    };
    let stdout = out.and_then(|h| h.join().ok()).unwrap_or_default();
    let stderr = err.and_then(|h| h.join().ok()).unwrap_or_default();
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

fn reader<R: Read + Send + 'static>(mut r: R) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let _ = (&mut r).take(MAX_OUTPUT as u64).read_to_end(&mut kept);
        let _ = std::io::copy(&mut r, &mut std::io::sink());
        kept
    })
}

/// Whether the child has exited, without reaping it (`waitid` with `WNOWAIT`).
fn exited_unreaped(pid: i32) -> std::io::Result<bool> {
    // SAFETY: an all-zero siginfo_t is a valid value; waitid only writes into it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid, writable siginfo_t for the duration of the call.
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: waitid filled `info` (si_pid stays 0 when the child has not exited).
    Ok(unsafe { info.si_pid() } != 0)
}

fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory is touched.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
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

    #[test]
    fn runs_fails_and_times_out() {
        let dir = tempfile::tempdir().expect("tmp");
        let ok = dir.path().join("ok.sh");
        std::fs::write(&ok, "echo '{\"recommended_kb\": 9000}'\n").expect("write");
        let out = run(&ok, dir.path(), Duration::from_secs(5)).expect("runs");
        assert_eq!(parse(&out).expect("json").recommended_kb, Some(9000));

        let fail = dir.path().join("fail.sh");
        std::fs::write(&fail, "echo 'nvidia-smi: not found' >&2\nexit 3\n").expect("write");
        let err = run(&fail, dir.path(), Duration::from_secs(5)).expect_err("fails");
        assert!(
            err.contains("status 3") && err.contains("nvidia-smi"),
            "{err}"
        );

        // A child left running in the background must not keep the runner waiting.
        let bg = dir.path().join("bg.sh");
        std::fs::write(&bg, "sleep 30 &\necho '{\"recommended_kb\": 7000}'\n").expect("write");
        let start = Instant::now();
        let out = run(&bg, dir.path(), Duration::from_secs(20)).expect("runs");
        assert_eq!(parse(&out).expect("json").recommended_kb, Some(7000));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );

        let slow = dir.path().join("slow.sh");
        std::fs::write(&slow, "sleep 30\necho '{}'\n").expect("write");
        let start = Instant::now();
        let err = run(&slow, dir.path(), Duration::from_millis(300)).expect_err("times out");
        assert!(err.contains("timed out"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(5));
    }
}
