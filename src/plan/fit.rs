//! Whether a phase's context fits the window the local engine serves, decided before the agent
//! starts. A prompt longer than the engine's window is cut by the engine without an error (the
//! model then works on half a spec), so a phase that cannot fit is stopped with both numbers
//! and how to raise the window, instead of being run. Pure: the run layer measures the phase
//! and asks the engine; this only compares.

/// A phase that would not fit, with what to tell the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overflow {
    /// The phase's estimated peak context, in tokens.
    pub peak: u64,
    /// Where the estimate came from (`the sub-task's Estimated peak context`, `the prompt and
    /// its inputs`).
    pub basis: String,
    /// The engine's configured window, in tokens.
    pub window: u64,
    /// `ollama`, `llama.cpp`, `vllm`, `lmstudio`.
    pub engine: String,
    pub url: String,
}

impl Overflow {
    /// The stop's reason: both numbers, the engine and how to raise its window.
    pub fn reason(&self, task: &str, phase: &str) -> String {
        format!(
            "the {phase} phase needs about {peak} tokens of context ({basis}) but {engine} \
             at {url} serves a {window}-token window, so the prompt would be cut; nothing ran. \
             {how} (at least {peak} tokens), then `automaton orchestrate --task {task}`",
            peak = self.peak,
            basis = self.basis,
            engine = self.engine,
            url = self.url,
            window = self.window,
            how = capitalized(how_to_raise(&self.engine)),
        )
    }
}

/// `Some` when the estimated peak context is over the engine's window. Tokens are estimated by
/// the caller (about 4 bytes a token when only sizes are known).
pub fn check(peak: u64, basis: &str, window: u64, engine: &str, url: &str) -> Option<Overflow> {
    (peak > window).then(|| Overflow {
        peak,
        basis: basis.to_string(),
        window,
        engine: engine.to_string(),
        url: url.to_string(),
    })
}

/// Tokens for a size in bytes: about four bytes a token for English and code.
pub fn tokens_of_bytes(bytes: u64) -> u64 {
    bytes.div_ceil(4)
}

/// How to give this engine a larger window.
pub fn how_to_raise(engine: &str) -> &'static str {
    match engine {
        "ollama" => "set OLLAMA_CONTEXT_LENGTH before `ollama serve`, or num_ctx in the Modelfile",
        "llama.cpp" => "start llama-server with a larger -c (--ctx-size), which its slots share",
        "vllm" => "start vLLM with a larger --max-model-len",
        "lmstudio" => "load the model with a larger context length in LM Studio",
        _ => "give the engine a larger context window",
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_the_window_stops_with_both_numbers_and_the_remedy() {
        assert_eq!(check(4096, "x", 4096, "ollama", "u"), None);
        let o = check(
            10_000,
            "the prompt and its inputs",
            4096,
            "ollama",
            "http://h:1",
        )
        .expect("over");
        let r = o.reason("tasks/a", "research");
        for part in [
            "10000 tokens",
            "4096-token window",
            "OLLAMA_CONTEXT_LENGTH",
            "http://h:1",
        ] {
            assert!(r.contains(part), "{part} missing in {r}");
        }
        assert!(how_to_raise("llama.cpp").contains("-c"));
        assert!(how_to_raise("vllm").contains("--max-model-len"));
        assert_eq!(tokens_of_bytes(9), 3);
    }
}
