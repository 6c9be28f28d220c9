//! `automaton graph`.

use super::{Ctx, out};
use crate::cli::{GraphArgs, GraphFormat};
use crate::report::graph::{self, render_graph};
use crate::report::{phase_config, print_warnings};
use crate::settings::Settings;
use crate::task::TaskTree;

pub fn graph_command(ctx: &Ctx, args: &GraphArgs) -> super::Result<u8> {
    let settings = Settings::load(&ctx.project)?;
    print_warnings(&settings.warnings);
    let tree = TaskTree::load(&ctx.project, &phase_config(&settings));
    print_warnings(&tree.warnings);
    let format = match args.format {
        GraphFormat::Mermaid => graph::GraphFormat::Mermaid,
        GraphFormat::Dot => graph::GraphFormat::Dot,
    };
    out::print(render_graph(&tree, format))?;
    Ok(crate::exit::OK)
}
