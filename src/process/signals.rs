//! The one signal policy of automaton itself.
//!
//! - **Stop** (SIGINT, SIGTERM, SIGHUP, SIGQUIT). The first signal sets the cancel flag and
//!   makes the wake pipe readable. Every supervised child group polls that pipe, so each
//!   runner learns of the stop from the kernel at once (no tick), stops its group (TERM,
//!   grace, KILL) and returns; the caller then exits with [`crate::exit::INTERRUPTED`] (130).
//!   In a command that did not opt into graceful stopping (`detect-vram`:
//!   [`install_for_children`]), a first signal while no child group runs exits with 130 at
//!   once. A second signal means "stop now": every registered child group is SIGKILLed and
//!   the process exits with 130 without unwinding.
//! - **Job control** (SIGTSTP, the terminal's Ctrl-Z). Agents lead process groups of their own,
//!   so the terminal's Ctrl-Z reaches automaton only. automaton passes it on: every registered
//!   group gets SIGSTOP, then automaton stops itself. When the shell's `fg` (or `bg`) sends
//!   SIGCONT, automaton continues where it stopped and sends SIGCONT to the groups. The time
//!   spent stopped is counted ([`paused`]) and the phase, stall and total-time clocks leave it
//!   out ([`now_unpaused`]), so `fg` never turns straight into a timeout.
//!
//! The signals are received by a dedicated thread (`signal_hook::iterator`): nothing here runs
//! in a signal handler, so the registry of groups can be a plain locked map.

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::pipe::{PipeFlags, pipe_with};
use rustix::process::{Pid, Signal};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP};
use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

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
/// The first stop signal received (0: none yet), stored before the cancel flag is set, so a
/// runner that sees the flag can name the signal.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The first stop signal automaton received, if one did.
pub fn stop_signal() -> Option<i32> {
    Some(RECEIVED.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// A stop signal as a person knows it: `SIGINT (Ctrl-C)`, `SIGTERM`, `SIGHUP (the terminal
/// closed)`, `SIGQUIT (Ctrl-\)`; another number as `signal N`.
pub fn describe(sig: i32) -> String {
    match sig {
        SIGINT => "SIGINT (Ctrl-C)".into(),
        SIGTERM => "SIGTERM".into(),
        SIGHUP => "SIGHUP (the terminal closed)".into(),
        SIGQUIT => "SIGQUIT (Ctrl-\\)".into(),
        n => format!("signal {n}"),
    }
}

/// Why the run stopped, naming the signal: `interrupted by SIGINT (Ctrl-C)` (`interrupted`
/// when the cancel flag was set without one).
pub fn interrupted_by() -> String {
    match stop_signal() {
        Some(sig) => format!("interrupted by {}", describe(sig)),
        None => "interrupted".into(),
    }
}

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
    eprintln!("{}: {what}", interrupted_by());
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
    signals.add_signal(SIGTSTP)?;
    let thread_flag = Arc::clone(&flag);
    std::thread::Builder::new()
        .name("automaton-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                if sig == SIGTSTP {
                    suspend();
                } else {
                    on_stop_signal(sig, &thread_flag, &wake_write);
                }
            }
        })?;
    Ok(POLICY.get_or_init(|| Policy { flag, wake_read }))
}

fn on_stop_signal(sig: i32, flag: &AtomicBool, wake_write: &OwnedFd) {
    // The first signal is the one named; a second one exits at once.
    let _ = RECEIVED.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    if flag.swap(true, Ordering::SeqCst) {
        // The second signal: stop now.
        signal_registered_groups(Signal::KILL);
        signal_hook::low_level::exit(i32::from(crate::exit::INTERRUPTED));
    }
    // A full pipe (it never is: one byte per run) or any error changes nothing: the flag is set.
    let _ = rustix::io::write(wake_write, &[1]);
    if !GRACEFUL.load(Ordering::SeqCst) && groups().is_empty() {
        signal_hook::low_level::exit(i32::from(crate::exit::INTERRUPTED));
    }
}

/// Ctrl-Z: stop every child group, then automaton itself; once continued, continue the groups.
/// The registry stays locked throughout, so no group starts or ends half-way through; the
/// pause is counted from before the first group stops to after the last one continues.
fn suspend() {
    let pause_began = Instant::now();
    pause().1 = Some(pause_began);
    {
        let groups = groups();
        for &pgid in groups.values() {
            signal_group(pgid, Signal::STOP);
        }
        // The live progress line is redrawn whole at the next update: clear it, so the
        // shell's "Stopped" line starts on a clean line. Nothing else of the terminal changes
        // (automaton never sets its modes).
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            let _ = rustix::io::write(std::io::stderr(), b"\r\x1b[2K");
        }
        // raise(3) sends SIGSTOP to this very thread, which then stops before it returns (with
        // every other thread): sent to the process, the stop could be taken by another thread
        // while this one ran on and continued the groups at once.
        let _ = signal_hook::low_level::raise(signal_hook::consts::SIGSTOP);
        // Here again after SIGCONT.
        for &pgid in groups.values() {
            signal_group(pgid, Signal::CONT);
        }
    }
    let mut p = pause();
    p.0 += pause_began.elapsed();
    p.1 = None;
}

/// The time automaton spent stopped, and since when it is stopped now (if it is).
static PAUSE: Mutex<(Duration, Option<Instant>)> = Mutex::new((Duration::ZERO, None));

fn pause() -> MutexGuard<'static, (Duration, Option<Instant>)> {
    PAUSE.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long automaton has been stopped by job control (Ctrl-Z until `fg`) since it started,
/// a stop still being undone included: a thread that wakes right after SIGCONT, before the
/// signal thread has counted the pause, already sees it.
pub fn paused() -> Duration {
    paused_at(*pause(), Instant::now())
}

/// The pause so far, at `now`: the pauses done, and the one since `.1` if it goes on.
fn paused_at((done, since): (Duration, Option<Instant>), now: Instant) -> Duration {
    done + since.map_or(Duration::ZERO, |t| now.saturating_duration_since(t))
}

/// The clock every cap is measured on: `Instant::now()` less the time spent stopped
/// ([`paused`]). A deadline set on this clock does not move while automaton runs, and
/// moves later by exactly the pause when it was stopped.
pub fn now_unpaused() -> Instant {
    let now = Instant::now();
    now.checked_sub(paused()).unwrap_or(now)
}

/// `at` (on the [`now_unpaused`] clock) as a real instant, for a `poll` timeout: a deadline
/// `at` on the paused clock is reached when the real clock is `paused()` later.
pub fn real_instant(at: Instant) -> Instant {
    at.checked_add(paused()).unwrap_or(at)
}

/// Process groups of running children, for job control and the forced exit of a second
/// signal: every group, however many run at once. Keyed by a token, so that a group id the
/// kernel reuses is never unregistered by its predecessor's owner.
fn groups() -> MutexGuard<'static, BTreeMap<usize, i32>> {
    static GROUPS: Mutex<BTreeMap<usize, i32>> = Mutex::new(BTreeMap::new());
    GROUPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Record a running child group; returns the token for [`unregister_group`] (always `Some`).
pub(crate) fn register_group(pgid: i32) -> Option<usize> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
    let token = NEXT.fetch_add(1, Ordering::Relaxed);
    groups().insert(token, pgid);
    Some(token)
}

pub(crate) fn unregister_group(token: usize) {
    groups().remove(&token);
}

fn signal_registered_groups(sig: Signal) {
    for &pgid in groups().values() {
        signal_group(pgid, sig);
    }
}

fn signal_group(pgid: i32, sig: Signal) {
    if let Some(pgid) = Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pgid, sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_group_is_kept_however_many() {
        let tokens: Vec<usize> = (0..200)
            .map(|i| register_group(1_000_000 + i).unwrap())
            .collect();
        assert!(groups().len() >= 200);
        for t in &tokens {
            unregister_group(*t);
        }
        assert!(!groups().values().any(|&p| p >= 1_000_000), "unregistered");
    }

    #[test]
    fn each_stop_signal_is_named_as_a_person_knows_it() {
        assert_eq!(describe(SIGINT), "SIGINT (Ctrl-C)");
        assert_eq!(describe(SIGTERM), "SIGTERM");
        assert_eq!(describe(SIGHUP), "SIGHUP (the terminal closed)");
        assert_eq!(describe(SIGQUIT), "SIGQUIT (Ctrl-\\)");
        assert_eq!(describe(64), "signal 64");
        // No signal arrived in this test process.
        assert_eq!(stop_signal(), None);
        assert_eq!(interrupted_by(), "interrupted");
    }

    #[test]
    fn a_pause_counts_while_it_goes_on_and_once_done() {
        let t0 = Instant::now();
        let secs = Duration::from_secs;
        assert_eq!(paused_at((secs(2), None), t0 + secs(9)), secs(2));
        assert_eq!(paused_at((secs(2), Some(t0)), t0 + secs(3)), secs(5));
        assert_eq!(
            paused_at((Duration::ZERO, Some(t0 + secs(1))), t0),
            Duration::ZERO
        );
        // No pause yet: the paused clock is the real one.
        assert_eq!(paused(), Duration::ZERO);
        let at = now_unpaused() + secs(1);
        assert_eq!(real_instant(at), at);
    }
}
