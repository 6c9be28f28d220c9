//! The repo's `prompts/` and `contracts/`, embedded at build time as the weakest layer.

macro_rules! phase_files {
    ($dir:literal: $($phase:literal),*) => {
        &[$(($phase, include_str!(concat!("../../", $dir, "/", $phase, ".md")))),*]
    };
}

static PROMPTS: &[(&str, &str)] = phase_files!("prompts": "research", "decomposition", "design",
    "test_design", "implement", "bug_find", "adversarial_bug_find", "doc_review", "referee");
static CONTRACTS: &[(&str, &str)] = phase_files!("contracts": "research", "decomposition", "design",
    "test_design", "implement", "bug_find", "adversarial_bug_find", "doc_review", "referee",
    "questions");

/// The built-in prompt (`kind` = `prompts`) or contract (`contracts`) of a phase.
pub fn builtin_template(kind: &str, phase: &str) -> Option<&'static str> {
    let table = match kind {
        "prompts" => PROMPTS,
        "contracts" => CONTRACTS,
        _ => return None,
    };
    table
        .iter()
        .find(|(p, _)| *p == phase)
        .map(|(_, text)| *text)
}
