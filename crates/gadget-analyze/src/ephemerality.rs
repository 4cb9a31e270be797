//! Ephemerality: how long keys live and how many are alive at once.
//!
//! A key is alive from its first access to its last. The working set at a request is the
//! number of keys alive there; a key's time to live (TTL) is the span from its first access to
//! its last, counted in requests and in event time (the watermark in force at each access).

use serde::Serialize;

/// First and last access of every key, as the trace scan records them.
#[derive(Debug, Clone, Default)]
pub struct Lifetimes {
    /// Position (in the keyed-request sequence) of each key's first access.
    pub first: Vec<u32>,
    /// Position of each key's last access.
    pub last: Vec<u32>,
    /// Event time (ms) in force at each key's first access.
    pub first_time: Vec<i64>,
    /// Event time in force at each key's last access.
    pub last_time: Vec<i64>,
}

impl Lifetimes {
    /// Records an access at `position` and event time `time` to key `id` (ids are dense and
    /// appear in increasing order the first time).
    #[inline]
    pub fn touch(&mut self, id: u32, position: u32, time: i64) {
        let id = id as usize;
        if id == self.first.len() {
            self.first.push(position);
            self.last.push(position);
            self.first_time.push(time);
            self.last_time.push(time);
        } else {
            self.last[id] = position;
            self.last_time[id] = time;
        }
    }

    /// The working set every `every` keyed requests over `len` of them: `(position, keys
    /// alive there)`, the last position always included.
    pub fn working_set(&self, len: u64, every: u64) -> Vec<(u64, u64)> {
        if len == 0 {
            return Vec::new();
        }
        let every = every.max(1);
        let samples: Vec<u64> = (0..len)
            .step_by(every as usize)
            .chain(((len - 1) % every != 0).then_some(len - 1))
            .collect();
        // keys alive at p: first <= p minus last < p
        let bucket = |p: u64| samples.partition_point(|&s| s < p);
        let mut born = vec![0u64; samples.len() + 1];
        let mut dead = vec![0u64; samples.len() + 1];
        for (&f, &l) in self.first.iter().zip(&self.last) {
            born[bucket(f as u64)] += 1;
            dead[bucket(l as u64 + 1)] += 1;
        }
        let (mut b, mut d) = (0u64, 0u64);
        samples
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                b += born[i];
                d += dead[i];
                (s, b - d)
            })
            .collect()
    }

    /// TTL in requests and in event time, with percentiles and CDF points.
    pub fn ttl(&self) -> TtlSummary {
        self.ttl_scaled(0)
    }

    /// [`ttl`](Self::ttl) of a sample of keys whose positions each stand for `1 << shift`
    /// requests (see [`crate::sampling`]).
    pub fn ttl_scaled(&self, shift: u32) -> TtlSummary {
        let requests: Vec<u64> = self
            .first
            .iter()
            .zip(&self.last)
            .map(|(f, l)| ((l - f) as u64) << shift)
            .collect();
        let times: Vec<u64> = self
            .first_time
            .iter()
            .zip(&self.last_time)
            .map(|(f, l)| l.saturating_sub(*f).max(0) as u64)
            .collect();
        TtlSummary {
            keys: requests.len() as u64,
            requests: Percentiles::of(requests),
            event_time_ms: Percentiles::of(times),
        }
    }
}

/// Key time-to-live, in requests and in event time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TtlSummary {
    /// Distinct keys.
    pub keys: u64,
    /// TTL in keyed requests.
    pub requests: Percentiles,
    /// TTL in event-time milliseconds.
    pub event_time_ms: Percentiles,
}

/// A distribution's mean, percentiles and CDF.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Percentiles {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest value.
    pub max: u64,
    /// `(value, fraction of items at or below it)` at up to 200 points.
    pub cdf: Vec<(u64, f64)>,
}

impl Percentiles {
    /// The distribution of `values`.
    pub fn of(mut values: Vec<u64>) -> Percentiles {
        values.sort_unstable();
        let n = values.len();
        let at = |q: f64| -> u64 {
            if n == 0 {
                return 0;
            }
            let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
            values[rank - 1]
        };
        let mean = if n == 0 {
            0.0
        } else {
            values.iter().map(|&v| v as f64).sum::<f64>() / n as f64
        };
        let step = n.div_ceil(200).max(1);
        let mut cdf: Vec<(u64, f64)> = (step - 1..n)
            .step_by(step)
            .map(|i| (values[i], (i + 1) as f64 / n as f64))
            .collect();
        if n > 0 && cdf.last().is_none_or(|&(_, f)| f < 1.0) {
            cdf.push((values[n - 1], 1.0));
        }
        Percentiles {
            mean,
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            max: values.last().copied().unwrap_or(0),
            cdf,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_made_lifetimes() {
        // a b a c b: a lives 0..2, b 1..4, c 3..3
        let mut l = Lifetimes::default();
        for (pos, (id, time)) in [(0, 0), (1, 0), (0, 10), (2, 20), (1, 30)]
            .iter()
            .enumerate()
        {
            l.touch(*id, pos as u32, *time);
        }
        assert_eq!(
            l.working_set(5, 1),
            vec![(0, 1), (1, 2), (2, 2), (3, 2), (4, 1)]
        );
        assert_eq!(l.working_set(5, 2), vec![(0, 1), (2, 2), (4, 1)]);
        assert_eq!(l.working_set(5, 3), vec![(0, 1), (3, 2), (4, 1)]);
        let t = l.ttl();
        assert_eq!(t.keys, 3);
        assert_eq!(t.requests.max, 3);
        assert_eq!(t.requests.p50, 2);
        assert_eq!(t.event_time_ms.max, 30);
        assert_eq!(t.event_time_ms.mean, (10.0 + 30.0 + 0.0) / 3.0);
    }
}
