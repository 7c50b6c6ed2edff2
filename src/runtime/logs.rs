//! How tidal logs: text or JSON lines on stderr, level from `$TIDAL_LOG` (default: `info` for the
//! processes, `warn` for the offline commands).

use clap::ValueEnum;

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
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => logs.json().init(),
        LogFormat::Text => logs.init(),
    }
}
