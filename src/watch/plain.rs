//! Without a terminal: one plain line per change, so `watch` works in a log or a pipe.
//!
//! - `<task>: <summary>` when a task appears or its summary changes (state, running phase and
//!   attempt, blocked-by, reason, a `.state` that disagrees), with `(was <state>)` when the
//!   state itself changed;
//! - `<task>: gone` when its folder vanishes;
//! - `warning: ...` for each new warning of the walk (a corrupt `.state`, a stray file);
//! - `run: ...` when the automaton driving the project changes.
//!
//! The first call prints every task once: the change from nothing.

use super::model::Model;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Default)]
pub struct Plain {
    /// path -> (state word, summary) as last printed.
    tasks: BTreeMap<String, (String, String)>,
    warnings: BTreeSet<String>,
    run: Option<String>,
}

impl Plain {
    /// The lines saying what changed since the last call.
    pub fn lines(&mut self, model: &Model) -> Vec<String> {
        let mut out = Vec::new();
        let run = run_line(model);
        if self.run.as_ref() != Some(&run) {
            // Nothing to say at the start when nothing drives the project.
            if self.run.is_some() || model.run.holder.is_some() {
                out.push(run.clone());
            }
            self.run = Some(run);
        }
        let warnings: BTreeSet<String> = model.warnings().into_iter().collect();
        for w in warnings.difference(&self.warnings) {
            out.push(format!("warning: {w}"));
        }
        self.warnings = warnings;
        let mut now = BTreeMap::new();
        for info in model.tasks() {
            let state = info.view.state.to_string();
            let summary = info.summary();
            match self.tasks.remove(&info.view.path) {
                Some((_, old)) if old == summary => {}
                Some((old_state, _)) if old_state != state => {
                    out.push(format!("{}: {summary} (was {old_state})", info.view.path));
                }
                _ => out.push(format!("{}: {summary}", info.view.path)),
            }
            now.insert(info.view.path.clone(), (state, summary));
        }
        for gone in std::mem::replace(&mut self.tasks, now).into_keys() {
            out.push(format!("{gone}: gone"));
        }
        out
    }
}

fn run_line(model: &Model) -> String {
    match &model.run.holder {
        Some(h) => format!(
            "run: pid {} drives the project ({})",
            h.pid.unwrap_or(0),
            h.command.as_deref().unwrap_or("command unknown")
        ),
        None => "run: no automaton drives the project".into(),
    }
}
