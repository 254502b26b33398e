//! How a cell starts another copy of shmbench (its emulated workers). Normally through
//! `/proc/self/exe`. In a user's own image (`--image`) the binary runs through its own dynamic
//! loader, mounted beside it (`LOADER --library-path LIB BINARY`), because the image's libc may
//! not be the one it was linked against; there /proc/self/exe is that loader, so the runtime says
//! where the mounted copy lives in [`BUNDLE_ENV`] and re-execs go through the loader as well.

use std::path::Path;
use std::process::Command;

/// Directory of a mounted shmbench bundle: `ld.so`, `lib/`, `shmbench` (see
/// `runtime::docker::bundle`).
pub const BUNDLE_ENV: &str = "SHMBENCH_BUNDLE";

/// The bundle's layout, relative to its directory.
pub const BUNDLE_LOADER: &str = "ld.so";
pub const BUNDLE_LIBS: &str = "lib";
pub const BUNDLE_BINARY: &str = "shmbench";

/// The argv that runs the bundle in `dir`, loader first.
pub fn bundle_argv(dir: &str) -> Vec<String> {
    let join = |name: &str| Path::new(dir).join(name).display().to_string();
    vec![
        join(BUNDLE_LOADER),
        "--library-path".into(),
        join(BUNDLE_LIBS),
        join(BUNDLE_BINARY),
    ]
}

/// A command that runs this shmbench again (arguments to be added by the caller).
pub fn self_command() -> Command {
    match std::env::var(BUNDLE_ENV) {
        Ok(dir) if !dir.is_empty() => {
            let argv = bundle_argv(&dir);
            let mut cmd = Command::new(&argv[0]);
            cmd.args(&argv[1..]);
            cmd
        }
        _ => Command::new("/proc/self/exe"),
    }
}
