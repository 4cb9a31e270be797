//! `gadget trace diff --per-instance`: two traces compared store instance by store instance.

use gadget::compare::per_instance::{compare_by_instance, ByInstance, InstanceComparison};

use crate::cli::DiffArgs;
use crate::stdout::outln;
use crate::trace_read::read_trace;

/// The trace at `path` grouped by store instance, `skipped` ops left out.
fn by_instance(path: &std::path::Path, args: &DiffArgs) -> anyhow::Result<ByInstance> {
    let mut g = ByInstance::skipping(&args.skip_ops);
    read_trace(path, &mut |rec, names| g.push(rec, names))?;
    Ok(g)
}

/// Compares `args.a` and `args.b` instance by instance; exits with 1 unless every instance
/// (or `--min-match` of them) is identical.
pub fn diff_per_instance(args: &DiffArgs) -> anyhow::Result<()> {
    let (a, b) = (by_instance(&args.a, args)?, by_instance(&args.b, args)?);
    let compared = compare_by_instance(&a, &b, args.max_distance);
    let identical = compared.iter().filter(|c| c.comparison.identical()).count();
    let first = compared
        .iter()
        .find(|c| !c.comparison.identical())
        .map(|c| {
            let at = c.comparison.common_prefix;
            (
                c.instance,
                at,
                InstanceComparison::describe(c.a, at),
                InstanceComparison::describe(c.b, at),
            )
        });
    if args.json {
        let instances: Vec<serde_json::Value> = compared
            .iter()
            .map(|c| {
                serde_json::json!({
                    "instance": c.instance,
                    "requests_a": c.comparison.len_a,
                    "requests_b": c.comparison.len_b,
                    "distance": c.comparison.distance,
                    "identical": c.comparison.identical(),
                })
            })
            .collect();
        let json = serde_json::json!({
            "a": args.a.display().to_string(),
            "b": args.b.display().to_string(),
            "requests_a": a.requests,
            "requests_b": b.requests,
            "instances": instances,
            "identical_instances": identical,
            "identical": identical == compared.len(),
            "first_difference": first.as_ref().map(|(i, at, x, y)| serde_json::json!({
                "instance": i, "index": at, "a": x, "b": y,
            })),
        });
        outln!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        outln!("A: {} ({} requests)", args.a.display(), a.requests);
        outln!("B: {} ({} requests)", args.b.display(), b.requests);
        outln!(
            "per instance: {identical} of {} store instances identical",
            compared.len()
        );
        match &first {
            None => outln!("identical requests for every store instance"),
            Some((i, at, x, y)) => outln!(
                "first differing instance: {i}, at its request {at}: A has `{x}`, B has `{y}`"
            ),
        }
    }
    let share = identical as f64 / compared.len().max(1) as f64;
    let ok = match args.min_match {
        Some(min) => share >= min,
        None => identical == compared.len(),
    };
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
