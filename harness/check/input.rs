//! The files `shmbench check` reads: files as given (any name), the deployment files inside
//! directories (YAML, JSON, shell and Slurm scripts, compose files, Makefiles), `-` for stdin.
//! Bounded: directories are walked once each by device and inode (a symlink loop is named, not
//! followed round), at most [`MAX_DEPTH`] deep; a file over [`MAX_BYTES`], a binary file, one
//! that is not UTF-8, or a path named that is no regular file (a FIFO, a device, a socket: never
//! opened to block) is a problem named with its path, and the rest is still checked.

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Larger than any deployment file; a larger one is refused, not read.
pub const MAX_BYTES: u64 = 16 << 20;
/// Directories deeper than this are not walked.
pub const MAX_DEPTH: usize = 32;

/// An input that could not be checked (exit 2): where, and why.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Problem {
    pub file: String,
    pub line: Option<usize>,
    pub reason: String,
}

impl Problem {
    pub fn new(file: &Path, reason: impl Into<String>) -> Problem {
        Problem {
            file: file.display().to_string(),
            line: None,
            reason: reason.into(),
        }
    }
}

/// Whether a file in a directory is one to check, by its name.
fn wanted(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let ext = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or_default();
    matches!(
        ext,
        "yaml" | "yml" | "json" | "sh" | "bash" | "sbatch" | "slurm"
    ) || lower == "makefile"
        || lower.starts_with("docker-compose")
        || lower.starts_with("compose.")
}

/// Directories never walked into: version control, dependencies, build output.
fn skipped(name: &str) -> bool {
    matches!(
        name,
        ".git" | "node_modules" | "target" | ".venv" | "venv" | "__pycache__"
    )
}

/// What a walk found: the files to check, the paths that could not be read (exit 2) and the
/// directories not walked on purpose (a loop, too deep), said but not failed on.
#[derive(Default)]
pub struct Gathered {
    pub files: Vec<PathBuf>,
    pub problems: Vec<Problem>,
    pub skipped: Vec<Problem>,
}

/// Every file to check under `paths`.
pub fn gather(paths: &[PathBuf]) -> Gathered {
    let mut out = Gathered::default();
    let mut seen = HashSet::new();
    for path in paths {
        if path.as_os_str() == "-" {
            out.files.push(path.clone());
            continue;
        }
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => walk(path, 0, &mut seen, &mut out),
            Ok(m) if m.is_file() => out.files.push(path.clone()),
            Ok(m) => out.problems.push(not_regular(path, &m)),
            Err(e) => out
                .problems
                .push(Problem::new(path, format!("cannot read it: {e}"))),
        }
    }
    out
}

fn walk(dir: &Path, depth: usize, seen: &mut HashSet<(u64, u64)>, out: &mut Gathered) {
    let Ok(meta) = std::fs::metadata(dir) else {
        return;
    };
    if !seen.insert((meta.dev(), meta.ino())) {
        out.skipped.push(Problem::new(
            dir,
            "a directory already walked (a symlink loop, or named twice): not walked again",
        ));
        return;
    }
    if depth >= MAX_DEPTH {
        out.skipped.push(Problem::new(
            dir,
            format!("deeper than {MAX_DEPTH} directories: not walked"),
        ));
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            return out
                .problems
                .push(Problem::new(dir, format!("cannot list it: {e}")))
        }
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() && !skipped(&name) => walk(&path, depth + 1, seen, out),
            Ok(m) if m.is_file() && wanted(&name) => out.files.push(path),
            _ => {}
        }
    }
}

/// The problem of a path that is neither a file nor a directory: reading a FIFO or a device
/// could block forever or never end, so it is not opened (`-` reads stdin, whatever it is).
fn not_regular(path: &Path, meta: &std::fs::Metadata) -> Problem {
    let kind = meta.file_type();
    let what = if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    };
    Problem::new(
        path,
        format!("{what}: only regular files are read (- reads stdin)"),
    )
}

/// A file opened without blocking (a FIFO swapped in after the walk looked would block an
/// open for reading until a writer came) and held to be a regular file by its descriptor.
fn open_regular(path: &Path) -> Result<std::fs::File, Problem> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| Problem::new(path, format!("cannot read it: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| Problem::new(path, format!("cannot read it: {e}")))?;
    if !meta.is_file() {
        return Err(not_regular(path, &meta));
    }
    Ok(file)
}

/// A file's text: at most [`MAX_BYTES`], not binary, UTF-8.
pub fn read(path: &Path) -> Result<String, Problem> {
    let mut bytes = Vec::new();
    let limit = MAX_BYTES + 1;
    let read = if path.as_os_str() == "-" {
        std::io::stdin().take(limit).read_to_end(&mut bytes)
    } else {
        open_regular(path)?.take(limit).read_to_end(&mut bytes)
    };
    read.map_err(|e| Problem::new(path, format!("cannot read it: {e}")))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(Problem::new(
            path,
            format!(
                "larger than {} MiB: not a deployment file shmbench reads",
                MAX_BYTES >> 20
            ),
        ));
    }
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return Err(Problem::new(path, "a binary file (NUL bytes): not checked"));
    }
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        Problem {
            line: Some(line),
            ..Problem::new(path, "not UTF-8 text")
        }
    })
}
