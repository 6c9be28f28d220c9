//! `automaton init`: write a commented `.automaton/.agent.md` and `.automaton/config.md` for
//! one agent CLI, never replacing a file that exists, add automaton's ignore rules to the
//! project's `.gitignore`, and say what to run next.

use super::{out, project};
use crate::cli::{InitAgent, InitArgs};
use crate::exit;
use crate::settings::{KEYS, SettingsFile};
use std::path::{Path, PathBuf};

/// The scripted demo agent, written beside the settings for `--agent command`.
const DEMO_AGENT: &str = include_str!("../../examples/agents/demo-agent.sh");
const DEMO_AGENT_REL: &str = ".automaton/demo-agent.sh";

/// The CLIs `init` looks for on PATH, in order of preference.
const DETECTED: [(InitAgent, &str); 5] = [
    (InitAgent::Claude, "claude"),
    (InitAgent::Codex, "codex"),
    (InitAgent::Aider, "aider"),
    (InitAgent::Gemini, "gemini"),
    (InitAgent::Opencode, "opencode"),
];

fn word(agent: InitAgent) -> &'static str {
    match agent {
        InitAgent::Claude => "claude",
        InitAgent::Codex => "codex",
        InitAgent::Aider => "aider",
        InitAgent::Gemini => "gemini",
        InitAgent::Opencode => "opencode",
        InitAgent::Command => "command",
    }
}

pub fn init_command(flag: Option<&Path>, args: &InitArgs) -> super::Result<u8> {
    let cwd = std::env::current_dir()?;
    let target = match flag {
        Some(dir) => std::path::absolute(dir)?,
        None => cwd.clone(),
    };
    if let Some(task) = project::inside_task_folder(&target) {
        return Err(super::Error::NoProjectHere(format!(
            "{} is inside the task folder {}: run `automaton init` in the project root",
            target.display(),
            task.display()
        )));
    }
    let (agent, detected) = match args.agent {
        Some(a) => (a, None),
        None => DETECTED
            .iter()
            .find_map(|(a, bin)| find_on_path(bin).map(|p| (*a, Some(p))))
            .unwrap_or((InitAgent::Command, None)),
    };
    let mut files: Vec<(&str, String)> = vec![
        (".automaton/.agent.md", agent_md(agent)),
        (".automaton/config.md", config_md()),
    ];
    if agent == InitAgent::Command {
        files.push((DEMO_AGENT_REL, DEMO_AGENT.to_string()));
    }
    let (mut written, mut kept) = (Vec::new(), Vec::new());
    let ignore = write_ignore_rules(&target)?;
    for (rel, text) in &files {
        if crate::fsx::create_atomic(&target.join(rel), text.as_bytes()).map_err(|e| {
            super::Error::Input(format!("cannot write {}: {e}", target.join(rel).display()))
        })? {
            written.push(*rel);
        } else {
            kept.push(*rel);
        }
    }
    let prefix = if target == cwd {
        "automaton".to_string()
    } else {
        format!(
            "automaton -C {}",
            crate::report::shell_quote(&target.display().to_string())
        )
    };
    let next = next_commands(agent, &prefix);
    let parent_project = target
        .parent()
        .and_then(|p| project::discover(p, crate::settings::home_dir().as_deref()));
    if args.json {
        let doc = serde_json::json!({
            "project": target.display().to_string(),
            "agent": word(agent),
            "detected": detected.as_ref().map(|p: &PathBuf| p.display().to_string()),
            "written": written,
            "kept": kept,
            "ignore_rules": { "file": GITIGNORE, "action": ignore.word() },
            "next": next,
        });
        out::println(serde_json::to_string_pretty(&doc)?)?;
        return Ok(exit::OK);
    }
    let how = match (&detected, args.agent) {
        (Some(p), _) => format!(" (found {} on PATH)", p.display()),
        (None, Some(_)) => String::new(),
        (None, None) => {
            " (none of claude, codex, aider, gemini, opencode is on PATH; set the agent command in \
             .automaton/.agent.md)"
                .to_string()
        }
    };
    out::println(format_args!("automaton init: agent {}{how}", word(agent)))?;
    for rel in &written {
        out::println(format_args!("  wrote {rel}"))?;
    }
    for rel in &kept {
        out::println(format_args!("  kept  {rel} (it exists; not overwritten)"))?;
    }
    out::println(format_args!("  {}", ignore.line()))?;
    out::println(
        "\nIn git: commit .gitignore, .automaton/ (the settings) and tasks/ (the tasks' record).\n\
         The ignore rules (the lock, caches, worktrees, each task's logs and run state) are in\n\
         .gitignore, not .git/info/exclude, so that every clone and CI runner ignores the same files.",
    )?;
    if let Some(parent) = parent_project {
        eprintln!(
            "note: {} is a project already; {} is now one of its own",
            parent.display(),
            target.display()
        );
    }
    out::println("\nNext:")?;
    for cmd in &next {
        out::println(format_args!("  {cmd}"))?;
    }
    Ok(exit::OK)
}

/// The project's ignore file. `.gitignore` rather than `.git/info/exclude`: the rules travel
/// with the repository to every clone and CI runner, they work in a sub-folder of a monorepo
/// and before `git init`, and a person sees them.
const GITIGNORE: &str = ".gitignore";

/// The first line of automaton's block in `.gitignore`: a file that holds it is left alone.
const IGNORE_MARK: &str = "# automaton: files it writes that are not the project's record";

/// What automaton writes that does not belong in git: the lock, its caches and worktrees, and
/// of each task folder (at any depth, in both roots) what is derived from the artifacts or
/// belongs to one machine's runs. What stays tracked: `.automaton/`'s settings, and each task's
/// `TASK.md`, artifacts, `.origin`, `.state.approvals`, `.state.frozen`, `.state.inputs`,
/// `PARENT_SPEC.md`, `VRAM_CONFIG.md` and `subtasks/`.
fn ignore_rules() -> String {
    use crate::store::{isolation, task_files};
    let mut s = format!(
        "{IGNORE_MARK}\n\
         # (the lock, caches, worktrees, and of each task its logs and run state;\n\
         # `automaton help files` says why)\n"
    );
    let worktrees = format!("{}/", crate::run::isolation::WORKTREES_DIR);
    for rel in [
        ".automaton/lock",
        crate::store::vram_cache::CACHE_REL,
        ".automaton/.agent_model.json",
        crate::task::index::INDEX_FILE,
        &worktrees,
    ] {
        s.push_str(&format!("/{rel}\n"));
    }
    for root in crate::names::ROOTS {
        for rel in [
            "logs/",
            task_files::STATE_FILE,
            task_files::STOP_FILE,
            task_files::INCOMPLETE_FILE,
            isolation::ISOLATION_FILE,
        ] {
            s.push_str(&format!("/{root}/**/{rel}\n"));
        }
    }
    s.push_str(&format!(
        "{}*\n{}*\n",
        crate::fsx::TEMP_PREFIX,
        crate::fsx::OLD_SPARE_PREFIX
    ));
    s
}

/// What `init` did to the ignore file.
#[derive(Debug, Clone, Copy)]
enum IgnoreRules {
    Wrote,
    Added,
    Kept,
}

impl IgnoreRules {
    fn word(self) -> &'static str {
        match self {
            IgnoreRules::Wrote => "wrote",
            IgnoreRules::Added => "added",
            IgnoreRules::Kept => "kept",
        }
    }

    fn line(self) -> String {
        match self {
            IgnoreRules::Wrote => format!("wrote {GITIGNORE} (automaton's ignore rules)"),
            IgnoreRules::Added => format!("added automaton's ignore rules to {GITIGNORE}"),
            IgnoreRules::Kept => format!("kept  {GITIGNORE} (it has automaton's ignore rules)"),
        }
    }
}

/// Add automaton's block to `<target>/.gitignore` unless it holds it already (the file is
/// otherwise kept as it is, the block appended).
fn write_ignore_rules(target: &Path) -> super::Result<IgnoreRules> {
    let path = target.join(GITIGNORE);
    let cannot =
        |e: std::io::Error| super::Error::Input(format!("cannot write {}: {e}", path.display()));
    if crate::fsx::create_atomic(&path, ignore_rules().as_bytes()).map_err(cannot)? {
        return Ok(IgnoreRules::Wrote);
    }
    let text = crate::fsx::read_to_string(&path).map_err(cannot)?;
    if text.lines().any(|l| l.trim() == IGNORE_MARK) {
        return Ok(IgnoreRules::Kept);
    }
    let mut new = text;
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    if !new.is_empty() {
        new.push('\n');
    }
    new.push_str(&ignore_rules());
    // Through a symbolic link to the file it names, which stays a link.
    let real = std::fs::canonicalize(&path).map_err(cannot)?;
    crate::fsx::write_atomic(&real, new.as_bytes()).map_err(cannot)?;
    Ok(IgnoreRules::Added)
}

fn next_commands(agent: InitAgent, prefix: &str) -> Vec<String> {
    let first = if agent == InitAgent::Command {
        // Through $AUTOMATON_PROJECT: with isolation the agent runs in a worktree, where the
        // untracked .automaton/ folder is not.
        format!(
            "{prefix} orchestrate --agent 'sh \"$AUTOMATON_PROJECT/{DEMO_AGENT_REL}\"' \"add a greeting\""
        )
    } else {
        format!("{prefix} orchestrate \"describe the first task\"")
    };
    vec![first, format!("{prefix} status")]
}

/// An executable called `name` in a folder of PATH.
fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// A commented example line: the parser reads no bullet that does not start the line, and
/// the help after ` # ` stays a comment when the `<!-- ` is removed.
fn example(key: &str, value: &str, help: &str) -> String {
    format!("<!-- - **{key}**: {value}  # {help} -->\n")
}

fn key_help(key: &str) -> &'static str {
    KEYS.iter().find(|k| k.key == key).map_or("", |k| k.help)
}

fn agent_md(agent: InitAgent) -> String {
    let mut s = String::from(
        "# Agent settings for automaton\n\n\
         How automaton runs each phase of a task. A setting is a `- **Key**: value` bullet under\n\
         `## Agent`; other lines are notes. A line inside `<!-- -->` is an example that is not\n\
         read: delete the `<!-- ` before it to use it. `automaton config` lists every setting in\n\
         effect and where it came from; `automaton help settings` says what each one means.\n\n",
    );
    let (kind, command, note): (&str, Option<&str>, &str) = match agent {
        InitAgent::Claude => (
            "claude",
            None,
            "Claude Code (`claude -p`, print mode). Needs ANTHROPIC_API_KEY or a Claude login.\n\
             The default command line lets it edit files; allow Bash (e.g. with `Agent flags`)\n\
             so the implement phase can run the tests.\n",
        ),
        InitAgent::Codex => (
            "codex",
            None,
            "Codex CLI (`codex exec`). Needs OPENAI_API_KEY or `codex login`.\n",
        ),
        InitAgent::Aider => (
            "aider",
            None,
            "aider, one message per phase. Needs your model provider's key.\n",
        ),
        InitAgent::Gemini => (
            "gemini",
            None,
            "Gemini CLI, headless (`gemini -p`, stream-json). Needs GEMINI_API_KEY or a Google\n\
             login. The default command line lets it edit files (`--approval-mode auto_edit`);\n\
             for shell commands too, use `--approval-mode yolo` in `Agent command`, in a sandbox\n\
             or a folder you can throw away.\n",
        ),
        InitAgent::Opencode => (
            "opencode",
            None,
            "opencode (`opencode run --format json`). Uses the providers of its own config\n\
             (opencode.json, `opencode auth login`); `Model` is `provider/model`.\n",
        ),
        InitAgent::Command => (
            "command",
            None,
            "Any shell command that runs one phase: it gets the prompt on stdin and\n\
             AUTOMATON_PHASE, AUTOMATON_ARTIFACT, AUTOMATON_PROMPT_FILE in its environment, and\n\
             must write the artifact. Set `Agent command` below. To watch a whole task go\n\
             through first, the scripted demo agent (no API key, no network; it writes\n\
             greeting.sh) is in .automaton/demo-agent.sh: use the commented line below, or run\n\
             automaton orchestrate --agent 'sh \"$AUTOMATON_PROJECT/.automaton/demo-agent.sh\"' \"add a greeting\"\n",
        ),
    };
    s.push_str(note);
    s.push_str("\n## Agent\n");
    s.push_str(&format!("- **Agent**: {kind}\n"));
    match (agent, command) {
        (_, Some(cmd)) => s.push_str(&format!("- **Agent command**: {cmd}\n")),
        (InitAgent::Command, None) => {
            s.push_str(&example(
                "Agent command",
                "sh \"$AUTOMATON_PROJECT/.automaton/demo-agent.sh\"",
                "the demo agent; put your own command here",
            ));
        }
        _ => s.push_str(&example("Agent command", "...", key_help("Agent command"))),
    }
    for spec in KEYS
        .iter()
        .filter(|k| k.file == SettingsFile::AgentMd && !["Agent", "Agent command"].contains(&k.key))
    {
        let value = match spec.key {
            "Model" if agent == InitAgent::Claude => "sonnet",
            "Agent flags" if agent == InitAgent::Claude => "--max-turns 40",
            "Verify command" => "cargo test",
            _ if spec.default.is_empty() => "...",
            _ => spec.default,
        };
        s.push_str(&example(spec.key, value, spec.help));
    }
    s
}

fn config_md() -> String {
    let mut s = String::from(
        "# automaton configuration\n\n\
         Phases, limits and the context budget. Each line inside `<!-- -->` shows a built-in\n\
         default and is not read: delete the `<!-- ` before it and change the value to\n\
         override it for this project (~/.automaton/config.md does the same for all projects).\n\
         `automaton config` lists every setting in effect and where it came from.\n",
    );
    let mut section = "";
    for spec in KEYS.iter().filter(|k| k.file == SettingsFile::ConfigMd) {
        if spec.section != section {
            section = spec.section;
            s.push_str(&format!("\n## {section}\n"));
        }
        s.push_str(&example(spec.key, spec.default, spec.help));
    }
    s
}
