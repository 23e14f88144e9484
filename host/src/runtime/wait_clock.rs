//! Time a call spends waiting for the client (a user filling in a form, a
//! model sampling), which the call's deadline does not count.

use parking_lot::Mutex;
use std::time::{Duration, Instant};

/// How long a call has waited for the client so far.
#[derive(Default)]
pub(super) struct WaitClock {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Questions waiting now, and since when the first of them waits.
    waiting: usize,
    since: Option<Instant>,
    /// Time spent waiting by questions already answered.
    waited: Duration,
}

impl WaitClock {
    fn state(&self) -> parking_lot::MutexGuard<'_, State> {
        self.state.lock()
    }

    /// A question went out; the clock runs until the guard drops.
    pub(super) fn wait(&self) -> Waiting<'_> {
        let mut state = self.state();
        if state.waiting == 0 {
            state.since = Some(Instant::now());
        }
        state.waiting += 1;
        Waiting(self)
    }

    /// Whether a question is waiting now, and the time waited so far.
    pub(super) fn waited(&self) -> (bool, Duration) {
        let state = self.state();
        let running = state.since.map_or(Duration::ZERO, |s| s.elapsed());
        (state.waiting > 0, state.waited + running)
    }
}

/// Stops the clock when the answer came (or the question was abandoned).
pub(super) struct Waiting<'a>(&'a WaitClock);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.waiting -= 1;
        if state.waiting == 0 {
            if let Some(since) = state.since.take() {
                state.waited += since.elapsed();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_time_waited_once_even_for_overlapping_questions() {
        let clock = WaitClock::default();
        assert_eq!(clock.waited(), (false, Duration::ZERO));
        {
            let _a = clock.wait();
            let _b = clock.wait();
            std::thread::sleep(Duration::from_millis(20));
            assert!(clock.waited().0);
        }
        let (waiting, waited) = clock.waited();
        assert!(!waiting);
        assert!(waited >= Duration::from_millis(20) && waited < Duration::from_secs(5));
    }
}
