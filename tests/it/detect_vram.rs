//! `automaton detect-vram` driven through the real binary: each step of the chain, each
//! fallback, the cache and the model detection. HOME and AUTOMATON_HOME point at temp folders,
//! so the real `~` is never read.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::Value;

use crate::harness::{PATIENCE, Project};

const SEED_KEYS: &[&str] = &[
    "gpu_vram_gb",
    "ram_gb",
    "model_context_kb",
    "framework_overhead_tokens",
    "recommended_kb",
    "recommended_k",
    "headroom",
    "max_peak_context_kb",
];

/// A project for `detect-vram` runs, on the shared harness.
struct World(Project);

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
    json: Option<Value>,
}

impl Out {
    fn json(&self) -> Value {
        self.json
            .clone()
            .unwrap_or_else(|| panic!("stdout is not JSON:\n{}", self.stdout))
    }
}

impl World {
    fn new() -> World {
        World(Project::new())
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        self.0.write(rel, text);
        self.0.join(rel)
    }

    fn write_home(&self, rel: &str, text: &str) {
        self.0.write_home(rel, text);
    }

    /// A project script that records each run in `runs.log`, then runs `body`.
    fn script(&self, body: &str) {
        let log = self.0.join("runs.log");
        self.write(
            ".automaton/scripts/vram_detect.sh",
            &format!("echo run >> '{}'\n{body}\n", log.display()),
        );
    }

    fn script_runs(&self) -> usize {
        std::fs::read_to_string(self.0.join("runs.log"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    fn cache_path(&self) -> PathBuf {
        self.0.join(".automaton/.vram_cache.json")
    }

    /// `detect-vram ARGS` with `env`; the test checks status and output itself.
    fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Out {
        let mut t = self
            .0
            .test()
            .arg("detect-vram")
            .args(args)
            .status_any()
            .stdout_any()
            .stderr_any();
        for (k, v) in env {
            t = t.env(k, v);
        }
        let ran = t.run();
        Out {
            code: ran.code.unwrap_or(-1),
            json: serde_json::from_str(&ran.raw_stdout).ok(),
            stdout: ran.stdout.clone(),
            stderr: ran.stderr.clone(),
        }
    }

    fn run(&self, args: &[&str]) -> Out {
        self.run_env(args, &[])
    }
}

fn assert_seed_keys(v: &Value) {
    for k in SEED_KEYS {
        assert!(v.get(*k).is_some(), "key {k} missing in {v}");
    }
    let rec = v["recommended_kb"].as_u64().expect("recommended_kb");
    assert_eq!(v["recommended_k"].as_u64(), Some(rec / 1000));
    let h = v["headroom"].as_f64().expect("headroom");
    assert_eq!(
        v["max_peak_context_kb"].as_u64(),
        Some((rec as f64 * (1.0 - h) + 1e-6).floor() as u64)
    );
}

#[test]
fn no_gpu_falls_back_to_defaults_with_real_ram() {
    let w = World::new();
    let out = w.run(&[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = out.json();
    assert_seed_keys(&v);
    assert!(v["gpu_vram_gb"].is_null(), "{v}");
    assert!(v["ram_gb"].as_f64().is_some_and(|r| r > 0.0), "{v}");
    assert_eq!(v["recommended_kb"], 8000);
    assert_eq!(v["max_peak_context_kb"], 6000);
    assert_eq!(v["headroom"], 0.25);
    assert_eq!(v["model_context_kb"], 128_000);
    assert_eq!(v["framework_overhead_tokens"], 4000);
    assert_eq!(v["source"], "default");
    assert!(v["gpu_reason"].is_string());
    // A missing script is a one-line warning, not an error.
    assert!(out.stderr.contains("vram_detect.sh"), "{}", out.stderr);
    assert!(w.cache_path().is_file());
}

#[test]
fn a_project_script_answers() {
    let w = World::new();
    w.script(
        r#"cat <<'EOF'
{"gpu_vram_gb": 8, "ram_gb": 16, "model_context_kb": 128000,
 "framework_overhead_tokens": 4000, "recommended_kb": 16000, "recommended_k": 16,
 "headroom": 0.25, "max_peak_context_kb": 12000}
EOF"#,
    );
    let out = w.run(&[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = out.json();
    assert_seed_keys(&v);
    assert_eq!(v["source"], "script");
    assert_eq!(v["gpu_vram_gb"], 8);
    assert_eq!(v["ram_gb"], 16);
    assert_eq!(v["recommended_kb"], 16_000);
    assert_eq!(v["recommended_k"], 16);
    assert_eq!(v["max_peak_context_kb"], 12_000);
    assert_eq!(out.stderr, "", "no warning expected");
    assert_eq!(w.script_runs(), 1);
}

#[test]
fn the_home_script_is_used_when_the_project_has_none() {
    let w = World::new();
    w.write_home(
        ".automaton/scripts/vram_detect.sh",
        "echo '{\"recommended_kb\": 30000, \"headroom\": 0.2}'",
    );
    let v = w.run(&[]).json();
    assert_eq!(v["source"], "script");
    assert_eq!(v["recommended_kb"], 30_000);
    assert_eq!(v["max_peak_context_kb"], 24_000);
}

fn assert_falls_through(w: &World, env: &[(&str, &str)], needle: &str) {
    let out = w.run_env(&["--refresh"], env);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = out.json();
    assert_seed_keys(&v);
    assert_ne!(v["source"], "script", "{v}");
    assert_eq!(v["recommended_kb"], 8000, "{v}");
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("vram_detect.sh"))
        .collect();
    assert_eq!(lines.len(), 1, "one warning line expected: {}", out.stderr);
    assert!(lines[0].starts_with("warning: "), "{}", lines[0]);
    assert!(lines[0].contains(needle), "{needle:?} not in {}", lines[0]);
}

#[test]
fn a_failing_script_falls_through() {
    let w = World::new();
    w.script("echo 'nvidia-smi: command not found' >&2\nexit 7");
    assert_falls_through(&w, &[], "exited with status 7");
}

#[test]
fn a_script_printing_bad_json_falls_through() {
    let w = World::new();
    w.script("echo '{\"recommended_kb\": 160'");
    assert_falls_through(&w, &[], "not JSON");
    w.script("echo '{\"recommended_kb\": \"plenty\"}'");
    assert_falls_through(&w, &[], "not a number");
}

#[test]
fn a_slow_script_is_killed_and_falls_through() {
    let w = World::new();
    w.script("sleep 1000\necho '{\"recommended_kb\": 16000}'");
    let start = Instant::now();
    assert_falls_through(&w, &[("AUTOMATON_VRAM_SCRIPT_TIMEOUT", "0.5")], "timed out");
    // Far below the script's 1000 s: it was killed, not waited for.
    assert!(start.elapsed() < PATIENCE, "{:?}", start.elapsed());
}

#[test]
fn auto_detect_no_uses_the_manual_values() {
    let w = World::new();
    w.script("echo '{\"recommended_kb\": 50000}'");
    w.write(
        ".automaton/config.md",
        "# Config\n\n## VRAM Configuration\n- **Auto-detect**: No\n- **Target context**: 20k tokens\n\
         - **Headroom**: 10%\n- **Max peak context per sub-task**: 15k tokens\n",
    );
    let out = w.run(&[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = out.json();
    assert_eq!(v["source"], "config");
    assert_eq!(v["auto_detect"], false);
    assert_eq!(v["recommended_kb"], 20_000);
    assert_eq!(v["recommended_k"], 20);
    assert_eq!(v["headroom"], 0.1);
    assert_eq!(v["max_peak_context_kb"], 15_000);
    assert_eq!(
        w.script_runs(),
        0,
        "Auto-detect: No must not run the script"
    );
}

#[test]
fn home_config_applies_and_project_config_wins() {
    let w = World::new();
    w.write_home(
        ".automaton/config.md",
        "## VRAM Configuration\n- **Auto-detect**: No\n- **Target context**: 24k\n",
    );
    let v = w.run(&[]).json();
    assert_eq!(v["recommended_kb"], 24_000);
    assert_eq!(v["max_peak_context_kb"], 18_000);
    w.write(
        ".automaton/config.md",
        "## VRAM Configuration\n- **Target context**: 12k\n",
    );
    // The config changed, so the cache is stale without --refresh.
    let v = w.run(&[]).json();
    assert_eq!(v["recommended_kb"], 12_000);
    assert_eq!(v["cached"], false);
}

#[test]
fn a_bad_config_value_is_an_error_naming_file_and_line() {
    let w = World::new();
    w.write(
        ".automaton/config.md",
        "## VRAM Configuration\n\n- **Headroom**: most of it\n",
    );
    let out = w.run(&[]);
    assert_eq!(out.code, 1);
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.contains("config.md:3") && out.stderr.contains("Headroom"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_cache_is_reused_and_refresh_ignores_it() {
    let w = World::new();
    w.script("echo '{\"recommended_kb\": 16000, \"gpu_vram_gb\": 8}'");
    let first = w.run(&[]).json();
    assert_eq!(first["cached"], false);
    assert_eq!(w.script_runs(), 1);
    let second = w.run(&[]);
    assert_eq!(second.code, 0);
    let second = second.json();
    assert_eq!(second["cached"], true);
    assert_eq!(second["recommended_kb"], 16_000);
    assert_eq!(w.script_runs(), 1, "the cached call ran the script again");
    let third = w.run(&["--refresh"]).json();
    assert_eq!(third["cached"], false);
    assert_eq!(w.script_runs(), 2);
    // The cache file itself has the seed's keys at the top level.
    let cache: Value =
        serde_json::from_str(&std::fs::read_to_string(w.cache_path()).expect("cache"))
            .expect("json");
    assert_seed_keys(&cache);
    assert_eq!(cache["recommended_kb"], 16_000);
}

#[test]
fn corrupt_truncated_and_wrong_typed_caches_are_replaced() {
    let w = World::new();
    w.script("echo '{\"recommended_kb\": 16000}'");
    w.run(&[]);
    let good = std::fs::read_to_string(w.cache_path()).expect("cache");
    let bad_ones = [
        ("truncated", good[..good.len() / 3].to_string()),
        ("garbage", "\u{0}\u{1}not json at all".to_string()),
        ("empty", String::new()),
        (
            "wrong type",
            good.replace("\"recommended_kb\": 16000", "\"recommended_kb\": [16000]"),
        ),
        (
            "out of range",
            good.replace("\"headroom\": 0.25", "\"headroom\": -3"),
        ),
    ];
    for (what, bad) in bad_ones {
        assert_ne!(bad, good, "{what}");
        std::fs::write(w.cache_path(), &bad).expect("write");
        let runs = w.script_runs();
        let out = w.run(&[]);
        assert_eq!(out.code, 0, "{what}: {}", out.stderr);
        let v = out.json();
        assert_eq!(v["recommended_kb"], 16_000, "{what}");
        assert_eq!(v["cached"], false, "{what}");
        assert!(
            out.stderr.contains(".vram_cache.json") && out.stderr.contains("rewriting"),
            "{what}: {}",
            out.stderr
        );
        assert_eq!(w.script_runs(), runs + 1, "{what}: not probed again");
        let rewritten: Value =
            serde_json::from_str(&std::fs::read_to_string(w.cache_path()).expect("cache"))
                .unwrap_or_else(|e| panic!("{what}: cache not rewritten: {e}"));
        assert_eq!(rewritten["recommended_kb"], 16_000, "{what}");
    }
}

#[test]
fn a_folder_in_place_of_the_cache_does_not_fail_the_command() {
    let w = World::new();
    std::fs::create_dir_all(w.cache_path()).expect("mkdir");
    let out = w.run(&[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["recommended_kb"], 8000);
    assert!(out.stderr.contains(".vram_cache.json"), "{}", out.stderr);
}

#[test]
fn the_model_from_config_md() {
    let w = World::new();
    w.write(
        ".automaton/config.md",
        "## Model Configuration\n- **Model**: gpt-4o  # explicit\n- **Override context window**: auto\n",
    );
    let v = w.run(&[]).json();
    assert_eq!(v["model"], "gpt-4o");
    assert_eq!(v["model_context_kb"], 128_000);
    assert_eq!(v["source"], "model");
    assert_eq!(v["recommended_kb"], 16_000); // 128k / 8
    assert_eq!(v["max_peak_context_kb"], 12_000);
    assert!(
        v["model_source"]
            .as_str()
            .is_some_and(|s| s.ends_with("config.md:2")),
        "{v}"
    );
    // Plain gpt-4 is 8,192, not the seed's 128k.
    w.write(
        ".automaton/config.md",
        "## Model Configuration\n- **Model**: gpt-4\n",
    );
    let v = w.run(&[]).json();
    assert_eq!(v["model_context_kb"], 8192);
    assert_eq!(v["recommended_kb"], 4000);
    // An override window wins over the table.
    w.write(
        ".automaton/config.md",
        "## Model Configuration\n- **Model**: gpt-4\n- **Override context window**: 200k\n",
    );
    let v = w.run(&[]).json();
    assert_eq!(v["model_context_kb"], 200_000);
    assert_eq!(v["recommended_kb"], 25_000);
}

#[test]
fn the_model_from_agent_md_and_the_environment() {
    let w = World::new();
    let v = w
        .run_env(&[], &[("ANTHROPIC_MODEL", "claude-opus-4-6")])
        .json();
    assert_eq!(v["model"], "claude-opus-4-6");
    assert_eq!(v["model_source"], "env ANTHROPIC_MODEL");
    assert_eq!(v["model_context_kb"], 1_000_000);
    assert_eq!(v["recommended_kb"], 64_000);
    w.write(".automaton/.agent.md", "## Agent\n- **Model**: qwen3:8b\n");
    let v = w
        .run_env(&[], &[("ANTHROPIC_MODEL", "claude-opus-4-6")])
        .json();
    assert_eq!(v["model"], "qwen3:8b");
    assert_eq!(v["model_hosted"], false);
    assert_eq!(v["model_context_kb"], 32_768);
    assert_eq!(v["recommended_kb"], 8000); // local, no GPU
}

#[test]
fn the_model_from_claude_settings_with_an_api_key_is_never_printed() {
    let w = World::new();
    let secret = "sk-ant-api03-DO-NOT-PRINT-0123456789abcdefghij";
    w.write_home(
        ".claude/settings.json",
        &format!(
            "{{\n  \"env\": {{\n    \"ANTHROPIC_API_KEY\": \"{secret}\"\n  }},\n  \"model\": \"claude-sonnet-4-5-20250929\"\n}}\n"
        ),
    );
    for args in [&[][..], &["--human"][..]] {
        let out = w.run_env(args, &[]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(!out.stdout.contains("DO-NOT-PRINT"), "{}", out.stdout);
        assert!(!out.stderr.contains("DO-NOT-PRINT"), "{}", out.stderr);
    }
    let out = w.run(&["--refresh"]);
    let v = out.json();
    assert_eq!(v["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(v["model_context_kb"], 200_000);
    assert_eq!(v["recommended_kb"], 25_000);
    assert!(
        v["model_source"]
            .as_str()
            .is_some_and(|s| s.contains(".claude/settings.json:5")),
        "{v}"
    );
    let warn: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("API key"))
        .collect();
    assert_eq!(warn.len(), 1, "{}", out.stderr);
    assert!(warn[0].contains(".claude/settings.json"), "{}", warn[0]);
    let cache = std::fs::read_to_string(w.cache_path()).expect("cache");
    assert!(!cache.contains("DO-NOT-PRINT"));
}

#[test]
fn the_model_from_codex_config_and_dotenv() {
    let w = World::new();
    w.write_home(
        ".codex/config.toml",
        "model = \"gpt-5-codex\"\nmodel_context_window = 400000\n",
    );
    let v = w.run(&[]).json();
    assert_eq!(v["model"], "gpt-5-codex");
    assert_eq!(v["model_context_kb"], 400_000);
    assert_eq!(v["recommended_kb"], 50_000);
    w.write(
        ".env",
        "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx\nOPENAI_MODEL=gpt-4.1\n",
    );
    let out = w.run(&["--refresh"]);
    let v = out.json();
    assert_eq!(v["model"], "gpt-4.1");
    assert!(
        out.stderr.contains(".env holds what looks like an API key"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("sk-proj"), "{}", out.stderr);
    assert!(!out.stdout.contains("sk-proj"), "{}", out.stdout);
}

#[test]
fn human_output_is_the_seed_block() {
    let w = World::new();
    w.script("echo '{\"gpu_vram_gb\": 8, \"ram_gb\": 16, \"recommended_kb\": 16000, \"headroom\": 0.25}'");
    for (args, using) in [
        (&["--human"][..], "auto-detected"),
        (&["--format", "text"][..], "cached; --refresh probes again"),
    ] {
        let out = w.run(args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let t = &out.stdout;
        assert_eq!(
            t,
            &format!(
                "VRAM Detection Results:\n- GPU VRAM: 8GB (detection script)\n- RAM: 16GB\n\
                 - Model context window: 128k (model not detected; window from default)\n\
                 - Framework overhead: ~4k tokens\n\
                 - **Recommended: 16k tokens** (detection script, 25% headroom)\n\
                 - **Max peak context per sub-task: 12000 tokens** (target less headroom)\n\
                 - **Using: 16k tokens** ({using})\n\n\
                 How the budgets relate:\n\
                 - The model context window is the most the model takes in one request; the \
                 framework's own prompt (~4k tokens) comes out of it.\n\
                 - Recommended is what each sub-task is planned for: at most the window less \
                 that overhead, less where the GPU's memory (a local model) or a share of a \
                 hosted model's window limits it.\n\
                 - Max peak is the most one sub-task may need at its peak (a DECOMPOSITION.md \
                 row whose `Estimated peak context` is above it is sent back to be split); here \
                 the recommended budget less the 25% headroom kept free (16k x 75% = 12000).\n"
            )
        );
        assert!(t.starts_with("VRAM Detection Results:\n"), "{t}");
        assert!(t.contains("- GPU VRAM: 8GB"), "{t}");
        assert!(t.contains("- RAM: 16GB"), "{t}");
        assert!(t.contains("- Model context window: 128k"), "{t}");
        assert!(t.contains("- Framework overhead: ~4k tokens"), "{t}");
        assert!(t.contains("- **Recommended: 16k tokens**"), "{t}");
        assert!(t.contains("25% headroom"), "{t}");
        assert!(t.contains("- **Using: 16k tokens**"), "{t}");
        assert!(serde_json::from_str::<Value>(t).is_err());
    }
}

#[test]
fn the_scripts_peak_is_the_per_sub_task_limit_even_above_its_target() {
    let w = World::new();
    w.script("echo '{\"recommended_kb\": 12000, \"max_peak_context_kb\": 30000}'");
    let v = w.run(&["--refresh"]).json();
    assert_eq!(v["recommended_kb"], 12_000);
    assert_eq!(v["max_peak_context_kb"], 30_000);
    assert_eq!(v["max_peak_source"], "detection script");
    let human = w.run(&["--human"]).stdout;
    assert!(
        human.contains("- **Max peak context per sub-task: 30000 tokens** (detection script)\n"),
        "{human}"
    );
}

#[test]
fn stdout_holds_only_json() {
    let w = World::new();
    w.script("echo 'noise on stderr' >&2\necho '{\"recommended_kb\": 16000}'");
    let out = w.run(&[]);
    let v = out.json();
    assert_eq!(v["recommended_kb"], 16_000);
    assert!(!out.stdout.contains("noise"));
}
