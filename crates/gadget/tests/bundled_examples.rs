//! Every bundled workload config parses and generates (bounded by a request limit).

mod common;

use gadget::access::AccessCounts;
use gadget::config::Config;

fn run_all(folder: &str, needs_shared: bool) {
    if needs_shared && common::shared_dir(&format!("examples/{folder}")).is_none() {
        return;
    }
    let dir = common::project_root().join("examples").join(folder);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let config = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let mut op = config.build_operator();
        let mut counts = AccessCounts::default();
        let out = gadget::generate::generate(
            config.open_source().unwrap(),
            op.as_mut(),
            &mut counts,
            Some(200_000),
            &mut |_| {},
        )
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            out.counts.requests() > 0,
            "{} generated no request",
            path.display()
        );
        assert!(counts.events > 0, "{} read no event", path.display());
        n += 1;
    }
    assert!(n > 0, "no configs in {}", dir.display());
}

#[test]
fn paper_workloads_run() {
    run_all("paper", true);
}

#[test]
fn synthetic_examples_run() {
    run_all("synthetic", false);
}

#[test]
fn benchmark_workloads_run() {
    run_all("bench", false);
}

#[test]
fn run_examples_generate() {
    run_all("run", false);
}

#[test]
fn ycsb_workloads_generate() {
    run_all("ycsb", false);
}

#[test]
fn kvbench_presets_generate() {
    run_all("kvbench", false);
}

#[test]
fn external_state_examples_generate() {
    run_all("external", false);
}

#[test]
fn kafka_streams_reference_workloads_generate() {
    run_all("kafka-streams-reference", true);
}
