//! Text and JSON renderings of what the core decided.

use crate::Ctx;
use crate::cli::{GraphArgs, StatusArgs};

pub fn status_command(_ctx: &Ctx, _args: &StatusArgs) -> anyhow::Result<u8> {
    anyhow::bail!("not yet")
}

pub fn graph_command(_ctx: &Ctx, _args: &GraphArgs) -> anyhow::Result<u8> {
    anyhow::bail!("not yet")
}
