//! The container image shmbench builds for itself: there is no registry to pull from, so the
//! image is `FROM scratch` plus the running harness binary and the shared libraries it has mapped
//! (the dynamic loader, libc, libgcc_s), built through the API from an in-memory tar. It is
//! tagged by the content's hash, so it is built once and reused until the binary changes; building
//! a new one removes the images of earlier binaries. The same files make the VM runtime's
//! initramfs (`runtime/vm/initramfs.rs`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use futures_util::StreamExt;
use sha2::{Digest, Sha256};

use super::engine::Engine;
use sys::image_use;

/// Repository name of every image shmbench builds.
pub const REPOSITORY: &str = "shmbench";
/// Label that marks them (for listing and removal).
pub const LABEL: &str = "org.shmbench.image";
/// Where the binary lives in the image; the cell's workers re-exec it through /proc/self/exe.
pub const BINARY_IN_IMAGE: &str = "/shmbench";

/// The files that make up the image: (path in the image, contents).
pub struct BuildContext {
    files: Vec<(String, Vec<u8>)>,
    /// The ELF interpreter's path among `files` (None for a static binary).
    interpreter: Option<String>,
    pub tag: String,
}

/// Shared objects this process has mapped, from /proc/self/maps.
fn mapped_libraries() -> Result<Vec<PathBuf>> {
    let maps = std::fs::read_to_string("/proc/self/maps").context("reading /proc/self/maps")?;
    let exe = std::fs::read_link("/proc/self/exe").ok();
    let mut libs: Vec<PathBuf> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.starts_with('/') && (p.ends_with(".so") || p.contains(".so.")))
        .map(PathBuf::from)
        .filter(|p| Some(p) != exe.as_ref())
        .collect();
    libs.sort();
    libs.dedup();
    Ok(libs)
}

/// The ELF program interpreter (PT_INTERP) a dynamically linked binary names, e.g.
/// `/lib64/ld-linux-x86-64.so.2`: the kernel execs it by that exact path, which /proc/self/maps
/// shows only after symlinks are resolved.
fn elf_interpreter(binary: &[u8]) -> Option<String> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(binary.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(binary.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(binary.get(o..o + 8)?.try_into().ok()?));
    // 64-bit little-endian ELF only (the platforms shmbench runs on).
    if binary.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let phoff = u64_at(0x20)? as usize;
    let phentsize = u16_at(0x36)? as usize;
    let phnum = u16_at(0x38)? as usize;
    (0..phnum).find_map(|i| {
        let ph = phoff + i * phentsize;
        if u32_at(ph)? != 3 {
            return None; // not PT_INTERP
        }
        let offset = u64_at(ph + 0x08)? as usize;
        let size = u64_at(ph + 0x20)? as usize;
        let raw = binary.get(offset..offset + size)?;
        Some(
            String::from_utf8_lossy(raw)
                .trim_end_matches('\0')
                .to_string(),
        )
    })
}

impl BuildContext {
    /// Collects the running binary and its libraries.
    pub fn of_this_binary() -> Result<BuildContext> {
        let binary =
            std::fs::read("/proc/self/exe").context("reading the running shmbench binary")?;
        // Shipped without its debug info (the host's copy keeps it for backtraces).
        let binary = sys::elf_strip::without_debug_info(&binary);
        let interpreter = elf_interpreter(&binary);
        let mut files = vec![(BINARY_IN_IMAGE.to_string(), binary)];
        for lib in mapped_libraries()? {
            let bytes =
                std::fs::read(&lib).with_context(|| format!("reading {}", lib.display()))?;
            files.push((lib.display().to_string(), bytes));
        }
        if let Some(interp) = interpreter
            .as_ref()
            .filter(|i| !files.iter().any(|(p, _)| p == *i))
        {
            let bytes = std::fs::read(interp)
                .with_context(|| format!("reading the ELF interpreter {interp}"))?;
            files.push((interp.clone(), bytes));
        }
        files.sort();
        let mut hash = Sha256::new();
        for (path, bytes) in &files {
            hash.update(path.as_bytes());
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(bytes);
        }
        let digest = hash.finalize();
        let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
        Ok(BuildContext {
            files,
            interpreter,
            tag: format!("{REPOSITORY}:{hex}"),
        })
    }

    /// Every file: (absolute path, bytes).
    pub fn files(&self) -> &[(String, Vec<u8>)] {
        &self.files
    }

    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|(p, _)| p.as_str())
    }

    /// The content hash (the tag's version part).
    pub fn hash(&self) -> &str {
        self.tag.rsplit(':').next().unwrap_or(&self.tag)
    }

    /// The binary's bytes.
    pub fn binary(&self) -> &[u8] {
        self.file(BINARY_IN_IMAGE).unwrap_or_default()
    }

    /// The ELF interpreter's bytes, when the binary is dynamically linked.
    pub fn interpreter(&self) -> Option<&[u8]> {
        self.file(self.interpreter.as_deref()?)
    }

    /// The shared libraries other than the interpreter: (file name, bytes).
    pub fn libraries(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.files
            .iter()
            .filter(|(p, _)| p != BINARY_IN_IMAGE && Some(p) != self.interpreter.as_ref())
            .map(|(p, bytes)| (p.rsplit('/').next().unwrap_or(p), bytes.as_slice()))
    }

    fn file(&self, path: &str) -> Option<&[u8]> {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, b)| b.as_slice())
    }

    /// The build context as a tar: the files plus a Dockerfile.
    fn tar(&self) -> Result<Vec<u8>> {
        let dockerfile = format!(
            "FROM scratch\nCOPY rootfs/ /\nLABEL {LABEL}=1\nENTRYPOINT [\"{BINARY_IN_IMAGE}\"]\n"
        );
        let mut builder = tar::Builder::new(Vec::new());
        let mut add = |path: &str, bytes: &[u8], mode: u32| -> Result<()> {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(mode);
            header.set_mtime(0);
            builder.append_data(&mut header, path, bytes)?;
            Ok(())
        };
        add("Dockerfile", dockerfile.as_bytes(), 0o644)?;
        for (path, bytes) in &self.files {
            let inside = Path::new("rootfs").join(path.trim_start_matches('/'));
            add(&inside.display().to_string(), bytes, 0o755)?;
        }
        Ok(builder.into_inner()?)
    }
}

/// Whether the engine has this image.
pub fn exists(engine: &Engine, tag: &str) -> bool {
    engine.block_on(engine.docker().inspect_image(tag)).is_ok()
}

/// A build the engine reported done, of an image it does not have.
#[derive(Debug, thiserror::Error)]
#[error("the engine reported a successful build but has no image {0}")]
struct Gone(String);

/// Builds the image; returns how long the build took.
pub fn build(engine: &Engine, context: &BuildContext) -> Result<Duration> {
    let started = Instant::now();
    let body = bytes::Bytes::from(context.tar()?);
    let options = bollard::query_parameters::BuildImageOptionsBuilder::default()
        .dockerfile("Dockerfile")
        .t(&context.tag)
        .rm(true)
        .forcerm(true)
        .build();
    engine.block_on(async {
        let mut stream = engine
            .docker()
            .build_image(options, None, Some(bollard::body_full(body)));
        let mut log = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(info) => {
                    if let Some(detail) = info.error_detail {
                        bail!("image build failed: {}", detail.message.unwrap_or_default());
                    }
                    if let Some(line) = info.stream {
                        log.push(line.trim_end().to_string());
                    }
                }
                Err(e) => bail!("image build failed: {e}. Build output: {}", log.join(" | ")),
            }
        }
        Ok(())
    })?;
    if !exists(engine, &context.tag) {
        return Err(Gone(context.tag.clone()).into());
    }
    let took = started.elapsed();
    prune_others(engine, &context.tag);
    Ok(took)
}

/// Makes sure the image for this binary exists; returns its tag and the build time if it had
/// to be built.
pub fn ensure(engine: &Engine) -> Result<(String, Option<Duration>)> {
    let context = BuildContext::of_this_binary()?;
    // Marked as used before it is looked for: no other run may prune it from here on.
    image_use::hold(&context.tag);
    if exists(engine, &context.tag) {
        return Ok((context.tag, None));
    }
    // Built, then gone before it was looked at: another user's `image --remove` (which cannot
    // see this run's mark before the build tags it) removed it between the two. Once more.
    let took = match build(engine, &context) {
        Err(e) if e.is::<Gone>() => build(engine, &context)?,
        other => other?,
    };
    Ok((context.tag, Some(took)))
}

/// Removes shmbench images of other binaries (one per build, ~50 MiB each), so they do not pile
/// up: only those no live run uses (`sys::image_use`: another user's run of another binary may
/// be between two cells), and an image a container still uses is left (removal without force
/// fails for it).
fn prune_others(engine: &Engine, keep: &str) {
    let Ok(images) = list(engine) else { return };
    for image in images.iter().filter(|i| !i.tags.iter().any(|t| t == keep)) {
        let claims: Option<Vec<_>> = image
            .tags
            .iter()
            .map(|t| image_use::claim_unused(t))
            .collect();
        let Some(_unused) = claims else { continue };
        let options = bollard::query_parameters::RemoveImageOptionsBuilder::default().build();
        let _ = engine.block_on(engine.docker().remove_image(&image.id, Some(options), None));
    }
}

/// One shmbench image the engine holds.
pub struct Listed {
    pub tags: Vec<String>,
    pub id: String,
    pub size: i64,
}

pub fn list(engine: &Engine) -> Result<Vec<Listed>> {
    let filters = HashMap::from([("label", vec![LABEL])]);
    let options = bollard::query_parameters::ListImagesOptionsBuilder::default()
        .filters(&filters)
        .build();
    let images = engine
        .block_on(engine.docker().list_images(Some(options)))
        .map_err(|e| anyhow!("listing images: {e}"))?;
    Ok(images
        .into_iter()
        .map(|i| Listed {
            tags: i.repo_tags.iter().map(|t| short_name(t)).collect(),
            id: i.id,
            size: i.size,
        })
        .collect())
}

/// A tag as shmbench names it: Podman lists `shmbench:TAG` as `docker.io/library/shmbench:TAG`
/// (an image built through its Docker-compatible API) or `localhost/shmbench:TAG`, and an image
/// compared or locked under one name must be the same under the other.
fn short_name(tag: &str) -> String {
    ["docker.io/library/", "localhost/"]
        .iter()
        .find_map(|prefix| tag.strip_prefix(prefix))
        .unwrap_or(tag)
        .to_string()
}

/// Writes the image `tag` as a tar that `docker load` (or a registry push after it) accepts to
/// `out`, through a temporary file beside it, so a failure leaves no partial tar; returns its
/// size in bytes.
pub fn export(engine: &Engine, tag: &str, out: &Path) -> Result<u64> {
    use std::io::Write;
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".shmbench-image-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| anyhow!("cannot write in {}: {e}", dir.display()))?;
    let written = engine.block_on(async {
        let mut stream = engine.docker().export_image(tag);
        let mut written = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| anyhow!("exporting image {tag}: {e}"))?;
            tmp.write_all(&chunk)?;
            written += chunk.len() as u64;
        }
        anyhow::Ok(written)
    })?;
    tmp.as_file().sync_all()?;
    tmp.persist(out)
        .map_err(|e| anyhow!("cannot write {}: {}", out.display(), e.error))?;
    Ok(written)
}

/// Removes every shmbench image; returns what was removed.
pub fn remove_all(engine: &Engine) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for image in list(engine)? {
        let options = bollard::query_parameters::RemoveImageOptionsBuilder::default()
            .force(true)
            .build();
        engine
            .block_on(engine.docker().remove_image(&image.id, Some(options), None))
            .map_err(|e| anyhow!("removing image {}: {e}", image.id))?;
        removed.push(image.tags.first().cloned().unwrap_or(image.id));
    }
    Ok(removed)
}
