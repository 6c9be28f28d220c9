//! The budget rule: how many tokens of context one sub-task may plan for. Pure: no I/O.
//!
//! ```text
//! recommended = round_down_1000(clamp(min(T_mem, T_slice, C - F), 4000, 64000))
//! max_peak    = floor(recommended x (1 - headroom))
//! ```
//!
//! * `C` is the model's context window (128,000 when unknown), `F` the framework overhead
//!   (4,000 by default).
//! * `T_slice = C / 8` for hosted models (a quality slice: 128k gives 16k, 200k gives 25k);
//!   no limit for local or unknown models.
//! * `T_mem` is the memory limit for local or unknown models: `clamp(2000 x VRAM_GiB, 4000,
//!   32000)` when VRAM is known, 8000 when no GPU was found. A hosted model keeps its KV cache
//!   at the provider, so local VRAM does not limit it.
//!
//! The seed's example (8 GB GPU, 128k window, 4,000 overhead) gives 16,000 and 12,000.
//! The research behind the numbers is in `docs/detect-vram.md`.

/// Default framework overhead (about 4k tokens: an agent framework's system prompt and tools).
pub const DEFAULT_OVERHEAD: u64 = 4000;
/// Default context window when the model is unknown.
pub const DEFAULT_WINDOW: u64 = 128_000;
/// Default headroom.
pub const DEFAULT_HEADROOM: f64 = 0.25;
/// Budget when no GPU is found and nothing else is known.
pub const NO_GPU_TOKENS: u64 = 8000;
/// The floor and ceiling of any recommendation.
pub const MIN_TOKENS: u64 = 4000;
pub const MAX_TOKENS: u64 = 64_000;
/// The range of the VRAM-only memory limit, and tokens per GiB of VRAM.
pub const MEM_MIN: u64 = 4000;
pub const MEM_MAX: u64 = 32_000;
pub const TOKENS_PER_GIB: u64 = 2000;

/// What the rule needs to know.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetInput {
    /// Total VRAM of all GPUs, in whole GiB (rounded); `None` when no GPU was found.
    pub vram_gib: Option<u64>,
    /// The model's context window in tokens.
    pub window: u64,
    /// Tokens the framework itself takes (prompt, contract, tool output).
    pub overhead: u64,
    /// Whether the model runs at a provider (its KV cache does not live in local VRAM).
    pub hosted: bool,
}

/// The memory limit `T_mem`; `None` means no limit (hosted model).
pub fn t_mem(input: &BudgetInput) -> Option<u64> {
    if input.hosted {
        return None;
    }
    Some(match input.vram_gib {
        Some(gib) => gib.saturating_mul(TOKENS_PER_GIB).clamp(MEM_MIN, MEM_MAX),
        None => NO_GPU_TOKENS,
    })
}

/// The quality slice `T_slice`; `None` means no limit (local or unknown model).
pub fn t_slice(input: &BudgetInput) -> Option<u64> {
    input.hosted.then_some(input.window / 8)
}

/// `round_down_1000(clamp(min(T_mem, T_slice, C - F), 4000, 64000))`.
pub fn recommended(input: &BudgetInput) -> u64 {
    let t_win = input.window.saturating_sub(input.overhead);
    let limit = [t_mem(input), t_slice(input), Some(t_win)]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(t_win);
    round_down_1000(limit.clamp(MIN_TOKENS, MAX_TOKENS))
}

/// Whether the window leaves less than the minimum once the overhead is taken (worth a warning).
pub fn window_too_small(input: &BudgetInput) -> bool {
    input.window.saturating_sub(input.overhead) < MIN_TOKENS
}

/// `floor(recommended x (1 - headroom))`. The tiny epsilon keeps 16000 x 0.7 at 11200 despite
/// binary floating point.
pub fn max_peak(recommended: u64, headroom: f64) -> u64 {
    let h = if headroom.is_finite() {
        headroom.clamp(0.0, 1.0)
    } else {
        DEFAULT_HEADROOM
    };
    ((recommended as f64) * (1.0 - h) + 1e-6).floor() as u64
}

pub fn round_down_1000(n: u64) -> u64 {
    n / 1000 * 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(vram_gib: Option<u64>, window: u64, hosted: bool) -> BudgetInput {
        BudgetInput {
            vram_gib,
            window,
            overhead: DEFAULT_OVERHEAD,
            hosted,
        }
    }

    #[test]
    fn seed_example_comes_out_exactly() {
        // 8 GB GPU, model unknown (128k), overhead 4000 -> 16000 / 16 / 0.25 / 12000.
        let i = input(Some(8), 128_000, false);
        let rec = recommended(&i);
        assert_eq!(rec, 16_000);
        assert_eq!(rec / 1000, 16);
        assert_eq!(max_peak(rec, 0.25), 12_000);
    }

    #[test]
    fn rule_table() {
        // (vram GiB, window, hosted) -> recommended
        let cases: &[(Option<u64>, u64, bool, u64)] = &[
            (None, DEFAULT_WINDOW, false, 8000), // no GPU, nothing known: seed fallback
            (Some(1), DEFAULT_WINDOW, false, 4000), // 2000 clamped up to 4000
            (Some(3), DEFAULT_WINDOW, false, 6000), // linear
            (Some(12), DEFAULT_WINDOW, false, 24_000), // linear
            (Some(16), DEFAULT_WINDOW, false, 32_000), // at the cap
            (Some(24), DEFAULT_WINDOW, false, 32_000), // capped at 32k
            (Some(141), DEFAULT_WINDOW, false, 32_000), // H200: still capped
            (Some(24), 32_768, false, 28_000),   // local window limits: 28768 -> 28000
            (Some(24), 8192, false, 4000),       // llama3 8k: 4192 -> 4000
            (None, 128_000, true, 16_000),       // gpt-4o: C/8
            (Some(8), 200_000, true, 25_000),    // claude 200k: C/8, VRAM ignored
            (None, 1_000_000, true, 64_000),     // 1M window: 125000 capped at 64k
            (None, 8192, true, 4000),            // plain gpt-4: 1024 -> floor 4000
            (None, 272_000, true, 34_000),       // gpt-5
            (Some(0), DEFAULT_WINDOW, false, 4000), // a GPU with < 0.5 GiB
            (None, 0, false, 4000),              // absurd window: floor
        ];
        for &(vram, window, hosted, want) in cases {
            assert_eq!(
                recommended(&input(vram, window, hosted)),
                want,
                "vram {vram:?} window {window} hosted {hosted}"
            );
        }
    }

    #[test]
    fn overhead_matters() {
        let mut i = input(None, 20_000, false);
        i.overhead = 14_500;
        assert_eq!(recommended(&i), 5000);
        assert!(!window_too_small(&i));
        i.overhead = 17_000;
        assert!(window_too_small(&i));
        assert_eq!(recommended(&i), 4000);
    }

    #[test]
    fn max_peak_rounds_down() {
        assert_eq!(max_peak(16_000, 0.25), 12_000);
        assert_eq!(max_peak(16_000, 0.3), 11_200);
        assert_eq!(max_peak(16_000, 0.1), 14_400);
        assert_eq!(max_peak(8000, 0.0), 8000);
        assert_eq!(max_peak(7000, 0.33), 4690);
        assert_eq!(max_peak(8000, f64::NAN), 6000);
    }

    #[test]
    fn t_parts() {
        assert_eq!(t_mem(&input(Some(8), 1, true)), None);
        assert_eq!(t_mem(&input(None, 1, false)), Some(8000));
        assert_eq!(t_slice(&input(None, 200_000, true)), Some(25_000));
        assert_eq!(t_slice(&input(None, 200_000, false)), None);
        assert_eq!(round_down_1000(16_999), 16_000);
    }
}
