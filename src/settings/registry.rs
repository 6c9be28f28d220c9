//! The registry of every setting automaton knows: one row per setting gives its typed name
//! ([`Key`]), its stable id, the file and heading it belongs under, its bullet's key, its
//! default, how its text is read ([`Kind`]), the environment variable that overrides it and
//! its one-line help. `automaton config`, `help settings`, the loader and the diagnosis of a
//! misplaced key all read it.

/// The settings files automaton reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingsFile {
    AgentMd,
    ConfigMd,
    /// No file: a knob only the environment sets (`AUTOMATON_KILL_GRACE`, ...).
    Env,
}

impl SettingsFile {
    pub fn name(self) -> &'static str {
        match self {
            SettingsFile::AgentMd => ".agent.md",
            SettingsFile::ConfigMd => "config.md",
            SettingsFile::Env => "environment",
        }
    }
}

/// How a setting's text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Count,
    Duration,
    /// A duration given in seconds (`10`, `0.5`) or with a unit (`500ms`); above 0, below a day.
    Seconds,
    Ratio,
    Tokens,
    Text,
    Choice(&'static [&'static str]),
    /// Phase words separated by commas (kept as text, checked when read).
    Phases,
    /// A whole number, 0 allowed (read with [`Settings::count`]).
    Whole,
    /// Tokens and/or dollars (`2M tokens, $5`; kept as text, checked when read; read with
    /// [`Settings::budget`]).
    Budget,
    /// A duration where 0 means "do not wait" (a retry backoff).
    Pause,
    /// `host[:port]` entries separated by commas (kept as text, checked when read; read with
    /// [`Settings::hosts`]).
    Hosts,
}

/// One known setting.
#[derive(Debug)]
pub struct KeySpec {
    /// The typed name code uses ([`Settings::bool`] and friends take it).
    pub setting: Key,
    /// The stable name in `config --json`.
    pub id: &'static str,
    pub file: SettingsFile,
    /// The heading it belongs under (matched case-insensitively).
    pub section: &'static str,
    /// The bullet's key; for an environment-only knob, the variable's name.
    pub key: &'static str,
    pub default: &'static str,
    pub kind: Kind,
    pub env: Option<&'static str>,
    pub help: &'static str,
}

/// The registry: one row per setting makes both [`Key`] (a typo in a setting's name is a
/// compile error) and [`KEYS`] (file, section, key, default, kind, variable and help), in the
/// same order, so `KEYS[key as usize]` is that key's row.
macro_rules! registry {
    ($($variant:ident => $id:literal, $file:ident, $section:literal, $key:literal, $default:literal, $kind:expr, $env:expr, $help:literal;)*) => {
        /// Every setting automaton knows, by name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Key {
            $($variant,)*
        }

        impl Key {
            /// Every key, in registry order.
            pub const ALL: &'static [Key] = &[$(Key::$variant,)*];
        }

        /// Every setting automaton knows, in the order `automaton config` prints them.
        pub static KEYS: &[KeySpec] = &[$(
            KeySpec {
                setting: Key::$variant,
                id: $id,
                file: SettingsFile::$file,
                section: $section,
                key: $key,
                default: $default,
                kind: $kind,
                env: $env,
                help: $help,
            },
        )*];
    };
}

impl Key {
    /// This key's row of the registry.
    pub fn spec(self) -> &'static KeySpec {
        &KEYS[self as usize]
    }
}

registry! {
    Autopilot => "agent.autopilot",
        AgentMd,
        "Agent",
        "Autopilot",
        "Enabled",
        Kind::Bool,
        None,
        "Enabled: orchestrate runs phases; Disabled: it only reports (manual mode)";
    AgentKind => "agent.kind",
        AgentMd,
        "Agent",
        "Agent",
        "command",
        Kind::Choice(&crate::agent_kind::AgentKind::WORDS),
        None,
        "adapter: command (exit code only) or claude, codex, aider, gemini, opencode (default command line, failure signal, usage)";
    AgentCommand => "agent.command",
        AgentMd,
        "Agent",
        "Agent command",
        "",
        Kind::Text,
        Some("AUTOMATON_AGENT"),
        "shell command that runs one phase (prompt on stdin); replaces the adapter's default command line";
    AgentFlags => "agent.flags",
        AgentMd,
        "Agent",
        "Agent flags",
        "",
        Kind::Text,
        Some("AUTOMATON_AGENT_FLAGS"),
        "extra flags appended to the agent's command line";
    AgentModel => "agent.model",
        AgentMd,
        "Agent",
        "Model",
        "",
        Kind::Text,
        None,
        "model the agent uses: --model on the adapter's default command line, and the context-window lookup";
    VerifyCommand => "agent.verify",
        AgentMd,
        "Agent",
        "Verify command",
        "",
        Kind::Text,
        None,
        "command automaton runs itself before it accepts a PASS verdict, e.g. cargo test";
    Isolation => "agent.isolation",
        AgentMd,
        "Agent",
        "Isolation",
        "auto",
        Kind::Choice(&["auto", "worktree", "none"]),
        None,
        "worktree: a git worktree and branch per task, merged back; none: agents share the project tree; auto: worktree inside a git repository with a commit";
    Sandbox => "agent.sandbox",
        AgentMd,
        "Agent",
        "Sandbox",
        "none",
        Kind::Choice(&["none", "bwrap"]),
        Some("AUTOMATON_SANDBOX"),
        "bwrap: every phase's agent runs in a bubblewrap sandbox (writes only its working folder, its task folder and its CLI's state; a scratch home; its own processes; the network of `Network`); none: with the user's full rights";
    Network => "agent.network",
        AgentMd,
        "Agent",
        "Network",
        "model",
        Kind::Choice(&["none", "model", "open"]),
        None,
        "inside the sandbox: model: only the model's endpoint and `Network allow` (through a proxy automaton runs); none: no network; open: the machine's network";
    NetworkAllow => "agent.network_allow",
        AgentMd,
        "Agent",
        "Network allow",
        "",
        Kind::Hosts,
        None,
        "with `Network: model`, more hosts the agent may reach: host[:port], comma-separated (port 443 when none is given)";
    PassEnv => "agent.pass_env",
        AgentMd,
        "Agent",
        "Pass env",
        "",
        Kind::Text,
        None,
        "inside the sandbox, more environment variables the agent gets (NAME or PREFIX*, comma-separated); nothing else of yours reaches it beyond PATH, HOME, locale, terminal, AUTOMATON_* and the keys its CLI needs";
    SandboxWritable => "agent.sandbox_writable",
        AgentMd,
        "Agent",
        "Sandbox writable",
        "",
        Kind::Text,
        None,
        "more folders the sandboxed agent may write, comma-separated (`~/` is your home)";
    SandboxReadable => "agent.sandbox_readable",
        AgentMd,
        "Agent",
        "Sandbox readable",
        "",
        Kind::Text,
        None,
        "more folders the sandboxed agent may read, comma-separated (`~/` is your home, hidden otherwise; so is /tmp)";
    SetupCommand => "agent.setup",
        AgentMd,
        "Agent",
        "Setup command",
        "",
        Kind::Text,
        None,
        "command run once in each new worktree (isolation: worktree) before its task's first phase, e.g. npm ci";
    ApproveBefore => "agent.approve_before",
        AgentMd,
        "Agent",
        "Approve before",
        "",
        Kind::Phases,
        None,
        "phases that wait for `automaton approve` before they run, and subtasks (the task split) or merge (before `automaton merge`), e.g. design, subtasks, merge";
    NotifyCommand => "agent.notify",
        AgentMd,
        "Agent",
        "Notify command",
        "",
        Kind::Text,
        None,
        "command run when a task waits for approval, needs a human, completes or stops (JSON event on stdin)";
    Executor => "agent.executor",
        AgentMd,
        "Agent",
        "Executor",
        "local",
        Kind::Choice(&["local", "tmux", "slurm"]),
        Some("AUTOMATON_EXECUTOR"),
        "where each phase's agent runs: local (a child process), tmux (a window of the project's tmux session; `automaton attach`), slurm (one batch job per phase)";
    SlurmOptions => "agent.slurm_options",
        AgentMd,
        "Agent",
        "Slurm options",
        "",
        Kind::Text,
        None,
        "extra sbatch options for the slurm executor, e.g. --partition=gpu --time=2:00:00 --account=lab";
    SlurmGres => "agent.slurm_gres",
        AgentMd,
        "Agent",
        "Slurm GRES",
        "vram",
        Kind::Text,
        Some("AUTOMATON_SLURM_GRES"),
        "the consumable GRES a Slurm job requests its estimated VRAM as (--gres=<name>:<n>G); empty: none";
    Decomposition => "phases.decomposition",
        ConfigMd,
        "Phases",
        "Decomposition",
        "No",
        Kind::Bool,
        None,
        "run a decomposition phase after research on top-level tasks";
    Design => "phases.design",
        ConfigMd,
        "Phases",
        "Design",
        "Yes",
        Kind::Bool,
        None,
        "run the design phase";
    TestDesign => "phases.test_design",
        ConfigMd,
        "Phases",
        "Test design",
        "Yes",
        Kind::Bool,
        None,
        "run the test design phase";
    MaxIterations => "limits.max_iterations",
        ConfigMd,
        "Limits",
        "Max iterations",
        "10",
        Kind::Count,
        None,
        "phases one task may run in one orchestrate invocation";
    MaxPhaseTime => "limits.max_phase_time",
        ConfigMd,
        "Limits",
        "Max phase time",
        "1h",
        Kind::Duration,
        None,
        "time cap for one phase";
    MaxTotalTime => "limits.max_total_time",
        ConfigMd,
        "Limits",
        "Max total time",
        "24h",
        Kind::Duration,
        None,
        "time cap for one orchestrate invocation";
    StallTimeout => "limits.stall_timeout",
        ConfigMd,
        "Limits",
        "Stall timeout",
        "10m",
        Kind::Duration,
        None,
        "stop an agent whose output has not grown for this long";
    Retries => "limits.retries",
        ConfigMd,
        "Limits",
        "Retries",
        "2",
        Kind::Whole,
        Some("AUTOMATON_RETRIES"),
        "more attempts a failed phase gets in the same run (agent error, missing or malformed artifact, timeout, stall); 0: none";
    RetryBackoff => "limits.retry_backoff",
        ConfigMd,
        "Limits",
        "Retry backoff",
        "10s",
        Kind::Pause,
        None,
        "wait before the first retry, doubled for each next one (a rate-limit signal always waits, at least 1s)";
    Rework => "limits.rework",
        ConfigMd,
        "Limits",
        "Rework",
        "0",
        Kind::Whole,
        None,
        "rounds a task whose referee said FAIL or NEEDS_REVIEW, or whose verify command failed, goes back to implement with the findings before it stops for a person; 0: none";
    BudgetPerTask => "limits.budget_per_task",
        ConfigMd,
        "Limits",
        "Budget per task",
        "none",
        Kind::Budget,
        None,
        "most a task may spend over all its runs, from its journal: `2M tokens`, `$5` or `2M tokens, $5`";
    BudgetPerRun => "limits.budget_per_run",
        ConfigMd,
        "Limits",
        "Budget per run",
        "none",
        Kind::Budget,
        None,
        "most one orchestrate run may spend, all tasks together: `2M tokens`, `$5` or both";
    Jobs => "limits.jobs",
        ConfigMd,
        "Limits",
        "Jobs",
        "4",
        Kind::Count,
        None,
        "agents running at once, across all sub-tasks and levels";
    WaveBarrier => "waves.barrier",
        ConfigMd,
        "Waves",
        "Wave barrier",
        "strict",
        Kind::Choice(&["strict", "dependencies"]),
        None,
        "strict: no sub-task of wave N+1 starts before every sub-task of wave N is complete or blocked; dependencies: a sub-task starts once its own dependencies end";
    Durability => "storage.durability",
        ConfigMd,
        "Storage",
        "Durability",
        "normal",
        Kind::Choice(&["normal", "full"]),
        Some("AUTOMATON_DURABILITY"),
        "normal: fsync only files that cannot be rebuilt (.origin, .stop, logs/verified, TASK.md); full: fsync every write";
    AllowLinksOut => "storage.allow_links_out",
        ConfigMd,
        "Storage",
        "Allow links out",
        "No",
        Kind::Bool,
        None,
        "Yes: a task folder, tasks/, subtasks/, logs/ or .automaton/ may be a link to a folder outside the project, and automaton writes there; No: such a link is refused with its path";
    AutoDetect => "vram.auto_detect",
        ConfigMd,
        "VRAM Configuration",
        "Auto-detect",
        "Yes",
        Kind::Bool,
        None,
        "No: the manual values below win over the probe";
    TargetContext => "vram.target_context",
        ConfigMd,
        "VRAM Configuration",
        "Target context",
        "auto",
        Kind::Tokens,
        None,
        "recommended context per sub-task";
    Headroom => "vram.headroom",
        ConfigMd,
        "VRAM Configuration",
        "Headroom",
        "25%",
        Kind::Ratio,
        None,
        "share of the target kept free";
    MaxPeak => "vram.max_peak",
        ConfigMd,
        "VRAM Configuration",
        "Max peak context per sub-task",
        "auto",
        Kind::Tokens,
        None,
        "largest context one sub-task may need";
    ModelWeights => "vram.model_weights",
        ConfigMd,
        "VRAM Configuration",
        "Model weights",
        "",
        Kind::Text,
        None,
        "VRAM of a local model's weights, e.g. 4 GB; with KV bytes per token it turns on VRAM admission of parallel sub-tasks";
    KvBytesPerToken => "vram.kv_bytes_per_token",
        ConfigMd,
        "VRAM Configuration",
        "KV bytes per token",
        "",
        Kind::Text,
        None,
        "KV-cache bytes per token of context of the local model; a sub-task needs its Estimated peak context times this";
    ModelName => "model.name",
        ConfigMd,
        "Model Configuration",
        "Model",
        "auto",
        Kind::Text,
        None,
        "model name, or auto to detect it";
    ModelEndpoint => "model.endpoint",
        ConfigMd,
        "Model Configuration",
        "Model endpoint",
        "",
        Kind::Text,
        None,
        "URL of the local engine serving the model (Ollama, llama.cpp, vLLM, LM Studio), asked for the window it serves";
    ContextWindow => "model.context_window",
        ConfigMd,
        "Model Configuration",
        "Override context window",
        "auto",
        Kind::Tokens,
        None,
        "context window, or auto to look it up";
    Home => "env.home",
        Env,
        "Variables",
        "AUTOMATON_HOME",
        "~/.automaton",
        Kind::Text,
        Some("AUTOMATON_HOME"),
        "the global settings folder, read after the project's .automaton/";
    KillGrace => "env.kill_grace",
        Env,
        "Variables",
        "AUTOMATON_KILL_GRACE",
        "5s",
        Kind::Duration,
        Some("AUTOMATON_KILL_GRACE"),
        "time a stopped agent's process group gets between TERM and KILL";
    ContractGrace => "env.contract_grace",
        Env,
        "Variables",
        "AUTOMATON_CONTRACT_GRACE",
        "10s",
        Kind::Duration,
        Some("AUTOMATON_CONTRACT_GRACE"),
        "time an agent gets to exit after it printed CONTRACT_MET";
    WatchPoll => "env.watch_poll",
        Env,
        "Variables",
        "AUTOMATON_WATCH_POLL",
        "",
        Kind::Text,
        Some("AUTOMATON_WATCH_POLL"),
        "a duration (e.g. 2s): `watch` re-reads the project on that timer instead of using file notifications";
    NotifyTimeout => "env.notify_timeout",
        Env,
        "Variables",
        "AUTOMATON_NOTIFY_TIMEOUT",
        "10s",
        Kind::Duration,
        Some("AUTOMATON_NOTIFY_TIMEOUT"),
        "time the notify command may take before its process group is stopped";
    VramScriptTimeout => "env.vram_script_timeout",
        Env,
        "Variables",
        "AUTOMATON_VRAM_SCRIPT_TIMEOUT",
        "10",
        Kind::Seconds,
        Some("AUTOMATON_VRAM_SCRIPT_TIMEOUT"),
        "time scripts/vram_detect.sh may take, in seconds (fractions allowed)";
    TmuxSocket => "env.tmux_socket",
        Env,
        "Variables",
        "AUTOMATON_TMUX_SOCKET",
        "",
        Kind::Text,
        Some("AUTOMATON_TMUX_SOCKET"),
        "the tmux socket name (-L) of the tmux executor; default automaton-<hash of the project path>";
}
