//! The fuzzing harness shared by the fuzz tests of each crate: random mutations of valid
//! inputs, and a counting allocator that bounds each case's memory. Its allocator counts the
//! whole process, so a test binary that includes it runs its targets one after another.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};

use gadget::source::random::Rng;

/// Counts the bytes allocated now and at most, so each case can check its reader's peak.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// Allocations beyond this fail outright (the case then aborts the test loudly) rather than
/// exhaust the machine.
const HARD_CAP: usize = 4 << 30;

fn grew(by: usize) -> bool {
    let now = CURRENT.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
    now <= HARD_CAP
}

// SAFETY: every call is passed to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !grew(layout.size()) {
            CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !grew(layout.size()) {
            CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old && !grew(new_size - old) {
            CURRENT.fetch_sub(new_size - old, Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        let p = System.realloc(ptr, layout, new_size);
        if p.is_null() && new_size > old {
            CURRENT.fetch_sub(new_size - old, Ordering::Relaxed);
        } else if new_size < old {
            CURRENT.fetch_sub(old - new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Inputs per target.
pub fn cases() -> u64 {
    std::env::var("GADGET_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

/// The first seed (cases use seed, seed + 1, …).
pub fn first_seed() -> u64 {
    std::env::var("GADGET_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x6761_6467_6574)
}

/// A mutation of `input`: one to eight edits of the kinds that break parsers.
pub fn mutate(input: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(8) {
        let len = out.len() as u64;
        let at = |rng: &mut Rng| rng.below(len + 1) as usize;
        match rng.below(9) {
            0 if !out.is_empty() => {
                let i = at(rng).min(out.len() - 1);
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let i = at(rng).min(out.len() - 1);
                out[i] = rng.next_u64() as u8;
            }
            2 => {
                let i = at(rng);
                let n = 1 + rng.below(16) as usize;
                let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                out.splice(i..i, bytes);
            }
            3 if !out.is_empty() => {
                let i = at(rng).min(out.len() - 1);
                let n = (1 + rng.below(64) as usize).min(out.len() - i);
                out.drain(i..i + n);
            }
            4 if !out.is_empty() => {
                // a stretch repeated: long keys, many states, big numbers
                let i = at(rng).min(out.len() - 1);
                let n = (1 + rng.below(256) as usize).min(out.len() - i);
                let piece = out[i..i + n].to_vec();
                for _ in 0..1 + rng.below(64) {
                    out.splice(i..i, piece.iter().copied());
                }
            }
            5 => {
                let cut = at(rng);
                out.truncate(cut);
            }
            6 => {
                // a varint as large as they come
                let i = at(rng);
                out.splice(
                    i..i,
                    [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
                );
            }
            7 => {
                // a decimal number as large as they come
                let i = at(rng);
                out.splice(i..i, b"99999999999999999999".iter().copied());
            }
            _ => {
                let i = at(rng);
                out.splice(i..i, b"\n\t=\"[]{}".iter().copied());
            }
        }
    }
    out
}

/// Runs `read` on `cases()` mutations of each seed input; checks that no case panics and that
/// none allocates more than `bound(input length)` bytes at its peak.
pub fn fuzz(target: &str, seeds: &[Vec<u8>], bound: impl Fn(usize) -> usize, read: impl Fn(&[u8])) {
    fuzz_with(target, seeds, cases(), bound, mutate, read);
}

/// [`fuzz`] with `cases` cases, each input made by `mutate` (of a seed, with the case's
/// random numbers).
pub fn fuzz_with(
    target: &str,
    seeds: &[Vec<u8>],
    cases: u64,
    bound: impl Fn(usize) -> usize,
    mutate: impl Fn(&[u8], &mut Rng) -> Vec<u8>,
    read: impl Fn(&[u8]),
) {
    assert!(!seeds.is_empty(), "{target}: no seed inputs");
    let first = first_seed();
    let mut worst = (0usize, 0usize);
    for case in 0..cases {
        let seed = first.wrapping_add(case);
        let mut rng = Rng::new(seed);
        let base = &seeds[(case % seeds.len() as u64) as usize];
        let input = mutate(base, &mut rng);
        let before = CURRENT.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| read(&input)));
        let used = PEAK.load(Ordering::Relaxed).saturating_sub(before);
        if outcome.is_err() {
            panic!("{target}: case {case} (GADGET_FUZZ_SEED={seed} GADGET_FUZZ_CASES=1) panicked");
        }
        let allowed = bound(input.len());
        assert!(
            used <= allowed,
            "{target}: case {case} (GADGET_FUZZ_SEED={seed} GADGET_FUZZ_CASES=1) allocated \
             {used} bytes for {} bytes of input, more than the {allowed} allowed",
            input.len()
        );
        if used > worst.0 {
            worst = (used, input.len());
        }
    }
    eprintln!(
        "{target}: {cases} cases, at most {} bytes allocated (for {} bytes of input)",
        worst.0, worst.1
    );
}
