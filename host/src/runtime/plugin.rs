//! One loaded plugin: its compiled component, pre-linked for fast
//! instantiation, and how one call runs in a fresh (or spare, or warm)
//! instance under its limits. The typed calls are in `calls.rs`.

use super::bindings::exports::wasm_mcp::plugin::{prompts, resources, tools};
use super::blocking::BlockingPool;
pub use super::call_error::CallError;
use super::context::{CallContext, Quiet};
use super::exports::ExportedFunctions;
use super::grants::{Grants, SpareMode};
use super::lift::{Budget, Budgeted};
use super::plain::PlainTools;
use super::slots::{self, Patience, Slot, Slots};
use super::spare::{MakingSpare, Roots, Spare, SpareCell};
use super::state::CallState;
use super::tier::Tier;
use super::wait_clock::WaitClock;
use super::warm::{Affinity, Warm, WarmInstance};
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::Semaphore;
use tracing::Instrument as _;
use wasmtime::component::{Component, Instance, InstancePre};
use wasmtime::{Engine, Store};

/// Which of the contract's interfaces a component exports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Exports {
    /// `tools`
    pub tools: bool,
    /// `resources`
    pub resources: bool,
    /// `prompts`
    pub prompts: bool,
    /// `completions`
    pub completions: bool,
}

/// Everything a plugin lists, asked once at load.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// From `list-tools`.
    pub tools: Vec<tools::Tool>,
    /// From `list-resources`.
    pub resources: Vec<resources::Resource>,
    /// From `list-resource-templates`.
    pub templates: Vec<resources::ResourceTemplate>,
    /// From `list-prompts`.
    pub prompts: Vec<prompts::Prompt>,
}

/// A compiled, linked plugin, ready to instantiate once per call.
pub struct LoadedPlugin {
    /// The engine that compiled it, which its stores belong to.
    engine: Engine,
    /// Compiled by the baseline compiler, to be replaced by an optimised build.
    quick: bool,
    pub(super) name: Arc<str>,
    hash: String,
    pub(super) grants: Arc<Grants>,
    /// One permit per call that may run at once (a call waiting for the
    /// client gives its permit back meanwhile).
    turns: Arc<Semaphore>,
    /// The host's instances alive at once, shared by every plugin.
    instances: Arc<Slots>,
    pre: InstancePre<CallState>,
    pub(super) functions: ExportedFunctions,
    /// Where its blocking OS work runs.
    pool: BlockingPool,
    /// Instances kept between calls, if its limits let one serve several.
    warm: Warm,
    /// Stands in for the caller in a kept instance between calls.
    idle: Arc<dyn CallContext>,
    /// A fresh instance made ahead of the next call.
    spare: Arc<SpareCell>,
    /// Itself, for the task that makes a spare.
    me: Weak<LoadedPlugin>,
}

impl LoadedPlugin {
    pub(super) fn link(
        tier: &Tier,
        name: Arc<str>,
        component: Component,
        bytes: &[u8],
        hash: String,
        grants: Grants,
        quick: bool,
    ) -> anyhow::Result<Arc<Self>> {
        // What it exports first: a component of another contract version
        // is told so, not that its imports of that version do not link.
        let mut functions = ExportedFunctions::find(&component, &tier.engine)?;
        let pre = tier.linker.instantiate_pre(&component).map_err(|e| {
            anyhow::anyhow!("the component needs something the host does not provide: {e:#}")
        })?;
        if functions.is_empty() {
            let limits = (
                grants.limits.max_result_items,
                grants.limits.max_result_bytes,
            );
            let plain = PlainTools::find(&component, &tier.engine, bytes, &name, limits);
            functions.plain = (!plain.is_empty()).then_some(plain);
        }
        if functions.is_empty() {
            anyhow::bail!(
                "the component exports none of wasm-mcp:plugin/tools, resources or prompts @0.1.0, \
                 and no function that can be served as a tool"
            );
        }
        let pool = BlockingPool::new(
            &name,
            grants.limits.max_blocking_threads,
            tier.ticker.clone(),
        )?;
        let limits = &grants.limits;
        let warm = Warm::new(limits.calls_per_instance, limits.max_concurrent_calls);
        let idle = Arc::new(Quiet {
            plugin: name.to_string(),
        });
        let spare = Arc::new(SpareCell::default());
        tier.instances.spares.register(&spare);
        Ok(Arc::new_cyclic(|me| LoadedPlugin {
            engine: tier.engine.clone(),
            quick,
            name,
            hash,
            turns: Arc::new(Semaphore::new(grants.limits.max_concurrent_calls.max(1))),
            instances: tier.instances.clone(),
            grants: Arc::new(grants),
            pre,
            functions,
            warm,
            idle,
            pool,
            spare,
            me: me.clone(),
        }))
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The SHA-256 of the component's bytes, in hex.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// Whether the baseline compiler built it (see [`crate::runtime::Runtime::load_quick`]).
    pub fn is_quick(&self) -> bool {
        self.quick
    }

    /// What the plugin was granted.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// Which interfaces the component exports.
    pub fn exports(&self) -> Exports {
        let f = &self.functions;
        Exports {
            tools: f.tools.is_some() || f.plain.is_some(),
            resources: f.resources.is_some(),
            prompts: f.prompts.is_some(),
            completions: f.completions.is_some(),
        }
    }

    fn store(
        &self,
        context: Arc<dyn CallContext>,
        roots: &Roots,
    ) -> Result<Store<CallState>, CallError> {
        let state = CallState::new(&self.name, context, roots, &self.grants)
            .map_err(|e| CallError::Setup(format!("{e:#}")))?;
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.memory);
        store.set_epoch_deadline(1);
        store.epoch_deadline_async_yield_and_update(1);
        Ok(store)
    }

    /// Runs `call` in a fresh instance (or, when the plugin keeps them, a
    /// warm one: see [`super::warm`]), under `timeout` and the caller's
    /// cancellation, with the plugin's own blocking threads, and with what
    /// it hands the host lifted under its limits. The plugin yields at
    /// every epoch tick, so the deadline and cancellation can stop it.
    /// Time spent waiting for the client's answers does not count. With
    /// every instance slot taken, `patience` says whether it waits.
    pub(super) async fn run<R>(
        &self,
        context: Arc<dyn CallContext>,
        timeout: Duration,
        patience: Patience,
        call: impl AsyncFnOnce(&mut Store<CallState>, Instance) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        let affinity = self
            .warm
            .enabled()
            .then(|| Affinity::of(&*context).for_grants(&self.grants));
        // Wait for a turn (the client may give up meanwhile); the deadline
        // starts when the call does.
        let turn = tokio::select! {
            turn = self.turns.clone().acquire_owned() => turn.expect("the semaphore is never closed"),
            () = context.cancelled() => return Err(CallError::Cancelled),
        };
        // Whose data the instance reaches matters only to a plugin granted
        // some: for the others, a spare made after the listing at load (a
        // call of no tenant) serves any tenant's call.
        let roots = super::spare::Placement::of(&*context).for_grants(&self.grants);
        let warm = affinity.as_ref().and_then(|a| self.warm.take(a));
        let (mut store, slot, kept, served) = match warm {
            Some(warm) => {
                let mut store = warm.store;
                store.data_mut().rebind(context.clone());
                store.set_epoch_deadline(1);
                (store, warm.slot, Some(warm.instance), warm.served)
            }
            None => match self.spare.take(&roots) {
                Some(spare) => {
                    tracing::debug!(plugin = %self.name, "the call runs in a spare instance");
                    let mut store = spare.store;
                    store.data_mut().rebind(context.clone());
                    store.set_epoch_deadline(1);
                    self.make_next_spare(&roots);
                    (store, spare.slot, Some(spare.instance), 0)
                }
                None => {
                    let store = self.store(context.clone(), &roots)?;
                    (store, self.take_slot(patience).await?, None, 0)
                }
            },
        };
        store.data_mut().turn.hold(self.turns.clone(), turn);
        let clock = store.data().wait_clock.clone();
        let stderr = store.data().stderr.clone();
        let limits = &self.grants.limits;
        let budget = Budget::new(limits.max_result_bytes, limits.max_result_items);
        let span = tracing::debug_span!("plugin.call", plugin = %self.name);
        let call = Budgeted::new(
            budget,
            self.pool.run(async {
                let instance = match kept {
                    Some(instance) => instance,
                    None => {
                        let started = std::time::Instant::now();
                        let instance = self
                            .pre
                            .instantiate_async(&mut store)
                            .instrument(tracing::debug_span!("plugin.instantiate"))
                            .await?;
                        self.spare.instantiated_in(started.elapsed());
                        if matches!(patience, Patience::Call) {
                            self.make_next_spare(&roots);
                        }
                        instance
                    }
                };
                let value = call(&mut store, instance)
                    .instrument(tracing::debug_span!("plugin.run"))
                    .await?;
                Ok((instance, value))
            }),
        );
        let result = guarded(&*context, clock, timeout, call)
            .instrument(span)
            .await
            .map_err(|error| error.with_last_words(&stderr));
        match (result, affinity) {
            (Ok((instance, value)), Some(affinity)) => {
                store.data_mut().park(self.idle.clone());
                let warm = WarmInstance {
                    store,
                    slot,
                    instance,
                    affinity,
                    served,
                };
                if let Some(done) = self.warm.keep(warm) {
                    slots::tear_down(done.store, done.slot, &self.instances);
                }
                Ok(value)
            }
            (Ok((_, value)), None) if self.wants_spare() => {
                self.renew_spare(store, slot, roots);
                Ok(value)
            }
            (result, _) => {
                // The slot is given back only after the store (and its
                // instance) is gone.
                slots::tear_down(store, slot, &self.instances);
                result.map(|(_, value)| value)
            }
        }
    }

    /// Whether the call that just returned normally (whose turn is still
    /// held) should leave a spare instance behind: spares are on for the
    /// plugin (with [`SpareMode::Auto`], it instantiates slowly enough),
    /// it has none and none is under way, and no other call of it runs (a
    /// plugin with calls running instantiates for each of them as fast as
    /// making spares would). See [`super::spare`].
    fn wants_spare(&self) -> bool {
        let limits = &self.grants.limits;
        let alone = self.turns.available_permits() + 1 >= limits.max_concurrent_calls.max(1);
        self.spares_on() && alone && !self.spare.is_full() && !self.spare.is_making()
    }

    /// Starts making a spare for the plugin's next call, with `roots`, in a
    /// free slot and a task of its own, while this call runs (once it has an
    /// instance: a plugin that cannot be instantiated is not tried twice per
    /// call): calls that come back to back then find one ready (made on
    /// another core) instead of each waiting for the one made after the
    /// call before it returned.
    /// Nothing is made when spares are off for the plugin (or its instances
    /// are kept warm), one is ready or under way, or no slot is free (this
    /// never takes a slot from anyone).
    fn make_next_spare(&self, roots: &Roots) {
        if self.warm.enabled() || !self.spares_on() || self.spare.is_full() {
            return;
        }
        let Some(this) = self.me.upgrade() else {
            return;
        };
        if !self.spare.start_making() {
            return;
        }
        let Some(slot) = self.instances.try_take() else {
            return self.spare.abandon();
        };
        let making = MakingSpare::new(self.instances.clone());
        let roots = roots.clone();
        tokio::spawn(async move {
            match this.instantiate_ahead(slot, &making, roots).await {
                Some(spare) => this.spare.put(spare),
                None => this.spare.abandon(),
            }
            drop(making);
        });
    }

    /// Whether the plugin's limits make spares for it ([`SpareMode`]).
    fn spares_on(&self) -> bool {
        match self.grants.limits.spare_instance {
            SpareMode::Never => false,
            SpareMode::Always => true,
            SpareMode::Auto => self.spare.worth_making(),
        }
    }

    /// Tears down a returned call's `store` and makes a spare for a next
    /// call with `roots` in its `slot`, in a task of its own: after the
    /// call's answer is on its way, not before. Until the spare is kept,
    /// a call that needs the slot waits for it, and making stops.
    fn renew_spare(&self, mut store: Store<CallState>, slot: Slot, roots: Roots) {
        let this = match self.me.upgrade() {
            Some(this) if self.spare.start_making() => this,
            _ => return slots::tear_down(store, slot, &self.instances),
        };
        // The plugin's next call need not wait for this teardown.
        store.data_mut().park(self.idle.clone());
        let making = MakingSpare::new(self.instances.clone());
        tokio::spawn(async move {
            drop(store);
            match this.instantiate_ahead(slot, &making, roots).await {
                Some(spare) => this.spare.put(spare),
                None => this.spare.abandon(),
            }
            // Only now, with the spare kept or gone, may a call waiting
            // for a slot look again.
            drop(making);
        });
    }

    /// A fresh instance for a call with `roots`, in `slot`, under the call
    /// deadline; `None` if it failed, or a call wanted a slot meanwhile.
    async fn instantiate_ahead(
        &self,
        slot: Slot,
        making: &MakingSpare,
        roots: Roots,
    ) -> Option<Spare> {
        let wanted = making.wanted();
        tokio::pin!(wanted);
        wanted.as_mut().enable();
        let mut store = self.store(self.idle.clone(), &roots).ok()?;
        let started = std::time::Instant::now();
        let instantiate = self.pool.run(self.pre.instantiate_async(&mut store));
        let deadline = self.grants.limits.call_timeout;
        let instance = tokio::select! {
            instance = tokio::time::timeout(deadline, instantiate) => match instance {
                Ok(Ok(instance)) => {
                    self.spare.instantiated_in(started.elapsed());
                    instance
                }
                Ok(Err(error)) => {
                    tracing::debug!(plugin = %self.name, "no spare instance: {error:#}");
                    return None;
                }
                Err(_) => {
                    tracing::debug!(plugin = %self.name, "no spare instance: instantiation timed out");
                    return None;
                }
            },
            () = &mut wanted => {
                tracing::debug!(plugin = %self.name, "no spare instance: a call needed its slot");
                return None;
            }
        };
        Some(Spare {
            store,
            slot,
            instance,
            roots,
        })
    }

    /// A free instance slot; when none is, one of the plugin's kept
    /// instances is torn down for it. Without one, a call fails; a load
    /// keeps waiting, with a warning each time its patience runs out (it
    /// is delayed by a full host, never lost to it).
    async fn take_slot(&self, patience: Patience) -> Result<Slot, CallError> {
        loop {
            if let Ok(slot) = self.instances.take(patience).await {
                return Ok(slot);
            }
            // Its store goes first, then its slot.
            if let Some(warm) = self.warm.evict() {
                drop(warm);
                continue;
            }
            match patience {
                Patience::Call => return Err(CallError::Busy),
                Patience::Load(waited) => tracing::warn!(
                    plugin = %self.name,
                    "every plugin instance has been in use for {waited:?} \
                     ([server] max_instances); the plugin waits on to load"
                ),
            }
        }
    }
}

/// Drives `call` until it ends, `timeout` passes (not counting time spent
/// waiting for the client) or the caller cancels.
async fn guarded<R>(
    context: &dyn CallContext,
    clock: Arc<WaitClock>,
    timeout: Duration,
    call: impl Future<Output = wasmtime::Result<R>>,
) -> Result<R, CallError> {
    let start = tokio::time::Instant::now();
    tokio::pin!(call);
    loop {
        let (waiting, waited) = clock.waited();
        let wake = if waiting {
            tokio::time::Instant::now() + timeout
        } else {
            start + timeout + waited
        };
        tokio::select! {
            result = &mut call => return result.map_err(CallError::from_wasm),
            () = tokio::time::sleep_until(wake) => {
                let (waiting, waited) = clock.waited();
                if !waiting && start.elapsed() >= timeout + waited {
                    return Err(CallError::Timeout(timeout));
                }
            }
            () = context.cancelled() => return Err(CallError::Cancelled),
        }
    }
}
