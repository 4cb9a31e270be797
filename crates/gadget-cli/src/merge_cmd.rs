//! `gadget merge`: the results of a run's shards as one run's results (the merging itself is
//! `gadget_eval::merge`'s).

use std::path::{Path, PathBuf};

use gadget::atomic::refuse_overwriting_an_input;
use gadget_eval::export::{self, Json, Text};
use gadget_eval::merge::{merge_files, MergeOptions};

use crate::stdout::out;

/// `gadget merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The results files of one run's shards (each written by `gadget run -o` or
    /// `gadget replay -o`), in any order.
    #[arg(required = true, num_args = 1.., value_name = "RESULTS")]
    pub results: Vec<PathBuf>,
    /// Write the merged results to this file (atomically); `-` prints them on standard output
    /// instead, with the summary on standard error.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print the merged results as JSON on standard output instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// A name for the merged run, kept in its results (`context.label`); default: the shards'
    /// own, when they agree.
    #[arg(long)]
    pub label: Option<String>,
}

/// Merges, writes and prints; the exit status.
pub fn merge(args: MergeArgs) -> anyhow::Result<i32> {
    let file = args.output.as_ref().filter(|o| o.as_os_str() != "-");
    if let Some(path) = file {
        let inputs: Vec<&Path> = args.results.iter().map(PathBuf::as_path).collect();
        refuse_overwriting_an_input("-o", path, &inputs).map_err(anyhow::Error::msg)?;
    }
    let options = MergeOptions {
        label: args.label.clone(),
        command_line: std::env::args().collect(),
    };
    let merged = merge_files(&args.results, &options)?;
    // written before printing, but a failure (a full disk) is said after the summary: what was
    // merged is printed, and kept in the fallback file the error names
    let written = file.map(|path| export::to_file(&Json, &merged, path));
    let to_stdout = args.output.as_ref().is_some_and(|o| o.as_os_str() == "-");
    if args.json || to_stdout {
        out!("{}", export::render(&Json, &merged));
        if to_stdout && !args.json {
            eprint!("{}", export::render(&Text, &merged));
        } else {
            for w in merged.warnings() {
                eprintln!("warning: {w}");
            }
        }
    } else {
        out!("{}", export::render(&Text, &merged));
    }
    if let Some(Err(e)) = written {
        return Err(e.into());
    }
    if let Some(path) = file {
        let n = merged.shards.len();
        eprintln!(
            "wrote the merged results of {n} shard{} to {}",
            if n == 1 { "" } else { "s" },
            path.display()
        );
    }
    Ok(0)
}
