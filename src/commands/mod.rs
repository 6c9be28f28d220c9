//! The command layer: one handler per subcommand. The only place that sees `cli` and [`Ctx`];
//! everything below it takes plain values (a project path, a colour choice, a prefix).

mod answer;
mod attach;
mod config;
mod detect_vram;
mod dry_run;
mod error;
mod gates;
mod gates_reject;
mod graph;
mod help;
mod init;
mod isolation;
mod logs;
mod orchestrate;
pub mod out;
mod project;
mod shell;
mod status;
mod task;
mod watch;

pub use error::{Error, Result};

use crate::{cli, exit, names};
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// What every command gets: the project root (absolute) and output choices.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub project: PathBuf,
    pub color: cli::ColorWhen,
    /// How the project was found: `--project`, discovered upward, or not at all.
    pub found: project::Found,
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

    /// The task a command line names, as a path from the project ([`names::task_path`]); an
    /// absolute path is taken when it lies in the project's `tasks/` or `.automaton/tasks/`
    /// (and refused, naming the project, when it does not).
    pub fn task_path(&self, input: &str) -> Result<String, Error> {
        let path = std::path::Path::new(input.trim());
        if !path.is_absolute() {
            return names::task_path(input).map_err(Error::Input);
        }
        use std::path::Path;
        let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let inside = path
            .strip_prefix(&self.project)
            .map(Path::to_path_buf)
            .or_else(|_| {
                real(path)
                    .strip_prefix(real(&self.project))
                    .map(Path::to_path_buf)
            })
            .ok()
            .and_then(|rest| rest.to_str().map(str::to_string));
        match inside {
            // A bare name is shorthand for `tasks/<name>`; a path is not: `/project/auth` is
            // no task folder, whatever `tasks/auth` holds.
            Some(rest) if rest.starts_with("tasks/") || rest.starts_with(".automaton/tasks/") => {
                names::task_path(&rest).map_err(Error::Input)
            }
            Some(_) => Err(Error::Input(format!(
                "`{input}` is not a task folder: task folders are under `tasks/` or \
                 `.automaton/tasks/` of the project {}",
                self.project.display()
            ))),
            None => Err(Error::Input(format!(
                "`{input}` is not inside the project {}: name a task folder of it (`tasks/<name>`)",
                self.project.display()
            ))),
        }
    }

    /// How to spell `automaton` commands for this project (with `--project` when it is not
    /// the current folder, unless it was discovered from there: then a plain `automaton` run
    /// from the same folder finds it again).
    pub fn command_prefix(&self) -> String {
        let cwd = std::env::current_dir().ok();
        if self.found == project::Found::Discovered
            || cwd.as_deref() == Some(self.project.as_path())
        {
            "automaton".into()
        } else {
            format!(
                "automaton --project {}",
                crate::report::shell_quote_path(&self.project)
            )
        }
    }
}

/// Parse the command line, run the command, and turn the outcome into an exit code.
pub fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::InvalidUtf8 => {
            eprintln!(
                "error: {}",
                invalid_utf8_message(std::env::args_os().skip(1))
            );
            return ExitCode::from(exit::USAGE);
        }
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
            let code = e.exit_code();
            if json_mode(&cli.command) {
                // A JSON error goes to stdout, as the reader of `--json` expects; if stdout
                // is gone too, there is nobody left to tell.
                let _ = out::println(json_error(&e, code));
            } else {
                eprintln!("error: {e}");
            }
            code
        }
    };
    ExitCode::from(code)
}

/// The usage error for an argument that is not UTF-8 (clap only says that one is), naming it
/// with its bytes escaped. Only a path (`--project`/`-C`) may be any bytes.
fn invalid_utf8_message(args: impl Iterator<Item = std::ffi::OsString>) -> String {
    match args.enumerate().find(|(_, a)| a.to_str().is_none()) {
        Some((i, a)) => format!(
            "argument {} ({a:?}) is not valid UTF-8: task paths, descriptions and values must be \
             text (only the folder of --project/-C may be any bytes)",
            i + 1
        ),
        None => "an argument is not valid UTF-8".into(),
    }
}

/// Whether the command was asked for JSON: then an error is printed as a JSON object on stdout
/// (see [`json_error`]) instead of an `error:` line on stderr.
fn json_mode(command: &cli::Command) -> bool {
    match command {
        cli::Command::Status(a) => a.json,
        cli::Command::Orchestrate(a) => a.run.json,
        cli::Command::Continue(a) => a.run.json,
        cli::Command::Task(cli::TaskCommand::Create(a)) => a.json,
        cli::Command::Config(a) => a.json,
        cli::Command::Init(a) => a.json,
        _ => false,
    }
}

/// `{"event": "error", "error": "...", "exit_code": n}`, one line.
fn json_error(e: &Error, code: u8) -> String {
    serde_json::json!({"event": "error", "error": e.to_string(), "exit_code": code}).to_string()
}

fn run(cli: &cli::Cli) -> Result<u8> {
    // Commands that need no project.
    match &cli.command {
        cli::Command::Completions(args) => return shell::completions_command(args),
        cli::Command::Man(args) => return shell::man_command(args),
        cli::Command::Help(args) => return help::help_command(args),
        cli::Command::Init(args) => return init::init_command(cli.project.as_deref(), args),
        _ => {}
    }
    // An empty, blank or reserved request is a usage error before anything is looked at: it
    // must never fall through to `continue` and drive some other task.
    if let cli::Command::Orchestrate(cli::OrchestrateArgs {
        description: Some(desc),
        ..
    }) = &cli.command
        && let Some(why) = crate::names::request_refusal(desc)
    {
        return Err(Error::Usage(why));
    }
    let (project, found) = project::locate(cli.project.as_deref())?;
    if !project.is_dir() {
        return Err(Error::NoProject(project));
    }
    let ctx = Ctx {
        project,
        color: cli.color,
        found,
    };
    match &cli.command {
        cli::Command::Status(args) => status::status_command(&ctx, args),
        cli::Command::Continue(args) if args.description.is_some() => Err(Error::Usage(
            "`continue` takes no description; to start a task: automaton orchestrate \"describe it\""
                .into(),
        )),
        cli::Command::Continue(args) => {
            project::check_may_create(&ctx.project, ctx.found)?;
            orchestrate::orchestrate_command(&ctx, &continue_as_orchestrate(args))
        }
        cli::Command::Orchestrate(args) => {
            project::check_may_create(&ctx.project, ctx.found)?;
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
        cli::Command::Answer(args) => answer::answer_command(&ctx, args),
        cli::Command::Rerun(args) => gates::rerun_command(&ctx, args),
        cli::Command::Watch(args) => watch::watch_command(&ctx, args),
        cli::Command::Attach(args) => attach::attach_command(&ctx, args),
        cli::Command::Logs(args) => logs::logs_command(&ctx, args),
        cli::Command::Init(_)
        | cli::Command::Completions(_)
        | cli::Command::Man(_)
        | cli::Command::Help(_) => {
            unreachable!("handled above")
        }
    }
}

/// `continue` is `orchestrate` without a description.
fn continue_as_orchestrate(args: &cli::ContinueArgs) -> cli::OrchestrateArgs {
    cli::OrchestrateArgs {
        run: args.run.clone(),
        ..cli::OrchestrateArgs::default()
    }
}
