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

/// The folders of one phase's sandbox.
pub struct Mounts<'a> {
    pub project: &'a Path,
    /// Where the agent runs: its worktree, or the project root.
    pub cwd: &'a Path,
    pub task_dir: &'a Path,
    /// The real home folder (`$HOME`), hidden behind a scratch one.
    pub home: Option<&'a Path>,
    /// This binary, bound in to be the sandbox's first program.
    pub exe: &'a Path,
    /// `PATH`, whose entries inside the home stay visible (read-only).
    pub path: Option<&'a str>,
}

/// The bwrap command line that runs `command` in the sandbox (words, unquoted). `egress`: the
/// bridge of `Network: model`.
pub fn bwrap_words(
    policy: &Policy,
    adapter: &dyn Adapter,
    m: &Mounts<'_>,
    keep: &str,
    egress: Option<&Egress>,
    command: &str,
) -> Vec<String> {
    let mut w: Vec<String> = [
        "bwrap",
        "--die-with-parent",
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/run",
    ]
    .map(str::to_string)
    .to_vec();
    let home = m.home.filter(|h| h.parent().is_some());
    if let Some(home) = home {
        // Mounted over the real home before anything inside it is bound back.
        w.extend(["--tmpfs".to_string(), home.display().to_string()]);
    }
    let hidden: Vec<&Path> = home.into_iter().chain([Path::new("/tmp")]).collect();
    for dir in path_installs(m.path, &hidden) {
        bind(&mut w, "--ro-bind-try", &dir);
    }
    for file in agent_files(command, &hidden) {
        bind(&mut w, "--ro-bind-try", &file);
    }
    for p in &policy.readable {
        bind(&mut w, "--ro-bind-try", p);
    }
    if let Some(home) = home {
        for rel in adapter.state_paths() {
            bind(&mut w, "--bind-try", &home.join(rel));
        }
    }
    for dir in adapter.state_env().iter().filter_map(std::env::var_os) {
        bind(&mut w, "--bind-try", Path::new(&dir));
    }
    // The project read-only (it may be inside the home), then what the agent may write.
    bind(&mut w, "--ro-bind", m.project);
    bind(&mut w, "--bind", m.cwd);
    bind(&mut w, "--bind", m.task_dir);
    for p in &policy.writable {
        bind(&mut w, "--bind-try", p);
    }
    if policy.network == Network::Open {
        // The name server may be named through /run (systemd-resolved's stub file).
        if let Ok(target) = std::fs::canonicalize("/etc/resolv.conf")
            && target.starts_with("/run")
        {
            bind(&mut w, "--ro-bind-try", &target);
        }
    }
    let (forwards, proxy) = match egress {
        Some(e) => {
            w.extend(
                [
                    "--bind",
                    &e.dir().display().to_string(),
                    crate::process::sandbox_init::NET_DIR,
                ]
                .map(str::to_string),
            );
            (e.forwarded_ports(), e.proxy_port())
        }
        None => (Vec::new(), None),
    };
    if policy.network != Network::Open {
        w.push("--unshare-net".into());
    }
    for (name, value) in adapter.sandbox_vars() {
        w.extend(["--setenv", name, value].map(str::to_string));
    }
    let inside_exe = "/run/automaton/automaton";
    w.extend(
        [
            "--ro-bind",
            &m.exe.display().to_string(),
            inside_exe,
            "--chdir",
            &m.cwd.display().to_string(),
            "--",
            inside_exe,
            crate::process::sandbox_init::SANDBOX_ARG,
            keep,
        ]
        .map(str::to_string),
    );
    let ports = |ports: &[u16]| match ports {
        [] => "-".to_string(),
        _ => ports
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(","),
    };
    w.push(ports(&forwards));
    w.push(ports(&proxy.into_iter().collect::<Vec<_>>()));
    w.push(command.to_string());
    w
}

/// `flag PATH PATH`: `path` at the same place inside.
fn bind(w: &mut Vec<String>, flag: &str, path: &Path) {
    let shown = path.display().to_string();
    w.extend([flag.to_string(), shown.clone(), shown]);
}

/// The install folders of the PATH entries the sandbox would hide (inside the home or
/// `/tmp`; `~/.local/bin` -> `~/.local` and `node_modules/.bin` -> `node_modules`, so that a
/// link in it to `../lib/…` still resolves):
/// read-only in the sandbox, so a CLI installed there still runs.
fn path_installs(path: Option<&str>, hidden: &[&Path]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = path
        .unwrap_or("")
        .split(':')
        .map(Path::new)
        .filter_map(|d| {
            let root = hidden
                .iter()
                .find(|h| d.is_absolute() && d.starts_with(h) && d != **h)?;
            Some(match (d.file_name(), d.parent()) {
                (Some(name), Some(parent))
                    if (name == "bin" || name == ".bin") && parent != *root =>
                {
                    parent.to_path_buf()
                }
                _ => d.to_path_buf(),
            })
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// The agent command's own files the sandbox would hide: its program and the script of a
/// `sh|bash|python FILE` line (`sh /tmp/agent.sh`), when named by an absolute path inside the
/// home or `/tmp`; read-only in the sandbox, so the command that passed the preflight still runs.
fn agent_files(command: &str, hidden: &[&Path]) -> Vec<PathBuf> {
    [
        super::preflight::program_of(command),
        super::preflight::script_of(command),
    ]
    .into_iter()
    .flatten()
    .map(PathBuf::from)
    .filter(|p| p.is_absolute() && hidden.iter().any(|h| p.starts_with(h)))
    .collect()
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
    probe.args([
        "--die-with-parent",
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]);
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
    use crate::run::adapter::{Claude, CommandAdapter};

    fn policy(network: Network) -> Policy {
        Policy {
            network,
            allow: vec![HostPort::parse("127.0.0.1:8080").unwrap()],
            pass_env: vec!["MY_TOKEN".into()],
            writable: vec![PathBuf::from("/srv/cache")],
            readable: vec![PathBuf::from("/home/u/models")],
            engine: None,
        }
    }

    fn mounts<'a>() -> Mounts<'a> {
        Mounts {
            project: Path::new("/home/u/proj"),
            cwd: Path::new("/home/u/proj/.automaton/worktrees/a"),
            task_dir: Path::new("/home/u/proj/tasks/a"),
            home: Some(Path::new("/home/u")),
            exe: Path::new("/usr/local/bin/automaton"),
            path: Some("/home/u/.local/bin:/usr/bin:/home/u/.cargo/bin:/tmp/tools"),
        }
    }

    fn pos(words: &[String], seq: &[&str]) -> usize {
        words
            .windows(seq.len())
            .position(|w| w.iter().zip(seq).all(|(a, b)| a == b))
            .unwrap_or_else(|| panic!("{seq:?} not in {words:?}"))
    }

    #[test]
    fn the_home_is_hidden_before_what_is_bound_back_and_the_project_before_its_worktree() {
        let w = bwrap_words(
            &policy(Network::None),
            &Claude,
            &mounts(),
            "PATH",
            None,
            "claude -p",
        );
        let home = pos(&w, &["--tmpfs", "/home/u"]);
        let state = pos(&w, &["--bind-try", "/home/u/.claude", "/home/u/.claude"]);
        let install = pos(&w, &["--ro-bind-try", "/home/u/.local", "/home/u/.local"]);
        pos(&w, &["--ro-bind-try", "/home/u/.cargo", "/home/u/.cargo"]);
        pos(&w, &["--ro-bind-try", "/tmp/tools", "/tmp/tools"]);
        pos(&w, &["--ro-bind-try", "/home/u/models", "/home/u/models"]);
        let project = pos(&w, &["--ro-bind", "/home/u/proj", "/home/u/proj"]);
        let worktree = pos(&w, &["--bind", "/home/u/proj/.automaton/worktrees/a"]);
        pos(
            &w,
            &["--bind", "/home/u/proj/tasks/a", "/home/u/proj/tasks/a"],
        );
        pos(&w, &["--bind-try", "/srv/cache", "/srv/cache"]);
        assert!(home < state && home < install && state < project && project < worktree);
        assert!(w.contains(&"--unshare-net".to_string()));
        // The agent's line is the last word, after the launcher's keep list and ports.
        assert_eq!(
            &w[w.len() - 5..],
            ["__sandbox-init", "PATH", "-", "-", "claude -p"]
        );
    }

    #[test]
    fn the_agent_commands_script_under_tmp_or_the_home_stays_readable() {
        let words = |command| {
            bwrap_words(
                &policy(Network::None),
                &CommandAdapter,
                &mounts(),
                "",
                None,
                command,
            )
        };
        let w = words("sh /tmp/agent.sh --fast");
        pos(&w, &["--ro-bind-try", "/tmp/agent.sh", "/tmp/agent.sh"]);
        let w = words("/home/u/bin/my-agent run");
        pos(
            &w,
            &[
                "--ro-bind-try",
                "/home/u/bin/my-agent",
                "/home/u/bin/my-agent",
            ],
        );
        // Files the sandbox shows anyway are not bound again.
        let w = words("sh /opt/agents/a.sh");
        assert!(!w.contains(&"/opt/agents/a.sh".to_string()), "{w:?}");
    }

    #[test]
    fn an_open_network_is_shared_and_the_keep_list_holds_names_only() {
        let w = bwrap_words(
            &policy(Network::Open),
            &CommandAdapter,
            &mounts(),
            "",
            None,
            "x",
        );
        assert!(!w.contains(&"--unshare-net".to_string()));
        let env = [("AUTOMATON_TASK".to_string(), "tasks/a".to_string())];
        let keep = keep_list(&policy(Network::None), &Claude, &env);
        assert!(
            keep.contains("ANTHROPIC_*") && keep.contains("MY_TOKEN"),
            "{keep}"
        );
        assert!(
            keep.contains("AUTOMATON_TASK") && !keep.contains("tasks/a"),
            "{keep}"
        );
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
