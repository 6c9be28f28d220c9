//! The prompt of one phase: `prompts/<phase>.md` with its placeholders filled and the
//! contract appended, what a person said (a rejection, DECISIONS.md, rework's findings, why
//! the phase runs again), and how much an agent is given to read with it (for the fit check).

use super::Run;
use super::isolation::Workspace;
use crate::settings::Settings;
use crate::state::{Artifact, Phase};
use crate::task::TASK_FILE;
use std::path::Path;

/// Files a phase may read besides the artifacts, in the order the prompt lists them.
const CONTEXT_FILES: [&str; 3] = [TASK_FILE, "PARENT_SPEC.md", "VRAM_CONFIG.md"];

/// Bytes a phase's agent is given to read: its rendered prompt plus the files the prompt lists
/// (the task's context files and the earlier artifacts). `None` when the prompt cannot be
/// rendered (the phase itself will report why).
pub fn context_bytes(
    settings: &Settings,
    phase: Phase,
    task_rel: &str,
    task_dir: &Path,
    max_peak: u64,
) -> Option<u64> {
    let prompt = render_prompt(settings, phase, task_rel, task_dir, max_peak).ok()?;
    let earlier = Artifact::ALL
        .into_iter()
        .filter(|a| *a < phase.artifact())
        .map(Artifact::file_name);
    let files: u64 = CONTEXT_FILES
        .into_iter()
        .chain(earlier)
        .filter_map(|name| std::fs::metadata(task_dir.join(name)).ok())
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len())
        .sum();
    Some(prompt.len() as u64 + files)
}

/// Render `prompts/<phase>.md` for a task: fill the `{{placeholders}}`, append the contract
/// when the prompt does not place it.
pub fn render_prompt(
    settings: &Settings,
    phase: Phase,
    task_rel: &str,
    task_dir: &Path,
    max_peak: u64,
) -> super::Result<String> {
    let (prompt, _) = settings.template("prompts", phase.word())?;
    let (contract, _) = settings.template("contracts", phase.word())?;
    let artifact = task_dir.join(phase.artifact().file_name());
    let mut inputs = String::new();
    let earlier = Artifact::ALL
        .into_iter()
        .filter(|a| *a < phase.artifact())
        .map(Artifact::file_name);
    for name in CONTEXT_FILES.into_iter().chain(earlier) {
        let p = task_dir.join(name);
        if p.is_file() {
            inputs.push_str(&format!("- {}\n", p.display()));
        }
    }
    if inputs.is_empty() {
        inputs.push_str("- (none yet)\n");
    }
    let rules = match settings.find_file(".rules.md") {
        Some((path, _)) => crate::fsx::read_to_string(&path).unwrap_or_default(),
        None => "(none)".into(),
    };
    let values = [
        ("phase", phase.word().to_string()),
        ("task", task_rel.to_string()),
        ("task_dir", task_dir.display().to_string()),
        ("artifact", artifact.display().to_string()),
        ("artifact_name", phase.artifact().file_name().to_string()),
        ("project", settings.project.display().to_string()),
        ("inputs", inputs.trim_end().to_string()),
        ("rules", rules.trim_end().to_string()),
        ("max_peak_context", max_peak.to_string()),
        ("contract", contract.trim_end().to_string()),
    ];
    let mut text = fill(&prompt, &values);
    // A person rejected this phase's last artifact: the new run answers the reason.
    if let Some(r) = crate::task::gates::rejection_for(task_dir, phase) {
        text.push_str(&format!(
            "\n\n## Rejected: do it again\n\n{} rejected the previous {} at {} and said:\n\n> {}\n\n\
             The rejected version is kept at `{}` for reference; write a new `{}` that answers \
             the reason.\n",
            r.who,
            phase.artifact().file_name(),
            r.when,
            r.reason.trim().replace('\n', "\n> "),
            task_dir.join(&r.rejected).display(),
            artifact.display(),
        ));
    }
    if !prompt.contains("{{contract}}") {
        text.push_str("\n\n## Contract\n\n");
        text.push_str(contract.trim_end());
        text.push('\n');
    }
    // Every phase may ask a person instead of guessing (`contracts/questions.md`).
    let (asking, _) = settings.template("contracts", "questions")?;
    text.push('\n');
    text.push_str(asking.trim_end());
    text.push('\n');
    Ok(text)
}

/// `template` with each `{{key}}` of `values` replaced, in one pass: unknown keys and the
/// text of the values themselves (a rules file that mentions `{{task}}`) stay as they are.
fn fill(template: &str, values: &[(&str, String)]) -> String {
    const KEY_MAX: usize = 32;
    let mut out = String::with_capacity(template.len() + 4096);
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        // Keys are short words: a `}}` further on closes nothing here (and a template of
        // many `{{` is not scanned to its end for each).
        let window = &after.as_bytes()[..after.len().min(KEY_MAX + 2)];
        let known = window
            .windows(2)
            .position(|w| w == b"}}")
            .and_then(|close| {
                let key = &after[..close];
                let (_, value) = values.iter().find(|(k, _)| *k == key)?;
                Some((close, value))
            });
        match known {
            Some((close, value)) => {
                out.push_str(value);
                rest = &after[close + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The phase's prompt, with `note` (why the phase runs again) appended, written beside its
/// log for the record.
pub(super) fn write_prompt(
    run: &Run<'_>,
    phase: Phase,
    task_rel: &str,
    task_dir: &Path,
    ws: Option<&Workspace>,
    prompt_file: &Path,
    note: Option<&str>,
) -> super::Result<String> {
    let mut prompt = render_prompt(run.settings, phase, task_rel, task_dir, run.max_peak)?;
    let decisions = super::questions::decisions_section(&run.settings.project, task_rel);
    let rework = super::rework::prompt_section(run, phase, task_dir, ws);
    let notes = [decisions.as_deref(), rework.as_deref(), note];
    for note in notes.into_iter().flatten() {
        prompt.push_str("\n\n");
        prompt.push_str(note.trim_end());
        prompt.push('\n');
    }
    // Re-rendered when the phase runs again: no fsync (see `fsx`).
    crate::fsx::write_rebuildable(prompt_file, prompt.as_bytes())?;
    Ok(prompt)
}

#[cfg(test)]
mod tests {
    use super::fill;

    #[test]
    fn placeholders_are_filled_in_one_pass() {
        let values = [
            ("task", "tasks/a".to_string()),
            ("rules", "say {{task}} literally".to_string()),
        ];
        assert_eq!(
            fill("{{task}}: {{rules}}; {{unknown}} {{task", &values),
            "tasks/a: say {{task}} literally; {{unknown}} {{task"
        );
        assert_eq!(fill("{{{{task}}}}", &values), "{{tasks/a}}");
        let long = format!("{{{{{}}}}} {{{{task}}}}", "é".repeat(40));
        assert_eq!(
            fill(&long, &values),
            format!("{{{{{}}}}} tasks/a", "é".repeat(40))
        );
        assert_eq!(fill("", &values), "");
    }
}
