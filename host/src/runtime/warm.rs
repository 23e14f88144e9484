//! Instances kept warm between calls, for plugins whose operator opted in
//! (`calls_per_instance` above 1).
//!
//! By default every call gets a fresh instance. Instantiation is most of a
//! call's cost for a component with a large runtime in it (CPython,
//! a JavaScript engine), so an operator may trade isolation between calls
//! for speed: an instance whose call returned normally is kept, and serves
//! the plugin's next call, up to `calls_per_instance` calls. What a call
//! leaves in memory (its heap, its statics, the handles it did not close)
//! is then seen by the calls after it in that instance. Limits on that:
//!
//! - an instance serves only calls of the same principal and tenant with
//!   the same client roots (so the same preopened folders, the same
//!   tenant's folders and key-value data);
//! - one that trapped, timed out, was cancelled or failed in any way is
//!   torn down, never kept;
//! - at most `max_concurrent_calls` instances of a plugin are kept; they
//!   count against `[server] max_instances`, and a call of the plugin that
//!   finds no instance free tears one of them down to get one;
//! - a reload starts with none (they belong to the build they came from).

use super::context::CallContext;
use super::slots::Slot;
use super::spare::Placement;
use super::state::CallState;
use parking_lot::Mutex;
use wasmtime::component::Instance;
use wasmtime::Store;

/// Which calls an instance may serve: those of the principal, and with the
/// client roots, of the call it was made for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Affinity {
    principal: Option<String>,
    placement: Placement,
}

impl Affinity {
    /// The affinity of a call from `context`.
    pub(super) fn of(context: &dyn CallContext) -> Self {
        Affinity {
            principal: context.principal().map(str::to_owned),
            placement: Placement::of(context),
        }
    }

    /// This affinity as it matters to a plugin with `grants`: the instance
    /// of a call the host made itself (its lists at load) may serve the
    /// local tenant's calls when the plugin is granted no tenant's data
    /// (it holds none).
    pub(super) fn for_grants(mut self, grants: &super::grants::Grants) -> Self {
        self.placement = self.placement.local_unless_per_tenant(grants);
        self
    }
}

/// An instance between two calls, with its store and the slot it holds.
pub(super) struct WarmInstance {
    // Dropped in this order: the store (and the instance in it), then the
    // slot it held.
    pub(super) store: Store<CallState>,
    pub(super) slot: Slot,
    pub(super) instance: Instance,
    pub(super) affinity: Affinity,
    /// Calls it has served.
    pub(super) served: u32,
}

/// A plugin's kept instances.
pub(super) struct Warm {
    /// Calls one instance may serve; 1 keeps none.
    calls_per_instance: u32,
    /// The most kept at once.
    capacity: usize,
    /// Most recently kept last.
    idle: Mutex<Vec<WarmInstance>>,
}

impl Warm {
    pub(super) fn new(calls_per_instance: u32, capacity: usize) -> Self {
        Warm {
            calls_per_instance,
            capacity: capacity.max(1),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Whether instances are kept at all.
    pub(super) fn enabled(&self) -> bool {
        self.calls_per_instance > 1
    }

    /// A kept instance for a call with `affinity`: the one kept last.
    pub(super) fn take(&self, affinity: &Affinity) -> Option<WarmInstance> {
        let mut idle = self.idle.lock();
        let index = idle.iter().rposition(|w| &w.affinity == affinity)?;
        Some(idle.remove(index))
    }

    /// Keeps `instance`, whose call returned normally, unless it has served
    /// its calls; at capacity, the one kept longest goes. What is not kept
    /// is handed back, to be torn down by the caller.
    pub(super) fn keep(&self, mut instance: WarmInstance) -> Option<WarmInstance> {
        instance.served += 1;
        if instance.served >= self.calls_per_instance {
            return Some(instance);
        }
        let mut idle = self.idle.lock();
        let evicted = (idle.len() >= self.capacity).then(|| idle.remove(0));
        idle.push(instance);
        evicted
    }

    /// Gives up the instance kept longest, to free its slot; `None` when
    /// none is kept.
    pub(super) fn evict(&self) -> Option<WarmInstance> {
        let mut idle = self.idle.lock();
        (!idle.is_empty()).then(|| idle.remove(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::slots::{Patience, Slots};
    use crate::runtime::BoxFuture;
    use std::sync::Arc;
    use wasmtime::component::{Component, Linker};

    /// A caller authenticated as `principal`.
    struct As(Option<&'static str>);

    impl CallContext for As {
        fn log(&self, _: crate::runtime::types::LogLevel, _: String) {}
        fn progress(&self, _: f64, _: Option<f64>, _: Option<String>) {}
        fn is_cancelled(&self) -> bool {
            false
        }
        fn cancelled(&self) -> BoxFuture<()> {
            Box::pin(std::future::pending())
        }
        fn list_changed(&self, _: crate::runtime::host_types::ListKind) {}
        fn resource_updated(&self, _: String) {}
        fn ask(
            &self,
            _: Vec<(String, crate::runtime::host_types::Question)>,
        ) -> BoxFuture<
            Vec<Result<crate::runtime::host_types::Answer, crate::runtime::host_types::InputError>>,
        > {
            Box::pin(async { Vec::new() })
        }
        fn principal(&self) -> Option<&str> {
            self.0
        }
    }

    /// A fresh instance of the empty component, made for `principal`.
    async fn instance(slots: &Arc<Slots>, principal: Option<&'static str>) -> WarmInstance {
        let engine = wasmtime::Engine::default();
        let mut store = Store::new(&engine, CallState::for_tests());
        // The empty component, in binary (no text parser in this build).
        let component = Component::new(&engine, b"\0asm\x0d\0\x01\0").unwrap();
        let instance = Linker::new(&engine)
            .instantiate(&mut store, &component)
            .unwrap();
        WarmInstance {
            store,
            slot: slots.take(Patience::Call).await.ok().unwrap(),
            instance,
            affinity: Affinity::of(&As(principal)),
            served: 0,
        }
    }

    #[tokio::test]
    async fn by_default_no_instance_is_kept() {
        assert!(!Warm::new(1, 16).enabled());
        assert!(Warm::new(2, 16).enabled());
    }

    #[tokio::test]
    async fn an_instance_serves_its_calls_then_is_handed_back() {
        let slots = Slots::new(4);
        let warm = Warm::new(3, 4);
        let alice = Affinity::of(&As(Some("alice")));
        assert!(warm.keep(instance(&slots, Some("alice")).await).is_none());
        let second = warm.take(&alice).expect("kept after its first call");
        assert_eq!(second.served, 1);
        assert!(warm.keep(second).is_none());
        let third = warm.take(&alice).expect("kept after its second call");
        // Its third call is its last: it is handed back to be torn down.
        let done = warm.keep(third).expect("handed back after its third call");
        assert_eq!(done.served, 3);
        assert!(warm.take(&alice).is_none());
    }

    #[tokio::test]
    async fn an_instance_serves_only_its_own_principal() {
        let slots = Slots::new(4);
        let warm = Warm::new(100, 4);
        assert!(warm.keep(instance(&slots, Some("alice")).await).is_none());
        assert!(warm.take(&Affinity::of(&As(Some("bob")))).is_none());
        assert!(warm.take(&Affinity::of(&As(None))).is_none());
        assert!(warm.take(&Affinity::of(&As(Some("alice")))).is_some());
    }

    #[tokio::test]
    async fn at_capacity_the_one_kept_longest_goes_and_its_slot_with_it() {
        let slots = Slots::new(2);
        let warm = Warm::new(100, 1);
        assert!(warm.keep(instance(&slots, Some("a")).await).is_none());
        assert_eq!(slots.free(), 1);
        let evicted = warm
            .keep(instance(&slots, Some("b")).await)
            .expect("over capacity");
        assert_eq!(evicted.affinity, Affinity::of(&As(Some("a"))));
        drop(evicted);
        assert_eq!(slots.free(), 1);
        // Evicting on demand frees the last one's slot too.
        drop(warm.evict().expect("one kept"));
        assert_eq!(slots.free(), 2);
        assert!(warm.evict().is_none());
    }
}
