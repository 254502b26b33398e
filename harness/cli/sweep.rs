//! `shmbench sweep`: removes /dev/shm segments left by shmbench runs that died (SIGKILL).

use std::process::ExitCode;

use anyhow::Result;

use crate::cell::loader::segment;

pub fn run() -> Result<ExitCode> {
    let removed = segment::sweep(None);
    if removed.is_empty() {
        println!("nothing to remove: no shmbench segments of dead runs in /dev/shm");
    }
    for r in removed {
        println!("removed {r}");
    }
    Ok(ExitCode::SUCCESS)
}
