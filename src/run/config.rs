//! The run's configuration, resolved once before anything runs.
//!
//! `orchestrate` loads the settings (files, environment, flags: each value keeps its origin,
//! which `automaton config` prints), then [`RunConfig::resolve`] turns every knob the run
//! layer needs into a typed field. After that, the code that drives tasks reads this struct
//! and never the settings: a knob cannot be read in two places with two defaults, and what a
//! run does is decided by values that can all be seen in one place.
//!
//! This is the only file under `src/run/` that reads settings keys.

use super::Limits;
use crate::plan::decide::Budget;
use crate::plan::waves::Barrier;
use crate::settings::{Key, Settings};
use crate::state::PhaseConfig;
use std::time::Duration;

/// `- **Executor**`: where each phase's agent runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutorKind {
    Local,
    Tmux,
    Slurm,
}

impl ExecutorKind {
    fn from_word(word: Option<&str>) -> Self {
        match word {
            Some("tmux") => ExecutorKind::Tmux,
            Some("slurm") => ExecutorKind::Slurm,
            _ => ExecutorKind::Local,
        }
    }
}

/// `- **Isolation**`: whether each task gets its own git worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IsolationChoice {
    /// A worktree when the project is inside a git repository with a commit, else none.
    Auto,
    Worktree,
    None,
}

impl IsolationChoice {
    fn from_word(word: Option<&str>) -> Self {
        match word {
            Some("worktree") => IsolationChoice::Worktree,
            Some("none") => IsolationChoice::None,
            _ => IsolationChoice::Auto,
        }
    }
}

/// The figures of VRAM admission (`## VRAM Configuration`): with both the weights and the
/// KV bytes per token of a local model, and a known GPU size, sub-tasks start only while
/// their needs fit ([`super::vram::Admission`]).
#[derive(Debug, Clone, PartialEq)]
pub struct VramFigures {
    /// `- **Model weights**`, as written (`4 GB`).
    pub weights: Option<String>,
    /// `- **KV bytes per token**`; 0 when unset or unreadable (admission is then off).
    pub kv_bytes_per_token: u64,
    /// `- **Headroom**`: the share of the GPU kept free.
    pub headroom: f64,
}

impl VramFigures {
    /// The figures the settings give (also for `status` and `detect-vram`, which show them).
    pub fn from_settings(settings: &Settings) -> Self {
        VramFigures {
            weights: settings.text(Key::ModelWeights).map(str::to_string),
            kv_bytes_per_token: settings
                .text(Key::KvBytesPerToken)
                .and_then(|t| t.trim().replace('_', "").parse().ok())
                .unwrap_or(0),
            headroom: settings.ratio(Key::Headroom),
        }
    }
}

/// `- **Notify command**` and the time it may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyConfig {
    pub command: Option<String>,
    pub timeout: Duration,
}

/// Every knob the run layer reads, resolved from the settings once.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// Which optional phases run (`## Phases`).
    pub phases: PhaseConfig,
    /// Caps, `Jobs` and the grace periods (`## Limits`, `AUTOMATON_CONTRACT_GRACE`,
    /// `AUTOMATON_KILL_GRACE`). `--jobs auto` is resolved later, once VRAM is detected.
    pub limits: Limits,
    /// `- **Retries**`: more attempts a failed phase gets in the same run.
    pub retries: u32,
    /// `- **Rework**`: rounds back to implement with the findings of a failed review or check.
    pub rework: u32,
    /// `- **Retry backoff**`: the wait before the first retry (doubled for each next one).
    pub retry_backoff: Duration,
    /// `- **Budget per task**` and `- **Budget per run**`.
    pub budget_per_task: Budget,
    pub budget_per_run: Budget,
    /// `- **Verify command**`: run before a PASS verdict is accepted.
    pub verify_command: Option<String>,
    /// `- **Setup command**`: run once in each new worktree.
    pub setup_command: Option<String>,
    /// `- **Approve before**`: the gates that wait for `automaton approve`.
    pub approve_before: Vec<crate::plan::gate::Gate>,
    pub wave_barrier: Barrier,
    pub executor: ExecutorKind,
    /// `- **Slurm options**` and `- **Slurm GRES**` (the slurm executor only).
    pub slurm_options: Option<String>,
    pub slurm_gres: Option<String>,
    /// The tmux executor's socket (`AUTOMATON_TMUX_SOCKET`); none: the project's own.
    pub tmux_socket: Option<String>,
    pub isolation: IsolationChoice,
    /// `- **Sandbox**` and its settings; `None` for `Sandbox: none`.
    pub sandbox: Option<super::sandbox::Policy>,
    pub vram: VramFigures,
    pub notify: NotifyConfig,
}

impl RunConfig {
    /// Read every knob of a run from `settings` (flags already applied to them). The values
    /// were checked when the settings were loaded, so this cannot fail.
    pub fn resolve(settings: &Settings) -> Self {
        let text = |key: Key| settings.text(key).map(str::to_string);
        RunConfig {
            phases: crate::report::phase_config(settings),
            limits: Limits {
                iterations: settings.count(Key::MaxIterations),
                phase: settings.duration(Key::MaxPhaseTime),
                total: settings.duration(Key::MaxTotalTime),
                stall: settings.duration(Key::StallTimeout),
                jobs: settings.count(Key::Jobs).clamp(1, 256) as usize,
                contract_grace: settings.duration(Key::ContractGrace),
                kill_grace: settings.duration(Key::KillGrace),
            },
            retries: u32::try_from(settings.count(Key::Retries)).unwrap_or(u32::MAX),
            rework: u32::try_from(settings.count(Key::Rework)).unwrap_or(u32::MAX),
            retry_backoff: settings.duration(Key::RetryBackoff),
            budget_per_task: settings.budget(Key::BudgetPerTask),
            budget_per_run: settings.budget(Key::BudgetPerRun),
            verify_command: text(Key::VerifyCommand),
            setup_command: text(Key::SetupCommand),
            approve_before: crate::report::approval_gates(settings),
            wave_barrier: Barrier::parse(settings.text(Key::WaveBarrier)),
            executor: ExecutorKind::from_word(settings.text(Key::Executor)),
            slurm_options: text(Key::SlurmOptions),
            slurm_gres: text(Key::SlurmGres),
            tmux_socket: text(Key::TmuxSocket),
            isolation: IsolationChoice::from_word(settings.text(Key::Isolation)),
            sandbox: super::sandbox::Policy::resolve(settings),
            vram: VramFigures::from_settings(settings),
            notify: NotifyConfig {
                command: text(Key::NotifyCommand),
                timeout: settings.duration(Key::NotifyTimeout),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Origin;

    fn settings(config: &str, agent: &str) -> (tempfile::TempDir, Settings) {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join(".automaton")).unwrap();
        std::fs::write(project.path().join(".automaton/config.md"), config).unwrap();
        std::fs::write(project.path().join(".automaton/.agent.md"), agent).unwrap();
        let s = Settings::load_with(project.path(), None, &|_| None).unwrap();
        (project, s)
    }

    #[test]
    fn the_defaults_resolve_to_the_documented_values() {
        let (_p, s) = settings("", "");
        let c = RunConfig::resolve(&s);
        assert_eq!(c.limits.iterations, 10);
        assert_eq!(c.limits.phase, Duration::from_secs(3600));
        assert_eq!(c.limits.total, Duration::from_secs(24 * 3600));
        assert_eq!(c.limits.stall, Duration::from_secs(600));
        assert_eq!(c.limits.jobs, 4);
        assert_eq!(c.limits.contract_grace, Duration::from_secs(10));
        assert_eq!(c.limits.kill_grace, Duration::from_secs(5));
        assert_eq!(c.retries, 2);
        assert_eq!(c.retry_backoff, Duration::from_secs(10));
        assert!(!c.budget_per_task.is_set() && !c.budget_per_run.is_set());
        assert_eq!(c.verify_command, None);
        assert_eq!(c.setup_command, None);
        assert!(c.approve_before.is_empty());
        assert_eq!(c.wave_barrier, Barrier::Strict);
        assert_eq!(c.executor, ExecutorKind::Local);
        assert_eq!(c.slurm_gres.as_deref(), Some("vram"));
        assert_eq!(c.isolation, IsolationChoice::Auto);
        assert_eq!(c.vram.weights, None);
        assert_eq!(c.vram.kv_bytes_per_token, 0);
        assert_eq!(c.notify.command, None);
        assert_eq!(c.notify.timeout, Duration::from_secs(10));
    }

    #[test]
    fn every_knob_comes_from_its_setting() {
        let (_p, mut s) = settings(
            "## Limits\n- **Jobs**: 999\n- **Retries**: 0\n- **Retry backoff**: 0\n\
             - **Budget per run**: $5\n\
             ## Waves\n- **Wave barrier**: Dependencies\n\
             ## VRAM Configuration\n- **Model weights**: 4 GB\n- **KV bytes per token**: 131_072\n",
            "## Agent\n- **Setup command**: npm ci\n- **Verify command**: cargo test\n\
             - **Approve before**: design, implement\n- **Executor**: slurm\n\
             - **Isolation**: none\n- **Notify command**: ./n.sh\n",
        );
        s.set(Key::KillGrace, "300ms", Origin::Env("AUTOMATON_KILL_GRACE"))
            .unwrap();
        let c = RunConfig::resolve(&s);
        assert_eq!(c.limits.jobs, 256, "capped");
        assert_eq!(c.limits.kill_grace, Duration::from_millis(300));
        assert_eq!(c.retries, 0);
        assert_eq!(c.retry_backoff, Duration::ZERO);
        assert_eq!(c.budget_per_run.usd, Some(5.0));
        assert_eq!(c.wave_barrier, Barrier::Dependencies);
        assert_eq!(c.vram.weights.as_deref(), Some("4 GB"));
        assert_eq!(c.vram.kv_bytes_per_token, 131_072);
        assert_eq!(c.setup_command.as_deref(), Some("npm ci"));
        assert_eq!(c.verify_command.as_deref(), Some("cargo test"));
        assert_eq!(
            c.approve_before,
            vec![
                crate::plan::gate::Gate::Phase(crate::state::Phase::Design),
                crate::plan::gate::Gate::Phase(crate::state::Phase::Implement)
            ]
        );
        assert_eq!(c.executor, ExecutorKind::Slurm);
        assert_eq!(c.isolation, IsolationChoice::None);
        assert_eq!(c.notify.command.as_deref(), Some("./n.sh"));
    }
}
