//! Running a recorder test's settings two at a time: each recording is a JVM that keeps about
//! one core busy, and the machine has two.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Runs `check` on every setting, two at a time; the reports of those that failed (`Some`),
/// in the order they finished.
pub fn two_at_a_time<S: Sync>(
    settings: &[S],
    check: impl Fn(usize, &S) -> Option<String> + Sync,
) -> Vec<String> {
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(setting) = settings.get(i) else {
                    break;
                };
                if let Some(report) = check(i, setting) {
                    failed.lock().unwrap().push(report);
                }
            });
        }
    });
    failed.into_inner().unwrap()
}
