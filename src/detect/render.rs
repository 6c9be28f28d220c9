//! How a detection result is written for people: the report `detect-vram` prints, the
//! budgets explained, and the `VRAM_CONFIG.md` each sub-task is given, in the units the
//! lifecycle documents use ("16k" tokens, "24GB", "25%").

use super::probe;
use super::{Source, VramReport, fits};

/// Tokens in "k" units, as the report and VRAM_CONFIG.md say them: 16000 -> "16k", 12500 -> "12.5k".
pub fn fmt_k(tokens: u64) -> String {
    if tokens.is_multiple_of(1000) {
        format!("{}k", tokens / 1000)
    } else {
        let s = format!("{:.1}", tokens as f64 / 1000.0);
        format!("{}k", s.trim_end_matches(".0"))
    }
}

fn fmt_gb(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}GB")
    } else {
        format!("{v}GB")
    }
}

fn fmt_pct(h: f64) -> String {
    let p = probe::round_to(h * 100.0, 2);
    if p.fract() == 0.0 {
        format!("{p:.0}%")
    } else {
        format!("{p}%")
    }
}

fn yes_no(b: bool) -> &'static str {
    if b { "Yes" } else { "No" }
}

/// A sub-task's `VRAM_CONFIG.md` (what a sub-task's agent is told of its budget), in the lifecycle documents' units:
/// the target in "k" ("16k"), the max peak as a raw token count ("12000"), the sub-task's
/// estimate in "k". `Fits within VRAM` is `estimate <= max peak` ("Unknown" without an estimate).
pub fn render_vram_config_md(report: &VramReport, estimated_peak_tokens: Option<u64>) -> String {
    let gpu = report
        .gpu_vram_gb
        .map_or_else(|| "None".to_string(), fmt_gb);
    let ram = report.ram_gb.map_or_else(|| "Unknown".to_string(), fmt_gb);
    let window = if report.model_context_source == "default" {
        format!(
            "Unknown ({} tokens assumed)",
            fmt_k(report.model_context_kb)
        )
    } else {
        format!("{} tokens", fmt_k(report.model_context_kb))
    };
    let (estimate, fits_line) = match estimated_peak_tokens {
        Some(e) => (
            format!("{} tokens", fmt_k(e)),
            yes_no(fits(report, e)).to_string(),
        ),
        None => ("Unknown".to_string(), "Unknown".to_string()),
    };
    format!(
        "# VRAM Configuration for this sub-task\n\
         \n\
         - **Auto-detect**: {auto}\n\
         - **Target VRAM context**: {target} tokens\n\
         - **Headroom**: {headroom}\n\
         - **Max peak context per sub-task**: {peak} tokens\n\
         - **GPU VRAM detected**: {gpu}\n\
         - **RAM detected**: {ram}\n\
         - **Model context window**: {window}\n\
         - **Framework overhead**: ~{overhead} tokens\n\
         - **This sub-task's estimated peak context**: {estimate}\n\
         - **Fits within VRAM**: {fits_line}\n\
         \n\
         Detected by: {source}; max peak from {peak_from}.\n",
        auto = yes_no(report.auto_detect),
        target = fmt_k(report.recommended_kb),
        headroom = fmt_pct(report.headroom),
        peak = report.max_peak_context_kb,
        peak_from = report.max_peak_source,
        overhead = report.framework_overhead_tokens,
        source = report.source.as_str(),
    )
}

/// The "VRAM Detection Results" block people read (detect-vram without --json).
pub fn render_human(report: &VramReport) -> String {
    let gpu = match (report.gpu_vram_gb, report.source) {
        (Some(g), Source::Script) => format!("{} (detection script)", fmt_gb(g)),
        (Some(g), _) => {
            let names: Vec<String> = report
                .gpus
                .iter()
                .map(|d| format!("{} {}GB", d.name, d.total_gb))
                .collect();
            format!("{} (nvml: {})", fmt_gb(g), names.join(", "))
        }
        (None, _) => format!(
            "None ({})",
            report.gpu_reason.as_deref().unwrap_or("no GPU found")
        ),
    };
    let ram = report.ram_gb.map_or_else(|| "Unknown".to_string(), fmt_gb);
    let model = match &report.model {
        Some(m) => format!("{m}, from {}", report.model_source),
        None => "model not detected".to_string(),
    };
    let window_from = if report.model_context_source == "default" {
        "default".to_string()
    } else {
        report.model_context_source.clone()
    };
    let basis = match report.source {
        Source::Script => "detection script",
        Source::Nvml => "GPU VRAM-based",
        Source::Model => "hosted model's window",
        Source::Config => "config.md",
        Source::Default => "default, no GPU found",
    };
    let using = match (report.source, report.cached) {
        (Source::Config, false) => "manual override from config.md",
        (Source::Default, false) => "default",
        (_, false) => "auto-detected",
        (_, true) => "cached; --refresh probes again",
    };
    let engine_line = report.engine.as_ref().map_or(String::new(), |e| {
        let mut parts = vec![format!("{} at {}", e.name, e.url)];
        if let Some(m) = &e.model {
            parts.push(format!("model {m}"));
        }
        match e.context_tokens {
            Some(c) => parts.push(format!("{c} tokens configured")),
            None => parts.push("no loaded model's window".to_string()),
        }
        if let Some(n) = e.slots {
            parts.push(format!("{n} slots"));
        }
        if let Some(b) = e.vram_bytes {
            parts.push(format!("{:.1}GB in VRAM", b as f64 / probe::GIB));
        }
        format!("- Engine: {}\n", parts.join(", "))
    });
    format!(
        "VRAM Detection Results:\n\
         - GPU VRAM: {gpu}\n\
         - RAM: {ram}\n\
         {engine_line}\
         - Model context window: {window} ({model}; window from {window_from})\n\
         - Framework overhead: ~{overhead} tokens\n\
         - **Recommended: {rec} tokens** ({basis}, {headroom} headroom)\n\
         - **Max peak context per sub-task: {peak} tokens** ({peak_from})\n\
         - **Using: {rec} tokens** ({using})\n",
        window = fmt_k(report.model_context_kb),
        overhead = fmt_k(report.framework_overhead_tokens),
        rec = fmt_k(report.recommended_kb),
        headroom = fmt_pct(report.headroom),
        peak = report.max_peak_context_kb,
        peak_from = report.max_peak_source,
    )
}

/// What `detect-vram --human` adds below the block: what its three budgets are and how
/// they follow from one another.
pub fn render_budgets_explained(report: &VramReport) -> String {
    format!(
        "How the budgets relate:\n\
         - The model context window is the most the model takes in one request; the framework's \
         own prompt (~{overhead} tokens) comes out of it.\n\
         - Recommended is what each sub-task is planned for: at most the window less that \
         overhead, less where the GPU's memory (a local model) or a share of a hosted model's \
         window limits it.\n\
         - Max peak is the most one sub-task may need at its peak (a DECOMPOSITION.md row whose \
         `Estimated peak context` is above it is sent back to be split); {peak_rule}.\n",
        overhead = fmt_k(report.framework_overhead_tokens),
        peak_rule = peak_rule(report),
    )
}

/// How the max peak of `report` follows from the other budgets, by where it came from.
fn peak_rule(report: &VramReport) -> String {
    match report.max_peak_source.as_str() {
        "detection script" => {
            "here the detection script's own figure, used as given (it may be above the \
             recommended budget)"
                .to_string()
        }
        "config.md" => "here set in config.md (`Max peak context per sub-task`), at most the \
             recommended budget"
            .to_string(),
        _ => format!(
            "here the recommended budget less the {} headroom kept free ({} x {} = {})",
            fmt_pct(report.headroom),
            fmt_k(report.recommended_kb),
            fmt_pct(1.0 - report.headroom),
            report.max_peak_context_kb
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_units() {
        assert_eq!(fmt_k(16_000), "16k");
        assert_eq!(fmt_k(12_500), "12.5k");
        assert_eq!(fmt_k(131_072), "131.1k");
        assert_eq!(fmt_pct(0.125), "12.5%");
    }
}
