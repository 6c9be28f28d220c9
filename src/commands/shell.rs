//! `automaton completions SHELL` and `automaton man`: generated from the clap definitions, so
//! they never drift from `--help`.

use super::out;
use crate::cli::{Cli, CompletionsArgs};
use clap::CommandFactory;

pub fn completions_command(args: &CompletionsArgs) -> super::Result<u8> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "automaton", &mut buf);
    out::print(String::from_utf8_lossy(&buf))?;
    Ok(crate::exit::OK)
}

pub fn man_command() -> super::Result<u8> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut buf)?;
    out::print(String::from_utf8_lossy(&buf))?;
    Ok(crate::exit::OK)
}
