//! Layered settings: project `.automaton/` beats `$AUTOMATON_HOME` (default `~/.automaton/`),
//! which beats the defaults built into the binary; the environment and flags beat all files.
//! Every effective value remembers where it came from, so `automaton config` can say.

mod builtin;
pub mod diagnose;
pub mod markdown;
mod registry;
pub mod value;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use builtin::builtin_template;
pub use registry::{KEYS, Key, KeySpec, Kind, SettingsFile};

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
    #[error("environment variable {name}: expected {expected}")]
    BadEnv {
        name: &'static str,
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

impl Resolved {
    /// The setting as a person would find it again, its value redacted: the file line
    /// (`` `- **Agent command**: x` (.automaton/.agent.md:3) ``), the default, or the flag or
    /// variable that set it (`` `x` (from --agent) ``), never a flag dressed as a file line.
    pub fn described(&self) -> String {
        let shown = value::redact(&self.raw);
        match &self.origin {
            Origin::Default => format!("`- **{}**: {shown}` (the default)", self.spec.key),
            Origin::File { .. } => format!("`- **{}**: {shown}` ({})", self.spec.key, self.origin),
            Origin::Env(name) => format!("`{shown}` (from ${name})"),
            Origin::Flag(name) => format!("`{shown}` (from {name})"),
        }
    }
}

/// The effective settings of a project.
#[derive(Debug, Clone)]
pub struct Settings {
    pub project: PathBuf,
    pub home: Option<PathBuf>,
    values: Vec<Resolved>,
    /// Unknown keys in known sections, and similar things worth a line on stderr.
    pub warnings: Vec<String>,
    /// Only from [`Settings::load_lenient`]: the settings whose value could not be read (the
    /// id, and the error naming file and line); each keeps the value of the layer below.
    pub invalid: Vec<(&'static str, String)>,
    /// Only from [`Settings::load_lenient`]: the environment variables among
    /// [`Settings::invalid`], and what they should hold (see [`Settings::check_env`]).
    bad_env: Vec<(&'static str, String)>,
    lenient: bool,
}

/// Largest part of a settings file read (at most 10 KB of a config file is read, which
/// may hold keys); the rest is ignored with a warning.
const MAX_SETTINGS_BYTES: usize = 10 * 1024;

impl Settings {
    /// Load the settings of `project` with the real home folder and environment.
    /// Also applies `Durability` and `Allow links out` (writes stay inside `project`) to
    /// [`crate::fsx`] for the rest of the process.
    pub fn load(project: &Path) -> Result<Settings, SettingsError> {
        let s = Settings::load_with(project, home_dir(), &|k| std::env::var(k).ok())?;
        s.apply_storage();
        Ok(s)
    }

    /// Load the settings for a report (`status`, `config`): a value that cannot be read is
    /// kept in [`Settings::invalid`] instead of failing the load.
    pub fn load_lenient(project: &Path) -> Result<Settings, SettingsError> {
        let s = Settings::load_mode(project, home_dir(), &|k| std::env::var(k).ok(), true)?;
        s.apply_storage();
        Ok(s)
    }

    /// `## Storage` for the rest of the process: how durable writes are, and that they stay
    /// inside the project unless links out are allowed.
    fn apply_storage(&self) {
        crate::fsx::set_full_durability(self.text(Key::Durability) == Some("full"));
        crate::fsx::contain_within(&self.project, self.bool(Key::AllowLinksOut));
    }

    /// After [`Settings::load_lenient`]: the first environment variable whose value could not
    /// be read, as the error a strict load gives. A file's bad value is shown at its line and
    /// the report goes on; a variable has no line to show it at, and is set for this very
    /// command, so `config` refuses it.
    pub fn check_env(&self) -> Result<(), SettingsError> {
        match self.bad_env.first() {
            Some((name, expected)) => Err(SettingsError::BadEnv {
                name,
                expected: expected.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Load with an explicit home folder and environment (for tests and embedding).
    pub fn load_with(
        project: &Path,
        home: Option<PathBuf>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, SettingsError> {
        Settings::load_mode(project, home, env, false)
    }

    fn load_mode(
        project: &Path,
        home: Option<PathBuf>,
        env: &dyn Fn(&str) -> Option<String>,
        lenient: bool,
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
            invalid: Vec::new(),
            bad_env: Vec::new(),
            lenient,
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
                match s.set(spec.setting, &raw, Origin::Env(name)) {
                    Err(e) if s.lenient => {
                        if let SettingsError::BadEnv { name, expected } = &e {
                            s.bad_env.push((name, expected.clone()));
                        }
                        s.invalid.push((spec.id, e.to_string()));
                    }
                    other => other?,
                }
            }
        }
        Ok(s)
    }

    /// The bytes of a settings file (its first [`MAX_SETTINGS_BYTES`], with a warning when it
    /// holds more); `None` when there is none (or a folder stands there, with a warning).
    fn read_file(&mut self, path: &Path) -> Result<Option<Vec<u8>>, SettingsError> {
        match crate::fsx::read_prefix(path, MAX_SETTINGS_BYTES) {
            Ok((b, truncated)) => {
                if truncated {
                    self.warnings.push(format!(
                        "{}: larger than {} KiB; only the start was read",
                        path.display(),
                        MAX_SETTINGS_BYTES / 1024
                    ));
                }
                Ok(Some(b))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) if path.is_dir() => {
                self.warnings
                    .push(format!("{}: is a folder, not a file ({e})", path.display()));
                Ok(None)
            }
            Err(source) => Err(SettingsError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    fn apply_file(
        &mut self,
        path: &Path,
        file: SettingsFile,
        layer: Layer,
    ) -> Result<(), SettingsError> {
        let Some(bytes) = self.read_file(path)? else {
            return Ok(());
        };
        let text = String::from_utf8_lossy(&bytes);
        for (line, msg) in diagnose::diagnose(&text, file) {
            self.warnings
                .push(format!("{}:{line}: {msg}", path.display()));
        }
        // Where each setting was set in this file: set again, the later line wins, and the
        // earlier one is said to count no more.
        let mut set_at: Vec<(Key, usize)> = Vec::new();
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
                    let value = match parse_value(spec.kind, &b.value).map_err(|expected| {
                        SettingsError::BadValue {
                            path: path.to_path_buf(),
                            line: b.line,
                            key: b.key.clone(),
                            expected,
                        }
                    }) {
                        Err(e) if self.lenient => {
                            self.invalid.push((spec.id, e.to_string()));
                            continue;
                        }
                        other => other?,
                    };
                    // Only a value that counts replaces the earlier line (a bad one, skipped
                    // above where settings are read leniently, leaves it in force).
                    match set_at.iter_mut().find(|(k, _)| *k == spec.setting) {
                        Some((_, earlier)) => {
                            self.warnings.push(format!(
                                "{}:{}: `{}` is set again (line {earlier} no longer counts)",
                                path.display(),
                                b.line,
                                spec.key
                            ));
                            *earlier = b.line;
                        }
                        None => set_at.push((spec.setting, b.line)),
                    }
                    let slot = self.slot_mut(spec.setting);
                    *slot = Resolved {
                        spec,
                        raw: b.value,
                        value,
                        origin,
                    };
                }
                None if is_known_section(&b.section) && section_file(&b.section) == Some(file) => {
                    self.warnings.push(format!(
                        "{}:{}: unknown key `{}` in section `{}` (ignored){}",
                        path.display(),
                        b.line,
                        b.key,
                        b.section,
                        diagnose::key_hint(&b.key, &b.section, file)
                    ));
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Override a setting from the environment or a flag; the text is checked like a file's.
    pub fn set(&mut self, key: Key, raw: &str, origin: Origin) -> Result<(), SettingsError> {
        let slot = self.slot_mut(key);
        let value = parse_value(slot.spec.kind, raw).map_err(|expected| match origin {
            Origin::Env(name) => SettingsError::BadEnv { name, expected },
            _ => SettingsError::BadOverride {
                origin: origin.to_string(),
                key: slot.spec.key.to_string(),
                expected,
            },
        })?;
        slot.raw = raw.to_string();
        slot.value = value;
        slot.origin = origin;
        Ok(())
    }

    fn slot_mut(&mut self, key: Key) -> &mut Resolved {
        // `values` holds one entry per registry row, in registry order.
        &mut self.values[key as usize]
    }

    /// Every effective setting, in registry order.
    pub fn all(&self) -> &[Resolved] {
        &self.values
    }

    pub fn get(&self, key: Key) -> &Resolved {
        &self.values[key as usize]
    }

    // The typed reads below panic only when a key is read as another kind than its registry
    // row says, a programming error `every_key_reads_as_its_kind` catches.

    pub fn bool(&self, key: Key) -> bool {
        match self.get(key).value {
            Value::Bool(b) => b,
            _ => panic!("{key:?} is not yes/no"),
        }
    }

    pub fn count(&self, key: Key) -> u64 {
        match self.get(key).value {
            Value::Count(n) => n,
            _ => panic!("{key:?} is not a count"),
        }
    }

    pub fn duration(&self, key: Key) -> Duration {
        match self.get(key).value {
            Value::Duration(d) => d,
            _ => panic!("{key:?} is not a duration"),
        }
    }

    pub fn ratio(&self, key: Key) -> f64 {
        match self.get(key).value {
            Value::Ratio(r) => r,
            _ => panic!("{key:?} is not a ratio"),
        }
    }

    pub fn tokens(&self, key: Key) -> Option<u64> {
        match self.get(key).value {
            Value::Tokens(t) => t,
            _ => panic!("{key:?} is not a token count"),
        }
    }

    /// A text setting; `None` when empty.
    /// A gate-list setting (`Approve before`; checked when the settings were read).
    pub fn gates(&self, key: Key) -> Vec<crate::plan::gate::Gate> {
        crate::plan::gate::Gate::parse_list(self.text(key).unwrap_or("")).unwrap_or_default()
    }

    /// A `host[:port]` list (checked when the settings were read); empty when unset.
    pub fn hosts(&self, key: Key) -> Vec<value::HostPort> {
        value::parse_hosts(self.text(key).unwrap_or("")).unwrap_or_default()
    }

    /// A budget setting (checked when the settings were read); no limit when unset.
    pub fn budget(&self, key: Key) -> crate::plan::decide::Budget {
        value::parse_budget(self.text(key).unwrap_or("")).unwrap_or_default()
    }

    pub fn text(&self, key: Key) -> Option<&str> {
        match &self.get(key).value {
            Value::Text(t) if !t.is_empty() => Some(t),
            Value::Text(_) => None,
            _ => panic!("{key:?} is not text"),
        }
    }

    /// Whether the setting was given anywhere (not just its default).
    pub fn is_set(&self, key: Key) -> bool {
        self.get(key).origin != Origin::Default
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
            let text = crate::fsx::read_to_string(&path).map_err(|source| SettingsError::Read {
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
        .filter(|k| k.file != SettingsFile::Env)
        .find(|k| k.section.eq_ignore_ascii_case(section))
        .map(|k| k.file)
}

fn parse_value(kind: Kind, raw: &str) -> Result<Value, String> {
    Ok(match kind {
        Kind::Bool => Value::Bool(value::parse_bool(raw)?),
        Kind::Count => Value::Count(value::parse_count(raw)?),
        Kind::Whole => Value::Count(value::parse_whole(raw)?),
        Kind::Budget => {
            value::parse_budget(raw)?;
            Value::Text(raw.trim().to_string())
        }
        // Every duration setting is a cap or a timeout, where 0 means nothing sensible...
        Kind::Duration => Value::Duration(value::parse_positive_duration(raw)?),
        // ...except a pause, where 0 is "do not wait".
        Kind::Pause => Value::Duration(value::parse_duration(raw)?),
        Kind::Seconds => Value::Duration(value::parse_seconds(raw)?),
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
        Kind::Phases => {
            crate::plan::gate::Gate::parse_list(raw).map_err(|why| {
                // Name the gate meant, for a word a typo away from one.
                let hint = raw
                    .split(',')
                    .map(str::trim)
                    .filter(|w| crate::plan::gate::Gate::parse(w).is_none())
                    .find_map(|w| diagnose::nearest(w, crate::plan::gate::Gate::WORDS))
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                format!("{why}{hint}")
            })?;
            Value::Text(raw.trim().to_string())
        }
        Kind::Hosts => {
            value::parse_hosts(raw)?;
            Value::Text(raw.trim().to_string())
        }
        Kind::Choice(options) => {
            let t = raw.trim().to_ascii_lowercase();
            if options.contains(&t.as_str()) {
                Value::Text(t)
            } else {
                let hint = diagnose::nearest(&t, options.iter().copied())
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                return Err(format!(
                    "one of {}, not `{}`{hint}",
                    options.join(", "),
                    raw.trim()
                ));
            }
        }
    })
}

/// `$AUTOMATON_HOME`, else `~/.automaton`.
pub fn home_dir() -> Option<PathBuf> {
    let var = Key::Home.spec().env.unwrap_or_default();
    if let Some(h) = std::env::var_os(var).filter(|h| !h.is_empty()) {
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
        assert_eq!(s.count(Key::MaxIterations), 5);
        assert!(matches!(
            &s.get(Key::MaxIterations).origin,
            Origin::File {
                line: 4,
                layer: Layer::Project,
                ..
            }
        ));
        assert_eq!(s.count(Key::Jobs), 3);
        assert_eq!(
            s.get(Key::Jobs).origin.to_string(),
            format!("{}:3", home.path().join("config.md").display())
        );
        assert_eq!(s.text(Key::AgentCommand), Some("./b.sh"));
        assert_eq!(
            s.get(Key::AgentCommand).origin,
            Origin::Env("AUTOMATON_AGENT")
        );
        assert_eq!(s.duration(Key::MaxPhaseTime), Duration::from_secs(3600));
        assert!(
            s.warnings
                .iter()
                .any(|w| w.contains(":5: unknown key `Colour`")),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn the_registry_and_the_keys_line_up() {
        assert_eq!(Key::ALL.len(), KEYS.len());
        for (i, key) in Key::ALL.iter().enumerate() {
            assert_eq!(*key as usize, i);
            assert_eq!(key.spec().setting, *key);
        }
        let mut ids: Vec<_> = KEYS.iter().map(|k| k.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), KEYS.len(), "ids are unique");
        let mut vars: Vec<_> = KEYS.iter().filter_map(|k| k.env).collect();
        let n = vars.len();
        vars.sort_unstable();
        vars.dedup();
        assert_eq!(vars.len(), n, "one setting per variable");
        for spec in KEYS.iter().filter(|k| k.file == SettingsFile::Env) {
            assert_eq!(
                spec.env,
                Some(spec.key),
                "{}: shown by its variable",
                spec.id
            );
        }
    }

    #[test]
    fn every_key_reads_as_its_kind() {
        let project = tempfile::tempdir().unwrap();
        let s = Settings::load_with(project.path(), None, &|_| None).unwrap();
        for key in Key::ALL {
            match key.spec().kind {
                Kind::Bool => drop(s.bool(*key)),
                Kind::Count | Kind::Whole => drop(s.count(*key)),
                Kind::Budget => drop(s.budget(*key)),
                Kind::Duration | Kind::Seconds | Kind::Pause => drop(s.duration(*key)),
                Kind::Ratio => drop(s.ratio(*key)),
                Kind::Tokens => drop(s.tokens(*key)),
                Kind::Text | Kind::Choice(_) => drop(s.text(*key)),
                Kind::Phases => drop(s.gates(*key)),
                Kind::Hosts => drop(s.hosts(*key)),
            }
            assert!(!s.is_set(*key));
        }
        assert_eq!(s.duration(Key::KillGrace), Duration::from_secs(5));
        assert_eq!(s.duration(Key::ContractGrace), Duration::from_secs(10));
        assert_eq!(s.duration(Key::VramScriptTimeout), Duration::from_secs(10));
    }

    #[test]
    fn environment_knobs_are_settings_with_their_origin() {
        let project = tempfile::tempdir().unwrap();
        let env = |k: &str| match k {
            "AUTOMATON_KILL_GRACE" => Some("300ms".to_string()),
            "AUTOMATON_VRAM_SCRIPT_TIMEOUT" => Some("0.5".to_string()),
            "AUTOMATON_HOME" => Some("/elsewhere".to_string()),
            _ => None,
        };
        let s = Settings::load_with(project.path(), None, &env).unwrap();
        assert_eq!(s.duration(Key::KillGrace), Duration::from_millis(300));
        assert_eq!(
            s.get(Key::KillGrace).origin,
            Origin::Env("AUTOMATON_KILL_GRACE")
        );
        assert_eq!(
            s.duration(Key::VramScriptTimeout),
            Duration::from_millis(500)
        );
        assert_eq!(s.text(Key::Home), Some("/elsewhere"));
        assert_eq!(s.get(Key::ContractGrace).origin, Origin::Default);
        // A file cannot set an environment-only knob, nor does its section become known.
        std::fs::create_dir(project.path().join(".automaton")).unwrap();
        std::fs::write(
            project.path().join(".automaton/config.md"),
            "## Variables\n- **AUTOMATON_KILL_GRACE**: 9s\n",
        )
        .unwrap();
        let s = Settings::load_with(project.path(), None, &|_| None).unwrap();
        assert_eq!(s.duration(Key::KillGrace), Duration::from_secs(5));
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }

    #[test]
    fn a_bad_environment_value_names_the_variable() {
        let project = tempfile::tempdir().unwrap();
        for (var, bad, expected) in [
            ("AUTOMATON_KILL_GRACE", "soon", "a duration like 90s"),
            ("AUTOMATON_CONTRACT_GRACE", "-2s", "a duration like 90s"),
            ("AUTOMATON_VRAM_SCRIPT_TIMEOUT", "0", "a number of seconds"),
        ] {
            let env = |k: &str| (k == var).then(|| bad.to_string());
            let err = Settings::load_with(project.path(), None, &env).unwrap_err();
            assert!(
                matches!(err, SettingsError::BadEnv { name, .. } if name == var),
                "{err:?}"
            );
            let msg = err.to_string();
            assert!(
                msg.starts_with(&format!("environment variable {var}: expected {expected}")),
                "{msg}"
            );
            assert!(msg.ends_with(&format!("not `{bad}`")), "{msg}");
        }
    }

    /// Every `AUTOMATON_*` variable named in `src/` is either a setting (shown by `config`) or
    /// part of the agent contract (set for the agent, never read).
    #[test]
    fn every_automaton_variable_is_in_the_registry() {
        const AGENT_CONTRACT: &[&str] = &[
            "AUTOMATON_PHASE",
            "AUTOMATON_TASK",
            "AUTOMATON_TASK_DIR",
            "AUTOMATON_ARTIFACT",
            "AUTOMATON_PROMPT_FILE",
            "AUTOMATON_PROJECT",
            "AUTOMATON_ATTEMPT",
            "AUTOMATON_WORKTREE",
            "AUTOMATON_BRANCH",
            "AUTOMATON_PORT",
            // The notify command's contract.
            "AUTOMATON_EVENT",
        ];
        let mut files = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
        let mut missing = Vec::new();
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            for (at, _) in text.match_indices("\"AUTOMATON_") {
                let name: String = text[at + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                    .collect();
                let known = KEYS.iter().any(|k| k.env == Some(name.as_str()))
                    || AGENT_CONTRACT.contains(&name.as_str());
                // (`"AUTOMATON_` alone is this test's own needle.)
                if !known && name != "AUTOMATON_" && !name.starts_with("AUTOMATON_TEST_") {
                    missing.push(format!("{}: {name}", path.display()));
                }
            }
        }
        assert!(missing.is_empty(), "not in settings::KEYS: {missing:?}");
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
