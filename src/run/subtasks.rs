//! Creating the sub-task folders a DECOMPOSITION.md lists (one folder per row,
//! with its scope and its VRAM budget); which of them may start is the planner's
//! ([`crate::plan::waves`]).

use super::Run;
use super::event::Event;
use crate::artifact::decomposition::{Plan, SubtaskRow};
use crate::fsx::write_rebuildable;
use crate::state::{Decision, State};
use crate::task::snapshot::{STATE_FILE, SUBTASKS_DIR};
use crate::task::{NewTask, TaskTree, create_task};
use std::path::Path;

/// Make the folders of listed sub-tasks that do not exist yet (with `.state`, PARENT_SPEC.md
/// and VRAM_CONFIG.md); leave existing ones untouched, except that a folder lacking
/// PARENT_SPEC.md or VRAM_CONFIG.md (a creation cut short, a power cut) gets them again.
/// Orphans (folders no longer listed) are deleted only when they never started (nothing in
/// them but those three files); otherwise they are kept and named.
pub fn sync_subtasks(
    run: &Run<'_>,
    parent_rel: &str,
    parent_dir: &Path,
    plan: &Plan,
    decision: &Decision,
) -> super::Result<()> {
    // Listed sub-tasks whose folder exists but lacks the files sync writes into it: a power cut
    // lost them (they are not fsynced: they are derived from the plan's row), or an older
    // automaton died between making the folder and writing them. Fill in what is missing
    // before anything runs without its scope.
    let unfinished: Vec<&str> = plan
        .rows
        .iter()
        .map(|r| r.name.as_str())
        .filter(|name| !decision.missing.iter().any(|m| m == name))
        .filter(|name| {
            let dir = parent_dir.join(SUBTASKS_DIR).join(name);
            dir.is_dir()
                && [PARENT_SPEC, VRAM_CONFIG]
                    .iter()
                    .any(|f| !dir.join(f).is_file())
        })
        .collect();
    if !decision.missing.is_empty() || !unfinished.is_empty() {
        let vram = detect_for_plan(run, parent_rel, parent_dir)?;
        for name in &unfinished {
            let Some(row) = plan.row(name) else { continue };
            let dir = parent_dir.join(SUBTASKS_DIR).join(name);
            write_sync_files(&dir, parent_rel, row, &vram)?;
            run.progress.event(&Event::SubtaskRepaired {
                task: &format!("{parent_rel}/subtasks/{name}"),
            });
        }
        for row in decision.missing.iter().filter_map(|name| plan.row(name)) {
            create_subtask(run, parent_rel, row, &vram)?;
        }
        // The new folders' entries, made without an fsync each (and `subtasks/` itself when
        // new): synced once, for the durable files a run later writes in them, whose own
        // fsyncs do not reach the folders above.
        if !decision.missing.is_empty() {
            crate::fsx::sync_path(&parent_dir.join(SUBTASKS_DIR))?;
        }
    }
    if !decision.orphans.is_empty() {
        settle_orphans(run, parent_rel, parent_dir, &decision.orphans)?;
    }
    Ok(())
}

/// A decomposition is being applied: size its sub-tasks with a fresh detection, reported on
/// screen and in the parent's `logs/vram-detection.log`.
fn detect_for_plan(
    run: &Run<'_>,
    parent_rel: &str,
    parent_dir: &Path,
) -> super::Result<crate::detect::VramReport> {
    let _ = crate::detect::invalidate_cache(&run.settings.project);
    let vram = crate::detect::detect(run.settings, false);
    let block = crate::detect::render_human(&vram);
    run.progress.event(&Event::VramDetected {
        task: parent_rel,
        max_peak_context_kb: vram.max_peak_context_kb,
        recommended_kb: vram.recommended_kb,
        source: vram.source.as_str(),
        block: &block,
    });
    let logs = parent_dir.join("logs");
    std::fs::create_dir_all(&logs)?;
    let mut f = crate::fsx::open_append(&logs.join("vram-detection.log"))?;
    std::io::Write::write_all(&mut f, format!("{}\n", block.trim_end()).as_bytes())?;
    Ok(vram)
}

/// Make the folder of the planned sub-task `row`, whole, with its scope and VRAM budget.
fn create_subtask(
    run: &Run<'_>,
    parent_rel: &str,
    row: &SubtaskRow,
    vram: &crate::detect::VramReport,
) -> super::Result<()> {
    let rel = format!("{parent_rel}/subtasks/{}", row.name);
    let (spec, config) = sync_files(parent_rel, row, vram);
    create_task(
        &run.settings.project,
        &NewTask {
            rel: &rel,
            start: State::NEW,
            description: None,
            copy_from: None,
            rebuildable: true,
            files: &[
                (PARENT_SPEC, spec.as_bytes()),
                (VRAM_CONFIG, config.as_bytes()),
            ],
        },
    )?;
    run.progress.event(&Event::SubtaskCreated {
        task: &rel,
        wave: row.wave,
        depends_on: &row.depends_on,
        estimate: row.estimate,
    });
    if let Some(est) = row.estimate.filter(|e| *e > vram.max_peak_context_kb) {
        run.progress.event(&Event::EstimateOverPeak {
            task: &rel,
            message: "estimate exceeds max peak context",
            estimate: est,
            max_peak: vram.max_peak_context_kb,
        });
    }
    Ok(())
}

/// Sub-tasks no longer in the plan: one with work in it is kept (with a warning), one never
/// started is removed.
fn settle_orphans(
    run: &Run<'_>,
    parent_rel: &str,
    parent_dir: &Path,
    orphans: &[String],
) -> super::Result<()> {
    let tree = TaskTree::load_task(&run.settings.project, parent_rel, &run.config);
    for name in orphans {
        let rel = format!("{parent_rel}/subtasks/{name}");
        let started = tree
            .find(&rel)
            .is_none_or(|i| !tree.nodes[i].snap.artifacts.is_empty())
            || !never_started(&parent_dir.join(SUBTASKS_DIR).join(name));
        if started {
            run.progress.event(&Event::OrphanKept { task: &rel });
        } else {
            std::fs::remove_dir_all(parent_dir.join(SUBTASKS_DIR).join(name))?;
            run.progress.event(&Event::OrphanRemoved { task: &rel });
        }
    }
    Ok(())
}

/// The files sync writes into a sub-task folder it creates (besides `.state`).
const SYNC_FILES: [&str; 3] = [STATE_FILE, PARENT_SPEC, VRAM_CONFIG];
const PARENT_SPEC: &str = "PARENT_SPEC.md";
const VRAM_CONFIG: &str = "VRAM_CONFIG.md";

/// Whether a sub-task folder holds nothing but what sync wrote into it: no artifact, no log,
/// no `.stop`, no note of the user's. Only such a folder may be deleted or filled in.
fn never_started(dir: &Path) -> bool {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries.into_iter().all(|e| {
            e.is_ok_and(|e| {
                // A temp file of an interrupted atomic write is not work.
                e.file_name()
                    .to_str()
                    .is_some_and(|n| SYNC_FILES.contains(&n) || crate::fsx::is_temp_name(n))
            })
        }),
        Err(_) => false,
    }
}

/// Write the files a sub-task folder was made with again (see `unfinished` above). Not
/// fsynced: derived from the plan's row, and written again by the next sync when lost.
fn write_sync_files(
    dir: &Path,
    parent_rel: &str,
    row: &SubtaskRow,
    vram: &crate::detect::VramReport,
) -> super::Result<()> {
    let (spec, config) = sync_files(parent_rel, row, vram);
    write_rebuildable(&dir.join(PARENT_SPEC), spec.as_bytes())?;
    write_rebuildable(&dir.join(VRAM_CONFIG), config.as_bytes())?;
    Ok(())
}

/// What `PARENT_SPEC.md` and `VRAM_CONFIG.md` say for the sub-task of `row`.
fn sync_files(
    parent_rel: &str,
    row: &SubtaskRow,
    vram: &crate::detect::VramReport,
) -> (String, String) {
    (
        parent_spec(parent_rel, row, vram.max_peak_context_kb),
        crate::detect::render_vram_config_md(vram, row.estimate),
    )
}

fn parent_spec(parent_rel: &str, row: &SubtaskRow, max_peak: u64) -> String {
    let deps = if row.depends_on.is_empty() {
        "none".to_string()
    } else {
        row.depends_on.join(", ")
    };
    let files = if row.files.is_empty() {
        "not listed".to_string()
    } else {
        row.files.join(", ")
    };
    let scope = if row.scope.is_empty() {
        "(no scope given in DECOMPOSITION.md)"
    } else {
        row.scope.as_str()
    };
    let estimate = row
        .estimate
        .map_or("not given".to_string(), |e| format!("{}k tokens", e / 1000));
    format!(
        "# Parent specification: {name}\n\n\
         This is sub-task `{name}` of the parent task `{parent_rel}`. Its scope comes from the\n\
         parent's DECOMPOSITION.md; the parent's full SPEC.md is deliberately not copied here.\n\n\
         ## Scope and acceptance criteria\n\n{scope}\n\n\
         ## Place in the plan\n\n\
         - **Wave**: {wave}\n- **Depends on**: {deps}\n- **Files owned**: {files}\n\n\
         ## VRAM configuration\n\n\
         - **Estimated peak context**: {estimate}\n- **Max peak context per sub-task**: {max_peak} tokens\n\
         - See VRAM_CONFIG.md beside this file.\n",
        name = row.name,
        wave = row.wave,
    )
}
