//! The `gadget` command: a thin shell over the `gadget` library.

mod analyze_cmd;
mod cli;
mod eval_cmd;
mod gen;
mod interrupt;
mod progress;
mod record_cmd;
mod stdout;
mod trace_cmd;

use clap::Parser;

fn main() {
    let args = cli::Cli::parse();
    match run(args) {
        Ok(0) => {}
        Ok(code) => std::process::exit(code),
        // the reader of standard output is gone (`gadget gen -o - | head`): end quietly, with
        // the status of a process stopped by SIGPIPE, as Unix tools do
        Err(e) if stdout::is_broken_pipe(&e) => std::process::exit(141),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(1);
        }
    }
}

/// Runs a command; its exit status.
fn run(args: cli::Cli) -> anyhow::Result<i32> {
    match args.command {
        cli::Command::Gen(a) => gen::run(a),
        cli::Command::Run(a) => eval_cmd::run(a),
        cli::Command::Replay(a) => eval_cmd::replay(a),
        cli::Command::Trace(t) => match t.command {
            cli::TraceCommand::Convert(a) => trace_cmd::convert(a),
            cli::TraceCommand::Diff(a) => trace_cmd::diff(a).map(|()| 0),
        },
        cli::Command::Analyze(a) => analyze_cmd::analyze(a),
        cli::Command::Compare(a) => analyze_cmd::compare(a).map(|()| 0),
        cli::Command::Record(r) => match r.engine {
            cli::RecordEngine::Flink(a) => record_cmd::flink(a),
        },
    }
}
