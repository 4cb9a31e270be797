//! The `gadget` command: a thin shell over the `gadget` library.

mod cli;
mod gen;
mod progress;
mod trace_cmd;

use clap::Parser;

fn main() {
    let args = cli::Cli::parse();
    if let Err(e) = run(args) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: cli::Cli) -> anyhow::Result<()> {
    match args.command {
        cli::Command::Gen(a) => gen::run(a),
        cli::Command::Trace(t) => match t.command {
            cli::TraceCommand::Convert(a) => trace_cmd::convert(a),
            cli::TraceCommand::Diff(a) => trace_cmd::diff(a),
        },
    }
}
