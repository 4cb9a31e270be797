//! Reading a whole trace for a comparison, under a spinner.

use anyhow::Context;
use gadget::access::TraceRecord;
use gadget::trace::open_trace;

use crate::progress;

/// Feeds every record of the trace at `path` to `feed`, with the trace's state table as it
/// stands at that record, under a spinner that counts them.
pub fn read_trace(
    path: &std::path::Path,
    feed: &mut dyn FnMut(&TraceRecord, &[String]),
) -> anyhow::Result<()> {
    let bar = progress::spinner(&format!("reading {}", path.display()));
    let mut reader = open_trace(path)?;
    let mut records = 0u64;
    while let Some(rec) = reader
        .next_record()
        .with_context(|| format!("reading {}", path.display()))?
    {
        let rec = rec.to_record();
        feed(&rec, reader.state_names());
        records += 1;
        if records % gadget::PROGRESS_EVERY == 0 {
            bar.set_message(format!("{records} records"));
        }
    }
    bar.finish_and_clear();
    Ok(())
}
