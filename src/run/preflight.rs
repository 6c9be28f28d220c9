//! Checks made before any agent runs: the agent command's program is resolved on PATH up front,
//! so a misspelled command or a CLI that is not installed is an error that names the setting
//! and where it came from, before any task changes state. Only what can be checked honestly is
//! checked: a compound shell line (pipes, `&&`, redirections, substitutions, variables), a shell
//! builtin or keyword is left to the shell; `sh script.sh` checks `sh` only.

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

/// The program a `sh -c` line runs, when the line is simple enough to say: the first word
/// after `NAME=value` assignments, unquoted. `None` for compound lines, builtins, and words
/// the shell would expand.
pub fn program_of(line: &str) -> Option<String> {
    // Anything that makes the line more than one plain command: leave it to the shell.
    if line.chars().any(|c| {
        matches!(
            c,
            '|' | '&' | ';' | '<' | '>' | '`' | '$' | '\n' | '(' | ')'
        )
    }) {
        return None;
    }
    let mut words = line.split_whitespace();
    let first = loop {
        let w = words.next()?;
        let is_assignment = w.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        });
        if !is_assignment {
            break w;
        }
    };
    // A quoted word without spaces in it: strip the quotes; quoting with spaces or globs: skip.
    let unquoted = match first.as_bytes() {
        [q @ (b'\'' | b'"'), .., last] if last == q && first.len() >= 2 => {
            &first[1..first.len() - 1]
        }
        _ => first,
    };
    if unquoted.is_empty()
        || unquoted
            .chars()
            .any(|c| matches!(c, '\'' | '"' | '\\' | '*' | '?' | '[' | '~' | '{'))
        || SHELL_WORDS.contains(&unquoted)
    {
        return None;
    }
    Some(unquoted.to_string())
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

/// The program of `line` when it can be checked and cannot be found (`None`: found, or not
/// checkable).
pub fn missing_program(line: &str, cwd: &Path) -> Option<String> {
    let program = program_of(line)?;
    let path_var = std::env::var_os("PATH");
    match resolve(&program, path_var.as_deref(), cwd) {
        Some(_) => None,
        None => Some(program),
    }
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
