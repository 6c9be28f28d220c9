//! VRAM, RAM and model-context detection ("VRAM Detection", "Model Context
//! Window Detection", "VRAM Config Propagation").
//!
//! The chain, first that answers wins (recorded as [`Source`]):
//! 1. the layered `scripts/vram_detect.sh` (only with `Auto-detect: Yes`);
//! 2. the built-in probe: a known hosted model's window ([`Source::Model`]), else NVML GPUs
//!    ([`Source::Nvml`]); host RAM through sysinfo is always reported;
//! 3. config.md's `## VRAM Configuration` values (always with `Auto-detect: No`);
//! 4. the defaults: 8,000 tokens, 25% headroom, a 128,000-token window.
//!
//! Before the chain, when a model endpoint is known ([`engine::find_endpoint`]), the running
//! engine is asked for the window it serves the model with; that window then wins over the
//! model table (it is the one the model actually sees).
//!
//! [`detect`] never fails: every problem becomes a line in [`VramReport::warnings`].
//! The result is cached in `.automaton/.vram_cache.json` ([`invalidate_cache`] drops it).

pub mod budget;
pub mod engine;
pub mod model;
pub mod probe;
mod render;
pub mod script;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::settings::{Key, Settings};
use crate::store::vram_cache as cache;
pub use crate::store::vram_cache::{GpuReport, Source, VramReport};
use budget::BudgetInput;
use model::{ModelEnv, ModelInfo};
pub use probe::Probe;
pub use render::{fmt_k, render_budgets_explained, render_human, render_vram_config_md};

/// Everything detection reads from outside the settings, injectable for tests.
pub struct DetectEnv<'a> {
    /// The user's home (`$HOME`), for `~/.claude/settings.json` and `~/.codex/config.toml`.
    pub user_home: Option<PathBuf>,
    /// The environment (`ANTHROPIC_MODEL`, ...).
    pub var: &'a dyn Fn(&str) -> Option<String>,
    pub probe: &'a dyn Probe,
    pub script_timeout: Duration,
}

/// How a detection uses `.automaton/.vram_cache.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cache {
    /// Answer from a current cache, else detect and rewrite it.
    Use,
    /// Detect, and rewrite it (`--refresh`).
    Refresh,
    /// Detect, and write nothing: a folder that is no project keeps no cache (making
    /// `.automaton/` there would make it a project that `orchestrate` then finds).
    Off,
}

/// Detect with the real machine, environment and home folder. Never fails.
pub fn detect(settings: &Settings, refresh: bool) -> VramReport {
    let cache = if refresh { Cache::Refresh } else { Cache::Use };
    detect_using(settings, cache)
}

/// [`detect`], with the cache used as `cache` says.
pub fn detect_using(settings: &Settings, cache: Cache) -> VramReport {
    let var = |k: &str| std::env::var(k).ok();
    let env = DetectEnv {
        user_home: std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from),
        var: &var,
        probe: &probe::SystemProbe,
        script_timeout: settings.duration(Key::VramScriptTimeout),
    };
    detect_with(settings, cache, &env)
}

/// The cached detection for these settings, if one is there and current: read only, nothing
/// probed and nothing written (for `orchestrate --dry-run`).
pub fn cached(settings: &Settings) -> Option<VramReport> {
    let var = |k: &str| std::env::var(k).ok();
    let env = DetectEnv {
        user_home: std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from),
        var: &var,
        probe: &probe::SystemProbe,
        script_timeout: settings.duration(Key::VramScriptTimeout),
    };
    match cache::load(&settings.project, &cache_key(settings, &env)) {
        cache::Loaded::Hit(r) => Some(*r),
        cache::Loaded::Miss | cache::Loaded::Corrupt(_) => None,
    }
}

/// Detect with injected inputs: a current cache ([`Cache::Use`]), else the chain, then the
/// cache is rewritten (not with [`Cache::Off`]). Never fails.
pub fn detect_with(settings: &Settings, cache_use: Cache, env: &DetectEnv<'_>) -> VramReport {
    let key = cache_key(settings, env);
    let mut cache_warnings = Vec::new();
    // The engine is asked every time (a second at most when it is down): a cache must not
    // hide an engine restarted with another window.
    let probed = endpoint(settings, env).map(|e| {
        let answer = engine::probe(&e);
        (e, answer)
    });
    if cache_use == Cache::Use {
        match cache::load(&settings.project, &key) {
            cache::Loaded::Hit(mut r)
                if same_engine(probed.as_ref().map(|p| &p.1), r.engine.as_ref()) =>
            {
                r.cached = true;
                return *r;
            }
            cache::Loaded::Hit(_) => {}
            cache::Loaded::Miss => {}
            cache::Loaded::Corrupt(why) => cache_warnings.push(format!(
                "{}: {why}; probing again and rewriting it",
                cache::path(&settings.project).display()
            )),
        }
    }
    let mut report = compute(settings, env, probed.as_ref());
    if cache_use != Cache::Off
        && let Err(e) = cache::store(&settings.project, &key, &report)
    {
        // The error names the file.
        cache_warnings.push(e.to_string());
    }
    cache_warnings.append(&mut report.warnings);
    report.warnings = cache_warnings;
    report
}

/// The model endpoint to ask, if config.md, the agent command or `OLLAMA_HOST` names one.
fn endpoint(settings: &Settings, env: &DetectEnv<'_>) -> Option<engine::Endpoint> {
    engine::find_endpoint(
        settings.text(Key::ModelEndpoint),
        settings.text(Key::AgentCommand),
        (env.var)("OLLAMA_HOST").as_deref(),
    )
}

/// The model endpoint named by the settings, the agent command or `OLLAMA_HOST`, if any.
pub fn engine_endpoint(settings: &Settings) -> Option<engine::Endpoint> {
    engine::find_endpoint(
        settings.text(Key::ModelEndpoint),
        settings.text(Key::AgentCommand),
        std::env::var("OLLAMA_HOST").ok().as_deref(),
    )
}

/// Whether the engine answers as it did when the cache was written.
fn same_engine(probed: Option<&engine::Probed>, cached: Option<&cache::EngineReport>) -> bool {
    match (probed, cached) {
        (None, None) | (Some(engine::Probed::Failed(_)), None) => true,
        (Some(engine::Probed::Found(now)), Some(then)) => now.answer_hash == then.answer_hash,
        _ => false,
    }
}

/// Remove `<project>/.automaton/.vram_cache.json` (a missing cache is fine). Call it when a
/// task is created or a decomposition runs.
pub fn invalidate_cache(project: &Path) -> std::io::Result<()> {
    cache::invalidate(project)
}

/// The inputs a cached report depends on, so a changed config.md, script or model variable
/// makes the cache stale. Cheap: no probing, only settings already loaded and two `stat`s.
fn cache_key(settings: &Settings, env: &DetectEnv<'_>) -> String {
    let raw = |key: Key| settings.get(key).raw.clone();
    let script = match settings.find_file("scripts/vram_detect.sh") {
        Some((p, _)) => {
            let mtime = std::fs::metadata(&p)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{}@{mtime}", p.display())
        }
        None => "none".to_string(),
    };
    let vars: Vec<String> = model::MODEL_VARS
        .iter()
        .map(|v| (env.var)(v).unwrap_or_default())
        .collect();
    format!(
        "v{}|auto={}|target={}|headroom={}|max_peak={}|model={}|window={}|agent_model={}|reported={}|script={}|vars={}|home={}|endpoint={}",
        cache::FORMAT_VERSION,
        raw(Key::AutoDetect),
        raw(Key::TargetContext),
        raw(Key::Headroom),
        raw(Key::MaxPeak),
        raw(Key::ModelName),
        raw(Key::ContextWindow),
        raw(Key::AgentModel),
        crate::store::journal::read_agent_model(&settings.project)
            .map(|m| format!("{}@{:?}", m.model, m.context_window))
            .unwrap_or_default(),
        script,
        vars.join(","),
        env.user_home
            .as_deref()
            .map_or(String::new(), |h| h.display().to_string()),
        endpoint(settings, env).map_or(String::new(), |e| e.url),
    )
}

/// Run the chain.
fn compute(
    settings: &Settings,
    env: &DetectEnv<'_>,
    probed: Option<&(engine::Endpoint, engine::Probed)>,
) -> VramReport {
    let mut warnings = Vec::new();
    let auto = settings.bool(Key::AutoDetect);
    let headroom_cfg = settings.ratio(Key::Headroom);
    let mut model = model::detect_model(
        settings,
        &ModelEnv {
            user_home: env.user_home.clone(),
            var: env.var,
        },
    );
    warnings.extend(model.warnings.iter().cloned());
    let engine = apply_engine(probed, &mut model, &mut warnings);

    if auto {
        match settings.find_file("scripts/vram_detect.sh") {
            None => warnings.push(
                "no scripts/vram_detect.sh in the project's .automaton/ or the home folder; \
                 using the built-in probe"
                    .to_string(),
            ),
            Some((path, _)) => {
                match script::run(
                    &path,
                    &settings.project,
                    env.script_timeout,
                    settings.duration(Key::KillGrace),
                )
                .and_then(|out| script::parse(&out))
                {
                    Ok(out) => {
                        let mut r = from_script(&out, &model, headroom_cfg, env, warnings);
                        r.engine = engine;
                        return r;
                    }
                    Err(why) => warnings.push(format!(
                        "{}: {why}; falling back to the built-in probe",
                        path.display()
                    )),
                }
            }
        }
    }

    let found = probe::run_probe(env.probe, &mut warnings);
    let input = BudgetInput {
        vram_gib: found.vram_gib,
        window: model.window,
        overhead: budget::DEFAULT_OVERHEAD,
        hosted: model.hosted,
    };
    warnings.extend(window_warning(&input, engine.as_ref()));
    let rule = budget::recommended(&input);
    let target_cfg = settings.tokens(Key::TargetContext);
    let (source, recommended, manual) = if !auto {
        (Source::Config, target_cfg.unwrap_or(rule), true)
    } else if model.hosted {
        (Source::Model, rule, false)
    } else if found.vram_gib.is_some() {
        (Source::Nvml, rule, false)
    } else if let Some(t) = target_cfg {
        (Source::Config, t, true)
    } else {
        (Source::Default, rule, false)
    };
    let (max_peak, max_peak_source) =
        max_peak_of(settings, recommended, headroom_cfg, manual, &mut warnings);
    VramReport {
        gpu_vram_gb: found.vram_gib.map(|g| g as f64),
        ram_gb: found.ram_gb,
        model_context_kb: model.window,
        framework_overhead_tokens: budget::DEFAULT_OVERHEAD,
        recommended_kb: recommended,
        recommended_k: recommended / 1000,
        headroom: headroom_cfg,
        max_peak_context_kb: max_peak,
        max_peak_source: max_peak_source.to_string(),
        source,
        auto_detect: auto,
        model: model.name.clone(),
        model_source: model.name_source.clone(),
        model_context_source: model.window_source.clone(),
        model_hosted: model.hosted,
        gpus: found.gpus,
        engine,
        gpu_reason: found.no_gpu_reason,
        format_version: cache::FORMAT_VERSION,
        cached: false,
        warnings,
    }
}

/// The warning for a model window too small to leave the smallest budget once the framework's
/// overhead is taken, with the engine's way to raise it.
fn window_warning(input: &BudgetInput, engine: Option<&cache::EngineReport>) -> Option<String> {
    if !budget::window_too_small(input) {
        return None;
    }
    let how = engine.map_or(
        "raise the window (e.g. OLLAMA_CONTEXT_LENGTH or num_ctx)",
        |e| engine::how_to_raise(&e.name),
    );
    Some(format!(
        "the model's window ({} tokens) minus the framework overhead ({}) is below {}; {how}, \
         to at least {}",
        input.window,
        input.overhead,
        budget::MIN_TOKENS,
        budget::MIN_TOKENS + input.overhead
    ))
}

/// The max peak context and where it comes from: config.md's `Max peak context` when the
/// target is set by hand and the peak fits under it, else the target less the headroom.
fn max_peak_of(
    settings: &Settings,
    recommended: u64,
    headroom: f64,
    manual: bool,
    warnings: &mut Vec<String>,
) -> (u64, &'static str) {
    let derived = budget::max_peak(recommended, headroom);
    match settings.tokens(Key::MaxPeak).filter(|_| manual) {
        Some(p) if p > recommended => {
            warnings.push(format!(
                "{}: Max peak context ({p}) is above the target context ({recommended}); \
                 using {derived}",
                settings.get(Key::MaxPeak).origin
            ));
            (derived, cache::PEAK_FROM_HEADROOM)
        }
        Some(p) => (p, "config.md"),
        None => (derived, cache::PEAK_FROM_HEADROOM),
    }
}

/// The engine's configured window, when it gave one, replaces the model's: it is the one the
/// model is served with. A failed probe becomes a warning and changes nothing.
fn apply_engine(
    probed: Option<&(engine::Endpoint, engine::Probed)>,
    model: &mut ModelInfo,
    warnings: &mut Vec<String>,
) -> Option<cache::EngineReport> {
    let (endpoint, answer) = probed?;
    // `OLLAMA_HOST` is only a hint: it says where Ollama would be, not that the agent uses it,
    // so it never overrides the window of a hosted model (Claude, GPT, Gemini).
    if model.hosted && endpoint.from == engine::FROM_OLLAMA_HOST {
        return None;
    }
    let found = match answer {
        engine::Probed::Found(e) => e.clone(),
        engine::Probed::Failed(why) => {
            warnings.push(why.clone());
            return None;
        }
    };
    let at = format!("{} at {}", found.name, found.url);
    match found.context_tokens {
        Some(ctx) => {
            model.window = ctx;
            model.window_known = true;
            model.window_source = format!("engine ({at})");
            // A model served on this machine is not a hosted one, whatever its name.
            model.hosted = false;
        }
        None => warnings.push(format!(
            "{at} answered but reported no loaded model's window; using the model's window"
        )),
    }
    if model.name.is_none()
        && let Some(m) = &found.model
    {
        model.name = Some(m.clone());
        model.name_source = format!("engine ({at})");
    }
    Some(found)
}

/// The script answered: its values win; what it left out is filled in.
fn from_script(
    out: &script::ScriptOutput,
    model: &ModelInfo,
    headroom_cfg: f64,
    env: &DetectEnv<'_>,
    warnings: Vec<String>,
) -> VramReport {
    let window = out.model_context_kb.unwrap_or(model.window);
    let overhead = out
        .framework_overhead_tokens
        .unwrap_or(budget::DEFAULT_OVERHEAD);
    let recommended = out.recommended_kb.unwrap_or_else(|| {
        budget::recommended(&BudgetInput {
            vram_gib: out.gpu_vram_gb.map(|g| g.round() as u64),
            window,
            overhead,
            hosted: model.hosted,
        })
    });
    let headroom = out.headroom.unwrap_or(headroom_cfg);
    // The script's own per-sub-task peak is the limit, even above its recommended target: a
    // script that knows its engine may say a sub-task can use more than the planning target.
    let (max_peak, max_peak_source) = match out.max_peak_context_kb {
        Some(p) => (p, "detection script"),
        None => (
            budget::max_peak(recommended, headroom),
            cache::PEAK_FROM_HEADROOM,
        ),
    };
    let ram_gb = out.ram_gb.or_else(|| {
        env.probe
            .host_memory()
            .map(|m| probe::round_to(m.total_bytes as f64 / probe::GIB, 1))
    });
    VramReport {
        gpu_vram_gb: out.gpu_vram_gb,
        ram_gb,
        model_context_kb: window,
        framework_overhead_tokens: overhead,
        recommended_kb: recommended,
        recommended_k: recommended / 1000,
        headroom,
        max_peak_context_kb: max_peak,
        max_peak_source: max_peak_source.to_string(),
        source: Source::Script,
        auto_detect: true,
        model: model.name.clone(),
        model_source: model.name_source.clone(),
        model_context_source: if out.model_context_kb.is_some() {
            "script".to_string()
        } else {
            model.window_source.clone()
        },
        model_hosted: model.hosted,
        gpus: Vec::new(),
        engine: None,
        gpu_reason: out
            .gpu_vram_gb
            .is_none()
            .then(|| "the detection script reported no GPU".to_string()),
        format_version: cache::FORMAT_VERSION,
        cached: false,
        warnings,
    }
}

/// Whether a sub-task's estimated peak context fits: `estimated <= max_peak_context_kb`.
pub fn fits(report: &VramReport, estimated_peak_tokens: u64) -> bool {
    estimated_peak_tokens <= report.max_peak_context_kb
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::vram_cache::tests::sample_report;
    use probe::{FakeProbe, Gpu};

    #[test]
    fn the_script_timeout_is_the_registry_setting() {
        let spec = Key::VramScriptTimeout.spec();
        assert_eq!(spec.env, Some(script::TIMEOUT_VAR));
        assert_eq!(
            crate::settings::value::parse_seconds(spec.default),
            Ok(script::DEFAULT_TIMEOUT)
        );
    }

    fn gib_gpu(index: u32, gib: u64) -> Gpu {
        Gpu {
            index,
            name: format!("Fake {index}"),
            total_bytes: (gib << 30) - (4 << 20),
            free_bytes: gib << 29,
        }
    }

    fn run(project: &Path, probe: &FakeProbe, refresh: bool) -> VramReport {
        let settings = Settings::load_with(project, None, &|_| None).expect("settings");
        let no_env = |_: &str| None;
        let env = DetectEnv {
            user_home: None,
            var: &no_env,
            probe,
            script_timeout: Duration::from_secs(5),
        };
        let cache = if refresh { Cache::Refresh } else { Cache::Use };
        detect_with(&settings, cache, &env)
    }

    #[test]
    fn seed_example_through_the_fake_probe() {
        let dir = tempfile::tempdir().expect("tmp");
        let probe = FakeProbe {
            gpus: Ok(vec![gib_gpu(0, 8)]),
            ram_bytes: 16 << 30,
        };
        let r = run(dir.path(), &probe, false);
        assert_eq!(r.source, Source::Nvml);
        assert_eq!(r.gpu_vram_gb, Some(8.0));
        assert_eq!(r.ram_gb, Some(16.0));
        assert_eq!(r.model_context_kb, 128_000);
        assert_eq!(r.framework_overhead_tokens, 4000);
        assert_eq!(r.recommended_kb, 16_000);
        assert_eq!(r.recommended_k, 16);
        assert_eq!(r.headroom, 0.25);
        assert_eq!(r.max_peak_context_kb, 12_000);
        // The second call comes from the cache even though the probe would now say otherwise.
        let other = FakeProbe {
            gpus: Ok(vec![]),
            ram_bytes: 1 << 30,
        };
        let again = run(dir.path(), &other, false);
        assert!(again.cached);
        assert_eq!(again.recommended_kb, 16_000);
        let fresh = run(dir.path(), &other, true);
        assert!(!fresh.cached);
        assert_eq!(fresh.recommended_kb, 8000);
        assert_eq!(fresh.source, Source::Default);
    }

    #[test]
    fn zero_one_several_gpus() {
        let cases: &[(Vec<Gpu>, Option<f64>, u64, Source)] = &[
            (vec![], None, 8000, Source::Default),
            (vec![gib_gpu(0, 12)], Some(12.0), 24_000, Source::Nvml),
            (
                vec![gib_gpu(0, 4), gib_gpu(1, 4), gib_gpu(2, 4)],
                Some(12.0),
                24_000,
                Source::Nvml,
            ),
            (
                vec![gib_gpu(0, 24), gib_gpu(1, 24)],
                Some(48.0),
                32_000,
                Source::Nvml,
            ),
        ];
        for (gpus, vram, rec, source) in cases {
            let dir = tempfile::tempdir().expect("tmp");
            let probe = FakeProbe {
                gpus: Ok(gpus.clone()),
                ram_bytes: 8 << 30,
            };
            let r = run(dir.path(), &probe, true);
            assert_eq!(r.gpu_vram_gb, *vram, "{gpus:?}");
            assert_eq!(r.recommended_kb, *rec, "{gpus:?}");
            assert_eq!(r.source, *source, "{gpus:?}");
            assert_eq!(r.gpus.len(), gpus.len());
        }
    }

    #[test]
    fn hosted_model_is_not_limited_by_vram() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join(".automaton")).expect("mkdir");
        std::fs::write(
            dir.path().join(".automaton/config.md"),
            "## Model Configuration\n- **Model**: claude-sonnet-4-5\n",
        )
        .expect("write");
        let probe = FakeProbe {
            gpus: Ok(vec![gib_gpu(0, 4)]),
            ram_bytes: 8 << 30,
        };
        let r = run(dir.path(), &probe, true);
        assert_eq!(r.source, Source::Model);
        assert_eq!(r.model_context_kb, 200_000);
        assert_eq!(r.recommended_kb, 25_000);
        assert_eq!(r.max_peak_context_kb, 18_750);
        assert_eq!(r.gpu_vram_gb, Some(4.0));
    }

    #[test]
    fn manual_values_win_with_auto_detect_no() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join(".automaton/scripts")).expect("mkdir");
        std::fs::write(
            dir.path().join(".automaton/scripts/vram_detect.sh"),
            "echo '{\"recommended_kb\": 50000}'\n",
        )
        .expect("write");
        std::fs::write(
            dir.path().join(".automaton/config.md"),
            "## VRAM Configuration\n- **Auto-detect**: No\n- **Target context**: 20k tokens\n\
             - **Headroom**: 10%\n- **Max peak context per sub-task**: 15k tokens\n",
        )
        .expect("write");
        let probe = FakeProbe {
            gpus: Ok(vec![gib_gpu(0, 8)]),
            ram_bytes: 8 << 30,
        };
        let r = run(dir.path(), &probe, true);
        assert_eq!(r.source, Source::Config);
        assert!(!r.auto_detect);
        assert_eq!(r.recommended_kb, 20_000);
        assert_eq!(r.headroom, 0.1);
        assert_eq!(r.max_peak_context_kb, 15_000);
        assert_eq!(r.gpu_vram_gb, Some(8.0)); // still reported
    }

    #[test]
    fn script_answers_and_fills_the_gaps() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join(".automaton/scripts")).expect("mkdir");
        std::fs::write(
            dir.path().join(".automaton/scripts/vram_detect.sh"),
            "echo '{\"gpu_vram_gb\": 12}'\n",
        )
        .expect("write");
        let probe = FakeProbe {
            gpus: Err("none".into()),
            ram_bytes: 8 << 30,
        };
        let r = run(dir.path(), &probe, true);
        assert_eq!(r.source, Source::Script);
        assert_eq!(r.recommended_kb, 24_000);
        assert_eq!(r.max_peak_context_kb, 18_000);
        assert_eq!(r.ram_gb, Some(8.0));
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn json_has_every_seed_key() {
        let mut r = sample_report();
        r.gpu_vram_gb = None;
        let v = serde_json::to_value(&r).expect("json");
        for k in [
            "gpu_vram_gb",
            "ram_gb",
            "model_context_kb",
            "framework_overhead_tokens",
            "recommended_kb",
            "recommended_k",
            "headroom",
            "max_peak_context_kb",
            "source",
            "gpus",
            "format_version",
        ] {
            assert!(v.get(k).is_some(), "{k} missing");
        }
        assert!(v["gpu_vram_gb"].is_null());
        assert_eq!(v["ram_gb"], 16);
        r.ram_gb = Some(15.6);
        assert_eq!(serde_json::to_value(&r).expect("json")["ram_gb"], 15.6);
    }

    #[test]
    fn vram_config_md_units() {
        let r = sample_report();
        let md = render_vram_config_md(&r, Some(10_000));
        assert!(md.starts_with("# VRAM Configuration for this sub-task\n"));
        for line in [
            "- **Auto-detect**: Yes\n",
            "- **Target VRAM context**: 16k tokens\n",
            "- **Headroom**: 25%\n",
            "- **Max peak context per sub-task**: 12000 tokens\n",
            "- **GPU VRAM detected**: 8GB\n",
            "- **RAM detected**: 16GB\n",
            "- **Model context window**: Unknown (128k tokens assumed)\n",
            "- **Framework overhead**: ~4000 tokens\n",
            "- **This sub-task's estimated peak context**: 10k tokens\n",
            "- **Fits within VRAM**: Yes\n",
        ] {
            assert!(md.contains(line), "missing {line:?} in\n{md}");
        }
        let mut no_gpu = r.clone();
        no_gpu.gpu_vram_gb = None;
        no_gpu.model_context_source = "model table".into();
        no_gpu.model_context_kb = 200_000;
        let md = render_vram_config_md(&no_gpu, Some(12_001));
        assert!(md.contains("- **GPU VRAM detected**: None\n"), "{md}");
        assert!(
            md.contains("- **Model context window**: 200k tokens\n"),
            "{md}"
        );
        assert!(md.contains("- **Fits within VRAM**: No\n"), "{md}");
        assert!(md.contains("estimated peak context**: 12k tokens"), "{md}");
        let md = render_vram_config_md(&r, None);
        assert!(md.contains("- **Fits within VRAM**: Unknown\n"), "{md}");
        assert!(fits(&r, 12_000));
        assert!(!fits(&r, 12_001));
    }

    #[test]
    fn human_block() {
        let text = render_human(&sample_report());
        assert!(text.starts_with("VRAM Detection Results:\n"));
        assert!(text.contains("- GPU VRAM: 8GB (nvml: Fake 8GB)"), "{text}");
        assert!(text.contains("- RAM: 16GB\n"), "{text}");
        assert!(
            text.contains("- Framework overhead: ~4k tokens\n"),
            "{text}"
        );
        assert!(
            text.contains("- **Recommended: 16k tokens** (GPU VRAM-based, 25% headroom)"),
            "{text}"
        );
        assert!(
            text.contains("- **Using: 16k tokens** (auto-detected)"),
            "{text}"
        );
    }
}
