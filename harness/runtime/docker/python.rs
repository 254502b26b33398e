//! What a torch cell's container needs from this machine: shmbench's image has no Python, so the
//! cell's Python (its venv and the installation it was made from) and the system libraries it
//! loads are mounted read-only at the same paths; the container gets a tmpfs on /tmp
//! ([`tmp_mount`]: torch's file_system strategy talks to `torch_shm_manager` through a socket
//! there). No registry is needed and the torch that runs is exactly the one `--python` names.

use std::path::Path;

use cell::torch;

/// Directories of the system's shared libraries, mounted when they exist (Debian's merged /usr
/// makes /lib and /lib64 links into it; the links resolve on mount).
const SYSTEM_DIRS: &[&str] = &["/usr", "/lib", "/lib64", "/etc/ld.so.cache"];

/// Mounts and the interpreter path for a torch cell.
pub struct PythonInContainer {
    /// The interpreter to run inside (absolute: the container has no PATH entry for it).
    pub executable: String,
    /// `host:container:ro` binds.
    pub binds: Vec<String>,
}

pub fn prepare(python: &str) -> Result<PythonInContainer, torch::PythonError> {
    let (executable, dirs) = torch::locate(python)?;
    let mut binds: Vec<String> = SYSTEM_DIRS
        .iter()
        .filter(|d| Path::new(d).exists())
        .map(|d| format!("{d}:{d}:ro"))
        .collect();
    for dir in dirs {
        // Under /usr already when the Python is the system's.
        if !SYSTEM_DIRS.iter().any(|s| dir.starts_with(s)) {
            binds.push(format!("{dir}:{dir}:ro"));
        }
    }
    Ok(PythonInContainer { executable, binds })
}

/// The /tmp a torch cell needs in a read-only container (path, tmpfs options).
pub fn tmp_mount() -> (String, String) {
    ("/tmp".to_string(), "size=64m,mode=1777".to_string())
}
