//! The one error type of the command layer: it wraps every module's error, and
//! [`Error::exit_code`] is the one place an error becomes a documented exit code
//! (`crate::exit`). A run that stopped for a human is not an error: its code comes from
//! `plan::decide::StopKind::TABLE`.

use super::out::StdoutError;
use crate::exit;
use crate::run::RunError;
use crate::settings::SettingsError;
use crate::store::lock::LockError;
use crate::task::TaskError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A settings file, or an environment variable, that could not be read (names file and
    /// line, or the variable).
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Task(#[from] TaskError),
    #[error(transparent)]
    Run(#[from] RunError),
    /// Another orchestrator holds the project (75), or the lock file failed (1).
    #[error(transparent)]
    Lock(#[from] LockError),
    /// stdout failed; a closed pipe is a quiet exit 0.
    #[error(transparent)]
    Stdout(#[from] StdoutError),
    #[error("project folder {} does not exist", .0.display())]
    NoProject(PathBuf),
    #[error("cannot find the project folder {}: {source}", path.display())]
    ProjectPath {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot install the Ctrl-C handler: {0}")]
    Signals(std::io::Error),
    #[error("cannot render JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// Bad input on the command line that clap cannot see (a task name, a state word, no
    /// agent command); the message says what to do.
    #[error("{0}")]
    Input(String),
    /// A command line that is well-formed but not allowed (exit 2, like clap's own errors).
    #[error("{0}")]
    Usage(String),
    /// A file operation of a command (moving a rejected or superseded artifact, appending a
    /// record); the store names the file where it can.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A git step failed (names the command and folder).
    #[error(transparent)]
    Git(#[from] crate::git::GitError),
    /// No project was found (or it would be inside a task folder), where one is needed.
    #[error("{0}")]
    NoProjectHere(String),
    /// The agent's program is not on PATH (names the setting and where it was set).
    #[error("{0}")]
    AgentNotFound(String),
    /// `merge` or `clean` would lose or overwrite work, so it did nothing (exit 21).
    #[error("{0}")]
    Refused(String),
    /// `merge` of a task that waits at the merge gate (`Approve before: merge`): a person
    /// approves it first (exit 20, as a run stopped at a gate).
    #[error("{0}")]
    AwaitingApproval(String),
}

impl Error {
    /// The documented exit code of this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Stdout(StdoutError::BrokenPipe) => exit::OK,
            Error::Lock(e) => e.exit_code(),
            Error::Usage(_) => exit::USAGE,
            Error::Refused(_) => exit::REFUSED,
            Error::AwaitingApproval(_) => exit::AWAITING_APPROVAL,
            Error::AgentNotFound(_) => exit::AGENT_NOT_FOUND,
            Error::NoProjectHere(_) => exit::NO_PROJECT,
            Error::Run(RunError::Panicked { .. }) => exit::INTERNAL,
            Error::Settings(_)
            | Error::Task(_)
            | Error::Run(_)
            | Error::Stdout(StdoutError::Write(_))
            | Error::NoProject(_)
            | Error::ProjectPath { .. }
            | Error::Signals(_)
            | Error::Json(_)
            | Error::Git(_)
            | Error::Io(_)
            | Error::Input(_) => exit::ERROR,
        }
    }

    /// Whether to say nothing on stderr (the reader of stdout went away).
    pub fn is_quiet(&self) -> bool {
        matches!(self, Error::Stdout(StdoutError::BrokenPipe))
    }
}

/// What every command handler returns: its exit code, or an error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[test]
    fn every_error_maps_to_its_documented_code() {
        let io = || io::Error::from(io::ErrorKind::PermissionDenied);
        let cases: Vec<(Error, u8)> = vec![
            (StdoutError::BrokenPipe.into(), exit::OK),
            (StdoutError::Write(io()).into(), exit::ERROR),
            (
                LockError::Held {
                    pid: Some(7),
                    since: None,
                    command: None,
                }
                .into(),
                exit::LOCKED,
            ),
            (
                LockError::Io {
                    path: "p/.automaton/lock".into(),
                    source: io(),
                }
                .into(),
                exit::ERROR,
            ),
            (
                SettingsError::BadEnv {
                    name: "AUTOMATON_KILL_GRACE",
                    expected: "a duration".into(),
                }
                .into(),
                exit::ERROR,
            ),
            (TaskError::Exists("tasks/a".into()).into(), exit::ERROR),
            (RunError::TaskGone("tasks/a".into()).into(), exit::ERROR),
            (Error::NoProject("/nowhere".into()), exit::ERROR),
            (Error::Input("bad name".into()), exit::ERROR),
            (
                Error::Usage("`continue` takes no description".into()),
                exit::USAGE,
            ),
            (
                Error::AwaitingApproval("tasks/a waits".into()),
                exit::AWAITING_APPROVAL,
            ),
        ];
        for (e, code) in cases {
            assert_eq!(e.exit_code(), code, "{e:?}");
            assert_eq!(e.is_quiet(), code == exit::OK, "{e:?}");
        }
    }

    #[test]
    fn messages_name_the_file_or_variable() {
        let e = Error::from(TaskError::Create {
            path: "tasks/a".into(),
            source: io::Error::from(io::ErrorKind::PermissionDenied),
        });
        assert!(e.to_string().starts_with("cannot create tasks/a: "), "{e}");
        let e = Error::from(SettingsError::BadEnv {
            name: "AUTOMATON_KILL_GRACE",
            expected: "a duration like 90s, 45m or 24h, not `x`".into(),
        });
        assert_eq!(
            e.to_string(),
            "environment variable AUTOMATON_KILL_GRACE: expected a duration like 90s, 45m or \
             24h, not `x`"
        );
        let e = Error::NoProject("/nowhere".into());
        assert_eq!(e.to_string(), "project folder /nowhere does not exist");
    }
}
