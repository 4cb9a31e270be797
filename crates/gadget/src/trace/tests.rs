use std::io::{Cursor, Write};
use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::access::{AccessCounts, ReadLen, VecSink};

fn header(states: &[&str]) -> TraceHeader {
    TraceHeader::new(
        "test-operator",
        states.iter().map(|s| s.to_string()).collect(),
        Some(42),
        serde_json::json!({"operator": {"kind": "tumbling"}, "limit": null}),
    )
}

/// A request record, owned.
pub(super) fn access(op: Op, state: StateId, key: &[u8], value_len: u32) -> TraceRecord {
    TraceRecord::Access {
        op,
        state,
        key: key.to_vec(),
        value_len,
    }
}

fn sample_records() -> Vec<TraceRecord> {
    vec![
        access(Op::Get, 0, b"\x00\x01key-a", 0),
        TraceRecord::Event { input: 0 },
        access(Op::Put, 0, b"\x00\x01key-a", 8),
        access(Op::Get, 0, b"\x00\x01key-b", 0),
        access(Op::Merge, 1, b"\x00\x01key-b", 17),
        access(Op::Delete, 1, b"", 0),
        TraceRecord::Watermark { timestamp: -5 },
        access(Op::Seek, 2, b"\x7f\xff", 0),
        access(Op::Next, 2, b"", 0),
        access(Op::BatchPut, 2, b"\x7f\xff\x00", MAX_VALUE_LEN),
        access(Op::BatchDelete, 2, b"\x7f", 0),
        access(Op::BatchCommit, 0, b"", 2),
        access(Op::RangeDelete, 1, b"\x00\x01\x00\x05", 2),
        access(Op::RangeQuery, 0, b"\x00\x01", 0),
        TraceRecord::Event { input: 2 },
        TraceRecord::Watermark {
            timestamp: i64::MAX,
        },
        TraceRecord::Watermark {
            timestamp: i64::MIN,
        },
    ]
}

const STATES: &[&str] = &["window-contents", "window-timers", "default"];

fn write_binary(h: &TraceHeader, records: &[TraceRecord], footer: TraceFooter) -> Vec<u8> {
    let mut w = BinaryTraceWriter::new(Vec::new(), h).unwrap();
    for r in records {
        RecordRef::from(r).feed(&mut w);
    }
    w.finish(footer).unwrap()
}

fn write_text(h: &TraceHeader, records: &[TraceRecord], footer: TraceFooter) -> Vec<u8> {
    let mut w = TextTraceWriter::new(Vec::new(), h).unwrap();
    for r in records {
        RecordRef::from(r).feed(&mut w);
    }
    w.finish(footer).unwrap()
}

/// Reads every record of a trace in memory through the unified reader.
fn read_all(bytes: &[u8]) -> Result<(TraceReader, Vec<TraceRecord>), TraceError> {
    let mut r = TraceReader::from_reader(Cursor::new(bytes.to_vec()))?;
    let records = r.records().collect::<Result<Vec<_>, _>>()?;
    Ok((r, records))
}

fn read_binary(bytes: &[u8]) -> Result<Vec<TraceRecord>, TraceError> {
    let mut r = BinaryTraceReader::new(bytes)?;
    r.records().collect()
}

fn read_text(bytes: &[u8]) -> Result<Vec<TraceRecord>, TraceError> {
    let mut r = TextTraceReader::new(bytes)?;
    r.records().collect()
}

#[test]
fn binary_round_trip() {
    let h = header(STATES);
    let records = sample_records();
    let mut footer = TraceFooter::new(true);
    footer.extra.insert("elapsed_ms".into(), 12.into());
    let bytes = write_binary(&h, &records, footer);
    assert_eq!(TraceFormat::detect(&bytes), Some(TraceFormat::Binary));

    let (r, back) = read_all(&bytes).unwrap();
    assert_eq!(back, records);
    assert_eq!(r.format(), TraceFormat::Binary);
    assert_eq!(r.header(), Some(&h));
    let f = r.footer().unwrap();
    assert_eq!(f.events, 2);
    assert_eq!(f.watermarks, 3);
    assert_eq!(f.requests, 12);
    assert!(f.truncated);
    assert_eq!(f.requests_by_op.get("get"), Some(&2));
    assert_eq!(f.extra.get("elapsed_ms"), Some(&serde_json::json!(12)));
}

#[test]
fn text_round_trip() {
    let h = header(STATES);
    let records = sample_records();
    let bytes = write_text(&h, &records, TraceFooter::new(false));
    assert_eq!(TraceFormat::detect(&bytes), Some(TraceFormat::Text));
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.starts_with("#gadget-trace\ttext\t4\n#header\t{"));
    assert!(text.contains("\nget\twindow-contents\t00016b65792d61\t?\n"));
    assert!(text.contains("\n#ev\t\t\t2\n"));
    assert!(text.contains("\n#wm\t\t\t-9223372036854775808\n"));
    assert!(text.contains("\nnext\tdefault\t\t0\n"));
    assert!(text.contains("\nrange_delete\twindow-timers\t0001..0005\t0\n"));
    assert!(text.contains("\nrange_query\twindow-contents\t..0001\t0\n"));
    assert!(text.ends_with("}\n"));

    let (r, back) = read_all(&bytes).unwrap();
    assert_eq!(back, records);
    assert_eq!(r.header(), Some(&h));
    assert!(!r.is_flink_recording());
    assert_eq!(r.footer().unwrap().requests, 12);
}

#[test]
fn binary_round_trip_over_many_blocks() {
    let h = header(STATES);
    let mut records = Vec::new();
    for i in 0..40_000u32 {
        let key = [0u8, 1, (i >> 16) as u8, (i >> 8) as u8, i as u8, 7, 7, 7];
        records.push(access(Op::Get, (i % 3) as u16, &key, 0));
        records.push(access(Op::Put, (i % 3) as u16, &key, i));
        if i % 100 == 0 {
            records.push(TraceRecord::Watermark {
                timestamp: i64::from(i),
            });
        }
    }
    let bytes = write_binary(&h, &records, TraceFooter::new(false));
    // Prefix compression: far less than the 8 key bytes per request.
    assert!(bytes.len() < records.len() * 8, "{} bytes", bytes.len());
    assert_eq!(read_binary(&bytes).unwrap(), records);
}

#[test]
fn replay_into_a_sink() {
    let h = header(STATES);
    let bytes = write_binary(&h, &sample_records(), TraceFooter::default());
    let mut r = BinaryTraceReader::new(&bytes[..]).unwrap();
    let mut sink = VecSink::default();
    assert_eq!(replay(&mut r, &mut sink).unwrap(), 17);
    assert_eq!(sink.records, sample_records());
    // Done stays done.
    assert!(r.next_record().unwrap().is_none());
}

#[test]
fn binary_truncated_at_every_byte_is_an_error() {
    let bytes = write_binary(&header(STATES), &sample_records(), TraceFooter::default());
    for n in 0..bytes.len() {
        let err = read_binary(&bytes[..n]).expect_err(&format!("prefix of {n} bytes"));
        let msg = err.to_string();
        assert!(msg.contains("byte"), "prefix of {n} bytes: {msg}");
        // Through the unified reader too (it sniffs the first bytes).
        assert!(read_all(&bytes[..n]).is_err(), "prefix of {n} bytes");
    }
    let err = read_binary(&bytes[..bytes.len() - 1]).unwrap_err();
    assert!(err.to_string().contains("truncated at byte"), "{err}");
}

#[test]
fn text_truncated_at_every_byte_is_an_error() {
    let bytes = write_text(&header(STATES), &sample_records(), TraceFooter::default());
    for n in 0..bytes.len() {
        let err = read_text(&bytes[..n]).expect_err(&format!("prefix of {n} bytes"));
        let msg = err.to_string();
        assert!(
            msg.contains("line") || msg.contains("byte 0"),
            "prefix of {n}: {msg}"
        );
    }
    let err = read_text(&bytes[..bytes.len() - 1]).unwrap_err();
    assert!(err.to_string().contains("truncated at line"), "{err}");
}

#[test]
fn flipped_bytes_never_panic_and_checksums_catch_them() {
    // with an op of version 5, so that the version byte read as 4 is an error too
    let mut records = sample_records();
    records.push(access(Op::Checkpoint, 2, b"", 0));
    let bytes = write_binary(&header(STATES), &records, TraceFooter::default());
    let mut errors = 0;
    let mut checksum_errors = 0;
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            if let Err(e) = read_binary(&b) {
                errors += 1;
                if e.to_string().contains("checksum mismatch") {
                    checksum_errors += 1;
                }
                assert!(e.to_string().contains("byte"), "{e}");
            }
        }
    }
    // Every flip in this small trace changes a checked byte.
    assert_eq!(errors, bytes.len() * 3);
    assert!(checksum_errors > bytes.len());
}

#[test]
fn flipped_text_bytes_never_panic() {
    let bytes = write_text(&header(STATES), &sample_records(), TraceFooter::default());
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x20, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            let _ = read_text(&b);
        }
    }
}

#[test]
fn corrupted_checksum_message() {
    let mut bytes = write_binary(&header(STATES), &sample_records(), TraceFooter::default());
    // The first data block follows magic, version and the header block.
    let header_len = u32::from_le_bytes(bytes[11..15].try_into().unwrap()) as usize;
    let data_block = 10 + 13 + header_len;
    assert_eq!(bytes[data_block], b'D');
    bytes[data_block + 13] ^= 0x55;
    let err = read_binary(&bytes).unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "corrupted block at byte {data_block}: checksum mismatch"
        )),
        "{err}"
    );
}

#[test]
fn absurd_lengths_are_errors_not_allocations() {
    // A header block claiming 4 GiB.
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&BINARY_MAGIC);
    bytes.extend_from_slice(&BINARY_VERSION.to_le_bytes());
    bytes.push(b'H');
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    bytes.extend_from_slice(&[0; 8]);
    let err = BinaryTraceReader::new(&bytes[..]).unwrap_err();
    assert!(err.to_string().contains("more than"), "{err}");

    // A header block claiming 60 MiB (allowed) but holding 3 bytes: truncated, cheaply.
    let mut bytes = bytes[..10].to_vec();
    bytes.push(b'H');
    bytes.extend_from_slice(&(60u32 << 20).to_le_bytes());
    bytes.extend_from_slice(&[0; 8]);
    bytes.extend_from_slice(b"{}x");
    let err = BinaryTraceReader::new(&bytes[..]).unwrap_err();
    assert!(
        err.to_string().contains("trace truncated at byte 26"),
        "{err}"
    );
}

#[test]
fn flush_and_checkpoint_round_trip_in_both_formats_and_version_4_has_neither() {
    let records = vec![
        access(Op::Put, 0, b"k", 3),
        access(Op::Flush, 0, b"", 0),
        access(Op::Checkpoint, 0, b"", 0),
        access(Op::Checkpoint, 1, b"", 0),
        access(Op::Get, 1, b"k", 0),
    ];
    let bytes = write_binary(&header(STATES), &records, TraceFooter::default());
    assert_eq!(read_binary(&bytes).unwrap(), records);
    let text = write_text(&header(STATES), &records, TraceFooter::default());
    let shown = String::from_utf8_lossy(&text);
    assert!(
        shown.contains("flush\t") && shown.contains("checkpoint\t"),
        "{shown}"
    );
    assert_eq!(read_all(&text).unwrap().1, records);
    // several requests to one key at once take the writer's short path: the same records
    let mut w = BinaryTraceWriter::new(Vec::new(), &header(STATES)).unwrap();
    w.access_all(0, b"k", &[(Op::Put, 3)]);
    w.access_all(0, b"", &[(Op::Flush, 0), (Op::Checkpoint, 0)]);
    w.access_all(1, b"", &[(Op::Checkpoint, 0)]);
    w.access_all(1, b"k", &[(Op::Get, 0)]);
    assert_eq!(
        read_binary(&w.finish(TraceFooter::default()).unwrap()).unwrap(),
        records
    );
    // the same records claimed by a version 4 file: its readers know no op of code 13
    let mut old = bytes.clone();
    old[8] = 4;
    let e = read_binary(&old).unwrap_err().to_string();
    assert!(e.contains("version 4") && e.contains("byte"), "{e}");
}

#[test]
fn unsupported_version_and_foreign_files() {
    let mut bytes = write_binary(&header(STATES), &[], TraceFooter::default());
    bytes[8] = 6;
    let err = BinaryTraceReader::new(&bytes[..]).unwrap_err();
    assert!(
        err.to_string()
            .contains("unsupported trace format version 6"),
        "{err}"
    );

    let err = read_all(b"hello world").unwrap_err();
    assert!(err.to_string().contains("not a Gadget trace"), "{err}");
    let err = read_all(b"").unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
    let err = read_text(b"#gadget-trace\ttext\t9\n").unwrap_err();
    assert!(err.to_string().contains("version 9"), "{err}");
}

#[test]
fn footer_counts_are_checked() {
    let bytes = write_text(&header(STATES), &sample_records(), TraceFooter::default());
    let text = String::from_utf8(bytes).unwrap();
    let tampered = text.replace("\"requests\":12", "\"requests\":13");
    let err = read_text(tampered.as_bytes()).unwrap_err();
    assert!(
        err.to_string()
            .contains("the footer says 13 requests but the trace holds 12"),
        "{err}"
    );
    // A dropped record line.
    let dropped = text.replacen("\ndelete\twindow-timers\t\t0\n", "\n", 1);
    assert_ne!(dropped, text);
    assert!(read_text(dropped.as_bytes()).is_err());
    // Data after the footer.
    let extra = format!("{text}get\tdefault\t00\t0\n");
    let err = read_text(extra.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("after the #footer"), "{err}");
}

#[test]
fn text_reader_errors_name_the_line() {
    let good = String::from_utf8(write_text(&header(STATES), &[], TraceFooter::default())).unwrap();
    let (head, footer) = good.split_at(good.find("#footer").unwrap());
    let cases = [
        ("get\tdefault\t0\t0\n", "odd number of hex digits"),
        ("get\tdefault\tzz\t0\n", "not a hex digit"),
        ("get\tnope\t00\t0\n", "not in the header"),
        ("scan\tdefault\t00\t0\n", "unknown op"),
        ("get\tdefault\t00\n", "expected 4 tab-separated fields"),
        ("put\tdefault\t00\t-1\n", "not a number in range"),
        ("#ev\t\t\t300\n", "not a number in range"),
        ("range_query\tdefault\t0001\t0\n", "start..end"),
        (
            "range_delete\tdefault\t00..01\t3\n",
            "value column must be 0",
        ),
        (
            "range_delete\tdefault\t00..0\t0\n",
            "odd number of hex digits",
        ),
    ];
    for (line, what) in cases {
        let input = format!("{head}{line}{footer}");
        let err = read_text(input.as_bytes()).unwrap_err().to_string();
        assert!(err.starts_with("malformed trace at line 3: "), "{err}");
        assert!(err.contains(what), "{err} should say {what}");
    }
}

#[test]
fn writers_report_unrepresentable_records_on_finish() {
    let h = header(&["only"]);
    let mut w = TextTraceWriter::new(Vec::new(), &h).unwrap();
    w.access(Access {
        op: Op::Get,
        state: 3,
        key: b"k",
        value_len: 0,
    });
    assert!(w.error().is_some());
    let err = w.finish(TraceFooter::default()).unwrap_err();
    assert!(err.to_string().contains("state 3"), "{err}");

    let mut w = BinaryTraceWriter::new(Vec::new(), &h).unwrap();
    let big = vec![0u8; MAX_KEY_LEN + 1];
    w.access(Access {
        op: Op::Put,
        state: 0,
        key: &big,
        value_len: 1,
    });
    assert!(w.finish(TraceFooter::default()).is_err());

    let bad = header(&["a\tb"]);
    assert!(TextTraceWriter::new(Vec::new(), &bad).is_err());
    let dup = header(&["a", "a"]);
    assert!(TextTraceWriter::new(Vec::new(), &dup).is_err());
}

#[test]
fn write_errors_are_kept_and_reported() {
    #[derive(Debug)]
    struct Failing;
    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    assert!(BinaryTraceWriter::new(Failing, &header(STATES)).is_err());
    // Fails once the first chunk of blocks is written.
    #[derive(Debug)]
    struct FailAfter(usize);
    impl Write for FailAfter {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.0 < b.len() {
                return Err(std::io::Error::other("disk full"));
            }
            self.0 -= b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut w = BinaryTraceWriter::new(FailAfter(1000), &header(STATES)).unwrap();
    for i in 0..400_000u32 {
        w.access(Access {
            op: Op::Put,
            state: 0,
            key: &i.to_be_bytes(),
            value_len: 8,
        });
    }
    assert!(w.error().is_some());
    let err = w.finish(TraceFooter::default()).unwrap_err();
    assert!(err.to_string().contains("disk full"), "{err}");
}

#[test]
fn detection() {
    assert_eq!(
        TraceFormat::detect(b"GADGTRC1\x01\x00"),
        Some(TraceFormat::Binary)
    );
    assert_eq!(
        TraceFormat::detect(b"#gadget-trace\ttext\t1\n"),
        Some(TraceFormat::Text)
    );
    assert_eq!(
        TraceFormat::detect(b"#op\tcf\tkeyhex\tvlen\n"),
        Some(TraceFormat::Text)
    );
    assert_eq!(TraceFormat::detect(b"GADG"), None);
    assert_eq!(TraceFormat::detect(b"\x1f\x8b\x08"), None);
    assert!(is_gzip(b"\x1f\x8b\x08"));
    assert_eq!("binary".parse::<TraceFormat>(), Ok(TraceFormat::Binary));
    assert_eq!("text".parse::<TraceFormat>(), Ok(TraceFormat::Text));
    assert!("csv".parse::<TraceFormat>().is_err());
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn gzip_files_open_and_convert_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let h = header(STATES);
    let records = sample_records();
    let bin = write_binary(&h, &records, TraceFooter::new(true));
    let txt = write_text(&h, &records, TraceFooter::new(true));
    let paths = [
        ("t.bin", bin.clone()),
        ("t.bin.gz", gzip(&bin)),
        ("t.txt", txt.clone()),
        ("t.txt.gz", gzip(&txt)),
    ];
    for (name, bytes) in &paths {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let mut r = open_trace(&p).unwrap();
        assert_eq!(r.header(), Some(&h), "{name}");
        let back = r.records().collect::<Result<Vec<_>, _>>().unwrap();
        assert_eq!(back, records, "{name}");
        assert!(r.footer().unwrap().truncated, "{name}");
    }

    // Every conversion preserves header, records and the truncated flag.
    for (name, _) in &paths {
        for (out, format) in [
            ("o.bin", TraceFormat::Binary),
            ("o.bin.gz", TraceFormat::Binary),
            ("o.txt", TraceFormat::Text),
            ("o.txt.gz", TraceFormat::Text),
        ] {
            let out = dir.path().join(out);
            let footer = convert(dir.path().join(name), &out, format).unwrap();
            assert_eq!(footer.requests, 12);
            assert!(footer.truncated);
            let mut r = open_trace(&out).unwrap();
            assert_eq!(r.format(), format);
            assert_eq!(r.header(), Some(&h));
            let back = r.records().collect::<Result<Vec<_>, _>>().unwrap();
            assert_eq!(back, records);
            assert_eq!(r.footer(), Some(&footer));
        }
    }

    // A failed conversion leaves no output and no temporary file behind.
    let broken = dir.path().join("broken.bin");
    std::fs::write(&broken, &bin[..bin.len() - 3]).unwrap();
    let out = dir.path().join("never.bin");
    let err = convert(&broken, &out, TraceFormat::Text).unwrap_err();
    assert!(err.to_string().contains("broken.bin"), "{err}");
    assert!(err.to_string().contains("truncated at byte"), "{err}");
    assert!(!out.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let err = open_trace(dir.path().join("missing")).unwrap_err();
    assert!(err.to_string().starts_with("cannot open trace"), "{err}");
}

const FLINK_SAMPLE: &str = "#op\tcf\tkeyhex\tvlen
cf_create\tLEFT_BUFFER\t\t0
cf_create\tRIGHT_BUFFER\t\t0
#ev\tIntervalJoinOperator\t\t1
get\tLEFT_BUFFER\t0c00\t-1
put\tLEFT_BUFFER\t0c00\t29
iter_new\tRIGHT_BUFFER\t\t0
iter_seek\tRIGHT_BUFFER\t0c00>0d01\t29
iter_next\tRIGHT_BUFFER\t0e\t29
iter_next\tRIGHT_BUFFER\t\t-1
wb_put\t_timer_state/event_window-timers\t0080\t0
wb_delete\t_timer_state/event_window-timers\t0080\t0
wb_write\tdefault\t\t500
#late\tIntervalJoinOperator\t\t0
#merge_ns\tx\t\t0
#wm\tIntervalJoinOperator\t\t9223372036854775807
";

#[test]
fn a_gets_read_length_is_written_as_found_and_read_back_and_older_texts_say_not_known() {
    let h = header(STATES);
    let records = vec![
        access(Op::Get, 0, b"a", ReadLen::Unknown.value_len()),
        access(Op::Get, 0, b"b", ReadLen::Missing.value_len()),
        access(Op::Get, 0, b"c", ReadLen::Found(0).value_len()),
        access(Op::Get, 0, b"d", ReadLen::Found(24).value_len()),
    ];
    let bytes = write_text(&h, &records, TraceFooter::new(false));
    let text = String::from_utf8(bytes.clone()).unwrap();
    for line in [
        "get\twindow-contents\t61\t?\n",
        "62\t-1\n",
        "63\t0\n",
        "64\t24\n",
    ] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
    assert_eq!(read_all(&bytes).unwrap().1, records);
    let bin = write_binary(&h, &records, TraceFooter::new(false));
    assert_eq!(read_all(&bin).unwrap().1, records);

    // version 3 wrote 0 for every get, which says nothing about what it found
    let old = text
        .replacen("\ttext\t4\n", "\ttext\t3\n", 1)
        .replace("\t?\n", "\t0\n");
    let old = old.replace("\t-1\n", "\t0\n").replace("\t24\n", "\t0\n");
    let back = read_all(old.as_bytes()).unwrap().1;
    assert!(back
        .iter()
        .all(|r| matches!(r, TraceRecord::Access { value_len: 0, .. })));

    let bad = text.replace("\t24\n", "\t-2\n");
    let e = read_all(bad.as_bytes()).unwrap_err().to_string();
    assert!(e.contains("line 6") && e.contains("-1 for nothing"), "{e}");
}

#[test]
fn flink_recording_mapping() {
    let mut r = TextTraceReader::new(FLINK_SAMPLE.as_bytes()).unwrap();
    assert_eq!(r.dialect(), TextDialect::Flink);
    assert!(r.header().is_none());
    let records = r.records().collect::<Result<Vec<_>, _>>().unwrap();
    assert_eq!(
        records,
        vec![
            TraceRecord::Event { input: 1 },
            access(Op::Get, 0, b"\x0c\x00", ReadLen::Missing.value_len()),
            access(Op::Put, 0, b"\x0c\x00", 29),
            access(Op::Seek, 1, b"\x0c\x00", 0),
            access(Op::Next, 1, b"\x0e", 0),
            access(Op::Next, 1, b"", 0),
            access(Op::BatchPut, 2, b"\x00\x80", 0),
            access(Op::BatchDelete, 2, b"\x00\x80", 0),
            access(Op::BatchCommit, 3, b"", 500),
            TraceRecord::Watermark {
                timestamp: i64::MAX
            },
        ]
    );
    assert_eq!(
        r.state_names(),
        [
            "LEFT_BUFFER",
            "RIGHT_BUFFER",
            "_timer_state/event_window-timers",
            "default"
        ]
    );
    assert!(r.footer().is_none());

    let err = TextTraceReader::new("#op\tcf\tkeyhex\tvlen\nscan\tx\t\t0\n".as_bytes())
        .unwrap()
        .next_record()
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("malformed trace at line 2: unknown Flink op"),
        "{err}"
    );
}

#[test]
fn flink_recording_converts_with_its_state_table() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("interval-join.tsv.gz");
    std::fs::write(&src, gzip(FLINK_SAMPLE.as_bytes())).unwrap();
    let out = dir.path().join("ij.bin");
    let footer = convert(&src, &out, TraceFormat::Binary).unwrap();
    assert_eq!(footer.requests, 8);
    assert_eq!(footer.events, 1);
    let mut r = open_trace(&out).unwrap();
    let h = r.header().unwrap().clone();
    assert_eq!(h.operator, "interval-join");
    assert_eq!(h.state_names.len(), 4);
    let mut orig = open_trace(&src).unwrap();
    assert!(orig.is_flink_recording());
    let a = orig.records().collect::<Result<Vec<_>, _>>().unwrap();
    let b = r.records().collect::<Result<Vec<_>, _>>().unwrap();
    assert_eq!(a, b);
}

#[test]
fn a_stopped_conversion_leaves_the_output_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in.gtrace");
    let records: Vec<_> = (0..70_000u32)
        .map(|i| access(Op::Put, 0, &i.to_be_bytes(), 8))
        .collect();
    let footer = TraceFooter::new(false);
    std::fs::write(&src, write_binary(&header(STATES), &records, footer)).unwrap();
    let out = dir.path().join("out.txt");
    std::fs::write(&out, "an earlier trace").unwrap();

    let mut calls = Vec::new();
    let err = convert_with_progress(&src, &out, TraceFormat::Text, &mut |n| {
        calls.push(n);
        ControlFlow::Break(())
    })
    .unwrap_err();
    assert!(
        matches!(&err, TraceError::Stopped { path } if path == &out),
        "{err}"
    );
    assert_eq!(calls, [65_536]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "an earlier trace");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "a temporary file is left"
    );

    let footer = convert_with_progress(&src, &out, TraceFormat::Text, &mut |_| {
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(footer.requests, 70_000);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

/// The reference recordings in `../shared` beside the checkout, or `None` (with a message)
/// when they are not on this machine.
fn reference_dir() -> Option<&'static Path> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/reference-traces/flink-1.20"
    ));
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "{} is missing and CI=true: the reference recordings must be present in CI",
            dir.display()
        );
    }
    eprintln!(
        "skipping: {} is missing (the Flink reference recordings are not on this machine)",
        dir.display()
    );
    None
}

fn count_recording(path: &Path) -> (AccessCounts, Vec<String>) {
    let mut r = open_trace(path).unwrap();
    assert!(r.is_flink_recording());
    let mut counts = AccessCounts::default();
    replay(&mut r, &mut counts).unwrap();
    (counts, r.state_names().to_vec())
}

#[test]
fn flink_reference_tumbling_incr_counts() {
    let Some(dir) = reference_dir() else { return };
    let (c, names) = count_recording(&dir.join("tumbling-incr.tsv.gz"));
    assert_eq!(c.events, 26_250);
    assert_eq!(c.watermarks, 263);
    assert_eq!(c.by_op[Op::Get as usize], 48_816);
    assert_eq!(c.by_op[Op::Put as usize], 26_250);
    assert_eq!(c.by_op[Op::Delete as usize], 22_566);
    assert_eq!(c.requests(), 48_816 + 26_250 + 22_566);
    assert_eq!(names, ["window-contents"]);
}

#[test]
fn flink_reference_iterators_and_batches() {
    let Some(dir) = reference_dir() else { return };
    let (c, names) = count_recording(&dir.join("tumbling-incr.rocksdb-timers.tsv.gz"));
    assert_eq!(c.by_op[Op::Seek as usize], 256);
    assert_eq!(c.by_op[Op::BatchPut as usize], 22_566);
    assert_eq!(c.by_op[Op::BatchDelete as usize], 32_540);
    assert_eq!(c.by_op[Op::BatchCommit as usize], 367);
    assert_eq!(names.len(), 4, "{names:?}");

    let (c, _) = count_recording(&dir.join("interval-join.tsv.gz"));
    assert_eq!(c.events, 13_447);
    assert_eq!(c.by_op[Op::Seek as usize], 13_447);
    assert_eq!(c.by_op[Op::Next as usize], 4_575);
}

fn record_strategy(states: u16) -> impl Strategy<Value = TraceRecord> {
    let key = prop_oneof![
        proptest::collection::vec(0..3u8, 0..12),
        proptest::collection::vec(any::<u8>(), 0..40),
        // longer than the binary writer's short-record path takes
        proptest::collection::vec(0..2u8, 50..150),
    ];
    prop_oneof![
        6 => (0..Op::COUNT as u8, 0..states, key, any::<u32>()).prop_map(|(op, state, key, value_len)| {
            // an open renames its state, so its key must be a fresh name: see the open tests
            let op = Op::from_code(op).filter(|o| !o.is_state_lifecycle()).unwrap_or(Op::Get);
            // a range op's start bound lies within its key
            let value_len = super::valid_value_len(op, key.len(), value_len);
            TraceRecord::Access { op, state, key, value_len }
        }),
        1 => any::<u8>().prop_map(|input| TraceRecord::Event { input }),
        1 => any::<i64>().prop_map(|timestamp| TraceRecord::Watermark { timestamp }),
    ]
}

proptest! {
    #[test]
    fn prop_round_trip(records in proptest::collection::vec(record_strategy(3), 0..300),
                       truncated in any::<bool>()) {
        let h = header(STATES);
        let bin = write_binary(&h, &records, TraceFooter::new(truncated));
        let (r, back) = read_all(&bin).unwrap();
        prop_assert_eq!(&back, &records);
        prop_assert_eq!(r.footer().map(|f| f.truncated), Some(truncated));
        let txt = write_text(&h, &records, TraceFooter::new(truncated));
        let (r, back) = read_all(&txt).unwrap();
        prop_assert_eq!(&back, &records);
        prop_assert_eq!(r.footer().map(|f| f.truncated), Some(truncated));
    }

    #[test]
    fn prop_random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = read_binary(&bytes);
        let _ = read_text(&bytes);
        let _ = read_all(&bytes);
        // Behind valid starts, so the parsers get past recognition.
        let mut bin = BINARY_MAGIC.to_vec();
        bin.extend_from_slice(&BINARY_VERSION.to_le_bytes());
        bin.extend_from_slice(&bytes);
        let _ = read_binary(&bin);
        let mut txt = b"#gadget-trace\ttext\t1\n#header\t".to_vec();
        txt.extend_from_slice(&bytes);
        let _ = read_text(&txt);
        let mut flink = b"#op\tcf\tkeyhex\tvlen\n".to_vec();
        flink.extend_from_slice(&bytes);
        let _ = read_text(&flink);
        let _ = read_all(&gzip(&bin));
    }

    #[test]
    fn prop_mutated_traces_never_panic(records in proptest::collection::vec(record_strategy(3), 0..40),
                                       edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let h = header(STATES);
        for mut bytes in [
            write_binary(&h, &records, TraceFooter::default()),
            write_text(&h, &records, TraceFooter::default()),
        ] {
            for (i, v) in &edits {
                let i = i.index(bytes.len());
                bytes[i] = *v;
            }
            let _ = read_all(&bytes);
        }
    }

    #[test]
    fn prop_random_lines_never_panic(lines in proptest::collection::vec("[a-z#_]{0,6}\t[a-z]{0,3}\t[0-9a-f>]{0,6}\t-?[0-9]{0,20}", 0..20)) {
        let mut flink = String::from("#op\tcf\tkeyhex\tvlen\n");
        let mut gadget = String::from_utf8(write_text(&header(STATES), &[], TraceFooter::default())).unwrap();
        gadget.truncate(gadget.find("#footer").unwrap());
        for l in &lines {
            flink.push_str(l);
            flink.push('\n');
            gadget.push_str(l);
            gadget.push('\n');
        }
        let _ = read_text(flink.as_bytes());
        let _ = read_text(gadget.as_bytes());
    }
}

#[test]
fn binary_records_match_the_documented_example() {
    let mut w = BinaryTraceWriter::new(Vec::new(), &header(STATES)).unwrap();
    for (op, key, value_len) in [
        (Op::Put, &[0x00, 0x01, 0x6b, 0x65, 0x79][..], 8),
        (Op::Get, &[0x00, 0x01, 0x6b, 0x66], 0),
        (Op::Put, &[0x00, 0x02, 0x6b, 0x66], 8),
        (Op::Get, &[0x00, 0x02, 0x6b, 0x66], 0),
    ] {
        w.access(Access {
            op,
            state: 0,
            key,
            value_len,
        });
    }
    w.event(0);
    w.watermark(151_132_735);
    let bytes = w.finish(TraceFooter::default()).unwrap();
    let payload: &[u8] = &[
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x6b, 0x65, 0x79, 0x08, // put
        0x50, 0x03, 0x01, 0x66, // get
        0x11, 0x01, 0x03, 0x02, 0x6b, 0x66, 0x08, // put
        0x70, // get
        0x0f, // event
        0x0e, 0xfe, 0xe8, 0x90, 0x90, 0x01, // watermark
    ];
    let header_len = u32::from_le_bytes(bytes[11..15].try_into().unwrap()) as usize;
    let block = &bytes[10 + 13 + header_len..];
    assert_eq!(block[0], b'D');
    assert_eq!(&block[1..5], &(payload.len() as u32).to_le_bytes());
    assert_eq!(&block[5..9], &6u32.to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&block[..9]);
    crc.update(payload);
    assert_eq!(&block[9..13], &crc.finalize().to_le_bytes());
    assert_eq!(&block[13..13 + payload.len()], payload);
    assert_eq!(block[13 + payload.len()], b'E');
}

#[test]
fn a_window_key_after_one_of_its_window_keeps_the_namespace_as_its_tail() {
    let window_key = |k: u8| {
        let mut key = vec![0x2a, 0, 0, 0, 0, 0, 0, 0, k];
        key.extend_from_slice(&0i64.to_be_bytes());
        key.extend_from_slice(&5000i64.to_be_bytes());
        key
    };
    let mut w = BinaryTraceWriter::new(Vec::new(), &header(STATES)).unwrap();
    for (op, k, value_len) in [(Op::Put, 5, 8), (Op::Get, 7, 0)] {
        w.access(Access {
            op,
            state: 0,
            key: &window_key(k),
            value_len,
        });
    }
    let bytes = w.finish(TraceFooter::default()).unwrap();
    let header_len = u32::from_le_bytes(bytes[11..15].try_into().unwrap()) as usize;
    let payload_len =
        u32::from_le_bytes(bytes[24 + header_len..28 + header_len].try_into().unwrap());
    let payload = &bytes[10 + 13 + header_len + 13..][..payload_len as usize];
    // the put: state 0, nothing shared, 25 new bytes, value length 8
    assert_eq!(&payload[..4], &[0x01, 0x00, 0x00, 25]);
    assert_eq!(&payload[4 + 25..], &[0x08, 0xd0, 0x08, 0x10, 0x01, 0x07]);
    assert_eq!(
        read_binary(&bytes).unwrap()[1],
        access(Op::Get, 0, &window_key(7), 0)
    );
}

#[test]
fn truncated_or_damaged_gzip_is_an_error() {
    let h = header(STATES);
    let records: Vec<_> = (0..2_000u32)
        .map(|i| access(Op::Put, 0, &i.to_be_bytes(), i))
        .collect();
    for plain in [
        write_binary(&h, &records, TraceFooter::default()),
        write_text(&h, &records, TraceFooter::default()),
    ] {
        let gz = gzip(&plain);
        assert_eq!(read_all(&gz).unwrap().1, records);
        for n in (0..gz.len()).step_by(97).chain([gz.len() - 1]) {
            let err = read_all(&gz[..n]).expect_err(&format!("gzip prefix of {n} bytes"));
            let msg = err.to_string();
            assert!(msg.contains("byte") || msg.contains("line"), "{msg}");
        }
        for i in (10..gz.len()).step_by(53) {
            let mut b = gz.clone();
            b[i] ^= 0x5a;
            let _ = read_all(&b);
        }
    }
}

#[test]
fn a_range_op_whose_start_outgrows_its_key_is_refused() {
    let bad = vec![access(Op::RangeDelete, 0, b"ab", 3)];
    let bytes = write_binary(&header(STATES), &bad, TraceFooter::default());
    let err = read_binary(&bytes).unwrap_err().to_string();
    assert!(err.contains("start bound has 3 bytes"), "{err}");

    let mut w = TextTraceWriter::new(Vec::new(), &header(STATES)).unwrap();
    RecordRef::from(&bad[0]).feed(&mut w);
    let err = w.finish(TraceFooter::default()).unwrap_err().to_string();
    assert!(err.contains("start bound of 3 bytes"), "{err}");
}

#[test]
fn a_state_name_longer_than_allowed_is_refused_by_every_reader() {
    let long = "s".repeat(MAX_STATE_NAME_LEN + 1);
    let flink = format!("#op\tcf\tkeyhex\tvlen\nget\t{long}\t0c00\t-1\n");
    let err = TextTraceReader::new(flink.as_bytes())
        .unwrap()
        .next_record()
        .unwrap_err();
    assert!(
        err.to_string().contains("longer than the 1024 allowed"),
        "{err}"
    );
    let mut text = Vec::new();
    let h = TraceHeader::new("test", vec![long.clone()], None, serde_json::json!({}));
    assert!(TextTraceWriter::new(&mut text, &h).is_err());
    assert!(BinaryTraceWriter::new(Vec::new(), &h).is_err());
    // a header written by hand with the long name
    let json = serde_json::to_string(&h).unwrap();
    let text = format!("#gadget-trace\ttext\t1\n#header\t{json}\n");
    let Err(err) = TextTraceReader::new(text.as_bytes()) else {
        panic!("a long name in the header accepted");
    };
    assert!(
        err.to_string().contains("longer than the 1024 allowed"),
        "{err}"
    );
}

/// A slot opened as a segment, written to, dropped and opened again as the next segment.
fn segment_lifecycle() -> Vec<TraceRecord> {
    vec![
        access(Op::Open, 2, b"store.60000", 0),
        access(Op::Put, 2, b"k1", 16),
        access(Op::Get, 0, b"k", 0),
        access(Op::Drop, 2, b"", 0),
        access(Op::Open, 2, b"store.120000", 0),
        access(Op::Put, 2, b"k2", 16),
    ]
}

/// The names each record of `bytes` sees its state under, read with the unified reader.
fn names_seen(bytes: &[u8]) -> Vec<String> {
    let mut r = TraceReader::from_reader(Cursor::new(bytes.to_vec())).unwrap();
    let mut seen = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        if let RecordRef::Access(a) = rec {
            let state = a.state;
            seen.push(r.state_names()[usize::from(state)].clone());
        }
    }
    seen
}

#[test]
fn an_open_renames_its_state_for_the_records_after_it_in_both_formats() {
    let h = header(&["window-contents", "window-timers", "(free 0)"]);
    let records = segment_lifecycle();
    for bytes in [
        write_binary(&h, &records, TraceFooter::default()),
        write_text(&h, &records, TraceFooter::default()),
    ] {
        let (_, back) = read_all(&bytes).unwrap();
        assert_eq!(back, records);
        assert_eq!(
            names_seen(&bytes),
            [
                "store.60000",
                "store.60000",
                "window-contents",
                "store.60000",
                "store.120000",
                "store.120000"
            ]
        );
    }
    let text = String::from_utf8(write_text(&h, &records, TraceFooter::default())).unwrap();
    assert!(
        text.contains("\nopen\t(free 0)\t73746f72652e3630303030\t0\n"),
        "{text}"
    );
    assert!(text.contains("\ndrop\tstore.60000\t\t0\n"), "{text}");
}

#[test]
fn an_open_with_a_name_another_state_has_or_not_utf8_is_refused_by_both_writers() {
    // what the readers refuse, with where (binary: `trace::binary`'s tests)
    let h = header(&["a", "b"]);
    for (key, says) in [
        (&b"a"[..], "the name state 0 already has"),
        (&[0xff, 0xfe][..], "not UTF-8"),
        (&b"x\ty"[..], "tab or line break"),
    ] {
        let mut w = BinaryTraceWriter::new(Vec::new(), &h).unwrap();
        RecordRef::from(&access(Op::Open, 1, key, 0)).feed(&mut w);
        let err = w.finish(TraceFooter::default()).unwrap_err().to_string();
        assert!(err.contains(says), "{err}");
        let mut w = TextTraceWriter::new(Vec::new(), &h).unwrap();
        RecordRef::from(&access(Op::Open, 1, key, 0)).feed(&mut w);
        let err = w.finish(TraceFooter::default()).unwrap_err().to_string();
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn version_3_traces_are_read_and_refuse_the_ops_of_version_4() {
    let h = header(&["a", "b"]);
    let mut bytes = write_binary(&h, &[access(Op::Get, 0, b"k", 0)], TraceFooter::default());
    bytes[8] = 3;
    assert_eq!(read_all(&bytes).unwrap().1.len(), 1);
    let mut bytes = write_binary(&h, &[access(Op::Drop, 1, b"", 0)], TraceFooter::default());
    bytes[8] = 3;
    let err = read_all(&bytes).unwrap_err().to_string();
    assert!(
        err.contains("unknown record tag 0x6c for a version 3 trace"),
        "{err}"
    );
}

#[test]
fn a_value_longer_than_any_store_is_handed_is_refused_at_its_line() {
    let records = [
        access(Op::Get, 0, b"k", 0),
        access(Op::Put, 0, b"k", 9),
        access(Op::BatchCommit, 0, b"", 7),
    ];
    let text = String::from_utf8(write_text(
        &header(STATES),
        &records,
        TraceFooter::default(),
    ))
    .unwrap();
    let at_bound = text.replace("\t6b\t9\n", &format!("\t6b\t{MAX_VALUE_LEN}\n"));
    assert_eq!(
        read_all(at_bound.as_bytes()).unwrap().1[1],
        access(Op::Put, 0, b"k", MAX_VALUE_LEN)
    );
    let line = text.lines().position(|l| l.starts_with("put\t")).unwrap() + 1;
    for too_long in [MAX_VALUE_LEN + 1, u32::MAX] {
        let bad = text.replace("\t6b\t9\n", &format!("\t6b\t{too_long}\n"));
        let err = read_all(bad.as_bytes()).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "malformed trace at line {line}: a put of a {too_long}-byte value, longer than \
                 the 67108864 bytes (64 MiB) a value may have"
            )
        );
    }
    // a batch commit's count of entries is no value
    let many = text.replace(
        "batch_commit\twindow-contents\t\t7",
        "batch_commit\twindow-contents\t\t4294967295",
    );
    assert_eq!(
        read_all(many.as_bytes()).unwrap().1[2],
        access(Op::BatchCommit, 0, b"", u32::MAX)
    );
    // a Flink recording's too
    let flink = "#op\tcf\tkeyhex\tvlen\nput\tLEFT_BUFFER\t0c00\t4294967295\n";
    let err = read_all(flink.as_bytes()).unwrap_err().to_string();
    assert!(
        err.starts_with("malformed trace at line 2: a put of a 4294967295-byte value"),
        "{err}"
    );
    // the text writer refuses to write one
    let mut w = TextTraceWriter::new(Vec::new(), &header(STATES)).unwrap();
    w.access(Access {
        op: Op::BatchPut,
        state: 0,
        key: b"k",
        value_len: MAX_VALUE_LEN + 1,
    });
    let err = w.finish(TraceFooter::default()).unwrap_err().to_string();
    assert!(
        err.contains("a batch_put of a 67108865-byte value"),
        "{err}"
    );
}
