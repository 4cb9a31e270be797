//! A progress bar on standard error, shown only when it is a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A spinner with a live request count; hidden when stderr is not a terminal.
pub fn spinner(what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {prefix} {msg} [{elapsed_precise}]")
            .expect("valid progress template"),
    );
    bar.set_prefix(what.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}
