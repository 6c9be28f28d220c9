//! `automaton orchestrate` / `automaton continue`: pick a task, drive it through the run layer,
//! and say how it ended; manual mode only reports.

use super::Ctx;
use crate::cli::OrchestrateArgs;
use crate::exit;
use crate::names;
use crate::report::{self, phase_config, render_report, task_view};
use crate::run::agent;
use crate::run::progress::{self, Progress};
use crate::run::{Limits, Outcome, Run, Slots, StopKind, adapter, driver};
use crate::settings::{Origin, Settings, value::parse_duration};
use crate::state::{PhaseConfig, State};
use crate::store::lock;
use crate::task::{NewTask, TASK_FILE, TaskTree, create_task};
use serde_json::json;
use std::time::{Duration, Instant};

fn settings_with_flags(ctx: &Ctx, args: &OrchestrateArgs) -> anyhow::Result<Settings> {
    let mut s = Settings::load(&ctx.project)?;
    let flags: [(&str, Option<String>, &'static str); 6] = [
        ("agent.command", args.agent.clone(), "--agent"),
        (
            "limits.max_iterations",
            args.max_iterations.map(|n| n.to_string()),
            "--max-iterations",
        ),
        (
            "limits.max_phase_time",
            args.max_phase_time.clone(),
            "--max-phase-time",
        ),
        (
            "limits.max_total_time",
            args.max_total_time.clone(),
            "--max-total-time",
        ),
        (
            "limits.stall_timeout",
            args.stall_timeout.clone(),
            "--stall-timeout",
        ),
        ("limits.jobs", args.jobs.map(|n| n.to_string()), "--jobs"),
    ];
    for (id, value, flag) in flags {
        if let Some(v) = value {
            s.set(id, &v, Origin::Flag(flag))?;
        }
    }
    Ok(s)
}

fn env_duration(name: &str, default: Duration) -> Duration {
    std::env::var(name)
        .ok()
        .and_then(|v| parse_duration(&v).ok())
        .unwrap_or(default)
}

pub fn orchestrate_command(ctx: &Ctx, args: &OrchestrateArgs) -> anyhow::Result<u8> {
    let settings = settings_with_flags(ctx, args)?;
    report::print_warnings(&settings.warnings);
    let config = phase_config(&settings);
    let prefix = ctx.command_prefix();
    if args.manual || !settings.bool("agent.autopilot") {
        return manual(ctx, &config, &prefix);
    }
    let kind = settings
        .text("agent.kind")
        .and_then(adapter::AgentKind::parse)
        .unwrap_or(adapter::AgentKind::Command);
    let adapter = adapter::adapter_for(kind);
    let Some(agent_command) = adapter::command_line(
        adapter,
        settings.text("agent.command"),
        settings.text("agent.model"),
        settings.text("agent.flags"),
    ) else {
        anyhow::bail!(
            "no agent command: set `- **Agent command**: ...` (or `- **Agent**: claude`, codex \
             or aider) in .automaton/.agent.md, the AUTOMATON_AGENT variable, or --agent \
             (recipes in examples/agents/)"
        );
    };
    check_agent_program(&settings, &agent_command, &ctx.project)?;
    let _lock = lock::acquire(&ctx.project).map_err(|e| match e {
        lock::LockError::Held { .. } => {
            anyhow::Error::new(exit::Failure::new(exit::LOCKED, e.to_string()))
        }
        other => anyhow::Error::new(other),
    })?;
    let cancel = agent::install_signal_handlers()?;
    let progress = Progress::new(args.json, args.quiet, |tty| ctx.colors(tty));
    let limits = Limits {
        iterations: settings.count("limits.max_iterations"),
        phase: settings.duration("limits.max_phase_time"),
        total: settings.duration("limits.max_total_time"),
        stall: settings.duration("limits.stall_timeout"),
        jobs: settings.count("limits.jobs").clamp(1, 256) as usize,
        contract_grace: env_duration("AUTOMATON_CONTRACT_GRACE", Duration::from_secs(10)),
        kill_grace: env_duration("AUTOMATON_KILL_GRACE", Duration::from_secs(5)),
    };
    // The budget only fills prompts here; `detect-vram` is where its warnings are shown.
    let vram = crate::detect::detect(&settings, false);
    let run = Run {
        settings: &settings,
        config,
        agent_command: &agent_command,
        adapter,
        verify_command: settings.text("agent.verify"),
        limits,
        // A cap too far to represent means no cap.
        deadline: Instant::now()
            .checked_add(limits.total)
            .or_else(|| Instant::now().checked_add(Duration::from_secs(u32::MAX.into())))
            .unwrap_or_else(Instant::now),
        cancel: &cancel,
        progress: &progress,
        max_peak: vram.max_peak_context_kb,
        slots: Slots::new(limits.jobs),
    };

    let Some(rel) = select_task(ctx, args, &config, &prefix)? else {
        return Ok(nothing_to_do(ctx, &config, &prefix));
    };
    // The command line may carry a key (`--openai-api-key ...`): never print it.
    let shown = crate::settings::value::redact(&agent_command);
    progress.event(
        "run_started",
        json!({"task": rel, "agent": shown, "adapter": adapter.name()}),
        || match adapter.name() {
            "command" => format!("automaton: driving {rel} with `{shown}`"),
            kind => format!("automaton: driving {rel} with {kind}: `{shown}`"),
        },
    );
    let outcome = driver::drive(&run, &rel, true)?;
    let tree = TaskTree::load_task(&ctx.project, &rel, &config);
    let human_out = progress.mode() != progress::Mode::Json;
    match outcome {
        Outcome::Complete => {
            if human_out && let Some(i) = tree.find(&rel) {
                let mut out = String::new();
                report::render_task(&task_view(&tree, i, &prefix), true, &mut out);
                println!("\n{out}");
            }
            progress.event("complete", json!({"task": rel}), String::new);
            if human_out {
                println!("ORCHESTRATION_COMPLETE");
            }
            Ok(exit::OK)
        }
        Outcome::Stopped { kind, reason } => {
            progress.event(
                "stop",
                json!({"task": rel, "kind": kind.word(), "reason": reason, "exit_code": kind.code()}),
                String::new,
            );
            if kind == StopKind::Interrupted {
                eprintln!(
                    "interrupted: every agent was stopped; run `{prefix} orchestrate --task {rel}` to resume"
                );
                return Ok(kind.code());
            }
            if human_out && let Some(i) = tree.find(&rel) {
                let mut out = String::new();
                let mut view = task_view(&tree, i, &prefix);
                view.reason = None;
                report::render_task(&view, true, &mut out);
                println!("\n{out}");
            }
            let line = format!("⚠️ **HUMAN INTERVENTION REQUIRED**: {reason}");
            if human_out {
                println!("{line}");
            } else {
                eprintln!("{line}");
            }
            Ok(kind.code())
        }
    }
}

/// The agent's program must be found before anything runs or any task changes state: a
/// missing one is an error naming the setting it came from and where that was set.
fn check_agent_program(
    settings: &Settings,
    agent_command: &str,
    project: &std::path::Path,
) -> anyhow::Result<()> {
    let Some(program) = crate::run::preflight::missing_program(agent_command, project) else {
        return Ok(());
    };
    let id = if settings.text("agent.command").is_some() {
        "agent.command"
    } else {
        "agent.kind"
    };
    let setting = settings.get(id);
    let shown = crate::settings::value::redact(&setting.raw);
    let hint = if id == "agent.kind" {
        format!(
            "install the `{program}` CLI, or set `- **Agent command**` to the command that runs it"
        )
    } else {
        format!("install `{program}` or correct the setting")
    };
    Err(exit::Failure::new(
        exit::AGENT_NOT_FOUND,
        format!(
            "the agent program `{program}` was not found on PATH: `- **{}**: {shown}` ({}) runs \
             `{line}`; {hint} (`automaton config` shows every setting and where it came from). \
             Nothing ran and no task changed state.",
            setting.spec.key,
            setting.origin,
            line = crate::settings::value::redact(agent_command),
        ),
    )
    .into())
}

/// The task to drive: a new one from a description, `--task`, or the most advanced one.
fn select_task(
    ctx: &Ctx,
    args: &OrchestrateArgs,
    config: &PhaseConfig,
    prefix: &str,
) -> anyhow::Result<Option<String>> {
    if let Some(desc) = args.description.as_deref().filter(|d| !d.trim().is_empty()) {
        let slug = names::kebab(desc);
        if slug.is_empty() {
            anyhow::bail!("cannot make a task name from `{desc}`: use letters or digits");
        }
        let rel = format!("tasks/{slug}");
        let dir = ctx.project.join(&rel);
        if dir.exists() {
            let existing = std::fs::read_to_string(dir.join(TASK_FILE)).unwrap_or_default();
            if existing
                .lines()
                .skip(1)
                .collect::<Vec<_>>()
                .join("\n")
                .trim()
                == desc.trim()
            {
                return Ok(Some(rel));
            }
            anyhow::bail!(
                "task {rel} already exists for another request; continue it with `{prefix} orchestrate --task {rel}` or describe the new task differently"
            );
        }
        create_task(
            &ctx.project,
            &NewTask {
                rel: &rel,
                start: State::NEW,
                description: Some(desc),
                copy_from: None,
            },
        )?;
        let _ = crate::detect::invalidate_cache(&ctx.project);
        return Ok(Some(rel));
    }
    if let Some(task) = &args.task {
        let rel = names::task_path(task).map_err(anyhow::Error::msg)?;
        if !ctx.project.join(&rel).is_dir() {
            anyhow::bail!("no task folder {rel}; `{prefix} status` lists the tasks");
        }
        return Ok(Some(rel));
    }
    let tree = TaskTree::load(&ctx.project, config);
    report::print_warnings(&tree.warnings);
    Ok(most_advanced(&tree))
}

/// Seed 000: the most advanced unfinished task, sub-tasks before parents, later phases first.
/// A sub-task is driven through its top-level parent, whose waves run it with its siblings.
pub fn most_advanced(tree: &TaskTree) -> Option<String> {
    let top_of = |mut i: usize| {
        while let Some(p) = tree.nodes[i].parent {
            i = p;
        }
        i
    };
    // A sub-task can only go on through a top-level task that can.
    let best = (0..tree.nodes.len())
        .filter(|i| !tree.nodes[*i].state().is_terminal())
        .filter(|i| !tree.nodes[top_of(*i)].state().is_terminal())
        .max_by_key(|i| {
            let n = &tree.nodes[*i];
            (n.depth, n.state().rank(), std::cmp::Reverse(n.rel.clone()))
        })?;
    Some(tree.nodes[top_of(best)].rel.clone())
}

fn nothing_to_do(ctx: &Ctx, config: &PhaseConfig, prefix: &str) -> u8 {
    let tree = TaskTree::load(&ctx.project, config);
    if tree.nodes.is_empty() {
        println!("No tasks yet. Start one with `{prefix} orchestrate \"describe the task\"`.");
        return exit::OK;
    }
    print!("{}", render_report(&tree, prefix, true, false));
    if tree
        .nodes
        .iter()
        .any(|n| n.state() == State::HumanIntervention)
    {
        println!(
            "\n⚠️ **HUMAN INTERVENTION REQUIRED**: no task can go on by itself; see the reasons above"
        );
        exit::NEEDS_HUMAN
    } else {
        println!("ORCHESTRATION_COMPLETE");
        exit::OK
    }
}

/// Manual mode: report every task with `Auto-Execute: NO` and create the fix/review/tiebreak
/// tasks of failed verdicts (idempotently).
fn manual(ctx: &Ctx, config: &PhaseConfig, prefix: &str) -> anyhow::Result<u8> {
    // Creating tasks writes into the project: not while an autopilot drives it.
    let _lock = lock::acquire(&ctx.project)
        .map_err(|e| exit::Failure::new(e.exit_code(), e.to_string()))?;
    let tree = TaskTree::load(&ctx.project, config);
    report::print_warnings(&tree.warnings);
    let created = crate::task::fix::create_fix_tasks(&ctx.project, &tree)?;
    print!("{}", render_report(&tree, prefix, false, true));
    let new: Vec<&str> = created
        .iter()
        .filter(|(_, now)| *now)
        .map(|(f, _)| f.path.as_str())
        .collect();
    if !new.is_empty() {
        let _ = crate::detect::invalidate_cache(&ctx.project);
        println!("\nCreated {} task(s): {}", new.len(), new.join(", "));
    }
    println!("ORCHESTRATION_COMPLETE");
    Ok(exit::OK)
}
