//! The driver's clock: the time-stamp counter read inline where the CPU has an invariant one,
//! converted to nanoseconds since a run's epoch with one multiply.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The driver's clock: nanoseconds since the run's epoch, read from the CPU's invariant
/// time-stamp counter where it has one (a few nanoseconds per read, against ~25 for the
/// operating system's clock) and from the monotonic clock elsewhere.
pub struct RunClock {
    clock: quanta::Clock,
    /// True when `clock` reads the time-stamp counter, so the driver reads it directly (an
    /// inlined instruction instead of a call into `quanta`) and lets `quanta` convert.
    tsc: bool,
    /// Nanoseconds per 2^40 ticks of the raw clock (`quanta`'s calibration, as a fixed-point
    /// factor so the conversion inlines to a multiply and a shift).
    ns_per_2_40_ticks: u64,
    base_raw: u64,
    base_ns: u64,
}

impl RunClock {
    /// A clock that counts from `epoch`.
    pub(crate) fn new(epoch: Instant) -> Self {
        let clock = quanta::Clock::new();
        let tsc = reads_time_stamp_counter(&clock);
        let base_raw = clock.raw();
        RunClock {
            base_ns: epoch.elapsed().as_nanos() as u64,
            base_raw,
            ns_per_2_40_ticks: clock.delta_as_nanos(0, 1 << 40),
            clock,
            tsc,
        }
    }

    /// Nanoseconds since the epoch.
    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        self.ns_of(self.clock.raw())
    }

    /// The clock's raw reading now; [`RunClock::ns_of`] converts it.
    #[inline]
    pub(crate) fn raw(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if self.tsc {
            // SAFETY: `tsc` is only set after the CPU was found to have the instruction.
            return unsafe { std::arch::x86_64::_rdtsc() };
        }
        self.clock.raw()
    }

    /// Nanoseconds since the epoch at the raw reading `raw`.
    #[inline]
    pub(crate) fn ns_of(&self, raw: u64) -> u64 {
        // a reading before the base (a counter that differs between cores) counts as the base
        let ticks = raw.saturating_sub(self.base_raw);
        self.base_ns + ((u128::from(ticks) * u128::from(self.ns_per_2_40_ticks)) >> 40) as u64
    }

    /// Waits until `target_ns` after the epoch (sleeps while far, spins the last stretch) and
    /// returns the time it saw then; `None` as soon as `stop` is set (looked at least every
    /// [`STOP_CHECK`] while sleeping).
    #[inline]
    pub(crate) fn wait_until(&self, target_ns: u64, stop: &AtomicBool) -> Option<u64> {
        loop {
            let now = self.now_ns();
            if now >= target_ns {
                return Some(now);
            }
            let left = target_ns - now;
            if left > 200_000 {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                std::thread::sleep(Duration::from_nanos(left - 100_000).min(STOP_CHECK));
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

/// Calibrates the run's clock (the time-stamp counter against the system clock, once per
/// process), so that [`crate::run::drive`] does not do it after its epoch, at its first requests' cost.
pub fn calibrate_clock() {
    drop(quanta::Clock::new());
}

/// The longest the driver sleeps before it looks at the stop flag again.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// True when `clock` reads the CPU's time-stamp counter: the CPU has an invariant one (what
/// `quanta` requires to use it) and a reading of `clock` falls between two of the counter.
fn reads_time_stamp_counter(clock: &quanta::Clock) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__cpuid, _rdtsc};
        // leaf 0x8000_0000 gives the highest extended leaf, so 0x8000_0007 (power management,
        // bit 8: invariant counter) is only asked where it exists
        let invariant =
            __cpuid(0x8000_0000).eax >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0;
        if !invariant {
            return false;
        }
        // SAFETY: an invariant time-stamp counter implies the instruction.
        let (before, reading, after) = unsafe { (_rdtsc(), clock.raw(), _rdtsc()) };
        before <= reading && reading <= after
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = clock;
        false
    }
}
