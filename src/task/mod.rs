//! Task folders: names, discovery, snapshots, and creating new ones.

pub mod fix;
pub mod frozen;
pub mod gates;
pub mod index;
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
    /// A sub-task made from a row of its parent's DECOMPOSITION.md, which the next run makes
    /// again if a power cut lost it: its new entry is not fsynced here (the caller has the
    /// folder above synced once for all it made, see [`crate::fsx::sync_in_background`]).
    pub rebuildable: bool,
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
    let parent = dir.parent().unwrap_or(project).to_path_buf();
    fs::create_dir_all(&parent).map_err(|source| TaskError::Create {
        path: parent.display().to_string(),
        source,
    })?;
    if dir.exists() {
        return Err(TaskError::Exists(task.rel.to_string()));
    }
    // The folder appears whole or not at all: it is built under a temporary name beside its
    // place (dot-named, so discovery skips it) and renamed into place once every file is in.
    let tmp = tempfile::Builder::new()
        .prefix(crate::fsx::TEMP_PREFIX)
        .tempdir_in(&parent)
        .map_err(|source| TaskError::Create {
            path: parent.display().to_string(),
            source,
        })?;
    // A task folder is as open as one `mkdir` makes (a temp dir is 0700).
    {
        use std::os::unix::fs::PermissionsExt;
        // umask can only be read by swapping it; it is put back at once.
        let umask = rustix::process::umask(rustix::fs::Mode::from_bits_truncate(0o022));
        rustix::process::umask(umask);
        let _ = fs::set_permissions(
            tmp.path(),
            fs::Permissions::from_mode(0o777 & !umask.bits()),
        );
    }
    fill_task(tmp.path(), task)?;
    let staged = tmp.keep();
    match rustix::fs::renameat_with(
        rustix::fs::CWD,
        &staged,
        rustix::fs::CWD,
        &dir,
        rustix::fs::RenameFlags::NOREPLACE,
    ) {
        Ok(()) => {}
        Err(rustix::io::Errno::EXIST) | Err(rustix::io::Errno::NOTEMPTY) => {
            let _ = fs::remove_dir_all(&staged);
            return Err(TaskError::Exists(task.rel.to_string()));
        }
        Err(rustix::io::Errno::INVAL) | Err(rustix::io::Errno::NOSYS) => {
            // No RENAME_NOREPLACE on this filesystem: an existing folder was refused above.
            fs::rename(&staged, &dir).map_err(|source| {
                let _ = fs::remove_dir_all(&staged);
                TaskError::Create {
                    path: dir.display().to_string(),
                    source,
                }
            })?;
        }
        Err(e) => {
            let _ = fs::remove_dir_all(&staged);
            return Err(TaskError::Create {
                path: dir.display().to_string(),
                source: e.into(),
            });
        }
    }
    if (!task.rebuildable || crate::fsx::full_durability())
        && let Ok(d) = fs::File::open(&parent)
    {
        let _ = d.sync_all();
    }
    Ok(dir)
}

/// Write the files of a new task into `dir`.
fn fill_task(dir: &Path, task: &NewTask<'_>) -> Result<(), TaskError> {
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
        write_origin(dir, &origin)?;
    }
    write_state(dir, task.start)?;
    Ok(())
}
