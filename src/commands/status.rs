//! `automaton status`.

use super::{Ctx, out};
use crate::cli::StatusArgs;
use crate::report::{
    STATUS_FORMAT_VERSION, StatusDoc, TaskViews, phase_config, print_warnings, render_report,
};
use crate::settings::Settings;
use crate::task::TaskTree;

pub fn status_command(ctx: &Ctx, args: &StatusArgs) -> super::Result<u8> {
    // A bad value is reported, not fatal: the report still runs (orchestrate refuses).
    let settings = Settings::load_lenient(&ctx.project)?;
    let invalid = super::config::invalid_warnings(&settings);
    print_warnings(&settings.warnings);
    print_warnings(&invalid);
    let gates = crate::report::approval_gates(&settings);
    let mut tree = TaskTree::load(&ctx.project, &phase_config(&settings));
    tree.apply_gates(&gates);
    tree.budget = Some(settings.budget(crate::settings::Key::BudgetPerTask));
    let cfg = crate::run::config::RunConfig::resolve(&settings);
    tree.waves = crate::run::project_wave_rules(&cfg, &ctx.project);
    print_warnings(&tree.warnings);
    let prefix = ctx.command_prefix();
    // Auto-Execute says what `orchestrate` would do: run the next steps (Autopilot: Enabled),
    // or leave them to a person, one `--step` at a time (Disabled).
    let autopilot = settings.bool(crate::settings::Key::Autopilot);
    let holder = crate::store::lock::holding(&ctx.project);
    if args.json {
        let warnings: Vec<String> = settings
            .warnings
            .iter()
            .chain(&invalid)
            .chain(&tree.warnings)
            .cloned()
            .collect();
        let doc = StatusDoc {
            version: STATUS_FORMAT_VERSION,
            project: ctx.project.display().to_string(),
            run: holder,
            tasks: TaskViews(&tree, &prefix, !autopilot),
            warnings: &warnings,
        };
        out::json_pretty(&doc)?;
    } else if ctx.found == super::project::Found::Nowhere && tree.nodes.is_empty() {
        // `orchestrate "…"` refuses here (exit 66): the way on is `init`.
        out::println(format_args!(
            "No automaton project here: neither {} nor any folder above it holds .automaton/ \
             or tasks/. Set one up with:\n  {prefix} init",
            ctx.project.display()
        ))?;
    } else {
        if let Some(h) = &holder {
            // What the report offers waits for that run: say so before a command is refused.
            out::println(format_args!(
                "A run drives this project now ({}): `{prefix} watch` follows it; orchestrate, \
                 answer, reject, rerun, merge and clean wait until it ends (exit 75 before).\n",
                h.describe()
            ))?;
        }
        out::print(render_report(&tree, &prefix, autopilot, false))?;
        print_vram_needs(&settings, &tree)?;
    }
    Ok(crate::exit::OK)
}

/// With VRAM admission configured: the figures and each sub-task's need (text status only).
fn print_vram_needs(settings: &Settings, tree: &TaskTree) -> super::Result<()> {
    use crate::settings::Key;
    if settings.text(Key::ModelWeights).is_none() || settings.text(Key::KvBytesPerToken).is_none() {
        return Ok(());
    }
    let gpu = crate::detect::detect(settings, false).gpu_vram_gb;
    let Some(gate) = crate::run::vram::Admission::from_settings(settings, gpu) else {
        return Ok(());
    };
    let mut text = String::from("\n**VRAM admission**\n");
    for line in gate.figures().lines() {
        text.push_str(&format!("- {line}\n"));
    }
    for node in &tree.nodes {
        if let Some(need) = gate.need(&node.dir) {
            let fits = if gate.check(&node.rel, need).is_ok() {
                ""
            } else {
                " (never fits: refused)"
            };
            text.push_str(&format!(
                "- {}: needs {}{fits}\n",
                node.rel,
                crate::run::vram::gb(need)
            ));
        }
    }
    out::print(text)?;
    Ok(())
}
