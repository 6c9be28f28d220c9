//! The `slurm` executor: each phase is one batch job.
//!
//! - `sbatch --parsable --job-name=automaton:<task>:<phase> --output=<phase log>
//!   --open-mode=append --chdir=<task's working folder> --export=ALL [--gres=<vram>:<n>G]
//!   <Slurm options> <logs/<phase>-<n>.sbatch.sh>`. The job script exports the AUTOMATON_*
//!   contract, runs the agent with `sh -c` and the prompt file on stdin, and writes the agent's
//!   exit status to `logs/<phase>-<n>.status`. So the project folder must be shared between the
//!   submit host and the nodes (same path), and the agent's program must exist on the nodes.
//! - The job id goes into the pid file (`slurm <id> <phase>-<n>.log`) at once, so a later run
//!   after a SIGKILL of automaton finds the job: when that run comes to the same phase it
//!   re-attaches to it ([`Job::reattach`]: follows the log from its start, and the job to its
//!   end, or reads the outcome of a job that ended meanwhile) and never submits a second job
//!   for it; a job of another phase is cancelled.
//! - automaton follows the phase log (Slurm writes it) for CONTRACT_MET, stalls and the live
//!   line: it reads what was appended every [`TICK`], and asks `squeue` for the job's state every
//!   [`QUEUE_EVERY`] (no accounting daemon needed). The exit status comes from the status file,
//!   or from `scontrol show job` (`ExitCode=`) when the job ended without writing one.
//! - A timeout, stall or Ctrl-C cancels the job with `scancel` (Slurm sends TERM, then KILL after
//!   its KillWait) and waits for it to leave the running states.

use super::{
    AgentSpec, Executor, Job, Running, beside, exit_code, killed_by, output_of, read_status,
};
use crate::process::{Event, Leftover, signals};
use crate::store::agent_pid::{Agent, AgentPidRecord};
use rustix::event::{PollFd, PollFlags, poll};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the phase log is read for new output.
const TICK: Duration = Duration::from_millis(200);
/// How often `squeue` is asked whether the job still runs.
const QUEUE_EVERY: Duration = Duration::from_secs(2);

/// Submits phases to Slurm.
#[derive(Debug)]
pub struct Slurm {
    /// `- **Slurm options**:`, split on whitespace (e.g. `--partition=gpu --time=2:00:00`).
    options: Vec<String>,
    /// The GRES name VRAM is requested as (`vram` → `--gres=vram:<n>G`).
    pub gres: String,
}

impl Slurm {
    /// An error naming the setting when `sbatch` is missing.
    pub fn new(options: &str, gres: &str) -> io::Result<Slurm> {
        match Command::new("sbatch").arg("--version").output() {
            Ok(o) if o.status.success() => Ok(Slurm {
                options: options.split_whitespace().map(str::to_string).collect(),
                gres: gres.trim().to_string(),
            }),
            _ => Err(io::Error::new(
                io::ErrorKind::NotFound,
                "`- **Executor**: slurm` needs Slurm's sbatch, which was not found on PATH: run \
                 on a Slurm submit host (or start a test cluster with .ci/slurm-one-node.sh) or \
                 set `- **Executor**: local`",
            )),
        }
    }

    /// The `sbatch` arguments for a phase (the script path last).
    pub fn sbatch_args(
        &self,
        spec: &AgentSpec<'_>,
        job: &Job,
        script: &std::path::Path,
    ) -> Vec<String> {
        let mut args = vec![
            "--parsable".to_string(),
            format!("--job-name=automaton:{}:{}", job.task, job.phase),
            format!("--output={}", spec.log_path.display()),
            "--open-mode=append".into(),
            format!("--chdir={}", spec.cwd.display()),
            "--export=ALL".into(),
        ];
        if let Some(gb) = job.vram_gb.filter(|g| *g > 0 && !self.gres.is_empty()) {
            args.push(format!("--gres={}:{gb}G", self.gres));
        }
        args.extend(self.options.iter().cloned());
        args.push(script.display().to_string());
        args
    }
}

impl Executor for Slurm {
    fn name(&self) -> &'static str {
        "slurm"
    }

    /// Jobs run on the cluster's nodes.
    fn runs_on_this_host(&self) -> bool {
        false
    }

    /// A job runs on without the automaton that submitted it.
    fn can_reattach(&self) -> bool {
        true
    }

    fn start<'a>(&'a self, spec: &AgentSpec<'a>, job: &Job) -> io::Result<Box<dyn Running + 'a>> {
        // The job appends to the log; it is read from here.
        drop(super::super::agent::open_log(spec.log_path)?);
        if let Some(id) = job.reattach {
            // The job wrote this log from its start: read it all (CONTRACT_MET included).
            return Ok(Box::new(SlurmRun {
                id,
                log: File::open(spec.log_path)?,
                offset: 0,
                fresh: Vec::new(),
                status_path: beside(spec.log_path, "status"),
                status: None,
                cancel: spec.cancel,
                cancel_wakes: signals::is_policy_flag(spec.cancel),
                kill_grace: spec.kill_grace,
                // Ask the queue at the first wait: the job may have ended meanwhile.
                last_queue: Instant::now() - QUEUE_EVERY,
                done: false,
                log_name: log_name(spec.log_path),
            }));
        }
        let mut log = File::open(spec.log_path)?;
        let offset = log.seek(SeekFrom::End(0))?;
        let status = beside(spec.log_path, "status");
        let script = beside(spec.log_path, "sbatch.sh");
        let _ = std::fs::remove_file(&status);
        let stdin = super::stdin_file(spec)?;
        crate::fsx::write_atomic(
            &script,
            super::wrapper_script(spec, &stdin, &status, None).as_bytes(),
        )?;
        let mut cmd = Command::new("sbatch");
        cmd.args(self.sbatch_args(spec, job, &script))
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(spec.cwd);
        let out = output_of(&mut cmd, "sbatch")?;
        let id: u64 = out
            .trim()
            .split(';')
            .next()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| io::Error::other(format!("sbatch printed no job id: {out:?}")))?;
        Ok(Box::new(SlurmRun {
            id,
            log,
            offset,
            fresh: Vec::new(),
            status_path: status,
            status: None,
            cancel: spec.cancel,
            cancel_wakes: signals::is_policy_flag(spec.cancel),
            kill_grace: spec.kill_grace,
            last_queue: Instant::now(),
            done: false,
            log_name: log_name(spec.log_path),
        }))
    }
}

/// A phase running as a Slurm job.
struct SlurmRun<'a> {
    id: u64,
    log: File,
    offset: u64,
    fresh: Vec<u8>,
    status_path: PathBuf,
    status: Option<ExitStatus>,
    cancel: &'a AtomicBool,
    cancel_wakes: bool,
    kill_grace: Duration,
    last_queue: Instant,
    done: bool,
    /// `<phase>-<n>.log`, recorded beside the id so a rerun can re-attach.
    log_name: String,
}

fn log_name(log: &std::path::Path) -> String {
    log.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl SlurmRun<'_> {
    /// What was appended to the log since the last read.
    fn follow(&mut self) -> io::Result<()> {
        self.log.seek(SeekFrom::Start(self.offset))?;
        let mut buf = Vec::new();
        self.log.read_to_end(&mut buf)?;
        self.offset += buf.len() as u64;
        self.fresh.extend_from_slice(&buf);
        Ok(())
    }

    /// The status file and job script are done with once the status is known.
    fn tidy(&self) {
        let _ = std::fs::remove_file(&self.status_path);
        let _ = std::fs::remove_file(beside(&self.status_path, "sbatch.sh"));
    }

    /// The job's status once it has ended, else None.
    fn ended(&mut self, ask_queue: bool) -> Option<ExitStatus> {
        if let Some(s) = read_status(&self.status_path) {
            return Some(s);
        }
        if !ask_queue {
            return None;
        }
        self.last_queue = Instant::now();
        if job_active(self.id) {
            return None;
        }
        // Ended without a status file (cancelled, failed to start, node failure). The file may
        // land a moment after the job left the queue on a shared file system: look once more.
        std::thread::sleep(TICK);
        Some(read_status(&self.status_path).unwrap_or_else(|| scontrol_status(self.id)))
    }
}

impl Running for SlurmRun<'_> {
    fn id(&self) -> u32 {
        u32::try_from(self.id).unwrap_or(u32::MAX)
    }

    fn record(&self) -> AgentPidRecord {
        let agent = Agent::Slurm {
            job: self.id,
            log: Some(self.log_name.clone()),
        };
        AgentPidRecord::new(agent, super::this_automaton())
    }

    fn wait(&mut self, deadline: Option<Instant>) -> io::Result<Event> {
        if let Some(s) = self.status {
            return Ok(Event::Exited(s));
        }
        let now = Instant::now();
        let mut until = now + TICK;
        if let Some(d) = deadline {
            until = until.min(d);
        }
        if self.cancel.load(Ordering::SeqCst) {
            until = now;
        }
        let left = until.saturating_duration_since(now);
        if !left.is_zero() {
            let wake = if self.cancel_wakes {
                signals::wake_fd()
            } else {
                None
            };
            let ts = rustix::event::Timespec {
                tv_sec: left.as_secs() as i64,
                tv_nsec: left.subsec_nanos().into(),
            };
            let mut fds: Vec<PollFd<'_>> = wake
                .into_iter()
                .map(|fd| PollFd::from_borrowed_fd(fd, PollFlags::IN))
                .collect();
            match poll(&mut fds, Some(&ts)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.follow()?;
        let ask = self.last_queue.elapsed() >= QUEUE_EVERY;
        if let Some(s) = self.ended(ask) {
            self.follow()?;
            self.status = Some(s);
            return Ok(Event::Exited(s));
        }
        if self.cancel.load(Ordering::SeqCst) {
            return Ok(Event::Cancelled);
        }
        Ok(Event::Woke)
    }

    fn take_fresh(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.fresh)
    }

    fn finish(&mut self) -> io::Result<ExitStatus> {
        self.done = true;
        match self.status {
            Some(s) => {
                self.tidy();
                Ok(s)
            }
            None => self.stop(),
        }
    }

    fn stop(&mut self) -> io::Result<ExitStatus> {
        self.done = true;
        if self.status.is_none() {
            cancel(self.id, self.kill_grace);
            self.status = Some(read_status(&self.status_path).unwrap_or(killed_by(15)));
        }
        self.follow()?;
        self.tidy();
        Ok(self.status.unwrap_or(killed_by(15)))
    }

    fn leftovers(&self) -> Vec<Leftover> {
        Vec::new()
    }
}

impl Drop for SlurmRun<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = Command::new("scancel").arg(self.id.to_string()).output();
        }
    }
}

/// Whether job `id` is still queued or running (`squeue` knows it in a non-final state).
pub fn job_active(id: u64) -> bool {
    let Ok(out) = Command::new("squeue")
        .args(["-h", "-o", "%T", "-j"])
        .arg(id.to_string())
        .output()
    else {
        return false;
    };
    let state = String::from_utf8_lossy(&out.stdout);
    let state = state.trim();
    out.status.success()
        && !state.is_empty()
        && !matches!(
            state,
            "COMPLETED"
                | "FAILED"
                | "CANCELLED"
                | "TIMEOUT"
                | "NODE_FAIL"
                | "OUT_OF_MEMORY"
                | "PREEMPTED"
                | "BOOT_FAIL"
                | "DEADLINE"
        )
}

/// Job ids waiting for the next batched `scancel`.
static PENDING: Mutex<Vec<u64>> = Mutex::new(Vec::new());
/// Held while one `scancel` runs, so the ids that arrive meanwhile go out in the next.
static SENDER: Mutex<()> = Mutex::new(());
/// How long a cancel waits for others to join its `scancel` (a Ctrl-C or total timeout stops
/// every running phase of a wave within a few milliseconds of each other).
const BATCH_WINDOW: Duration = Duration::from_millis(200);

/// `scancel` the job, then wait (up to `grace` plus Slurm's own few seconds) for it to leave
/// the queue's running states. Cancels that arrive together share one `scancel` (see
/// [`cancel_many`]).
pub fn cancel(id: u64, grace: Duration) {
    cancel_many(&[id], grace);
}

/// Cancel several jobs with one `scancel <id> <id> ...`, joined by the ids other threads are
/// cancelling at the same moment, then wait for them to leave the running states.
pub fn cancel_many(ids: &[u64], grace: Duration) {
    if ids.is_empty() {
        return;
    }
    PENDING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend_from_slice(ids);
    std::thread::sleep(BATCH_WINDOW);
    {
        let _sending = SENDER.lock().unwrap_or_else(|e| e.into_inner());
        let batch = std::mem::take(&mut *PENDING.lock().unwrap_or_else(|e| e.into_inner()));
        if !batch.is_empty() {
            let _ = Command::new("scancel")
                .args(batch.iter().map(u64::to_string))
                .output();
        }
    }
    let until = Instant::now() + grace + Duration::from_secs(10);
    while ids.iter().any(|id| job_active(*id)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The job's exit status from `scontrol show job` (`ExitCode=<code>:<signal>`); code 1 when
/// Slurm no longer knows the job.
fn scontrol_status(id: u64) -> ExitStatus {
    let text = Command::new("scontrol")
        .args(["show", "job", &id.to_string()])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let field = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("ExitCode="))
        .and_then(|v| v.split_once(':'))
        .and_then(|(c, s)| Some((c.parse::<i32>().ok()?, s.parse::<i32>().ok()?)));
    match field {
        Some((_, sig)) if sig > 0 => killed_by(sig),
        Some((code, _)) if text.contains("JobState=COMPLETED") || code != 0 => exit_code(code),
        Some(_) => killed_by(15),
        None => exit_code(1),
    }
}
