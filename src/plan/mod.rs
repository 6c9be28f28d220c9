//! The planner: pure decisions from what was read, no I/O, no clock reads, no processes.
//! [`waves`] says which sub-tasks of a plan may start and why the others wait.

pub mod waves;
