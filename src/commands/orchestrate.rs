//! `automaton orchestrate` / `automaton continue`: pick a task, drive it through the run layer,
//! and say how it ended; manual mode only reports.

use super::{Ctx, Error, out};
use crate::cli::OrchestrateArgs;
use crate::exit;
use crate::names;
use crate::report::{self, Summary, phase_config, render_report, task_view};
use crate::run::agent;
use crate::run::config::RunConfig;
use crate::run::event::Event;
use crate::run::progress::Progress;
use crate::run::{Outcome, Run, Slots, StopKind, adapter, isolation, notify};
use crate::settings::{Key, Origin, Settings};
use crate::state::{PhaseConfig, State};
use crate::store::lock;
use crate::task::{NewTask, TASK_FILE, TaskTree, create_task};
use std::time::Duration;

mod ending;
mod manual;
mod select;

use manual::manual;
pub use select::most_advanced;
use select::{named_task, nothing_to_do, select_task};

fn settings_with_flags(ctx: &Ctx, args: &OrchestrateArgs) -> super::Result<Settings> {
    let mut s = Settings::load(&ctx.project)?;
    let flags: [(Key, Option<String>, &'static str); 9] = [
        (Key::AgentCommand, args.run.agent.clone(), "--agent"),
        (
            Key::MaxIterations,
            args.run.max_iterations.map(|n| n.to_string()),
            "--max-iterations",
        ),
        (
            Key::MaxPhaseTime,
            args.run.max_phase_time.clone(),
            "--max-phase-time",
        ),
        (
            Key::MaxTotalTime,
            args.run.max_total_time.clone(),
            "--max-total-time",
        ),
        (
            Key::StallTimeout,
            args.run.stall_timeout.clone(),
            "--stall-timeout",
        ),
        (
            Key::Jobs,
            args.run.jobs.clone().filter(|j| j != "auto"),
            "--jobs",
        ),
        (Key::Isolation, args.run.isolation.clone(), "--isolation"),
        (Key::Executor, args.run.executor.clone(), "--executor"),
        (Key::Sandbox, args.run.sandbox.clone(), "--sandbox"),
    ];
    // A flag's value is checked by its setting's rule, and refused as the command line it is
    // (exit 2, as clap refuses `--jobs 0`), not as a settings file.
    for (key, value, flag) in flags {
        if let Some(v) = value {
            s.set(key, &v, Origin::Flag(flag))
                .map_err(|e| Error::Usage(e.to_string()))?;
        }
    }
    Ok(s)
}

/// `Sandbox: bwrap` needs bubblewrap working here, and `Network: model` an agent on this
/// machine (the bridge is a Unix socket): refused before anything runs, never dropped.
fn check_sandbox(
    settings: &crate::settings::Settings,
    policy: Option<&crate::run::sandbox::Policy>,
) -> super::Result<()> {
    let Some(policy) = policy else {
        return Ok(());
    };
    let origin = settings.get(Key::Sandbox).origin.to_string();
    crate::run::sandbox::preflight(policy, &origin).map_err(Error::AgentNotFound)?;
    if policy.network == crate::run::sandbox::Network::Model
        && settings.text(Key::Executor) == Some("slurm")
    {
        return Err(Error::Usage(format!(
            "`- **Network**: model` (the default with `Sandbox: bwrap`, from {}) bridges the \
             agent's network through automaton on this machine, and a Slurm job runs \
             elsewhere: set `- **Network**: none` or `open` for the slurm executor",
            settings.get(Key::Network).origin
        )));
    }
    Ok(())
}

pub fn orchestrate_command(ctx: &Ctx, args: &OrchestrateArgs) -> super::Result<u8> {
    let settings = settings_with_flags(ctx, args)?;
    report::print_warnings(&settings.warnings);
    let config = phase_config(&settings);
    let gates = report::approval_gates(&settings);
    let prefix = ctx.command_prefix();
    if args.dry_run {
        return super::dry_run::dry_run(ctx, args, &settings, &prefix);
    }
    if args.manual || (!settings.bool(Key::Autopilot) && !args.step) {
        return manual(ctx, args, &config, &gates, &prefix);
    }
    let kind = settings
        .text(Key::AgentKind)
        .and_then(adapter::AgentKind::parse)
        .unwrap_or(adapter::AgentKind::Command);
    let adapter = adapter::adapter_for(kind);
    let agent_command = agent_line(&settings, adapter)?;
    check_agent_program(&settings, &agent_command, &ctx.project)?;
    let _lock = lock::acquire(&ctx.project)?;
    let cancel = agent::install_signal_handlers().map_err(Error::Signals)?;
    let progress = Progress::new(args.run.json, args.run.quiet, |tty| ctx.colors(tty));
    // Every knob of the run, from the settings (flags applied), once.
    let mut cfg = RunConfig::resolve(&settings);
    check_sandbox(&settings, cfg.sandbox.as_ref())?;
    // The budget only fills prompts here; `detect-vram` is where its warnings are shown.
    let vram = crate::detect::detect(&settings, false);
    let admission = crate::run::vram::Admission::configured(&cfg.vram, vram.gpu_vram_gb);
    if args.run.jobs.as_deref() == Some("auto") {
        cfg.limits.jobs = auto_jobs(&vram, admission.as_ref(), &progress);
    }
    let isolation = worktrees(&cfg, ctx, &progress)?;
    let executor = crate::run::executor::for_config(&cfg, &ctx.project)
        .map_err(|e| Error::Input(e.to_string()))?;
    // In a worktree, the agent must still write its artifact in the task folder.
    let agent_command = match isolation {
        Some(_) => adapter::in_worktree(
            adapter,
            agent_command,
            settings.text(Key::AgentCommand).is_some(),
        ),
        None => agent_command,
    };
    let limits = cfg.limits;
    let run = Run {
        settings: &settings,
        cfg: &cfg,
        config: cfg.phases,
        agent_command: &agent_command,
        adapter,
        verify_command: cfg.verify_command.as_deref(),
        limits,
        deadline: deadline(limits.total),
        cancel: &cancel,
        progress: &progress,
        max_peak: vram.max_peak_context_kb,
        slots: Slots::new(limits.jobs).map_err(Error::Io)?,
        isolation: isolation.as_ref(),
        step: args.step,
        budgets: crate::run::budget::Budgets::new(cfg.budget_per_task, cfg.budget_per_run),
        retries: cfg.retries,
        retry_backoff: cfg.retry_backoff,
        executor: executor.as_ref(),
        vram: admission,
        ports: crate::run::ports::Ports::new(),
    };

    let Some(rel) = select_task(ctx, args, &config, &prefix)? else {
        return nothing_to_do(ctx, &config, &gates, &prefix);
    };
    if args.referee_again {
        archive_verdict(ctx, &rel, &progress)?;
    }
    // The command line may carry a key (`--openai-api-key ...`): never print it.
    let shown = crate::settings::value::redact(&agent_command);
    progress.event(&Event::RunStarted {
        task: &rel,
        agent: &shown,
        adapter: adapter.name(),
    });
    let mut last = None;
    // A panic while driving is a bug: reported as an internal error (exit 70), like one in a
    // sub-task's worker, rather than as Rust's abort.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::run::schedule::run_task(&run, &rel, true, &mut last)
    }))
    .unwrap_or_else(|panic| Err(crate::run::RunError::panicked(&rel, &*panic)))?;
    let mut tree = tree_after_run(ctx, &rel, &outcome, last, &config, &gates);
    tree.waves = crate::run::wave_rules(run.cfg, run.isolation.is_some());
    tree.budget = Some(run.budgets.task);
    notify_outcome(&run, &tree, &rel, &outcome, &prefix);
    ending::finish(&tree, &prefix, &progress, &rel, outcome, args.step)
}

/// The agent's command line from the settings (the adapter builds it from the agent kind,
/// model and flags where no command is set); none set is an error that says where to set one.
fn agent_line(settings: &Settings, adapter: &dyn adapter::Adapter) -> super::Result<String> {
    adapter::command_line(
        adapter,
        settings.text(Key::AgentCommand),
        settings.text(Key::AgentModel),
        settings.text(Key::AgentFlags),
        settings.text(Key::Sandbox) == Some("bwrap"),
    )
    .ok_or_else(|| {
        Error::Input(
            "no agent command: set `- **Agent command**: ...` (or `- **Agent**: claude`, codex \
             or aider) in .automaton/.agent.md, the AUTOMATON_AGENT variable, or --agent; \
             `automaton init` writes a .agent.md for the agent CLI on PATH, and `automaton help \
             settings` lists every setting"
                .into(),
        )
    })
}

/// The worktrees sub-tasks run in, when isolation is on; before anything runs, what a killed
/// run left half-done in them is undone.
fn worktrees(
    cfg: &RunConfig,
    ctx: &Ctx,
    progress: &Progress,
) -> super::Result<Option<isolation::Isolation>> {
    match isolation::Mode::resolve(cfg.isolation, &ctx.project) {
        isolation::Mode::Worktree => {
            let iso =
                isolation::Isolation::new(&ctx.project).map_err(crate::run::RunError::from)?;
            for wt in iso.reconcile().map_err(crate::run::RunError::from)? {
                progress.event(&Event::WorktreeReconciled { worktree: &wt });
            }
            Ok(Some(iso))
        }
        isolation::Mode::None => Ok(None),
    }
}

/// When the run's total time is up, on the clock that stands still while automaton is
/// stopped (Ctrl-Z), so the total leaves the pause out. A cap too far to represent means no
/// cap.
fn deadline(total: Duration) -> std::time::Instant {
    let now = crate::process::signals::now_unpaused();
    now.checked_add(total)
        .or_else(|| now.checked_add(Duration::from_secs(u32::MAX.into())))
        .unwrap_or(now)
}

/// The tree the end of the run reports from. After a stop of the task or a step it is read
/// again: the tree the drive last held may predate the stop (`.stop` written, a gate
/// reached), and the report, the summary and the exit code must all say how it stands now.
fn tree_after_run(
    ctx: &Ctx,
    rel: &str,
    outcome: &Outcome,
    last: Option<TaskTree>,
    config: &PhaseConfig,
    gates: &[crate::plan::gate::Gate],
) -> TaskTree {
    // A sub-task refused for its parent's plan is shown from the parent's folder down, so
    // its view can say what it waits for and offer the parent's command.
    let shown_from = match outcome {
        Outcome::Stopped {
            kind: StopKind::NotReady,
            ..
        } => rel.rsplit_once("/subtasks/").map_or(rel, |(p, _)| p),
        _ => rel,
    };
    let reread = match outcome {
        Outcome::Stopped { kind, .. } => kind.is_task_stop(),
        Outcome::Stepped { .. } => true,
        Outcome::Complete => false,
    };
    match last {
        Some(tree) if !reread => tree,
        _ => {
            let mut tree = TaskTree::load_task(&ctx.project, shown_from, config);
            tree.apply_gates(gates);
            tree
        }
    }
}

/// `--jobs auto`: as many at once as VRAM admits (the gate decides, or Slurm packs the GRES
/// requests); an engine with parallel slots serves that many requests at once (more would
/// queue); without a local model's figures, one per CPU. Says which it chose.
fn auto_jobs(
    vram: &crate::detect::VramReport,
    admission: Option<&crate::run::vram::Admission>,
    progress: &Progress,
) -> usize {
    let engine_slots = vram
        .engine
        .as_ref()
        .and_then(|e| e.slots.filter(|n| *n > 0).map(|n| (e, n)));
    match (engine_slots, admission) {
        (Some((engine, n)), _) => {
            progress.line(&format!(
                "--jobs auto: {n} at once ({} at {} serves {n} parallel slots)",
                engine.name, engine.url
            ));
            n.clamp(1, 256) as usize
        }
        (None, Some(gate)) => {
            progress.event(&Event::JobsAuto {
                weights: gate.weights,
                kv_bytes_per_token: gate.kv_per_token,
                budget: gate.budget,
            });
            256
        }
        (None, None) => {
            let cpus = std::thread::available_parallelism().map_or(4, |n| n.get());
            progress.line(&format!(
                "warning: --jobs auto: no `## VRAM Configuration` with both `Model weights` and `KV bytes per token` (or no GPU size): {cpus} at once (one per CPU)"
            ));
            cpus.clamp(1, 256)
        }
    }
}

/// Tell the notify command how the run ended (a no-op without one).
fn notify_outcome(run: &Run<'_>, tree: &TaskTree, rel: &str, outcome: &Outcome, prefix: &str) {
    let view = tree.find(rel).map(|i| task_view(tree, i, prefix));
    let state = view.as_ref().map_or("?", |v| v.state);
    let command = view.as_ref().and_then(|v| v.command.clone());
    let (event, kind, reason, code) = match outcome {
        Outcome::Complete => ("complete", None, None, exit::OK),
        Outcome::Stepped { .. } => ("stepped", None, None, exit::WAITING),
        Outcome::Stopped { kind, reason } => (
            notify::event_for(*kind),
            Some(kind.word()),
            Some(reason.as_str()),
            kind.code(),
        ),
    };
    notify::send(
        run,
        &notify::Notice {
            event,
            task: rel,
            state,
            kind,
            reason,
            exit_code: code,
            command: command.as_deref(),
        },
    );
}

/// The agent's program (and the script an interpreter is given) must be found before anything
/// runs or any task changes state: a missing one is an error naming the setting it came from
/// and where that was set.
fn check_agent_program(
    settings: &Settings,
    agent_command: &str,
    project: &std::path::Path,
) -> super::Result<()> {
    use crate::run::preflight::Missing;
    let program = match crate::run::preflight::missing(agent_command, project) {
        None => return Ok(()),
        Some(Missing::Program(program)) => program,
        Some(Missing::Script {
            interpreter,
            script,
        }) => {
            return Err(missing_script(
                settings,
                agent_command,
                project,
                &interpreter,
                &script,
            ));
        }
    };
    let key = if settings.text(Key::AgentCommand).is_some() {
        Key::AgentCommand
    } else {
        Key::AgentKind
    };
    let setting = settings.get(key);
    let hint = if key == Key::AgentKind {
        format!(
            "install the `{program}` CLI, or set `- **Agent command**` to the command that runs it"
        )
    } else {
        format!("install `{program}` or correct the setting")
    };
    // A word with a `/` is a path, never looked up on PATH: say what is wrong with the file.
    let (what, hint) = if program.contains('/') {
        // `components` drops the `.` of `./agent.sh`.
        let file: std::path::PathBuf = project.join(&program).components().collect();
        let at = file.display();
        let fix = "correct the path (a relative one is read from the project folder)";
        match std::fs::metadata(&file) {
            Err(_) => (
                format!("the agent program `{program}` is a missing file (there is no {at})"),
                fix.to_string(),
            ),
            Ok(m) if m.is_dir() => (
                format!("the agent program `{program}` is a folder ({at}), not a program"),
                fix.to_string(),
            ),
            Ok(_) => (
                format!("the agent program `{program}` is not executable ({at})"),
                "`chmod +x` it, or run it with `sh`".to_string(),
            ),
        }
    } else {
        (
            format!("the agent program `{program}` was not found on PATH"),
            hint,
        )
    };
    Err(Error::AgentNotFound(format!(
        "{what}: {} runs \
             `{line}`; {hint} (`automaton config` shows every setting and where it came from). \
             Nothing ran and no task changed state.",
        setting.described(),
        line = crate::settings::value::redact(agent_command),
    )))
}

/// The error for an agent line whose interpreter's script is not there (`sh agents/claude.sh`).
fn missing_script(
    settings: &Settings,
    agent_command: &str,
    project: &std::path::Path,
    interpreter: &str,
    script: &str,
) -> Error {
    let setting = settings.get(Key::AgentCommand);
    Error::AgentNotFound(format!(
        "the agent script `{script}` (run by `{interpreter}`) does not exist in {}, the folder \
         the agent runs in: {} runs `{}`; create it or correct the path \
         (`automaton config` shows every setting and where it came from). Nothing ran and no \
         task changed state.",
        project.display(),
        setting.described(),
        crate::settings::value::redact(agent_command),
    ))
}

/// `--referee-again`: move VERDICT.md aside (to `logs/VERDICT-<n>.md`, nothing is lost), so
/// that the task's referee runs again.
fn archive_verdict(ctx: &Ctx, rel: &str, progress: &Progress) -> super::Result<()> {
    let dir = ctx.project.join(rel);
    let verdict = dir.join("VERDICT.md");
    if !verdict.is_file() {
        return Err(Error::Input(format!(
            "{rel} has no VERDICT.md: its referee has not run, so there is nothing to run again"
        )));
    }
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs)?;
    let n = (1..)
        .find(|n| !logs.join(format!("VERDICT-{n}.md")).exists())
        .unwrap_or(1);
    let kept = logs.join(format!("VERDICT-{n}.md"));
    std::fs::rename(&verdict, &kept)?;
    crate::store::task_files::clear_stop(&dir).map_err(crate::run::RunError::from)?;
    progress.event(&Event::VerdictArchived {
        task: rel,
        kept: &kept,
        n,
    });
    Ok(())
}
