//! The `gadget` command: a thin shell over the `gadget` library.

mod analyze_cmd;
mod bench_cmd;
mod cli;
mod cluster_cmd;
mod diff_instances;
mod eval_cmd;
mod gen;
mod interrupt;
mod merge_cmd;
mod progress;
mod reads_cmd;
mod record_cmd;
mod run_context;
mod stdout;
mod store_dir;
mod store_flags;
mod subtask;
mod trace_cmd;
mod trace_read;

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
            eprintln!("error: {}", describe(&e));
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
        cli::Command::Compare(a) => analyze_cmd::compare(a),
        cli::Command::Bench(a) => bench_cmd::bench(a),
        cli::Command::Merge(a) => merge_cmd::merge(a),
        cli::Command::Cluster(a) => cluster_cmd::cluster(a),
        cli::Command::Record(r) => match r.engine {
            cli::RecordEngine::Flink(a) => record_cmd::flink(a),
            cli::RecordEngine::KafkaStreams(a) => record_cmd::kafka_streams(a),
            cli::RecordEngine::Spark(a) => record_cmd::spark(a),
        },
    }
}

/// The error and its causes, each said once: a message that already holds its cause's text
/// (`cannot open t.gtrace: No such file or directory (os error 2)`) does not get it again.
fn describe(e: &anyhow::Error) -> String {
    let mut said = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if said.contains(&text) {
            continue;
        }
        if !said.is_empty() {
            said.push_str(": ");
        }
        said.push_str(&text);
    }
    said
}

#[cfg(test)]
mod tests {
    use super::describe;
    use anyhow::Context;

    #[test]
    fn a_cause_already_in_its_message_is_said_once() {
        let io = std::io::Error::from_raw_os_error(2);
        let os = io.to_string();
        // as an error type that prints its source and also returns it as its cause
        let e = Err::<(), _>(io)
            .with_context(|| format!("cannot open t.gtrace: {os}"))
            .context("replaying")
            .unwrap_err();
        let said = describe(&e);
        assert_eq!(said, format!("replaying: cannot open t.gtrace: {os}"));
        assert_eq!(said.matches(&os).count(), 1, "{said}");
    }
}
