//! The human-readable summary of an analysis and the side-by-side comparison table.

use std::fmt::Write as _;

use crate::distance::popularity_distance;
use crate::Analysis;
use gadget::access::Op;

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn optional(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "n/a".to_string(), |v| format!("{v:.digits$}"))
}

/// The LRU hit ratio the curve gives at `size` keys (the largest sampled size ≤ `size`).
fn hit_ratio_at(curve: &[(u64, f64)], size: u64) -> f64 {
    curve
        .iter()
        .take_while(|(s, _)| *s <= size)
        .last()
        .map_or(0.0, |&(_, r)| r)
}

impl Analysis {
    /// The one-screen summary `gadget analyze` prints.
    pub fn to_text(&self, name: &str) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{name}: {} ({}{}){}",
            self.operator,
            self.states.join(", "),
            if self.truncated { "; truncated" } else { "" },
            if self.partial {
                "\n  PARTIAL: stopped by Ctrl-C or SIGTERM; everything below covers the records read until then"
            } else {
                ""
            }
        );
        let _ = writeln!(
            s,
            "  {} requests, {} input events, {} watermarks",
            thousands(self.requests),
            thousands(self.events),
            thousands(self.watermarks)
        );
        if let Some(sample) = &self.sampling {
            let _ = writeln!(
                s,
                "  SAMPLED ({}): {} of {} keyed requests, to {} keys; distinct keys ±{:.1}% \
                 (one standard error); LRU hit ratios: noise ±{} here, mean absolute error up \
                 to {} measured at 1/8 on Flink's recordings; counts and sizes are exact, key \
                 sequences not counted",
                sample.rate,
                thousands(sample.sampled_requests),
                thousands(sample.keyed_requests),
                thousands(sample.sampled_keys),
                100.0 * sample.distinct_keys_relative_error,
                sample
                    .hit_ratio_noise
                    .map_or_else(|| "unknown".to_string(), |e| format!("{e:.4}")),
                sample.hit_ratio_error_measured,
            );
        }
        let _ = writeln!(s, "\ncomposition");
        for (op, n) in &self.requests_by_op {
            let _ = writeln!(
                s,
                "  {op:<14}{:>14}  {:>5.1}%",
                thousands(*n),
                100.0 * *n as f64 / self.requests.max(1) as f64
            );
        }
        for (state, ops) in &self.requests_by_state {
            let n: u64 = ops.values().sum();
            let detail: Vec<String> = ops.iter().map(|(o, c)| format!("{o} {c}")).collect();
            let _ = writeln!(
                s,
                "  {state:<36}{:>12}  ({})",
                thousands(n),
                detail.join(", ")
            );
        }
        let _ = writeln!(s, "\namplification");
        let _ = writeln!(
            s,
            "  event       {} requests per input event",
            optional(self.event_amplification, 3)
        );
        let _ = writeln!(
            s,
            "  key space   {} state keys per event key ({} state keys, {} event keys{})",
            optional(self.key_space_amplification, 3),
            thousands(self.distinct_state_keys),
            self.distinct_event_keys
                .map_or_else(|| "unknown".to_string(), thousands),
            self.event_keys_source
                .as_ref()
                .map_or_else(String::new, |w| format!(": {w}")),
        );
        let _ = writeln!(
            s,
            "  sizes       keys p50 {} B, max {} B; written values p50 {} B, p99 {} B, max {} B",
            self.key_size.p50,
            self.key_size.max,
            self.value_size.p50,
            self.value_size.p99,
            self.value_size.max
        );
        match &self.reads {
            Some(r) => {
                let _ = writeln!(
                    s,
                    "  reads       {} gets say what they found: {:.1}% found nothing; values \
                     found p50 {} B, max {} B",
                    thousands(r.known),
                    100.0 * r.found_nothing as f64 / r.known.max(1) as f64,
                    r.found_size.p50,
                    r.found_size.max
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "  reads       not known: the trace's gets do not say what they found \
                     (recordings do; gadget gen --reads)"
                );
            }
        }
        if self.locality_computed {
            let (t, sh) = (&self.stack_distance, &self.stack_distance_shuffled);
            let _ = writeln!(
                s,
                "\ntemporal locality (LRU stack distance)   trace    shuffled"
            );
            let _ = writeln!(
                s,
                "  mean                           {:>14.2} {:>11.2}",
                t.mean, sh.mean
            );
            for (label, a, b) in [
                ("p50", t.p50, sh.p50),
                ("p90", t.p90, sh.p90),
                ("p99", t.p99, sh.p99),
                ("max", t.max, sh.max),
            ] {
                let _ = writeln!(s, "  {label:<31}{:>14} {:>11}", thousands(a), thousands(b));
            }
            let _ = writeln!(
                s,
                "  first accesses (cold)          {:>14}",
                thousands(t.cold)
            );
            let sizes: Vec<u64> = [16u64, 256, 4096, 65536]
                .into_iter()
                .filter(|&c| c < self.distinct_state_keys)
                // a sample's curve starts at the cache size one sampled key stands for
                .filter(|&c| t.hit_ratio_curve.first().is_none_or(|&(s, _)| s <= c))
                .collect();
            for c in sizes {
                let _ = writeln!(
                    s,
                    "  LRU hit ratio, {:>7} keys      {:>13.1}% {:>10.1}%",
                    thousands(c),
                    100.0 * hit_ratio_at(&t.hit_ratio_curve, c),
                    100.0 * hit_ratio_at(&sh.hit_ratio_curve, c)
                );
            }
            let _ = writeln!(s, "\nspatial locality (unique key sequences)");
            if let Some(sample) = &self.sampling {
                let _ = writeln!(s, "  not counted: {}", sample.not_computed);
            }
            for (i, (a, b)) in self
                .unique_sequences
                .iter()
                .zip(&self.unique_sequences_shuffled)
                .enumerate()
            {
                let _ = writeln!(
                    s,
                    "  length {:<2}                     {:>14} {:>11}",
                    i + 1,
                    thousands(*a),
                    thousands(*b)
                );
            }
        } else {
            let _ = writeln!(
                s,
                "\nlocality      not computed: stopped by Ctrl-C or SIGTERM before the stack \
                 distances and key sequences were done"
            );
        }
        let peak = self.working_set.iter().map(|w| w.1).max().unwrap_or(0);
        let mean = if self.working_set.is_empty() {
            0.0
        } else {
            self.working_set.iter().map(|w| w.1 as f64).sum::<f64>() / self.working_set.len() as f64
        };
        let _ = writeln!(s, "\nephemerality");
        let _ = writeln!(
            s,
            "  working set   peak {} keys, mean {:.0} keys",
            thousands(peak),
            mean
        );
        let (r, e) = (&self.ttl.requests, &self.ttl.event_time_ms);
        let _ = writeln!(
            s,
            "  key TTL       requests p50 {}, p99 {}, max {}; event time p50 {} ms, p99 {} ms, max {} ms",
            thousands(r.p50),
            thousands(r.p99),
            thousands(r.max),
            thousands(e.p50),
            thousands(e.p99),
            thousands(e.max)
        );
        s
    }
}

/// The side-by-side table of `gadget compare`: one column per trace, and the key popularity
/// distance of each trace to the first.
pub fn comparison_table(traces: &[(String, Analysis)]) -> String {
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let mut row = |label: &str, f: &dyn Fn(&Analysis) -> String| {
        rows.push((
            label.to_string(),
            traces.iter().map(|(_, a)| f(a)).collect(),
        ));
    };
    row("operator", &|a| a.operator.clone());
    if traces.iter().any(|(_, a)| a.sampling.is_some()) {
        row("keys analysed", &|a| {
            a.sampling
                .as_ref()
                .map_or_else(|| "all".to_string(), |s| format!("sample {}", s.rate))
        });
    }
    if traces.iter().any(|(_, a)| a.partial) {
        // a trace read part-way compares only as far as it was read
        row(
            "PARTIAL (Ctrl-C)",
            &|a| match (a.partial, a.locality_computed) {
                (false, _) => "no".into(),
                (true, true) => "read part-way".into(),
                (true, false) => "no locality".into(),
            },
        );
    }
    row("requests", &|a| thousands(a.requests));
    row("input events", &|a| thousands(a.events));
    // every op any trace holds, in Gadget's op order: shares that leave one out do not add up
    let mut ops: Vec<&str> = Op::ALL.iter().map(|o| o.name()).collect();
    for (_, a) in traces {
        for op in a.requests_by_op.keys() {
            if !ops.contains(&op.as_str()) {
                ops.push(op);
            }
        }
    }
    for op in ops {
        if traces
            .iter()
            .any(|(_, a)| a.requests_by_op.contains_key(op))
        {
            row(&format!("  {op} %"), &|a| {
                let n = a.requests_by_op.get(op).copied().unwrap_or(0);
                format!("{:.1}", 100.0 * n as f64 / a.requests.max(1) as f64)
            });
        }
    }
    row("requests per event", &|a| {
        optional(a.event_amplification, 3)
    });
    row("distinct state keys", &|a| thousands(a.distinct_state_keys));
    row("key-space amplification", &|a| {
        optional(a.key_space_amplification, 3)
    });
    // a locality measure, or n/a where a stop left it out
    let locality = |a: &Analysis, value: String| {
        if a.locality_computed {
            value
        } else {
            "n/a".to_string()
        }
    };
    row("mean stack distance", &|a| {
        locality(a, format!("{:.1}", a.stack_distance.mean))
    });
    row("  shuffled", &|a| {
        locality(a, format!("{:.1}", a.stack_distance_shuffled.mean))
    });
    row("p99 stack distance", &|a| {
        locality(a, thousands(a.stack_distance.p99))
    });
    let longest = traces
        .iter()
        .map(|(_, a)| a.unique_sequences.len())
        .min()
        .unwrap_or(0);
    if longest > 0 {
        row(&format!("unique sequences, length {longest}"), &|a| {
            thousands(a.unique_sequences[longest - 1])
        });
        row("  shuffled", &|a| {
            thousands(a.unique_sequences_shuffled[longest - 1])
        });
    }
    row("peak working set", &|a| {
        thousands(a.working_set.iter().map(|w| w.1).max().unwrap_or(0))
    });
    row("key TTL p50 (requests)", &|a| thousands(a.ttl.requests.p50));
    row("key TTL p50 (event ms)", &|a| {
        thousands(a.ttl.event_time_ms.p50)
    });
    if let Some((_, first)) = traces.first() {
        let distances: Vec<_> = traces
            .iter()
            .map(|(_, a)| popularity_distance(&first.popularity, &a.popularity))
            .collect();
        rows.push((
            "popularity KS vs first".into(),
            distances
                .iter()
                .map(|d| format!("{:.4}", d.ks_statistic))
                .collect(),
        ));
        rows.push((
            "  p-value".into(),
            distances
                .iter()
                .map(|d| format!("{:.3e}", d.ks_p_value))
                .collect(),
        ));
        rows.push((
            "popularity Wasserstein".into(),
            distances
                .iter()
                .map(|d| format!("{:.1}", d.wasserstein))
                .collect(),
        ));
    }
    let label_width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..traces.len())
        .map(|i| {
            rows.iter()
                .map(|r| r.1[i].chars().count())
                .chain(std::iter::once(traces[i].0.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    let _ = write!(s, "{:label_width$}", "");
    for ((name, _), w) in traces.iter().zip(&widths) {
        let _ = write!(s, "  {name:>w$}");
    }
    s.push('\n');
    for (label, cells) in rows {
        let _ = write!(s, "{label:label_width$}");
        for (cell, w) in cells.iter().zip(&widths) {
            let _ = write!(s, "  {cell:>w$}");
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::{comparison_table, thousands};
    use crate::analysis_of as analysis;
    use gadget::access::Op;

    #[test]
    fn the_op_shares_of_a_side_by_side_hold_every_op() {
        let segments = analysis(&[Op::Open, Op::Put, Op::Get, Op::Drop]);
        let plain = analysis(&[Op::Put, Op::Get]);
        let table = comparison_table(&[("a".into(), segments), ("b".into(), plain)]);
        let share = |op: &str| {
            table
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{op} %")))
                .map(|l| l.split_whitespace().skip(2).collect::<Vec<_>>())
        };
        assert_eq!(share("open"), Some(vec!["25.0", "0.0"]), "{table}");
        assert_eq!(share("drop"), Some(vec!["25.0", "0.0"]), "{table}");
        assert_eq!(share("put"), Some(vec!["25.0", "50.0"]), "{table}");
        assert_eq!(share("merge"), None, "no trace has merges: {table}");
    }

    #[test]
    fn the_summary_says_what_the_gets_found_or_that_it_is_not_known() {
        let a = analysis(&[Op::Put, Op::Get, Op::Get, Op::Get]);
        let reads = a.reads.as_ref().unwrap();
        assert_eq!((reads.known, reads.found_nothing), (3, 1));
        let text = a.to_text("t");
        assert!(
            text.contains(
                "reads       3 gets say what they found: 33.3% found nothing; values found p50 \
                 8 B, max 8 B"
            ),
            "{text}"
        );
        let none = analysis(&[Op::Put]);
        assert!(none.reads.is_none());
        assert!(none.to_text("t").contains("reads       not known"));
    }

    #[test]
    fn groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
