//! One phase: write its prompt ([`super::prompt`]), run the agent, and say what came of it.
//! The caller validates the artifact against a fresh snapshot.

use super::adapter::PhaseReport;
use super::agent::{AgentEnd, AgentOutcome, AgentSpec, run_agent_on};
use super::event::Event;
use super::isolation::Workspace;
use super::sandbox::PhaseSandbox;
use super::{Run, StopKind};
use crate::state::Phase;
use crate::store::agent_exit::ExitRecord;
use crate::store::journal;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The next free attempt number of `<task>/logs/<stem>-<n>.log`.
pub fn next_attempt(logs: &Path, stem: &str) -> u32 {
    (1..)
        .find(|n| !logs.join(format!("{stem}-{n}.log")).exists())
        .unwrap_or(1)
}

/// What running a phase's agent came to.
pub struct PhaseRun {
    pub outcome: AgentOutcome,
    /// What the agent's own output said (failure signal, usage); empty for the command adapter.
    pub report: PhaseReport,
    pub log: PathBuf,
    pub attempt: u32,
    /// A budget crossed while the phase ran (its agent was stopped): the stop and its reason.
    pub budget_stop: Option<(StopKind, String)>,
}

/// Stop an agent that an automaton killed with SIGKILL left running in this task, so that two
/// agents never work on one task; returns the pid file the next agent records itself in.
pub(super) fn stop_leftover_agent(
    run: &Run<'_>,
    task_rel: &str,
    logs: &Path,
) -> super::Result<PathBuf> {
    let pid_file = logs.join("agent.pid");
    if let Some(what) = super::executor::stop_stale(&pid_file, run.limits.kill_grace)? {
        // `pid 123` or `Slurm job 45`.
        let id: Option<u64> = what.rsplit(' ').next().and_then(|n| n.parse().ok());
        run.progress.event(&Event::LeftoverAgentStopped {
            task: task_rel,
            pid: id,
            what: &what,
        });
    }
    Ok(pid_file)
}

/// The job and attempt to re-attach to: `logs/agent.pid` names a Slurm job whose log is this
/// phase's (`<phase>-<n>.log`, still there), and this run submits to Slurm too.
fn reattachable_job(run: &Run<'_>, phase: Phase, logs: &Path) -> Option<(u64, u32)> {
    if !run.executor.can_reattach() {
        return None;
    }
    let (id, log) = super::executor::slurm_record(&logs.join("agent.pid"))?;
    let log = log?;
    let n = log
        .strip_suffix(".log")?
        .strip_prefix(phase.word())?
        .strip_prefix('-')?
        .parse()
        .ok()?;
    logs.join(&log).is_file().then_some((id, n))
}

/// Name the processes of a stopped group that even SIGKILL did not end (stuck in the kernel).
pub(super) fn warn_leftovers(run: &Run<'_>, task_rel: &str, outcome: &AgentOutcome) {
    if outcome.leftovers.is_empty() {
        return;
    }
    run.progress.event(&Event::Leftovers {
        task: task_rel,
        message: "processes still alive after SIGKILL",
        leftovers: &outcome.leftovers,
        agent_pid: outcome.pid,
    });
}

/// Run the agent for one phase of a task.
pub fn run_phase(
    run: &Run<'_>,
    phase: Phase,
    task_rel: &str,
    task_dir: &Path,
    ws: Option<&Workspace>,
) -> super::Result<PhaseRun> {
    run_phase_noted(run, phase, task_rel, task_dir, ws, None)
}

/// Where one run of a phase keeps its files: the task's logs/, the attempt's number, its log
/// and its prompt.
struct AttemptFiles {
    logs: PathBuf,
    /// A Slurm job an earlier, killed run submitted for this phase (its id and attempt).
    reattach: Option<(u64, u32)>,
    attempt: u32,
    log: PathBuf,
    prompt_file: PathBuf,
}

fn attempt_files(
    run: &Run<'_>,
    phase: Phase,
    task_rel: &str,
    task_dir: &Path,
) -> super::Result<AttemptFiles> {
    let logs = logs_dir(task_rel, task_dir)?;
    // Re-attach to a job a killed run submitted (same attempt, same log) rather than submit
    // a second one.
    let reattach = reattachable_job(run, phase, &logs);
    let attempt = match &reattach {
        Some((_, n)) => *n,
        None => next_attempt(&logs, phase.word()),
    };
    Ok(AttemptFiles {
        log: logs.join(format!("{}-{attempt}.log", phase.word())),
        prompt_file: logs.join(format!("{}-{attempt}.prompt.md", phase.word())),
        logs,
        reattach,
        attempt,
    })
}

/// [`run_phase`] with a note appended to the prompt (why the phase runs again).
pub fn run_phase_noted(
    run: &Run<'_>,
    phase: Phase,
    task_rel: &str,
    task_dir: &Path,
    ws: Option<&Workspace>,
    note: Option<&str>,
) -> super::Result<PhaseRun> {
    let AttemptFiles {
        logs,
        reattach,
        attempt,
        log,
        prompt_file,
    } = attempt_files(run, phase, task_rel, task_dir)?;
    let prompt =
        super::prompt::write_prompt(run, phase, task_rel, task_dir, ws, &prompt_file, note)?;
    let env = phase_env(run, phase, task_rel, task_dir, ws, attempt, &prompt_file);
    run.progress.event(&Event::PhaseStarted {
        task: task_rel,
        phase: phase.word(),
        attempt,
        log: &log,
    });
    let pid_file = agent_pid_file(run, phase, task_rel, &logs, reattach.as_ref())?;
    // Until this run is judged, what it writes does not count (see `store::task_files`).
    let marker =
        crate::store::task_files::write_incomplete(task_dir, phase.artifact().file_name())?;
    let started = Instant::now();
    // The live line: task, phase, elapsed seconds and the agent's last line, redrawn on every
    // new line and once a second (terminal only).
    let last_line = Mutex::new(String::new());
    let show = || {
        let line = last_line.lock().unwrap_or_else(|e| e.into_inner());
        run.progress.live(&format!(
            "{task_rel} · {} · {}s · {line}",
            phase.word(),
            started.elapsed().as_secs(),
        ))
    };
    // Budgets are also checked while the phase runs, from the usage the agent streams.
    let watch = super::budget::Watch::new(run, task_dir);
    let live = |line: &str| {
        *last_line.lock().unwrap_or_else(|e| e.into_inner()) = run.adapter.live_line(line);
        show();
    };
    // The adapter reads the phase's report from the output as the runner hands it over.
    let output = Mutex::new(super::adapter::CapturedOutput::new(run.adapter));
    let on_output = |chunk: &[u8]| {
        output.lock().unwrap_or_else(|e| e.into_inner()).push(chunk);
        if let Some(w) = &watch {
            w.on_output(chunk);
        }
    };
    let cwd = ws.map_or(&run.settings.project, |w| &w.cwd);
    let sandbox = match &run.cfg.sandbox {
        Some(policy) => Some(in_sandbox(run, policy, cwd, task_dir, &env)?),
        None => None,
    };
    let spec = AgentSpec {
        command: sandbox.as_ref().map_or(run.agent_command, |s| &s.command),
        cwd,
        env: &env,
        prompt: &prompt,
        log_path: &log,
        phase_timeout: run.limits.phase,
        stall_timeout: Some(run.limits.stall),
        deadline: Some(run.deadline),
        cancel: run.cancel,
        contract_grace: run.limits.contract_grace,
        kill_grace: run.limits.kill_grace,
        on_line: Some(&live),
        on_output: Some(&on_output),
        stop: watch.as_ref().map(|w| w.stop_flag()),
        pid_file: Some(&pid_file),
        sync_once_started: Some(&marker),
    };
    let outcome = run_in_slot(run, task_rel, task_dir, phase, &spec, reattach, &show)?;
    #[cfg(debug_assertions)]
    kill_for_tests("AUTOMATON_TEST_KILL_AFTER", phase);
    warn_leftovers(run, task_rel, &outcome);
    let refused = sandbox.map(PhaseSandbox::finish).unwrap_or_default();
    note_refused(&log, &refused);
    let budget_stop = watch.as_ref().and_then(|w| w.tripped());
    let report = output
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .report(run.adapter, &log);
    let mut entry =
        super::record::journal_entry(phase.word(), attempt, &outcome, run.adapter.name(), &report);
    entry.refused_hosts = refused.into_iter().collect();
    record(run, task_rel, task_dir, entry, &report);
    Ok(PhaseRun {
        outcome,
        report,
        log,
        attempt,
        budget_stop,
    })
}

/// The phase's sandbox (`Sandbox: bwrap`): its folders, and the bridge of its network.
fn in_sandbox(
    run: &Run<'_>,
    policy: &super::sandbox::Policy,
    cwd: &Path,
    task_dir: &Path,
    env: &[(String, String)],
) -> super::Result<PhaseSandbox> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let path = std::env::var("PATH").ok();
    let exe = std::env::current_exe()?;
    let mounts = super::sandbox::bwrap::Mounts {
        project: &run.settings.project,
        cwd,
        task_dir,
        home: home.as_deref(),
        exe: &exe,
        path: path.as_deref(),
    };
    Ok(PhaseSandbox::start(
        policy,
        run.adapter,
        &mounts,
        env,
        run.agent_command,
    )?)
}

/// Each host the sandbox refused the agent, once, at the end of the phase's log.
fn note_refused(log: &Path, refused: &[(String, u32)]) {
    for (host, times) in refused {
        let line = format!(
            "automaton: the sandbox refused {times} connection(s) to {host} (not the model's \
             endpoint nor in `Network allow`)"
        );
        let _ = crate::fsx::append_line(log, &line, crate::fsx::Durability::Rebuildable);
    }
}

/// Test builds only: `<variable>=<phase>` kills automaton (SIGKILL) at one point of that
/// phase. `AUTOMATON_TEST_KILL_AFTER`: the moment its agent has ended, before anything of it
/// is judged or recorded (only the watchdog's exit record knows the agent finished);
/// `AUTOMATON_TEST_KILL_ACCEPTING`: in the middle of accepting its artifact, before the
/// `.incomplete` marker goes.
#[cfg(debug_assertions)]
pub(super) fn kill_for_tests(variable: &str, phase: Phase) {
    if std::env::var(variable).is_ok_and(|p| p == phase.word()) {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    }
}

/// A phase whose agent ended with success (its watchdog's [`ExitRecord`], made on this boot)
/// but whose work no judge has seen: the run was killed in between. Its artifact is still
/// marked (`.incomplete`, not sealed: a judged attempt's marker is); the phase and attempt.
pub(super) fn finished_unjudged(dir: &Path) -> Option<(Phase, u32)> {
    let marker = crate::store::task_files::read_marker(dir).ok()??;
    if marker.left.is_some() {
        return None;
    }
    let phase = Phase::ALL
        .into_iter()
        .find(|p| p.artifact() == marker.artifact)?;
    let logs = dir.join("logs");
    let attempt = next_attempt(&logs, phase.word()).checked_sub(1)?;
    let log = logs.join(format!("{}-{attempt}.log", phase.word()));
    let record = ExitRecord::read(&ExitRecord::path_for(&log))?;
    record.succeeded_this_boot().then_some((phase, attempt))
}

/// The run of a phase that [`finished_unjudged`]: read back from its log, as if it had just
/// ended, so that it is judged (and verified, committed, frozen) like any other.
pub(super) fn recovered(
    run: &Run<'_>,
    phase: Phase,
    task_rel: &str,
    task_dir: &Path,
    attempt: u32,
) -> PhaseRun {
    let log = task_dir
        .join("logs")
        .join(format!("{}-{attempt}.log", phase.word()));
    run.progress.event(&Event::PhaseRecovered {
        task: task_rel,
        phase: phase.word(),
        attempt,
        log: &log,
    });
    let outcome = AgentOutcome {
        end: AgentEnd::Exited(super::agent::ExitStatusInfo {
            code: Some(0),
            signal: None,
        }),
        contract_met: false,
        stopped_after_contract: false,
        pid: 0,
        duration: Duration::ZERO,
        last_line: None,
        leftovers: Vec::new(),
    };
    let report = super::adapter::parse_log(run.adapter, &log);
    let entry =
        super::record::journal_entry(phase.word(), attempt, &outcome, run.adapter.name(), &report);
    record(run, task_rel, task_dir, entry, &report);
    PhaseRun {
        outcome,
        report,
        log,
        attempt,
        budget_stop: None,
    }
}

/// The task's `logs/` folder, made when missing; never the task folder itself: one deleted
/// under the run stops the task ([`super::RunError::TaskGone`]) instead of being made again.
pub(super) fn logs_dir(task_rel: &str, task_dir: &Path) -> super::Result<PathBuf> {
    let logs = task_dir.join("logs");
    match fs::create_dir(&logs) {
        Err(_) if !task_dir.is_dir() => Err(super::RunError::TaskGone(task_rel.to_string())),
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(std::io::Error::new(
            e.kind(),
            format!("cannot create {}: {e}", logs.display()),
        )
        .into()),
        _ => Ok(logs),
    }
}

/// Where the phase's agent is recorded: the Slurm job re-attached to keeps its record; any
/// other start first stops what a killed run left running in the task.
fn agent_pid_file(
    run: &Run<'_>,
    phase: Phase,
    task_rel: &str,
    logs: &Path,
    reattach: Option<&(u64, u32)>,
) -> super::Result<PathBuf> {
    match reattach {
        Some((id, _)) => {
            run.progress.event(&Event::SlurmReattached {
                task: task_rel,
                phase: phase.word(),
                job: *id,
            });
            Ok(logs.join("agent.pid"))
        }
        None => stop_leftover_agent(run, task_rel, logs),
    }
}

/// Run the agent once a slot (and, for a local model, its VRAM) is free; on a terminal the
/// live line is redrawn once a second meanwhile.
fn run_in_slot(
    run: &Run<'_>,
    task_rel: &str,
    task_dir: &Path,
    phase: Phase,
    spec: &AgentSpec<'_>,
    reattach: Option<(u64, u32)>,
    show: &(dyn Fn() + Sync),
) -> super::Result<AgentOutcome> {
    std::thread::scope(|scope| {
        // The once-a-second redraw waits on a channel: dropping the sender when the agent is
        // done ends it at once, not at its next tick.
        let (done, finished) = mpsc::channel::<()>();
        if run.progress.is_live() {
            scope.spawn(move || {
                while let Err(RecvTimeoutError::Timeout) =
                    finished.recv_timeout(Duration::from_secs(1))
                {
                    show();
                }
            });
        }
        let _slot = run.slots.acquire(run.cancel);
        // With Slurm the need is a GRES request instead: the cluster packs the jobs.
        let _vram = match &run.vram {
            Some(gate) if run.executor.runs_on_this_host() => match gate.need(task_dir) {
                Some(need) => gate
                    .admit(task_rel, need, run.cancel)
                    .map_err(std::io::Error::other)?,
                None => None,
            },
            _ => None,
        };
        let job = super::executor::Job {
            task: task_rel.to_string(),
            phase: phase.word().to_string(),
            vram_gb: run.vram_need_gb(task_dir),
            reattach: reattach.map(|(id, _)| id),
        };
        let outcome = run_agent_on(spec, run.executor, &job);
        drop(done);
        outcome
    })
    .map_err(Into::into)
}

/// The environment of a phase's agent: what it works on, where, and its attempt.
fn phase_env(
    run: &Run<'_>,
    phase: Phase,
    task_rel: &str,
    task_dir: &Path,
    ws: Option<&Workspace>,
    attempt: u32,
    prompt_file: &Path,
) -> Vec<(String, String)> {
    let artifact = task_dir.join(phase.artifact().file_name());
    let mut env: Vec<(String, String)> = [
        ("AUTOMATON_PHASE", phase.word().to_string()),
        ("AUTOMATON_TASK", task_rel.to_string()),
        ("AUTOMATON_TASK_DIR", task_dir.display().to_string()),
        ("AUTOMATON_ARTIFACT", artifact.display().to_string()),
        ("AUTOMATON_PROMPT_FILE", prompt_file.display().to_string()),
        (
            "AUTOMATON_PROJECT",
            run.settings.project.display().to_string(),
        ),
        ("AUTOMATON_ATTEMPT", attempt.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    env.extend(workspace_env(ws));
    env.extend(port_env(run, task_rel));
    env
}

/// What a finished phase leaves: its spend counted against the run's budget, its journal
/// line, and the model it ran on.
fn record(
    run: &Run<'_>,
    task_rel: &str,
    task_dir: &Path,
    mut entry: journal::Entry,
    report: &super::adapter::PhaseReport,
) {
    run.budgets.add(super::budget::phase_spend(report));
    entry.rework_round = Some(crate::store::rework::count(task_dir)).filter(|n| *n > 0);
    if let Err(e) = journal::append(task_dir, &entry) {
        run.progress.event(&super::event::Event::Warning {
            task: task_rel,
            message: &format!("the phase's journal line is lost: {e}"),
        });
    }
    if let Some(model) = &report.model {
        journal::record_model(
            &run.settings.project,
            &journal::AgentModel {
                model: model.clone(),
                context_window: report.context_window,
                agent: run.adapter.name().to_string(),
                journal: format!("{task_rel}/logs/journal.jsonl"),
            },
        );
    }
}

/// `AUTOMATON_WORKTREE` and `AUTOMATON_BRANCH` for an isolated task.
pub(super) fn workspace_env(ws: Option<&Workspace>) -> Vec<(String, String)> {
    ws.map(|w| {
        vec![
            (
                "AUTOMATON_WORKTREE".to_string(),
                w.worktree.display().to_string(),
            ),
            ("AUTOMATON_BRANCH".to_string(), w.branch.clone()),
        ]
    })
    .unwrap_or_default()
}

/// `AUTOMATON_PORT` for a task that holds one (see [`super::ports`]).
pub(super) fn port_env(run: &Run<'_>, task_rel: &str) -> Option<(String, String)> {
    run.ports
        .port_of(task_rel)
        .map(|p| ("AUTOMATON_PORT".to_string(), p.to_string()))
}
