//! `automaton status`.

use super::Ctx;
use crate::cli::StatusArgs;
use crate::report::{
    STATUS_FORMAT_VERSION, StatusDoc, TaskView, phase_config, print_warnings, render_report,
    task_view,
};
use crate::settings::Settings;
use crate::task::TaskTree;

pub fn status_command(ctx: &Ctx, args: &StatusArgs) -> anyhow::Result<u8> {
    // A bad value is reported, not fatal: the report still runs (orchestrate refuses).
    let settings = Settings::load_lenient(&ctx.project)?;
    let invalid = super::config::invalid_warnings(&settings);
    print_warnings(&settings.warnings);
    print_warnings(&invalid);
    let tree = TaskTree::load(&ctx.project, &phase_config(&settings));
    print_warnings(&tree.warnings);
    let prefix = ctx.command_prefix();
    if args.json {
        let warnings: Vec<String> = settings
            .warnings
            .iter()
            .chain(&invalid)
            .chain(&tree.warnings)
            .cloned()
            .collect();
        let tasks: Vec<TaskView> = (0..tree.nodes.len())
            .map(|i| task_view(&tree, i, &prefix))
            .collect();
        let doc = StatusDoc {
            version: STATUS_FORMAT_VERSION,
            project: ctx.project.display().to_string(),
            tasks,
            warnings: &warnings,
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", render_report(&tree, &prefix, false, false));
    }
    Ok(crate::exit::OK)
}
