//! The settings each store reads ([`StoreKind::reads`]) and what it ran with, as results record
//! them, with the stores of `[run.stores]` beside it: each store's file declares its own part.

use std::collections::BTreeMap;

use gadget::config::run::RUN_SETTINGS;

use super::{StoreKind, StoreSettings};

/// Whether `setting` is one every store takes: a setting of the whole run that an
/// experiment's `[[store]]` may give (how many instances, whether they share the store, what
/// written values compress to).
fn every_store_reads(setting: &str) -> bool {
    RUN_SETTINGS.iter().any(|s| s.key == setting)
}

impl StoreKind {
    /// The store settings this store reads (keys of `STORE_SETTINGS`), as its file declares
    /// them ([`super::spec::StoreSpec::reads`]): experiment files and configs are checked
    /// against them (a setting the store does not read is an error at its line) and `gadget
    /// run` warns by them.
    pub fn reads(self) -> &'static [&'static str] {
        self.spec().reads
    }

    /// Whether this store reads `setting` (a key such as `write_buffer_mb`).
    pub fn reads_setting(self, setting: &str) -> bool {
        every_store_reads(setting) || self.reads().contains(&setting)
    }

    /// The message for a setting this store does not read: what it does read.
    pub fn ignores(self, setting: &str) -> String {
        let reads: Vec<&str> = self
            .reads()
            .iter()
            .copied()
            .chain(RUN_SETTINGS.iter().map(|s| s.key))
            .collect();
        format!(
            "the {} store does not read `{setting}`; it reads {}",
            self.name(),
            reads.join(", ")
        )
    }
}

impl StoreSettings {
    /// The settings `kind` reads, as Gadget applies them, by name; secrets (a Redis
    /// password) are left out.
    pub fn applied(&self, kind: StoreKind) -> BTreeMap<String, String> {
        let mut s = BTreeMap::new();
        (kind.spec().applied)(self, &mut s);
        for r in &self.routes {
            let mut of_route = r.settings.applied(r.kind);
            of_route.insert("kind".into(), r.kind.name().into());
            if let Some(spec) = &r.remote {
                let far = if r.kind.name() == "redis-cluster" {
                    format!(
                        "every node but an instance's own behind a delaying proxy, {:?} ± {:?} added each way",
                        spec.delay, spec.jitter
                    )
                } else {
                    format!(
                        "in a network namespace of its own, {:?} ± {:?} added each way, {} Mbit/s",
                        spec.delay,
                        spec.jitter,
                        spec.rate_bits_per_s / 1_000_000
                    )
                };
                of_route.insert("remote".into(), far);
            }
            for (k, v) in of_route {
                s.insert(format!("stores.{}.{k}", r.name), v);
            }
            for state in &r.states {
                s.insert(format!("states.{state}"), r.name.clone());
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gadget::config::store_settings::{store_setting, STORE_SETTINGS};

    /// What the stores read are settings of the one list, and every setting of the list is
    /// read by some store of a full build.
    #[test]
    fn stores_read_settings_of_the_one_list() {
        for kind in StoreKind::all() {
            for key in kind.reads() {
                assert!(
                    store_setting(key).is_some(),
                    "{} reads `{key}`, which STORE_SETTINGS lacks",
                    kind.name()
                );
            }
        }
        if StoreKind::all().len() == 12 {
            for setting in STORE_SETTINGS {
                assert!(
                    StoreKind::all()
                        .iter()
                        .any(|k| k.reads_setting(setting.key)),
                    "no store reads `{}`",
                    setting.key
                );
            }
        }
    }
}
