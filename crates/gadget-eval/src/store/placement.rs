//! Where an operator instance's keys live in a store of several nodes (a Redis Cluster):
//! instance *i* is placed "on" node *i*, as seed 003 places each Flink task beside a Redis
//! node, and the placement decides whether its requests stay on that node.

use gadget::config::store_settings::REDIS_PLACEMENTS;

/// Where an instance's keys live in the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// Redis Cluster's own hashing of each key.
    #[default]
    Native,
    /// Every key on the instance's own node (hash tags).
    Aligned,
    /// Every key on every node; reads from the instance's own node.
    Replicated,
}

/// The placements in the order of their names in [`REDIS_PLACEMENTS`], the one list configs,
/// experiments and flags read.
const IN_ORDER: [Placement; REDIS_PLACEMENTS.len()] =
    [Placement::Native, Placement::Aligned, Placement::Replicated];

impl Placement {
    /// Every placement, by name.
    pub const ALL: [(&'static str, Placement); REDIS_PLACEMENTS.len()] = [
        (REDIS_PLACEMENTS[0], IN_ORDER[0]),
        (REDIS_PLACEMENTS[1], IN_ORDER[1]),
        (REDIS_PLACEMENTS[2], IN_ORDER[2]),
    ];

    /// The placement named `name`.
    pub fn from_name(name: &str) -> Option<Placement> {
        Self::ALL.iter().find(|p| p.0 == name).map(|p| p.1)
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|p| p.1 == self)
            .map_or(REDIS_PLACEMENTS[0], |p| p.0)
    }
}
