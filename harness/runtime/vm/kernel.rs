//! The kernel a VM boots: a bzImage by path, or `debian:VERSION`, Debian's
//! `linux-image-VERSION` package fetched with `apt-get download` and unpacked with `dpkg-deb -x`
//! once into the cache (`~/.cache/shmbench/kernels/VERSION/vmlinuz`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::cache_dir;

/// The bzImage `spec` names, fetched first when it is a Debian package.
pub fn resolve(spec: &str) -> Result<PathBuf> {
    match spec.strip_prefix("debian:") {
        Some(version) => debian(version),
        None => {
            let path = PathBuf::from(spec);
            if let Some(problem) = not_a_bzimage(&path) {
                bail!("--kernel {spec}: {problem}; give a bzImage's path, or debian:VERSION (e.g. debian:6.1.0-57-cloud-amd64)");
            }
            Ok(path)
        }
    }
}

/// Why `path` is not a kernel QEMU can boot with -kernel: missing, not a regular file (a device
/// like /dev/zero, a directory), or without the x86 boot protocol's `HdrS` header at 0x202.
fn not_a_bzimage(path: &Path) -> Option<String> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some("no such file".into()),
        Err(e) => return Some(format!("cannot use it ({e})")),
    };
    if !meta.is_file() {
        return Some("is not a regular file".into());
    }
    let mut header = [0u8; 0x206];
    let read =
        std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut header));
    match read {
        Ok(()) if &header[0x202..] == b"HdrS" => None,
        Ok(()) | Err(_) => Some("is not a Linux bzImage (no boot header 'HdrS' at 0x202)".into()),
    }
}

fn debian(version: &str) -> Result<PathBuf> {
    if version.is_empty()
        || !version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-+~".contains(c))
    {
        bail!("--kernel debian:{version}: write a Debian kernel version, e.g. debian:6.1.0-57-cloud-amd64");
    }
    let dir = cache_dir()?.join("kernels").join(version);
    let image = dir.join("vmlinuz");
    if image.is_file() {
        return Ok(image);
    }
    let package = format!("linux-image-{version}");
    let work = tempfile::Builder::new()
        .prefix("shmbench-kernel-")
        .tempdir()
        .context("cannot make a temporary directory")?;
    let out = Command::new("apt-get")
        .args(["download", &package])
        .current_dir(work.path())
        .output()
        .context("--kernel debian:...: apt-get is not here; give a bzImage's path instead")?;
    if !out.status.success() {
        bail!(
            "apt-get download {package} failed: {}. `apt-get update` first, and `apt-cache search linux-image- | grep cloud` lists the versions there are",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let deb = std::fs::read_dir(work.path())?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
        .context("apt-get download left no .deb")?;
    let unpacked = work.path().join("root");
    let status = Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(&unpacked)
        .status()
        .context("dpkg-deb is not here: it unpacks the kernel package")?;
    if !status.success() {
        bail!("dpkg-deb -x {} failed ({status})", deb.display());
    }
    let found = find_vmlinuz(&unpacked.join("boot"))
        .with_context(|| format!("{package} holds no boot/vmlinuz-*"))?;
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Copied under a temporary name, then renamed: a cache entry is whole or absent.
    let partial = dir.join("vmlinuz.partial");
    std::fs::copy(&found, &partial)
        .with_context(|| format!("cannot write {}", partial.display()))?;
    std::fs::rename(&partial, &image)?;
    Ok(image)
}

fn find_vmlinuz(boot: &Path) -> Option<PathBuf> {
    std::fs::read_dir(boot)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz-"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bzimage_is_a_kernel() {
        assert_eq!(
            not_a_bzimage(Path::new("/nonexistent")).as_deref(),
            Some("no such file")
        );
        assert_eq!(
            not_a_bzimage(Path::new("/dev/zero")).as_deref(),
            Some("is not a regular file")
        );
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, vec![b'x'; 4096]).unwrap();
        assert!(not_a_bzimage(&text)
            .unwrap()
            .contains("not a Linux bzImage"));
        let mut image = vec![0u8; 4096];
        image[0x202..0x206].copy_from_slice(b"HdrS");
        let kernel = dir.path().join("vmlinuz");
        std::fs::write(&kernel, image).unwrap();
        assert_eq!(not_a_bzimage(&kernel), None);
    }
}
