//! `automaton logs <task> [--phase P] [-f]`: print a task's latest phase log (or the latest
//! attempt of one phase), and with `-f` keep printing what is appended until the phase ends.
//!
//! Every executor writes the same file, `<task>/logs/<phase>-<n>.log` (local and tmux through
//! automaton, Slurm through the job's `--output`), so this reads only that file. The phase has
//! ended when `logs/agent.pid` is gone or names nothing alive (no process group, no Slurm job),
//! or when a later log of the task has started.

use super::{Ctx, Error, out};
use crate::cli::LogsArgs;
use crate::exit;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// How often `-f` looks for new output.
const POLL: Duration = Duration::from_millis(100);
/// How long the phase must look ended before `-f` stops (the pid file is written just after
/// the log is created).
const SETTLE: Duration = Duration::from_millis(500);

/// A phase log: `<stem>-<attempt>.log`.
#[derive(Debug)]
struct PhaseLog {
    path: PathBuf,
    stem: String,
    attempt: u32,
    modified: SystemTime,
}

/// The phase logs in `logs`.
fn phase_logs(logs: &Path) -> Vec<PhaseLog> {
    let Ok(entries) = std::fs::read_dir(logs) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let base = name.strip_suffix(".log")?;
            let (stem, n) = base.rsplit_once('-')?;
            let attempt: u32 = n.parse().ok()?;
            if stem.is_empty() || !stem.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return None;
            }
            let modified = e.metadata().ok()?.modified().ok()?;
            Some(PhaseLog {
                path: e.path(),
                stem: stem.to_string(),
                attempt,
                modified,
            })
        })
        .collect()
}

/// The words `--phase` takes: the phases, and the verify and set-up checks, which write logs of
/// their own.
fn log_stems() -> Vec<&'static str> {
    let mut stems: Vec<&str> = crate::state::Phase::ALL.iter().map(|p| p.word()).collect();
    stems.extend(["verify", "setup"]);
    stems
}

/// The log stem `--phase` names (`test-design`, `Test design` and `test_design` are one), or a
/// usage error listing the words it takes.
fn log_stem(word: &str) -> super::Result<String> {
    let stem = word.trim().to_ascii_lowercase().replace([' ', '-'], "_");
    let stems = log_stems();
    if stems.contains(&stem.as_str()) {
        return Ok(stem);
    }
    let hint = crate::settings::diagnose::nearest(&stem, stems.iter().copied())
        .map(|n| format!("did you mean `{n}`? "))
        .unwrap_or_default();
    Err(Error::Usage(format!(
        "`{word}` is not a phase: {hint}--phase takes one of {}",
        stems.join(", ")
    )))
}

/// The latest log: of `phase` when given (highest attempt), else the last written.
fn latest(logs: &[PhaseLog], phase: Option<&str>) -> Option<usize> {
    (0..logs.len())
        .filter(|&i| phase.is_none_or(|p| logs[i].stem == p))
        .max_by_key(|&i| match phase {
            Some(_) => (SystemTime::UNIX_EPOCH, logs[i].attempt),
            None => (logs[i].modified, logs[i].attempt),
        })
}

pub fn logs_command(ctx: &Ctx, args: &LogsArgs) -> super::Result<u8> {
    let LogsArgs {
        task,
        phase,
        follow,
    } = args;
    let phase = phase.as_deref().map(log_stem).transpose()?;
    let rel = ctx.task_path(task)?;
    let dir = ctx.project.join(&rel);
    if !dir.is_dir() {
        return Err(Error::Input(format!(
            "{rel} is not a task folder (`automaton status` lists the tasks)"
        )));
    }
    let logs_dir = dir.join("logs");
    let logs = phase_logs(&logs_dir);
    let Some(i) = latest(&logs, phase.as_deref()) else {
        return Err(Error::Input(match phase {
            Some(p) => format!(
                "{rel} has no log of phase {p} (no {rel}/logs/{p}-<n>.log): it has not run yet"
            ),
            None => format!(
                "{rel} has no phase log yet (no {rel}/logs/<phase>-<n>.log): no phase of it has run"
            ),
        }));
    };
    let chosen = &logs[i];
    let mut file = File::open(&chosen.path)?;
    let mut offset = copy_new(&mut file, 0)?;
    if !*follow {
        return Ok(exit::OK);
    }
    let pid_file = logs_dir.join("agent.pid");
    let mut ended_since: Option<Instant> = None;
    loop {
        let deadline = Instant::now() + POLL;
        offset = copy_new(&mut file, offset)?;
        let ended = !crate::run::executor::record_alive(&pid_file) || superseded(&logs_dir, chosen);
        if ended {
            let since = *ended_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= SETTLE {
                copy_new(&mut file, offset)?;
                return Ok(exit::OK);
            }
        } else {
            ended_since = None;
        }
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
    }
}

/// Whether a later phase log than `log` exists (another phase, or another attempt, began).
fn superseded(logs_dir: &Path, log: &PhaseLog) -> bool {
    phase_logs(logs_dir).iter().any(|l| {
        l.path != log.path
            && (l.modified > log.modified || (l.stem == log.stem && l.attempt > log.attempt))
            && l.modified.duration_since(log.modified).unwrap_or_default() > SETTLE
    })
}

/// Print what `file` holds from `offset` on; the new offset.
fn copy_new(file: &mut File, offset: u64) -> super::Result<u64> {
    file.seek(SeekFrom::Start(offset))?;
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)?;
    if !buf.is_empty() {
        out::write_bytes(&buf)?;
    }
    Ok(offset + buf.len() as u64)
}
