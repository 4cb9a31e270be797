//! How a two-input operator sees its inputs: both streams merged into one, with the combined
//! watermark (the minimum of the inputs' watermarks) announced when it advances.

use std::collections::VecDeque;

use super::element::StreamElement;
use super::{ElementStream, SourceError};

/// How a two-input operator takes records from its inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Interleaving {
    /// Flink's two-input processor when both inputs have data: one record (event or watermark)
    /// from each input in turn, starting with input 1. Reproduces the reference recordings.
    #[default]
    RoundRobin,
    /// In the order the records come from the combined source (for one file: file order).
    /// With two separate sources this is the same as `ByTime`.
    SourceOrder,
    /// The record with the earlier time first (an event's timestamp, a watermark's value);
    /// ties go to input 1.
    ByTime,
}

enum Inputs {
    /// One stream whose events carry input 1 or 2; watermarks go to both inputs.
    Tagged(ElementStream),
    /// Two streams, one per input, each with its own watermarks.
    Separate([ElementStream; 2]),
}

/// Merges a stream whose events carry input 1 or 2 (watermarks go to both inputs) into the
/// sequence a two-input operator processes.
pub struct TwoInputMerger {
    inputs: Inputs,
    mode: Interleaving,
    queues: [VecDeque<StreamElement>; 2],
    source_done: bool,
    input_watermark: [Option<i64>; 2],
    combined: Option<i64>,
    turn: usize,
}

impl std::fmt::Debug for TwoInputMerger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwoInputMerger")
            .field("mode", &self.mode)
            .finish()
    }
}

impl TwoInputMerger {
    /// Merges `source`'s two inputs.
    pub fn new(source: ElementStream, mode: Interleaving) -> Self {
        Self::with_inputs(Inputs::Tagged(source), mode)
    }

    /// Merges two separate streams: `left` becomes input 1 and `right` input 2, whatever
    /// inputs their events carried.
    pub fn separate(left: ElementStream, right: ElementStream, mode: Interleaving) -> Self {
        let tag = |s: ElementStream, input: u8| -> ElementStream {
            Box::new(s.map(move |r| {
                r.map(|e| match e {
                    StreamElement::Event(mut ev) => {
                        ev.input = input;
                        StreamElement::Event(ev)
                    }
                    w => w,
                })
            }))
        };
        let mode = if mode == Interleaving::SourceOrder {
            Interleaving::ByTime
        } else {
            mode
        };
        Self::with_inputs(Inputs::Separate([tag(left, 1), tag(right, 2)]), mode)
    }

    fn with_inputs(inputs: Inputs, mode: Interleaving) -> Self {
        TwoInputMerger {
            inputs,
            mode,
            queues: [VecDeque::new(), VecDeque::new()],
            source_done: false,
            input_watermark: [None, None],
            combined: None,
            turn: 0,
        }
    }

    /// Pulls from the source until `input` has a record or the source ends.
    fn fill(&mut self, input: usize) -> Result<(), SourceError> {
        let source = match &mut self.inputs {
            Inputs::Separate(streams) => {
                if self.queues[input].is_empty() {
                    match streams[input].next() {
                        Some(Err(e)) => return Err(e),
                        Some(Ok(rec)) => self.queues[input].push_back(rec),
                        None => {}
                    }
                }
                return Ok(());
            }
            Inputs::Tagged(source) => source,
        };
        while self.queues[input].is_empty() && !self.source_done {
            match source.next() {
                None => self.source_done = true,
                Some(Err(e)) => return Err(e),
                Some(Ok(StreamElement::Watermark(w))) => {
                    self.queues[0].push_back(StreamElement::Watermark(w));
                    self.queues[1].push_back(StreamElement::Watermark(w));
                }
                Some(Ok(StreamElement::Event(e))) => {
                    let q = if e.input == 2 { 1 } else { 0 };
                    self.queues[q].push_back(StreamElement::Event(e));
                }
            }
        }
        Ok(())
    }

    fn take(&mut self) -> Result<Option<(usize, StreamElement)>, SourceError> {
        match self.mode {
            Interleaving::RoundRobin => {
                self.fill(self.turn)?;
                if self.queues[self.turn].is_empty() {
                    self.turn = 1 - self.turn;
                    self.fill(self.turn)?;
                }
                let input = self.turn;
                let rec = self.queues[input].pop_front();
                self.turn = 1 - input;
                Ok(rec.map(|r| (input, r)))
            }
            Interleaving::ByTime => {
                self.fill(0)?;
                self.fill(1)?;
                let time = |r: Option<&StreamElement>| match r {
                    Some(StreamElement::Event(e)) => Some(e.timestamp),
                    Some(StreamElement::Watermark(w)) => Some(*w),
                    None => None,
                };
                let input = match (time(self.queues[0].front()), time(self.queues[1].front())) {
                    (None, None) => return Ok(None),
                    (Some(_), None) => 0,
                    (None, Some(_)) => 1,
                    (Some(a), Some(b)) => usize::from(b < a),
                };
                let rec = self.queues[input].pop_front();
                Ok(rec.map(|r| (input, r)))
            }
            Interleaving::SourceOrder => match self.next_tagged() {
                None => Ok(None),
                Some(Err(e)) => Err(e),
                Some(Ok(StreamElement::Watermark(w))) => {
                    self.input_watermark = [Some(w), Some(w)];
                    Ok(Some((0, StreamElement::Watermark(w))))
                }
                Some(Ok(ev)) => Ok(Some((0, ev))),
            },
        }
    }
}

impl TwoInputMerger {
    fn next_tagged(&mut self) -> Option<Result<StreamElement, SourceError>> {
        match &mut self.inputs {
            Inputs::Tagged(s) => s.next(),
            Inputs::Separate(_) => None,
        }
    }
}

impl Iterator for TwoInputMerger {
    type Item = Result<StreamElement, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (input, rec) = match self.take() {
                Err(e) => return Some(Err(e)),
                Ok(None) => return None,
                Ok(Some(x)) => x,
            };
            match rec {
                StreamElement::Event(e) => return Some(Ok(StreamElement::Event(e))),
                StreamElement::Watermark(w) => {
                    if self.mode != Interleaving::SourceOrder {
                        self.input_watermark[input] = Some(w);
                    }
                    if let [Some(a), Some(b)] = self.input_watermark {
                        let min = a.min(b);
                        if self.combined.is_none_or(|c| min > c) {
                            self.combined = Some(min);
                            return Some(Ok(StreamElement::Watermark(min)));
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Key;
    use crate::source::Event;

    fn ev(input: u8, t: i64) -> StreamElement {
        StreamElement::Event(Event {
            key: Key::Long(0),
            timestamp: t,
            input,
            closes: false,
        })
    }

    fn stream(v: Vec<StreamElement>) -> ElementStream {
        Box::new(v.into_iter().map(Ok))
    }

    fn show(m: TwoInputMerger) -> Vec<String> {
        m.map(|r| match r.unwrap() {
            StreamElement::Event(e) => format!("{}@{}", e.input, e.timestamp),
            StreamElement::Watermark(w) => format!("W{w}"),
        })
        .collect()
    }

    #[test]
    fn round_robin_alternates_records_and_waits_for_both_watermarks() {
        // One tagged stream: the watermark after three events goes to both inputs.
        let s = stream(vec![
            ev(1, 1),
            ev(1, 2),
            ev(2, 3),
            StreamElement::Watermark(3),
            ev(1, 4),
        ]);
        let got = show(TwoInputMerger::new(s, Interleaving::RoundRobin));
        // input 1: 1, 2, W3, 4; input 2: 3, W3 -> 1@1 2@3 1@2 (W3 on input 2) (W3 on input 1 -> combined 3) 1@4
        assert_eq!(got, vec!["1@1", "2@3", "1@2", "W3", "1@4"]);
    }

    #[test]
    fn separate_sources_by_time_take_the_earlier_record() {
        let left = stream(vec![ev(0, 1), ev(0, 5), StreamElement::Watermark(5)]);
        let right = stream(vec![ev(0, 2), ev(0, 3), StreamElement::Watermark(4)]);
        let got = show(TwoInputMerger::separate(left, right, Interleaving::ByTime));
        assert_eq!(got, vec!["1@1", "2@2", "2@3", "1@5", "W4"]);
    }

    #[test]
    fn separate_sources_round_robin_and_the_combined_watermark_is_the_minimum() {
        let left = stream(vec![
            ev(0, 1),
            StreamElement::Watermark(10),
            StreamElement::Watermark(20),
        ]);
        let right = stream(vec![ev(0, 2), StreamElement::Watermark(15)]);
        let got = show(TwoInputMerger::separate(
            left,
            right,
            Interleaving::RoundRobin,
        ));
        assert_eq!(got, vec!["1@1", "2@2", "W10", "W15"]);
    }
}
