//! `automaton status`.

use super::{Ctx, out};
use crate::cli::StatusArgs;
use crate::report::{
    STATUS_FORMAT_VERSION, StatusDoc, TaskView, phase_config, print_warnings, render_report,
    task_view_mode,
};
use crate::settings::Settings;
use crate::task::TaskTree;

pub fn status_command(ctx: &Ctx, args: &StatusArgs) -> super::Result<u8> {
    let settings = Settings::load(&ctx.project)?;
    print_warnings(&settings.warnings);
    let gates = crate::report::approval_gates(&settings);
    let mut tree = TaskTree::load(&ctx.project, &phase_config(&settings));
    tree.apply_gates(&gates);
    tree.budget = Some(settings.budget(crate::settings::Key::BudgetPerTask));
    print_warnings(&tree.warnings);
    let prefix = ctx.command_prefix();
    // Auto-Execute says what `orchestrate` would do: run the next steps (Autopilot: Enabled),
    // or leave them to a person, one `--step` at a time (Disabled).
    let autopilot = settings.bool(crate::settings::Key::Autopilot);
    if args.json {
        let warnings: Vec<String> = settings
            .warnings
            .iter()
            .chain(&tree.warnings)
            .cloned()
            .collect();
        let tasks: Vec<TaskView> = (0..tree.nodes.len())
            .map(|i| task_view_mode(&tree, i, &prefix, !autopilot))
            .collect();
        let doc = StatusDoc {
            version: STATUS_FORMAT_VERSION,
            project: ctx.project.display().to_string(),
            tasks,
            warnings: &warnings,
        };
        out::println(serde_json::to_string_pretty(&doc)?)?;
    } else {
        out::print(render_report(&tree, &prefix, autopilot, false))?;
    }
    Ok(crate::exit::OK)
}
