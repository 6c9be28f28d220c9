//! `automaton graph`: the task DAG as Mermaid or Graphviz DOT, coloured by state.

use crate::Ctx;
use crate::cli::{GraphArgs, GraphFormat};

pub fn graph_command(_ctx: &Ctx, _args: &GraphArgs) -> anyhow::Result<u8> {
    let _ = GraphFormat::Mermaid;
    anyhow::bail!("graph is not implemented yet")
}
