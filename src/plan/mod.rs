//! The planner: pure decisions from what was read; no I/O, no clock reads, no processes. The
//! run layer reads a task, asks, and does what the answer says.
//!
//! - [`decide`]: a task's next action ([`decide::next_action`]), whether a failed phase is
//!   retried ([`decide::retry`]), how a phase's end is judged ([`decide::judge_phase`]), the
//!   stops and their exit codes ([`decide::StopKind`]), budgets;
//! - [`fit`]: whether a phase's context fits the local engine's window;
//! - [`gate`]: what an approval gate stands before (a phase, the sub-tasks, the merge);
//! - [`rework`]: whether a failed review or check goes back to implement for another round;
//! - [`waves`]: which sub-tasks of a plan may start, and why the others wait.

pub mod decide;
pub mod fit;
pub mod gate;
pub mod rework;
pub mod waves;
