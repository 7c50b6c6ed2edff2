use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use tidal::{
    cli::{self, Cli},
    runtime::logs,
};
use tokio_util::sync::CancellationToken;

tidal::global_allocator!();

fn main() -> ExitCode {
    let cli = Cli::parse();
    logs::init(cli.command.log_format(), cli.command.default_log_level());
    let result = if cli.command.is_live() {
        live(&cli.command)
    } else {
        cli::run_offline(&cli.command).and_then(|out| cli::print(&out))
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            logs::say(&format!("error: {error:#}"));
            ExitCode::FAILURE
        }
    }
}

/// Commands that talk to a cluster run on a tokio runtime; SIGTERM and Ctrl-C ask them to stop.
fn live(command: &cli::Command) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let shutdown = CancellationToken::new();
        tokio::spawn(stop_on_signal(shutdown.clone()));
        match cli::run_live(command, shutdown).await? {
            Some(out) => cli::print(&out),
            None => Ok(()),
        }
    })
}

async fn stop_on_signal(shutdown: CancellationToken) {
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    // No one reads the logs any more (`tidal run 2>&1 | head`): stop as a closed pipe stops any
    // other command, cleanly.
    let stderr_closed = logs::stderr_closed();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
        () = stderr_closed.cancelled() => {}
    }
    shutdown.cancel();
    tracing::info!("signal received or stderr closed: shutting down");
}
