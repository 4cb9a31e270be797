//! `gadget bench` given mistakes and trouble: settings that would become flags, names that
//! would collide, plans and files too large, a folder two benches want, inputs changed before a
//! resume, a full disk and runs that fail or are killed. Each case either stops before any run,
//! naming the experiment file's line, or keeps and reports what it measured.

mod filesystem;

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use assert_cmd::Command;

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example(name: &str) -> String {
    project_root()
        .join("examples")
        .join(name)
        .display()
        .to_string()
}

fn gadget() -> Command {
    let mut c = Command::cargo_bin("gadget").unwrap();
    c.env_remove("GADGET_ROCKSDB_LIB");
    c
}

fn bench(experiment: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    gadget()
        .arg("bench")
        .arg(experiment)
        .arg("-o")
        .arg(out)
        .args(extra)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A trace of `limit` requests of YCSB workload A, at `path`.
fn trace(path: &Path, limit: u64) {
    let o = gadget()
        .arg("gen")
        .arg(example("ycsb/workloada.toml"))
        .arg("-o")
        .arg(path)
        .arg("--limit")
        .arg(limit.to_string())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Fails before any run, naming `at` (the file and line) and saying `says`.
fn refused(dir: &Path, text: &str, at: &str, says: &str) {
    let exp = write(dir, "e.toml", text);
    let out = dir.join("out-refused");
    let o = bench(&exp, &out, &[]);
    let e = stderr(&o);
    assert!(!o.status.success(), "accepted:\n{text}");
    assert!(e.contains(at) && e.contains(says), "{text}\n=> {e}");
    assert!(!out.join("runs").exists(), "a run started:\n{text}");
}

#[test]
fn a_setting_of_the_wrong_type_or_a_name_or_path_like_a_flag_never_becomes_a_flag() {
    let dir = tempfile::tempdir().unwrap();
    let w = format!(
        "[[workload]]\nconfig = \"{}\"\n",
        example("ycsb/workloada.toml")
    );
    // a switch given a path: it was `--store-counters <path>`, the path a second workload
    refused(
        dir.path(),
        &format!("{w}[[store]]\nkind = \"memory\"\nstore_counters = \"/x.gtrace\"\n"),
        "e.toml:5:",
        "must be true or false",
    );
    refused(
        dir.path(),
        &format!("{w}[[store]]\nkind = \"rocksdb\"\nwrite_buffer_mb = 17592186044416\n"),
        "e.toml:5:",
        "out of range",
    );
    refused(
        dir.path(),
        &format!("{w}[[store]]\nkind = \"memory\"\nname = \"-w\"\n"),
        "e.toml:5:",
        "not starting with '-'",
    );
    // files whose names look like flags are files
    std::fs::copy(example("ycsb/workloada.toml"), dir.path().join("--help")).unwrap();
    std::fs::copy(
        example("ycsb/workloada.toml"),
        dir.path().join("-dash.toml"),
    )
    .unwrap();
    let exp = write(
        dir.path(),
        "flags.toml",
        "[experiment]\nrepetitions = 1\nlimit = 500\n\
         [[workload]]\nname = \"help\"\nconfig = \"--help\"\n\
         [[workload]]\nconfig = \"-dash.toml\"\n[[store]]\nkind = \"memory\"\n",
    );
    let out = dir.path().join("out");
    let o = gadget()
        .current_dir(dir.path())
        .args(["bench", "flags.toml", "-o", "out", "--json"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let _ = exp;
    let summary = json(&out.join("summary.json"));
    for cell in summary["cells"].as_array().unwrap() {
        assert_eq!(cell["completed"], 1, "{cell}");
    }
    for id in ["help.memory.closed.r1", "dash.memory.closed.r1"] {
        let run = json(&out.join("runs").join(format!("{id}.json")));
        assert_eq!(run["requests"], 500, "{id}: one workload of 500 requests");
    }
}

#[test]
fn cells_that_would_share_a_name_are_refused_at_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let base = "[[workload]]\nname = \"w\"\ntrace = \"t.gtrace\"\n[[store]]\nkind = \"memory\"\n";
    refused(
        dir.path(),
        &format!("{base}[[arrival]]\nprocess = \"poisson\"\nrates = [20000, 20000]\n"),
        "e.toml:8:",
        "listed already",
    );
    refused(
        dir.path(),
        &format!("{base}[[arrival]]\nprocess = \"poisson\"\nrates = {{ from = 10, to = 11, steps = 4 }}\n"),
        "e.toml:8:",
        "round to one rate",
    );
    refused(
        dir.path(),
        "[[workload]]\nname = \"w.x\"\ntrace = \"t.gtrace\"\n[[store]]\nkind = \"memory\"\n",
        "e.toml:2:",
        "'.' joins the names of a cell",
    );
    refused(
        dir.path(),
        &format!(
            "[[workload]]\nname = \"{}\"\ntrace = \"t.gtrace\"\n[[store]]\nkind = \"memory\"\n",
            "n".repeat(300)
        ),
        "e.toml:2:",
        "at most 64",
    );
    refused(
        dir.path(),
        "[[workload]]\nconfig = \"a.toml\"\n[workload.properties]\nrecordcount = \"1\\u0000\"\n[[store]]\nkind = \"memory\"\n",
        "e.toml:4:",
        "control character",
    );
}

#[test]
fn a_plan_too_large_or_a_file_without_end_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    refused(
        dir.path(),
        "[experiment]\nrepetitions = 1000\n[[workload]]\ntrace = \"t.gtrace\"\n\
         [[store]]\nkind = \"memory\"\n[[store]]\nkind = \"lmdb\"\n\
         [[arrival]]\nprocess = \"poisson\"\nrates = { from = 1, to = 1000000, steps = 1000 }\n",
        "e.toml",
        "plans 2000000 runs",
    );
    for command in ["bench", "gen"] {
        let o = gadget()
            .args([command, "/dev/zero", "-o"])
            .arg(dir.path().join("zero-out"))
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        assert!(!o.status.success());
        assert!(
            stderr(&o).contains("more than any config"),
            "{}",
            stderr(&o)
        );
    }
    // the bound is the cause of the speed, not a timing claim: nothing close to 2 GB is read
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn a_setting_the_store_does_not_read_or_a_misspelled_config_key_stops_it_before_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let ycsb = format!(
        "[[workload]]\nconfig = \"{}\"\n",
        example("ycsb/workloada.toml")
    );
    refused(
        dir.path(),
        &format!("{ycsb}[[store]]\nkind = \"lmdb\"\nwrite_buffer_mb = 64\n"),
        "e.toml:5:",
        "the lmdb store does not read `write_buffer_mb`",
    );
    // each setting allowed, not together: Flink's memory needs a RocksJava build, not Debian's
    refused(
        dir.path(),
        &format!(
            "{ycsb}[[store]]\nkind = \"memory\"\n[[store]]\nkind = \"rocksdb\"\n\
             rocksdb_options = \"flink\"\nrocksdb_lib = \"debian\"\n"
        ),
        "e.toml:7:",
        "`rocksdb_lib` in an experiment's `[[store]]`): flink-1.20",
    );
    let config = std::fs::read_to_string(example("paper/tumbling-incremental.toml"))
        .unwrap()
        .replace("\nsize = ", "\nsise = ");
    write(dir.path(), "sise.toml", &config);
    std::fs::copy(
        example("paper/tumbling-incremental.toml"),
        dir.path().join("fine.toml"),
    )
    .unwrap();
    refused(
        dir.path(),
        "[[workload]]\nconfig = \"fine.toml\"\n[[workload]]\nconfig = \"sise.toml\"\n[[store]]\nkind = \"memory\"\n",
        "e.toml:4:",
        "unknown key; did you mean `size`?",
    );
}

#[test]
fn a_missing_workload_file_stops_the_experiment_before_any_run_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    refused(
        dir.path(),
        &format!(
            "[[workload]]\nconfig = \"{}\"\n[[workload]]\nconfig = \"no-such.toml\"\n[[store]]\nkind = \"memory\"\n",
            example("ycsb/workloada.toml")
        ),
        "e.toml:4:",
        "no-such.toml",
    );
}

#[test]
fn resume_reruns_the_runs_whose_trace_was_replaced_and_keeps_the_others() {
    let dir = tempfile::tempdir().unwrap();
    trace(&dir.path().join("a.gtrace"), 1000);
    trace(&dir.path().join("b.gtrace"), 1000);
    let exp = write(
        dir.path(),
        "e.toml",
        "[experiment]\nrepetitions = 1\n[[workload]]\ntrace = \"a.gtrace\"\n\
         [[workload]]\ntrace = \"b.gtrace\"\n[[store]]\nkind = \"memory\"\n",
    );
    let out = dir.path().join("out");
    let first = bench(&exp, &out, &[]);
    assert!(first.status.success(), "{}", stderr(&first));
    let runs = out.join("runs");
    let b_before = std::fs::metadata(runs.join("b.memory.closed.r1.json"))
        .unwrap()
        .modified()
        .unwrap();
    // the same name, other requests
    trace(&dir.path().join("a.gtrace"), 1500);
    let resumed = bench(&exp, &out, &["--resume"]);
    let said = stderr(&resumed);
    assert!(resumed.status.success(), "{said}");
    assert!(
        said.contains("keeping 1 finished runs") && said.contains("a.memory.closed.r1"),
        "{said}"
    );
    assert_eq!(
        json(&runs.join("a.memory.closed.r1.json"))["requests"],
        1500
    );
    assert!(runs.join("a.memory.closed.r1.stale.json").exists());
    let b_after = std::fs::metadata(runs.join("b.memory.closed.r1.json"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(b_before, b_after, "an unchanged run was run again");
}

/// The processes whose command line holds `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(needle) && pid != std::process::id() {
            found.push(pid);
        }
    }
    found
}

/// A bench of one endless workload whose run lasts `duration`, started in the background.
fn endless_bench(dir: &Path, duration: &str) -> (std::process::Child, PathBuf) {
    let exp = write(
        dir,
        "endless.toml",
        &format!(
            "[experiment]\nrepetitions = 2\nduration = \"{duration}\"\n[[workload]]\nconfig = \"{}\"\n[[store]]\nkind = \"memory\"\n",
            example("bench/tumbling-incr-zipf.toml")
        ),
    );
    let out = dir.join("out");
    let child = StdCommand::cargo_bin("gadget")
        .unwrap()
        .arg("bench")
        .arg(&exp)
        .arg("-o")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let runs = out.join("runs");
    let started = Instant::now();
    while processes_with(&format!("--output={}", runs.display())).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no run started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, out)
}

#[test]
fn one_folder_runs_one_bench_and_a_killed_bench_takes_its_run_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, out) = endless_bench(dir.path(), "60s");
    let exp = dir.path().join("endless.toml");
    // a second bench, or a resume, on the same folder is refused while the first runs
    let second = bench(&exp, &out, &["--resume"]);
    assert!(!second.status.success());
    assert!(
        stderr(&second).contains("in use by another `gadget bench`"),
        "{}",
        stderr(&second)
    );
    // SIGKILL of bench: its run stops too (it got SIGTERM), and a resume may then go on
    child.kill().unwrap();
    child.wait().unwrap();
    let runs = out.join("runs");
    let needle = format!("--output={}", runs.display());
    let killed = Instant::now();
    while !processes_with(&needle).is_empty() {
        assert!(
            killed.elapsed() < Duration::from_secs(20),
            "the run outlived its bench"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_run_killed_by_a_signal_is_reported_as_such_in_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let (child, out) = endless_bench(dir.path(), "60s");
    let runs = out.join("runs");
    let needle = format!("--output={}", runs.display());
    let killed = processes_with(&needle);
    for &pid in &killed {
        // SAFETY: kill(2) on a run this test's bench started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    // the other repetition starts: stop the bench there
    let started = Instant::now();
    while !processes_with(&needle).iter().any(|p| !killed.contains(p)) {
        assert!(started.elapsed() < Duration::from_secs(60), "no second run");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let summary = json(&out.join("summary.json"));
    let failed = summary["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{summary}");
    assert!(
        failed[0]["reason"]
            .as_str()
            .unwrap()
            .contains("killed by signal 9"),
        "{failed:?}"
    );
}

#[test]
fn a_failed_run_says_its_own_error() {
    let dir = tempfile::tempdir().unwrap();
    // a port nothing listens on
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let exp = write(
        dir.path(),
        "e.toml",
        &format!(
            "[experiment]\nrepetitions = 1\nlimit = 100\n[[workload]]\nconfig = \"{}\"\n\
             [[store]]\nkind = \"redis\"\nredis_url = \"redis://127.0.0.1:{port}\"\nredis_timeout = \"1s\"\n",
            example("ycsb/workloada.toml")
        ),
    );
    let out = dir.path().join("out");
    let o = bench(&exp, &out, &[]);
    assert_eq!(o.status.code(), Some(1));
    let summary = json(&out.join("summary.json"));
    let reason = summary["failed"][0]["reason"].as_str().unwrap().to_string();
    assert!(reason.contains(&port.to_string()), "{reason}");
    for noise in ["For more information", "no message", "RUST_BACKTRACE"] {
        assert!(!reason.contains(noise), "{reason}");
    }
    assert!(String::from_utf8_lossy(&o.stdout).contains("Runs that failed"));
}

#[test]
fn on_a_full_disk_every_summary_file_is_tried_and_the_table_printed() {
    let Some(fs) = filesystem::SmallFilesystem::mount(
        1024,
        "on_a_full_disk_every_summary_file_is_tried_and_the_table_printed",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let exp = write(
        dir.path(),
        "e.toml",
        &format!(
            "[experiment]\nrepetitions = 1\nlimit = 2000\n[[workload]]\nname = \"w\"\nconfig = \"{}\"\n[[store]]\nkind = \"memory\"\n",
            example("ycsb/workloada.toml")
        ),
    );
    // room for the folder's small files (the record, the lock, a log), not for results
    let spare = fs.path().join("spare");
    std::fs::write(&spare, vec![0u8; 4 * 4096]).unwrap();
    fs.fill();
    std::fs::remove_file(&spare).unwrap();
    let out = fs.path().join("out");
    let tmp = tempfile::tempdir().unwrap();
    let o = gadget()
        .env("TMPDIR", tmp.path())
        .arg("bench")
        .arg(&exp)
        .arg("-o")
        .arg(&out)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    let printed = String::from_utf8_lossy(&o.stdout);
    assert!(printed.contains("| workload |"), "no table: {printed}");
    assert!(
        printed.contains("`w.memory.closed.r1`"),
        "failed run not listed: {printed}"
    );
    // each file written, or named with the fallback file that holds it
    for file in ["summary.json", "summary.csv", "summary.md", "report.html"] {
        assert!(
            out.join(file).exists() || e.contains(&format!("{file}: No space left")),
            "{file} not tried: {e}"
        );
    }
    assert!(e.contains("report.html: No space left"), "{e}");
}
