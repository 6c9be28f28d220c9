//! What an approval gate (`- **Approve before**`) stands before: a phase (`design`), the
//! sub-tasks of a decomposed task (`subtasks`: the task split, before any sub-task folder is
//! made), or `automaton merge` of a complete task's branch (`merge`). Pure: the words and
//! their parsing.

use crate::state::Phase;

/// One gate of `Approve before`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Gate {
    /// Before this phase runs.
    Phase(Phase),
    /// After DECOMPOSITION.md is accepted, before its sub-tasks are made and started.
    Subtasks,
    /// Before `automaton merge` takes a complete task's branch.
    Merge,
}

impl Gate {
    /// The words a gate may be named by, phases first.
    pub const WORDS: [&'static str; 11] = [
        "research",
        "decomposition",
        "design",
        "test_design",
        "implement",
        "bug_find",
        "adversarial_bug_find",
        "doc_review",
        "referee",
        "subtasks",
        "merge",
    ];

    /// The word in `Approve before`, `.state.approvals` and `status --json`.
    pub fn word(self) -> &'static str {
        match self {
            Gate::Phase(p) => p.word(),
            Gate::Subtasks => "subtasks",
            Gate::Merge => "merge",
        }
    }

    /// What the gate stands before, in words: `design`, `its sub-tasks start (the task
    /// split)`, `` `automaton merge` takes its branch``.
    pub fn before(self) -> &'static str {
        match self {
            Gate::Phase(p) => p.word(),
            Gate::Subtasks => "its sub-tasks start (the task split in DECOMPOSITION.md)",
            Gate::Merge => "`automaton merge` takes its branch",
        }
    }

    /// One gate word (`test design`, `test-design` and `test_design` name one phase;
    /// `sub-tasks` is `subtasks`).
    pub fn parse(word: &str) -> Option<Gate> {
        let w = normal(word);
        match w.as_str() {
            "subtasks" | "sub_tasks" => Some(Gate::Subtasks),
            "merge" => Some(Gate::Merge),
            _ => Phase::ALL
                .into_iter()
                .find(|p| p.word() == w)
                .map(Gate::Phase),
        }
    }

    /// A list of gate words separated by commas; `none` or empty is an empty list. An unknown
    /// word is an error naming it and the words known ([`Gate::WORDS`]).
    pub fn parse_list(text: &str) -> Result<Vec<Gate>, String> {
        let mut gates = Vec::new();
        for item in text.split(',') {
            let word = normal(item);
            if word.is_empty() || word == "none" {
                continue;
            }
            let gate = Gate::parse(&word).ok_or_else(|| {
                format!(
                    "`{}` is not a gate (one of {})",
                    item.trim(),
                    Gate::WORDS.join(", ")
                )
            })?;
            if !gates.contains(&gate) {
                gates.push(gate);
            }
        }
        Ok(gates)
    }
}

fn normal(word: &str) -> String {
    word.trim()
        .to_ascii_lowercase()
        .replace([' ', '-'], "_")
        .replace("__", "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_subtasks_and_merge_parse_into_one_list() {
        assert_eq!(
            Gate::parse_list("design, Sub-tasks, merge, test design, design"),
            Ok(vec![
                Gate::Phase(Phase::Design),
                Gate::Subtasks,
                Gate::Merge,
                Gate::Phase(Phase::TestDesign),
            ])
        );
        assert_eq!(Gate::parse_list(" none "), Ok(vec![]));
        let err = Gate::parse_list("design, merj").unwrap_err();
        assert!(err.contains("`merj` is not a gate"), "{err}");
        assert!(err.contains("subtasks, merge"), "{err}");
        for w in Gate::WORDS {
            assert_eq!(Gate::parse(w).map(Gate::word), Some(w));
        }
        // The list is written out (a const for the did-you-mean); no phase may be missing.
        for p in Phase::ALL {
            assert!(
                Gate::WORDS.contains(&p.word()),
                "{} is not in Gate::WORDS",
                p.word()
            );
        }
    }
}
