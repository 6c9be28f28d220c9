//! Adding an area (e.g. `tests/reliability.rs`): move it to `tests/it/reliability.rs`, add
//! `mod reliability;` below, and replace `mod common; use common::…` with `use crate::harness::…`
//! (`Test` for new checks). A top-level tests/*.rs would never run: Cargo.toml has `autotests = false`.
//!
//! automaton's integration tests: one binary, one module per area, one harness.
//!
//! Run one area with `cargo test --test it status::`. A test builds its fixture project and
//! runs the real binary through `harness::Test` (as just's test builder does):
//!
//! ```ignore
//! let p = Test::new()
//!     .write("tasks/a/SPEC.md", "x")          // fixture files; .config(..), .agent_md(..)
//!     .args(["status"])                       // `--project <tmp>` and a private HOME are added
//!     .stdout("**Task: tasks/a**\n...")       // exact by default, after normalisation
//!     .run();                                 // checks exit status (0 unless `.status(n)`)
//! assert_eq!(p.read("tasks/a/.state"), ...); // the project lives on for file checks
//! p.orchestrate().behavior("referee=fail").status(10).stdout_any().stderr_any().run();
//! ```
//!
//! stdout and stderr are compared exactly (empty unless told otherwise) after the project
//! folder becomes `[PROJECT]`, the home `[HOME]`, the repository `[REPO]` and durations
//! `[ELAPSED]`; `*_contains`/`*_regex`/`*_any` opt out only where output truly varies (parallel
//! sub-tasks' interleaving, pids). User-facing reports are insta snapshots in `snapshots/`
//! (`INSTA_UPDATE=always cargo test --test it` writes new ones; review and commit them).
//! `p.orchestrate()` runs the scripted agent tests/agents/agent.sh; `.agent_log()` makes it
//! record its runs, read back with `p.records()`. Never assert a wall-clock bound: use the
//! recorded order of events, or `harness::PATIENCE` for waits.

mod harness;

mod adapters;
mod agent_adapters;
mod agent_runner;
mod budgets;
mod containment;
mod decomposition;
mod detect_vram;
mod dry_run;
mod endings;
mod engines;
mod errors;
mod executors;
mod failfast;
mod faults;
mod first_hour;
mod gates;
mod git_kills;
mod graph;
mod help_pages;
mod isolation;
mod isolation_clean;
mod isolation_extras;
mod lock;
mod logs;
mod nesting;
mod orchestrate;
mod parsers;
mod perf_index;
mod questions;
mod readme;
mod recipes;
mod reliability;
mod reports;
mod rework;
mod sandbox;
mod split_merge_gates;
mod state_table;
mod status;
mod supervisor;
mod truths;
mod waits;
mod walk;
mod watch;
