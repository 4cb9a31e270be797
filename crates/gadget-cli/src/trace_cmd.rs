//! `gadget trace convert` and `gadget trace diff`.

use gadget::access::TraceRecord;
use gadget::compare::{allowed_distance, compare, Normalizer};
use gadget::trace::{TraceError, TraceFormat};

use crate::cli::{ConvertArgs, DiffArgs, Format};
use crate::interrupt::INTERRUPTED;
use crate::progress;
use crate::stdout::outln;
use crate::trace_read::read_trace;
use gadget::compare::per_key::{compare_by_key, ByKey};
use gadget::compare::reads::{compare_reads, ReadsCompared};

/// Runs `gadget trace convert`; its exit status: 0, or [`INTERRUPTED`] when Ctrl-C stopped it
/// (the output is then left as it was).
pub fn convert(args: ConvertArgs) -> anyhow::Result<i32> {
    gadget::atomic::refuse_overwriting_an_input("-o", &args.output, &[&args.input])
        .map_err(anyhow::Error::msg)?;
    let format = match args.format {
        Format::Bin => TraceFormat::Binary,
        Format::Text => TraceFormat::Text,
    };
    let stop = crate::interrupt::stop_flag();
    let bar = progress::spinner("converting");
    let converted =
        gadget::trace::convert_with_progress(&args.input, &args.output, format, &mut |records| {
            bar.set_message(format!("{records} records"));
            crate::interrupt::go_on(&stop)
        });
    bar.finish_and_clear();
    let footer = match converted {
        Err(TraceError::Stopped { path }) => {
            eprintln!(
                "interrupted: {} was not written (left as it was)",
                path.display()
            );
            return Ok(INTERRUPTED);
        }
        converted => converted?,
    };
    outln!(
        "{} -> {} ({}): {} requests, {} events, {} watermarks",
        args.input.display(),
        args.output.display(),
        format.name(),
        footer.requests,
        footer.events,
        footer.watermarks
    );
    Ok(0)
}

fn normalize(path: &std::path::Path, args: &DiffArgs) -> anyhow::Result<Normalizer> {
    let mut n = if args.from_start {
        Normalizer::from_start(&args.skip_ops)
    } else {
        Normalizer::skipping(&args.skip_ops)
    };
    read_trace(path, &mut |rec, names| n.push(rec, names))?;
    Ok(n)
}

/// The requests of the trace at `path`, grouped by state key.
fn by_key(path: &std::path::Path, args: &DiffArgs) -> anyhow::Result<ByKey> {
    let skipped = &args.skip_ops;
    let mut g = if args.from_start {
        ByKey::from_start()
    } else {
        ByKey::new()
    };
    read_trace(path, &mut |rec, names| {
        if !matches!(rec, TraceRecord::Access { op, .. } if skipped.contains(op)) {
            g.push(rec, names);
        }
    })?;
    Ok(g)
}

/// `gadget trace diff --per-key`.
fn diff_per_key(args: &DiffArgs) -> anyhow::Result<()> {
    let (a, b) = (by_key(&args.a, args)?, by_key(&args.b, args)?);
    let c = compare_by_key(&a, &b);
    let request = |r: Option<(gadget::access::Op, u32)>| {
        r.map_or("(no more requests)".to_string(), |(op, v)| {
            format!("{} {v}", op.name())
        })
    };
    let first = c.first_difference.as_ref().map(|d| {
        (
            format!("{} {}", d.state, hex(&d.key)),
            d.index,
            request(d.a),
            request(d.b),
        )
    });
    if args.json {
        let json = serde_json::json!({
            "a": args.a.display().to_string(),
            "b": args.b.display().to_string(),
            "requests_a": a.requests,
            "requests_b": b.requests,
            "state_keys": c.keys,
            "identical_keys": c.identical,
            "identical": c.all_identical(),
            "first_difference": first.as_ref().map(|(k, i, x, y)| serde_json::json!({"key": k, "index": i, "a": x, "b": y})),
        });
        outln!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        outln!("A: {} ({} requests)", args.a.display(), a.requests);
        outln!("B: {} ({} requests)", args.b.display(), b.requests);
        outln!(
            "per key: {} of {} state keys identical",
            c.identical,
            c.keys
        );
        match &first {
            None => outln!("identical requests for every state key"),
            Some((k, i, x, y)) => {
                outln!("first differing key: {k}, at its request {i}: A has `{x}`, B has `{y}`")
            }
        }
        markers_hint(a.saw_events(), b.saw_events());
    }
    let share = c.identical as f64 / c.keys.max(1) as f64;
    let ok = match args.min_match {
        Some(min) => share >= min,
        None => c.all_identical(),
    };
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}

/// Says so when only one trace has event markers: it is compared from its first event, the
/// other from its first request.
fn markers_hint(a: bool, b: bool) {
    if a != b {
        let (with, without) = if a { ("A", "B") } else { ("B", "A") };
        eprintln!(
            "hint: only {with} has event markers: {with} is compared from its first event on, \
             {without} (without markers) from its first request"
        );
    }
}

/// Bytes as lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn diff(args: DiffArgs) -> anyhow::Result<()> {
    if args.per_key {
        return diff_per_key(&args);
    }
    if args.per_instance {
        return crate::diff_instances::diff_per_instance(&args);
    }
    let a = normalize(&args.a, &args)?;
    let b = normalize(&args.b, &args)?;
    // with --min-match the search stops once the match cannot reach it: a recording that
    // differs fails in one pass instead of a minimal diff of its every difference
    let bound = args.min_match.map_or(args.max_distance, |min| {
        allowed_distance(a.tokens.len(), b.tokens.len(), min).min(args.max_distance)
    });
    let bar = progress::spinner("comparing");
    let c = compare(&a.tokens, &b.tokens, bound);
    bar.finish_and_clear();
    let ratio = c.match_ratio(bound);
    let ok = match args.min_match {
        Some(min) => ratio >= min,
        None => c.identical(),
    };
    // what the gets found stands at the same places only in the same requests
    let reads = (args.reads && c.identical()).then(|| compare_reads(&a, &b));
    let ok = ok && reads.as_ref().is_none_or(ReadsCompared::agree);
    let first = (c.common_prefix < c.len_a.max(c.len_b)).then(|| {
        let at = |n: &Normalizer, i: usize| {
            n.tokens
                .get(i)
                .map_or("(end of trace)".to_string(), |t| n.describe(*t))
        };
        (
            c.common_prefix,
            at(&a, c.common_prefix),
            at(&b, c.common_prefix),
        )
    });
    if args.json {
        let json = serde_json::json!({
            "a": args.a.display().to_string(),
            "b": args.b.display().to_string(),
            "requests_a": c.len_a,
            "requests_b": c.len_b,
            "distance": c.distance,
            "match": ratio,
            "match_is_bound": c.distance.is_none(),
            "identical": c.identical(),
            "first_difference": first.as_ref().map(|(i, x, y)| serde_json::json!({"index": i, "a": x, "b": y})),
            "reads": reads.as_ref().map(|r| serde_json::json!({
                "agreeing": r.agreeing,
                "not_known": r.not_known,
                "first_difference": r.first_difference.map(|(i, x, y)| serde_json::json!({
                    "index": i,
                    "request": a.describe(a.tokens[i]),
                    "a": x.to_string(),
                    "b": y.to_string(),
                })),
            })),
        });
        outln!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        outln!("A: {} ({} requests)", args.a.display(), c.len_a);
        outln!("B: {} ({} requests)", args.b.display(), c.len_b);
        match c.distance {
            Some(d) => outln!("match: {:.6} ({d} requests only on one side)", ratio),
            None if bound < args.max_distance => outln!(
                "match: <= {:.6} (more than {bound} requests differ, below --min-match; \
                 without it the exact figure is computed)",
                ratio
            ),
            None => outln!(
                "match: <= {:.6} (more than {bound} requests differ; raise --max-distance for \
                 the exact figure)",
                ratio
            ),
        }
        match &first {
            None => outln!("identical request sequences"),
            Some((i, x, y)) => {
                outln!("first difference at request {i}: A has `{x}`, B has `{y}`")
            }
        }
        match &reads {
            _ if !args.reads => {}
            None => outln!("reads: not compared (the requests differ)"),
            Some(r) => match r.first_difference {
                Some((i, x, y)) => outln!(
                    "reads differ at request {i} (`{}`): A's get found {x}, B's found {y}",
                    a.describe(a.tokens[i])
                ),
                None if r.not_known > 0 => outln!(
                    "reads: {} gets do not say what they found (in A, B or both: recordings \
                     do, and traces of gadget gen --reads); {} agree",
                    r.not_known,
                    r.agreeing
                ),
                None => outln!("reads: all {} gets found the same", r.agreeing),
            },
        }
        markers_hint(a.saw_events(), b.saw_events());
        if (a.lifecycle_requests == 0) != (b.lifecycle_requests == 0) {
            eprintln!(
                "hint: only one trace opens and drops states (a recording has no `open` or \
                 `drop`: the recorder cannot see Kafka Streams create or delete a segment's \
                 instance); --skip-ops open,drop compares the rest"
            );
        }
    }
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
