//! Bad configs give errors, never panics: every bundled example, mutated at random (a line
//! dropped, a value replaced, the text cut short), either loads and generates or fails with a
//! message that names the file.

mod common;

use std::path::{Path, PathBuf};

use gadget::access::AccessCounts;
use gadget::config::Config;
use proptest::prelude::*;

/// Every bundled config, with its text.
fn examples() -> Vec<(PathBuf, String)> {
    let mut all = Vec::new();
    for folder in [
        "flink-reference",
        "kafka-streams-reference",
        "spark-reference",
        "paper",
        "synthetic",
        "bench",
        "external",
    ] {
        let dir = common::project_root().join("examples").join(folder);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let text = std::fs::read_to_string(&path).unwrap();
                all.push((path, text));
            }
        }
    }
    all.sort();
    assert!(all.len() > 20, "expected the bundled examples");
    all
}

/// Values that are wrong in some way for most keys.
const ODD_VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "-0.0",
    "nan",
    "inf",
    "0.5",
    "\"\"",
    "\"zipf\"",
    "\"nonsense\"",
    "true",
    "[]",
    "[1, 2]",
    "{}",
    "{ type = \"uniform\" }",
    "\"\\t\"",
    "\"/nonexistent/file.csv\"",
    "1979-05-27",
];

/// Parses `text` as if it were `path`; when it loads, generates a few thousand requests.
fn load_and_generate(text: &str, path: &Path) {
    match Config::parse(text, path) {
        Err(e) => {
            let message = e.to_string();
            assert!(
                message.contains(path.file_name().unwrap().to_str().unwrap()),
                "error does not name the file: {message}"
            );
        }
        Ok(config) => {
            let Ok(source) = config.open_source() else {
                return;
            };
            let mut op = config.build_operator();
            let mut counts = AccessCounts::default();
            // errors (a bad row, a missing file) are fine; panics are not
            let _ = gadget::generate::generate(
                source,
                op.as_mut(),
                &mut counts,
                Some(2_000),
                &mut |_| {},
            );
        }
    }
}

#[test]
fn a_slide_that_puts_an_event_into_millions_of_windows_is_rejected() {
    let path = Path::new("huge-slide.toml");
    let text = "[source]\ntype = \"synthetic\"\nkey_space = 10\n[source.keys]\ndistribution = \"uniform\"\n\
                [source.gaps]\ndistribution = \"constant\"\nvalue = 1\n[operator]\ntype = \"sliding\"\nsize = 100000000\nslide = 1\n";
    let e = Config::parse(text, path).unwrap_err().to_string();
    assert!(e.contains("huge-slide.toml:12"), "{e}");
    assert!(e.contains("100000000 windows"), "{e}");
}

#[test]
fn flink_state_names_no_trace_reader_takes_are_refused_at_their_line() {
    let aggregation = "[source]\ntype = \"synthetic\"\nkey_space = 10\n[source.keys]\n\
                       distribution = \"uniform\"\n[source.gaps]\ndistribution = \"constant\"\n\
                       value = 1\n[operator]\ntype = \"aggregation\"\n";
    let ysb = include_str!("../../../examples/external/ysb-1.toml");
    let long = format!("\"{}\"", "s".repeat(gadget::trace::MAX_STATE_NAME_LEN + 1));
    for (text, key) in [
        (aggregation, "state_name"),
        (ysb, "table_state"),
        (ysb, "sink_state"),
    ] {
        let text: String = text
            .lines()
            .filter(|l| !l.starts_with(key))
            .map(|l| format!("{l}\n"))
            .collect();
        let line = text.lines().count() + 1;
        for (value, said) in [
            ("\"a\\tb\"", "contains a tab or line break"),
            ("\"a\\r\\nb\"", "contains a tab or line break"),
            ("\"\"", "an empty name"),
            (long.as_str(), "longer than the 1024 allowed"),
        ] {
            let path = Path::new("names.toml");
            let e = Config::parse(&format!("{text}{key} = {value}\n"), path)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("names.toml:{line}: `operator.{key}`"))
                    && e.contains(said)
                    && e.contains("non-empty, without tabs or line breaks"),
                "{key} = {value}: {e}"
            );
        }
        let ok = format!("{text}{key} = \"{}\"\n", "s".repeat(1024));
        Config::parse(&ok, Path::new("names.toml")).unwrap();
    }
}

#[test]
fn kafka_streams_names_at_their_longest_give_traces_every_reader_reads() {
    let dir = tempfile::tempdir().unwrap();
    let csv = common::events_csv(dir.path());
    let longest = "n".repeat(249);
    for (operator, extra) in [
        ("count", ""),
        ("aggregate", ""),
        ("tumbling-count", "size = 5000\n"),
        ("hopping-count", "size = 10000\nadvance = 5000\n"),
        ("session-count", "gap = 30000\n"),
        ("stream-join", "window = 60000\nright_topic = \"RIGHT\"\n"),
    ] {
        let text = format!(
            "engine = \"kafka-streams\"\n[source]\ntype = \"file\"\npath = {csv:?}\n\
             key_column = 0\ntime_column = 1\ntime_unit = \"us\"\ntype_column = 2\n\
             left_types = [\"SUBMIT\"]\nright_types = [\"FINISH\"]\n[operator]\n\
             type = \"{operator}\"\n{extra}application_id = \"{longest}\"\n\
             store = \"{longest}\"\ntopic = \"{longest}\"\n"
        )
        .replace("RIGHT", &longest);
        let text = if operator == "stream-join" {
            text
        } else {
            text.replace(
                "type_column = 2\nleft_types = [\"SUBMIT\"]\nright_types = [\"FINISH\"]\n",
                "",
            )
        };
        let config = Config::parse(&text, &dir.path().join("long.toml"))
            .unwrap_or_else(|e| panic!("{operator}: {e}"));
        let read = common::generate_and_read_back(&config, 5_000)
            .unwrap_or_else(|e| panic!("{operator}: {e}"));
        assert!(read.requests > 0, "{operator}");
        assert!(
            read.names.iter().any(|n| n.contains(&longest)),
            "{operator}: {:?}",
            read.names
        );
    }
}

#[test]
fn an_out_of_order_fraction_of_one_is_rejected() {
    let path = Path::new("all-late.toml");
    let text = "[source]\ntype = \"synthetic\"\nkey_space = 10\n[source.keys]\ndistribution = \"uniform\"\n\
                [source.gaps]\ndistribution = \"constant\"\nvalue = 1\n[source.out_of_order]\nfraction = 1.0\nmax_delay = 10\n[operator]\ntype = \"aggregation\"\n";
    let e = Config::parse(text, path).unwrap_err().to_string();
    assert!(e.contains("all-late.toml:10"), "{e}");
    assert!(e.contains("[0, 1)"), "{e}");
}

/// One mutation of a config's text.
#[derive(Debug, Clone)]
enum Mutation {
    DropLine(usize),
    ReplaceValue(usize, usize),
    Truncate(usize),
    InsertLine(usize, String),
}

fn apply(text: &str, m: &Mutation) -> String {
    let lines: Vec<&str> = text.lines().collect();
    match m {
        Mutation::DropLine(_) if lines.is_empty() => String::new(),
        Mutation::DropLine(i) => {
            let i = i % lines.len();
            lines
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, l)| *l)
                .collect::<Vec<_>>()
                .join("\n")
        }
        Mutation::ReplaceValue(i, v) => {
            let value_lines: Vec<usize> = (0..lines.len())
                .filter(|&j| lines[j].contains('=') && !lines[j].trim_start().starts_with('#'))
                .collect();
            if value_lines.is_empty() {
                return text.to_string();
            }
            let target = value_lines[i % value_lines.len()];
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            let key = lines[target].split('=').next().unwrap();
            out[target] = format!("{key}= {}", ODD_VALUES[v % ODD_VALUES.len()]);
            out.join("\n")
        }
        Mutation::Truncate(at) => {
            let mut at = at % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            text[..at].to_string()
        }
        Mutation::InsertLine(i, line) => {
            let mut out: Vec<&str> = lines.clone();
            out.insert(i % (lines.len() + 1), line);
            out.join("\n")
        }
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::DropLine),
        (any::<usize>(), any::<usize>()).prop_map(|(i, v)| Mutation::ReplaceValue(i, v)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), "[a-z_\\[\\]=\". 0-9]{0,30}")
            .prop_map(|(i, l)| Mutation::InsertLine(i, l)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_bundled_configs_never_panic(
        which in any::<usize>(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let all = examples();
        let (path, text) = &all[which % all.len()];
        let mut text = text.clone();
        for m in &mutations {
            text = apply(&text, m);
        }
        load_and_generate(&text, path);
    }

    #[test]
    fn any_number_in_any_value_never_panics(
        which in any::<usize>(),
        line in any::<usize>(),
        number in prop_oneof![
            any::<i64>().prop_map(|n| n.to_string()),
            (-5i64..100_000).prop_map(|n| n.to_string()),
            (-1.0f64..2.0).prop_map(|x| format!("{x:?}")),
            any::<f64>().prop_filter("TOML floats are finite here", |x| x.is_finite()).prop_map(|x| format!("{x:?}")),
        ],
    ) {
        let all = examples();
        let (path, text) = &all[which % all.len()];
        let lines: Vec<&str> = text.lines().collect();
        let numeric: Vec<usize> = (0..lines.len())
            .filter(|&j| {
                let l = lines[j];
                !l.trim_start().starts_with('#')
                    && l.split_once('=').is_some_and(|(_, v)| {
                        v.split('#').next().unwrap().trim().parse::<f64>().is_ok()
                    })
            })
            .collect();
        prop_assume!(!numeric.is_empty());
        let target = numeric[line % numeric.len()];
        let key = lines[target].split('=').next().unwrap();
        let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        out[target] = format!("{key}= {number}");
        load_and_generate(&out.join("\n"), path);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "(?s).{0,400}") {
        let path = common::project_root().join("examples/paper/arbitrary.toml");
        load_and_generate(&text, &path);
    }

    #[test]
    fn arbitrary_original_gadget_lines_never_panic(
        lines in proptest::collection::vec(
            (
                prop_oneof![
                    Just("operator.type".to_string()),
                    Just("window.length".to_string()),
                    Just("sliding.length".to_string()),
                    Just("expected.num.operations".to_string()),
                    Just("first.event.generator.type".to_string()),
                    Just("first.event.generator.watermark.frequency".to_string()),
                    Just("first.event.generator.key.popularity.distrib.type".to_string()),
                    Just("first.event.generator.key.popularity.distrib.params.keyspacesize".to_string()),
                    Just("first.event.generator.event.occurrence.gap.distrib.type".to_string()),
                    Just("first.event.generator.event.occurrence.gap.distrib.params.lambda".to_string()),
                    Just("first.event.generator.outoforder.percentage".to_string()),
                    Just("first.event.generator.lateness.threshold".to_string()),
                    Just("allowed.lateness".to_string()),
                    Just("lateness.length".to_string()),
                    "[a-z.]{1,20}",
                ],
                prop_oneof![
                    Just("tumbling.keyed.incremental".to_string()),
                    Just("session.holistic".to_string()),
                    Just("join.interval".to_string()),
                    Just("gadget".to_string()),
                    Just("zipf".to_string()),
                    Just("exponential".to_string()),
                    Just("true".to_string()),
                    "-?[0-9]{1,20}(\\.[0-9]{1,3})?",
                    "[ -~]{0,12}",
                ],
            ),
            1..16,
        ),
    ) {
        let text: String = lines.iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
        let path = common::project_root().join("examples/paper/original.conf");
        load_and_generate(&text, &path);
    }
}

#[test]
fn missing_sections_are_reported_without_a_line_and_conflicting_ones_at_theirs() {
    let path = Path::new("job.toml");
    let err = Config::parse("seed = 1\n", path).unwrap_err().to_string();
    assert!(err.starts_with("job.toml: `operator`: missing"), "{err}");
    let text = "[operator]\ntype = \"session\"\nfunction = \"holistic\"\ngap = 10000\n";
    let err = Config::parse(text, path).unwrap_err().to_string();
    assert!(err.starts_with("job.toml: `source`: missing"), "{err}");
    let text = format!("{text}\n[source]\ntype = \"synthetic\"\n\n[left]\ntype = \"synthetic\"\n");
    let err = Config::parse(&text, path).unwrap_err().to_string();
    assert!(err.starts_with("job.toml:9: `left`:"), "{err}");
}

#[test]
fn a_config_that_is_not_utf8_is_refused_at_its_first_bad_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.toml");
    std::fs::write(&path, b"seed = 1\n# caf\xe9\n").unwrap();
    let err = Config::load(&path).unwrap_err().to_string();
    assert!(err.contains("job.toml:2: byte 14 is not UTF-8"), "{err}");
}

#[test]
fn values_longer_than_a_trace_holds_are_refused_at_their_line() {
    // 64 MiB is the longest value a trace holds (and a replay hands a store)
    let window = "[source]\ntype = \"synthetic\"\nkey_space = 10\n[source.keys]\ndistribution = \"uniform\"\n\
                  [source.gaps]\ndistribution = \"constant\"\nvalue = 1\n[operator]\ntype = \"tumbling\"\n\
                  size = 1000\nfunction = \"holistic\"\nelement_size = 67108865\n";
    let e = Config::parse(window, Path::new("w.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("w.toml:13") && e.contains("element_size"), "{e}");
    assert!(Config::parse(&window.replace("67108865", "67108864"), Path::new("w.toml")).is_ok());
    let ycsb = "seed = 1\n[ycsb]\nrecordcount = 10\noperationcount = 10\nfieldcount = 2\n\
                fieldlength = 33554433\n";
    let e = Config::parse(ycsb, Path::new("y.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("y.toml:6") && e.contains("67108866 bytes is above the 67108864"),
        "{e}"
    );
}

/// Every operator each engine lists is parsed and built from a bundled example: a name added
/// to a list without its parser fails here.
#[test]
fn every_operator_each_engine_lists_loads_from_a_bundled_example() {
    use gadget::engine::Engine;
    let examples: Vec<(PathBuf, String, String)> = examples()
        .into_iter()
        .filter_map(|(path, text)| {
            let doc: toml_edit::DocumentMut = text.parse().ok()?;
            let engine = doc
                .get("engine")
                .and_then(|e| e.as_str())
                .unwrap_or("flink")
                .to_string();
            let kind = doc.get("operator")?.get("type")?.as_str()?.to_string();
            Some((path, engine, kind))
        })
        .collect();
    for engine in Engine::NAMES {
        let e = Engine::from_name(engine).unwrap();
        for operator in e.operators() {
            let (path, ..) = examples
                .iter()
                .find(|(_, en, kind)| en == engine && kind == operator)
                .unwrap_or_else(|| panic!("no bundled example of {engine}'s `{operator}`"));
            let config = Config::load(path).unwrap_or_else(|err| panic!("{err}"));
            let _ = config.build_operator();
        }
    }
}
