//! Installing Debian packages: as root through apt-get (the package lists are refreshed once per
//! run); otherwise a clear error naming the packages and the command to run.

use std::sync::Once;

use crate::host::run;

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

/// Installs `packages` with apt-get.
pub fn install(packages: &[&str]) -> anyhow::Result<()> {
    let command = format!(
        "sudo apt-get update && sudo apt-get install -y {}",
        packages.join(" ")
    );
    if !is_root() {
        return Err(anyhow::anyhow!(
            "needs the Debian package(s) {}, and installing them needs root: run\n    {command}\nthen run this again",
            packages.join(", ")
        ));
    }
    if !crate::host::on_path("apt-get") {
        return Err(anyhow::anyhow!(
            "needs the package(s) {} and there is no apt-get here: install them with your distribution's package manager",
            packages.join(", ")
        ));
    }
    update()?;
    let mut args = vec!["apt-get", "install", "-y", "-qq"];
    args.extend_from_slice(packages);
    run(&args)
}

/// Refreshes the package lists, once per run.
pub fn update() -> anyhow::Result<()> {
    static UPDATED: Once = Once::new();
    let mut updated = Ok(());
    UPDATED.call_once(|| updated = run(&["apt-get", "update", "-qq"]));
    updated
}
