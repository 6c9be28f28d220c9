//! The notify command (`- **Notify command**:`): run when a task waits for approval, needs a
//! human, completes, or a run stops, with one JSON object on stdin. It is a courtesy: it runs
//! under a short timeout (`AUTOMATON_NOTIFY_TIMEOUT`, 10 s by default), and a
//! failure or a hang is a warning that never changes the run's outcome.
//!
//! The runner is one small function, [`run_notify`], so it can move onto a shared process
//! supervisor without touching its callers.

use crate::process::group::{Event, Group, Options, Output};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Between TERM and KILL for a notify command that ran past its timeout.
const NOTIFY_KILL_GRACE: Duration = Duration::from_millis(500);

/// How long the notify command may run before its process group is killed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What a notification says.
#[derive(Debug, Clone)]
pub struct Notice<'a> {
    /// `awaiting_approval`, `question`, `human_intervention`, `complete` or `stopped` (a run stop:
    /// Ctrl-C, the total time cap).
    pub event: &'a str,
    /// The task path, relative to the project.
    pub task: &'a str,
    /// Its `.state` word now.
    pub state: &'a str,
    /// The stop kind (`awaiting_approval`, `verdict_failed`, …); null for `complete`.
    pub kind: Option<&'a str>,
    pub reason: Option<&'a str>,
    pub exit_code: u8,
    /// The command a person runs next (null when there is nothing to run).
    pub command: Option<&'a str>,
}

impl Notice<'_> {
    pub fn to_json(&self, project: &Path) -> Value {
        json!({
            "v": 1,
            "event": self.event,
            "task": self.task,
            "state": self.state,
            "kind": self.kind,
            "reason": self.reason,
            "exit_code": self.exit_code,
            "command": self.command,
            "project": project.display().to_string(),
        })
    }
}

/// The event word for a stop kind.
pub fn event_for(kind: crate::plan::decide::StopKind) -> &'static str {
    use crate::plan::decide::StopKind;
    match kind {
        StopKind::AwaitingApproval => "awaiting_approval",
        StopKind::Questions => "question",
        k if k.is_task_stop() => "human_intervention",
        _ => "stopped",
    }
}

/// Send a notice through the configured notify command, if any. Its output goes to
/// `<task>/logs/notify.log`; a failure is a warning on the progress stream.
pub fn send(run: &super::Run<'_>, notice: &Notice<'_>) {
    let Some(command) = run.cfg.notify.command.as_deref() else {
        return;
    };
    let timeout = run.cfg.notify.timeout;
    let project = &run.settings.project;
    let payload = notice.to_json(project).to_string();
    let log = project.join(notice.task).join("logs/notify.log");
    let env = [
        ("AUTOMATON_EVENT", notice.event),
        ("AUTOMATON_TASK", notice.task),
    ];
    if let Err(why) = run_notify(command, project, &payload, &env, &log, timeout) {
        run.progress.event(&super::event::Event::Warning {
            task: notice.task,
            message: &format!("notify command {why}"),
        });
    }
}

/// Run `command` with `sh -c` in `cwd`, as a child in its own process group, `payload` on
/// stdin, output appended to `log`. On timeout the whole group is killed. `Err` says what
/// went wrong (`exited with status 3`, `timed out after 10s`).
pub fn run_notify(
    command: &str,
    cwd: &Path,
    payload: &str,
    env: &[(&str, &str)],
    log: &Path,
    timeout: Duration,
) -> Result<(), String> {
    let out = log
        .parent()
        .map(std::fs::create_dir_all)
        .transpose()
        .and_then(|_| crate::fsx::open_append(log))
        .map_err(|e| format!("could not open {}: {e}", log.display()))?;
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .envs(env.iter().copied());
    let stdin = format!("{payload}\n");
    // Its own flag: a Ctrl-C of the run must not cut a notice short; the timeout does.
    let never = AtomicBool::new(false);
    let mut group = Group::spawn(
        cmd,
        Options {
            stdin: Some(stdin.as_bytes()),
            output: Output::Log(out),
            cancel: &never,
            kill_grace: NOTIFY_KILL_GRACE,
        },
    )
    .map_err(|e| {
        let shown = crate::settings::value::redact(command);
        format!("`{shown}` could not start: {e}")
    })?;
    let deadline = Instant::now() + timeout;
    loop {
        match group.wait(Some(deadline)) {
            Ok(Event::Exited(_)) => {
                let status = group.finish().map_err(|e| format!("`{command}`: {e}"))?;
                return if status.success() {
                    Ok(())
                } else {
                    Err(format!("`{command}` failed ({status})"))
                };
            }
            Ok(Event::Woke | Event::Cancelled) if Instant::now() < deadline => {
                let _ = group.take_fresh();
            }
            Ok(_) => {
                let _ = group.stop();
                return Err(format!(
                    "`{command}` timed out after {}; its process group was stopped",
                    super::agent::human_duration(timeout)
                ));
            }
            Err(e) => return Err(format!("`{command}`: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hanging_command_is_killed_with_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("logs/notify.log");
        let pidfile = dir.path().join("pid");
        let cmd = format!("sleep 60 & echo $! > {}; cat; sleep 60", pidfile.display());
        let r = run_notify(
            &cmd,
            dir.path(),
            "{}",
            &[],
            &log,
            Duration::from_millis(500),
        );
        assert!(r.unwrap_err().contains("timed out"));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The grandchild went with the group (it may linger as a zombie of init for a moment).
        let start = Instant::now();
        while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        }) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "grandchild {pid} survived"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let ok = run_notify(
            "cat >/dev/null; exit 0",
            dir.path(),
            "{}",
            &[],
            &log,
            DEFAULT_TIMEOUT,
        );
        assert_eq!(ok, Ok(()));
        let failed = run_notify("exit 3", dir.path(), "{}", &[], &log, DEFAULT_TIMEOUT);
        assert!(failed.unwrap_err().contains("failed"));
    }
}
