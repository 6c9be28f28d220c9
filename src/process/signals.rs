//! The one signal policy of automaton itself: SIGINT, SIGTERM and SIGHUP all mean "stop".
//!
//! - The first signal sets the cancel flag and makes the wake pipe readable. Every supervised
//!   child group polls that pipe, so each runner learns of the stop from the kernel at once
//!   (no tick), stops its group (TERM, grace, KILL) and returns; the caller then exits with
//!   [`crate::exit::INTERRUPTED`] (130). In a command that did not opt into graceful stopping
//!   (`detect-vram`: [`install_for_children`]), a first signal while no child group runs exits
//!   with 130 at once.
//! - A second signal means "stop now": every registered child group is SIGKILLed and the
//!   process exits with 130 without unwinding.
//!
//! The signals are received by a dedicated thread (`signal_hook::iterator`), not acted on in
//! the handler itself: the async-signal-safe part lives in signal-hook, and nothing here runs
//! in a handler.

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::pipe::{PipeFlags, pipe_with};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The signals that stop automaton, handled alike. SIGQUIT too: its default action would end
/// automaton without stopping its agents (and a shell starts background jobs with it ignored).
pub const STOP_SIGNALS: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

struct Policy {
    flag: Arc<AtomicBool>,
    /// Readable once a stop signal arrived (nothing ever reads it, so it stays readable for
    /// every poller).
    wake_read: OwnedFd,
}

static POLICY: OnceLock<Policy> = OnceLock::new();
static INIT: Mutex<()> = Mutex::new(());
/// Set by [`install`]: the caller checks the flag and winds down by itself.
static GRACEFUL: AtomicBool = AtomicBool::new(false);

/// Install the policy for a command that stops gracefully (`orchestrate`) and return the
/// cancel flag to hand to the runners. Idempotent: every call returns the same flag.
pub fn install() -> io::Result<Arc<AtomicBool>> {
    let policy = policy()?;
    GRACEFUL.store(true, Ordering::SeqCst);
    Ok(Arc::clone(&policy.flag))
}

/// Install the policy for a command that only needs its children stopped (a first signal with
/// no child running exits with 130 at once). Returns the cancel flag. Idempotent.
pub fn install_for_children() -> io::Result<Arc<AtomicBool>> {
    Ok(Arc::clone(&policy()?.flag))
}

/// Whether `flag` is the policy's cancel flag (whose changes come with a wake-up).
pub fn is_policy_flag(flag: &AtomicBool) -> bool {
    POLICY
        .get()
        .is_some_and(|p| std::ptr::eq(Arc::as_ptr(&p.flag), flag))
}

/// The descriptor that becomes readable when a stop signal arrives (none before [`install`]).
pub fn wake_fd() -> Option<BorrowedFd<'static>> {
    POLICY.get().map(|p| p.wake_read.as_fd())
}

/// Print why and exit with [`crate::exit::INTERRUPTED`]: for runners outside `orchestrate`,
/// after they stopped their child group.
pub fn exit_interrupted(what: &str) -> ! {
    eprintln!("interrupted: {what}");
    crate::fsx::wait_background_syncs();
    std::process::exit(i32::from(crate::exit::INTERRUPTED))
}

fn policy() -> io::Result<&'static Policy> {
    if let Some(p) = POLICY.get() {
        return Ok(p);
    }
    let _init = INIT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = POLICY.get() {
        return Ok(p);
    }
    let (wake_read, wake_write) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
    let flag = Arc::new(AtomicBool::new(false));
    let mut signals = signal_hook::iterator::Signals::new(STOP_SIGNALS)?;
    let thread_flag = Arc::clone(&flag);
    std::thread::Builder::new()
        .name("automaton-signals".into())
        .spawn(move || {
            for _sig in signals.forever() {
                on_signal(&thread_flag, &wake_write);
            }
        })?;
    Ok(POLICY.get_or_init(|| Policy { flag, wake_read }))
}

fn on_signal(flag: &AtomicBool, wake_write: &OwnedFd) {
    if flag.swap(true, Ordering::SeqCst) {
        // The second signal: stop now.
        kill_registered_groups();
        signal_hook::low_level::exit(i32::from(crate::exit::INTERRUPTED));
    }
    // A full pipe (it never is: one byte per run) or any error changes nothing: the flag is set.
    let _ = rustix::io::write(wake_write, &[1]);
    if !GRACEFUL.load(Ordering::SeqCst) && registered_groups() == 0 {
        signal_hook::low_level::exit(i32::from(crate::exit::INTERRUPTED));
    }
}

/// Process groups of running children, for the forced exit of a second signal. Zero is a free
/// slot; more children than slots still run, they are just not force-killed there.
static ACTIVE_GROUPS: [AtomicI32; 64] = [const { AtomicI32::new(0) }; 64];

/// Record a running child group; returns its slot for [`unregister_group`].
pub(crate) fn register_group(pgid: i32) -> Option<usize> {
    ACTIVE_GROUPS.iter().position(|slot| {
        slot.compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    })
}

pub(crate) fn unregister_group(slot: usize) {
    ACTIVE_GROUPS[slot].store(0, Ordering::SeqCst);
}

fn registered_groups() -> usize {
    ACTIVE_GROUPS
        .iter()
        .filter(|s| s.load(Ordering::SeqCst) > 0)
        .count()
}

fn kill_registered_groups() {
    for slot in &ACTIVE_GROUPS {
        if let Some(pgid) = rustix::process::Pid::from_raw(slot.load(Ordering::SeqCst)) {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
    }
}
