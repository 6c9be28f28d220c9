//! Checks made before any agent runs: the agent command's program is resolved on PATH up front,
//! so a misspelled command or a CLI that is not installed is an error that names the setting
//! and where it came from, before any task changes state. Only what can be checked honestly is
//! checked: a compound shell line (pipes, `&&`, redirections, substitutions, variables), a shell
//! builtin or keyword is left to the shell. `sh|bash|python|python3 [FLAGS] FILE` also checks
//! that FILE exists, relative to the folder the agent runs in.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Words the shell runs itself: a line that starts with one is not checked.
const SHELL_WORDS: &[&str] = &[
    ".", ":", "[", "alias", "bg", "break", "case", "cd", "command", "continue", "eval", "exec",
    "exit", "export", "false", "fg", "for", "function", "getopts", "hash", "if", "jobs", "kill",
    "local", "pwd", "read", "readonly", "return", "set", "shift", "source", "test", "times",
    "trap", "true", "type", "ulimit", "umask", "unalias", "unset", "until", "wait", "while", "{",
    "(", "!", "time",
];

/// Interpreters whose first operand is the script they run, with the flags (letters that take
/// no argument) that may come before it. Any other flag (`-c`, `-m`, `-o`, `--rcfile`...)
/// leaves the line unchecked.
const INTERPRETERS: &[(&str, &str)] = &[
    ("sh", "aefnuvx"),
    ("bash", "aefnuvx"),
    ("dash", "aefnuvx"),
    ("python", "bBdEiIOqRsSuvx"),
    ("python3", "bBdEiIOqRsSuvx"),
];

/// The words of a simple `sh -c` line after its `NAME=value` assignments; `None` when the line
/// is more than one plain command (pipes, lists, redirections, substitutions, variables).
fn plain_words(line: &str) -> Option<Vec<&str>> {
    if line.chars().any(|c| {
        matches!(
            c,
            '|' | '&' | ';' | '<' | '>' | '`' | '$' | '\n' | '(' | ')'
        )
    }) {
        return None;
    }
    let mut words = line.split_whitespace().skip_while(|w| {
        w.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        })
    });
    let first = words.next()?;
    Some(std::iter::once(first).chain(words).collect())
}

/// A word as the shell passes it, when that is plain: quotes without spaces stripped; `None`
/// for a word with quoting, escapes, globs or `~` the shell would act on.
fn plain_word(word: &str) -> Option<&str> {
    let unquoted = match word.as_bytes() {
        [q @ (b'\'' | b'"'), .., last] if last == q && word.len() >= 2 => &word[1..word.len() - 1],
        _ => word,
    };
    let plain = !unquoted.is_empty()
        && !unquoted
            .chars()
            .any(|c| matches!(c, '\'' | '"' | '\\' | '*' | '?' | '[' | '~' | '{'));
    plain.then_some(unquoted)
}

/// The script a `sh|bash|python|python3 [FLAGS] FILE ...` line runs (the interpreter named by
/// path too, `/usr/bin/python3`), when it can be said; `None` for other lines, `-c`/`-m` and
/// other flags, and words the shell would expand.
pub fn script_of(line: &str) -> Option<String> {
    let words = plain_words(line)?;
    let program = plain_word(words[0])?;
    let base = program.rsplit('/').next().unwrap_or(program);
    let (_, flags) = INTERPRETERS.iter().find(|(name, _)| *name == base)?;
    let mut rest = words[1..].iter();
    let script = loop {
        let w = *rest.next()?;
        match w.strip_prefix('-') {
            Some("-") => break *rest.next()?,
            Some(letters) if !letters.is_empty() && letters.chars().all(|c| flags.contains(c)) => {}
            Some(_) => return None,
            None => break w,
        }
    };
    plain_word(script).map(str::to_string)
}

/// The program a `sh -c` line runs, when the line is simple enough to say: the first word
/// after `NAME=value` assignments, unquoted. `None` for compound lines, builtins, and words
/// the shell would expand.
pub fn program_of(line: &str) -> Option<String> {
    let words = plain_words(line)?;
    let program = plain_word(words[0])?;
    (!SHELL_WORDS.contains(&program)).then(|| program.to_string())
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where `program` resolves from `cwd` (the agent's working folder) with this `PATH`: a word
/// with a `/` is a path, anything else is looked up in PATH's folders as the shell does.
pub fn resolve(program: &str, path_var: Option<&OsStr>, cwd: &Path) -> Option<PathBuf> {
    if program.contains('/') {
        let p = cwd.join(program);
        return is_executable(&p).then_some(p);
    }
    let path_var = path_var?;
    std::env::split_paths(path_var)
        .map(|dir| {
            // An empty PATH entry means the current folder.
            let dir = if dir.as_os_str().is_empty() {
                cwd.to_path_buf()
            } else {
                cwd.join(dir)
            };
            dir.join(program)
        })
        .find(|p| is_executable(p))
}

/// What an agent line needs and does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// Its program is not on PATH (or, given as a path, not an executable file).
    Program(String),
    /// Its interpreter's script (`sh agents/claude.sh`) is not a file, relative to `cwd`.
    Script { interpreter: String, script: String },
}

/// What `line` needs and `cwd` (the agent's working folder) and PATH do not have, when it can
/// be checked (`None`: all there, or not checkable).
pub fn missing(line: &str, cwd: &Path) -> Option<Missing> {
    let program = program_of(line)?;
    let path_var = std::env::var_os("PATH");
    if resolve(&program, path_var.as_deref(), cwd).is_none() {
        return Some(Missing::Program(program));
    }
    let script = script_of(line)?;
    (!cwd.join(&script).is_file()).then_some(Missing::Script {
        interpreter: program,
        script,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_of_simple_lines_only() {
        assert_eq!(program_of("claude -p --verbose").as_deref(), Some("claude"));
        assert_eq!(
            program_of("  FOO=1 BAR=x claude-cod -p").as_deref(),
            Some("claude-cod")
        );
        assert_eq!(
            program_of("sh examples/agents/demo-agent.sh").as_deref(),
            Some("sh")
        );
        assert_eq!(program_of("'./my agent'"), None);
        assert_eq!(program_of("\"./agent\" x").as_deref(), Some("./agent"));
        assert_eq!(program_of("cat x | claude"), None);
        assert_eq!(program_of("a && b"), None);
        assert_eq!(program_of("$HOME/bin/agent"), None);
        assert_eq!(program_of("exec claude"), None);
        assert_eq!(program_of("cd sub; agent"), None);
        assert_eq!(program_of("~/bin/agent"), None);
        assert_eq!(program_of("FOO=1"), None);
        assert_eq!(program_of(""), None);
    }

    #[test]
    fn the_script_of_interpreter_lines() {
        for (line, script) in [
            ("sh agents/claude.sh", Some("agents/claude.sh")),
            ("bash -eu ./run.sh --fast", Some("./run.sh")),
            ("X=1 python3 -u 'agent.py' -v", Some("agent.py")),
            ("/usr/bin/python agent.py", Some("agent.py")),
            ("sh -- agent.sh", Some("agent.sh")),
            ("sh -c 'agent'", None),
            ("bash -o pipefail a.sh", None),
            ("python3 -m agent", None),
            ("sh", None),
            ("sh $HOME/a.sh", None),
            ("sh ~/a.sh", None),
            ("sh 'my agent.sh'", None),
            ("claude -p", None),
            ("shellcheck a.sh", None),
        ] {
            assert_eq!(script_of(line).as_deref(), script, "{line}");
        }
    }

    #[test]
    fn a_missing_script_is_named_relative_to_the_agent_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("agents")).unwrap();
        std::fs::write(dir.path().join("agents/ok.sh"), "echo hi\n").unwrap();
        assert_eq!(missing("sh agents/ok.sh", dir.path()), None);
        assert_eq!(
            missing("sh agents/claude.sh", dir.path()),
            Some(Missing::Script {
                interpreter: "sh".into(),
                script: "agents/claude.sh".into()
            })
        );
        // A folder is not a script.
        assert!(missing("sh agents", dir.path()).is_some());
        assert_eq!(
            missing("no-such-program-x a.sh", dir.path()),
            Some(Missing::Program("no-such-program-x".into()))
        );
    }

    #[test]
    fn resolves_on_path_and_by_path() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let tool = bin.join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(bin.join("plain"), "not executable").unwrap();
        let path = std::env::join_paths([Path::new("/nonexistent"), &bin]).unwrap();
        assert_eq!(resolve("tool", Some(&path), dir.path()), Some(tool.clone()));
        assert_eq!(resolve("plain", Some(&path), dir.path()), None);
        assert_eq!(resolve("nope", Some(&path), dir.path()), None);
        assert_eq!(resolve("bin/tool", None, dir.path()), Some(tool));
        assert_eq!(resolve("bin/none", None, dir.path()), None);
        assert_eq!(resolve("tool", None, dir.path()), None);
    }
}
