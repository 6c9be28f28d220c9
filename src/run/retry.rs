//! Waiting between attempts of a failed phase: the backoff [`crate::plan::decide::retry`] chose,
//! cut short by Ctrl-C / SIGTERM / SIGHUP (the signal policy's wake pipe, no tick) and by the
//! run's total-time deadline.

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Wait `wait`, at most until `deadline`. Returns `false` when a stop signal cut it short.
/// Both run on the clock that stands still while automaton is stopped by job control.
pub fn backoff(wait: Duration, deadline: Instant, cancel: &AtomicBool) -> bool {
    use crate::process::signals::{now_unpaused, real_instant};
    let until = now_unpaused()
        .checked_add(wait)
        .map_or(deadline, |t| t.min(deadline));
    let wake = crate::process::signals::is_policy_flag(cancel)
        .then(crate::process::signals::wake_fd)
        .flatten();
    loop {
        if cancel.load(Ordering::SeqCst) {
            return false;
        }
        let left = real_instant(until).saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        match wake {
            Some(fd) => {
                let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::IN)];
                let ts = Timespec {
                    tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                    tv_nsec: left.subsec_nanos().into(),
                };
                let _ = poll(&mut fds, Some(&ts));
            }
            // A cancel flag without a wake-up (library callers): look at it now and then.
            None => std::thread::sleep(left.min(Duration::from_millis(50))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_then_returns_and_a_set_flag_cuts_it_short() {
        let flag = AtomicBool::new(false);
        let t = Instant::now();
        assert!(backoff(
            Duration::from_millis(120),
            t + Duration::from_secs(9),
            &flag
        ));
        assert!(t.elapsed() >= Duration::from_millis(120));
        // The deadline comes first.
        let t = Instant::now();
        assert!(backoff(
            Duration::from_secs(9),
            t + Duration::from_millis(80),
            &flag
        ));
        assert!(t.elapsed() < Duration::from_secs(5));
        flag.store(true, Ordering::SeqCst);
        let t = Instant::now();
        assert!(!backoff(
            Duration::from_secs(9),
            t + Duration::from_secs(9),
            &flag
        ));
        assert!(t.elapsed() < Duration::from_secs(1));
    }
}
