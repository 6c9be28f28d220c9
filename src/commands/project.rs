//! Which folder is the project: `--project DIR` / `-C DIR` when given, else the nearest folder
//! upward from the working directory that holds `.automaton/` or `tasks/` (as cargo looks for
//! `Cargo.toml`). A folder inside a task folder is never a project, and the global settings
//! folder (`~/.automaton`) does not make the home folder one.

use std::path::{Path, PathBuf};

/// How the project root was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// `--project DIR` / `-C DIR`.
    Flag,
    /// The nearest project folder at or above the working directory.
    Discovered,
    /// No project anywhere upward: the working directory, which holds none.
    Nowhere,
}

/// The project root (absolute) and how it was found.
pub fn locate(flag: Option<&Path>) -> super::Result<(PathBuf, Found)> {
    if let Some(dir) = flag {
        return Ok((std::path::absolute(dir)?, Found::Flag));
    }
    let cwd = std::env::current_dir()?;
    let home = crate::settings::home_dir().map(|h| std::path::absolute(&h).unwrap_or(h));
    Ok(match discover(&cwd, home.as_deref()) {
        Some(dir) => (dir, Found::Discovered),
        None => (cwd, Found::Nowhere),
    })
}

/// The nearest folder at or above `start` that is a project: it holds a `tasks/` folder, or
/// an `.automaton/` folder that is not the global settings folder `home`. Folders inside a
/// task folder, and `.automaton/` itself (which holds `tasks/` too), are skipped.
pub fn discover(start: &Path, home: Option<&Path>) -> Option<PathBuf> {
    start
        .ancestors()
        .filter(|dir| dir.file_name().is_none_or(|n| n != ".automaton"))
        .filter(|dir| inside_task_folder(dir).is_none())
        .find(|dir| {
            let dot = dir.join(".automaton");
            dir.join("tasks").is_dir() || (dot.is_dir() && home != Some(dot.as_path()))
        })
        .map(Path::to_path_buf)
}

/// The outermost task folder `dir` is in (or is), if any: a folder directly under
/// `.automaton/tasks/`, or directly under a `tasks/` folder when it holds a `.state` or
/// `TASK.md` or the folder above `tasks/` holds `.automaton/` (so `~/work/tasks/myproj/`,
/// a project in a folder that happens to be called `tasks`, is not one).
pub fn inside_task_folder(dir: &Path) -> Option<PathBuf> {
    let is_task = |a: &Path| {
        let Some(parent) = a.parent() else {
            return false;
        };
        let Some(grand) = parent.parent() else {
            return false;
        };
        parent.file_name().is_some_and(|n| n == "tasks")
            && (grand.file_name().is_some_and(|n| n == ".automaton")
                || grand.join(".automaton").is_dir()
                || a.join(crate::store::task_files::STATE_FILE).is_file()
                || a.join(crate::task::TASK_FILE).is_file())
    };
    dir.ancestors()
        .filter(|a| is_task(a))
        .last()
        .map(Path::to_path_buf)
}

/// `orchestrate "…"` creates tasks: refuse where that would make a project nobody asked for
/// (no project found upward) or put one inside a task folder.
pub fn check_may_create(project: &Path, found: Found) -> super::Result<()> {
    if let Some(task) = inside_task_folder(project) {
        return Err(super::Error::NoProjectHere(format!(
            "{} is inside the task folder {}: a project cannot live in a task; run automaton \
                 from the project root, or name it with --project DIR",
            project.display(),
            task.display()
        )));
    }
    if found == Found::Nowhere {
        return Err(super::Error::NoProjectHere(format!(
            "no automaton project here: neither {} nor any folder above it holds .automaton/ \
                 or tasks/. Set one up with `automaton init` (or make this folder the project \
                 with `automaton --project . orchestrate \"…\"`)",
            project.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_nearest_project_and_skips_task_folders_and_home() {
        let root = tempfile::tempdir().unwrap();
        let p = root.path().join("proj");
        for d in [
            ".automaton/tasks/a/sub",
            "tasks/b/subtasks/c/.automaton",
            "tasks/b/subtasks/c/tasks",
            "src/deep",
        ] {
            std::fs::create_dir_all(p.join(d)).unwrap();
        }
        assert_eq!(discover(&p.join("src/deep"), None), Some(p.clone()));
        assert_eq!(
            discover(&p.join(".automaton/tasks/a/sub"), None),
            Some(p.clone())
        );
        assert_eq!(
            discover(&p.join("tasks/b/subtasks/c"), None),
            Some(p.clone())
        );
        assert_eq!(
            inside_task_folder(&p.join("tasks/b/subtasks/c")),
            Some(p.join("tasks/b"))
        );
        // A project in a folder that is merely called `tasks`.
        let other = root.path().join("work/tasks/other");
        std::fs::create_dir_all(other.join(".automaton/tasks")).unwrap();
        assert_eq!(inside_task_folder(&other), None);
        assert_eq!(discover(&other, None), Some(other.clone()));
        assert_eq!(inside_task_folder(&p.join("src/deep")), None);
        // The global settings folder does not make its parent a project.
        let home = root.path().join("home");
        std::fs::create_dir_all(home.join(".automaton")).unwrap();
        std::fs::create_dir_all(home.join("code")).unwrap();
        let dot = home.join(".automaton");
        assert_eq!(discover(&home.join("code"), Some(&dot)), None);
    }
}
