//! `orchestrate --manual` (and autopilot off): no agent runs. Every task is reported with the
//! command that runs its next phase, and the fix tasks of failed verdicts are created.

use super::*;

/// Manual mode: report every task with `Auto-Execute: NO` and the command that runs its next
/// phase (`--step`), create the fix/review/tiebreak tasks of failed verdicts (idempotently),
/// and, from a description, create the task and report it. Exit 0 only when every task asked
/// about is complete: 19 when one needs a person's decision, 21 when steps remain to run.
pub(super) fn manual(
    ctx: &Ctx,
    args: &OrchestrateArgs,
    config: &PhaseConfig,
    gates: &[crate::plan::gate::Gate],
    prefix: &str,
) -> crate::commands::Result<u8> {
    // Creating tasks writes into the project: not while an autopilot drives it.
    let _lock = lock::acquire(&ctx.project)?;
    let existed = args
        .description
        .as_deref()
        .map(|d| ctx.project.join("tasks").join(names::kebab(d)).exists());
    let named = named_task(ctx, args, prefix)?;
    if args.referee_again
        && let Some(rel) = &named
    {
        archive_verdict(ctx, rel, &Progress::new(false, false, |_| false))?;
    }
    let mut tree = TaskTree::load(&ctx.project, config);
    tree.apply_gates(gates);
    report::print_warnings(&tree.warnings);
    let created = crate::task::fix::create_fix_tasks(&ctx.project, &tree)?;
    let new: Vec<&str> = created
        .iter()
        .filter(|(_, now)| *now)
        .map(|(f, _)| f.path.as_str())
        .collect();
    // Read again so that the report shows the tasks just created, with their states.
    let tree = if new.is_empty() {
        tree
    } else {
        let mut tree = TaskTree::load(&ctx.project, config);
        tree.apply_gates(gates);
        tree
    };
    let (summary, code) = summary_of(&tree, named.as_deref());
    if args.run.json {
        let mut created: Vec<&str> = new.clone();
        if let Some(rel) = &named
            && existed == Some(false)
        {
            created.push(rel);
        }
        print_json(&tree, prefix, created, summary, code)?;
        if !new.is_empty() {
            let _ = crate::detect::invalidate_cache(&ctx.project);
        }
        return Ok(code);
    }
    out::print(render_report(&tree, prefix, false, true))?;
    if !new.is_empty() {
        let _ = crate::detect::invalidate_cache(&ctx.project);
        out::println(format_args!(
            "\nCreated {} task(s): {}",
            new.len(),
            new.join(", ")
        ))?;
    }
    if let Some(rel) = &named
        && existed == Some(false)
    {
        out::println(format_args!(
            "\nCreated {rel}. Autopilot is disabled, so nothing ran: run its phases one at a time with\n  {prefix} orchestrate --task {rel} --step\n(or set `- **Autopilot**: Enabled` in .automaton/.agent.md)"
        ))?;
    }
    out::println(format_args!("\n{}", summary.line()))?;
    // Only a run whose tasks are all complete says so: a task waiting for a person or with
    // steps to run is not an orchestration that completed.
    if code == exit::OK {
        out::println("ORCHESTRATION_COMPLETE")?;
    }
    Ok(code)
}

/// The summary of the tasks in scope (the named one and its sub-tasks, else all) and the exit
/// code it makes: 0 when all are complete, 19 when one waits for a person, else 25 (steps to run).
fn summary_of(tree: &TaskTree, named: Option<&str>) -> (Summary, u8) {
    let scope = match named {
        Some(rel) => crate::report::driven_scope(tree, rel),
        None => (0..tree.nodes.len()).collect(),
    };
    let summary = Summary::of(tree, scope);
    let code = if summary.all_complete() {
        exit::OK
    } else if summary.waiting > 0 {
        exit::NEEDS_HUMAN
    } else {
        exit::WAITING
    };
    (summary, code)
}

/// One JSON object on one line (a stream of one `manual` event): the tasks as `status --json`
/// shows them, what was created, the summary and the exit code.
fn print_json(
    tree: &TaskTree,
    prefix: &str,
    created: Vec<&str>,
    summary: Summary,
    exit_code: u8,
) -> crate::commands::Result<()> {
    #[derive(serde::Serialize)]
    struct ManualDoc<'a> {
        event: &'static str,
        tasks: Vec<report::TaskView>,
        created: Vec<&'a str>,
        summary: Summary,
        exit_code: u8,
    }
    let doc = ManualDoc {
        event: "manual",
        tasks: (0..tree.nodes.len())
            .map(|i| report::task_view_mode(tree, i, prefix, true))
            .collect(),
        created,
        summary,
        exit_code,
    };
    out::json_line(&doc)?;
    Ok(())
}
