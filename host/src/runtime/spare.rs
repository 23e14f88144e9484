//! A fresh instance made ahead of a plugin's next call.
//!
//! Instantiating is much of a call's latency (a CPython component takes
//! 0.1-0.25 ms; a Rust one a few microseconds).
//! While a call of a plugin runs, the host instantiates the plugin once
//! more in the background and keeps that instance, never called, for the
//! plugin's next call. Every call still runs in an instance no other
//! call has used: what the spare saves is only the wait.
//!
//! - One spare per plugin at most. It is made for the client roots of the
//!   call before it (its preopened folders depend on them); a call with
//!   other roots tears it down and instantiates afresh, and the next
//!   spare is made for the newer roots.
//! - The next one is made as soon as a call starts (in the spare, or in an
//!   instance of its own for want of one), in a free slot and a task of its
//!   own, so that it is made on another core while the call runs: calls
//!   that come back to back find it ready. It never takes a slot from
//!   anyone; with none free, it is made after the call instead, in the
//!   call's slot, by a task that first tears the call's instance down
//!   (after the answer is on its way), and only when no other call of the
//!   plugin runs. A call that finds every slot taken tears down a spare
//!   (any plugin's) to get one, before it is refused; one still being made
//!   stops, and the call waits for its slot ([`Spares`]).
//! - None is made for a plugin whose instances are kept warm (they serve
//!   its next call).
//! - Its instantiation runs under the plugin's call deadline; one that
//!   fails or times out leaves no spare, and the next call instantiates
//!   as it would without spares. At most one is under way per plugin, and
//!   one is started only after a call returned normally, so a plugin that
//!   cannot be instantiated never makes the host retry.
//! - A reload starts with none (a spare belongs to the build it came
//!   from).
//! - `[limits] spare_instance`: `"auto"` makes spares for a plugin whose
//!   fastest instantiation so far took [`WORTH_MAKING`] or more;
//!   `"always"` for every plugin; `"never"` for none.

use super::slots::{Evict, Slot, Slots};
use super::state::CallState;
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::futures::Notified;
use wasmtime::component::Instance;
use wasmtime::Store;

/// What an instance's preopens and key-value namespace were made for:
/// the call's tenant and the client roots. An instance serves only calls
/// with the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Placement {
    tenant: Option<crate::tenant::Tenant>,
    client_roots: Option<Arc<Vec<PathBuf>>>,
}

impl Placement {
    /// The placement of a call from `context`.
    pub(super) fn of(context: &dyn super::context::CallContext) -> Self {
        Placement {
            tenant: context.tenant().cloned(),
            client_roots: context.client_roots(),
        }
    }

    /// The client roots.
    pub(super) fn client_roots(&self) -> Option<&[PathBuf]> {
        self.client_roots.as_deref().map(Vec::as_slice)
    }

    /// This placement as it matters to a fresh instance of a plugin with
    /// `grants`: the tenant is dropped for a plugin granted no tenant's
    /// data (no root per tenant, no store), whose fresh instances are the
    /// same for every tenant.
    pub(super) fn for_grants(mut self, grants: &super::grants::Grants) -> Self {
        if !per_tenant(grants) {
            self.tenant = None;
        }
        self
    }

    /// This placement, with the host's own calls counted as the local
    /// tenant's for a plugin granted no tenant's data.
    pub(super) fn local_unless_per_tenant(mut self, grants: &super::grants::Grants) -> Self {
        if self.tenant.is_none() && !per_tenant(grants) {
            self.tenant = Some(crate::tenant::Tenant::local());
        }
        self
    }

    /// The tenant (`None` for the host's own calls).
    pub(super) fn tenant(&self) -> Option<&crate::tenant::Tenant> {
        self.tenant.as_ref()
    }

    /// The local tenant with `client_roots` (for tests).
    #[cfg(test)]
    pub(super) fn local(client_roots: Option<Arc<Vec<PathBuf>>>) -> Self {
        Placement {
            tenant: Some(crate::tenant::Tenant::local()),
            client_roots,
        }
    }
}

/// Whether a plugin with `grants` reaches a tenant's data.
fn per_tenant(grants: &super::grants::Grants) -> bool {
    grants.keyvalue.is_some() || grants.dirs.iter().any(|d| d.tenants.is_some())
}

/// What a spare was made for.
pub(super) type Roots = Placement;

/// An instance made ahead, with its store and the slot it holds.
pub(super) struct Spare {
    // Dropped in this order: the store (and the instance in it), then the
    // slot it held.
    pub(super) store: Store<CallState>,
    pub(super) slot: Slot,
    pub(super) instance: Instance,
    pub(super) roots: Roots,
}

/// The least instantiation time at which [`SpareMode::Auto`] makes
/// spares. Making one in a task of its own costs a few microseconds of
/// CPU (and, with an idle worker thread, its wake-up); below this, that
/// outweighs the wait it saves: measured, a Rust plugin that instantiates
/// in ~15 µs served HTTP calls at 8 connections with 8% more CPU per call
/// with spares than without. Fastest instantiations measured here, in a
/// reused slot: Rust and C 3 µs, JavaScript 7 µs, Go 75 µs, CPython 93 µs
/// (a ~3x margin either side).
///
/// [`SpareMode::Auto`]: super::SpareMode::Auto
pub(super) const WORTH_MAKING: Duration = Duration::from_micros(30);

/// Where a plugin's spare waits, if it has one.
pub(super) struct SpareCell {
    spare: Mutex<Option<Spare>>,
    /// One is being made.
    making: AtomicBool,
    /// The fastest instantiation seen, in nanoseconds (noise on a busy
    /// machine only ever makes one slower).
    fastest: AtomicU64,
}

impl Default for SpareCell {
    fn default() -> Self {
        SpareCell {
            spare: Mutex::default(),
            making: AtomicBool::new(false),
            fastest: AtomicU64::new(u64::MAX),
        }
    }
}

impl SpareCell {
    /// Notes how long one of the plugin's instantiations took.
    pub(super) fn instantiated_in(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.fastest.fetch_min(nanos, Ordering::Relaxed);
    }

    /// Whether instantiating the plugin is slow enough for a spare to pay
    /// ([`WORTH_MAKING`]), by its fastest instantiation so far.
    pub(super) fn worth_making(&self) -> bool {
        let fastest = Duration::from_nanos(self.fastest.load(Ordering::Relaxed));
        fastest >= WORTH_MAKING
    }

    /// The spare, if there is one made for a call with `roots`. One made
    /// for other roots is torn down.
    pub(super) fn take(&self, roots: &Roots) -> Option<Spare> {
        let spare = self.spare.lock().take()?;
        // Dropped outside the lock: its store, then its slot.
        (&spare.roots == roots).then_some(spare)
    }

    /// Whether a spare should be made now: there is none and none is being
    /// made. `true` also marks one as under way, until [`SpareCell::put`]
    /// or [`SpareCell::abandon`].
    pub(super) fn start_making(&self) -> bool {
        if self.spare.lock().is_some() {
            return false;
        }
        !self.making.swap(true, Ordering::AcqRel)
    }

    /// Keeps a spare just made.
    pub(super) fn put(&self, spare: Spare) {
        let previous = self.spare.lock().replace(spare);
        self.making.store(false, Ordering::Release);
        drop(previous);
    }

    /// Making one failed, or stopped for a call that needed its slot.
    pub(super) fn abandon(&self) {
        self.making.store(false, Ordering::Release);
    }

    /// Whether one is being made now.
    pub(super) fn is_making(&self) -> bool {
        self.making.load(Ordering::Acquire)
    }

    /// Whether it holds a spare now.
    pub(super) fn is_full(&self) -> bool {
        self.spare.lock().is_some()
    }
}

impl Evict for SpareCell {
    fn evict(&self) -> bool {
        let spare = self.spare.lock().take();
        // Torn down here, outside the lock.
        spare.is_some()
    }

    fn is_full(&self) -> bool {
        SpareCell::is_full(self)
    }
}

/// A spare being made: counted until dropped, after it was kept or given
/// up, when the calls waiting for a slot look again.
pub(super) struct MakingSpare {
    slots: Arc<Slots>,
}

impl MakingSpare {
    pub(super) fn new(slots: Arc<Slots>) -> Self {
        slots.spares.making.fetch_add(1, Ordering::SeqCst);
        MakingSpare { slots }
    }

    /// Resolves when a call wants a slot (enable it before making).
    pub(super) fn wanted(&self) -> Notified<'_> {
        self.slots.spares.wanted.notified()
    }
}

impl Drop for MakingSpare {
    fn drop(&mut self) {
        let spares = &self.slots.spares;
        spares.making.fetch_sub(1, Ordering::SeqCst);
        spares.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::slots::Patience;
    use wasmtime::component::{Component, Linker};

    /// A fresh instance of the empty component in `slot`, made for `roots`.
    fn spare_in(slot: Slot, roots: Roots) -> Spare {
        let engine = wasmtime::Engine::default();
        let mut store = Store::new(&engine, CallState::for_tests());
        // The empty component, in binary (no text parser in this build).
        let component = Component::new(&engine, b"\0asm\x0d\0\x01\0").unwrap();
        let instance = Linker::new(&engine)
            .instantiate(&mut store, &component)
            .unwrap();
        Spare {
            store,
            slot,
            instance,
            roots,
        }
    }

    /// A spare made in a free slot of `slots`.
    async fn spare(slots: &Arc<Slots>, roots: Roots) -> Spare {
        spare_in(
            slots.take(Patience::Call).await.ok().expect("a free slot"),
            roots,
        )
    }

    /// A slot of `slots`, in which a spare is being made.
    async fn making(slots: &Arc<Slots>) -> (Slot, MakingSpare) {
        let slot = slots.take(Patience::Call).await.ok().expect("a free slot");
        (slot, MakingSpare::new(slots.clone()))
    }

    fn roots(paths: &[&str]) -> Roots {
        Placement::local(Some(Arc::new(paths.iter().map(PathBuf::from).collect())))
    }

    #[tokio::test]
    async fn a_spare_serves_only_a_call_with_the_roots_it_was_made_for() {
        let slots = Slots::new(2);
        let cell = SpareCell::default();
        assert!(cell.start_making());
        cell.put(spare(&slots, roots(&["/a"])).await);
        assert_eq!(slots.free(), 1);
        // Other roots: it is torn down, and its slot is free again.
        assert!(cell.take(&roots(&["/b"])).is_none());
        assert_eq!(slots.free(), 2);
        assert!(cell.take(&roots(&["/a"])).is_none());
        assert!(cell.start_making());
        cell.put(spare(&slots, Placement::local(None)).await);
        assert!(cell.take(&Placement::local(None)).is_some());
        assert!(cell.take(&Placement::local(None)).is_none());
    }

    #[tokio::test]
    async fn one_spare_is_made_at_a_time_and_none_while_one_waits() {
        let slots = Slots::new(2);
        let cell = SpareCell::default();
        assert!(cell.start_making());
        assert!(!cell.start_making());
        cell.abandon();
        assert!(cell.start_making());
        cell.put(spare(&slots, Placement::local(None)).await);
        assert!(!cell.start_making());
        assert!(cell.is_full());
    }

    #[tokio::test]
    async fn a_call_that_finds_no_slot_free_takes_a_spares() {
        let slots = Slots::new(2);
        let (one, other) = (
            Arc::new(SpareCell::default()),
            Arc::new(SpareCell::default()),
        );
        slots.spares.register(&one);
        slots.spares.register(&other);
        one.put(spare(&slots, Placement::local(None)).await);
        other.put(spare(&slots, Placement::local(None)).await);
        assert_eq!((slots.free(), slots.spares.count()), (0, 2));
        // A call gets one, and another, then the host is full.
        let first = slots.take(Patience::Call).await.ok().unwrap();
        let second = slots.take(Patience::Call).await.ok().unwrap();
        assert_eq!(slots.spares.count(), 0);
        assert!(slots.take(Patience::Call).await.is_err());
        drop((first, second));
        assert_eq!(slots.free(), 2);
    }

    #[tokio::test]
    async fn a_call_waits_for_a_spare_being_made_which_gives_its_slot_up() {
        let slots = Slots::new(1);
        let (slot, making) = making(&slots).await;
        let call = {
            let wanted = making.wanted();
            tokio::pin!(wanted);
            wanted.as_mut().enable();
            let call = tokio::spawn({
                let slots = slots.clone();
                async move { slots.take(Patience::Call).await.is_ok() }
            });
            // The call asks for the slot; the spare being made gives it up.
            tokio::time::timeout(std::time::Duration::from_secs(10), wanted)
                .await
                .expect("the call asked for the spare's slot");
            assert!(!call.is_finished());
            call
        };
        drop(slot);
        drop(making);
        assert!(call.await.unwrap());
        assert_eq!(slots.spares.making(), 0);
    }

    #[tokio::test]
    async fn a_call_waiting_for_a_slot_takes_a_spare_made_meanwhile() {
        let slots = Slots::new(1);
        let cell = Arc::new(SpareCell::default());
        slots.spares.register(&cell);
        let (slot, making) = making(&slots).await;
        let call = tokio::spawn({
            let slots = slots.clone();
            async move { slots.take(Patience::Call).await.is_ok() }
        });
        tokio::task::yield_now().await;
        // Made anyway (it did not hear the call): kept, then counted as made.
        cell.put(spare_in(slot, Placement::local(None)));
        drop(making);
        assert!(call.await.unwrap());
        assert!(!cell.is_full());
    }

    #[test]
    fn auto_makes_spares_for_a_plugin_by_its_fastest_instantiation() {
        let cell = SpareCell::default();
        cell.instantiated_in(Duration::from_millis(2));
        assert!(cell.worth_making());
        cell.instantiated_in(WORTH_MAKING / 8);
        assert!(!cell.worth_making());
        // A slower one later (a busy machine) changes nothing.
        cell.instantiated_in(Duration::from_millis(1));
        assert!(!cell.worth_making());
    }

    #[tokio::test]
    async fn a_plugin_gone_leaves_nothing_registered() {
        let slots = Slots::new(1);
        let cell = Arc::new(SpareCell::default());
        slots.spares.register(&cell);
        cell.put(spare(&slots, Placement::local(None)).await);
        drop(cell);
        // Its spare went with it; registering another forgets it.
        assert_eq!((slots.free(), slots.spares.count()), (1, 0));
        slots.spares.register(&Arc::new(SpareCell::default()));
        assert_eq!(slots.spares.registered(), 1);
    }
}
