//! The two plain requirements: the programs the tests run (util-linux, strace) and a font for
//! the report's plots.

use std::path::Path;

use crate::apt;
use crate::host::on_path;
use crate::requirement::Requirement;

/// Programs the tests run: unshare (private mount namespaces with a small tmpfs) and prlimit
/// (an fd limit), both from util-linux; strace; systemd-analyze.
pub struct Commands;

impl Requirement for Commands {
    fn name(&self) -> &'static str {
        "unshare and prlimit (util-linux), strace, systemd-analyze"
    }

    fn ensure(&self) -> anyhow::Result<String> {
        let mut installed = Vec::new();
        if !(on_path("unshare") && on_path("prlimit")) {
            apt::install(&["util-linux"])?;
            installed.push("util-linux");
        }
        // The sweep's race test widens a window with strace's fault injection.
        if !on_path("strace") {
            apt::install(&["strace"])?;
            installed.push("strace");
        }
        // The systemd units in integrations/ are checked by `systemd-analyze verify`.
        if !on_path("systemd-analyze") {
            apt::install(&["systemd"])?;
            installed.push("systemd");
        }
        Ok(match installed.is_empty() {
            true => "present".into(),
            false => format!("installed {}", installed.join(", ")),
        })
    }
}

/// A TrueType font for the report's plots (shmbench rasterises text without fontconfig).
pub struct Font;

/// The font shmbench looks for first (see `harness/present/report/font.rs`).
pub const DEJAVU: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

impl Requirement for Font {
    fn name(&self) -> &'static str {
        "a TrueType font for plots"
    }

    fn ensure(&self) -> anyhow::Result<String> {
        if Path::new(DEJAVU).is_file() {
            return Ok(format!("present ({DEJAVU})"));
        }
        apt::install(&["fonts-dejavu-core"])?;
        Ok("installed fonts-dejavu-core".into())
    }
}
