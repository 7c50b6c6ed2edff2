//! How tidal logs: text or JSON lines on stderr, level from `$TIDAL_LOG` (default: `info` for the
//! processes, `warn` for the offline commands).
//!
//! stderr may be a pipe whose reader has gone (`tidal run 2>&1 | head`). Rust ignores SIGPIPE, so
//! the process would run on, writing to no one, and `eprintln!` (which tracing itself falls back
//! on when a write fails) panics wherever it happens to be called, killing the task that logged,
//! the signal handler included. Every write to stderr goes through [`Stderr`] instead: a closed
//! pipe is noted in [`stderr_closed`], which the long-running commands treat as SIGTERM.

use std::{
    io::{self, Write},
    sync::OnceLock,
};

use clap::ValueEnum;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Installs the global subscriber, at `default_level` unless `$TIDAL_LOG` says otherwise. Call once,
/// before anything logs.
pub fn init(format: LogFormat, default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TIDAL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    // Colour only for a person at a terminal: in a file, a pipe or a log collector the escape codes
    // are noise.
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(Stderr)
        .log_internal_errors(false);
    match format {
        LogFormat::Json => logs.json().init(),
        LogFormat::Text => logs.init(),
    }
}

/// Cancelled the first time a write to stderr finds the pipe closed.
pub fn stderr_closed() -> CancellationToken {
    static CLOSED: OnceLock<CancellationToken> = OnceLock::new();
    CLOSED.get_or_init(CancellationToken::new).clone()
}

/// One line for the person at the terminal (a warning, the final error) on stderr; nothing happens
/// when no one reads stderr any more.
pub fn say(line: &str) {
    let _ = Stderr.write_all(format!("{line}\n").as_bytes());
}

/// stderr, noting a closed pipe in [`stderr_closed`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Stderr;

impl Stderr {
    fn noted<T>(result: io::Result<T>) -> io::Result<T> {
        if let Err(error) = &result
            && error.kind() == io::ErrorKind::BrokenPipe
        {
            stderr_closed().cancel();
        }
        result
    }
}

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Self::noted(io::stderr().write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        // One call, so that concurrent lines do not interleave (stderr is unbuffered).
        Self::noted(io::stderr().lock().write_all(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        Self::noted(io::stderr().flush())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Stderr {
    type Writer = Stderr;

    fn make_writer(&'a self) -> Stderr {
        Stderr
    }
}
