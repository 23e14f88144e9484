//! Threads for a plugin's blocking OS work.
//!
//! WASI file operations block (opening a FIFO waits for a writer; a slow
//! disk waits), so the WASI implementation runs them on the ambient tokio
//! runtime's blocking threads. Were that the host's runtime, calls stuck in
//! the OS would use up the threads the host itself needs (stdin, file
//! reads, compiling) and stop everything. Instead each plugin gets a small
//! runtime of its own, made ambient while its calls are polled: its calls
//! block only its own threads, at most `max_blocking_threads` of them, and
//! never the host's or another plugin's.

use super::ticker::Ticker;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::runtime::{Handle, Runtime};

/// A plugin's own runtime: one idle worker (it drives the timers and
/// sockets the plugin's WASI work registers) and a capped blocking pool.
pub(super) struct BlockingPool {
    runtime: Option<Runtime>,
    ticker: Arc<Ticker>,
}

impl BlockingPool {
    /// A pool for `plugin` of at most `max_threads` blocking threads,
    /// whose polls keep `ticker` ticking.
    pub(super) fn new(
        plugin: &str,
        max_threads: usize,
        ticker: Arc<Ticker>,
    ) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(max_threads.max(1))
            .thread_name(format!("plugin-{plugin}"))
            .enable_all()
            .build()?;
        Ok(BlockingPool {
            runtime: Some(runtime),
            ticker,
        })
    }

    /// `future`, polled with this pool's runtime as the ambient one and
    /// the epoch ticker ticking: plugin code runs only inside such polls.
    pub(super) fn run<F: Future>(&self, future: F) -> InPool<F> {
        InPool {
            handle: self.handle().clone(),
            ticker: self.ticker.clone(),
            inner: Box::pin(future),
        }
    }

    fn handle(&self) -> &Handle {
        self.runtime
            .as_ref()
            .expect("present until dropped")
            .handle()
    }
}

impl Drop for BlockingPool {
    fn drop(&mut self) {
        // Threads stuck in the OS cannot be joined; let them go.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A future polled inside a plugin's runtime context.
pub(super) struct InPool<F> {
    handle: Handle,
    ticker: Arc<Ticker>,
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for InPool<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let _ambient = this.handle.enter();
        let _ticking = this.ticker.running();
        this.inner.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stuck_blocking_work_holds_only_the_pool_it_ran_in() {
        let pool = BlockingPool::new("test", 2, Ticker::new()).unwrap();
        let spawn_in_pool = |job: Box<dyn FnOnce() -> u32 + Send>| {
            let _ambient = pool.handle().enter();
            tokio::task::spawn_blocking(job)
        };
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let wait = std::sync::Arc::new(parking_lot::Mutex::new(wait));
        // Two stuck jobs fill the pool.
        for _ in 0..2 {
            let wait = wait.clone();
            spawn_in_pool(Box::new(move || {
                let _ = wait.lock().recv_timeout(std::time::Duration::from_secs(30));
                0
            }));
        }
        // The host's own blocking pool is untouched.
        assert_eq!(tokio::task::spawn_blocking(|| 7).await.unwrap(), 7);
        // A third job in the plugin's pool waits for a thread.
        let queued = spawn_in_pool(Box::new(|| 1));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!queued.is_finished());
        drop(release);
        assert_eq!(queued.await.unwrap(), 1);
        // Polled through the pool, a future's blocking work lands there too.
        assert_eq!(
            pool.run(async { tokio::task::spawn_blocking(|| 3).await.unwrap() })
                .await,
            3
        );
    }
}
