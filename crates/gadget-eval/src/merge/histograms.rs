//! The shards' histograms: decoded and checked against their own counts, added bucket by
//! bucket, and turned back into the summary tables, spectra and per-part figures.

use std::collections::BTreeMap;

use gadget::access::Op;
use hdrhistogram::Histogram;

use super::{Decoded, MergeError};
use gadget_results::summary::{histogram, OpSummary, Spectrum};
use gadget_results::PartSummary;
use gadget_results::{hdr, OpHistogram, RunReport};

/// Adds `h` to `into` (both of Gadget's bounds, as decoding checked).
pub(super) fn add(into: &mut Histogram<u64>, h: &Histogram<u64>) {
    into.add(h).expect("histograms of the same bounds add up");
}

/// The summary tables (per op, then all) and the latency spectra of merged histograms.
pub(super) fn tables(
    latency: &BTreeMap<Op, Histogram<u64>>,
    service: &BTreeMap<Op, Histogram<u64>>,
    seconds: f64,
) -> (Vec<OpSummary>, Vec<OpSummary>, Vec<Spectrum>) {
    let rows = |by_op: &BTreeMap<Op, Histogram<u64>>| -> (Vec<OpSummary>, Histogram<u64>) {
        let mut all = histogram();
        let mut rows = Vec::new();
        for (op, h) in by_op {
            rows.push(OpSummary::from_histogram(op.name(), h, seconds));
            add(&mut all, h);
        }
        rows.push(OpSummary::from_histogram("all", &all, seconds));
        (rows, all)
    };
    let (latency_rows, all) = rows(latency);
    let (service_rows, _) = rows(service);
    let mut spectra: Vec<Spectrum> = latency
        .iter()
        .map(|(op, h)| Spectrum::of(op.name(), h))
        .collect();
    if !latency.is_empty() {
        spectra.push(Spectrum::of("all", &all));
    }
    (latency_rows, service_rows, spectra)
}

/// Per state, and per store when the states live in more than one (as
/// [`crate::placed::parts`] gives them for one run).
pub(super) fn parts(
    states: &[(String, String, Histogram<u64>)],
    seconds: f64,
) -> (Vec<PartSummary>, Vec<PartSummary>) {
    let per_state = states
        .iter()
        .map(|(name, store, h)| PartSummary {
            name: name.clone(),
            store: store.clone(),
            latency: OpSummary::from_histogram("all", h, seconds),
        })
        .collect();
    let mut stores: Vec<(String, Histogram<u64>)> = Vec::new();
    for (_, store, h) in states {
        match stores.iter_mut().find(|s| s.0 == *store) {
            Some(s) => add(&mut s.1, h),
            None => stores.push((store.clone(), h.clone())),
        }
    }
    (per_state, gadget_results::per_stores(stores, seconds))
}

/// Histograms per op, encoded.
pub(super) fn encoded(by_op: &BTreeMap<Op, Histogram<u64>>) -> Vec<OpHistogram> {
    by_op
        .iter()
        .map(|(op, h)| OpHistogram {
            op: op.name().to_string(),
            hdr: hdr::encode(h),
        })
        .collect()
}

/// The histograms and wall clock of `r` (read from `file`), checked.
pub(super) fn decode(file: &str, r: &RunReport) -> Result<Decoded, MergeError> {
    let not_mergeable = |why: String| MergeError::NotMergeable {
        file: file.to_string(),
        why,
    };
    if !r.shards.is_empty() {
        return Err(not_mergeable(format!(
            "it is merged results already (of {} shards); merge the shards' own files, all at once",
            r.shards.len()
        )));
    }
    let older = "it was written by a Gadget older than `gadget merge`; run the shard again with \
                 this one";
    let Some(clock) = r.wall_clock else {
        return Err(not_mergeable(format!(
            "it records no wall-clock start (`wall_clock`): {older}"
        )));
    };
    let Some(histograms) = &r.histograms else {
        return Err(not_mergeable(format!(
            "it keeps no histograms (`histograms`), only percentiles, which cannot be merged: {older}"
        )));
    };
    let bad = |field: String, message: String| MergeError::BadField {
        file: file.to_string(),
        field,
        message,
    };
    if histograms.encoding != hdr::ENCODING {
        return Err(bad(
            "histograms.encoding".into(),
            format!(
                "is {:?}; this Gadget reads {:?} only",
                histograms.encoding,
                hdr::ENCODING
            ),
        ));
    }
    if clock.interval_ns == 0 {
        return Err(bad("wall_clock.interval_ns".into(), "is 0".into()));
    }
    if clock.measure_end_ns < clock.measure_start_ns {
        return Err(bad(
            "wall_clock.measure_end_ns".into(),
            format!(
                "({}) is before measure_start_ns ({})",
                clock.measure_end_ns, clock.measure_start_ns
            ),
        ));
    }
    let ops = |kind: &str, list: &[OpHistogram]| -> Result<Vec<(Op, Histogram<u64>)>, MergeError> {
        let mut out: Vec<(Op, Histogram<u64>)> = Vec::new();
        for (i, o) in list.iter().enumerate() {
            let Some(op) = Op::from_name(&o.op) else {
                return Err(bad(
                    format!("histograms.{kind}[{i}].op"),
                    format!("{:?} is not an op of this Gadget", o.op),
                ));
            };
            if out.iter().any(|(seen, _)| *seen == op) {
                return Err(bad(
                    format!("histograms.{kind}[{i}].op"),
                    format!("{:?} comes twice", o.op),
                ));
            }
            let h = hdr::decode(&o.hdr).map_err(|e| {
                bad(
                    format!("histograms.{kind}[{i}].hdr ({})", o.op),
                    format!("is {e}"),
                )
            })?;
            out.push((op, h));
        }
        Ok(out)
    };
    let latency = ops("latency", &histograms.latency)?;
    let service = ops("service", &histograms.service)?;
    let mut states = Vec::new();
    for (i, s) in histograms.per_state.iter().enumerate() {
        let h = hdr::decode(&s.hdr).map_err(|e| {
            bad(
                format!("histograms.per_state[{i}].hdr ({})", s.name),
                format!("is {e}"),
            )
        })?;
        states.push((s.name.clone(), s.store.clone(), h));
    }
    check_counts(r, &latency, &service, &states).map_err(|(field, message)| {
        bad(
            field,
            format!(
                "{message}: the file was changed after Gadget wrote it; use the file as written"
            ),
        )
    })?;
    Ok(Decoded {
        latency,
        service,
        states,
        clock,
    })
}

/// The exact number of requests `h` holds: its buckets' counts added without saturating
/// (its own total saturates at u64::MAX).
pub(super) fn held(h: &Histogram<u64>) -> u128 {
    if h.len() < u64::MAX {
        return u128::from(h.len());
    }
    h.iter_recorded()
        .map(|v| u128::from(v.count_at_value()))
        .sum()
}

/// Checks every histogram of `r` against its `requests`, as a run writes them: the ops'
/// latency histograms hold every request, each op's service-time histogram as many as its
/// latency one, the states' together no more than all. The field and what is wrong otherwise.
pub(super) fn check_counts(
    r: &RunReport,
    latency: &[(Op, Histogram<u64>)],
    service: &[(Op, Histogram<u64>)],
    states: &[(String, String, Histogram<u64>)],
) -> Result<(), (String, String)> {
    let all: u128 = latency.iter().map(|(_, h)| held(h)).sum();
    if all != u128::from(r.requests) {
        return Err((
            "histograms.latency".into(),
            format!("hold {all} requests but `requests` is {}", r.requests),
        ));
    }
    for (i, (op, h)) in service.iter().enumerate() {
        let of_op = latency
            .iter()
            .find(|(o, _)| o == op)
            .map_or(0, |(_, l)| held(l));
        let holds = held(h);
        if holds != of_op {
            return Err((
                format!("histograms.service[{i}].hdr ({op})"),
                format!("holds {holds} requests but the {op} latency histogram holds {of_op}"),
            ));
        }
    }
    if let Some((op, h)) = latency
        .iter()
        .find(|(op, _)| !service.iter().any(|(o, _)| o == op))
    {
        return Err((
            "histograms.service".into(),
            format!(
                "has no {op} histogram, whose latency histogram holds {} requests",
                held(h)
            ),
        ));
    }
    let in_states: u128 = states.iter().map(|(_, _, h)| held(h)).sum();
    if in_states > u128::from(r.requests) {
        return Err((
            "histograms.per_state".into(),
            format!(
                "hold {in_states} requests together, more than the {} of `requests`",
                r.requests
            ),
        ));
    }
    Ok(())
}

/// Refuses inputs whose requests add up to more than one bucket of a merged histogram can
/// count ([`hdr::MAX_COUNT`]), naming the file that crosses it. Every merged histogram holds
/// at most all the requests, so none of its buckets overflows then.
pub(super) fn check_total(inputs: &[(String, RunReport)]) -> Result<(), MergeError> {
    let mut total = 0u128;
    for (file, r) in inputs {
        total += u128::from(r.requests);
        if total > u128::from(hdr::MAX_COUNT) {
            return Err(MergeError::BadField {
                file: file.clone(),
                field: "histograms.latency".into(),
                message: format!(
                    "brings the requests merged to {total}, more than the {} a histogram \
                     bucket can count (HdrHistogram's encoding): the counts were changed after \
                     Gadget wrote them; use the files as written",
                    hdr::MAX_COUNT
                ),
            });
        }
    }
    Ok(())
}
