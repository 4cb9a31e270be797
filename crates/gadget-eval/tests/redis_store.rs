//! Redis as an external store, against a real redis-server on loopback.

mod support;

use gadget::access::Op;
use gadget_eval::store::redis::RedisStore;
use gadget_eval::store::{Store, StoreSettings};

fn settings(url: &str, pipeline: usize) -> StoreSettings {
    StoreSettings {
        redis_url: url.to_string(),
        redis_pipeline: pipeline,
        ..StoreSettings::default()
    }
}

fn key_count(url: &str) -> u64 {
    let out = std::process::Command::new("redis-cli")
        .args(["-u", url, "dbsize"])
        .output()
        .expect("redis-cli runs (it comes with redis-server)");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[test]
fn redis_merges_with_flinks_delimiter_iterates_in_order_and_cleans_up() {
    let Some(server) = support::RedisServer::start("redis store") else {
        return;
    };
    for pipeline in [1, 16] {
        let states = vec!["window-contents".to_string(), "timers".to_string()];
        let mut s = RedisStore::open(&states, &settings(&server.url, pipeline)).unwrap();
        assert_eq!(
            s.emulated(),
            &[
                Op::Seek,
                Op::Next,
                Op::RangeDelete,
                Op::RangeQuery,
                Op::Drop,
                Op::Checkpoint
            ]
        );
        s.merge(0, b"k", b"abc").unwrap();
        s.merge(0, b"k", b"de").unwrap();
        assert_eq!(s.get(0, b"k").unwrap(), Some(6));
        assert_eq!(s.get(1, b"k").unwrap(), None);
        s.put(0, b"k", b"").unwrap();
        assert_eq!(s.get(0, b"k").unwrap(), Some(0));
        s.delete(0, b"k").unwrap();
        assert_eq!(s.get(0, b"k").unwrap(), None);

        s.batch_put(1, b"b", b"22").unwrap();
        s.batch_put(1, b"a", b"1").unwrap();
        s.batch_put(1, &[0xff, 0], b"4444").unwrap();
        assert_eq!(
            s.seek(1, b"").unwrap(),
            None,
            "a batch applies at commit only"
        );
        s.batch_commit().unwrap();
        assert_eq!(s.seek(1, b"b").unwrap(), Some(2));
        assert_eq!(s.next(1).unwrap(), Some(4), "binary keys sort bytewise");
        assert_eq!(s.next(1).unwrap(), None);
        assert_eq!(s.next(1).unwrap(), None);
        s.batch_delete(1, b"a").unwrap();
        s.batch_commit().unwrap();
        assert_eq!(s.seek(1, b"").unwrap(), Some(2));

        for k in [&b"a"[..], b"b", b"bb", b"c"] {
            s.put(0, k, k).unwrap();
        }
        assert_eq!(s.range_query(0, b"b", b"c").unwrap(), 2);
        assert_eq!(s.range_query(0, b"c", b"b").unwrap(), 0);
        assert_eq!(s.range_query(1, b"", &[0xff, 1]).unwrap(), 2);
        s.range_delete(0, b"a", b"bb").unwrap();
        assert_eq!(s.get(0, b"a").unwrap(), None);
        assert_eq!(s.get(0, b"b").unwrap(), None);
        assert_eq!(s.get(0, b"bb").unwrap(), Some(2));
        assert_eq!(s.range_query(0, b"", b"z").unwrap(), 2);
        assert_eq!(
            s.get(1, b"b").unwrap(),
            Some(2),
            "other states are untouched"
        );
        assert!(key_count(&server.url) > 0);
        drop(s);
        assert_eq!(key_count(&server.url), 0, "the run's keys are removed");
    }
}

#[test]
fn an_unreachable_redis_says_how_to_start_one() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let url = format!("redis://127.0.0.1:{port}");
    let e = RedisStore::open(&["s".to_string()], &settings(&url, 1))
        .unwrap_err()
        .to_string();
    assert!(e.contains(&url), "{e}");
    assert!(e.contains("redis-server"), "{e}");
}

#[test]
fn a_write_batch_to_a_frozen_server_fails_after_one_timeout_not_one_per_command() {
    let Some(server) = support::RedisServer::start("redis frozen during a batch") else {
        return;
    };
    let states = vec!["window-contents".to_string()];
    let mut s = RedisStore::open(
        &states,
        &StoreSettings {
            redis_timeout: std::time::Duration::from_millis(200),
            ..settings(&server.url, 1)
        },
    )
    .unwrap();
    for i in 0u32..2_000 {
        s.batch_put(0, &i.to_be_bytes(), b"value").unwrap();
    }
    server.freeze();
    // the commit runs on a thread of its own, so that a hang fails the test instead of
    // hanging it: 4,000 commands at 200 ms each would take 13 minutes
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(s.batch_commit().map_err(|e| e.to_string()));
    });
    let outcome = result.recv_timeout(std::time::Duration::from_secs(30));
    server.thaw();
    let err = outcome
        .expect("the commit ends within 30 s")
        .expect_err("a frozen server fails the commit");
    assert!(err.contains("no answer from"), "{err}");
}

#[test]
fn a_stop_request_ends_a_wait_on_a_frozen_server_long_before_its_timeout() {
    let Some(server) = support::RedisServer::start("redis frozen, then Ctrl-C") else {
        return;
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut s = RedisStore::open(
        &["s".to_string()],
        &StoreSettings {
            redis_timeout: std::time::Duration::from_secs(3600),
            stop: stop.clone(),
            ..settings(&server.url, 1)
        },
    )
    .unwrap();
    s.put(0, b"k", b"v").unwrap();
    server.freeze();
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let got = s.get(0, b"k").map_err(|e| e.to_string());
        // the store is dropped here, after the stop: its cleanup waits briefly, not an hour
        drop(s);
        let _ = done.send(got);
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    // bounded far below the hour-long timeout: only the stop flag can end the wait
    let outcome = result.recv_timeout(std::time::Duration::from_secs(30));
    server.thaw();
    let err = outcome
        .expect("the request ends on the stop request, not after its timeout")
        .expect_err("an interrupted request has no answer");
    assert!(err.contains("stopped"), "{err}");
}

#[test]
fn a_password_and_database_in_the_url_are_used_and_never_shown() {
    let Some(server) =
        support::RedisServer::start_with("redis with a password", &["--requirepass", "s3cret"])
    else {
        return;
    };
    let with_password = server.url.replacen("redis://", "redis://:s3cret@", 1) + "/2";
    let mut s = RedisStore::open(&["s".to_string()], &settings(&with_password, 1)).unwrap();
    s.put(0, b"k", b"value").unwrap();
    assert_eq!(s.get(0, b"k").unwrap(), Some(5));
    drop(s);
    let wrong = server.url.replacen("redis://", "redis://:wrong@", 1);
    let e = RedisStore::open(&["s".to_string()], &settings(&wrong, 1))
        .unwrap_err()
        .to_string();
    assert!(!e.contains("wrong"), "the password is not shown: {e}");
    assert!(e.contains("redis://:***@"), "{e}");
}

#[test]
fn results_name_the_redis_server_and_its_version_as_it_answers() {
    let Some(server) = support::RedisServer::start("redis store") else {
        return;
    };
    let version = std::process::Command::new("redis-server")
        .arg("--version")
        .output()
        .expect("redis-server runs");
    // `Redis server v=7.0.15 sha=…`
    let version = String::from_utf8_lossy(&version.stdout)
        .split_whitespace()
        .find_map(|w| w.strip_prefix("v=").map(str::to_string))
        .expect("redis-server --version says v=");
    let named = gadget_eval::store::StoreKind::Redis.libraries(&settings(&server.url, 1));
    assert_eq!(
        named,
        [format!(
            "Redis {version} (standalone mode) at {}",
            server.url
        )]
    );
}
