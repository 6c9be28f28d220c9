//! automaton: drive AI coding agents through a task lifecycle kept in plain files.
//!
//! Data flows one way: `task` reads folders into snapshots, `state` (pure) decides, `report`
//! renders, and `run` acts (spawns agents, writes `.state`). `main.rs` only calls [`main`].

pub mod artifact;
pub mod cli;
pub mod config_cmd;
pub mod detect;
pub mod exit;
pub mod fsx;
pub mod report;
pub mod run;
pub mod settings;
pub mod state;
pub mod task;
pub mod watch;

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// What every command gets: the project root (absolute) and output choices.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub project: PathBuf,
    pub color: cli::ColorWhen,
}

impl Ctx {
    /// Whether to colour a stream: `--color`, then NO_COLOR, then whether it is a terminal.
    pub fn colors(&self, is_terminal: bool) -> bool {
        match self.color {
            cli::ColorWhen::Always => true,
            cli::ColorWhen::Never => false,
            cli::ColorWhen::Auto => {
                is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}

/// Parse the command line, run the command, and turn the outcome into an exit code.
pub fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    let code = match run(&cli) {
        Ok(code) => code,
        Err(e) => {
            let code = e
                .downcast_ref::<exit::Failure>()
                .map_or(exit::ERROR, |f| f.code);
            eprintln!("error: {e:#}");
            code
        }
    };
    ExitCode::from(code)
}

fn run(cli: &cli::Cli) -> anyhow::Result<u8> {
    let project = std::path::absolute(&cli.project)?;
    if !project.is_dir() {
        anyhow::bail!("project folder {} does not exist", project.display());
    }
    let ctx = Ctx {
        project,
        color: cli.color,
    };
    match &cli.command {
        cli::Command::Status(args) => report::status_command(&ctx, args),
        cli::Command::Continue(args) if args.description.is_some() => Err(exit::Failure::new(
            exit::USAGE,
            "`continue` takes no description; to start a task: automaton orchestrate \"describe it\"",
        )
        .into()),
        cli::Command::Orchestrate(args) | cli::Command::Continue(args) => {
            run::orchestrate_command(&ctx, args)
        }
        cli::Command::Task(cli::TaskCommand::Create(args)) => task::create_command(&ctx, args),
        cli::Command::Config(args) => config_cmd::config_command(&ctx, args),
        cli::Command::DetectVram(args) => detect::detect_command(&ctx, args),
        cli::Command::Graph(args) => report::graph_command(&ctx, args),
        cli::Command::Watch(args) => watch::watch_command(&ctx, args),
    }
}
