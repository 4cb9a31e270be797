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
    SourceOrder,
}

/// Merges a stream whose events carry input 1 or 2 (watermarks go to both inputs) into the
/// sequence a two-input operator processes.
pub struct TwoInputMerger {
    source: ElementStream,
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
        TwoInputMerger {
            source,
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
        while self.queues[input].is_empty() && !self.source_done {
            match self.source.next() {
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
            Interleaving::SourceOrder => match self.source.next() {
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
                    if self.mode == Interleaving::RoundRobin {
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
