//! Arrival processes: when each request is meant to start.
//!
//! An open-loop run issues request *i* at its intended start `tᵢ` from a [`Schedule`] whatever
//! happened to the requests before it, and measures latency from `tᵢ`; a closed loop issues
//! each request when the previous one completed. The processes follow seed 004: Poisson, the
//! self-similar b-model, and a diurnal sine envelope with Pareto inter-arrivals.

use gadget::source::random::Rng;

/// How requests arrive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArrivalProcess {
    /// Each request as soon as the previous one completed.
    ClosedLoop,
    /// Evenly spaced at `rate` requests per second.
    Constant {
        /// Requests per second.
        rate: f64,
    },
    /// Exponential inter-arrivals with mean `1 / rate`.
    Poisson {
        /// Requests per second.
        rate: f64,
    },
    /// The b-model (Wang et al.): each period of `2^levels` bins gets `rate × period` requests,
    /// split recursively so that one half (chosen at random) receives the share `bias` of its
    /// parent's; `bias = 0.5` is uniform, larger is burstier at every time scale.
    BModel {
        /// Mean requests per second.
        rate: f64,
        /// Share of the busier half, in [0.5, 1).
        bias: f64,
        /// Width of the smallest bin, in nanoseconds.
        bin_ns: u64,
        /// Levels of halving per period (the period is `bin_ns × 2^levels`).
        levels: u32,
    },
    /// The workload's own event time, sped up by `speed`: a request is due when its event
    /// time (from the trace's watermarks, see [`crate::workload`]) has passed, one second of
    /// event time taking `1 / speed` seconds.
    EventTime {
        /// Event-time seconds per wall-clock second.
        speed: f64,
    },
    /// A sine envelope `rate × (1 + modulation × sin(2πt / period))` with Pareto inter-arrivals
    /// of shape `alpha` whose mean follows the envelope.
    Diurnal {
        /// Mean requests per second.
        rate: f64,
        /// Length of one cycle, in nanoseconds.
        period_ns: u64,
        /// Depth of the modulation, in [0, 1).
        modulation: f64,
        /// Pareto shape; > 1 so that the mean exists.
        alpha: f64,
    },
}

impl ArrivalProcess {
    /// True when requests are due at their own event times rather than from a schedule.
    pub fn uses_event_time(&self) -> bool {
        matches!(self, ArrivalProcess::EventTime { .. })
    }

    /// True for the closed loop, which has no schedule.
    pub fn is_closed_loop(&self) -> bool {
        matches!(self, ArrivalProcess::ClosedLoop)
    }

    /// The target mean rate in requests per second (`None` for the closed loop).
    pub fn rate(&self) -> Option<f64> {
        match *self {
            ArrivalProcess::ClosedLoop => None,
            ArrivalProcess::Constant { rate }
            | ArrivalProcess::Poisson { rate }
            | ArrivalProcess::BModel { rate, .. }
            | ArrivalProcess::Diurnal { rate, .. } => Some(rate),
            ArrivalProcess::EventTime { .. } => None,
        }
    }

    /// A short description for reports.
    pub fn describe(&self) -> String {
        match *self {
            ArrivalProcess::ClosedLoop => "closed loop".into(),
            ArrivalProcess::EventTime { speed } => format!("event time × {speed}"),
            ArrivalProcess::Constant { rate } => format!("constant {rate} req/s"),
            ArrivalProcess::Poisson { rate } => format!("poisson {rate} req/s"),
            ArrivalProcess::BModel { rate, bias, .. } => {
                format!("b-model {rate} req/s, b = {bias}")
            }
            ArrivalProcess::Diurnal {
                rate,
                period_ns,
                modulation,
                alpha,
            } => format!(
                "diurnal {rate} req/s, period {} s, modulation {modulation}, pareto α = {alpha}",
                period_ns as f64 / 1e9
            ),
        }
    }

    /// The schedule of intended start times, deterministic for a seed.
    pub fn schedule(&self, seed: u64) -> Schedule {
        Schedule {
            process: *self,
            rng: Rng::substream(seed, 0x0a77_17a1),
            now: 0.0,
            issued: 0,
            bins: Vec::new(),
            bin: 0,
            left_in_bin: 0,
            period_start: 0.0,
        }
    }
}

/// Intended start times in nanoseconds from the start of the run, non-decreasing.
#[derive(Debug, Clone)]
pub struct Schedule {
    process: ArrivalProcess,
    rng: Rng,
    now: f64,
    issued: u64,
    /// b-model: requests per bin of the current period.
    bins: Vec<u64>,
    bin: usize,
    left_in_bin: u64,
    period_start: f64,
}

impl Schedule {
    /// Draws the starts of the workload's next `requests`, which other clients issue (a
    /// parallel job's other subtasks, other shards).
    #[inline]
    pub fn skip(&mut self, requests: u64) {
        for _ in 0..requests {
            self.next_start();
        }
    }

    /// The intended start of the next request; `0` forever for the closed loop and for
    /// event time (whose requests carry their own times).
    pub fn next_start(&mut self) -> u64 {
        let t = match self.process {
            ArrivalProcess::ClosedLoop | ArrivalProcess::EventTime { .. } => 0.0,
            ArrivalProcess::Constant { rate } => self.issued as f64 * 1e9 / rate,
            ArrivalProcess::Poisson { rate } => {
                let t = self.now;
                self.now += exponential(&mut self.rng) * 1e9 / rate;
                t
            }
            ArrivalProcess::BModel {
                rate,
                bias,
                bin_ns,
                levels,
            } => self.next_b_model(rate, bias, bin_ns, levels) as f64,
            ArrivalProcess::Diurnal {
                rate,
                period_ns,
                modulation,
                alpha,
            } => {
                let t = self.now;
                let phase = std::f64::consts::TAU * t / period_ns as f64;
                let lambda = rate * (1.0 + modulation * phase.sin()) / 1e9;
                // Pareto with shape α and mean 1/λ: scale x_m = (α − 1) / (α λ)
                let xm = (alpha - 1.0) / (alpha * lambda);
                let u = 1.0 - self.rng.next_f64();
                self.now += xm / u.powf(1.0 / alpha);
                t
            }
        };
        self.issued += 1;
        t as u64
    }

    fn next_b_model(&mut self, rate: f64, bias: f64, bin_ns: u64, levels: u32) -> u64 {
        while self.left_in_bin == 0 {
            self.bin += 1;
            if self.bin >= self.bins.len() {
                if !self.bins.is_empty() {
                    self.period_start += bin_ns as f64 * self.bins.len() as f64;
                }
                let period_s = bin_ns as f64 * (1u64 << levels) as f64 / 1e9;
                let total = (rate * period_s).round() as u64;
                self.bins.clear();
                b_model_split(total, bias, levels, &mut self.rng, &mut self.bins);
                self.bin = 0;
            }
            self.left_in_bin = self.bins[self.bin];
        }
        self.left_in_bin -= 1;
        // spread the bin's requests uniformly at random within it, in order
        let n = self.bins[self.bin];
        let k = n - self.left_in_bin - 1;
        let start = self.period_start + self.bin as f64 * bin_ns as f64;
        let t = start + (k as f64 + self.rng.next_f64()) * bin_ns as f64 / n as f64;
        self.now = t.max(self.now);
        self.now as u64
    }
}

/// Splits `total` requests over `2^levels` bins by the b-model, appending the counts.
fn b_model_split(total: u64, bias: f64, levels: u32, rng: &mut Rng, out: &mut Vec<u64>) {
    if levels == 0 {
        out.push(total);
        return;
    }
    let busy = (total as f64 * bias).round() as u64;
    let quiet = total - busy.min(total);
    let (first, second) = if rng.chance(0.5) {
        (busy.min(total), quiet)
    } else {
        (quiet, busy.min(total))
    };
    b_model_split(first, bias, levels - 1, rng, out);
    b_model_split(second, bias, levels - 1, rng, out);
}

/// A standard exponential variate.
fn exponential(rng: &mut Rng) -> f64 {
    -(1.0 - rng.next_f64()).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn starts(p: ArrivalProcess, n: usize) -> Vec<u64> {
        let mut s = p.schedule(11);
        (0..n).map(|_| s.next_start()).collect()
    }

    fn gaps(ts: &[u64]) -> Vec<f64> {
        ts.windows(2).map(|w| (w[1] - w[0]) as f64).collect()
    }

    fn mean_and_cv(xs: &[f64]) -> (f64, f64) {
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len() as f64;
        (m, var.sqrt() / m)
    }

    /// Counts of arrivals per bin of `width` ns.
    fn counts(ts: &[u64], width: u64) -> Vec<f64> {
        let bins = (ts.last().unwrap() / width + 1) as usize;
        let mut c = vec![0.0; bins];
        for &t in ts {
            c[(t / width) as usize] += 1.0;
        }
        c
    }

    /// Hurst exponent by the aggregate-variance method over aggregation levels 1, 2, 4, ...
    fn hurst_aggregate_variance(series: &[f64]) -> f64 {
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        let mut m = 1;
        while series.len() / m >= 16 {
            let agg: Vec<f64> = series
                .chunks_exact(m)
                .map(|c| c.iter().sum::<f64>() / m as f64)
                .collect();
            let mean = agg.iter().sum::<f64>() / agg.len() as f64;
            let var = agg.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / agg.len() as f64;
            xs.push((m as f64).ln());
            ys.push(var.ln());
            m *= 2;
        }
        let n = xs.len() as f64;
        let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
        let slope = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| (x - mx) * (y - my))
            .sum::<f64>()
            / xs.iter().map(|x| (x - mx).powi(2)).sum::<f64>();
        1.0 + slope / 2.0
    }

    fn autocorrelation(xs: &[f64], lag: usize) -> f64 {
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        let var: f64 = xs.iter().map(|x| (x - m).powi(2)).sum();
        let cov: f64 = xs.windows(lag + 1).map(|w| (w[0] - m) * (w[lag] - m)).sum();
        cov / var
    }

    #[test]
    fn constant_rate_is_evenly_spaced() {
        let ts = starts(ArrivalProcess::Constant { rate: 1000.0 }, 5);
        assert_eq!(ts, vec![0, 1_000_000, 2_000_000, 3_000_000, 4_000_000]);
    }

    #[test]
    fn poisson_has_the_mean_rate_and_a_coefficient_of_variation_near_one() {
        let ts = starts(ArrivalProcess::Poisson { rate: 50_000.0 }, 200_000);
        let (mean, cv) = mean_and_cv(&gaps(&ts));
        assert!((mean - 20_000.0).abs() < 200.0, "mean gap {mean} ns");
        assert!((cv - 1.0).abs() < 0.02, "cv {cv}");
    }

    #[test]
    fn b_model_keeps_the_rate_and_is_self_similar() {
        let p = ArrivalProcess::BModel {
            rate: 100_000.0,
            bias: 0.75,
            bin_ns: 1_000_000,
            levels: 12,
        };
        let ts = starts(p, 1_228_800); // three periods of 4.096 s
        let seconds = *ts.last().unwrap() as f64 / 1e9;
        let rate = ts.len() as f64 / seconds;
        assert!((rate - 100_000.0).abs() / 100_000.0 < 0.01, "rate {rate}");
        assert!(ts.windows(2).all(|w| w[0] <= w[1]));
        let h = hurst_aggregate_variance(&counts(&ts, 1_000_000));
        assert!(h > 0.7, "Hurst {h}");
        // a Poisson stream at the same rate is not self-similar
        let poisson = starts(ArrivalProcess::Poisson { rate: 100_000.0 }, 1_228_800);
        let hp = hurst_aggregate_variance(&counts(&poisson, 1_000_000));
        assert!(hp < 0.6, "Poisson Hurst {hp}");
    }

    #[test]
    fn diurnal_envelope_shows_its_period_in_the_autocorrelation() {
        let period_ns = 1_000_000_000;
        let p = ArrivalProcess::Diurnal {
            rate: 20_000.0,
            period_ns,
            modulation: 0.8,
            alpha: 2.5,
        };
        let ts = starts(p, 200_000); // about ten periods
        let seconds = *ts.last().unwrap() as f64 / 1e9;
        let rate = ts.len() as f64 / seconds;
        assert!((rate - 20_000.0).abs() / 20_000.0 < 0.1, "rate {rate}");
        let c = counts(&ts, period_ns / 20); // 20 bins per period
        let at_period = autocorrelation(&c, 20);
        let at_half = autocorrelation(&c, 10);
        assert!(at_period > 0.5, "autocorrelation at the period {at_period}");
        assert!(
            at_half < -0.3,
            "autocorrelation at half the period {at_half}"
        );
    }

    #[test]
    fn schedules_are_deterministic_per_seed() {
        let p = ArrivalProcess::Poisson { rate: 1e6 };
        let a: Vec<u64> = {
            let mut s = p.schedule(5);
            (0..100).map(|_| s.next_start()).collect()
        };
        let b: Vec<u64> = {
            let mut s = p.schedule(5);
            (0..100).map(|_| s.next_start()).collect()
        };
        assert_eq!(a, b);
    }
}
