//! Fit before running: when the local engine at `Model endpoint` answers with its window, a
//! phase whose estimated peak context is over it is stopped before its agent starts
//! ([`crate::plan::fit`] decides; this gathers the numbers). An engine that is down or not
//! configured changes nothing: the phase runs as before.

use std::path::Path;

use crate::plan::fit;
use crate::state::Phase;

/// The stop's reason when `phase` of `rel` would not fit the engine's window; `None` when it
/// fits, or when no engine says what its window is.
pub(super) fn overflow(
    run: &super::Run<'_>,
    rel: &str,
    dir: &Path,
    phase: Phase,
) -> Option<String> {
    // No endpoint, no question: a run without a local engine pays nothing here.
    crate::detect::engine_endpoint(run.settings)?;
    // The detection (cached, with the engine asked again) decides which engine serves the
    // model, as `detect-vram` shows it.
    let found = crate::detect::detect(run.settings, false).engine?;
    let window = found.context_tokens?;
    let (peak, basis) = match super::vram::estimate(dir) {
        Some(e) => (
            e,
            "its Estimated peak context in the parent's DECOMPOSITION.md",
        ),
        None => (
            fit::tokens_of_bytes(super::prompt::context_bytes(
                run.settings,
                phase,
                rel,
                dir,
                run.max_peak,
            )?),
            "its prompt and the files it is given, at about 4 bytes a token",
        ),
    };
    fit::check(peak, basis, window, &found.name, &found.url).map(|o| o.reason(rel, phase.word()))
}
