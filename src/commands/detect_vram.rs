//! `automaton detect-vram`.

use super::{Ctx, out};
use crate::cli::{DetectVramArgs, VramFormat};
use crate::detect::{Cache, detect_using, render_human};
use crate::settings::Settings;

/// `automaton detect-vram`: JSON (or the human block) on stdout, warnings on stderr, exit 0
/// even with no GPU. A bad config.md is an error (exit 1) naming file and line.
pub fn detect_command(ctx: &Ctx, args: &DetectVramArgs) -> super::Result<u8> {
    let settings = Settings::load(&ctx.project)?;
    for w in &settings.warnings {
        eprintln!("warning: {w}");
    }
    // Outside any project (no `--project`, none found upward) nothing is cached.
    let cache = if ctx.found == super::project::Found::Nowhere {
        Cache::Off
    } else if args.refresh {
        Cache::Refresh
    } else {
        Cache::Use
    };
    let report = detect_using(&settings, cache);
    if !report.cached {
        for w in &report.warnings {
            eprintln!("warning: {w}");
        }
    }
    let text = if args.human || args.format == VramFormat::Text {
        let mut text = render_human(&report);
        text.push('\n');
        text.push_str(&crate::detect::render_budgets_explained(&report));
        // The figures `--jobs auto` and the Slurm GRES requests use.
        if let Some(gate) =
            crate::run::vram::Admission::from_settings(&settings, report.gpu_vram_gb)
        {
            text.push_str("\nVRAM admission (--jobs auto; Slurm GRES per job):\n");
            text.push_str(&gate.figures());
            text.push_str("Per sub-task need: Estimated peak context × KV bytes per token (`automaton status` lists them)\n");
        }
        text
    } else {
        let mut s = serde_json::to_string_pretty(&report)?;
        s.push('\n');
        s
    };
    out::print(text)?;
    Ok(crate::exit::OK)
}
