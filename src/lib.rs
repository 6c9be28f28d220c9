//! automaton: drive AI coding agents through a task lifecycle kept in plain files.
//!
//! The layers, lowest first. A module imports only from its own layer or those below it
//! (`layers::imports_only_go_down` checks every `crate::` path in `src/`):
//!
//! 0. leaves, no I/O of their own beyond `fsx`: `exit` (codes), `fsx` (atomic writes),
//!    `state` and `plan` (the pure core: artifacts → states; facts → each task's next action,
//!    which sub-tasks of a wave may start, retries, stops), `names` (task names), `agent_kind`,
//!    `units` (number formats);
//! 1. `store`: the on-disk formats (journal, `.state`/`.stop`/`.origin`, `.state.approvals`,
//!    `.state.inputs`, `.isolation`, lock, VRAM cache);
//!    `process`: the one supervisor of every child process; `git`: worktrees, commits, merges;
//! 2. `settings`: layered configuration;
//! 3. `artifact`: the parsers of VERDICT.md and DECOMPOSITION.md;
//! 4. `task`: discovery and snapshots of task folders;
//! 5. `detect`: the VRAM / model-context budget;
//! 6. `report`: text and JSON renderings;
//! 7. `run`: the run engine (its modules and one task's path through them are in
//!    docs/architecture.md);
//! 8. `commands`: one handler per subcommand, and `cli`, the clap definitions it alone reads;
//!    [`Ctx`] lives there too, and `commands::Error`, which wraps every module's `thiserror`
//!    error and is the one place an error becomes an exit code. `main.rs` only calls [`main`].

pub mod agent_kind;
pub mod artifact;
pub mod cli;
pub mod commands;
pub mod detect;
pub mod exit;
pub mod fsx;
pub mod git;
pub mod names;
pub mod plan;
pub mod process;
pub mod report;
pub mod run;
pub mod settings;
pub mod state;
pub mod store;
pub mod task;
pub mod units;
pub mod watch;

pub use commands::Ctx;

/// Parse the command line, run the command, and turn the outcome into an exit code.
pub fn main() -> std::process::ExitCode {
    // `args_os`, not `args`: an argument that is not UTF-8 (a path's bytes) must reach the
    // parser, which names it, instead of panicking here.
    let mut args = std::env::args_os().skip(1).take(5);
    let first = args.next();
    // The shim's and the sandbox's arguments are automaton's own (numbers, names, the exit
    // record's path and the agent command): text. A project path that is not UTF-8 loses only
    // the exit record, and a run killed before judging the phase then runs it again.
    type Main = fn(&[String]) -> i32;
    let hidden: [(&str, Main); 2] = [
        (process::shim::SHIM_ARG, process::shim::main),
        (
            process::sandbox_init::SANDBOX_ARG,
            process::sandbox_init::main,
        ),
    ];
    if let Some((_, run)) = hidden
        .iter()
        .find(|(arg, _)| first.as_deref() == Some(std::ffi::OsStr::new(arg)))
    {
        let rest: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
        let code = run(&rest);
        return std::process::ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // Agents run under the watchdog shim: this very binary, through /proc/self/exe (the file
    // this process runs, even if an upgrade replaced the path since), or its path where there
    // is no /proc.
    let proc_exe = std::path::Path::new("/proc/self/exe");
    if proc_exe.exists() {
        process::shim::enable(proc_exe.to_path_buf());
    } else if let Ok(exe) = std::env::current_exe() {
        process::shim::enable(exe);
    }
    commands::main()
}

#[cfg(test)]
mod layers;
