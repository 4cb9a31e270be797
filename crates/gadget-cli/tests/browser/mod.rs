//! Headless Chromium for the tests that open a report as a reader would.

use std::path::Path;

/// Headless Chromium, or `None` (the check skipped, saying why) when it is missing outside CI.
pub fn chromium() -> Option<&'static str> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            std::process::Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "chromium is missing, but CI=true: scripts/setup.sh debug installs it"
        );
        eprintln!("skipping the browser check: no chromium (apt-get install chromium)");
    }
    found
}

/// The page `report` as `browser` lays it out (its DOM after scripts ran), with a fresh
/// profile under `scratch`, and what the browser said on standard error.
pub fn rendered(browser: &str, report: &Path, scratch: &Path) -> (String, String) {
    let profile = scratch.join("chromium-profile");
    let out = std::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--virtual-time-budget=5000", "--dump-dom"])
        .arg(format!("file://{}", report.display()))
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
