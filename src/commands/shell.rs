//! `automaton completions SHELL` and `automaton man`: generated from the clap definitions, so
//! they never drift from `--help`.

use crate::cli::{Cli, CompletionsArgs};
use clap::CommandFactory;
use std::io::Write;

pub fn completions_command(args: &CompletionsArgs) -> anyhow::Result<u8> {
    let mut cmd = Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut cmd, "automaton", &mut out);
    out.flush()?;
    Ok(crate::exit::OK)
}

pub fn man_command() -> anyhow::Result<u8> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut buf)?;
    let mut out = std::io::stdout().lock();
    out.write_all(&buf)?;
    out.flush()?;
    Ok(crate::exit::OK)
}
