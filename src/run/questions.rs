//! Questions from agents: a phase may end by writing QUESTIONS.md instead of its artifact
//! (the format is in [`crate::artifact::questions`]). The task then waits for a person (exit
//! 32, notify event `question`); `automaton answer` appends the answers to DECISIONS.md,
//! which every later phase of the task and of its sub-tasks is given, and the phase runs
//! again. A sub-task's questions stop only that sub-task: its siblings go on.

use super::event::Event;
use super::stops::stop_task;
use super::{Outcome, Run, StopKind};
use crate::artifact::questions::{DECISIONS_FILE, QUESTIONS_FILE, parse_questions};
use crate::state::Phase;
use std::path::Path;

/// After a phase: the stop when its agent asked questions, `None` when it did not.
pub(super) fn asked(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    phase: Phase,
    attempt: u32,
) -> super::Result<Option<Outcome>> {
    let path = dir.join(QUESTIONS_FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let text = crate::fsx::read_to_string(&path)?;
    let questions = match parse_questions(&text) {
        Ok(q) => q,
        Err(why) => {
            let reason = format!(
                "{rel}/{QUESTIONS_FILE} (written by the {} phase) is malformed: {why}; fix it, \
                 or remove it to run the phase again",
                phase.word()
            );
            return stop_task(run, rel, dir, StopKind::BadArtifact, reason).map(Some);
        }
    };
    // The questions replace the artifact: what the phase may have written of it as well is
    // set aside, never judged.
    super::judge::set_aside_failed_artifact(run, rel, dir, phase, attempt)?;
    crate::store::task_files::clear_incomplete(dir)?;
    run.progress.event(&Event::QuestionsAsked {
        task: rel,
        phase: phase.word(),
        questions: questions.iter().map(|q| q.text.as_str()).collect(),
    });
    let n = questions.len();
    let reason = format!(
        "the {} agent asked {n} question{} in {rel}/{QUESTIONS_FILE}; answer with `automaton \
         answer {rel} 1=<option or \"text\">{}`, and the phase runs again with the answers",
        phase.word(),
        if n == 1 { "" } else { "s" },
        if n > 1 { " 2=…" } else { "" }
    );
    stop_task(run, rel, dir, StopKind::Questions, reason).map(Some)
}

/// What a phase's prompt is told of the decisions people took for this task and the tasks
/// above it (their DECISIONS.md, the task's own last), `None` when there are none.
pub(super) fn decisions_section(project: &Path, rel: &str) -> Option<String> {
    let mut chain: Vec<&str> = vec![rel];
    let mut child = rel;
    while let Some(parent) = super::observe::parent_of(child) {
        chain.push(parent);
        child = parent;
    }
    let mut section = String::new();
    for task in chain.into_iter().rev() {
        let Ok(text) = crate::fsx::read_to_string(project.join(task).join(DECISIONS_FILE)) else {
            continue;
        };
        section.push_str(&format!(
            "\n### {task}/{DECISIONS_FILE}\n\n{}\n",
            text.trim_end()
        ));
    }
    (!section.is_empty()).then(|| {
        format!(
            "## Decisions people made\n\nFollow these answers to earlier questions; they \
             settle what they cover.\n{section}"
        )
    })
}
