//! The bwrap command line of a phase's agent: the namespaces, then the file system inside
//! (the home hidden, what the agent must read bound back read-only, the project read-only,
//! what it may write), the network, and the sandbox's first program.

use super::{Network, Policy};
use crate::run::adapter::Adapter;
use crate::run::egress::Egress;
use std::path::{Path, PathBuf};

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

/// The namespaces and the read-only machine every sandbox starts from (the network's comes
/// after, by policy). The preflight probes exactly these.
pub(super) const NAMESPACES: [&str; 13] = [
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
];

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
    let mut w: Vec<String> = ["bwrap"]
        .into_iter()
        .chain(NAMESPACES)
        .chain(["--tmpfs", "/tmp", "--tmpfs", "/run"])
        .map(str::to_string)
        .collect();
    bind_files(&mut w, policy, adapter, m, command);
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

/// The file system inside: the home hidden, what the agent must read bound back read-only
/// (the programs on `PATH`, its own script, `Sandbox readable`, the adapter's state), the
/// project read-only, then what it may write (its working folder, the task folder, `Sandbox
/// writable`).
fn bind_files(
    w: &mut Vec<String>,
    policy: &Policy,
    adapter: &dyn Adapter,
    m: &Mounts<'_>,
    command: &str,
) {
    let home = m.home.filter(|h| h.parent().is_some());
    if let Some(home) = home {
        // Mounted over the real home before anything inside it is bound back.
        w.extend(["--tmpfs".to_string(), home.display().to_string()]);
    }
    let hidden: Vec<&Path> = home.into_iter().chain([Path::new("/tmp")]).collect();
    for dir in path_installs(m.path, &hidden) {
        bind(w, "--ro-bind-try", &dir);
    }
    for file in agent_files(command, &hidden) {
        bind(w, "--ro-bind-try", &file);
    }
    for p in &policy.readable {
        bind(w, "--ro-bind-try", p);
    }
    if let Some(home) = home {
        for rel in adapter.state_paths() {
            bind(w, "--bind-try", &home.join(rel));
        }
    }
    for dir in adapter.state_env().iter().filter_map(std::env::var_os) {
        bind(w, "--bind-try", Path::new(&dir));
    }
    // The project read-only (it may be inside the home), then what the agent may write.
    bind(w, "--ro-bind", m.project);
    bind(w, "--bind", m.cwd);
    bind(w, "--bind", m.task_dir);
    for p in &policy.writable {
        bind(w, "--bind-try", p);
    }
    if policy.network == Network::Open {
        // The name server may be named through /run (systemd-resolved's stub file).
        if let Ok(target) = std::fs::canonicalize("/etc/resolv.conf")
            && target.starts_with("/run")
        {
            bind(w, "--ro-bind-try", &target);
        }
    }
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
        crate::run::preflight::program_of(command),
        crate::run::preflight::script_of(command),
    ]
    .into_iter()
    .flatten()
    .map(PathBuf::from)
    .filter(|p| p.is_absolute() && hidden.iter().any(|h| p.starts_with(h)))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::adapter::{Claude, CommandAdapter};
    use crate::run::sandbox::keep_list;
    use crate::run::sandbox::tests::policy;

    fn pos(words: &[String], seq: &[&str]) -> usize {
        words
            .windows(seq.len())
            .position(|w| w.iter().zip(seq).all(|(a, b)| a == b))
            .unwrap_or_else(|| panic!("{seq:?} not in {words:?}"))
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
}
