//! At most one job in flight per key: a request while the key's job runs
//! makes it run once more afterwards, however many requests came. Used
//! where a burst of requests (a plugin saying its list changed in a loop, a
//! file written in many steps) must cost one job at a time, and where one
//! key's slow job must not delay another key's.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

/// Jobs by key, each running at most once at a time.
#[derive(Default)]
pub struct Coalescer {
    /// Keys whose job runs now, and whether it is wanted again after.
    running: Mutex<HashMap<String, bool>>,
}

impl Coalescer {
    /// Runs `job` for `key` on a task of its own, unless a job for `key`
    /// runs now; then that job runs once more when it ends (with the
    /// newest `job`).
    pub fn request<F, Fut>(self: &Arc<Self>, key: &str, job: F)
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        {
            let mut running = self.lock();
            if let Some(again) = running.get_mut(key) {
                *again = true;
                return;
            }
            running.insert(key.to_owned(), false);
        }
        let this = self.clone();
        let key = key.to_owned();
        tokio::spawn(async move {
            loop {
                job().await;
                let mut running = this.lock();
                match running.get_mut(&key) {
                    Some(again) if *again => *again = false,
                    _ => {
                        running.remove(&key);
                        return;
                    }
                }
            }
        });
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, HashMap<String, bool>> {
        self.running.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn a_burst_runs_the_job_at_most_twice_and_keys_do_not_wait_for_each_other() {
        let coalescer = Arc::new(Coalescer::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let (release, gate) = tokio::sync::watch::channel(false);
        for _ in 0..100 {
            let (runs, gate) = (runs.clone(), gate.clone());
            coalescer.request("slow", move || {
                let (runs, mut gate) = (runs.clone(), gate.clone());
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    let _ = gate.wait_for(|open| *open).await;
                }
            });
        }
        let (done, other) = tokio::sync::oneshot::channel();
        let done = Mutex::new(Some(done));
        coalescer.request("other", move || {
            let done = done.lock().take();
            async move {
                if let Some(done) = done {
                    let _ = done.send(());
                }
            }
        });
        // "other" finishes while "slow" is still stuck.
        tokio::time::timeout(std::time::Duration::from_secs(10), other)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        release.send(true).unwrap();
        for _ in 0..100 {
            if coalescer.lock().is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }
}
