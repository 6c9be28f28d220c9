//! VRAM, RAM and model-context detection (issue 3). Stub until the detector lands.

use crate::Ctx;
use crate::cli::DetectVramArgs;

/// `automaton detect-vram`.
pub fn detect_command(_ctx: &Ctx, _args: &DetectVramArgs) -> anyhow::Result<u8> {
    anyhow::bail!("detect-vram is not implemented yet")
}

/// Temporary stand-in until the detector lands.
pub struct VramReport {
    pub max_peak_context_kb: u64,
    pub warnings: Vec<String>,
}
pub fn detect(_s: &crate::settings::Settings, _refresh: bool) -> VramReport {
    VramReport {
        max_peak_context_kb: 6000,
        warnings: Vec::new(),
    }
}
pub fn invalidate_cache(_p: &std::path::Path) -> std::io::Result<()> {
    Ok(())
}
pub fn render_vram_config_md(_r: &VramReport, _e: Option<u64>) -> String {
    "# VRAM Configuration for this sub-task\n".into()
}
