//! `automaton status`.

use super::Ctx;
use crate::cli::StatusArgs;
use crate::report::{
    STATUS_FORMAT_VERSION, phase_config, print_warnings, render_report, task_view,
};
use crate::settings::Settings;
use crate::task::TaskTree;
use std::io::Write;

pub fn status_command(ctx: &Ctx, args: &StatusArgs) -> anyhow::Result<u8> {
    let settings = Settings::load(&ctx.project)?;
    print_warnings(&settings.warnings);
    let tree = TaskTree::load(&ctx.project, &phase_config(&settings));
    print_warnings(&tree.warnings);
    let prefix = ctx.command_prefix();
    if args.json {
        let warnings: Vec<String> = settings
            .warnings
            .iter()
            .chain(&tree.warnings)
            .cloned()
            .collect();
        // The same document as `StatusDoc`, streamed: one task's view at a time, so memory
        // does not grow with the size of the output.
        #[derive(serde::Serialize)]
        struct Streamed<'a> {
            version: u32,
            project: String,
            tasks: Views<'a>,
            warnings: &'a [String],
        }
        struct Views<'a>(&'a TaskTree, &'a str);
        impl serde::Serialize for Views<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq((0..self.0.nodes.len()).map(|i| task_view(self.0, i, self.1)))
            }
        }
        let doc = Streamed {
            version: STATUS_FORMAT_VERSION,
            project: ctx.project.display().to_string(),
            tasks: Views(&tree, &prefix),
            warnings: &warnings,
        };
        let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
        serde_json::to_writer_pretty(&mut out, &doc)?;
        out.write_all(b"\n")?;
        out.flush()?;
    } else {
        print!("{}", render_report(&tree, &prefix, false, false));
    }
    Ok(crate::exit::OK)
}
