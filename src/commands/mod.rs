//! The command layer: one handler per subcommand. The only place that sees `cli` and [`Ctx`];
//! everything below it takes plain values (a project path, a colour choice, a prefix).

mod attach;
mod config;
mod detect_vram;
mod error;
mod gates;
mod graph;
mod isolation;
mod orchestrate;
pub mod out;
mod status;
mod task;

pub use error::{Error, Result};

use crate::{cli, exit};
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

    /// How to spell `automaton` commands for this project (with `--project` when it is not
    /// the current folder).
    pub fn command_prefix(&self) -> String {
        let cwd = std::env::current_dir().ok();
        if cwd.as_deref() == Some(self.project.as_path()) {
            "automaton".into()
        } else {
            format!(
                "automaton --project {}",
                crate::report::shell_quote(&self.project.display().to_string())
            )
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
    // The one boundary: every outcome becomes its documented exit code here.
    let code = match run(&cli) {
        Ok(code) => code,
        // The reader went away (`automaton status | head -1`): done, quietly.
        Err(e) if e.is_quiet() => e.exit_code(),
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    };
    ExitCode::from(code)
}

fn run(cli: &cli::Cli) -> Result<u8> {
    let project = std::path::absolute(&cli.project).map_err(|source| Error::ProjectPath {
        path: cli.project.clone(),
        source,
    })?;
    if !project.is_dir() {
        return Err(Error::NoProject(project));
    }
    let ctx = Ctx {
        project,
        color: cli.color,
    };
    match &cli.command {
        cli::Command::Status(args) => status::status_command(&ctx, args),
        cli::Command::Continue(args) if args.description.is_some() => Err(Error::Usage(
            "`continue` takes no description; to start a task: automaton orchestrate \"describe it\""
                .into(),
        )),
        cli::Command::Orchestrate(args) | cli::Command::Continue(args) => {
            orchestrate::orchestrate_command(&ctx, args)
        }
        cli::Command::Task(cli::TaskCommand::Create(args)) => task::create_command(&ctx, args),
        cli::Command::Config(args) => config::config_command(&ctx, args),
        cli::Command::DetectVram(args) => detect_vram::detect_command(&ctx, args),
        cli::Command::Graph(args) => graph::graph_command(&ctx, args),
        cli::Command::Merge(args) => isolation::merge_command(&ctx, args),
        cli::Command::Clean(args) => isolation::clean_command(&ctx, args),
        cli::Command::Approve(args) => gates::approve_command(&ctx, args),
        cli::Command::Reject(args) => gates::reject_command(&ctx, args),
        cli::Command::Rerun(args) => gates::rerun_command(&ctx, args),
        cli::Command::Attach(args) => attach::attach_command(&ctx, args),
    }
}
