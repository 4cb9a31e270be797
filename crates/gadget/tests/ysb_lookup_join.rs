//! The YSB lookup-join examples (`examples/external/ysb-*.toml`): the table preload comes first
//! and is the run's warm-up, every view is one table lookup plus Flink's window requests, every
//! window firing is one sink write, three instances split the campaigns and each loads the
//! whole table, and bad configs name their line, key and allowed values.

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use gadget::access::{Access, AccessCounts, AccessSink, Op};
use gadget::config::run::Warmup;
use gadget::config::Config;

fn example(name: &str) -> PathBuf {
    common::project_root().join("examples/external").join(name)
}

/// What the tests look at in a trace: counts, the order of the preload, the sink's campaigns
/// and a hash of every record (for byte-identical regeneration).
#[derive(Default)]
struct Observed {
    counts: AccessCounts,
    /// Requests seen before the first event marker.
    before_first_event: u64,
    /// Requests before the first event that were neither table puts nor the window's timer
    /// service starting up.
    preload_strays: u64,
    seen_event: bool,
    /// Campaign ids (the sink key before `:`).
    sink_campaigns: HashSet<Vec<u8>>,
    hash: u64,
    table: u16,
    sink: u16,
}

impl Observed {
    fn mix(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.hash = (self.hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

impl AccessSink for Observed {
    fn access(&mut self, a: Access<'_>) {
        self.counts.access(a);
        self.mix(&[a.op as u8, a.state as u8]);
        self.mix(a.key);
        self.mix(&a.value_len.to_le_bytes());
        if !self.seen_event {
            self.before_first_event += 1;
            let table_put = a.op == Op::Put && a.state == self.table;
            let timer_start_up = matches!(a.op, Op::BatchCommit | Op::Seek) && a.state < self.table;
            if !table_put && !timer_start_up {
                self.preload_strays += 1;
            }
        }
        if a.state == self.sink {
            let campaign = a.key.split(|b| *b == b':').next().unwrap();
            self.sink_campaigns.insert(campaign.to_vec());
        }
    }
    fn event(&mut self, input: u8) {
        self.seen_event = true;
        self.counts.event(input);
        self.mix(&[0xee, input]);
    }
    fn watermark(&mut self, timestamp: i64) {
        self.counts.watermark(timestamp);
        self.mix(&timestamp.to_le_bytes());
    }
}

fn generate(config: &Config, limit: Option<u64>) -> (Observed, gadget::generate::Generated) {
    let mut op = config.build_operator();
    let states = op.states();
    let index = |name: &str| states.iter().position(|s| s == name).unwrap() as u16;
    let mut seen = Observed {
        table: index("ad-campaigns"),
        sink: index("campaign-windows"),
        ..Observed::default()
    };
    let generated = gadget::generate::generate(
        config.open_source().unwrap(),
        op.as_mut(),
        &mut seen,
        limit,
        &mut |_| {},
    )
    .unwrap();
    (seen, generated)
}

/// Requests of `op` on `state` (by name) in `counts`.
fn count(config: &Config, counts: &AccessCounts, state: &str, op: Op) -> u64 {
    let states = config.build_operator().states();
    let s = states.iter().position(|n| n == state).unwrap();
    counts.by_state.get(s).map_or(0, |ops| ops[op as usize])
}

/// What the window's RocksDB timer service issues at start-up, before the table preload: a
/// commit and a seek per key group (128) in each of its two queues.
const TIMER_START_UP: u64 = 512;

/// The requests before the first event: the timers' start-up and the 1,000 ads of the table.
const PRELOAD: u64 = TIMER_START_UP + 1_000;

#[test]
fn ysb_single_instance_loads_the_table_then_looks_up_every_view() {
    let config = Config::load(&example("ysb-1.toml")).unwrap();
    assert_eq!(
        config.build_operator().states(),
        [
            "window-contents",
            "_timer_state/event_window-timers",
            "default",
            "_timer_state/processing_window-timers",
            "ad-campaigns",
            "campaign-windows"
        ]
    );
    assert_eq!(config.preload_requests(), PRELOAD);
    assert_eq!(config.run.warmup, Some(Warmup::Requests(PRELOAD)));
    assert_eq!(config.instance(), (0, 1));

    let (seen, generated) = generate(&config, None);
    let c = &seen.counts;
    assert!(!generated.truncated);
    assert_eq!(generated.preload_requests, PRELOAD);
    assert_eq!((seen.before_first_event, seen.preload_strays), (PRELOAD, 0));
    // 600,000 ad events, a third of them views
    let views = c.events;
    assert!((195_000..=205_000).contains(&views), "{views}");
    assert_eq!(count(&config, c, "ad-campaigns", Op::Put), 1_000);
    assert_eq!(count(&config, c, "ad-campaigns", Op::Get), views);
    assert_eq!(count(&config, c, "window-contents", Op::Put), views);
    // 60 s of event time: six 10 s windows for each of the 100 campaigns, each fired once
    let firings = count(&config, c, "window-contents", Op::Delete);
    assert_eq!(firings, 600);
    assert_eq!(count(&config, c, "campaign-windows", Op::Put), firings);
    assert_eq!(
        count(&config, c, "window-contents", Op::Get),
        views + firings
    );
    assert_eq!(seen.sink_campaigns.len(), 100);
    assert!(seen.sink_campaigns.iter().all(|id| id.len() == 36));
    assert_eq!(
        c.watermarks, 300,
        "every 200 ms of event time, then the final one"
    );
}

#[test]
fn ysb_generation_is_byte_identical_for_a_seed_and_differs_across_seeds() {
    let mut config = Config::load(&example("ysb-1.toml")).unwrap();
    let limit = Some(50_000);
    let first = generate(&config, limit).0.hash;
    assert_eq!(generate(&config, limit).0.hash, first);
    config.seed = 2;
    config.json["seed"] = 2.into();
    assert_ne!(generate(&config, limit).0.hash, first);
}

#[test]
fn ysb_three_instances_split_the_campaigns_and_each_loads_the_whole_table() {
    let whole = Config::load(&example("ysb-1.toml")).unwrap();
    let (all, _) = generate(&whole, None);
    let config = Config::load(&example("ysb-3.toml")).unwrap();
    assert_eq!(config.run.instances, Some(3));
    assert_eq!(config.run.warmup, Some(Warmup::Requests(PRELOAD)));
    let mut campaigns = HashSet::new();
    let (mut views, mut firings) = (0, 0);
    for i in 0..3u64 {
        // as `gadget run` makes its instances
        let mut instance = config.clone();
        instance.seed = config.seed + i;
        assert_eq!(instance.instance(), (i as u32, 3));
        let (seen, generated) = generate(&instance, None);
        assert_eq!(generated.preload_requests, PRELOAD, "instance {i}");
        assert_eq!(seen.preload_strays, 0);
        let c = &seen.counts;
        assert_eq!(count(&instance, c, "ad-campaigns", Op::Put), 1_000);
        assert_eq!(count(&instance, c, "ad-campaigns", Op::Get), c.events);
        assert!(
            c.events > all.counts.events / 5,
            "instance {i}: {}",
            c.events
        );
        assert_eq!(
            c.watermarks, all.counts.watermarks,
            "every instance sees every watermark"
        );
        assert!(
            seen.sink_campaigns.is_disjoint(&campaigns),
            "a campaign belongs to one instance"
        );
        campaigns.extend(seen.sink_campaigns);
        views += c.events;
        firings += count(&instance, c, "campaign-windows", Op::Put);
    }
    // together, the instances process the single instance's events and windows
    assert_eq!(campaigns, all.sink_campaigns);
    assert_eq!(views, all.counts.events);
    assert_eq!(
        firings,
        count(&whole, &all.counts, "campaign-windows", Op::Put)
    );
}

#[test]
fn a_limit_inside_the_preload_stops_before_the_first_event() {
    let config = Config::load(&example("ysb-1.toml")).unwrap();
    let (seen, generated) = generate(&config, Some(400));
    assert!(generated.truncated);
    assert_eq!(generated.preload_requests, 400);
    assert_eq!((seen.counts.requests(), seen.counts.events), (400, 0));
}

fn parse_error(text: &str) -> String {
    Config::parse(text, Path::new("ysb.toml"))
        .unwrap_err()
        .to_string()
}

const SOURCE: &str = "[source]\ntype = \"ysb\"\nevents = 100\n";
const OPERATOR: &str = "[operator]\ntype = \"lookup-join\"\n";

#[test]
fn ysb_config_errors_name_the_line_the_key_and_what_is_allowed() {
    let e = parse_error(&format!("{SOURCE}campaign = 3\n{OPERATOR}"));
    assert!(
        e.starts_with("ysb.toml:4: `source.campaign`: unknown key"),
        "{e}"
    );
    assert!(
        e.contains("ads_per_campaign") && e.contains("events_per_second"),
        "{e}"
    );

    let e = parse_error(&format!(
        "{SOURCE}{OPERATOR}event_types = [\"view\", \"impression\"]\n"
    ));
    assert!(e.starts_with("ysb.toml:6: `operator.event_types`"), "{e}");
    assert!(e.contains("view, click, purchase"), "{e}");

    let e = parse_error(&format!("{SOURCE}{OPERATOR}windw = 5\n"));
    assert!(e.contains("`operator.windw`: unknown key"), "{e}");
    assert!(
        e.contains("size") && e.contains("table_state") && e.contains("value_bytes"),
        "{e}"
    );

    let e = parse_error(&format!(
        "{SOURCE}{OPERATOR}sink_state = \"window-contents\"\n"
    ));
    assert!(e.starts_with("ysb.toml:6: `operator.sink_state`"), "{e}");

    let e = parse_error(&format!(
        "{SOURCE}[operator]\ntype = \"tumbling\"\nsize = 10\n"
    ));
    assert!(e.starts_with("ysb.toml:2: `source.type`"), "{e}");
    assert!(e.contains("lookup-join"), "{e}");

    let synthetic = "[source]\ntype = \"synthetic\"\nkey_space = 10\n[source.keys]\ndistribution = \"uniform\"\n[source.gaps]\ndistribution = \"constant\"\nvalue = 1\n";
    let e = parse_error(&format!("{synthetic}{OPERATOR}"));
    assert!(e.starts_with("ysb.toml:2: `source.type`"), "{e}");
    assert!(e.contains("type = \"ysb\""), "{e}");

    let e = parse_error(&format!(
        "max_parallelism = 2\n{SOURCE}{OPERATOR}[run]\ninstances = 3\n"
    ));
    assert!(e.starts_with("ysb.toml:8: `run.instances`"), "{e}");

    let e = parse_error(&format!(
        "{SOURCE}campaigns = 1000000\nads_per_campaign = 1000\n{OPERATOR}"
    ));
    assert!(
        e.starts_with("ysb.toml:5: `source.ads_per_campaign`"),
        "{e}"
    );

    let e = parse_error(&format!(
        "{SOURCE}[source.ads]\ndistribution = \"zipf\"\ns = 0\n{OPERATOR}"
    ));
    assert!(e.starts_with("ysb.toml:6: `source.ads.s`"), "{e}");
}

#[test]
fn ysb_defaults_are_ysbs_and_an_explicit_warmup_is_kept() {
    let config = Config::parse(
        &format!("{SOURCE}{OPERATOR}[run]\nwarmup = \"2s\"\n"),
        Path::new("ysb.toml"),
    )
    .unwrap();
    assert_eq!(config.run.warmup, Some(Warmup::Nanoseconds(2_000_000_000)));
    // the timers' start-up, then 100 campaigns × 10 ads
    assert_eq!(config.preload_requests(), PRELOAD);
    let (seen, generated) = generate(&config, None);
    assert_eq!(generated.preload_requests, PRELOAD);
    // 100 events at 1,000 per second fall into one 10 s window: one sink write per campaign seen
    let c = &seen.counts;
    assert!(
        (15..=50).contains(&c.events),
        "about a third are views: {}",
        c.events
    );
    assert_eq!(
        count(&config, c, "campaign-windows", Op::Put),
        seen.sink_campaigns.len() as u64
    );
}
