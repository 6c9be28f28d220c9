//! Which sub-tasks of a plan may start, and why the others wait: pure, like the rest of the
//! planner. The same answer serves the wave scheduler (what to start now), `orchestrate --task`
//! naming one sub-task (refused unless it may start), and `status` (which command to offer),
//! so the three can never disagree.
//!
//! The rules, in the order a waiting sub-task is explained:
//! - a sub-task already ended (complete or stopped for a person) does not start again;
//! - none starts while its parent holds a recorded stop (a merge-back conflict, a failed
//!   integration gate): driving the parent clears it first;
//! - a sub-task blocked by one that failed never starts;
//! - every sub-task it depends on must be terminal;
//! - with the strict wave barrier (the default), every sub-task of every earlier wave must be
//!   terminal or blocked; `- **Wave barrier**: dependencies` waits only for its own dependencies;
//! - with integration gates (isolation and a verify command), the gate after every earlier wave
//!   must have passed;
//! - two sub-tasks whose `Files` overlap never run at the same time.

use crate::state::State;

/// How a wave waits for the waves before it (`- **Wave barrier**`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Barrier {
    /// No sub-task of wave N starts before every sub-task of the earlier waves is terminal.
    #[default]
    Strict,
    /// A sub-task starts as soon as its own dependencies are terminal.
    Dependencies,
}

impl Barrier {
    /// The setting's value: `dependencies`, else strict.
    pub fn parse(text: Option<&str>) -> Barrier {
        match text {
            Some("dependencies") => Barrier::Dependencies,
            _ => Barrier::Strict,
        }
    }
}

/// One row of the plan, as the planner needs it.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    pub name: &'a str,
    pub wave: u32,
    pub depends_on: &'a [String],
    pub files: &'a [String],
    /// The sub-task's state; `None` while its folder does not exist yet.
    pub state: Option<State>,
}

/// Everything the readiness of a plan's sub-tasks depends on.
#[derive(Debug, Clone, Default)]
pub struct Waves<'a> {
    /// In plan order.
    pub rows: Vec<Row<'a>>,
    /// `(sub-task, the failed one that blocks it)`, as the parent's decision says.
    pub blocked: &'a [(String, String)],
    pub barrier: Barrier,
    /// With integration gates: the waves whose gate passed. `None`: no gates in this project.
    pub gates_passed: Option<&'a [u32]>,
    /// The stop recorded in the parent's folder, if any.
    pub parent_stop: Option<&'a str>,
}

/// Why a sub-task may not start now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wait<'a> {
    /// It ended already (complete, or stopped for a person).
    Ended(State),
    /// Its folder does not exist yet (the parent makes it).
    NoFolder,
    /// Its parent holds a recorded stop.
    ParentStopped(&'a str),
    /// A sub-task it depends on (maybe through others) ended without a PASS.
    Blocked { by: &'a str },
    /// A sub-task it depends on has not ended.
    Dependency { on: &'a str, state: Option<State> },
    /// The strict barrier: a sub-task of an earlier wave has not ended.
    EarlierWave { wave: u32, name: &'a str },
    /// The integration gate after an earlier wave has not passed.
    Gate { wave: u32 },
}

impl Wait<'_> {
    /// Whether the sub-task will never start in this run without a person (or its parent's
    /// drive) acting first, rather than simply waiting for its turn.
    pub fn is_final(&self) -> bool {
        matches!(self, Wait::Ended(_) | Wait::Blocked { .. })
    }

    /// The reason in words, for a refusal, a dry run or a report.
    pub fn describe(&self) -> String {
        let state = |s: &Option<State>| s.map_or("not made yet", |s| s.word());
        match self {
            Wait::Ended(s) => format!("it has ended ({})", s.word()),
            Wait::NoFolder => "its folder is not made yet".into(),
            Wait::ParentStopped(why) => format!("its parent is stopped: {why}"),
            Wait::Blocked { by } => format!("it is blocked: {by} did not pass"),
            Wait::Dependency { on, state: s } => {
                format!("it depends on {on}, which has not ended ({})", state(s))
            }
            Wait::EarlierWave { wave, name } => {
                format!("wave {wave} has not ended ({name} is still running or waiting)")
            }
            Wait::Gate { wave } => format!("the integration gate after wave {wave} has not passed"),
        }
    }
}

impl<'a> Waves<'a> {
    fn row(&self, name: &str) -> Option<&Row<'a>> {
        self.rows.iter().find(|r| r.name == name)
    }

    fn blocker(&self, name: &str) -> Option<&'a str> {
        self.blocked
            .iter()
            .find(|(b, _)| b == name)
            .map(|(_, by)| by.as_str())
    }

    fn ended(state: Option<State>) -> bool {
        state.is_some_and(State::is_terminal)
    }

    /// Why the sub-task named `name` may not start now (before counting what runs), or
    /// `None` when it may. A name that is not in the plan may always start: it is not ruled
    /// by the plan.
    pub fn wait(&self, name: &str) -> Option<Wait<'a>> {
        let row = self.row(name)?;
        if let Some(s) = row.state.filter(|s| s.is_terminal()) {
            return Some(Wait::Ended(s));
        }
        if let Some(why) = self.parent_stop {
            return Some(Wait::ParentStopped(why));
        }
        if let Some(by) = self.blocker(name) {
            return Some(Wait::Blocked { by });
        }
        let Some(_) = row.state else {
            return Some(Wait::NoFolder);
        };
        for dep in row.depends_on {
            let state = self.row(dep).and_then(|d| d.state);
            if !Self::ended(state) {
                let on = self.row(dep).map_or(dep.as_str(), |d| d.name);
                return Some(Wait::Dependency { on, state });
            }
        }
        if self.barrier == Barrier::Strict
            && let Some(r) = self.rows.iter().find(|r| {
                r.wave < row.wave && !Self::ended(r.state) && self.blocker(r.name).is_none()
            })
        {
            return Some(Wait::EarlierWave {
                wave: r.wave,
                name: r.name,
            });
        }
        if let Some(passed) = self.gates_passed {
            let mut earlier: Vec<u32> = self
                .rows
                .iter()
                .map(|r| r.wave)
                .filter(|w| *w < row.wave)
                .collect();
            earlier.sort_unstable();
            if let Some(wave) = earlier.into_iter().find(|w| !passed.contains(w)) {
                return Some(Wait::Gate { wave });
            }
        }
        None
    }

    /// The sub-tasks to start now, at most `slots` of them, lowest wave first (plan order
    /// within a wave): each may start, is not in `running` or `held`, and shares no `Files`
    /// with one running or one chosen before it.
    pub fn ready(&self, running: &[&str], held: &[&str], slots: usize) -> Vec<&'a str> {
        let mut rows: Vec<&Row<'a>> = self.rows.iter().collect();
        rows.sort_by_key(|r| r.wave);
        let mut chosen: Vec<&'a str> = Vec::new();
        for row in rows {
            if chosen.len() >= slots {
                break;
            }
            let busy = |n: &&str| *n == row.name;
            if running.iter().any(busy) || held.iter().any(busy) || self.wait(row.name).is_some() {
                continue;
            }
            let overlaps = running.iter().chain(chosen.iter()).any(|other| {
                self.row(other)
                    .is_some_and(|o| files_overlap(row.files, o.files))
            });
            if !overlaps {
                chosen.push(row.name);
            }
        }
        chosen
    }
}

/// Whether two `Files` lists may touch the same file: equal paths, one folder holding the
/// other, or a glob whose fixed prefix covers the other path. Conservative on purpose: a false
/// overlap only serializes two sub-tasks.
pub fn files_overlap(a: &[String], b: &[String]) -> bool {
    fn stem(p: &str) -> &str {
        let cut = p.find(['*', '?', '[', '{']).unwrap_or(p.len());
        p[..cut].trim_end_matches('/')
    }
    fn covers(x: &str, y: &str) -> bool {
        let (sx, sy) = (stem(x), stem(y));
        let globbed = sx.len() < x.trim_end_matches('/').len();
        sx == sy
            || sx.is_empty()
            || y.starts_with(&format!("{sx}/"))
            || (globbed && y.starts_with(sx))
    }
    a.iter()
        .any(|x| b.iter().any(|y| covers(x, y) || covers(y, x)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Phase, State};

    const NEW: Option<State> = Some(State::Next(Phase::Research));
    const DONE: Option<State> = Some(State::Complete);
    const HUMAN: Option<State> = Some(State::HumanIntervention);

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    /// a, b in wave 1; c in wave 2 depends on a; d in wave 2 depends on nothing.
    struct Fixture {
        deps_c: Vec<String>,
        none: Vec<String>,
        files: [Vec<String>; 4],
    }

    fn fixture() -> Fixture {
        Fixture {
            deps_c: v(&["a"]),
            none: Vec::new(),
            files: [
                v(&["src/a"]),
                v(&["src/b"]),
                v(&["src/c"]),
                v(&["src/a/x.rs"]),
            ],
        }
    }

    fn waves<'a>(f: &'a Fixture, states: [Option<State>; 4]) -> Waves<'a> {
        let names = ["a", "b", "c", "d"];
        let wave = [1, 1, 2, 2];
        Waves {
            rows: (0..4)
                .map(|i| Row {
                    name: names[i],
                    wave: wave[i],
                    depends_on: if i == 2 { &f.deps_c } else { &f.none },
                    files: &f.files[i],
                    state: states[i],
                })
                .collect(),
            ..Waves::default()
        }
    }

    #[test]
    fn a_later_wave_waits_for_its_dependency_and_for_the_earlier_wave() {
        let f = fixture();
        let w = waves(&f, [NEW, NEW, NEW, NEW]);
        assert_eq!(
            w.wait("c"),
            Some(Wait::Dependency {
                on: "a",
                state: NEW
            })
        );
        assert_eq!(w.wait("d"), Some(Wait::EarlierWave { wave: 1, name: "a" }));
        assert_eq!(w.ready(&[], &[], 8), ["a", "b"]);
        let w = waves(&f, [DONE, NEW, NEW, NEW]);
        assert_eq!(w.wait("c"), Some(Wait::EarlierWave { wave: 1, name: "b" }));
        let w = Waves {
            barrier: Barrier::Dependencies,
            ..waves(&f, [DONE, NEW, NEW, NEW])
        };
        assert_eq!(w.wait("c"), None);
        assert_eq!(w.ready(&[], &[], 8), ["b", "c", "d"]);
    }

    #[test]
    fn a_failed_dependency_blocks_and_a_blocked_row_does_not_hold_the_barrier() {
        let f = fixture();
        let blocked = [("c".to_string(), "a".to_string())];
        let w = Waves {
            blocked: &blocked,
            ..waves(&f, [HUMAN, DONE, NEW, NEW])
        };
        assert_eq!(w.wait("c"), Some(Wait::Blocked { by: "a" }));
        assert!(w.wait("c").is_some_and(|w| w.is_final()));
        assert_eq!(w.wait("d"), None);
        assert_eq!(w.wait("a"), Some(Wait::Ended(State::HumanIntervention)));
    }

    #[test]
    fn gates_and_a_parent_stop_hold_every_later_wave() {
        let f = fixture();
        let none: [u32; 0] = [];
        let w = Waves {
            gates_passed: Some(&none),
            ..waves(&f, [DONE, DONE, NEW, NEW])
        };
        assert_eq!(w.wait("c"), Some(Wait::Gate { wave: 1 }));
        assert!(w.ready(&[], &[], 8).is_empty());
        let passed = [1];
        let w = Waves {
            gates_passed: Some(&passed),
            ..waves(&f, [DONE, DONE, NEW, NEW])
        };
        assert_eq!(w.ready(&[], &[], 8), ["c", "d"]);
        let w = Waves {
            parent_stop: Some("the integration gate after wave 1 failed"),
            ..waves(&f, [DONE, DONE, NEW, NEW])
        };
        assert!(matches!(w.wait("d"), Some(Wait::ParentStopped(_))));
        assert!(w.ready(&[], &[], 8).is_empty());
    }

    #[test]
    fn ready_counts_slots_what_runs_what_is_held_and_overlapping_files() {
        let f = fixture();
        let w = Waves {
            barrier: Barrier::Dependencies,
            ..waves(&f, [NEW, NEW, Some(State::Complete), NEW])
        };
        // d's files lie under a's directory: never both at once.
        assert_eq!(w.ready(&[], &[], 8), ["a", "b"]);
        assert_eq!(w.ready(&[], &[], 1), ["a"]);
        assert_eq!(w.ready(&["a"], &[], 8), ["b"]);
        assert_eq!(w.ready(&[], &["a"], 8), ["b", "d"]);
        assert_eq!(
            w.wait("zzz"),
            None,
            "a name outside the plan is not ruled by it"
        );
        let w = waves(&f, [None, NEW, NEW, NEW]);
        assert_eq!(w.wait("a"), Some(Wait::NoFolder));
    }

    #[test]
    fn overlap_rules() {
        assert!(files_overlap(&v(&["src/a.rs"]), &v(&["src/a.rs"])));
        assert!(files_overlap(&v(&["src/"]), &v(&["src/a.rs"])));
        assert!(files_overlap(&v(&["src/*.rs"]), &v(&["src/a.rs"])));
        assert!(files_overlap(&v(&["src/a.rs", "x"]), &v(&["y", "x"])));
        assert!(!files_overlap(&v(&["src/a.rs"]), &v(&["src/ab.rs"])));
        assert!(!files_overlap(&v(&["src/a.rs"]), &v(&["tests/a.rs"])));
        assert!(!files_overlap(&v(&[]), &v(&["src/a.rs"])));
    }
}
