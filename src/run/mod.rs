//! Acting on decisions: the loop driver, the agent runner, the project lock.

pub mod agent;
pub mod lock;

use crate::Ctx;
use crate::cli::OrchestrateArgs;

/// `automaton orchestrate` / `automaton continue`.
pub fn orchestrate_command(_ctx: &Ctx, _args: &OrchestrateArgs) -> anyhow::Result<u8> {
    anyhow::bail!("orchestrate is not implemented yet")
}
