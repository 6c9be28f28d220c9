//! The command line: clap definitions only. Behaviour lives in the modules they name.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Tasks live in folders: tasks/<name>/ and .automaton/tasks/<name>/, sub-tasks under
<task>/subtasks/<name>/. The artifacts a folder holds decide its state:
  (nothing) -> research -> SPEC.md -> [DECOMPOSITION.md] -> [DESIGN.md] -> [TEST_PLAN.md]
  -> IMPLEMENTATION.md -> BUG_REPORT.md -> ADVERSARIAL_BUG_REPORT.md -> DOC_REVIEW.md -> VERDICT.md

Examples:
  automaton init                              set up .automaton/ for the agent CLI on PATH
  automaton orchestrate \"add user auth\"     create tasks/add-user-auth and drive it
  automaton orchestrate                       continue the most advanced task
  automaton status                            every task, its state and the next command
  automaton status --json | jq '.tasks[]'     the same for scripts
  automaton detect-vram --human               GPU/RAM/context budget

Without --project/-C, the project is the nearest folder at or above the working directory that
holds .automaton/ or tasks/.

Exit codes (`automaton help exit-codes` says what each means):
  0 ok, 1 error, 2 usage,
  10 verdict FAIL or NEEDS_REVIEW, 11 bad artifact, 12 agent failed, 13 phase timeout,
  14 agent stalled, 15 iteration cap, 16 total time cap, 17 verify failed, 18 sub-tasks failed,
  19 a person must decide, 20 awaiting approval, 21 stale artifacts, 22 isolation failed,
  23 merge or clean refused, 24 agent not found, 25 steps remain (manual mode, --step),
  26 frozen files changed, 27 task budget spent, 28 run budget spent, 29 sub-task not ready,
  30 clean kept some, 31 context window too small, 32 the agent asked questions,
  66 no project, 70 internal error, 75 project locked, 130 interrupted.
More pages: `automaton help settings`, `help events`, `help files`.";

/// The end of `orchestrate --help` and `continue --help`.
const RUN_AFTER_HELP: &str = "\
Flags beat the environment, which beats the settings files (.agent.md, config.md); `automaton
config` shows each setting in effect, `automaton help settings` what each one means. The exit code says
how the run ended (0: every task it drove is complete): `automaton help exit-codes`.";

#[derive(Debug, Parser)]
#[command(
    name = "automaton",
    version,
    about = "Drive AI coding agents through a task lifecycle kept in plain files",
    after_help = AFTER_HELP,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// Project root (holds tasks/ and .automaton/). Without it, the nearest folder upward
    /// from the working directory that holds .automaton/ or tasks/ (as cargo finds Cargo.toml)
    #[arg(long, short = 'C', global = true, value_name = "DIR")]
    pub project: Option<PathBuf>,

    /// When to use colour; NO_COLOR in the environment means never for `auto`
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto)]
    pub color: ColorWhen,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Report every task: its state, next step and the exact command that runs it
    Status(StatusArgs),
    /// Drive a task through its phases with an agent command (autopilot)
    #[command(after_help = RUN_AFTER_HELP)]
    Orchestrate(OrchestrateArgs),
    /// Continue the most advanced unfinished task (same as `orchestrate` with no description)
    #[command(after_help = RUN_AFTER_HELP)]
    Continue(ContinueArgs),
    /// Create task folders (`task create`)
    #[command(subcommand)]
    Task(TaskCommand),
    /// Print every effective setting and where it came from (file:line, env, or default)
    Config(ConfigArgs),
    /// Print the GPU/RAM/model-context budget as JSON (cached in .automaton/.vram_cache.json)
    DetectVram(DetectVramArgs),
    /// Print the task graph (tasks, sub-tasks, dependencies) as Mermaid or Graphviz DOT
    Graph(GraphArgs),
    /// Merge a completed task's integration branch into the branch it was made from, checked
    /// out in the project root (isolation `worktree`; fast-forward when possible, never with
    /// force)
    Merge(MergeArgs),
    /// Remove the worktrees and merged branches of finished tasks (isolation `worktree`);
    /// refuses dirty worktrees and unmerged branches, never deletes orphans
    Clean(CleanArgs),
    /// Approve the gated phase a task waits at (`Approve before`), for its artifacts as they are
    Approve(ApproveArgs),
    /// Reject a task's newest artifact: it moves to logs/rejected/ and its phase runs again
    /// with the reason
    Reject(RejectArgs),
    /// Answer the questions an agent asked (QUESTIONS.md): `1=2` picks option 2, `1=Redis` an
    /// option by its text, `2="free text"` your own words; recorded in DECISIONS.md, and the
    /// phase runs again with them
    Answer(AnswerArgs),
    /// Set a task back to a phase: that phase's artifact and every later one move to
    /// logs/superseded/<n>/, and `orchestrate` builds them again
    Rerun(RerunArgs),
    /// Set up a project: write a commented .automaton/.agent.md and .automaton/config.md, and
    /// add automaton's ignore rules (lock, caches, worktrees, task logs) to .gitignore
    Init(InitArgs),
    /// Print a shell completion script (e.g. `automaton completions bash > ~/.local/share/bash-completion/completions/automaton`)
    Completions(CompletionsArgs),
    /// Print the man page (roff) on stdout (e.g. `automaton man > automaton.1`), or a
    /// command's (`automaton man orchestrate`); `--dir` writes every page
    Man(ManArgs),
    /// Print a help page: `exit-codes`, `settings`, `events` (the JSON stream), `files` (what
    /// automaton reads and writes, and what to commit), or a command's help
    Help(HelpArgs),
    /// A live view of every task, wave, phase and log; reads only, never takes the lock.
    /// Without a terminal (a pipe, TERM=dumb) it prints one plain line per change
    Watch(WatchArgs),
    /// Attach to the tmux window of a task's running phase (`- **Executor**: tmux`); inside
    /// tmux it switches to it when it is on the same server. Detach with the tmux prefix + d:
    /// the agent keeps running
    Attach(AttachArgs),
    /// Print a task's latest phase log (`<task>/logs/<phase>-<n>.log`), or the latest attempt
    /// of `--phase`; with `-f`, keep printing what the agent appends until the phase ends.
    /// Works with every executor (local, tmux, Slurm): all of them write that file
    Logs(LogsArgs),
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Task path (as `status` prints it)
    pub task: String,
    /// The phase whose latest attempt to print (e.g. `implement`); default: the latest log
    #[arg(long, value_name = "PHASE")]
    pub phase: Option<String>,
    /// Follow: print new output as it is written, until the phase's agent (process group or
    /// Slurm job) has ended
    #[arg(long, short = 'f')]
    pub follow: bool,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// Task path (as `status` prints it)
    pub task: String,
    /// Read-only: watch without sending keys to the agent
    #[arg(long, short = 'r')]
    pub read_only: bool,
    /// Print the tmux command that attaches (and the window), without running it
    #[arg(long)]
    pub print: bool,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The top-level task whose branch to merge (e.g. `tasks/auth` or `auth`)
    pub task: String,
}

#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Print what would be removed and refused, and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Only this task and its sub-tasks
    pub task: Option<String>,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// Task path (as `status` prints it)
    pub task: String,
    /// A note kept with the approval in .state.approvals
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// Also approve every sub-task of this task that waits for approval
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// Task path (as `status` prints it)
    pub task: String,
    /// One per question: N=<option number>, N=<option text> or N="free text"
    #[arg(value_name = "N=ANSWER")]
    pub answers: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RejectArgs {
    /// Task path (as `status` prints it)
    pub task: String,
    /// Why: the phase that runs again gets it in its prompt
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
}

#[derive(Debug, Args)]
pub struct RerunArgs {
    /// Task path (as `status` prints it)
    pub task: String,
    /// The first phase to run again (a phase word: research, design, test_design, implement, ...)
    #[arg(long, value_name = "PHASE")]
    pub from: String,
}

/// The agent CLIs `init` can set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InitAgent {
    Claude,
    Codex,
    Aider,
    Gemini,
    Opencode,
    Command,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The agent to set up; without it, the first of claude, codex, aider, gemini, opencode found on
    /// PATH, else `command` (with the demo agent as a commented example)
    #[arg(long, value_enum, value_name = "AGENT")]
    pub agent: Option<InitAgent>,
    /// Print one JSON object (files written and kept, agent, next commands); errors as JSON too
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (e.g. `orchestrate`, `task create`)
    pub command: Vec<String>,
    /// Write automaton.1 and a page per command (automaton-orchestrate.1, ...) into DIR
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct HelpArgs {
    /// A topic (exit-codes, settings, events, files) or a command (e.g. `orchestrate`)
    #[arg(value_name = "TOPIC|COMMAND")]
    pub topic: Vec<String>,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Draw one frame as text on stdout and exit (for scripts and tests)
    #[arg(long)]
    pub once: bool,
    /// The size of the `--once` frame, COLSxROWS, each from 20 to 1000 (at least 20 columns
    /// and 20 rows, the least the table and the log fit in) [default: the terminal's, else
    /// $COLUMNS x $LINES, else 120x40]
    #[arg(long, value_name = "COLSxROWS", value_parser = parse_size, requires = "once")]
    pub size: Option<(u16, u16)>,
}

fn parse_size(s: &str) -> Result<(u16, u16), String> {
    let (w, h) = s
        .split_once('x')
        .ok_or_else(|| format!("`{s}`: expected COLSxROWS, e.g. 120x40"))?;
    let n = |v: &str, what: &str| {
        v.parse::<u16>()
            .ok()
            .filter(|n| (20..=1000).contains(n))
            .ok_or_else(|| {
                format!("`{s}`: {what} must be a number from 20 to 1000 (not `{v}`), e.g. 120x40")
            })
    };
    Ok((n(w, "the columns")?, n(h, "the rows")?))
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print one JSON document instead of the report (`version`, `project`, `tasks`: each
    /// task's state, what it waits for and its command, as the report shows them; `warnings`);
    /// errors as JSON too
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Create a task folder by hand, with a .state file: it starts at `--at` (default new),
    /// and `orchestrate` drives it from there
    Create(TaskCreateArgs),
}

#[derive(Debug, Args)]
pub struct TaskCreateArgs {
    /// Task path: a bare name (tasks/<name>), or a path under tasks/ or .automaton/tasks/,
    /// e.g. `auth/subtasks/login` or `.automaton/tasks/auth`
    pub path: String,
    /// The state the task starts at (a .state word: new, design, implement, bug_find, ...)
    #[arg(long, value_name = "STATE", default_value = "new")]
    pub at: String,
    /// Print one JSON object (`created`, `state`, `dir`) instead of a line; errors as JSON too
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Print the settings as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VramFormat {
    Json,
    Text,
}

#[derive(Debug, Args)]
pub struct DetectVramArgs {
    /// Print the "VRAM Detection Results" block instead of JSON
    #[arg(long, conflicts_with = "format")]
    pub human: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t = VramFormat::Json)]
    pub format: VramFormat,
    /// JSON (the default), as every command with a JSON form takes it
    #[arg(long, conflicts_with_all = ["human", "format"])]
    pub json: bool,
    /// Probe again, ignoring (and then rewriting) the cache
    #[arg(long)]
    pub refresh: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    Mermaid,
    Dot,
}

#[derive(Debug, Args)]
pub struct GraphArgs {
    /// Output format
    #[arg(long, value_enum, default_value_t = GraphFormat::Mermaid)]
    pub format: GraphFormat,
}

#[derive(Debug, Args, Default)]
pub struct OrchestrateArgs {
    /// What to build, in words: creates tasks/<kebab-case-name>/ and drives it.
    /// Without it, the most advanced unfinished task is continued; an empty or blank one, or
    /// the command word `continue`, is refused (exit 2)
    pub description: Option<String>,
    /// Drive this task folder (path relative to the project root)
    #[arg(long, value_name = "PATH", conflicts_with = "description")]
    pub task: Option<String>,
    /// Only report, as `status` does, and create fix/review/tiebreak tasks for failed verdicts
    #[arg(long, conflicts_with_all = ["description", "task"])]
    pub manual: bool,
    /// Run exactly one phase of the task (or of one of its sub-tasks), whatever the Autopilot
    /// setting: the command manual mode prints, to walk a task through by hand
    #[arg(long, conflicts_with = "manual")]
    pub step: bool,
    /// Move the task's VERDICT.md to logs/VERDICT-<n>.md and drive it again, so that its
    /// referee judges it anew (once its fix tasks are complete)
    #[arg(long, requires = "task")]
    pub referee_again: bool,
    /// Print what the run would do next for every task it would drive, and why, without
    /// running, writing or locking anything (as `make -n`)
    #[arg(long, conflicts_with_all = ["manual", "referee_again"])]
    pub dry_run: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

/// The options of a run, shared by `orchestrate` and `continue`.
#[derive(Debug, Args, Default, Clone)]
pub struct RunArgs {
    /// Agent command line (run with `sh -c`); overrides AUTOMATON_AGENT and .agent.md
    #[arg(long, value_name = "CMD")]
    pub agent: Option<String>,
    /// Phases a task may run in this invocation before a human must look [default: 10]
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Time cap for one phase, e.g. 90s, 45m, 1h [default: 1h]
    #[arg(long, value_name = "DURATION")]
    pub max_phase_time: Option<String>,
    /// Time cap for the whole run [default: 24h]
    #[arg(long, value_name = "DURATION")]
    pub max_total_time: Option<String>,
    /// Stop an agent whose output has not grown for this long [default: 10m]
    #[arg(long, value_name = "DURATION")]
    pub stall_timeout: Option<String>,
    /// Agents running at once, across all sub-tasks and levels [default: 4]. `auto`: as many
    /// as VRAM admits (config.md's `## VRAM Configuration`: `Model weights` and `KV bytes per
    /// token`): a sub-task starts while the weights plus the running sub-tasks' needs fit in
    /// the GPU's VRAM less headroom (one per CPU without those figures)
    #[arg(long, short = 'j', value_name = "N|auto", value_parser = parse_jobs)]
    pub jobs: Option<String>,
    /// Isolation: `worktree` (a git worktree and branch per task), `none`, or `auto`
    #[arg(long, value_name = "MODE", value_parser = ["auto", "worktree", "none"])]
    pub isolation: Option<String>,
    /// Sandbox: `bwrap` (every agent in a bubblewrap sandbox: it writes only its working
    /// folder, its task folder and its CLI's state, sees a scratch home, reaches only its model)
    /// or `none`
    #[arg(long, value_name = "MODE", value_parser = ["none", "bwrap"])]
    pub sandbox: Option<String>,
    /// Where each phase's agent runs: `local` (a child process, the default), `tmux` (a
    /// window of the project's tmux session, see `attach`), or `slurm` (one batch job per phase)
    #[arg(long, value_name = "EXECUTOR", value_parser = ["local", "tmux", "slurm"])]
    pub executor: Option<String>,
    /// Emit one JSON event per line on stdout (for CI)
    #[arg(long)]
    pub json: bool,
    /// No progress output; the final lines and errors still print
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `continue`: the run flags of `orchestrate`, without a description (and without `--task`
/// or `--manual`, which `orchestrate` has).
#[derive(Debug, Args, Default)]
pub struct ContinueArgs {
    /// Not accepted: only here to answer `continue "…"` with a pointer to `orchestrate`
    #[arg(hide = true)]
    pub description: Option<String>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// `--jobs`: a positive count or `auto`.
fn parse_jobs(text: &str) -> Result<String, String> {
    match text.trim() {
        "auto" => Ok("auto".into()),
        t => match t.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n.to_string()),
            _ => Err(format!("expected a positive number or `auto`, not {t:?}")),
        },
    }
}
