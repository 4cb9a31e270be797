//! `gadget bench` with a baseline: every other cell gets a verdict against the cell that
//! differs by the baseline alone, in `summary.json` (`verdict`, `against_baseline`), the printed
//! table and the report; the runs go in blocks; warnings say what makes numbers less
//! trustworthy; a baseline that names nothing is refused at its line.

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
        .display()
        .to_string()
}

fn bench(experiment: &Path, out: &Path) -> std::process::Output {
    Command::cargo_bin("gadget")
        .unwrap()
        .env_remove("GADGET_ROCKSDB_LIB")
        .arg("bench")
        .arg(experiment)
        .arg("-o")
        .arg(out)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap()
}

#[test]
fn every_cell_is_judged_against_the_baseline_in_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("e.toml");
    std::fs::write(
        &exp,
        format!(
            "[experiment]\nrepetitions = 4\nlimit = 3000\nbaseline = \"memory\"\nnoise_threshold = 0.05\n\
             [[workload]]\nconfig = \"{}\"\n[[workload]]\nconfig = \"{}\"\n\
             [[store]]\nkind = \"memory\"\n[[store]]\nkind = \"lmdb\"\nlmdb_map_gb = 1\n",
            example("ycsb/workloada.toml"),
            example("ycsb/workloadc.toml")
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = bench(&exp, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["baseline"], "memory");
    assert_eq!(summary["noise_threshold"], 0.05);
    // blocks: each four runs hold every cell once, repetition by repetition
    let order: Vec<&str> = summary["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    for (b, block) in order.chunks(4).enumerate() {
        let mut cells: Vec<&str> = block
            .iter()
            .map(|r| r.rsplit_once('.').unwrap().0)
            .collect();
        cells.sort_unstable();
        cells.dedup();
        assert_eq!(cells.len(), 4, "{block:?}");
        assert!(
            block.iter().all(|r| r.ends_with(&format!(".r{}", b + 1))),
            "{block:?}"
        );
    }
    for cell in summary["cells"].as_array().unwrap() {
        let id = cell["id"].as_str().unwrap();
        if cell["store"] == "memory" {
            assert!(cell.get("verdict").is_none(), "{id} is a baseline cell");
            continue;
        }
        let against = &cell["against_baseline"];
        assert_eq!(
            against["baseline_cell"],
            id.replace(".lmdb.", ".memory."),
            "{id}"
        );
        let t = &against["throughput"];
        assert_eq!(t["blocks"], 4);
        let (low, ratio, high) = (
            t["low"].as_f64().unwrap(),
            t["ratio"].as_f64().unwrap(),
            t["high"].as_f64().unwrap(),
        );
        assert!(0.0 < low && low <= ratio && ratio <= high, "{t}");
        assert!(t["p_corrected"].as_f64().unwrap() >= t["p"].as_f64().unwrap());
        let verdict = cell["verdict"].as_str().unwrap();
        assert_eq!(verdict, t["verdict"].as_str().unwrap());
        assert!(
            [
                "× faster [",
                "× slower [",
                "no difference beyond noise (±5%)",
                "inconclusive: add repetitions"
            ]
            .iter()
            .any(|f| verdict.contains(f)),
            "{verdict}"
        );
        for p in ["p50", "p99", "p999", "max"] {
            assert!(
                against["latency"][p]["low"].as_f64().unwrap() > 0.0,
                "{p} never negative"
            );
        }
    }
    // short runs of few requests: said, with what to do
    let warnings = summary["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("under 1 s")),
        "{warnings:?}"
    );
    // what ran: the machine, and each store
    let ran = &summary["ran"];
    assert!(ran["machine"].as_str().unwrap().contains("CPUs"), "{ran}");
    assert!(
        ran["stores"]["lmdb"].is_array() && ran["stores"]["memory"].is_array(),
        "{ran}"
    );
    let printed = String::from_utf8_lossy(&o.stdout);
    assert!(printed.contains("Ran on "), "{printed}");
    assert!(
        printed.contains("## Against the baseline `memory`"),
        "{printed}"
    );
    assert!(printed.contains("**Warnings:**"), "{printed}");
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("Against the baseline"));
    // the runs' context says how loaded the machine was
    let run = std::fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.extension().is_some_and(|e| e == "json")
                && !p.to_string_lossy().ends_with(".inputs.json")
        })
        .unwrap();
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(run).unwrap()).unwrap();
    assert!(
        run["context"]["host"]["load_average_1m"].as_f64().is_some(),
        "{}",
        run["context"]["host"]
    );
}

#[test]
fn a_baseline_that_names_nothing_or_stands_alone_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("e.toml");
    for (baseline, says) in [
        ("nosuch", "names no store, workload or arrival"),
        ("w", "the only one of its kind"),
    ] {
        std::fs::write(
            &exp,
            format!(
                "[experiment]\nbaseline = \"{baseline}\"\n[[workload]]\nname = \"w\"\nconfig = \"{}\"\n\
                 [[store]]\nkind = \"memory\"\n[[store]]\nkind = \"lmdb\"\n",
                example("ycsb/workloada.toml")
            ),
        )
        .unwrap();
        let o = bench(&exp, &dir.path().join("out"));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success());
        assert!(e.contains("e.toml:2:") && e.contains(says), "{e}");
    }
}

#[test]
fn a_quick_try_overrides_repetitions_and_limit_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("e.toml");
    std::fs::write(
        &exp,
        format!(
            "[experiment]\nrepetitions = 10\n[[workload]]\nconfig = \"{}\"\nlimit = 100000\n\
             [[store]]\nkind = \"memory\"\n[[store]]\nkind = \"lmdb\"\n",
            example("ycsb/workloada.toml")
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = Command::cargo_bin("gadget")
        .unwrap()
        .arg("bench")
        .arg(&exp)
        .arg("-o")
        .arg(&out)
        .args(["--repetitions", "1", "--limit", "500"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        summary["overrides"],
        serde_json::json!(["--repetitions 1", "--limit 500"])
    );
    assert_eq!(summary["order"].as_array().unwrap().len(), 2);
    assert!(String::from_utf8_lossy(&o.stdout).contains("**Quick try:**"));
    let run: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join("runs/workloada.memory.closed.r1.json")).unwrap(),
    )
    .unwrap();
    assert!(run["context"]["command_line"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a == "--limit=500"));
    let bad = Command::cargo_bin("gadget")
        .unwrap()
        .arg("bench")
        .arg(&exp)
        .arg("-o")
        .arg(dir.path().join("other"))
        .args(["--repetitions", "0"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--repetitions 0 is out of range"));
}
