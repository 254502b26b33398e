//! Fonts for plot text, without fontconfig or freetype: a TrueType file read from disk and
//! rasterised by ab_glyph (pure Rust). `SHMBENCH_FONT` names one (and then only that one);
//! otherwise common locations of DejaVu, Liberation, Noto and FreeFont are tried.

use std::path::PathBuf;
use std::sync::OnceLock;

use anyhow::Result;
use plotters::style::FontStyle;

/// Where TrueType sans fonts usually are on Linux distributions.
const CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
];

static REGISTERED: OnceLock<Result<PathBuf, NoFont>> = OnceLock::new();

/// No font could be registered: what was tried, and how to get one.
#[derive(Clone, Debug, thiserror::Error)]
#[error("no usable TrueType font for plot text: tried {tried}. Install one (Debian/Ubuntu: apt-get install fonts-dejavu-core) or set SHMBENCH_FONT=/path/to/font.ttf")]
pub struct NoFont {
    tried: String,
}

fn find_and_register() -> Result<PathBuf, NoFont> {
    // A font the user names is the only one tried: falling back would hide their mistake.
    let from_env = std::env::var_os("SHMBENCH_FONT").map(PathBuf::from);
    let candidates: Vec<PathBuf> = match &from_env {
        Some(p) => vec![p.clone()],
        None => CANDIDATES.iter().map(PathBuf::from).collect(),
    };
    for path in candidates {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        // plotters keeps registered fonts for the life of the process.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        let ok = ["sans-serif", "serif", "monospace"]
            .iter()
            .all(|family| plotters::style::register_font(family, FontStyle::Normal, bytes).is_ok());
        if ok {
            let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, bytes);
            return Ok(path);
        }
    }
    let tried = match from_env {
        Some(p) => format!(
            "SHMBENCH_FONT={} (unreadable or not a TrueType font)",
            p.display()
        ),
        None => CANDIDATES.join(", "),
    };
    Err(NoFont { tried })
}

/// Registers a font once per process; returns the file used.
pub fn ensure() -> Result<PathBuf> {
    REGISTERED
        .get_or_init(find_and_register)
        .clone()
        .map_err(anyhow::Error::from)
}
