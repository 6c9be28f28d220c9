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
    /// Per top-level task: the generation last printed, and (path, state, summary) of each
    /// of its tasks. Only parts read again since are compared, so a refresh costs the change,
    /// not the project.
    parts: BTreeMap<(usize, String), (u64, Vec<Printed>)>,
    warnings: BTreeSet<String>,
    run: Option<String>,
}

#[derive(Debug)]
struct Printed {
    path: String,
    state: &'static str,
    summary: String,
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
        for (key, part) in &model.parts {
            let before = match self.parts.get_mut(key) {
                Some((generation, _)) if *generation == part.generation => continue,
                Some((_, printed)) => std::mem::take(printed),
                None => Vec::new(),
            };
            let now: Vec<Printed> = part
                .infos
                .iter()
                .map(|i| Printed {
                    path: i.view.path.clone(),
                    state: i.view.state,
                    summary: i.summary(),
                })
                .collect();
            diff(before, &now, &mut out);
            self.parts.insert(key.clone(), (part.generation, now));
        }
        self.parts.retain(|key, (_, printed)| {
            let kept = model.parts.contains_key(key);
            if !kept {
                diff(std::mem::take(printed), &[], &mut out);
            }
            kept
        });
        out
    }
}

/// The lines from one part's tasks as printed before to the same part now.
fn diff(before: Vec<Printed>, now: &[Printed], out: &mut Vec<String>) {
    let mut before: BTreeMap<String, Printed> =
        before.into_iter().map(|p| (p.path.clone(), p)).collect();
    for p in now {
        match before.remove(&p.path) {
            Some(old) if old.summary == p.summary => {}
            Some(old) if old.state != p.state => {
                out.push(format!("{}: {} (was {})", p.path, p.summary, old.state))
            }
            _ => out.push(format!("{}: {}", p.path, p.summary)),
        }
    }
    for gone in before.into_keys() {
        out.push(format!("{gone}: gone"));
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
