//! `gadget run`'s and `gadget replay`'s store flags, made from the one list of store settings
//! (`gadget::config::store_settings::STORE_SETTINGS`): each flag's name, help, value name,
//! environment variable and check come from its entry, so a setting added there is a flag,
//! a config key and an experiment key at once.

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use gadget::config::store_settings::{GivenSetting, SettingValue, StoreSetting, STORE_SETTINGS};

/// The store settings given on the command line (or by their environment variables).
#[derive(Debug, Clone, Default)]
pub struct StoreFlags {
    /// Each setting given, in the list's order, with its flag (or variable) as origin.
    pub given: Vec<GivenSetting>,
    /// The keys of those given by an environment variable rather than a flag: set for every
    /// command, so not warned about when the store does not read them.
    pub from_env: Vec<&'static str>,
}

impl StoreFlags {
    /// The flag of `setting`, as `--help` shows it.
    fn arg(setting: &'static StoreSetting) -> Arg {
        let arg = Arg::new(setting.key)
            .long(setting.key.replace('_', "-"))
            .help(setting.doc);
        let arg = match setting.value {
            SettingValue::Switch => arg.action(ArgAction::SetTrue),
            _ => arg
                .value_name(setting.value_name)
                .value_parser(move |text: &str| setting.parse(text)),
        };
        match setting.env {
            Some(var) => arg.env(var),
            None => arg,
        }
    }
}

impl FromArgMatches for StoreFlags {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = StoreFlags::default();
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.given.clear();
        self.from_env.clear();
        for setting in STORE_SETTINGS {
            let value = match setting.value {
                SettingValue::Switch => matches
                    .get_flag(setting.key)
                    .then_some(gadget::config::store_settings::Value::Switch(true)),
                _ => matches.get_one(setting.key).cloned(),
            };
            let Some(value) = value else { continue };
            let origin = match (matches.value_source(setting.key), setting.env) {
                (Some(ValueSource::EnvVariable), Some(var)) => {
                    self.from_env.push(setting.key);
                    var.to_string()
                }
                _ => setting.flag(),
            };
            self.given.push(GivenSetting {
                setting,
                value,
                origin,
            });
        }
        Ok(())
    }
}

impl Args for StoreFlags {
    fn augment_args(cmd: Command) -> Command {
        STORE_SETTINGS
            .iter()
            .fold(cmd, |cmd, setting| cmd.arg(StoreFlags::arg(setting)))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        StoreFlags::augment_args(cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gadget::config::store_settings::Value;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        store: StoreFlags,
    }

    fn parse(args: &[&str]) -> Result<StoreFlags, clap::Error> {
        use clap::Parser;
        Cli::try_parse_from(std::iter::once("gadget").chain(args.iter().copied())).map(|c| c.store)
    }

    #[test]
    fn every_store_setting_is_a_flag_with_its_help() {
        use clap::CommandFactory;
        let cmd = Cli::command();
        for setting in STORE_SETTINGS {
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_id() == setting.key)
                .unwrap_or_else(|| panic!("no flag for {}", setting.key));
            assert_eq!(
                format!("--{}", arg.get_long().unwrap()),
                setting.flag(),
                "{}",
                setting.key
            );
            assert_eq!(arg.get_help().unwrap().to_string(), setting.doc);
        }
    }

    #[test]
    fn flags_are_read_and_checked_by_their_entry() {
        let flags = parse(&["--write-buffer-mb", "64", "--wal", "--redis-timeout", "2s"]).unwrap();
        let given: Vec<(&str, &Value, &str)> = flags
            .given
            .iter()
            .filter(|g| !flags.from_env.contains(&g.setting.key))
            .map(|g| (g.setting.key, &g.value, g.origin.as_str()))
            .collect();
        assert_eq!(
            given,
            [
                ("write_buffer_mb", &Value::Int(64), "--write-buffer-mb"),
                ("wal", &Value::Switch(true), "--wal"),
                (
                    "redis_timeout",
                    &Value::Time(2_000_000_000),
                    "--redis-timeout"
                ),
            ]
        );
        let e = parse(&["--write-buffer-mb", "0"]).unwrap_err().to_string();
        assert!(e.contains("out of range; allowed: [1, 1048576]"), "{e}");
        let e = parse(&["--redis-placement", "x"]).unwrap_err().to_string();
        assert!(e.contains("native, aligned, replicated"), "{e}");
    }
}
