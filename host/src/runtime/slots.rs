//! Instance slots (`[server] max_instances`), and a finished call's
//! instance torn down after the request that made the call has answered.
//!
//! Dropping a call's store frees its instance: the pooled memory and
//! tables are reset from the image and the WASI state goes, about 14 µs
//! on this machine. A client waiting for the answer need not wait for
//! that too: inside [`answer_first`], a finished call's store (with its
//! slot) is kept until the request's future ends, after it has sent its
//! answer, and is dropped then, on the same thread. (A call that leaves a
//! spare instance behind is torn down by the task that makes the spare:
//! see [`super::spare`].)

use super::state::CallState;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::futures::Notified;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use wasmtime::Store;

/// How long a call waits for a slot that a teardown already under way
/// is about to give back, or that a spare being made is about to give up
/// (either normally takes microseconds).
const TEARDOWN_WAIT: Duration = Duration::from_secs(1);

/// One slot per instance that may be alive at once, shared by every tier.
pub(super) struct Slots {
    permits: Arc<Semaphore>,
    /// Teardowns kept by requests and not yet done.
    kept: AtomicUsize,
    /// Every plugin's spare instance, given up for a call that finds no
    /// slot free (see [`super::spare`]).
    pub(super) spares: Spares,
}

/// An instance that holds a slot only until a call needs it (a plugin's
/// spare, see [`super::spare`]).
pub(super) trait Evict: Send + Sync {
    /// Tears it down, freeing its slot; `false` when there is none.
    fn evict(&self) -> bool;
    /// Whether one is held now.
    fn is_full(&self) -> bool;
}

/// Every plugin's spare, for a call that finds no instance slot free.
#[derive(Default)]
pub(super) struct Spares {
    cells: Mutex<Vec<Weak<dyn Evict>>>,
    /// Spares being made; each holds a slot.
    pub(super) making: AtomicUsize,
    /// A spare was made or given up: a call waiting for a slot looks again.
    pub(super) changed: Notify,
    /// A call waits for a slot: the spares being made give theirs up.
    pub(super) wanted: Notify,
}

impl Spares {
    /// Lets a call that finds no slot free take the slot of `cell`'s
    /// spare.
    pub(super) fn register<C: Evict + 'static>(&self, cell: &Arc<C>) {
        let cell: Arc<dyn Evict> = cell.clone();
        let mut cells = self.cells.lock();
        cells.retain(|cell| cell.strong_count() > 0);
        cells.push(Arc::downgrade(&cell));
    }

    /// Spares alive now, every plugin's.
    pub(super) fn count(&self) -> usize {
        let cells = self.cells.lock();
        let full = |cell: &Weak<dyn Evict>| cell.upgrade().is_some_and(|c| c.is_full());
        cells.iter().filter(|cell| full(cell)).count()
    }

    /// Plugins registered (some may be gone).
    #[cfg(test)]
    pub(super) fn registered(&self) -> usize {
        self.cells.lock().len()
    }

    /// Tears down one spare, any plugin's, to free its slot; `false` when
    /// there is none.
    pub(super) fn give_up_one(&self) -> bool {
        let cells: Vec<Arc<dyn Evict>> =
            self.cells.lock().iter().filter_map(Weak::upgrade).collect();
        // Torn down outside the lock.
        cells.iter().any(|cell| cell.evict())
    }

    /// Spares being made now.
    pub(super) fn making(&self) -> usize {
        self.making.load(Ordering::SeqCst)
    }

    /// Resolves when a spare was made or given up after it was enabled.
    pub(super) fn changed(&self) -> Notified<'_> {
        self.changed.notified()
    }

    /// Asks the spares being made to give their slots up.
    pub(super) fn want_slots(&self) {
        self.wanted.notify_waiters();
    }
}

/// What [`Slots::take`] does when every slot is taken and none is about
/// to be given back.
#[derive(Clone, Copy)]
pub(super) enum Patience {
    /// Fails at once: a call does not queue (the host is at capacity).
    Call,
    /// Waits for one up to this long (then the plugin warns and waits
    /// again): a plugin being loaded asks for its lists however busy the
    /// host is, so a load queues.
    Load(Duration),
}

/// A slot held: an instance may be alive while it is.
pub(super) struct Slot {
    _permit: OwnedSemaphorePermit,
}

/// Every slot is taken.
pub(super) struct Full;

impl Slots {
    pub(super) fn new(count: usize) -> Arc<Self> {
        Arc::new(Slots {
            permits: Arc::new(Semaphore::new(count)),
            kept: AtomicUsize::new(0),
            spares: Spares::default(),
        })
    }

    /// A slot that is free now, without waiting and without taking one
    /// from a spare.
    pub(super) fn try_take(&self) -> Option<Slot> {
        let permit = self.permits.clone().try_acquire_owned().ok()?;
        Some(Slot { _permit: permit })
    }

    /// A free slot. When none is free, a spare instance gives its up (one
    /// being made stops). With no spare, a call does not queue for a slot
    /// (the host is at capacity): it fails, unless a slot is held only by
    /// a teardown kept until its request answered, which frees it in a
    /// moment; then it waits for that. A load waits as long as its
    /// [`Patience`] says.
    pub(super) async fn take(&self, patience: Patience) -> Result<Slot, Full> {
        if let Some(slot) = self.try_take() {
            return Ok(slot);
        }
        let (queues, wait) = match patience {
            Patience::Call => (false, TEARDOWN_WAIT),
            Patience::Load(wait) => (true, wait),
        };
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            // Listening before looking: a spare made after the look wakes it.
            let changed = self.spares.changed();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if let Some(slot) = self.try_take() {
                return Ok(slot);
            }
            if self.spares.give_up_one() {
                continue;
            }
            let making = self.spares.making();
            if !queues && making == 0 && self.kept.load(Ordering::SeqCst) == 0 {
                // A teardown that ended between the looks gave its slot
                // back before it stopped counting itself, and a spare was
                // kept (to give up) before it stopped counting as made.
                if let Some(slot) = self.try_take() {
                    return Ok(slot);
                }
                if self.spares.give_up_one() {
                    continue;
                }
                return Err(Full);
            }
            if making > 0 {
                self.spares.want_slots();
            }
            tokio::select! {
                permit = self.permits.clone().acquire_owned() => {
                    return Ok(Slot {
                        _permit: permit.expect("the semaphore is never closed"),
                    });
                }
                () = &mut changed => {}
                () = tokio::time::sleep_until(deadline) => return Err(Full),
            }
        }
    }

    /// Slots free now.
    pub(super) fn free(&self) -> usize {
        self.permits.available_permits()
    }
}

/// A finished call's store and the slot its instance held, dropped in
/// that order (the order of the fields).
struct Finished {
    _store: Store<CallState>,
    _slot: Slot,
}

/// A [`Finished`] kept until its request has answered.
struct Kept {
    finished: Option<Finished>,
    slots: Arc<Slots>,
}

impl Drop for Kept {
    fn drop(&mut self) {
        drop(self.finished.take());
        self.slots.kept.fetch_sub(1, Ordering::SeqCst);
    }
}

tokio::task_local! {
    static KEPT: RefCell<Option<Kept>>;
}

/// Runs `request`; the instance of the call it makes is torn down when
/// it ends (after it has sent its answer), not before the call's result
/// comes back to it.
pub fn answer_first<F: Future>(request: F) -> impl Future<Output = F::Output> {
    // Boxed once, so that the scope and the spawn move a pointer, not
    // the whole request.
    KEPT.scope(RefCell::new(None), Box::pin(request))
}

/// Drops a finished call's `store`, then gives its `slot` back: now, or,
/// inside [`answer_first`], when the request ends (one call's; a
/// request's later calls are torn down at once).
pub(super) fn tear_down(store: Store<CallState>, slot: Slot, slots: &Arc<Slots>) {
    let mut finished = Some(Finished {
        _store: store,
        _slot: slot,
    });
    let _ = KEPT.try_with(|kept| {
        let mut kept = kept.borrow_mut();
        if kept.is_none() {
            slots.kept.fetch_add(1, Ordering::SeqCst);
            *kept = Some(Kept {
                finished: finished.take(),
                slots: slots.clone(),
            });
        }
    });
    drop(finished);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> Store<CallState> {
        Store::new(&wasmtime::Engine::default(), CallState::for_tests())
    }

    #[tokio::test]
    async fn a_host_at_capacity_says_so_at_once() {
        let slots = Slots::new(1);
        let held = slots.take(Patience::Call).await.ok().unwrap();
        assert!(slots.take(Patience::Call).await.is_err());
        drop(held);
        assert!(slots.take(Patience::Call).await.is_ok());
    }

    #[tokio::test]
    async fn a_teardown_waits_for_the_answer_and_its_slot_is_waited_for() {
        let slots = Slots::new(1);
        let (answered, answer) = tokio::sync::oneshot::channel();
        let (done, gone) = tokio::sync::oneshot::channel::<()>();
        let request = tokio::spawn(answer_first({
            let slots = slots.clone();
            async move {
                let slot = slots.take(Patience::Call).await.ok().unwrap();
                tear_down(store(), slot, &slots);
                // Kept: the slot is still held until the request ends.
                assert_eq!(slots.free(), 0);
                answered.send(()).unwrap();
                let _ = gone.await;
            }
        }));
        answer.await.unwrap();
        // A call now waits for the kept slot instead of failing...
        let waiting = tokio::spawn({
            let slots = slots.clone();
            async move { slots.take(Patience::Call).await.is_ok() }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        // ...and gets it when the request ends.
        done.send(()).unwrap();
        request.await.unwrap();
        assert!(waiting.await.unwrap());
    }

    #[tokio::test]
    async fn a_load_queues_for_a_slot_a_call_would_not_wait_for() {
        let slots = Slots::new(1);
        let held = slots.take(Patience::Call).await.ok().unwrap();
        let load = Patience::Load(Duration::from_secs(60));
        let waiting = tokio::spawn({
            let slots = slots.clone();
            async move { slots.take(load).await.is_ok() }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        assert!(slots.take(Patience::Call).await.is_err());
        drop(held);
        assert!(waiting.await.unwrap());
        // Its patience has an end.
        let _held = slots.take(Patience::Call).await.ok().unwrap();
        let short = Patience::Load(Duration::from_millis(10));
        assert!(slots.take(short).await.is_err());
    }

    #[tokio::test]
    async fn outside_a_request_a_teardown_is_done_at_once() {
        let slots = Slots::new(1);
        let slot = slots.take(Patience::Call).await.ok().unwrap();
        tear_down(store(), slot, &slots);
        assert_eq!(slots.free(), 1);
        assert_eq!(slots.kept.load(Ordering::SeqCst), 0);
    }
}
