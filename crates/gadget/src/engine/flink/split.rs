//! A Flink job's keyed operator as parallel subtasks: each owns a range of the key groups
//! (`max_parallelism` of them), and a key's events go to the subtask whose range holds its
//! key group ([`JobSplit`]'s provided methods).

use super::FlinkOperator;
use crate::key::default_max_parallelism;
use crate::parallel::split::JobSplit;

impl JobSplit for FlinkOperator {
    fn refusal(&self, parallelism: u32, max_parallelism: u32) -> Option<String> {
        Some(match self {
            FlinkOperator::LookupJoin(_) => {
                "the lookup-join splits its campaigns among the instances of `[run] instances` \
                 (docs/external-state.md); parallelism is for the other keyed operators"
                    .to_string()
            }
            FlinkOperator::Window { keyed: false, .. } => {
                "a windowAll operator (keyed = false) runs as one subtask in Flink whatever the \
                 job's parallelism; set keyed = true, or parallelism = 1"
                    .to_string()
            }
            _ if parallelism > max_parallelism => format!(
                "{parallelism} subtasks need at least as many key groups, and max_parallelism \
                 is {max_parallelism}; raise max_parallelism, or leave it out (Flink's default \
                 for parallelism {parallelism} is {})",
                default_max_parallelism(parallelism)
            ),
            _ => return None,
        })
    }
}
