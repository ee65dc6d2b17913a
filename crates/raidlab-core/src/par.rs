//! Running independent jobs on a few threads (validate, reproduce, sweep).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `f(0..n)` on up to `threads` threads, results in index order; `progress`
/// is told `(done, n)` as each job finishes. The results do not depend on
/// the thread count.
pub fn map<T: Send>(
    n: usize,
    threads: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
    f: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let slots: Mutex<Vec<Option<T>>> = Mutex::new((0..n).map(|_| None).collect());
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, n.max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = f(i);
                slots.lock().expect("no thread panics holding the lock")[i] = Some(r);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, n);
            });
        }
    });
    slots
        .into_inner()
        .expect("threads have finished")
        .into_iter()
        .map(|x| x.expect("every index ran"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_come_back_in_order_on_any_thread_count() {
        for t in [1, 2, 7] {
            assert_eq!(
                super::map(10, t, &|_, _| {}, |i| i * i),
                (0..10).map(|i| i * i).collect::<Vec<_>>()
            );
        }
        assert!(super::map(0, 4, &|_, _| {}, |i| i).is_empty());
    }
}
