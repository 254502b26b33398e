//! The `shmbench` binary: parse the command line, run it, turn the result into an exit status.
//! Everything else is in the library (`harness/lib.rs`, the map is ARCHITECTURE.md).

use std::process::ExitCode;

use clap::Parser;

use shmbench::cli::{self, Cli};

fn main() -> ExitCode {
    // Die quietly when stdout goes away (`shmbench matrix | head`), as command-line tools do,
    // instead of panicking on the write; workers write to sockets with MSG_NOSIGNAL.
    // SAFETY: setting a signal disposition before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Booted as a VM guest's /init (`--runtime vm`): run its cell and power off.
    if shmbench::cell::guest::is_init() {
        shmbench::cell::guest::init();
    }
    match cli::run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("shmbench: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
