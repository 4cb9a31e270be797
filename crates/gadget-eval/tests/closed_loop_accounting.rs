//! A closed loop records its requests in chunks after they ran; what it reports must still be
//! exact, request by request: the warm-up leaves out exactly its requests (wherever it ends in
//! a chunk), and the reads counted are those of the measured requests alone.

// the harness-overhead benches' workload (this test uses part of the module)
#[allow(dead_code)]
#[path = "../benches/common/mod.rs"]
mod common;

use gadget::access::Op;
use gadget_eval::run::Warmup;
use gadget_eval::store::issue;
use gadget_eval::store::memory::MemoryStore;
use gadget_eval::value::{ValueBytes, DEFAULT_COMPRESSION_RATIO};
use gadget_eval::workload::RequestBlock;

use common::{Workload, SECOND};

/// Requests of the workload: several chunks and blocks, not a multiple of either.
const REQUESTS: u64 = 20_003;

/// Reads found, reads that found nothing and bytes read by the requests after the first
/// `skip`, issued one by one to a fresh memory store.
fn expected_reads(blocks: &[RequestBlock], states: usize, skip: usize) -> (u64, u64, u64) {
    let mut store = MemoryStore::new(states);
    let mut value = ValueBytes::new(1, DEFAULT_COMPRESSION_RATIO);
    let (mut found, mut empty, mut bytes) = (0, 0, 0);
    let requests = blocks
        .iter()
        .flat_map(|block| block.requests.iter().map(move |r| (block, r)));
    for (i, (block, r)) in requests.enumerate() {
        let read = issue(&mut store, block, r, &mut value).expect("the memory store answers");
        if i < skip {
            continue;
        }
        match read {
            Some(Some(n)) => {
                found += 1;
                bytes += n as u64;
            }
            Some(None) => empty += 1,
            None => {}
        }
    }
    (found, empty, bytes)
}

#[test]
fn a_closed_loop_leaves_out_exactly_the_warm_up_and_counts_only_measured_reads() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let workload = Workload::generate_requests(&dir.path().join("w.gtrace"), REQUESTS);
    let states = workload.states;
    assert_eq!(workload.requests(), REQUESTS);
    let ops = || {
        workload
            .blocks
            .iter()
            .flat_map(|b| b.requests.iter().map(|r| r.op))
    };
    let gets_after_warmup = ops().skip(1_000).filter(|&op| op == Op::Get).count();
    assert!(
        gets_after_warmup > 1_000,
        "the workload reads after the warm-up"
    );
    // 1,000 and 5,000 end inside a chunk; 0 measures everything
    for warmup in [0u64, 1_000, 5_000] {
        let warmup_option = if warmup == 0 {
            Warmup::None
        } else {
            Warmup::Requests(warmup)
        };
        let (measured, options) = workload.drive_closed_loop(warmup_option, SECOND, None);
        let report = measured.report("memory", &[], &options);
        assert_eq!(report.warmup_requests, warmup);
        assert_eq!(report.requests, REQUESTS - warmup);
        let all = report.latency.last().expect("an `all` row");
        assert_eq!(
            all.ops,
            REQUESTS - warmup,
            "every measured request is in the histograms"
        );
        let (found, empty, bytes) = expected_reads(&workload.blocks, states, warmup as usize);
        assert_eq!(
            (report.reads_found, report.reads_empty, report.bytes_read),
            (found, empty, bytes),
            "reads after a warm-up of {warmup}"
        );
    }
}
