//! The on-disk formats automaton owns, each a versioned serde struct or a documented line
//! format, read and written in one place: the run journal, the task control files (`.state`,
//! `.stop`, `.origin`), the approvals and inputs of gates and staleness, the project lock file,
//! the VRAM cache, the running agent's pid record and how a phase's agent ended; and `files`, the
//! one table of every file automaton reads or writes and whether it belongs in git. A leaf layer: it knows files, not what the orchestrator decides with
//! them.

pub mod agent_exit;
pub mod agent_pid;
pub mod approvals;
pub mod files;
pub mod frozen;
pub mod inputs;
pub mod isolation;
pub mod journal;
pub mod lock;
pub mod rework;
pub mod task_files;
pub mod vram_cache;
