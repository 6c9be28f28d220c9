//! Task folders: names, discovery, snapshots, and creating new ones.

pub mod fix;
pub mod frozen;
pub mod gates;
pub mod index;
pub mod snapshot;
pub mod tree;

use crate::state::State;
use crate::store::task_files::{ORIGIN_FILE, OriginFile, STATE_FILE, origin_text, state_text};
use std::fs;
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
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
    /// Further files (name, content) the folder holds from its first moment.
    pub files: &'a [(&'a str, &'a [u8])],
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

/// Create a task folder with `.state` (and `.origin`, `TASK.md`, copied reports, the
/// caller's `files` where asked). Refuses a folder that already exists.
pub fn create_task(project: &Path, task: &NewTask<'_>) -> Result<PathBuf, TaskError> {
    let dir = project.join(task.rel);
    let parent = dir.parent().unwrap_or(project).to_path_buf();
    let create_error = |source| TaskError::Create {
        path: parent.display().to_string(),
        source,
    };
    // The folder appears whole or not at all: it is built under a temporary name beside its
    // place (dot-named, so discovery skips it) and renamed into place once every file is in,
    // so the files in it are written plainly. It is made as open as `mkdir` makes a folder
    // (the umask applies).
    let staging = || {
        tempfile::Builder::new()
            .prefix(crate::fsx::TEMP_PREFIX)
            .permissions(fs::Permissions::from_mode(0o777))
            .tempdir_in(&parent)
    };
    // The folder above usually exists: made only when the staging folder cannot be.
    let tmp = match staging() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(&parent).map_err(create_error)?;
            staging()
        }
        other => other,
    }
    .map_err(create_error)?;
    let sync = !task.rebuildable || crate::fsx::full_durability();
    fill_task(tmp.path(), &dir, task, sync)?;
    if sync {
        fs::File::open(tmp.path())
            .and_then(|d| d.sync_all())
            .map_err(create_error)?;
    }
    let staged = tmp.keep();
    let refused = |staged: &Path| {
        let _ = fs::remove_dir_all(staged);
        TaskError::Exists(task.rel.to_string())
    };
    match rustix::fs::renameat_with(
        rustix::fs::CWD,
        &staged,
        rustix::fs::CWD,
        &dir,
        rustix::fs::RenameFlags::NOREPLACE,
    ) {
        Ok(()) => {}
        Err(rustix::io::Errno::EXIST) | Err(rustix::io::Errno::NOTEMPTY) => {
            return Err(refused(&staged));
        }
        Err(rustix::io::Errno::INVAL) | Err(rustix::io::Errno::NOSYS) => {
            // No RENAME_NOREPLACE on this filesystem: a plain rename would replace an empty
            // folder, so an existing one is refused first.
            if dir.exists() {
                return Err(refused(&staged));
            }
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
    if sync && let Ok(d) = fs::File::open(&parent) {
        let _ = d.sync_all();
    }
    Ok(dir)
}

/// Write a file that does not exist yet (readable by all, as a shell's `>` makes it).
fn write_new(path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
    use std::io::Write;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(path)?;
    f.write_all(bytes)?;
    if sync {
        f.sync_all()?;
    }
    Ok(())
}

/// Write the files of a new task into `staging`, the folder that becomes `dir` (which errors
/// name); each fsynced when `sync`.
fn fill_task(staging: &Path, dir: &Path, task: &NewTask<'_>, sync: bool) -> Result<(), TaskError> {
    let put = |name: &str, bytes: &[u8]| {
        write_new(&staging.join(name), bytes, sync).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot write {}: {e}", dir.join(name).display()),
            )
        })
    };
    let mut origin = OriginFile {
        start: task.start.word().to_string(),
        ..OriginFile::default()
    };
    if let Some((from_rel, from_dir, files)) = task.copy_from {
        origin.from = Some(from_rel.to_string());
        for file in files {
            if let Ok(bytes) = crate::fsx::read(from_dir.join(file)) {
                put(file, &bytes)?;
                origin
                    .inherited
                    .insert(file.to_string(), snapshot::content_hash(&bytes));
            }
        }
    }
    if let Some(desc) = task.description {
        put(TASK_FILE, format!("# Task\n\n{}\n", desc.trim()).as_bytes())?;
    }
    for (name, bytes) in task.files {
        put(name, bytes)?;
    }
    if task.start != State::NEW || origin.from.is_some() {
        put(ORIGIN_FILE, origin_text(&origin)?.as_bytes())?;
    }
    put(STATE_FILE, state_text(task.start).as_bytes())?;
    Ok(())
}
