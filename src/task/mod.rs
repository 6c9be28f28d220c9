//! Task folders: names, discovery, snapshots, and creating new ones.

pub mod fix;
pub mod gates;
pub mod snapshot;
pub mod tree;

use crate::fsx::write_atomic;
use crate::state::State;
use crate::store::task_files::{OriginFile, write_origin, write_state};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub use tree::{TaskNode, TaskTree};

/// The file holding the request a task was created from.
pub const TASK_FILE: &str = "TASK.md";

/// What to put in a new task folder.
#[derive(Debug, Clone)]
pub struct NewTask<'a> {
    /// Checked path relative to the project (see [`crate::names::task_path`]).
    pub rel: &'a str,
    pub start: State,
    pub description: Option<&'a str>,
    /// Where a fix/review/tiebreak task came from, and the artifacts to copy from there.
    pub copy_from: Option<(&'a str, &'a Path, &'a [&'a str])>,
}

/// A task folder that could not be created; each names the folder or file.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("task {0} already exists")]
    Exists(String),
    #[error("cannot create {path}: {source}")]
    Create { path: String, source: io::Error },
    /// Writing a file of the new task failed ([`crate::fsx::write_atomic`] names the file).
    #[error(transparent)]
    Write(#[from] io::Error),
}

/// Create a task folder with `.state` (and `.origin`, `TASK.md`, copied reports where asked).
/// Refuses a folder that already exists. Every file is written atomically.
pub fn create_task(project: &Path, task: &NewTask<'_>) -> Result<PathBuf, TaskError> {
    let dir = project.join(task.rel);
    if let Some(parent) = dir.parent() {
        fs::create_dir_all(parent).map_err(|source| TaskError::Create {
            path: parent.display().to_string(),
            source,
        })?;
    }
    match fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(TaskError::Exists(task.rel.to_string()));
        }
        Err(source) => {
            return Err(TaskError::Create {
                path: task.rel.to_string(),
                source,
            });
        }
    }
    let mut origin = OriginFile {
        start: task.start.word().to_string(),
        ..OriginFile::default()
    };
    if let Some((from_rel, from_dir, files)) = task.copy_from {
        origin.from = Some(from_rel.to_string());
        for file in files {
            if let Ok(bytes) = crate::fsx::read(from_dir.join(file)) {
                write_atomic(&dir.join(file), &bytes)?;
                origin
                    .inherited
                    .insert(file.to_string(), snapshot::content_hash(&bytes));
            }
        }
    }
    if let Some(desc) = task.description {
        write_atomic(
            &dir.join(TASK_FILE),
            format!("# Task\n\n{}\n", desc.trim()).as_bytes(),
        )?;
    }
    if task.start != State::NEW || origin.from.is_some() {
        write_origin(&dir, &origin)?;
    }
    write_state(&dir, task.start)?;
    Ok(dir)
}
