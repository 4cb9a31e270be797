//! `gadget merge` as users run it: two shards of a YCSB run on the memory store merged into one
//! run's results, which `analyze`, `compare` and `bench`'s reader take like any other; results
//! of other runs, the same shard twice and damaged files refused with what to do.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use gadget_results::hdr::Histogram;
use predicates::prelude::*;

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs YCSB workload A on the memory store with `seed`, results to `dir/NAME`.
fn shard(dir: &Path, name: &str, seed: u64) -> PathBuf {
    let out = dir.join(name);
    gadget()
        .current_dir(project_root())
        .args(["run", "examples/ycsb/workloada.toml", "--store", "memory"])
        .args(["--limit", "1500", "--seed", &seed.to_string()])
        .args([
            "--arrival",
            "poisson",
            "--rate",
            "20000",
            "--interval",
            "50ms",
        ])
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    out
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The `all` latency row's `field`.
fn all(results: &serde_json::Value, field: &str) -> u64 {
    let rows = results["latency"].as_array().unwrap();
    let all = rows.iter().find(|r| r["op"] == "all").unwrap();
    all[field].as_u64().unwrap()
}

/// Every op's latency histogram of `results`, added up.
fn summed_latency(results: &[&serde_json::Value]) -> Histogram<u64> {
    let mut sum: Option<Histogram<u64>> = None;
    for r in results {
        for h in r["histograms"]["latency"].as_array().unwrap() {
            let h = gadget_results::hdr::decode(h["hdr"].as_str().unwrap()).unwrap();
            match sum.as_mut() {
                Some(s) => s.add(&h).unwrap(),
                None => sum = Some(h),
            }
        }
    }
    sum.unwrap()
}

fn schema_errors(results: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value = serde_json::from_slice(
        &std::fs::read(project_root().join("docs/results.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator
        .iter_errors(results)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

#[test]
fn two_shards_merge_into_one_run_that_analyze_and_compare_read() {
    let dir = tempfile::tempdir().unwrap();
    let a = shard(dir.path(), "a.json", 1);
    let b = shard(dir.path(), "b.json", 2);
    let merged = dir.path().join("merged.json");
    gadget()
        .arg("merge")
        .args([&a, &b])
        .arg("-o")
        .arg(&merged)
        .assert()
        .success()
        .stdout(predicate::str::contains("merged from 2 shards"))
        .stdout(predicate::str::contains("a.json"))
        .stderr(predicate::str::contains(
            "wrote the merged results of 2 shards",
        ));
    let (ra, rb, m) = (json(&a), json(&b), json(&merged));
    for r in [&ra, &rb, &m] {
        let errors = schema_errors(r);
        assert!(errors.is_empty(), "not the schema's: {errors:#?}");
    }

    // counts summed
    let count = |r: &serde_json::Value, f: &str| r[f].as_u64().unwrap();
    for f in [
        "requests",
        "reads_found",
        "reads_empty",
        "bytes_read",
        "warmup_requests",
    ] {
        assert_eq!(count(&m, f), count(&ra, f) + count(&rb, f), "{f}");
    }
    assert_eq!(count(&m, "requests"), 3_000);
    assert_eq!(m["target_rate"], 40_000.0);
    assert_eq!(m["shards"].as_array().unwrap().len(), 2);
    assert_eq!(m["shards"][1]["results"]["seed"], 2);
    assert!(m["shards"][0]["file"].as_str().unwrap().ends_with("a.json"));
    assert!(m["shards"][0]["results"].get("histograms").is_none());
    let series: u64 = m["time_series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["all"]["ops"].as_u64().unwrap())
        .sum();
    assert_eq!(series, 3_000, "every request in the merged time series");

    // the merged p99 lies between the shards', and is the summed histogram's
    let (pa, pb, pm) = (all(&ra, "p99_ns"), all(&rb, "p99_ns"), all(&m, "p99_ns"));
    assert!(pa.min(pb) <= pm && pm <= pa.max(pb), "{pa} {pm} {pb}");
    let sum = summed_latency(&[&ra, &rb]);
    assert_eq!(pm, sum.value_at_quantile(0.99));
    assert_eq!(all(&m, "max_ns"), sum.max());
    assert_eq!(all(&m, "p9999_ns"), sum.value_at_quantile(0.9999));
    assert_eq!(summed_latency(&[&m]), sum, "bucket for bucket");

    // bench reads results as RunReport; analyze and compare take the merge like a run
    let report: gadget_results::RunReport =
        serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert_eq!(report.shards.len(), 2);
    gadget()
        .arg("analyze")
        .arg(&merged)
        .assert()
        .success()
        .stdout(predicate::str::contains("3,000 requests"));
    gadget()
        .arg("compare")
        .args([&a, &merged])
        .assert()
        .success()
        .stdout(predicate::str::contains("merged.json"));

    // `-o -`: the results alone on standard output, the summary on standard error
    let out = gadget()
        .arg("merge")
        .args([a.as_path(), b.as_path(), Path::new("-o"), Path::new("-")])
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["requests"], 3_000);
    assert!(String::from_utf8_lossy(&out.stderr).contains("merged from 2 shards"));
    let out = gadget()
        .args(["merge", "--json", "--label", "both"])
        .args([&a, &b])
        .output()
        .unwrap();
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["context"]["label"], "both");
}

#[test]
fn what_is_not_one_runs_shards_is_refused_naming_the_files_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let a = shard(dir.path(), "a.json", 1);
    let failed = |args: &[&Path]| {
        let out = gadget().arg("merge").args(args).output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(!said.contains("panicked"), "{said}");
        said
    };

    // the same file twice, or the same shard run twice
    let said = failed(&[&a, &a]);
    assert!(
        said.contains("same shard") && said.contains("one file"),
        "{said}"
    );
    let again = dir.path().join("again.json");
    std::fs::copy(&a, &again).unwrap();
    let said = failed(&[&a, &again]);
    assert!(said.contains("both ran seed 1"), "{said}");

    // another store
    let mut other = json(&a);
    other["store"] = "rocksdb".into();
    other["seed"] = 9.into();
    let c = dir.path().join("c.json");
    std::fs::write(&c, serde_json::to_vec(&other).unwrap()).unwrap();
    let said = failed(&[&a, &c]);
    assert!(
        said.contains("a.json and") && said.contains("c.json are not shards of one run"),
        "{said}"
    );
    assert!(
        said.contains("their store differs (memory against rocksdb)"),
        "{said}"
    );

    // damaged files: the byte where it broke, or the field
    let cut = dir.path().join("cut.json");
    let text = std::fs::read(&a).unwrap();
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let said = failed(&[&a, &cut]);
    assert!(
        said.contains("cut.json is not gadget run/replay results"),
        "{said}"
    );
    assert!(
        said.contains(&format!("at byte {}", text.len() / 2)),
        "{said}"
    );
    let mut damaged = json(&a);
    damaged["seed"] = 7.into();
    damaged["histograms"]["latency"][0]["hdr"] = "HISTFAAA".into();
    let d = dir.path().join("d.json");
    std::fs::write(&d, serde_json::to_vec(&damaged).unwrap()).unwrap();
    let said = failed(&[&a, &d]);
    assert!(
        said.contains("d.json: `histograms.latency[0].hdr"),
        "{said}"
    );

    // never over an input
    let said = failed(&[&a, Path::new("-o"), &a]);
    assert!(said.contains("is also an input"), "{said}");
}

/// `gadget merge ARGS`, which must fail with status 1 and no panic: what it said.
fn refused(args: &[&Path]) -> String {
    let out = gadget().arg("merge").args(args).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(!said.contains("panicked"), "{said}");
    said
}

#[test]
fn histogram_counts_that_add_up_beyond_what_a_histogram_holds_are_refused_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let a = shard(dir.path(), "a.json", 1);
    // a results file whose one op counts i64::MAX − 1 requests (in one bucket): alone it
    // is consistent, with another shard a merged bucket would overflow HdrHistogram's encoding
    let count = i64::MAX as u64 - 1;
    let mut h = gadget_results::hdr::Histogram::<u64>::new_from(&summed_latency(&[&json(&a)]));
    h.reset();
    h.record_n(1_000, count).unwrap();
    let hdr = gadget_results::hdr::encode(&h);
    let mut big = json(&a);
    big["seed"] = 11.into();
    big["requests"] = count.into();
    for kind in ["latency", "service"] {
        big["histograms"][kind] = serde_json::json!([{ "op": "get", "hdr": hdr }]);
    }
    big["histograms"]["per_state"] = serde_json::json!([]);
    let b = dir.path().join("big.json");
    std::fs::write(&b, serde_json::to_vec(&big).unwrap()).unwrap();
    gadget().arg("merge").arg(&b).assert().success();
    let said = refused(&[&b, &a]);
    let total = u128::from(count) + u128::from(json(&a)["requests"].as_u64().unwrap());
    assert!(
        said.contains(&format!(
            "a.json: `histograms.latency` brings the requests merged to {total}, more than the \
             9223372036854775807 a histogram bucket can count"
        )),
        "{said}"
    );
    // a service-time histogram that does not hold its op's requests
    let mut edited = json(&a);
    edited["seed"] = 12.into();
    edited["histograms"]["service"][0]["hdr"] = hdr.into();
    let e = dir.path().join("e.json");
    std::fs::write(&e, serde_json::to_vec(&edited).unwrap()).unwrap();
    let said = refused(&[&a, &e]);
    assert!(
        said.contains("e.json: `histograms.service[0].hdr")
            && said.contains("holds 9223372036854775806"),
        "{said}"
    );
}

#[test]
fn a_shard_no_run_could_have_been_is_refused_naming_the_file_and_what_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let a = shard(dir.path(), "a.json", 1);
    for (i, (args, said)) in [
        (&["--shard", "3/3"][..], "says --shard \"3/3\": the index is not below the count; give INDEX/COUNT with 0 <= INDEX < COUNT <= 4096"),
        (&["--shard", "5/3"], "says --shard \"5/3\": the index is not below the count"),
        (&["--parallelism", "2", "--subtask", "2"], "says --subtask 2 of --parallelism 2: a subtask is from 0 to 1"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut edited = json(&a);
        let line = edited["context"]["command_line"].as_array_mut().unwrap();
        line.extend(args.iter().map(|a| serde_json::Value::from(*a)));
        let path = dir.path().join(format!("part-{i}.json"));
        std::fs::write(&path, serde_json::to_vec(&edited).unwrap()).unwrap();
        let stated = refused(&[&path]);
        assert!(
            stated.contains(&format!("part-{i}.json: `context.command_line` {said}")),
            "{stated}"
        );
    }
}
