//! Which store a run drives and how it is set: `--store` over a config's `[run] store` over
//! RocksDB, the config's store settings with the flags over them, and the stores of
//! `[run.stores.NAME]` its states are placed in. Every name is checked here against the
//! stores of this build ([`StoreKind::all`]), and every setting against what its store reads
//! ([`StoreKind::reads_setting`]): a config that contradicts itself is refused at its line, a
//! flag the store ignores is a warning.

use gadget::config::run::RunSettings;
use gadget::config::store_settings::GivenSetting;

use super::{Route, StoreKind, StoreSettings};
use crate::remote::RemoteSpec;

/// The store a run drives, its settings, and what the user should hear about them.
#[derive(Debug, Clone)]
pub struct StoreChoice {
    /// The store.
    pub kind: StoreKind,
    /// Its settings, the config's under the flags', with the routed stores of
    /// `[run.stores.NAME]` in [`StoreSettings::routes`].
    pub settings: StoreSettings,
    /// Settings given that have no effect (a flag, or a config setting `--store` made moot),
    /// each a sentence naming where it was given and what the store reads instead.
    pub warnings: Vec<String>,
}

/// A store or a store setting that cannot be used, with where it was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StoreChoiceError(String);

/// The store settings given on the command line.
#[derive(Debug, Clone, Copy)]
pub struct CommandLine<'a> {
    /// `--store`, if given.
    pub store: Option<&'a str>,
    /// The store settings' flags given, in the list's order, each naming its flag.
    pub settings: &'a [GivenSetting],
    /// The keys of those given by an environment variable, which is set for every command and
    /// so not warned about when the store does not read it.
    pub from_env: &'a [&'static str],
}

impl StoreChoice {
    /// The store and settings of a run: `flags` over `file` (a config's `[run]` section) over
    /// the defaults (RocksDB, [`StoreSettings::default`]).
    pub fn resolve(flags: CommandLine<'_>, file: &RunSettings) -> Result<Self, StoreChoiceError> {
        let (name, given_at) = match (flags.store, &file.store) {
            (Some(flag), _) => (flag, "--store".to_string()),
            (None, Some(key)) => (
                key.as_str(),
                file.store_origin
                    .clone()
                    .unwrap_or_else(|| "run.store".into()),
            ),
            (None, None) => ("rocksdb", String::new()),
        };
        let kind = named(name, &given_at)?;
        let mut warnings = refuse_unread(flags.store.is_some(), kind, file)?;
        let mut settings = StoreSettings::default();
        for given in &file.store_settings {
            settings.set(given).map_err(StoreChoiceError)?;
        }
        for given in flags.settings {
            let key = given.setting.key;
            if !flags.from_env.contains(&key) && !kind.reads_setting(key) {
                warnings.push(format!(
                    "{} has no effect: {}",
                    given.origin,
                    kind.ignores(key)
                ));
            }
            settings.set(given).map_err(StoreChoiceError)?;
        }
        refuse_together(
            kind,
            &settings,
            file.store_settings.iter().chain(flags.settings),
        )?;
        settings.routes = routes(file, &settings, flags.settings)?;
        Ok(StoreChoice {
            kind,
            settings,
            warnings,
        })
    }
}

/// The store called `name`, given at `given_at`.
fn named(name: &str, given_at: &str) -> Result<StoreKind, StoreChoiceError> {
    StoreKind::from_name(name).ok_or_else(|| {
        StoreChoiceError(format!(
            "{given_at}: `{name}` is not a store of this build; use one of: {}",
            StoreKind::names()
        ))
    })
}

/// Refuses a setting of the config's `[run]` section that neither the store the config
/// chooses (its `store`, else rocksdb) nor a store of its `[run.stores]` reads, naming its line:
/// the file contradicts itself. Where `--store` (`store_flag`) chose another store, which does
/// not read it, the setting is only warned about, as a flag would be: a config is often reused
/// across stores from the command line.
fn refuse_unread(
    store_flag: bool,
    kind: StoreKind,
    r: &RunSettings,
) -> Result<Vec<String>, StoreChoiceError> {
    let chosen_by_file = r.store.as_deref().map_or(Some(kind), StoreKind::from_name);
    let routed: Vec<StoreKind> = r
        .stores
        .iter()
        .filter_map(|e| StoreKind::from_name(&e.kind))
        .collect();
    let read_by = |k: StoreKind, setting: &str| {
        k.reads_setting(setting) || routed.iter().any(|s| s.reads_setting(setting))
    };
    let mut warnings = Vec::new();
    for given in &r.store_settings {
        let (setting, origin) = (given.setting.key, &given.origin);
        if let Some(file_kind) = chosen_by_file {
            if !read_by(file_kind, setting) {
                return Err(StoreChoiceError(format!(
                    "{origin}: {}",
                    file_kind.ignores(setting)
                )));
            }
        }
        if store_flag && !read_by(kind, setting) {
            warnings.push(format!(
                "{origin} has no effect with --store {}: {}",
                kind.name(),
                kind.ignores(setting)
            ));
        }
    }
    Ok(warnings)
}

/// Refuses `settings` when `kind` cannot open with them together, as
/// [`refused_together`] says.
fn refuse_together<'a>(
    kind: StoreKind,
    settings: &StoreSettings,
    given: impl Iterator<Item = &'a GivenSetting>,
) -> Result<(), StoreChoiceError> {
    refused_together(kind, settings, given).map_or(Ok(()), |e| Err(StoreChoiceError(e)))
}

/// Why `kind` cannot open with `settings` together ([`super::spec::StoreSpec::refuses`]),
/// known before anything runs, naming where the setting it is about was last given among
/// `given` (a flag over a config's line, an experiment's line); `None` when it can.
pub(crate) fn refused_together<'a>(
    kind: StoreKind,
    settings: &StoreSettings,
    given: impl Iterator<Item = &'a GivenSetting>,
) -> Option<String> {
    let refusal = (kind.spec().refuses)(settings)?;
    let origin = given
        .filter(|g| g.setting.key == refusal.setting)
        .last()
        .map_or_else(
            || format!("the {} store", kind.name()),
            |g| g.origin.clone(),
        );
    Some(format!("{origin}: {}", refusal.why))
}

/// The stores of `[run.stores.NAME]` and the states `[run.states]` places in them, each store
/// with the run's settings but for its own `url`, `placement` and `pipeline`; a store that
/// cannot open with its settings together is refused, naming where (its section's setting,
/// else the run's, else `flags`).
fn routes(
    r: &RunSettings,
    base: &StoreSettings,
    flags: &[GivenSetting],
) -> Result<Vec<Route>, StoreChoiceError> {
    let mut routes = Vec::new();
    for e in &r.stores {
        let kind = named(&e.kind, &e.origin)?;
        let mut settings = StoreSettings {
            routes: Vec::new(),
            ..base.clone()
        };
        for given in &e.settings {
            settings.set(given).map_err(StoreChoiceError)?;
        }
        let given = r.store_settings.iter().chain(flags).chain(&e.settings);
        refuse_together(kind, &settings, given)?;
        let states = r
            .states
            .iter()
            .filter(|(_, store)| *store == e.name)
            .map(|(state, _)| state.clone())
            .collect();
        let remote = e.remote.as_ref().map(|r| {
            let d = RemoteSpec::default();
            RemoteSpec {
                delay: r.delay_ns.map_or(d.delay, std::time::Duration::from_nanos),
                jitter: r
                    .jitter_ns
                    .map_or(d.jitter, std::time::Duration::from_nanos),
                rate_bits_per_s: r.rate_mbit.map_or(d.rate_bits_per_s, |m| m * 1_000_000),
            }
        });
        if let Some(spec) = &remote {
            spec.validate()
                .map_err(|e2| StoreChoiceError(format!("{}: [remote]: {e2}", e.origin)))?;
        }
        routes.push(Route {
            name: e.name.clone(),
            kind,
            settings,
            states,
            remote,
        });
    }
    Ok(routes)
}
