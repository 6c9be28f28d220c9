//! `orchestrate --dry-run`: the planner's next step for every task the run would drive,
//! printed without running, writing or locking anything ([`crate::run::dry_run`]).

use super::orchestrate::most_advanced;
use super::{Ctx, Error, out};
use crate::cli::OrchestrateArgs;
use crate::names;
use crate::run::config::RunConfig;
use crate::run::dry_run::{Planned, plan};
use crate::run::event::Event;
use crate::run::progress::Progress;
use crate::run::{Run, Slots, adapter, isolation};
use crate::settings::Settings;
use crate::task::TaskTree;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

pub fn dry_run(
    ctx: &Ctx,
    args: &OrchestrateArgs,
    settings: &Settings,
    prefix: &str,
) -> super::Result<u8> {
    let cfg = RunConfig::resolve(settings);
    let progress = Progress::new(args.run.json, args.run.quiet, |tty| ctx.colors(tty));
    let Some(Targets { tasks, driven }) = targets(ctx, args, &cfg, prefix, &progress)? else {
        return Ok(crate::exit::OK);
    };
    // A run's first turn, without what a run sets up: no lock, no signal handlers, no
    // worktrees, no VRAM probe (a cached detection is used when there is one).
    let isolated =
        isolation::Mode::resolve(cfg.isolation, &ctx.project) == isolation::Mode::Worktree;
    let rules = crate::run::wave_rules(&cfg, isolated);
    let cancel = AtomicBool::new(false);
    let executor = crate::run::executor::Local;
    let run = Run {
        settings,
        cfg: &cfg,
        config: cfg.phases,
        agent_command: "",
        adapter: adapter::adapter_for(adapter::AgentKind::Command),
        verify_command: cfg.verify_command.as_deref(),
        limits: cfg.limits,
        deadline: crate::process::signals::now_unpaused() + Duration::from_secs(u32::MAX.into()),
        cancel: &cancel,
        progress: &progress,
        max_peak: crate::detect::cached(settings).map_or(u64::MAX, |r| r.max_peak_context_kb),
        slots: Slots::new(1).map_err(Error::Io)?,
        isolation: None,
        step: args.step,
        budgets: crate::run::budget::Budgets::new(cfg.budget_per_task, cfg.budget_per_run),
        retries: cfg.retries,
        retry_backoff: cfg.retry_backoff,
        executor: &executor,
        vram: None,
        ports: crate::run::ports::Ports::new(),
    };
    for rel in &tasks {
        for p in plan(&run, rel, rules, driven) {
            show(&progress, &p)?;
        }
    }
    Ok(crate::exit::OK)
}

/// One task's line: `tasks/a: run research (state new: the research phase writes SPEC.md)`.
fn show(progress: &Progress, p: &Planned) -> super::Result<()> {
    progress.event(&Event::Planned {
        task: &p.task,
        action: p.action,
        phase: p.phase,
        why: &p.why,
        exit_code: p.exit_code,
    });
    if progress.mode() == crate::run::progress::Mode::Json {
        return Ok(());
    }
    let what = match (p.action, p.phase) {
        (action, Some(phase)) => format!("{action} {phase}"),
        (action, None) => action.to_string(),
    };
    let code = p
        .exit_code
        .map(|c| format!(" (a run stops here: exit {c})"))
        .unwrap_or_default();
    out::println(format_args!("{}: {what}: {}{code}", p.task, p.why)).or_else(out::closed_is_ok)?;
    Ok(())
}

/// The tasks a dry run plans.
struct Targets {
    tasks: Vec<String>,
    /// Whether the run would drive them (clearing their recorded stops first), or only report
    /// them because it can drive none.
    driven: bool,
}

/// The tasks to plan: the one `--task` names, the one a description names (a run would
/// create it when it does not exist yet: said, not done), or the most advanced one a run
/// would drive. Where a run would drive none (every task is complete or waits for a person),
/// every top-level task, so each says what it waits for. `None`: already said.
fn targets(
    ctx: &Ctx,
    args: &OrchestrateArgs,
    cfg: &RunConfig,
    prefix: &str,
    progress: &Progress,
) -> super::Result<Option<Targets>> {
    let driven = |rel: String| {
        Some(Targets {
            tasks: vec![rel],
            driven: true,
        })
    };
    if let Some(desc) = args.description.as_deref().filter(|d| !d.trim().is_empty()) {
        let rel = format!("tasks/{}", names::kebab(desc));
        if ctx.project.join(&rel).is_dir() {
            return Ok(driven(rel));
        }
        show(
            progress,
            &Planned {
                task: rel,
                action: "run",
                phase: Some("research"),
                why: "a run creates this task from the description, then runs its research".into(),
                exit_code: None,
            },
        )?;
        return Ok(None);
    }
    if let Some(task) = &args.task {
        let rel = ctx.task_path(task)?;
        if !ctx.project.join(&rel).is_dir() {
            return Err(Error::Input(format!(
                "no task folder {rel}; `{prefix} status` lists the tasks"
            )));
        }
        return Ok(driven(rel));
    }
    let mut tree = TaskTree::load_read_only(&ctx.project, &cfg.phases);
    tree.apply_gates(&cfg.approve_before);
    if let Some(rel) = most_advanced(&tree) {
        return Ok(driven(rel));
    }
    if tree.nodes.is_empty() {
        out::println(format_args!(
            "No tasks yet: a run would do nothing. Create one with:\n  {prefix} orchestrate \"describe the task\""
        ))
        .or_else(out::closed_is_ok)?;
        return Ok(None);
    }
    let tops = tree.nodes.iter().filter(|n| n.parent.is_none());
    Ok(Some(Targets {
        tasks: tops.map(|n| n.rel.clone()).collect(),
        driven: false,
    }))
}
