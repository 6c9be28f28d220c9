//! `automaton orchestrate` / `automaton continue`: pick a task, drive it through the run layer,
//! and say how it ended; manual mode only reports.

use super::{Ctx, Error, out};
use crate::cli::OrchestrateArgs;
use crate::exit;
use crate::names;
use crate::report::{self, phase_config, render_report, task_view};
use crate::run::agent;
use crate::run::progress::{self, Progress};
use crate::run::{Limits, Outcome, Run, Slots, StopKind, adapter, driver, isolation, notify};
use crate::settings::{Key, Origin, Settings};
use crate::state::{Phase, PhaseConfig, State};
use crate::store::lock;
use crate::task::{NewTask, TASK_FILE, TaskTree, create_task};
use serde_json::json;
use std::time::{Duration, Instant};

fn settings_with_flags(ctx: &Ctx, args: &OrchestrateArgs) -> super::Result<Settings> {
    let mut s = Settings::load(&ctx.project)?;
    let flags: [(Key, Option<String>, &'static str); 7] = [
        (Key::AgentCommand, args.agent.clone(), "--agent"),
        (
            Key::MaxIterations,
            args.max_iterations.map(|n| n.to_string()),
            "--max-iterations",
        ),
        (
            Key::MaxPhaseTime,
            args.max_phase_time.clone(),
            "--max-phase-time",
        ),
        (
            Key::MaxTotalTime,
            args.max_total_time.clone(),
            "--max-total-time",
        ),
        (
            Key::StallTimeout,
            args.stall_timeout.clone(),
            "--stall-timeout",
        ),
        (Key::Jobs, args.jobs.map(|n| n.to_string()), "--jobs"),
        (Key::Isolation, args.isolation.clone(), "--isolation"),
    ];
    for (key, value, flag) in flags {
        if let Some(v) = value {
            s.set(key, &v, Origin::Flag(flag))?;
        }
    }
    Ok(s)
}

pub fn orchestrate_command(ctx: &Ctx, args: &OrchestrateArgs) -> super::Result<u8> {
    let settings = settings_with_flags(ctx, args)?;
    report::print_warnings(&settings.warnings);
    let config = phase_config(&settings);
    let gates = report::approval_gates(&settings);
    let prefix = ctx.command_prefix();
    if args.manual || !settings.bool(Key::Autopilot) {
        return manual(ctx, &config, &gates, &prefix);
    }
    let kind = settings
        .text(Key::AgentKind)
        .and_then(adapter::AgentKind::parse)
        .unwrap_or(adapter::AgentKind::Command);
    let adapter = adapter::adapter_for(kind);
    let Some(agent_command) = adapter::command_line(
        adapter,
        settings.text(Key::AgentCommand),
        settings.text(Key::AgentModel),
        settings.text(Key::AgentFlags),
    ) else {
        return Err(Error::Input(
            "no agent command: set `- **Agent command**: ...` (or `- **Agent**: claude`, codex \
             or aider) in .automaton/.agent.md, the AUTOMATON_AGENT variable, or --agent \
             (recipes in examples/agents/)"
                .into(),
        ));
    };
    let _lock = lock::acquire(&ctx.project)?;
    let cancel = agent::install_signal_handlers().map_err(Error::Signals)?;
    let progress = Progress::new(args.json, args.quiet, |tty| ctx.colors(tty));
    let limits = Limits {
        iterations: settings.count(Key::MaxIterations),
        phase: settings.duration(Key::MaxPhaseTime),
        total: settings.duration(Key::MaxTotalTime),
        stall: settings.duration(Key::StallTimeout),
        jobs: settings.count(Key::Jobs).clamp(1, 256) as usize,
        contract_grace: settings.duration(Key::ContractGrace),
        kill_grace: settings.duration(Key::KillGrace),
    };
    // The budget only fills prompts here; `detect-vram` is where its warnings are shown.
    let vram = crate::detect::detect(&settings, false);
    let isolation = match isolation::Mode::resolve(
        settings.text(Key::Isolation).unwrap_or("auto"),
        &ctx.project,
    ) {
        isolation::Mode::Worktree => {
            Some(isolation::Isolation::new(&ctx.project).map_err(crate::run::RunError::from)?)
        }
        isolation::Mode::None => None,
    };
    let run = Run {
        settings: &settings,
        config,
        agent_command: &agent_command,
        adapter,
        verify_command: settings.text(Key::VerifyCommand),
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
        isolation: isolation.as_ref(),
    };

    let Some(rel) = select_task(ctx, args, &config, &prefix)? else {
        return nothing_to_do(ctx, &config, &gates, &prefix);
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
    let mut tree = TaskTree::load_task(&ctx.project, &rel, &config);
    tree.apply_gates(&gates);
    notify_outcome(&run, &tree, &rel, &outcome, &prefix);
    let human_out = progress.mode() != progress::Mode::Json;
    match outcome {
        Outcome::Complete => {
            if human_out && let Some(i) = tree.find(&rel) {
                let mut out = String::new();
                report::render_task(&task_view(&tree, i, &prefix), true, &mut out);
                out::println(format_args!("\n{out}"))?;
            }
            progress.event("complete", json!({"task": rel}), String::new);
            if human_out {
                out::println("ORCHESTRATION_COMPLETE")?;
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
                // The stop's code says how the run ended, closed pipe or not.
                out::println(format_args!("\n{out}")).or_else(out::closed_is_ok)?;
            }
            let line = format!("⚠️ **HUMAN INTERVENTION REQUIRED**: {reason}");
            if human_out {
                out::println(&line).or_else(out::closed_is_ok)?;
            } else {
                eprintln!("{line}");
            }
            Ok(kind.code())
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
        Outcome::Stopped { kind, reason } => (
            notify::event_for(*kind),
            Some(kind.word()),
            Some(reason.as_str()),
            kind.code(),
        ),
    };
    notify::send(
        run.settings,
        run.progress,
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

/// The task to drive: a new one from a description, `--task`, or the most advanced one.
fn select_task(
    ctx: &Ctx,
    args: &OrchestrateArgs,
    config: &PhaseConfig,
    prefix: &str,
) -> super::Result<Option<String>> {
    if let Some(desc) = args.description.as_deref().filter(|d| !d.trim().is_empty()) {
        let slug = names::kebab(desc);
        if slug.is_empty() {
            return Err(Error::Input(format!(
                "cannot make a task name from `{desc}`: use letters or digits"
            )));
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
            return Err(Error::Input(format!(
                "task {rel} already exists for another request; continue it with `{prefix} orchestrate --task {rel}` or describe the new task differently"
            )));
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
        let rel = names::task_path(task).map_err(Error::Input)?;
        if !ctx.project.join(&rel).is_dir() {
            return Err(Error::Input(format!(
                "no task folder {rel}; `{prefix} status` lists the tasks"
            )));
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

fn nothing_to_do(
    ctx: &Ctx,
    config: &PhaseConfig,
    gates: &[Phase],
    prefix: &str,
) -> super::Result<u8> {
    let mut tree = TaskTree::load(&ctx.project, config);
    tree.apply_gates(gates);
    if tree.nodes.is_empty() {
        out::println(format_args!(
            "No tasks yet. Start one with `{prefix} orchestrate \"describe the task\"`."
        ))?;
        return Ok(exit::OK);
    }
    out::print(render_report(&tree, prefix, true, false))?;
    if tree
        .nodes
        .iter()
        .any(|n| n.state() == State::HumanIntervention)
    {
        out::println(
            "\n⚠️ **HUMAN INTERVENTION REQUIRED**: no task can go on by itself; see the reasons above",
        )?;
        Ok(exit::NEEDS_HUMAN)
    } else {
        out::println("ORCHESTRATION_COMPLETE")?;
        Ok(exit::OK)
    }
}

/// Manual mode: report every task with `Auto-Execute: NO` and create the fix/review/tiebreak
/// tasks of failed verdicts (idempotently).
fn manual(ctx: &Ctx, config: &PhaseConfig, gates: &[Phase], prefix: &str) -> super::Result<u8> {
    // Creating tasks writes into the project: not while an autopilot drives it.
    let _lock = lock::acquire(&ctx.project)?;
    let mut tree = TaskTree::load(&ctx.project, config);
    tree.apply_gates(gates);
    report::print_warnings(&tree.warnings);
    let created = crate::task::fix::create_fix_tasks(&ctx.project, &tree)?;
    out::print(render_report(&tree, prefix, false, true))?;
    let new: Vec<&str> = created
        .iter()
        .filter(|(_, now)| *now)
        .map(|(f, _)| f.path.as_str())
        .collect();
    if !new.is_empty() {
        let _ = crate::detect::invalidate_cache(&ctx.project);
        out::println(format_args!(
            "\nCreated {} task(s): {}",
            new.len(),
            new.join(", ")
        ))?;
    }
    out::println("ORCHESTRATION_COMPLETE")?;
    Ok(exit::OK)
}
