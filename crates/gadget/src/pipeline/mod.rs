//! The pipeline a config describes, built: its source (one stream, two inputs merged, or the
//! job's inputs before the keyed exchange) and its operator, whichever engine it is. The
//! config only parses and validates ([`crate::config`]); building lives here.

use crate::baseline::kvbench::KvbenchClient;
use crate::baseline::ycsb::YcsbClient;
use crate::config::{right_seed, Config, OperatorConfig, SourceConfig};
use crate::engine::flink::FlinkOperator;
use crate::operator::Operator;
use crate::parallel::JobInputs;
use crate::source::file::FileSource;
use crate::source::random::Rng;
use crate::source::synthetic::SyntheticSource;
use crate::source::ysb::{YsbIds, YsbSource};
use crate::source::{ElementStream, SourceError, StreamElement};

/// Opens one configured stream.
fn open_stream(source: &SourceConfig, seed: u64) -> Result<ElementStream, SourceError> {
    Ok(match source {
        SourceConfig::File(spec) => Box::new(FileSource::open(spec.clone())?),
        SourceConfig::Synthetic {
            spec,
            left_fraction,
            closing_fraction,
        } => {
            let mut source = SyntheticSource::new(spec.clone(), seed)?;
            if let Some(f) = left_fraction {
                source = source.with_join_inputs(*f)?;
            }
            match *closing_fraction {
                None => Box::new(source.map(Ok)),
                Some(p) => {
                    let mut rng = Rng::substream(seed, CLOSING_STREAM);
                    Box::new(source.map(move |mut e| {
                        if let StreamElement::Event(ev) = &mut e {
                            ev.closes = ev.input == 1 && rng.chance(p);
                        }
                        Ok(e)
                    }))
                }
            }
        }
        SourceConfig::Ycsb(spec) => Box::new(spec.clock()),
        SourceConfig::Kvbench(spec) => Box::new(spec.clock()),
        SourceConfig::Separate { .. } => {
            unreachable!("validated: separate sources only feed joins")
        }
        SourceConfig::Ysb(_) => {
            unreachable!(
                "validated: a ysb source feeds the lookup-join alone (Config::open_source)"
            )
        }
    })
}

/// Sub-stream of the seed that decides which synthetic left events close their key.
const CLOSING_STREAM: u64 = 0x00c1_05e5;

impl Config {
    /// Opens the event source (for two-input operators: merged as the operator sees it); of a
    /// parallel job, the chosen subtask's share ([`Config::select_subtask`]).
    pub fn open_source(&self) -> Result<ElementStream, SourceError> {
        Ok(self
            .open_job_inputs()?
            .merged(|stream| self.subtask_share(stream)))
    }

    /// Opens the job's inputs as its source task(s) emit them, before the keyed exchange
    /// splits them among subtasks and before a two-input operator interleaves them.
    pub fn open_job_inputs(&self) -> Result<JobInputs, SourceError> {
        if let (SourceConfig::Ysb(spec), OperatorConfig::Flink(FlinkOperator::LookupJoin(join))) =
            (&self.source, &self.operator)
        {
            let (instance, instances) = self.instance();
            let source = YsbSource::new(
                spec,
                self.configured_seed(),
                &join.event_types,
                instance,
                instances,
                self.max_parallelism,
            )?;
            return Ok(JobInputs::One {
                stream: Box::new(source.map(Ok)),
                interleaving: None,
            });
        }
        let interleaving = match &self.operator {
            OperatorConfig::Flink(operator) => operator.interleaving(),
            _ => None,
        };
        Ok(match (&self.source, interleaving) {
            (SourceConfig::Separate { left, right }, Some(mode)) => JobInputs::Two {
                left: open_stream(left, self.seed)?,
                right: open_stream(right, right_seed(self.seed))?,
                interleaving: mode,
            },
            (source, interleaving) => JobInputs::One {
                stream: open_stream(source, self.seed)?,
                interleaving,
            },
        })
    }

    /// Builds the operator.
    pub fn build_operator(&self) -> Box<dyn Operator> {
        match &self.operator {
            OperatorConfig::Flink(operator) => {
                // the key groups of the chosen subtask (all of them at parallelism 1)
                operator.build(self.timers, self.max_parallelism, self.key_groups(), || {
                    let SourceConfig::Ysb(ysb) = &self.source else {
                        unreachable!("validated: the lookup-join reads a ysb source")
                    };
                    YsbIds::new(self.configured_seed(), ysb.campaigns, ysb.ads_per_campaign)
                })
            }
            OperatorConfig::Ycsb(spec) => Box::new(YcsbClient::new(spec, self.seed)),
            OperatorConfig::Kvbench(spec) => Box::new(KvbenchClient::new(spec, self.seed)),
            // a subtask of the query run as a parallel job: its shuffle partitions
            OperatorConfig::Spark(spec) => spec.operator_of(self.chosen_subtask()),
            // a subtask of an application run as a parallel job: one stream thread's tasks
            OperatorConfig::KafkaStreams(spec) => spec.operator_of(self.chosen_subtask()),
        }
    }
}
