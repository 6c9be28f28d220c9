//! Task folders: discovery, snapshots, names.

use crate::Ctx;
use crate::cli::TaskCreateArgs;

pub fn create_command(_ctx: &Ctx, _args: &TaskCreateArgs) -> anyhow::Result<u8> {
    anyhow::bail!("not yet")
}
