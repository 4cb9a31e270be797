//! Editing a bundled config for a test: set keys, each in its section.

use std::path::Path;

/// `base` (a config file) with `edits` applied: `key` replaces the first line that sets it; a
/// key not in the file goes into `[operator]`, or into `[section]` when named `section.key`;
/// an empty value removes the key's lines. `path` of the source is set to `input`.
pub fn edited(base: &Path, input: &Path, edits: &[(&str, &str)]) -> String {
    let mut lines: Vec<String> = std::fs::read_to_string(base)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let mut set = |key: &str, value: &str| {
        let (section, key) = key.rsplit_once('.').unwrap_or(("operator", key));
        if value.is_empty() {
            lines.retain(|l| !l.starts_with(&format!("{key} =")));
            return;
        }
        let line = format!("{key} = {value}");
        match lines
            .iter()
            .position(|l| l.starts_with(&format!("{key} =")))
        {
            Some(i) => lines[i] = line,
            None => {
                let header = format!("[{section}]");
                let at = lines.iter().position(|l| *l == header).unwrap();
                lines.insert(at + 1, line);
            }
        }
    };
    set("path", &format!("{:?}", input.to_str().unwrap()));
    for (k, v) in edits {
        set(k, v);
    }
    lines.join("\n") + "\n"
}
