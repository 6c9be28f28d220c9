//! Layered settings: project `.automaton/` beats `$AUTOMATON_HOME` (default `~/.automaton/`),
//! which beats the defaults built into the binary; the environment and flags beat all files.
//! Every effective value remembers where it came from, so `automaton config` can say.

mod builtin;
pub mod markdown;
pub mod value;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use builtin::builtin_template;

/// Where a value or file came from, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layer {
    Builtin,
    Home,
    Project,
    Env,
    Flag,
}

/// The origin of one effective setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Default,
    File {
        path: PathBuf,
        line: usize,
        layer: Layer,
    },
    Env(&'static str),
    Flag(&'static str),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => write!(f, "default"),
            Origin::File { path, line, .. } => write!(f, "{}:{line}", path.display()),
            Origin::Env(name) => write!(f, "env {name}"),
            Origin::Flag(name) => write!(f, "flag {name}"),
        }
    }
}

/// The settings files automaton reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingsFile {
    AgentMd,
    ConfigMd,
}

impl SettingsFile {
    pub fn name(self) -> &'static str {
        match self {
            SettingsFile::AgentMd => ".agent.md",
            SettingsFile::ConfigMd => "config.md",
        }
    }
}

/// How a setting's text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Count,
    Duration,
    Ratio,
    Tokens,
    Text,
    Choice(&'static [&'static str]),
}

/// A parsed setting value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Count(u64),
    Duration(Duration),
    Ratio(f64),
    /// `None` is `auto`.
    Tokens(Option<u64>),
    /// Empty when unset.
    Text(String),
}

/// One known setting.
#[derive(Debug)]
pub struct KeySpec {
    pub id: &'static str,
    pub file: SettingsFile,
    /// The heading it belongs under (matched case-insensitively).
    pub section: &'static str,
    pub key: &'static str,
    pub default: &'static str,
    pub kind: Kind,
    pub env: Option<&'static str>,
    pub help: &'static str,
}

macro_rules! key {
    ($id:literal, $file:ident, $section:literal, $key:literal, $default:literal, $kind:expr, $env:expr, $help:literal) => {
        KeySpec {
            id: $id,
            file: SettingsFile::$file,
            section: $section,
            key: $key,
            default: $default,
            kind: $kind,
            env: $env,
            help: $help,
        }
    };
}

/// Every setting automaton knows, in the order `automaton config` prints them.
pub static KEYS: &[KeySpec] = &[
    key!(
        "agent.autopilot",
        AgentMd,
        "Agent",
        "Autopilot",
        "Enabled",
        Kind::Bool,
        None,
        "Enabled: orchestrate runs phases; Disabled: it only reports (manual mode)"
    ),
    key!(
        "agent.kind",
        AgentMd,
        "Agent",
        "Agent",
        "command",
        Kind::Choice(&crate::agent_kind::AgentKind::WORDS),
        None,
        "adapter: command (exit code only) or claude, codex, aider (default command line, failure signal, usage)"
    ),
    key!(
        "agent.command",
        AgentMd,
        "Agent",
        "Agent command",
        "",
        Kind::Text,
        Some("AUTOMATON_AGENT"),
        "shell command that runs one phase (prompt on stdin); replaces the claude/codex/aider default"
    ),
    key!(
        "agent.flags",
        AgentMd,
        "Agent",
        "Agent flags",
        "",
        Kind::Text,
        Some("AUTOMATON_AGENT_FLAGS"),
        "extra flags appended to the agent's command line"
    ),
    key!(
        "agent.model",
        AgentMd,
        "Agent",
        "Model",
        "",
        Kind::Text,
        None,
        "model the agent uses: --model on the claude/codex/aider default, and the context-window lookup"
    ),
    key!(
        "agent.verify",
        AgentMd,
        "Agent",
        "Verify command",
        "",
        Kind::Text,
        None,
        "command automaton runs itself before it accepts a PASS verdict, e.g. cargo test"
    ),
    key!(
        "agent.isolation",
        AgentMd,
        "Agent",
        "Isolation",
        "auto",
        Kind::Choice(&["auto", "worktree", "none"]),
        None,
        "worktree: a git worktree and branch per task, merged back; none: agents share the project tree; auto: worktree inside a git repository with a commit"
    ),
    key!(
        "storage.durability",
        ConfigMd,
        "Storage",
        "Durability",
        "normal",
        Kind::Choice(&["normal", "full"]),
        Some("AUTOMATON_DURABILITY"),
        "normal: fsync only files that cannot be rebuilt (.origin, .stop, logs/verified, TASK.md); full: fsync every write"
    ),
    key!(
        "phases.decomposition",
        ConfigMd,
        "Phases",
        "Decomposition",
        "No",
        Kind::Bool,
        None,
        "run a decomposition phase after research on top-level tasks"
    ),
    key!(
        "phases.design",
        ConfigMd,
        "Phases",
        "Design",
        "Yes",
        Kind::Bool,
        None,
        "run the design phase"
    ),
    key!(
        "phases.test_design",
        ConfigMd,
        "Phases",
        "Test design",
        "Yes",
        Kind::Bool,
        None,
        "run the test design phase"
    ),
    key!(
        "limits.max_iterations",
        ConfigMd,
        "Limits",
        "Max iterations",
        "10",
        Kind::Count,
        None,
        "phases one task may run in one orchestrate invocation"
    ),
    key!(
        "limits.max_phase_time",
        ConfigMd,
        "Limits",
        "Max phase time",
        "1h",
        Kind::Duration,
        None,
        "time cap for one phase"
    ),
    key!(
        "limits.max_total_time",
        ConfigMd,
        "Limits",
        "Max total time",
        "24h",
        Kind::Duration,
        None,
        "time cap for one orchestrate invocation"
    ),
    key!(
        "limits.stall_timeout",
        ConfigMd,
        "Limits",
        "Stall timeout",
        "10m",
        Kind::Duration,
        None,
        "stop an agent whose output has not grown for this long"
    ),
    key!(
        "limits.jobs",
        ConfigMd,
        "Limits",
        "Jobs",
        "4",
        Kind::Count,
        None,
        "agents running at once, across all sub-tasks and levels"
    ),
    key!(
        "vram.auto_detect",
        ConfigMd,
        "VRAM Configuration",
        "Auto-detect",
        "Yes",
        Kind::Bool,
        None,
        "No: the manual values below win over the probe"
    ),
    key!(
        "vram.target_context",
        ConfigMd,
        "VRAM Configuration",
        "Target context",
        "auto",
        Kind::Tokens,
        None,
        "recommended context per sub-task"
    ),
    key!(
        "vram.headroom",
        ConfigMd,
        "VRAM Configuration",
        "Headroom",
        "25%",
        Kind::Ratio,
        None,
        "share of the target kept free"
    ),
    key!(
        "vram.max_peak",
        ConfigMd,
        "VRAM Configuration",
        "Max peak context per sub-task",
        "auto",
        Kind::Tokens,
        None,
        "largest context one sub-task may need"
    ),
    key!(
        "model.name",
        ConfigMd,
        "Model Configuration",
        "Model",
        "auto",
        Kind::Text,
        None,
        "model name, or auto to detect it"
    ),
    key!(
        "model.context_window",
        ConfigMd,
        "Model Configuration",
        "Override context window",
        "auto",
        Kind::Tokens,
        None,
        "context window, or auto to look it up"
    ),
];

/// A setting that could not be read, naming file, line and key.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{path}:{line}: `{key}`: expected {expected}")]
    BadValue {
        path: PathBuf,
        line: usize,
        key: String,
        expected: String,
    },
    #[error("{origin}: `{key}`: expected {expected}")]
    BadOverride {
        origin: String,
        key: String,
        expected: String,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// One effective setting.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub spec: &'static KeySpec,
    pub raw: String,
    pub value: Value,
    pub origin: Origin,
}

/// The effective settings of a project.
#[derive(Debug, Clone)]
pub struct Settings {
    pub project: PathBuf,
    pub home: Option<PathBuf>,
    values: Vec<Resolved>,
    /// Unknown keys in known sections, and similar things worth a line on stderr.
    pub warnings: Vec<String>,
}

/// Largest part of a settings file read (seed 000: read at most 10 KB of config files, which
/// may hold keys); the rest is ignored with a warning.
const MAX_SETTINGS_BYTES: usize = 10 * 1024;

impl Settings {
    /// Load the settings of `project` with the real home folder and environment.
    /// Also applies `Durability` to [`crate::fsx`] for the rest of the process.
    pub fn load(project: &Path) -> Result<Settings, SettingsError> {
        let s = Settings::load_with(project, home_dir(), &|k| std::env::var(k).ok())?;
        crate::fsx::set_full_durability(s.text("storage.durability") == Some("full"));
        Ok(s)
    }

    /// Load with an explicit home folder and environment (for tests and embedding).
    pub fn load_with(
        project: &Path,
        home: Option<PathBuf>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, SettingsError> {
        let mut s = Settings {
            project: project.to_path_buf(),
            home,
            values: KEYS
                .iter()
                .map(|spec| Resolved {
                    spec,
                    raw: spec.default.to_string(),
                    value: parse_value(spec.kind, spec.default)
                        .unwrap_or(Value::Text(String::new())),
                    origin: Origin::Default,
                })
                .collect(),
            warnings: Vec::new(),
        };
        for (layer, dir) in [
            (Layer::Home, s.home.clone()),
            (Layer::Project, Some(project.join(".automaton"))),
        ] {
            let Some(dir) = dir else { continue };
            for file in [SettingsFile::ConfigMd, SettingsFile::AgentMd] {
                s.apply_file(&dir.join(file.name()), file, layer)?;
            }
        }
        for spec in KEYS {
            if let Some(name) = spec.env
                && let Some(raw) = env(name).filter(|v| !v.trim().is_empty())
            {
                s.set(spec.id, &raw, Origin::Env(name))?;
            }
        }
        Ok(s)
    }

    fn apply_file(
        &mut self,
        path: &Path,
        file: SettingsFile,
        layer: Layer,
    ) -> Result<(), SettingsError> {
        let bytes = match crate::fsx::read_prefix(path, MAX_SETTINGS_BYTES) {
            Ok((b, truncated)) => {
                if truncated {
                    self.warnings.push(format!(
                        "{}: larger than {} KiB; only the start was read",
                        path.display(),
                        MAX_SETTINGS_BYTES / 1024
                    ));
                }
                b
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if path.is_dir() => {
                self.warnings
                    .push(format!("{}: is a folder, not a file ({e})", path.display()));
                return Ok(());
            }
            Err(source) => {
                return Err(SettingsError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let text = String::from_utf8_lossy(&bytes);
        for b in markdown::parse_bullets(&text) {
            // config.md may hold an `## Agent` section too (e.g. `Verify command`); within a
            // layer, .agent.md is read last and wins.
            let config_agent =
                file == SettingsFile::ConfigMd && b.section.eq_ignore_ascii_case("Agent");
            let spec = KEYS.iter().find(|k| {
                (k.file == file || (config_agent && k.file == SettingsFile::AgentMd))
                    && k.key.eq_ignore_ascii_case(&b.key)
                    && (k.section.eq_ignore_ascii_case(&b.section)
                        || (file == SettingsFile::AgentMd && !is_known_section(&b.section)))
            });
            match spec {
                Some(spec) => {
                    let origin = Origin::File {
                        path: path.to_path_buf(),
                        line: b.line,
                        layer,
                    };
                    let value = parse_value(spec.kind, &b.value).map_err(|expected| {
                        SettingsError::BadValue {
                            path: path.to_path_buf(),
                            line: b.line,
                            key: b.key.clone(),
                            expected,
                        }
                    })?;
                    let slot = self.slot_mut(spec.id);
                    *slot = Resolved {
                        spec,
                        raw: b.value,
                        value,
                        origin,
                    };
                }
                None if is_known_section(&b.section) && section_file(&b.section) == Some(file) => {
                    self.warnings.push(format!(
                        "{}:{}: unknown key `{}` in section `{}` (ignored)",
                        path.display(),
                        b.line,
                        b.key,
                        b.section
                    ));
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Override a setting from the environment or a flag; the text is checked like a file's.
    pub fn set(&mut self, id: &str, raw: &str, origin: Origin) -> Result<(), SettingsError> {
        let slot = self.slot_mut(id);
        let value =
            parse_value(slot.spec.kind, raw).map_err(|expected| SettingsError::BadOverride {
                origin: origin.to_string(),
                key: slot.spec.key.to_string(),
                expected,
            })?;
        slot.raw = raw.to_string();
        slot.value = value;
        slot.origin = origin;
        Ok(())
    }

    fn slot_mut(&mut self, id: &str) -> &mut Resolved {
        self.values
            .iter_mut()
            .find(|r| r.spec.id == id)
            .unwrap_or_else(|| panic!("unknown setting id {id}"))
    }

    /// Every effective setting, in registry order.
    pub fn all(&self) -> &[Resolved] {
        &self.values
    }

    pub fn get(&self, id: &str) -> &Resolved {
        self.values
            .iter()
            .find(|r| r.spec.id == id)
            .unwrap_or_else(|| panic!("unknown setting id {id}"))
    }

    pub fn bool(&self, id: &str) -> bool {
        matches!(self.get(id).value, Value::Bool(true))
    }

    pub fn count(&self, id: &str) -> u64 {
        match self.get(id).value {
            Value::Count(n) => n,
            _ => panic!("{id} is not a count"),
        }
    }

    pub fn duration(&self, id: &str) -> Duration {
        match self.get(id).value {
            Value::Duration(d) => d,
            _ => panic!("{id} is not a duration"),
        }
    }

    pub fn ratio(&self, id: &str) -> f64 {
        match self.get(id).value {
            Value::Ratio(r) => r,
            _ => panic!("{id} is not a ratio"),
        }
    }

    pub fn tokens(&self, id: &str) -> Option<u64> {
        match self.get(id).value {
            Value::Tokens(t) => t,
            _ => panic!("{id} is not a token count"),
        }
    }

    /// A text setting; `None` when empty.
    pub fn text(&self, id: &str) -> Option<&str> {
        match &self.get(id).value {
            Value::Text(t) if !t.is_empty() => Some(t),
            _ => None,
        }
    }

    /// Whether the setting was given anywhere (not just its default).
    pub fn is_set(&self, id: &str) -> bool {
        self.get(id).origin != Origin::Default
    }

    /// Find a layered file such as `prompts/research.md`, `scripts/vram_detect.sh` or
    /// `.rules.md`: the project's `.automaton/` first, then the home folder.
    pub fn find_file(&self, rel: &str) -> Option<(PathBuf, Layer)> {
        let project = self.project.join(".automaton").join(rel);
        if project.is_file() {
            return Some((project, Layer::Project));
        }
        let home = self.home.as_ref()?.join(rel);
        home.is_file().then_some((home, Layer::Home))
    }

    /// The text of a prompt or contract (`kind` is `prompts` or `contracts`) for a phase,
    /// from the first layer that has it, and where it came from.
    pub fn template(&self, kind: &str, phase: &str) -> Result<(String, String), SettingsError> {
        let rel = format!("{kind}/{phase}.md");
        if let Some((path, _)) = self.find_file(&rel) {
            let text = std::fs::read_to_string(&path).map_err(|source| SettingsError::Read {
                path: path.clone(),
                source,
            })?;
            return Ok((text, path.display().to_string()));
        }
        Ok((
            builtin_template(kind, phase)
                .unwrap_or_default()
                .to_string(),
            format!("built-in {rel}"),
        ))
    }
}

fn is_known_section(section: &str) -> bool {
    section_file(section).is_some()
}

fn section_file(section: &str) -> Option<SettingsFile> {
    KEYS.iter()
        .find(|k| k.section.eq_ignore_ascii_case(section))
        .map(|k| k.file)
}

fn parse_value(kind: Kind, raw: &str) -> Result<Value, String> {
    Ok(match kind {
        Kind::Bool => Value::Bool(value::parse_bool(raw)?),
        Kind::Count => Value::Count(value::parse_count(raw)?),
        Kind::Duration => Value::Duration(value::parse_duration(raw)?),
        Kind::Ratio => Value::Ratio(value::parse_ratio(raw)?),
        Kind::Tokens => Value::Tokens(value::parse_tokens(raw)?),
        Kind::Text => {
            let t = raw.trim();
            Value::Text(if t.eq_ignore_ascii_case("none") {
                String::new()
            } else {
                t.to_string()
            })
        }
        Kind::Choice(options) => {
            let t = raw.trim().to_ascii_lowercase();
            if options.contains(&t.as_str()) {
                Value::Text(t)
            } else {
                return Err(format!(
                    "one of {}, not `{}`",
                    options.join(", "),
                    raw.trim()
                ));
            }
        }
    })
}

/// `$AUTOMATON_HOME`, else `~/.automaton`.
pub fn home_dir() -> Option<PathBuf> {
    if let Some(h) = std::env::var_os("AUTOMATON_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(h));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".automaton"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_parses() {
        for spec in KEYS {
            parse_value(spec.kind, spec.default).unwrap_or_else(|e| panic!("{}: {e}", spec.id));
        }
    }

    #[test]
    fn project_beats_home_beats_default_and_env_beats_files() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.md"),
            "## Limits\n- **Max iterations**: 7\n- **Jobs**: 3\n",
        )
        .unwrap();
        std::fs::create_dir(project.path().join(".automaton")).unwrap();
        std::fs::write(
            project.path().join(".automaton/config.md"),
            "# mine\n\n## Limits\n- **Max iterations**: 5\n- **Colour**: red\n",
        )
        .unwrap();
        std::fs::write(
            project.path().join(".automaton/.agent.md"),
            "- **Agent command**: ./a.sh\n",
        )
        .unwrap();
        let env = |k: &str| (k == "AUTOMATON_AGENT").then(|| "./b.sh".to_string());
        let s = Settings::load_with(project.path(), Some(home.path().into()), &env).unwrap();
        assert_eq!(s.count("limits.max_iterations"), 5);
        assert!(matches!(
            &s.get("limits.max_iterations").origin,
            Origin::File {
                line: 4,
                layer: Layer::Project,
                ..
            }
        ));
        assert_eq!(s.count("limits.jobs"), 3);
        assert_eq!(
            s.get("limits.jobs").origin.to_string(),
            format!("{}:3", home.path().join("config.md").display())
        );
        assert_eq!(s.text("agent.command"), Some("./b.sh"));
        assert_eq!(
            s.get("agent.command").origin,
            Origin::Env("AUTOMATON_AGENT")
        );
        assert_eq!(
            s.duration("limits.max_phase_time"),
            Duration::from_secs(3600)
        );
        assert!(
            s.warnings
                .iter()
                .any(|w| w.contains(":5: unknown key `Colour`")),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn bad_value_names_file_line_and_key() {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join(".automaton")).unwrap();
        std::fs::write(
            project.path().join(".automaton/config.md"),
            "## VRAM Configuration\n\n- **Headroom**: lots\n",
        )
        .unwrap();
        let err = Settings::load_with(project.path(), None, &|_| None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("config.md:3: `Headroom`: expected a percentage"),
            "{err}"
        );
    }
}
