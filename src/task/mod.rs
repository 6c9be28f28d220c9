//! Task folders: names, discovery, snapshots, and creating new ones.

pub mod fix;
pub mod frozen;
pub mod gates;
pub mod index;
pub mod readiness;
pub mod snapshot;
pub mod tree;
mod walk;

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
    /// again if a power cut lost it: neither its files nor its new entry are fsynced here (the caller has the
    /// folder above synced once for all it made, see [`crate::fsx::sync_path`]).
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
    /// Writing a file of the new task failed (the error names the file).
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A new folder holds every file from its first moment, with the modes `mkdir` and a
    /// shell's `>` would give; a second one of the same name is refused, and neither leaves a
    /// staging folder behind.
    #[test]
    fn a_task_folder_appears_whole_and_only_once() {
        let project = tempfile::tempdir().unwrap();
        let task = NewTask {
            rel: "tasks/p/subtasks/s1",
            start: State::NEW,
            description: Some("do it"),
            copy_from: None,
            rebuildable: true,
            files: &[("PARENT_SPEC.md", b"scope\n")],
        };
        let dir = create_task(project.path(), &task).unwrap();
        let read = |name: &str| fs::read_to_string(dir.join(name)).unwrap();
        assert_eq!(read(".state"), "new\n");
        assert_eq!(read("TASK.md"), "# Task\n\ndo it\n");
        assert_eq!(read("PARENT_SPEC.md"), "scope\n");
        // Read, not swapped: the other tests make files meanwhile.
        let status = fs::read_to_string("/proc/self/status").unwrap();
        let umask = status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .map(|v| u32::from_str_radix(v.trim(), 8).unwrap())
            .unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o777 & !umask);
        assert_eq!(mode(&dir.join("TASK.md")), 0o644 & !umask);
        assert!(matches!(
            create_task(project.path(), &task),
            Err(TaskError::Exists(_))
        ));
        let names: Vec<_> = fs::read_dir(dir.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["s1"], "nothing but the task");
    }
}
