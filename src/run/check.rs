//! The commands automaton runs itself through the agent runner, under the same caps and
//! logs as a phase: the verify command (after implement, before a PASS counts, and as a wave's
//! integration gate) and the setup command of a new worktree. One step, one mapping from how
//! the command ended to a stop.

use super::agent::{AgentEnd, AgentSpec, run_agent};
use super::event::{Check, CheckFinished, CheckStarted};
use super::isolation::Workspace;
use super::phase::{
    logs_dir, next_attempt, port_env, stop_leftover_agent, warn_leftovers, workspace_env,
};
use super::{Run, StopKind};
use std::path::Path;

/// Run the verify command (same runner, same caps) in the task's workspace, logging to
/// `logs/<stem>-<n>.log` (`verify`, or `integration-<wave>` for the gate after a wave).
/// `Ok(None)` when it passed; `Ok(Some(reason))` when it failed.
pub fn run_verify(
    run: &Run<'_>,
    command: &str,
    task_rel: &str,
    task_dir: &Path,
    ws: Option<&Workspace>,
    stem: &str,
) -> super::Result<Option<(StopKind, String)>> {
    run_check(run, Check::Verify, command, task_rel, task_dir, ws, stem)
}

/// Run the setup command once in a new worktree (same runner, the phase time cap), logging
/// to `logs/setup-<n>.log`. `Ok(None)` when it passed; `Ok(Some(reason))` when it failed
/// (a failure or a timeout is an isolation stop, exit 22).
pub fn run_setup(
    run: &Run<'_>,
    command: &str,
    task_rel: &str,
    task_dir: &Path,
    ws: &Workspace,
) -> super::Result<Option<(StopKind, String)>> {
    Ok(run_check(
        run,
        Check::Setup,
        command,
        task_rel,
        task_dir,
        Some(ws),
        "setup",
    )?
    .map(|(kind, reason)| match kind {
        StopKind::VerifyFailed | StopKind::PhaseTimeout | StopKind::Stalled => {
            (StopKind::Isolation, reason)
        }
        other => (other, reason),
    }))
}

/// A command automaton runs itself (`what`: verify or setup), through the agent runner.
fn run_check(
    run: &Run<'_>,
    what: Check,
    command: &str,
    task_rel: &str,
    task_dir: &Path,
    ws: Option<&Workspace>,
    stem: &str,
) -> super::Result<Option<(StopKind, String)>> {
    let logs = logs_dir(task_rel, task_dir)?;
    let attempt = next_attempt(&logs, stem);
    let log = logs.join(format!("{stem}-{attempt}.log"));
    // The command runs as written; everything that shows it (progress, `--json`, the stop
    // reason that reaches `.stop`, the journal and notify) shows it as `config` does.
    let shown = crate::settings::value::redact(command);
    run.progress.event(&what.started(CheckStarted {
        task: task_rel,
        command: &shown,
        log: &log,
    }));
    let mut env = vec![(
        "AUTOMATON_TASK_DIR".to_string(),
        task_dir.display().to_string(),
    )];
    env.extend(workspace_env(ws));
    env.extend(port_env(run, task_rel));
    let pid_file = stop_leftover_agent(run, task_rel, &logs)?;
    let spec = AgentSpec {
        command,
        cwd: ws.map_or(&run.settings.project, |w| &w.cwd),
        env: &env,
        prompt: "",
        log_path: &log,
        phase_timeout: run.limits.phase,
        stall_timeout: None,
        deadline: Some(run.deadline),
        cancel: run.cancel,
        contract_grace: run.limits.contract_grace,
        kill_grace: run.limits.kill_grace,
        on_line: None,
        on_output: None,
        pid_file: Some(&pid_file),
        sync_once_started: None,
        stop: None,
    };
    let outcome = {
        let _slot = run.slots.acquire(run.cancel);
        run_agent(&spec)?
    };
    warn_leftovers(run, task_rel, &outcome);
    let rel_log = format!("{task_rel}/logs/{stem}-{attempt}.log");
    let failed = match &outcome.end {
        AgentEnd::Exited(s) if s.success() => None,
        AgentEnd::Exited(_) => Some((
            StopKind::VerifyFailed,
            format!(
                "{what} command `{shown}` failed ({}); see {rel_log}",
                // It is the verify command that exited, not the agent.
                outcome.end.describe().replacen("agent ", "", 1)
            ),
        )),
        other => Some(super::stop_for(other).map_or(
            (
                StopKind::VerifyFailed,
                format!("{what} command `{shown}`: {}", other.describe()),
            ),
            |k| (k, format!("{what} command `{shown}`: {}", other.describe())),
        )),
    };
    run.progress.event(&what.finished(CheckFinished {
        task: task_rel,
        failure: failed.as_ref().map(|(_, r)| r.as_str()),
        log: &log,
    }));
    Ok(failed)
}
