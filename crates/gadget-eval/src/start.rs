//! The start line of a run: the schedule of every instance starts together, once every
//! instance's store is open and its workload has its first requests ready, so that neither
//! counts in any request's latency or in the run's throughput. Shards of one workload on
//! several machines agree on a wall-clock instant instead ([`StartLine::at`], `--start-at`):
//! each starts there, once ready, and one not ready by then does not start at all.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// The longest a waiting instance goes without looking at the stop flag.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// Where the instances of a run wait for each other before they start.
#[derive(Debug)]
pub struct StartLine {
    parties: usize,
    /// The agreed start on the wall clock, if any.
    at: Option<SystemTime>,
    state: Mutex<Line>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct Line {
    arrived: usize,
    /// The start, once every instance arrived.
    epoch: Option<Instant>,
    /// An instance could not get ready: nobody starts.
    abandoned: bool,
    /// The agreed start had passed by this much when the last instance was ready.
    missed: Option<Duration>,
}

impl StartLine {
    /// A start line for `parties` instances.
    pub fn new(parties: usize) -> Self {
        StartLine {
            parties,
            at: None,
            state: Mutex::new(Line::default()),
            changed: Condvar::new(),
        }
    }

    /// The same start line, starting at the wall-clock instant `at` (when given) rather than
    /// when the last instance arrives.
    pub fn at(mut self, at: Option<SystemTime>) -> Self {
        self.at = at;
        self
    }

    /// How late the last instance was for the agreed start ([`StartLine::at`]), when it was:
    /// then nobody started.
    pub fn missed(&self) -> Option<Duration> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .missed
    }

    /// Arrives ready and waits for the others; the run's epoch (the same for every instance:
    /// the moment the last one arrived, or the agreed start, waited for), or `None` when an
    /// instance abandoned, the agreed start passed before every instance was ready, or `stop`
    /// was set meanwhile (looked at every 50 ms).
    pub fn arrive(&self, stop: &AtomicBool) -> Option<Instant> {
        let mut line = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        line.arrived += 1;
        if line.arrived >= self.parties {
            let now = Instant::now();
            match self.at.map(|at| at.duration_since(SystemTime::now())) {
                None => {
                    line.epoch.get_or_insert(now);
                }
                Some(Ok(ahead)) => {
                    line.epoch.get_or_insert(now + ahead);
                }
                Some(Err(late)) => {
                    line.missed = Some(late.duration());
                    line.abandoned = true;
                }
            }
            self.changed.notify_all();
        }
        loop {
            if line.abandoned {
                return None;
            }
            if let Some(epoch) = line.epoch {
                drop(line);
                return wait_until(epoch, stop).then_some(epoch);
            }
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            line = self
                .changed
                .wait_timeout(line, LOOK_EVERY)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Gives up: this instance cannot start (its store failed to open), so no one does.
    pub fn abandon(&self) {
        let mut line = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        line.abandoned = true;
        self.changed.notify_all();
    }
}

/// Sleeps until `epoch`, looking at `stop` every 50 ms; false when stopped.
fn wait_until(epoch: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= epoch {
            return true;
        }
        std::thread::sleep((epoch - now).min(LOOK_EVERY));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_start_is_when_the_last_instance_arrives_and_the_same_for_all() {
        let line = Arc::new(StartLine::new(3));
        let stop = Arc::new(AtomicBool::new(false));
        let early: Vec<_> = (0..2)
            .map(|_| {
                let (line, stop) = (line.clone(), stop.clone());
                std::thread::spawn(move || line.arrive(&stop))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(100));
        let late_arrival = Instant::now();
        let last = line.arrive(&stop).unwrap();
        assert!(
            last >= late_arrival,
            "the start waits for the last instance"
        );
        for e in early {
            assert_eq!(e.join().unwrap(), Some(last));
        }
    }

    #[test]
    fn an_agreed_start_is_waited_for_and_a_passed_one_starts_nobody() {
        let stop = AtomicBool::new(false);
        let at = SystemTime::now() + Duration::from_millis(150);
        let line = StartLine::new(1).at(Some(at));
        let epoch = line.arrive(&stop).unwrap();
        assert!(
            SystemTime::now() >= at,
            "the start is not before the agreed instant"
        );
        assert!(Instant::now() >= epoch);
        assert_eq!(line.missed(), None);

        let line = StartLine::new(1).at(Some(SystemTime::now() - Duration::from_secs(2)));
        assert_eq!(line.arrive(&stop), None);
        assert!(line.missed().unwrap() >= Duration::from_secs(2));
    }

    #[test]
    fn an_abandoned_line_or_a_stop_request_releases_the_waiting() {
        let line = Arc::new(StartLine::new(2));
        let stop = Arc::new(AtomicBool::new(false));
        let waiting = {
            let (line, stop) = (line.clone(), stop.clone());
            std::thread::spawn(move || line.arrive(&stop))
        };
        line.abandon();
        assert_eq!(waiting.join().unwrap(), None);

        let line = Arc::new(StartLine::new(2));
        let waiting = {
            let (line, stop) = (line.clone(), stop.clone());
            std::thread::spawn(move || line.arrive(&stop))
        };
        stop.store(true, Ordering::SeqCst);
        assert_eq!(waiting.join().unwrap(), None);
    }
}
