//! What a store says about itself, declared once in its own file ([`StoreSpec`]): its name,
//! the store settings it reads, what results say it applied, what it runs on and how it is
//! opened. Every entry point reads these through [`super::StoreKind::spec`].

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::{SharedStore, Store, StoreError, StoreSettings};

/// A store's own description.
pub struct StoreSpec {
    /// The name users select it by (`--store`, `[run] store`, an experiment's `kind`).
    pub name: &'static str,
    /// What it is, in a few words for `--help` (`embedded, as Flink uses it`).
    pub about: &'static str,
    /// The store settings it reads (keys of `gadget::config::store_settings::STORE_SETTINGS`):
    /// a config or experiment giving another is refused at its line, a flag warned about.
    pub reads: &'static [&'static str],
    /// What it applied of the settings, by name, as results' `context.store_settings` show
    /// it; secrets (a Redis password) left out.
    pub applied: fn(&StoreSettings, &mut BTreeMap<String, String>),
    /// What it runs on, with its version (`LevelDB 1.23 (libleveldb.so.1.23.0)`); called after
    /// the run opened the store, so that a library loaded at run time is the one named.
    pub library: fn(&StoreSettings) -> String,
    /// How it is opened.
    pub open: Opener,
    /// Settings it cannot open with, known before it opens (a combination of them): the
    /// setting to name and why; `None` when it can. An experiment is refused by it before its
    /// first run.
    pub refuses: fn(&StoreSettings) -> Option<Refusal>,
}

/// Why a store cannot open with the settings given: the setting to name, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The setting's key (`rocksdb_options`).
    pub setting: &'static str,
    /// Why, and what to do.
    pub why: String,
}

/// [`StoreSpec::refuses`] of a store that opens with any settings it reads.
pub(crate) fn refuses_none(_: &StoreSettings) -> Option<Refusal> {
    None
}

/// Opens a store for one operator instance: its folder, its states, the settings.
pub type OpenOne = fn(&Path, &[String], &StoreSettings) -> Result<Box<dyn Store>, StoreError>;

/// Opens a store that several operator instances share: its folder, each instance's states,
/// the settings.
pub type OpenShared =
    fn(&Path, &[Vec<String>], &StoreSettings) -> Result<Arc<dyn SharedStore>, StoreError>;

/// How a store is opened.
#[derive(Clone, Copy)]
pub enum Opener {
    /// Each operator instance opens its own (a store in memory, a server's connection), with
    /// one keyspace per state, its files (if any) under the folder.
    PerInstance(OpenOne),
    /// One database under the folder that several operator instances may share, each attaching
    /// its own handle over its own states (`instances[i]` lists instance `i`'s); one instance
    /// alone attaches as instance 0.
    Shared(OpenShared),
}

for_gated_stores! {
/// How many states each of `instances` has: what the stores that name their keyspaces by
/// number need of them.
pub(crate) fn state_counts(instances: &[Vec<String>]) -> Vec<usize> {
    instances.iter().map(Vec::len).collect()
}
}

for_gated_stores! {
/// Puts `value` under `name` in `applied`.
pub(crate) fn set(applied: &mut BTreeMap<String, String>, name: &str, value: impl ToString) {
    applied.insert(name.to_string(), value.to_string());
}
}

for_gated_stores! {
/// What the stores with a write buffer and a block cache apply of them (LevelDB without a
/// count of buffers).
pub(crate) fn buffers_and_cache(
    s: &StoreSettings,
    applied: &mut BTreeMap<String, String>,
    counted: bool,
) {
    set(applied, "write_buffer_bytes", s.write_buffer_size);
    if counted {
        set(applied, "write_buffers", s.max_write_buffers);
    }
    set(applied, "block_cache_bytes", s.block_cache);
}
}
