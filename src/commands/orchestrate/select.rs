//! Which task a run drives: the one the command line names (created from a description when
//! new), or else the most advanced one that can go on; and what a run says when none can.

use super::*;

/// The task to drive: a new one from a description, `--task`, or the most advanced one.
pub(super) fn select_task(
    ctx: &Ctx,
    args: &OrchestrateArgs,
    config: &PhaseConfig,
    prefix: &str,
) -> crate::commands::Result<Option<String>> {
    if let Some(rel) = named_task(ctx, args, prefix)? {
        return Ok(Some(rel));
    }
    let tree = TaskTree::load(&ctx.project, config);
    report::print_warnings(&tree.warnings);
    Ok(most_advanced(&tree))
}

/// The task the command line names: a description (the task is created, or found when it
/// exists for the same request) or `--task`.
pub(super) fn named_task(
    ctx: &Ctx,
    args: &OrchestrateArgs,
    prefix: &str,
) -> crate::commands::Result<Option<String>> {
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
            let existing = crate::fsx::read_to_string(dir.join(TASK_FILE)).unwrap_or_default();
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
            // A folder without TASK.md that holds nothing but `.state` is the remains of a
            // creation an older automaton was killed in: it is this request's, finished now.
            if !dir.join(TASK_FILE).exists() && never_started_bare(&dir) {
                crate::fsx::write_atomic(
                    &dir.join(TASK_FILE),
                    format!("# Task\n\n{}\n", desc.trim()).as_bytes(),
                )?;
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
                rebuildable: false,
                files: &[],
            },
        )?;
        let _ = crate::detect::invalidate_cache(&ctx.project);
        return Ok(Some(rel));
    }
    if let Some(task) = &args.task {
        let rel = ctx.task_path(task)?;
        if !ctx.project.join(&rel).is_dir() {
            return Err(Error::Input(format!(
                "no task folder {rel}; `{prefix} status` lists the tasks"
            )));
        }
        return Ok(Some(rel));
    }
    Ok(None)
}

/// The most advanced unfinished task, sub-tasks before parents, later phases first.
/// A sub-task is driven through the task whose drive runs it ([`unit_of`]): its parent's waves
/// run a planned sub-task with its siblings; a sub-task made by hand under a finished task is
/// driven alone.
pub fn most_advanced(tree: &TaskTree) -> Option<String> {
    let best = (0..tree.nodes.len())
        .filter(|i| !tree.nodes[*i].state().is_terminal())
        .filter_map(|i| unit_of(tree, i).ok().map(|u| (i, u)))
        .max_by_key(|(i, _)| {
            let n = &tree.nodes[*i];
            (n.depth, n.state().rank(), std::cmp::Reverse(n.rel.clone()))
        })?;
    Some(tree.nodes[best.1].rel.clone())
}

/// The task `continue` drives to run the unfinished task `i`: its highest unfinished ancestor
/// (whose waves, or whose hand-made sub-tasks, run it), or `i`'s own top when that ancestor's
/// parent is finished and has no plan. `Err` says why nothing can drive it.
fn unit_of(tree: &TaskTree, i: usize) -> Result<usize, String> {
    let mut j = i;
    loop {
        let Some(p) = tree.nodes[j].parent else {
            return Ok(j);
        };
        let parent = &tree.nodes[p];
        match &parent.snap.plan {
            Some(Ok(plan)) if plan.row(tree.nodes[j].name()).is_none() => {
                return Err(format!(
                    "{} is not listed in {}/DECOMPOSITION.md (an orphan, kept for its work): add it to the plan, or drive it alone with `orchestrate --task {}`",
                    tree.nodes[j].rel, parent.rel, tree.nodes[i].rel
                ));
            }
            Some(Err(_)) => {
                return Err(format!(
                    "{}/DECOMPOSITION.md is invalid; fix it first",
                    parent.rel
                ));
            }
            _ => {}
        }
        if parent.state().is_terminal() {
            if parent.snap.plan.is_none() {
                return Ok(j);
            }
            return Err(format!(
                "its parent {} is {}, so its waves do not run it{}",
                parent.rel,
                parent.state().word(),
                if parent.state() == State::HumanIntervention {
                    " (a sub-task it depends on did not pass)"
                } else {
                    ""
                }
            ));
        }
        j = p;
    }
}

/// `continue` found nothing that can go on: report every task, say why each unfinished one is
/// not driven, and exit 0 only when every task is complete.
pub(super) fn nothing_to_do(
    ctx: &Ctx,
    config: &PhaseConfig,
    gates: &[crate::plan::gate::Gate],
    prefix: &str,
) -> crate::commands::Result<u8> {
    let mut tree = TaskTree::load(&ctx.project, config);
    tree.apply_gates(gates);
    if tree.nodes.is_empty() {
        out::println(format_args!(
            "No tasks yet. Start one with:\n  {prefix} orchestrate \"describe the task\"\n{}\nORCHESTRATION_COMPLETE",
            Summary::default().line()
        ))?;
        return Ok(exit::OK);
    }
    out::print(render_report(&tree, prefix, true, false))?;
    let stuck: Vec<String> = (0..tree.nodes.len())
        .filter(|i| !tree.nodes[*i].state().is_terminal())
        .filter_map(|i| unit_of(&tree, i).err().map(|why| (i, why)))
        .map(|(i, why)| {
            let n = &tree.nodes[i];
            format!("- {} ({}) is not driven: {why}", n.rel, n.state().word())
        })
        .collect();
    if !stuck.is_empty() {
        out::println(format_args!(
            "\nNot driven by `continue`:\n{}",
            stuck.join("\n")
        ))?;
    }
    let summary = Summary::of(&tree, 0..tree.nodes.len());
    out::println(format_args!("\n{}", summary.line()))?;
    if summary.all_complete() {
        out::println("ORCHESTRATION_COMPLETE")?;
        return Ok(exit::OK);
    }
    out::println(
        "⚠️ **HUMAN INTERVENTION REQUIRED**: no task can go on by itself; see the reasons above",
    )?;
    Ok(exit::NEEDS_HUMAN)
}

/// Whether a task folder holds nothing but `.state`, `.origin` and temp files.
fn never_started_bare(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().all(|e| {
            e.file_name().to_str().is_some_and(|n| {
                n == crate::store::task_files::STATE_FILE
                    || n == crate::store::task_files::ORIGIN_FILE
                    || crate::fsx::is_temp_name(n)
            })
        })
    })
}
