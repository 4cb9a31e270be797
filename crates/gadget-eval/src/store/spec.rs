//! What a store says about itself, declared once in its own file ([`StoreSpec`]): its name,
//! the store settings it reads, what results say it applied and what it runs on. Every entry
//! point reads these through [`super::StoreKind::spec`].

use std::collections::BTreeMap;

use super::StoreSettings;

/// A store's own description.
pub struct StoreSpec {
    /// The name users select it by (`--store`, `[run] store`, an experiment's `kind`).
    pub name: &'static str,
    /// The store settings it reads (keys of `gadget::config::store_settings::STORE_SETTINGS`):
    /// a config or experiment giving another is refused at its line, a flag warned about.
    pub reads: &'static [&'static str],
    /// What it applied of the settings, by name, as results' `context.store_settings` show
    /// it; secrets (a Redis password) left out.
    pub applied: fn(&StoreSettings, &mut BTreeMap<String, String>),
    /// What it runs on, with its version (`LevelDB 1.23 (libleveldb.so.1.23.0)`); called after
    /// the run opened the store, so that a library loaded at run time is the one named.
    pub library: fn(&StoreSettings) -> String,
}

/// Puts `value` under `name` in `applied`.
pub(crate) fn set(applied: &mut BTreeMap<String, String>, name: &str, value: impl ToString) {
    applied.insert(name.to_string(), value.to_string());
}

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
