//! VRAM, RAM and model-context detection (issue 3). Stub until the detector lands.

use crate::Ctx;
use crate::cli::DetectVramArgs;

/// `automaton detect-vram`.
pub fn detect_command(_ctx: &Ctx, _args: &DetectVramArgs) -> anyhow::Result<u8> {
    anyhow::bail!("detect-vram is not implemented yet")
}
