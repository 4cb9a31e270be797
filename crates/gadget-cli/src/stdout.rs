//! Standard output that may be closed: `gadget gen … | head -1` must not panic when `head`
//! exits. What a command prints goes through [`out!`] and [`outln!`], which drop the text once
//! the reader is gone (the command goes on: files it writes are still written), as Unix tools
//! stop printing without a fuss.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once standard output failed (its reader closed it).
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Prints `args` to standard output, unless it is closed; a closed pipe is remembered, so the
/// rest of the output is skipped.
pub fn print(args: std::fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if out.write_fmt(args).and_then(|()| out.flush()).is_err() {
        CLOSED.store(true, Ordering::Relaxed);
    }
}

/// `print!` to a standard output that may be closed.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::stdout::print(format_args!($($arg)*))
    };
}

/// `println!` to a standard output that may be closed.
macro_rules! outln {
    () => {
        $crate::stdout::print(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::stdout::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {out, outln};

/// True when `e` comes from writing to a pipe whose reader is gone: the command then ends
/// quietly, as Unix tools do.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || cause.to_string().contains("Broken pipe (os error 32)")
    })
}
