//! The epoch ticker: advances the engines' epochs, which is what makes
//! running plugin code yield (every store's deadline is the next epoch),
//! so that call deadlines, cancellation and fairness can take effect.
//!
//! Plugin code runs only while a plugin's future is polled
//! ([`super::blocking::InPool`]), and each such poll holds a [`Running`].
//! The ticker ticks while any is held and for [`REST_AFTER`] ticks after
//! the last one, then rests (parked) until the next poll starts: an idle
//! host wakes no thread for it, and under steady load it never rests, so
//! a call pays nothing to wake it. A poll that starts while it rests
//! wakes it before any plugin code runs; its first tick comes one
//! [`EPOCH_TICK`] later, as it would for a store made at any moment.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::Duration;
use wasmtime::Engine;

/// How often the epoch advances; the granularity of deadlines and of the
/// cooperative yields that keep a busy plugin from starving other tasks.
pub(super) const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Ticks in a row with no plugin code running after which the ticker
/// rests (one second).
const REST_AFTER: u32 = 200;

/// The ticker, shared by every tier and every plugin's pool.
#[derive(Default)]
pub(super) struct Ticker {
    /// Polls of plugin code under way.
    running: AtomicUsize,
    /// Whether a poll started since the ticker last looked.
    started: AtomicBool,
    /// The engines whose epochs it advances (a tier built on demand joins
    /// them: [`Ticker::add`]).
    engines: parking_lot::Mutex<Vec<Engine>>,
    /// The ticker's thread, once started.
    thread: OnceLock<Thread>,
    stop: AtomicBool,
    /// Ticks so far (for tests and the curious).
    ticks: AtomicU64,
    /// Whether it rests now.
    resting: AtomicBool,
}

/// Held while plugin code may run: the ticker ticks.
pub(super) struct Running<'a>(&'a Ticker);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Ticker {
    /// A ticker that does not tick yet ([`Ticker::start`]).
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Ticker::default())
    }

    /// Starts the thread that advances `engines`' epochs; it ends when
    /// [`Ticker::stop`] is called.
    pub(super) fn start(self: &Arc<Self>, engines: Vec<Engine>) -> std::io::Result<()> {
        self.engines.lock().extend(engines);
        let this = self.clone();
        let handle = std::thread::Builder::new()
            .name("epoch-ticker".into())
            .spawn(move || this.tick())?;
        let _ = self.thread.set(handle.thread().clone());
        // A poll that began before the handle was set did not wake it.
        handle.thread().unpark();
        Ok(())
    }

    /// Advances `engine`'s epoch too, from the next tick on. Call it before
    /// any store of `engine` runs code.
    pub(super) fn add(&self, engine: Engine) {
        self.engines.lock().push(engine);
    }

    /// Ends the thread (at its next tick or wake-up).
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.get() {
            thread.unpark();
        }
    }

    /// Marks plugin code as (possibly) running until the guard is dropped,
    /// waking the ticker if it rests.
    pub(super) fn running(&self) -> Running<'_> {
        if self.running.fetch_add(1, Ordering::SeqCst) == 0 {
            self.started.store(true, Ordering::SeqCst);
            // The ticker looks at `running` before it parks, and an unpark
            // that comes first makes its park return at once: no poll is
            // left without ticks.
            if let Some(thread) = self.thread.get() {
                thread.unpark();
            }
        }
        Running(self)
    }

    fn tick(&self) {
        let mut quiet = 0;
        while !self.stop.load(Ordering::SeqCst) {
            std::thread::sleep(EPOCH_TICK);
            for engine in self.engines.lock().iter() {
                engine.increment_epoch();
            }
            self.ticks.fetch_add(1, Ordering::Relaxed);
            let busy = self.started.swap(false, Ordering::SeqCst)
                || self.running.load(Ordering::SeqCst) > 0;
            quiet = if busy { 0 } else { quiet + 1 };
            if quiet >= REST_AFTER {
                self.resting.store(true, Ordering::SeqCst);
                if self.running.load(Ordering::SeqCst) == 0 && !self.stop.load(Ordering::SeqCst) {
                    std::thread::park();
                }
                self.resting.store(false, Ordering::SeqCst);
                quiet = 0;
            }
        }
    }

    /// Ticks so far.
    #[cfg(test)]
    pub(super) fn ticks(&self) -> u64 {
        self.ticks.load(Ordering::Relaxed)
    }

    /// Whether the ticker rests now.
    #[cfg(test)]
    pub(super) fn resting(&self) -> bool {
        self.resting.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "not within 10 s: {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn it_rests_when_no_plugin_code_runs_and_wakes_for_the_next() {
        let ticker = Ticker::new();
        ticker.start(vec![Engine::default()]).unwrap();
        until("it rests", || ticker.resting());
        {
            let _running = ticker.running();
            let before = ticker.ticks();
            until("it ticks again", || ticker.ticks() >= before + 3);
            // Held, it does not rest.
            assert!(!ticker.resting());
        }
        until("it rests again", || ticker.resting());
        ticker.stop();
        until("it stops", || {
            let before = ticker.ticks();
            std::thread::sleep(EPOCH_TICK * 4);
            ticker.ticks() == before
        });
    }

    /// `(module (func (export "f") (loop (br 0))))`
    const ENDLESS_LOOP: &[u8] = &[
        0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // header
        0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type () -> ()
        0x03, 0x02, 0x01, 0x00, // one function of that type
        0x07, 0x05, 0x01, 0x01, b'f', 0x00, 0x00, // exported as "f"
        0x0a, 0x09, 0x01, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b, // loop br 0
    ];

    #[test]
    fn an_engine_added_after_the_start_is_ticked_too() {
        let ticker = Ticker::new();
        ticker.start(vec![Engine::default()]).unwrap();
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let engine = Engine::new(&config).unwrap();
        ticker.add(engine.clone());
        let module = wasmtime::Module::new(&engine, ENDLESS_LOOP).unwrap();
        let mut store = wasmtime::Store::new(&engine, ());
        store.set_epoch_deadline(2);
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).unwrap();
        let endless = instance.get_typed_func::<(), ()>(&mut store, "f").unwrap();
        // Should the ticker not advance it, the loop still ends (and the
        // test fails) after 10 s.
        let watchdog_fired = Arc::new(AtomicBool::new(false));
        let (fired, watched) = (watchdog_fired.clone(), engine.clone());
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(10));
            fired.store(true, Ordering::SeqCst);
            for _ in 0..3 {
                watched.increment_epoch();
            }
        });
        let running = ticker.running();
        let error = endless.call(&mut store, ()).unwrap_err();
        drop(running);
        assert_eq!(
            error.downcast_ref::<wasmtime::Trap>(),
            Some(&wasmtime::Trap::Interrupt)
        );
        assert!(
            !watchdog_fired.load(Ordering::SeqCst),
            "the ticker did not advance the added engine's epoch within 10 s"
        );
        ticker.stop();
    }

    #[test]
    fn a_poll_before_the_thread_starts_is_ticked_for() {
        let ticker = Ticker::new();
        let running = ticker.running();
        ticker.start(vec![Engine::default()]).unwrap();
        until("it ticks", || ticker.ticks() > REST_AFTER as u64 + 5);
        assert!(!ticker.resting());
        drop(running);
        ticker.stop();
    }
}
