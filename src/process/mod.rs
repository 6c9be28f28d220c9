//! The one supervisor of every child automaton starts: agents, verify commands and the VRAM
//! detection script.
//!
//! - Each child leads its own process group, so the terminal's Ctrl-C does not reach it
//!   directly and a stop reaches all of it: TERM to the whole group, a grace period, then
//!   KILL ([`Group::stop`]). A member still alive after the KILL is reported
//!   ([`Group::leftovers`]). A member that calls `setsid`/`setpgid` itself escapes the group
//!   and is out of reach (documented limitation).
//! - Event-driven: [`Group::wait`] blocks in `poll(2)` on the leader's pidfd, the output pipes
//!   (teed into the log for agents and verify commands) and the signal policy's wake pipe, with
//!   the nearest deadline as its timeout. Nothing sleeps on a clock; the one fallback tick is for
//!   a cancel flag that is not the signal policy's (callers that pass their own `AtomicBool`).
//! - One signal policy for automaton itself ([`signals`]): SIGINT, SIGTERM and SIGHUP stop
//!   every child group alike; a second signal kills them at once and exits with 130.
//! - Every agent runs under a watchdog ([`shim`]) that leads its group and outlives automaton
//!   only long enough to stop it: this binary executed again, one per agent.
//! - A sandboxed agent (`Sandbox: bwrap`) starts under [`sandbox_init`] inside bubblewrap: it
//!   drops the environment the agent may not see and bridges the model's network in.

pub mod group;
pub mod procfs;
pub mod sandbox_init;
pub mod shim;
pub mod signals;

pub use group::{Event, Group, Leftover, Options, Output};
