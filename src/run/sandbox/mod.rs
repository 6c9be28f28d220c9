//! `- **Sandbox**: bwrap`: every phase's agent, and everything it starts, runs inside
//! bubblewrap, in new user, mount, PID, IPC and UTS namespaces (and a network namespace unless
//! `Network: open`):
//!
//! - the file system is read-only, except the agent's working folder (its worktree, or the
//!   project root without isolation), its task folder, a private `/tmp`, its CLI's own state
//!   folders ([`Adapter::state_paths`]) and `Sandbox writable`;
//! - the home folder is an empty scratch one holding only those state folders, the install
//!   folders of PATH entries inside it (read-only) and `Sandbox readable`; `/run` (where the
//!   sockets of the machine's daemons live) is empty too;
//! - `/proc` is the sandbox's own: the agent sees, signals and traces nothing outside it;
//! - the environment is an allowlist ([`keep_list`]), applied inside by the sandbox's first
//!   program ([`crate::process::sandbox_init`]), so no secret value stands on a command line;
//! - the network is the model's only ([`super::egress`]), none, or the machine's.
//!
//! The agent's command line is wrapped (`bwrap … -- automaton __sandbox-init … '<line>'`), so
//! the watchdog, caps, logs, pid record and every executor work as without a sandbox; a stop
//! of the agent's process group reaches everything inside, and bubblewrap ends the sandbox with
//! its first process. Verify, setup, notify and integration-gate commands are the user's own
//! and run outside, as before.

use super::adapter::Adapter;
use super::egress::Egress;
use crate::settings::value::HostPort;
use crate::settings::{Key, Settings};
use std::path::{Path, PathBuf};

pub mod bwrap;
use bwrap::{Mounts, bwrap_words};

/// `- **Network**` inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// No network at all (a loopback device of its own).
    None,
    /// Only the model's endpoints and `Network allow`, through automaton's bridge.
    Model,
    /// The machine's network, as without a sandbox.
    Open,
}

/// The sandbox of a run, resolved once from the settings (`None`: `Sandbox: none`).
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub network: Network,
    /// `- **Network allow**`.
    pub allow: Vec<HostPort>,
    /// `- **Pass env**`: names and `PREFIX*` patterns.
    pub pass_env: Vec<String>,
    /// `- **Sandbox writable**` and `- **Sandbox readable**`, `~/` expanded.
    pub writable: Vec<PathBuf>,
    pub readable: Vec<PathBuf>,
    /// The local model server the agent talks to (`Model endpoint`, aider's
    /// `--openai-api-base`, `OLLAMA_HOST`), when one is named.
    pub engine: Option<HostPort>,
}

/// Variables every sandboxed agent gets (names and `PREFIX*`), besides its CLI's own
/// ([`Adapter::sandbox_env`]), `Pass env`, and the `AUTOMATON_*` contract.
const BASE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "AUTOMATON_*",
];

/// Variables that name a model's endpoint (a URL or `host:port`): `Network: model` lets the
/// agent reach what they name.
const ENDPOINT_ENV: &[&str] = &[
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "GOOGLE_GEMINI_BASE_URL",
    "GEMINI_BASE_URL",
    "OLLAMA_HOST",
];

impl Policy {
    pub fn resolve(settings: &Settings) -> Option<Policy> {
        if settings.text(Key::Sandbox) != Some("bwrap") {
            return None;
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let paths = |key: Key| -> Vec<PathBuf> {
            list(settings.text(key))
                .map(|p| match (p.strip_prefix("~/"), &home) {
                    (Some(rest), Some(home)) => home.join(rest),
                    _ => PathBuf::from(p),
                })
                .collect()
        };
        let engine = crate::detect::engine::find_endpoint(
            settings.text(Key::ModelEndpoint),
            settings.text(Key::AgentCommand),
            std::env::var("OLLAMA_HOST").ok().as_deref(),
        )
        .and_then(|e| HostPort::from_url(&e.url, 80));
        Some(Policy {
            network: match settings.text(Key::Network) {
                Some("none") => Network::None,
                Some("open") => Network::Open,
                _ => Network::Model,
            },
            allow: settings.hosts(Key::NetworkAllow),
            pass_env: list(settings.text(Key::PassEnv))
                .map(str::to_string)
                .collect(),
            writable: paths(Key::SandboxWritable),
            readable: paths(Key::SandboxReadable),
            engine,
        })
    }

    /// What `Network: model` lets the agent reach: its CLI's default hosts, the endpoints its
    /// environment names (`env`: a variable's value), the local model server, and
    /// `Network allow`.
    pub fn endpoints(
        &self,
        adapter: &dyn Adapter,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<HostPort> {
        let mut hosts: Vec<HostPort> = adapter
            .model_hosts()
            .iter()
            .filter_map(|h| HostPort::parse(h).ok())
            .chain(ENDPOINT_ENV.iter().filter_map(|name| {
                let default = if *name == "OLLAMA_HOST" { 11434 } else { 443 };
                HostPort::from_url(&env(name)?, default)
            }))
            .chain(self.engine.clone())
            .chain(self.allow.iter().cloned())
            .collect();
        hosts.sort();
        hosts.dedup();
        hosts
    }
}

/// What `config` says a sandboxed agent gets: names only, never a value.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Passes {
    /// The adapter's name (`claude`, `command`, …).
    pub agent: &'static str,
    /// The variables it keeps (names and `PREFIX*`).
    pub env: Vec<String>,
    /// What it may write besides its working folder, its task folder and a private `/tmp`.
    pub writable: Vec<String>,
    /// What it may read of the home and `/tmp` (the rest of the machine is readable anyway).
    pub readable: Vec<String>,
    /// `none`, `model` or `open`.
    pub network: &'static str,
    /// With `Network: model`, the hosts it may reach.
    pub endpoints: Vec<String>,
}

impl Policy {
    /// What passes into the sandbox of `adapter`'s agent (`env`: the environment's values,
    /// read only for the endpoints they name).
    pub fn passes(&self, adapter: &dyn Adapter, env: &dyn Fn(&str) -> Option<String>) -> Passes {
        let shown = |p: &Path| p.display().to_string();
        Passes {
            agent: adapter.name(),
            env: keep_list(self, adapter, &[])
                .split(',')
                .map(str::to_string)
                .collect(),
            writable: adapter
                .state_paths()
                .iter()
                .map(|rel| format!("~/{rel}"))
                .chain(adapter.state_env().iter().map(|v| format!("${v}")))
                .chain(self.writable.iter().map(|p| shown(p)))
                .collect(),
            readable: self.readable.iter().map(|p| shown(p)).collect(),
            network: match self.network {
                Network::None => "none",
                Network::Model => "model",
                Network::Open => "open",
            },
            endpoints: match self.network {
                Network::Model => self
                    .endpoints(adapter, env)
                    .iter()
                    .map(HostPort::to_string)
                    .collect(),
                _ => Vec::new(),
            },
        }
    }
}

fn list(text: Option<&str>) -> impl Iterator<Item = &str> {
    text.unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
}

/// The variables the agent keeps: [`BASE_ENV`], its CLI's, `Pass env`, and every name of
/// automaton's own environment for the phase (`phase_env`).
pub fn keep_list(policy: &Policy, adapter: &dyn Adapter, phase_env: &[(String, String)]) -> String {
    let mut keep: Vec<&str> = BASE_ENV.to_vec();
    keep.extend(adapter.sandbox_env());
    keep.extend(adapter.sandbox_vars().iter().map(|(name, _)| *name));
    keep.extend(policy.pass_env.iter().map(String::as_str));
    keep.extend(phase_env.iter().map(|(k, _)| k.as_str()));
    keep.sort_unstable();
    keep.dedup();
    keep.join(",")
}

/// One phase's sandbox: the wrapped command line, and the bridge while the agent runs.
pub struct PhaseSandbox {
    pub command: String,
    egress: Option<Egress>,
}

impl PhaseSandbox {
    /// Wrap `command` for a phase whose agent gets `phase_env`, and open the bridge of
    /// `Network: model`.
    pub fn start(
        policy: &Policy,
        adapter: &dyn Adapter,
        mounts: &Mounts<'_>,
        phase_env: &[(String, String)],
        command: &str,
    ) -> std::io::Result<PhaseSandbox> {
        let egress = match policy.network {
            Network::Model => {
                let env = |name: &str| std::env::var(name).ok();
                Some(Egress::start(&policy.endpoints(adapter, &env))?)
            }
            Network::None | Network::Open => None,
        };
        let keep = keep_list(policy, adapter, phase_env);
        let words = bwrap_words(policy, adapter, mounts, &keep, egress.as_ref(), command);
        let command = words
            .iter()
            .map(|w| super::adapter::shell_quote(w))
            .collect::<Vec<_>>()
            .join(" ");
        Ok(PhaseSandbox { command, egress })
    }

    /// Close the bridge; the hosts the agent was refused, with how many times each.
    pub fn finish(self) -> Vec<(String, u32)> {
        self.egress.map(Egress::finish).unwrap_or_default()
    }
}

/// Whether bubblewrap is here and can make the sandbox's namespaces: `Err` says what to
/// install or set. Run before any agent, so a run never falls back to no sandbox.
pub fn preflight(policy: &Policy, origin: &str) -> Result<(), String> {
    let mut probe = std::process::Command::new("bwrap");
    probe.args(bwrap::NAMESPACES);
    if policy.network != Network::Open {
        probe.arg("--unshare-net");
    }
    probe.args(["--", "true"]);
    let out = probe
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output();
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "`- **Sandbox**: bwrap` (from {origin}) needs bubblewrap, and `bwrap` is not on \
             PATH: install it (Debian and Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf \
             install bubblewrap`; Arch: `pacman -S bubblewrap`), or set `- **Sandbox**: none`. \
             Nothing ran."
        )),
        Err(e) => Err(format!(
            "`- **Sandbox**: bwrap` (from {origin}): cannot run bwrap: {e}"
        )),
        Ok(o) => Err(format!(
            "`- **Sandbox**: bwrap` (from {origin}): bubblewrap cannot make its namespaces here: \
             {}. User namespaces may be off (sysctl `kernel.unprivileged_userns_clone`, \
             `user.max_user_namespaces`, or AppArmor's \
             `kernel.apparmor_restrict_unprivileged_userns`); inside a container, run it with \
             user namespaces allowed. Or set `- **Sandbox**: none`. Nothing ran.",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::adapter::Claude;

    pub(super) fn policy(network: Network) -> Policy {
        Policy {
            network,
            allow: vec![HostPort::parse("127.0.0.1:8080").unwrap()],
            pass_env: vec!["MY_TOKEN".into()],
            writable: vec![PathBuf::from("/srv/cache")],
            readable: vec![PathBuf::from("/home/u/models")],
            engine: None,
        }
    }

    #[test]
    fn the_model_endpoints_are_the_clis_its_environment_the_engine_and_the_allowed() {
        let mut p = policy(Network::Model);
        p.engine = HostPort::from_url("http://localhost:11434", 80);
        let env = |name: &str| (name == "ANTHROPIC_BASE_URL").then(|| "http://127.0.0.1:9/".into());
        let hosts: Vec<String> = p
            .endpoints(&Claude, &env)
            .iter()
            .map(|h| h.to_string())
            .collect();
        assert_eq!(
            hosts,
            [
                "127.0.0.1:9",
                "127.0.0.1:8080",
                "api.anthropic.com:443",
                "localhost:11434"
            ]
        );
    }
}
