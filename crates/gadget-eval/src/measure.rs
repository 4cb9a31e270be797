//! Latency measurement: lossless HDR histograms per op, a time series per interval, and the
//! paper's summary table.
//!
//! Two times per request: **latency** = completion − intended start (from the arrival
//! schedule; coordinated-omission-correct, it includes time spent queued behind a slow
//! request) and **service time** = completion − actual start (the store's own time).

use gadget::access::Op;
use gadget_results::summary::{
    histogram, IntervalOp, IntervalStats, OpSummary, Spectrum, HIGHEST_NS, MAX_INTERVALS,
};
use gadget_results::{hdr, OpHistogram, RunHistograms};
use hdrhistogram::Histogram;

/// log2 of half the sub-buckets of a bucket: 3 significant digits need 2,048 sub-buckets.
const SUB_BUCKET_HALF_MAGNITUDE: u32 = 10;
/// Values below this fit bucket 0.
const SUB_BUCKET_MASK: u64 = (1 << (SUB_BUCKET_HALF_MAGNITUDE + 1)) - 1;

/// The counts index of `value` in a histogram of [`histogram`]'s bounds (lowest 1, so the unit
/// magnitude is 0): HdrHistogram's bucket and sub-bucket arithmetic, with the bounds fixed.
#[inline]
const fn staged_index(value: u64) -> usize {
    let bucket = 63 - SUB_BUCKET_HALF_MAGNITUDE - (value | SUB_BUCKET_MASK).leading_zeros();
    let sub_bucket = (value >> bucket) as usize;
    ((bucket as usize + 1) << SUB_BUCKET_HALF_MAGNITUDE) + sub_bucket
        - (1 << SUB_BUCKET_HALF_MAGNITUDE)
}

/// The lowest value counted at `index` (the inverse of [`staged_index`]).
fn staged_value(index: usize) -> u64 {
    let half = 1usize << SUB_BUCKET_HALF_MAGNITUDE;
    let bucket = (index >> SUB_BUCKET_HALF_MAGNITUDE) as u32;
    let sub_bucket = (index & (half - 1)) + half;
    if bucket == 0 {
        (sub_bucket - half) as u64
    } else {
        (sub_bucket as u64) << (bucket - 1)
    }
}

/// The highest value counted at `index`: the lowest of the next index, less one.
fn staged_highest_value(index: usize) -> u64 {
    let bucket = (index >> SUB_BUCKET_HALF_MAGNITUDE) as u32;
    staged_value(index) + (1u64 << bucket.saturating_sub(1)) - 1
}

/// Counts in a histogram of [`histogram`]'s bounds: HdrHistogram's buckets until one holds
/// [`HIGHEST_NS`], and one more half-bucket.
const STAGED_LEN: usize = {
    let mut untrackable = SUB_BUCKET_MASK + 1;
    let mut buckets = 1;
    while untrackable <= HIGHEST_NS {
        untrackable <<= 1;
        buckets += 1;
    }
    (buckets + 1) << SUB_BUCKET_HALF_MAGNITUDE
};

/// Where values beyond the counts go: [`HIGHEST_NS`]'s index, as `saturating_record` does.
const SATURATED_INDEX: usize = staged_index(HIGHEST_NS);

/// Where [`StagedCounts`] count `value`, as `Histogram::saturating_record` would record it:
/// values beyond the counts at the highest trackable one, 0 as 1 (the lowest).
#[inline]
fn counted_index(value: u64) -> usize {
    let index = staged_index(if value == 0 { 1 } else { value });
    if index >= STAGED_LEN {
        SATURATED_INDEX
    } else {
        index
    }
}

/// One op's latencies in the current interval, counted in [`histogram`]'s own buckets: a
/// recording is an index computation and an increment, without the histogram's bookkeeping
/// per value (its recording costs about four times as much). Added to a histogram when the
/// interval closes; the histogram then holds what recording each value would have given it
/// (HdrHistogram reports every value at its bucket's resolution, minimum and maximum too).
#[derive(Debug, Clone)]
struct StagedCounts {
    /// A fixed length, so that an index from [`counted_index`] needs no bounds check.
    counts: Box<[u64; STAGED_LEN]>,
    /// The lowest and highest index counted since the last reset (`first > last`: none).
    first: usize,
    last: usize,
}

/// [`STAGED_LEN`] zero counts, allocated zeroed (pages the counts never reach stay unmapped).
fn zeroed_counts() -> Box<[u64; STAGED_LEN]> {
    vec![0; STAGED_LEN]
        .into_boxed_slice()
        .try_into()
        .expect("a vector of STAGED_LEN counts")
}

impl StagedCounts {
    fn new() -> Self {
        StagedCounts {
            counts: zeroed_counts(),
            first: usize::MAX,
            last: 0,
        }
    }

    /// Counts one value, as `Histogram::saturating_record` would (values beyond the counts
    /// count as the highest trackable one; 0 counts as 1, the lowest).
    #[cfg(test)]
    fn record(&mut self, value: u64) {
        self.count_at(counted_index(value));
    }

    /// Counts spanning every index from the start: [`count_in_span`](Self::count_in_span)
    /// then counts without tracking the lowest and highest index, for counts read only at the
    /// end of a run (a state's), where a pass over every index costs nothing per request.
    fn spanning() -> Self {
        StagedCounts {
            counts: zeroed_counts(),
            first: 0,
            last: STAGED_LEN - 1,
        }
    }

    /// Counts one value at its [`counted_index`] in counts made [`spanning`](Self::spanning).
    #[inline]
    fn count_in_span(&mut self, index: usize) {
        self.counts[index] += 1;
    }

    /// Counts one value at its [`counted_index`].
    #[inline]
    fn count_at(&mut self, index: usize) {
        self.counts[index] += 1;
        self.first = self.first.min(index);
        self.last = self.last.max(index);
    }

    fn is_empty(&self) -> bool {
        self.first > self.last
    }

    /// Adds the counts to `h`.
    fn add_to(&self, h: &mut Histogram<u64>) {
        if self.is_empty() {
            return;
        }
        for (i, &count) in self.counts[self.first..=self.last].iter().enumerate() {
            if count > 0 {
                h.record_n(staged_value(self.first + i), count)
                    .expect("a staged value is within the histogram's bounds");
            }
        }
    }

    /// How many values are counted.
    fn total(&self) -> u64 {
        self.used().iter().sum()
    }

    /// The counts from the lowest to the highest index counted.
    fn used(&self) -> &[u64] {
        if self.is_empty() {
            &[]
        } else {
            &self.counts[self.first..=self.last]
        }
    }

    /// Adds the counts to `other`'s.
    fn add_to_counts(&self, other: &mut StagedCounts) {
        if self.is_empty() {
            return;
        }
        for (o, &c) in other.counts[self.first..=self.last]
            .iter_mut()
            .zip(self.used())
        {
            *o += c;
        }
        other.first = other.first.min(self.first);
        other.last = other.last.max(self.last);
    }

    /// The value at quantile `q` of the `total` values counted, as
    /// `Histogram::value_at_quantile` gives it (the highest value of the index the quantile's
    /// count falls in), 0 when nothing is counted; it reads only the indices counted.
    #[cfg(test)]
    fn value_at_quantile(&self, q: f64, total: u64) -> u64 {
        self.values_at_quantiles([q], total)[0]
    }

    /// The values at the ascending quantiles `qs`, as [`Self::value_at_quantile`] gives each,
    /// in one pass over the counts.
    fn values_at_quantiles<const N: usize>(&self, qs: [f64; N], total: u64) -> [u64; N] {
        let wanted = qs.map(|q| ((q.min(1.0) * total as f64).ceil() as u64).max(1));
        let mut values = [0; N];
        let mut next = 0;
        let mut seen = 0;
        for (i, &c) in self.used().iter().enumerate() {
            seen += c;
            while next < N && seen >= wanted[next] {
                values[next] = staged_highest_value(self.first + i);
                next += 1;
            }
            if next == N {
                break;
            }
        }
        values
    }

    /// Forgets every count.
    fn reset(&mut self) {
        if !self.is_empty() {
            self.counts[self.first..=self.last].fill(0);
        }
        self.first = usize::MAX;
        self.last = 0;
    }
}

/// Histograms of one op (or of all ops).
#[derive(Debug, Clone)]
pub struct OpHistograms {
    /// Completion − intended start.
    pub latency: Histogram<u64>,
    /// Completion − actual start.
    pub service: Histogram<u64>,
}

impl OpHistograms {
    fn new() -> Self {
        OpHistograms {
            latency: histogram(),
            service: histogram(),
        }
    }
}

/// One op's latencies in one interval, kept for the HDR interval log.
#[derive(Debug, Clone)]
pub struct LoggedInterval {
    /// The interval's start, from the run's start.
    pub start_ns: u64,
    /// Its end.
    pub end_ns: u64,
    /// The op.
    pub op: Op,
    /// Its latencies (completion − intended start).
    pub latency: Histogram<u64>,
}

/// Records every measured request.
///
/// A request costs one count (and a histogram record in open loop): its latency is counted in
/// the current interval's counts of its op, which become the interval's histogram when the
/// interval closes, added to the op's total; its service time goes straight into the op's
/// total, except in a closed loop, where a request starts when the previous one completes and
/// its service time is its latency.
#[derive(Debug)]
pub struct Recorder {
    /// Latency per op of the closed intervals, indexed by the op's code; allocated on first use.
    latency: Vec<Option<Histogram<u64>>>,
    /// Service time per op (unused in a closed loop).
    service: Vec<Option<Histogram<u64>>>,
    /// True in a closed loop: service time is latency.
    service_is_latency: bool,
    /// The current interval's latencies per op.
    /// An array of every op, so that an op's slot needs no bounds check.
    interval: [Option<StagedCounts>; Op::COUNT],
    /// Every op's counts of the closing interval together (kept to be reused).
    all: Option<StagedCounts>,
    interval_start_ns: u64,
    /// The end of the current interval: a multiple of `interval_ns` from the run's start, so
    /// that the intervals of concurrent instances line up.
    interval_end_ns: u64,
    interval_ns: u64,
    /// One entry per finished interval, the first [`MAX_INTERVALS`] of them.
    pub series: Vec<IntervalStats>,
    hdr_log: Option<Vec<LoggedInterval>>,
    /// True once intervals beyond [`MAX_INTERVALS`] were left out of the series and the log.
    truncated: bool,
    /// Latency per state (by the request's state index), counted as the ops' intervals are
    /// (an index and an increment per request, not a histogram's bookkeeping), allocated when
    /// a state first occurs: what each state, and each store the states live in, was served
    /// with.
    states: Vec<Option<StagedCounts>>,
}

/// One empty slot per op.
fn per_op<T>() -> Vec<Option<T>> {
    (0..Op::ALL.len()).map(|_| None).collect()
}

impl Recorder {
    /// A recorder with a time-series interval of `interval_ns`; `keep_intervals` keeps every
    /// interval histogram for an HDR interval log; `closed_loop` when every request starts at
    /// its intended start (its service time is then its latency, recorded once).
    pub fn new(interval_ns: u64, keep_intervals: bool, closed_loop: bool) -> Self {
        Recorder {
            latency: per_op(),
            service: per_op(),
            service_is_latency: closed_loop,
            interval: std::array::from_fn(|_| None),
            all: None,
            interval_start_ns: 0,
            interval_end_ns: interval_ns.max(1),
            interval_ns: interval_ns.max(1),
            series: Vec::new(),
            hdr_log: keep_intervals.then(Vec::new),
            states: Vec::new(),
            truncated: false,
        }
    }

    /// Starts measuring at `now_ns` (after the warm-up).
    pub fn start(&mut self, now_ns: u64) {
        self.interval_start_ns = now_ns;
        self.interval_end_ns = (now_ns / self.interval_ns + 1) * self.interval_ns;
    }

    /// Records one request; `now_ns` is its completion. In a closed loop `service_ns` is not
    /// recorded (it equals `latency_ns`).
    #[inline(always)]
    pub fn record(&mut self, op: Op, latency_ns: u64, service_ns: u64, now_ns: u64) {
        self.count(op, counted_index(latency_ns), service_ns, now_ns);
    }

    /// [`Recorder::record`] with the latency's [`counted_index`].
    #[inline(always)]
    fn count(&mut self, op: Op, latency_index: usize, service_ns: u64, now_ns: u64) {
        self.count_latency(op, latency_index, now_ns);
        if !self.service_is_latency {
            self.service[op as usize]
                .get_or_insert_with(histogram)
                .saturating_record(service_ns.max(1));
        }
    }

    /// Counts a latency of `op` at its [`counted_index`] in the interval that holds `now_ns`.
    #[inline(always)]
    fn count_latency(&mut self, op: Op, latency_index: usize, now_ns: u64) {
        if now_ns >= self.interval_end_ns {
            self.close_interval(now_ns);
        }
        match &mut self.interval[op as usize] {
            Some(counts) => counts.count_at(latency_index),
            None => self.count_first_of_op(op, latency_index),
        }
    }

    /// Counts the first latency of `op` (in the run: an interval's counts are kept once made).
    #[cold]
    fn count_first_of_op(&mut self, op: Op, latency_index: usize) {
        self.interval[op as usize]
            .get_or_insert_with(StagedCounts::new)
            .count_at(latency_index);
    }

    /// Records one request's latency under its state; the first request of a state allocates
    /// its counts, no other does.
    #[inline(always)]
    pub fn record_state(&mut self, state: usize, latency_ns: u64) {
        self.count_state(state, counted_index(latency_ns));
    }

    /// Records one request as [`Recorder::record`] and [`Recorder::record_state`] together
    /// do, its latency's bucket found once for both: an open loop's per-request call.
    #[inline(always)]
    pub fn record_in_state(
        &mut self,
        op: Op,
        state: usize,
        latency_ns: u64,
        service_ns: u64,
        now_ns: u64,
    ) {
        let index = counted_index(latency_ns);
        self.count(op, index, service_ns, now_ns);
        self.count_state(state, index);
    }

    /// Records one request of a closed loop, whose service time is its latency, as
    /// [`Recorder::record_in_state`] does: a closed loop's per-request call, for a recorder
    /// made with `closed_loop`.
    #[inline(always)]
    pub fn record_completion(&mut self, op: Op, state: usize, latency_ns: u64, now_ns: u64) {
        debug_assert!(self.service_is_latency, "a recorder made for a closed loop");
        let index = counted_index(latency_ns);
        self.count_latency(op, index, now_ns);
        self.count_state(state, index);
    }

    #[inline(always)]
    fn count_state(&mut self, state: usize, index: usize) {
        match self.states.get_mut(state) {
            Some(Some(counts)) => counts.count_in_span(index),
            _ => self.count_first_of_state(state, index),
        }
    }

    /// Counts the first latency of `state`, which allocates its counts.
    #[cold]
    fn count_first_of_state(&mut self, state: usize, index: usize) {
        if state >= self.states.len() {
            self.states.resize_with(state + 1, || None);
        }
        self.states[state]
            .get_or_insert_with(StagedCounts::spanning)
            .count_in_span(index);
    }

    /// The latency histogram of state `state` (what recording each latency into it would have
    /// given), `None` when no request named it.
    pub fn state_histogram(&self, state: usize) -> Option<Histogram<u64>> {
        let counts = self.states.get(state)?.as_ref()?;
        let mut h = histogram();
        counts.add_to(&mut h);
        Some(h)
    }

    /// The histograms of `op` over everything recorded so far, `None` when it never occurred.
    pub fn op_histograms(&self, op: Op) -> Option<OpHistograms> {
        let i = op as usize;
        if self.latency[i].is_none() && self.interval[i].is_none() {
            return None;
        }
        let mut h = OpHistograms::new();
        if let Some(closed) = &self.latency[i] {
            h.latency.add(closed).expect("same bounds");
        }
        if let Some(current) = &self.interval[i] {
            current.add_to(&mut h.latency);
        }
        if self.service_is_latency {
            h.service = h.latency.clone();
        } else if let Some(s) = &self.service[i] {
            h.service = s.clone();
        }
        Some(h)
    }

    /// True when `op` was recorded.
    pub fn occurred(&self, op: Op) -> bool {
        self.latency[op as usize].is_some() || self.interval[op as usize].is_some()
    }

    /// True when intervals beyond [`MAX_INTERVALS`] were left out of the time series.
    pub fn is_series_truncated(&self) -> bool {
        self.truncated
    }

    /// Ends the interval that contains `now_ns`'s predecessor; empty intervals are recorded too,
    /// until the series is full: then the empty ones are skipped at once.
    fn close_interval(&mut self, now_ns: u64) {
        while now_ns >= self.interval_end_ns {
            self.push_interval(self.interval_end_ns);
            if self.truncated && now_ns >= self.interval_end_ns {
                let empty = (now_ns - self.interval_end_ns) / self.interval_ns + 1;
                self.interval_start_ns += empty * self.interval_ns;
                self.interval_end_ns += empty * self.interval_ns;
            }
        }
    }

    fn push_interval(&mut self, end_ns: u64) {
        let start = self.interval_start_ns;
        let keep = self.series.len() < MAX_INTERVALS;
        self.truncated |= !keep;
        let seconds = (end_ns - start) as f64 / 1e9;
        let mut ops = Vec::new();
        // everything here reads only the indices the interval counted: closing a 1 ms interval
        // must not hold up the requests behind it (whole histograms took ~100 µs)
        let all = self.all.get_or_insert_with(StagedCounts::new);
        for op in Op::ALL {
            if let Some(staged) = self.interval[op as usize].as_mut() {
                if staged.is_empty() {
                    continue;
                }
                if keep {
                    ops.push(interval_op(op.name(), staged, seconds));
                    staged.add_to_counts(all);
                }
                staged.add_to(self.latency[op as usize].get_or_insert_with(histogram));
                if let Some(log) = self.hdr_log.as_mut().filter(|_| keep) {
                    let mut latency = histogram();
                    staged.add_to(&mut latency);
                    log.push(LoggedInterval {
                        start_ns: start,
                        end_ns,
                        op,
                        latency,
                    });
                }
                staged.reset();
            }
        }
        if keep {
            self.series.push(IntervalStats {
                start_s: start as f64 / 1e9,
                end_s: end_ns as f64 / 1e9,
                all: interval_op("all", all, seconds),
                ops,
            });
        }
        all.reset();
        self.interval_start_ns = end_ns;
        self.interval_end_ns = end_ns + self.interval_ns;
    }

    /// Closes the last (partial) interval at `end_ns`.
    pub fn finish(&mut self, end_ns: u64) {
        self.close_interval(end_ns);
        if end_ns > self.interval_start_ns && self.interval.iter().flatten().any(|c| !c.is_empty())
        {
            self.push_interval(end_ns);
        }
    }

    /// Adds the measurements of a concurrent instance: histograms op by op, the time series
    /// interval by interval (intervals end on the same boundaries from the shared start), and
    /// its state i's counts to state `first_state + i` (0 when the instances share their
    /// states, as a Flink job's subtasks do).
    pub fn merge(&mut self, other: &Recorder, first_state: usize) {
        self.truncated |= other.truncated;
        for op in Op::ALL {
            let Some(theirs) = other.op_histograms(op) else {
                continue;
            };
            let i = op as usize;
            self.latency[i]
                .get_or_insert_with(histogram)
                .add(&theirs.latency)
                .expect("same bounds");
            if !self.service_is_latency {
                self.service[i]
                    .get_or_insert_with(histogram)
                    .add(&theirs.service)
                    .expect("same bounds");
            }
        }
        for theirs in &other.series {
            match self
                .series
                .iter_mut()
                .find(|s| (s.end_s - theirs.end_s).abs() < 1e-9)
            {
                Some(s) => s.absorb(theirs),
                None => self.series.push(theirs.clone()),
            }
        }
        self.series
            .sort_by(|a, b| a.end_s.partial_cmp(&b.end_s).expect("finite times"));
        for (i, theirs) in other.states.iter().enumerate() {
            let i = first_state + i;
            if let Some(counts) = theirs {
                if i >= self.states.len() {
                    self.states.resize_with(i + 1, || None);
                }
                counts.add_to_counts(self.states[i].get_or_insert_with(StagedCounts::spanning));
            }
        }
        if let (Some(log), Some(theirs)) = (self.hdr_log.as_mut(), other.hdr_log.as_ref()) {
            log.extend(theirs.iter().cloned());
            log.sort_by_key(|i| (i.start_ns, i.op));
        }
    }

    /// The latency percentile spectrum of each op that occurred, then of `all`.
    pub fn spectra(&self) -> Vec<Spectrum> {
        let mut out = Vec::new();
        let mut all: Option<Histogram<u64>> = None;
        for op in Op::ALL {
            if let Some(h) = self.op_histograms(op) {
                out.push(Spectrum::of(op.name(), &h.latency));
                match all.as_mut() {
                    Some(a) => a.add(&h.latency).expect("same bounds"),
                    None => all = Some(h.latency),
                }
            }
        }
        if let Some(a) = all {
            out.push(Spectrum::of("all", &a));
        }
        out
    }

    /// Summary rows per op that occurred, then `all`.
    pub fn summary(&self, seconds: f64) -> (Vec<OpSummary>, Vec<OpSummary>) {
        let mut latency = Vec::new();
        let mut service = Vec::new();
        let mut all = OpHistograms::new();
        for op in Op::ALL {
            if let Some(h) = self.op_histograms(op) {
                latency.push(OpSummary::from_histogram(op.name(), &h.latency, seconds));
                service.push(OpSummary::from_histogram(op.name(), &h.service, seconds));
                all.latency.add(&h.latency).expect("same bounds");
                all.service.add(&h.service).expect("same bounds");
            }
        }
        latency.push(OpSummary::from_histogram("all", &all.latency, seconds));
        service.push(OpSummary::from_histogram("all", &all.service, seconds));
        (latency, service)
    }

    /// The full latency and service-time histograms of each op recorded, as results keep them.
    pub fn histograms(&self) -> RunHistograms {
        let mut latency = Vec::new();
        let mut service = Vec::new();
        for op in Op::ALL {
            if let Some(h) = self.op_histograms(op) {
                let op = op.name().to_string();
                latency.push(OpHistogram {
                    op: op.clone(),
                    hdr: hdr::encode(&h.latency),
                });
                service.push(OpHistogram {
                    op,
                    hdr: hdr::encode(&h.service),
                });
            }
        }
        RunHistograms {
            encoding: hdr::ENCODING.to_string(),
            latency,
            service,
            per_state: Vec::new(),
        }
    }

    /// The interval histograms kept for the HDR log (`None` unless asked for at creation).
    pub fn logged_intervals(&self) -> Option<&[LoggedInterval]> {
        self.hdr_log.as_deref()
    }
}

/// The row of `op` in one interval, from its staged counts over `seconds`.
fn interval_op(op: &str, counts: &StagedCounts, seconds: f64) -> IntervalOp {
    let total = counts.total();
    let quantiles = counts.values_at_quantiles([0.5, 0.99, 0.999], total);
    IntervalOp::new(op, total, quantiles, seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_percentiles_from_counts_are_the_histograms_for_small_sets_too() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for n in 1..200u64 {
            let mut direct = histogram();
            let mut staged = StagedCounts::new();
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = 1 + x % (1000 << (n % 20));
                direct.saturating_record(v);
                staged.record(v);
            }
            for q in [0.5, 0.99, 0.999] {
                assert_eq!(
                    staged.value_at_quantile(q, n),
                    direct.value_at_quantile(q),
                    "{n} values, quantile {q}"
                );
            }
            let one_pass = staged.values_at_quantiles([0.5, 0.99, 0.999], n);
            let each = [0.5, 0.99, 0.999].map(|q| direct.value_at_quantile(q));
            assert_eq!(one_pass, each, "{n} values, in one pass");
        }
        assert_eq!(StagedCounts::new().value_at_quantile(0.5, 0), 0);
    }

    #[test]
    fn staged_counts_give_the_histogram_that_recording_each_value_gives() {
        assert_eq!(STAGED_LEN, histogram().distinct_values());
        let mut values: Vec<u64> = vec![0, 1, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 4097];
        for shift in 0..64 {
            let v = 1u64 << shift;
            values.extend([v - 1, v, v + 1, v + v / 3]);
        }
        values.extend([
            HIGHEST_NS - 1,
            HIGHEST_NS,
            HIGHEST_NS + 1,
            HIGHEST_NS + 1_000_000,
        ]);
        values.extend([u64::MAX - 1, u64::MAX]);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        let mut direct = histogram();
        let mut staged = StagedCounts::new();
        for &v in &values {
            direct.saturating_record(v.max(1));
            staged.record(v);
        }
        let mut drained = histogram();
        staged.add_to(&mut drained);
        let counts = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect()
        };
        assert_eq!(counts(&drained), counts(&direct));
        assert_eq!(drained.len(), values.len() as u64);
        assert_eq!(drained.min(), direct.min());
        assert_eq!(drained.max(), direct.max());
        assert_eq!(drained.mean(), direct.mean());
        let total = staged.total();
        assert_eq!(total, values.len() as u64);
        for q in [0.0001, 0.5, 0.99, 0.999, 0.9999, 1.0] {
            assert_eq!(drained.value_at_quantile(q), direct.value_at_quantile(q));
            assert_eq!(
                staged.value_at_quantile(q, total),
                direct.value_at_quantile(q),
                "{q}"
            );
        }
        let mut merged = StagedCounts::new();
        staged.add_to_counts(&mut merged);
        staged.add_to_counts(&mut merged);
        assert_eq!(merged.total(), 2 * total);
        assert_eq!(
            merged.value_at_quantile(0.5, 2 * total),
            direct.value_at_quantile(0.5)
        );
        staged.reset();
        assert!(staged.is_empty() && staged.counts.iter().all(|&c| c == 0));
    }

    #[test]
    fn intervals_split_the_run_and_empty_ones_are_kept() {
        let mut r = Recorder::new(1_000, true, false);
        r.start(0);
        r.record(Op::Get, 10, 5, 100);
        r.record(Op::Put, 20, 20, 900);
        r.record(Op::Get, 30, 30, 3_500);
        r.finish(3_600);
        let counts: Vec<u64> = r.series.iter().map(|s| s.all.ops).collect();
        assert_eq!(counts, vec![2, 0, 0, 1]);
        let (latency, service) = r.summary(1.0);
        assert_eq!(latency.last().unwrap().ops, 3);
        assert_eq!(latency[0].op, "get");
        assert_eq!(latency[0].max_ns, 30);
        assert_eq!(service[0].min_ns, 5);
        let logged = r.logged_intervals().unwrap();
        assert_eq!(
            logged.len(),
            3,
            "get and put in the first interval, get in the last"
        );
        assert_eq!((logged[2].op, logged[2].start_ns), (Op::Get, 3_000));
    }

    #[test]
    fn a_long_gap_keeps_at_most_the_cap_of_intervals_and_still_counts_every_request() {
        // 1 ms intervals and a day between two requests: 86.4 M intervals, were they all kept
        let mut r = Recorder::new(1_000_000, true, true);
        r.start(0);
        r.record(Op::Get, 10, 10, 500);
        let day = 86_400_000_000_000;
        r.record(Op::Put, 20, 20, day);
        r.record(Op::Put, 30, 30, day + 2_000_000);
        r.finish(day + 3_000_000);
        assert_eq!(r.series.len(), MAX_INTERVALS);
        assert!(r.is_series_truncated());
        assert_eq!(
            r.hdr_log.as_ref().unwrap().len(),
            1,
            "only the kept intervals are logged"
        );
        let (latency, _) = r.summary(1.0);
        assert_eq!(
            latency.last().unwrap().ops,
            3,
            "the totals count every request"
        );
    }

    #[test]
    fn per_state_latencies_are_the_histograms_recording_each_gives_and_merge() {
        let values = [0, 1, 7, 1_000, 123_456, 9_999_999, u64::MAX];
        let mut a = Recorder::new(1_000, false, false);
        let mut b = Recorder::new(1_000, false, false);
        let mut direct = histogram();
        for (i, &v) in values.iter().enumerate() {
            if i % 2 == 0 { &mut a } else { &mut b }.record_state(3, v);
            direct.saturating_record(v.max(1));
        }
        assert!(a.state_histogram(0).is_none() && a.state_histogram(9).is_none());
        a.merge(&b, 0);
        let merged = a.state_histogram(3).unwrap();
        assert_eq!(merged.len(), direct.len());
        for q in [0.0, 0.25, 0.5, 0.9, 0.99, 1.0] {
            assert_eq!(
                merged.value_at_quantile(q),
                direct.value_at_quantile(q),
                "q {q}"
            );
        }
        assert_eq!((merged.min(), merged.max()), (direct.min(), direct.max()));
        // an instance with states of its own: its state 3 is the whole's 3 + 5
        let mut whole = Recorder::new(1_000, false, false);
        whole.merge(&b, 5);
        assert!(whole.state_histogram(3).is_none());
        assert_eq!(
            whole.state_histogram(8).map(|h| h.len()),
            b.state_histogram(3).map(|h| h.len())
        );
        // the drivers' one call records the op's and the state's latency alike, the closed
        // loop's (service time is latency) as the open loop's
        let mut open = Recorder::new(1_000, false, true);
        let mut closed = Recorder::new(1_000, false, true);
        for &v in &values {
            open.record_in_state(Op::Get, 3, v, v, 0);
            closed.record_completion(Op::Get, 3, v, 0);
        }
        for both in [&open, &closed] {
            let state = both.state_histogram(3).unwrap();
            let op = both.op_histograms(Op::Get).unwrap();
            for h in [&state, &op.latency, &op.service] {
                assert_eq!(h.len(), direct.len());
                assert_eq!(h.value_at_quantile(0.5), direct.value_at_quantile(0.5));
                assert_eq!((h.min(), h.max()), (direct.min(), direct.max()));
            }
        }
    }

    #[test]
    fn merging_instances_adds_histograms_and_lines_up_intervals() {
        let mut a = Recorder::new(1_000, false, false);
        a.start(100);
        a.record(Op::Get, 10, 10, 500);
        a.record(Op::Get, 20, 20, 1_500);
        a.finish(1_600);
        let mut b = Recorder::new(1_000, false, false);
        b.start(300);
        b.record(Op::Put, 30, 30, 900);
        b.finish(1_000);
        let mut all = Recorder::new(1_000, false, false);
        all.merge(&a, 0);
        all.merge(&b, 0);
        let ends: Vec<f64> = all.series.iter().map(|s| s.end_s * 1e9).collect();
        assert_eq!(ends.len(), 2, "{ends:?}");
        assert!((ends[0] - 1_000.0).abs() < 1e-3);
        assert_eq!(all.series[0].all.ops, 2);
        assert_eq!(all.series[0].start_s * 1e9, 100.0);
        let (latency, _) = all.summary(1.0);
        assert_eq!(latency.last().unwrap().ops, 3);
    }

    #[test]
    fn a_closed_loop_records_once_and_reports_service_time_as_latency() {
        let mut r = Recorder::new(1_000, false, true);
        r.start(0);
        r.record(Op::Get, 40, 40, 100);
        r.record(Op::Get, 60, 60, 1_200);
        r.record(Op::Put, 70, 70, 1_300);
        // before the run ends, the open interval counts too
        let get = r.op_histograms(Op::Get).unwrap();
        assert_eq!((get.latency.len(), get.latency.max()), (2, 60));
        assert_eq!(get.service.len(), 2);
        assert!(r.occurred(Op::Put) && !r.occurred(Op::Merge));
        r.finish(1_400);
        let (latency, service) = r.summary(1.0);
        assert_eq!(latency, service);
        assert_eq!(latency.last().unwrap().ops, 3);
        assert_eq!(latency.last().unwrap().min_ns, 40);
    }

    #[test]
    fn totals_equal_every_recorded_value_across_intervals() {
        let mut r = Recorder::new(100, false, false);
        r.start(0);
        let mut latencies = Vec::new();
        for i in 0..1_000u64 {
            let latency = 1 + (i * 7919) % 1_000;
            latencies.push(latency);
            r.record(Op::Merge, latency, latency / 2, i * 3);
        }
        r.finish(3_000);
        let h = r.op_histograms(Op::Merge).unwrap();
        assert_eq!(h.latency.len(), 1_000);
        assert_eq!(h.latency.max(), *latencies.iter().max().unwrap());
        assert_eq!(h.latency.min(), *latencies.iter().min().unwrap());
        let mean = latencies.iter().sum::<u64>() as f64 / 1_000.0;
        assert!(
            (h.latency.mean() - mean).abs() < 1.0,
            "{} vs {mean}",
            h.latency.mean()
        );
        assert_eq!(h.service.max(), 500);
        let per_interval: u64 = r.series.iter().map(|s| s.all.ops).sum();
        assert_eq!(per_interval, 1_000);
    }
}
