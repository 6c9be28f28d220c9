//! `logs/agent.pid`: what a running phase's agent is, and which automaton runs it. Written by
//! the agent runner as the agent starts and removed when it ends; read by a later run (to stop
//! what a run killed with SIGKILL left behind, or to re-attach to its Slurm job), by
//! `logs --follow` (has the agent ended?) and by `watch` (which task has an agent at work).
//!
//! One line, words separated by a space:
//!
//! ```text
//! v2 group <pid> <start> <owner pid> <owner start>          local and tmux agents
//! v2 slurm <job id> <owner pid> <owner start> [<log name>]  a Slurm job
//! ```
//!
//! `<pid>` leads the agent's process group and `<start>` is its start time (clock ticks since
//! boot, field 22 of `/proc/<pid>/stat`), so a recycled pid is never taken for the agent. The
//! owner is the automaton that runs the agent, by pid and start time: while it runs, no other
//! automaton stops its agent. `<log name>` is the Slurm job's phase log (`design-1.log`), for
//! re-attaching.
//!
//! Files written before the version word existed (version 1) are still read: `<pid> <start>`
//! with the owner's two words or without them (the tmux executor wrote none), and
//! `slurm <job id> [<log name>]`. A later version this one does not know reads as nothing.

use std::io;
use std::path::Path;

/// The version [`AgentPidRecord::render`] writes.
pub const AGENT_PID_VERSION: u32 = 2;

/// What runs the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Agent {
    /// A process group (local and tmux): its leader's pid and start time.
    Group { pid: u32, start: u64 },
    /// A Slurm job, and the phase log it writes (absent in old records).
    Slurm { job: u64, log: Option<String> },
}

/// The automaton that runs an agent: its pid and start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    pub start: u64,
}

/// One `logs/agent.pid`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentPidRecord {
    /// The version the record was written in (1: a file from before versions).
    pub version: u32,
    pub agent: Agent,
    /// Absent only in version 1 records of the tmux executor and of Slurm.
    pub owner: Option<Owner>,
}

impl AgentPidRecord {
    /// A record of the current version.
    pub fn new(agent: Agent, owner: Owner) -> Self {
        AgentPidRecord {
            version: AGENT_PID_VERSION,
            agent,
            owner: Some(owner),
        }
    }

    /// The line to write (with its newline), always in the current version.
    pub fn render(&self) -> String {
        let (owner, owner_start) = self.owner.map_or((0, 0), |o| (o.pid, o.start));
        match &self.agent {
            Agent::Group { pid, start } => {
                format!("v{AGENT_PID_VERSION} group {pid} {start} {owner} {owner_start}\n")
            }
            Agent::Slurm { job, log } => {
                let mut line = format!("v{AGENT_PID_VERSION} slurm {job} {owner} {owner_start}");
                if let Some(log) = log {
                    line.push(' ');
                    line.push_str(log);
                }
                line.push('\n');
                line
            }
        }
    }

    /// Read a record's text; `None` when it is not one (empty, torn, or of a later version).
    pub fn parse(text: &str) -> Option<AgentPidRecord> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let num = |i: usize| words.get(i)?.parse::<u64>().ok();
        let owner = |i: usize| {
            let (pid, start) = (u32::try_from(num(i)?).ok()?, num(i + 1)?);
            (pid != 0).then_some(Owner { pid, start })
        };
        let group = |i: usize| {
            Some(Agent::Group {
                pid: u32::try_from(num(i)?).ok().filter(|&p| p > 0)?,
                start: num(i + 1)?,
            })
        };
        let log = |i: usize| words.get(i).map(|w| w.to_string());
        let (version, agent, owner) = match words.first().copied()? {
            "v2" => match *words.get(1)? {
                "group" => (2, group(2)?, owner(4)),
                "slurm" => (
                    2,
                    Agent::Slurm {
                        job: num(2)?,
                        log: log(5),
                    },
                    owner(3),
                ),
                _ => return None,
            },
            "slurm" => (
                1,
                Agent::Slurm {
                    job: num(1)?,
                    log: log(2),
                },
                None,
            ),
            w if w.starts_with('v') => return None,
            _ => (1, group(0)?, owner(2)),
        };
        Some(AgentPidRecord {
            version,
            agent,
            owner,
        })
    }

    /// The record in `path`: `Ok(None)` when there is none (or it is not one).
    pub fn read(path: &Path) -> io::Result<Option<AgentPidRecord>> {
        match crate::fsx::read_to_string(path) {
            Ok(text) => Ok(Self::parse(&text)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("cannot read {}: {e}", path.display()),
            )),
        }
    }

    /// Write the record to `path` atomically; `durable` also fsyncs it (a Slurm job outlives
    /// this machine, a local agent does not).
    pub fn write(&self, path: &Path, durable: bool) -> io::Result<()> {
        let durability = if durable {
            crate::fsx::Durability::Durable
        } else {
            crate::fsx::Durability::Rebuildable
        };
        crate::fsx::write_atomic_with(path, self.render().as_bytes(), durability)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_in_the_current_version() {
        let owner = Owner { pid: 42, start: 7 };
        for agent in [
            Agent::Group {
                pid: 123,
                start: 456,
            },
            Agent::Slurm {
                job: 9,
                log: Some("design-1.log".into()),
            },
            Agent::Slurm { job: 9, log: None },
        ] {
            let rec = AgentPidRecord::new(agent, owner);
            assert_eq!(AgentPidRecord::parse(&rec.render()), Some(rec));
        }
        assert_eq!(
            AgentPidRecord::new(Agent::Group { pid: 5, start: 6 }, owner).render(),
            "v2 group 5 6 42 7\n"
        );
    }

    #[test]
    fn version_1_records_are_still_read() {
        let parse = |t: &str| AgentPidRecord::parse(t).unwrap();
        let local = parse("123 456 42 7\n");
        assert_eq!(local.version, 1);
        assert_eq!(
            local.agent,
            Agent::Group {
                pid: 123,
                start: 456
            }
        );
        assert_eq!(local.owner, Some(Owner { pid: 42, start: 7 }));
        // The tmux executor wrote no owner.
        assert_eq!(parse("123 456\n").owner, None);
        assert_eq!(
            parse("slurm 9 design-1.log").agent,
            Agent::Slurm {
                job: 9,
                log: Some("design-1.log".into())
            }
        );
        assert_eq!(parse("slurm 9").agent, Agent::Slurm { job: 9, log: None });
    }

    #[test]
    fn what_is_not_a_record_reads_as_none() {
        for text in [
            "",
            "\n",
            "12",
            "abc 1",
            "0 5",
            "v3 group 1 2 3 4",
            "v2 lxc 1 2",
            "slurm x",
        ] {
            assert_eq!(AgentPidRecord::parse(text), None, "{text:?}");
        }
    }
}
