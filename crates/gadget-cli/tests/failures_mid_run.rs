//! Failures in the middle of a run, as users meet them: a Redis server that dies or freezes,
//! a signal while the driver waits for a far intended start. Each run must end (bounded in
//! time), print and write what it measured, marked partial with the reason, and exit non-zero.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod filesystem;
mod interrupt;
#[path = "../../gadget-eval/tests/support/mod.rs"]
mod redis_support;

use filesystem::SmallFilesystem;
use interrupt::{endless_window, endless_workload, spawn_gadget, terminate_and_wait, wait_bounded};
use redis_support::RedisServer;

/// The longest a command here may take.
const LIMIT: Duration = Duration::from_secs(60);

/// The outputs of a run under `dir`: results, CSV series, HDR log.
struct Outputs {
    json: PathBuf,
    csv: PathBuf,
    hdr_log: PathBuf,
}

impl Outputs {
    fn in_dir(dir: &Path) -> Self {
        Outputs {
            json: dir.join("r.json"),
            csv: dir.join("r.csv"),
            hdr_log: dir.join("r.hlog"),
        }
    }

    fn args(&self) -> Vec<String> {
        let p = |p: &PathBuf| p.to_str().unwrap().to_string();
        vec![
            "-o".into(),
            p(&self.json),
            "--csv".into(),
            p(&self.csv),
            "--hdr-log".into(),
            p(&self.hdr_log),
        ]
    }

    /// Checks that every output was written and marked partial; the JSON results.
    fn assert_written_partial(&self, reason: &str) -> serde_json::Value {
        let results: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&self.json).expect("the results are written"))
                .unwrap();
        assert_eq!(results["partial"], true, "{results}");
        let stated = results["partial_reason"].as_str().unwrap_or_default();
        assert!(
            stated.contains(reason),
            "partial_reason {stated:?} lacks {reason:?}"
        );
        assert!(results["requests"].as_u64().unwrap() > 0, "{results}");
        let csv = std::fs::read_to_string(&self.csv).expect("the CSV is written");
        assert!(csv.starts_with("# PARTIAL: "), "{csv}");
        assert!(csv.contains(reason), "{csv}");
        let log = std::fs::read_to_string(&self.hdr_log).expect("the HDR log is written");
        assert!(log.contains("#PARTIAL: "), "{log}");
        results
    }
}

/// Starts `gadget run` of an endless workload on Redis at `url`, open loop at 2,000
/// requests/s, writing every output, with `extra` arguments.
fn run_on_redis(dir: &Path, url: &str, outputs: &Outputs, extra: &[&str]) -> Child {
    let cfg = endless_workload(dir);
    let mut args: Vec<String> = vec![
        "run".into(),
        cfg.to_str().unwrap().into(),
        "--store".into(),
        "redis".into(),
        "--redis-url".into(),
        url.into(),
        "--arrival".into(),
        "constant".into(),
        "--rate".into(),
        "2000".into(),
        "--limit".into(),
        "1000000".into(),
    ];
    args.extend(outputs.args());
    args.extend(extra.iter().map(|s| s.to_string()));
    spawn_gadget(args)
}

#[test]
fn a_redis_server_killed_mid_run_leaves_the_results_so_far_printed_written_and_partial() {
    let Some(mut server) = RedisServer::start("redis_killed_mid_run") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let outputs = Outputs::in_dir(dir.path());
    let child = run_on_redis(dir.path(), &server.url, &outputs, &[]);
    std::thread::sleep(Duration::from_millis(1500));
    server.kill();
    let out = wait_bounded(child, LIMIT, "a run whose Redis died");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lost = format!("connection to {} lost", server.url);
    assert!(stderr.contains(&lost), "{stderr}");
    assert!(stderr.contains("marked partial"), "{stderr}");
    assert!(
        stdout.contains("warning: PARTIAL: the redis store failed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("latency (completion - intended start)"),
        "{stdout}"
    );
    outputs.assert_written_partial(&lost);
}

#[test]
fn a_frozen_redis_server_times_out_instead_of_hanging_the_run() {
    let Some(server) = RedisServer::start("redis_frozen_mid_run") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let outputs = Outputs::in_dir(dir.path());
    let child = run_on_redis(
        dir.path(),
        &server.url,
        &outputs,
        &["--redis-timeout", "300ms"],
    );
    std::thread::sleep(Duration::from_millis(1500));
    server.freeze();
    let out = wait_bounded(child, LIMIT, "a run whose Redis froze");
    server.thaw();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let silent = format!("no answer from {} within 300ms", server.url);
    assert!(stderr.contains(&silent), "{stderr}");
    // the server was still frozen when the run cleaned up: the user learns how to do it later
    assert!(
        stderr.contains("the run's keys are left on") && stderr.contains("--scan --pattern"),
        "{stderr}"
    );
    outputs.assert_written_partial(&silent);
}

#[test]
fn sigterm_ends_a_run_waiting_on_a_frozen_redis_long_before_its_timeout() {
    let Some(server) = RedisServer::start("redis_frozen_then_sigterm") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let outputs = Outputs::in_dir(dir.path());
    let child = run_on_redis(
        dir.path(),
        &server.url,
        &outputs,
        &["--redis-timeout", "1h"],
    );
    std::thread::sleep(Duration::from_millis(1500));
    server.freeze();
    // the run now waits on a request that only the signal can end (bounded by LIMIT, far
    // below the hour-long timeout)
    let out = terminate_and_wait(child, Duration::from_millis(300), "a run on a frozen Redis");
    server.thaw();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("PARTIAL"),
        "{stderr}"
    );
    // still frozen at the cleanup, which after a stop waits briefly and says what is left
    assert!(stderr.contains("the run's keys are left on"), "{stderr}");
    let results = outputs.assert_written_partial("interrupted");
    assert!(results["requests"].as_u64().unwrap() > 0, "{results}");
}

#[test]
fn sigterm_stops_an_open_loop_run_waiting_for_a_far_intended_start() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = endless_workload(dir.path());
    let outputs = Outputs::in_dir(dir.path());
    // one request every 100 s: after the first, the driver waits
    let mut args: Vec<String> = ["run", cfg.to_str().unwrap(), "--store", "memory"]
        .into_iter()
        .map(String::from)
        .collect();
    args.extend(["--arrival", "constant", "--rate", "0.01"].map(String::from));
    args.extend(outputs.args());
    let child = spawn_gadget(args);
    let out = terminate_and_wait(child, Duration::from_millis(1500), "a waiting run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let results = outputs.assert_written_partial("interrupted");
    assert_eq!(results["requests"], 1);
}

#[test]
fn a_trace_cut_short_is_replayed_up_to_the_cut_and_marked_partial() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = endless_workload(dir.path());
    let whole = dir.path().join("t.gtrace");
    let status = std::process::Command::new(assert_cmd::cargo::cargo_bin("gadget"))
        .args(["gen", cfg.to_str().unwrap(), "--limit", "200000", "-o"])
        .arg(&whole)
        .output()
        .unwrap()
        .status;
    assert!(status.success());
    let bytes = std::fs::read(&whole).unwrap();
    let cut = dir.path().join("cut.gtrace");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let outputs = Outputs::in_dir(dir.path());
    let mut args = vec![
        "replay".to_string(),
        cut.to_str().unwrap().to_string(),
        "--store".into(),
        "memory".into(),
    ];
    args.extend(outputs.args());
    let out = wait_bounded(spawn_gadget(args), LIMIT, "a replay of a cut trace");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("trace truncated at byte"), "{stderr}");
    outputs.assert_written_partial("trace truncated at byte");
}

#[test]
fn rocksdb_filling_its_disk_ends_the_run_partial_and_removes_its_temporary_store() {
    let Some(fs) = SmallFilesystem::mount(4096, "rocksdb on a full disk") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // a holistic window over many keys: every event appends to a list, so the store grows
    let cfg = endless_window(dir.path(), 100_000, 2000, 100_000, "holistic");
    let outputs = Outputs::in_dir(dir.path());
    let mut args: Vec<String> = ["run", cfg.to_str().unwrap(), "--store", "rocksdb"]
        .map(String::from)
        .to_vec();
    // small memtables and the write-ahead log: the disk fills within a second
    args.extend(["--write-buffer-mb", "1", "--wal"].map(String::from));
    args.extend(outputs.args());
    // the store's temporary directory is made under TMPDIR: on the small filesystem
    let child = Command::new(assert_cmd::cargo::cargo_bin("gadget"))
        .args(&args)
        .env("TMPDIR", fs.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_bounded(child, LIMIT, "a run on a full disk");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // an error and a partial result, not an abort (134) or a crash
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    outputs.assert_written_partial("No space left on device");
    let left: Vec<_> = std::fs::read_dir(fs.path()).unwrap().collect();
    assert!(left.is_empty(), "the temporary store is left: {left:?}");
}

#[test]
fn merge_on_a_full_disk_prints_what_it_merged_and_names_the_file_that_holds_it() {
    let Some(fs) = SmallFilesystem::mount(64, "merge on a full disk") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let shard = |i: usize| {
        let out = dir.path().join(format!("s{i}.json"));
        let done = Command::new(assert_cmd::cargo::cargo_bin("gadget"))
            .current_dir(&root)
            .args(["run", "examples/ycsb/workloada.toml", "--store", "memory"])
            .args(["--limit", "1000", "--shard", &format!("{i}/2"), "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            done.status.success(),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
        out
    };
    let shards = [shard(0), shard(1)];
    fs.fill();
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("gadget"))
        .arg("merge")
        .args(&shards)
        .arg("-o")
        .arg(fs.path().join("merged.json"))
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("requests"),
        "no summary printed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let kept: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(kept.len(), 1, "the merged results are kept in TMPDIR");
}

/// A trace of 40,000 gets and puts over 100 keys, then a put of `MAX_VALUE_LEN` bytes under
/// the key `HUGE-VALUE`, then 100 gets, in `format`.
fn trace_with_a_huge_value(format: gadget::trace::TraceFormat) -> Vec<u8> {
    use gadget::access::{Access, AccessSink, Op};
    use gadget::trace::{BinaryTraceWriter, TextTraceWriter, TraceFooter, TraceHeader};
    let header = TraceHeader::new("test", vec!["s".into()], None, serde_json::Value::Null);
    fn feed(w: &mut impl AccessSink) {
        let mut access = |op, key: &[u8], value_len| {
            w.access(Access {
                op,
                state: 0,
                key,
                value_len,
            })
        };
        for i in 0..40_000u32 {
            let key = format!("key-{}", i % 100);
            access(
                [Op::Get, Op::Put][i as usize % 2],
                key.as_bytes(),
                16 * (i % 2),
            );
        }
        access(Op::Put, b"HUGE-VALUE", gadget::trace::MAX_VALUE_LEN);
        for _ in 0..100 {
            access(Op::Get, b"key-1", 0);
        }
    }
    match format {
        gadget::trace::TraceFormat::Binary => {
            let mut w = BinaryTraceWriter::new(Vec::new(), &header).unwrap();
            feed(&mut w);
            w.finish(TraceFooter::new(false)).unwrap()
        }
        gadget::trace::TraceFormat::Text => {
            let mut w = TextTraceWriter::new(Vec::new(), &header).unwrap();
            feed(&mut w);
            w.finish(TraceFooter::new(false)).unwrap()
        }
    }
}

/// `binary` with the value length after the key `HUGE-VALUE` (a 4-byte varint, 2^26) made
/// 2^28 − 1, the largest of four bytes, and its block's checksum made right again.
fn with_a_longer_value(mut binary: Vec<u8>) -> Vec<u8> {
    let at = binary
        .windows(10)
        .position(|w| w == b"HUGE-VALUE")
        .expect("the key is in the trace")
        + 10;
    assert_eq!(binary[at..at + 4], [0x80, 0x80, 0x80, 0x20]);
    binary[at..at + 4].copy_from_slice(&[0xff, 0xff, 0xff, 0x7f]);
    // the block around it: blocks follow one another from byte 10 (13-byte headers)
    let mut block = 10;
    loop {
        let len = u32::from_le_bytes(binary[block + 1..block + 5].try_into().unwrap()) as usize;
        if at < block + 13 + len {
            break;
        }
        block += 13 + len;
    }
    let len = u32::from_le_bytes(binary[block + 1..block + 5].try_into().unwrap()) as usize;
    let mut crc = flate2::Crc::new();
    crc.update(&binary[block..block + 9]);
    crc.update(&binary[block + 13..block + 13 + len]);
    binary[block + 9..block + 13].copy_from_slice(&crc.sum().to_le_bytes());
    binary
}

#[test]
fn a_value_longer_than_any_store_is_handed_ends_the_replay_partial_and_removes_its_store() {
    use gadget::trace::TraceFormat;
    let dir = tempfile::tempdir().unwrap();
    let binary = with_a_longer_value(trace_with_a_huge_value(TraceFormat::Binary));
    let text = String::from_utf8(trace_with_a_huge_value(TraceFormat::Text))
        .unwrap()
        .replace(
            &format!("\t{}\t67108864\n", hex(b"HUGE-VALUE")),
            &format!("\t{}\t4294967295\n", hex(b"HUGE-VALUE")),
        );
    let line = text.lines().position(|l| l.contains("4294967295")).unwrap() + 1;
    for (name, bytes, said) in [
        (
            "huge.gtrace",
            binary,
            "a put of a 268435455-byte value, longer than the 67108864 bytes (64 MiB) a value may have"
                .to_string(),
        ),
        (
            "huge.trace.txt",
            text.into_bytes(),
            format!("malformed trace at line {line}: a put of a 4294967295-byte value"),
        ),
    ] {
        let trace = dir.path().join(name);
        std::fs::write(&trace, bytes).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let outputs = Outputs::in_dir(dir.path());
        let mut args = vec![
            "replay".to_string(),
            trace.to_str().unwrap().to_string(),
            "--store".into(),
            "memory".into(),
        ];
        args.extend(outputs.args());
        // the store's temporary directory is made under TMPDIR
        let child = Command::new(assert_cmd::cargo::cargo_bin("gadget"))
            .args(&args)
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = wait_bounded(child, LIMIT, "a replay of a trace with a huge value");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        // a failed run, not an abort (134) after growing the value pool to 4 GiB
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains(&said), "{name}: {stderr}");
        assert!(stdout.contains("PARTIAL") || stderr.contains("PARTIAL"), "{stdout}{stderr}");
        let results = outputs.assert_written_partial(&said);
        // every request before the damaged one was read and issued
        assert_eq!(results["requests"], 40_000, "{name}");
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert!(left.is_empty(), "{name}: the temporary store is left: {left:?}");
    }
}

/// Bytes as lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
