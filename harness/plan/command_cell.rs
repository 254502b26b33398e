//! From what `watch` was asked to a cell: a command cell (`loader command`) with the isolation
//! knobs given, `runtime = auto` decided as for any cell (namespace when a size is given, docker
//! for an image, else host), validated.

use model::config::CellConfig;
use model::knobs::{Knobs, Loader, RuntimeKind};
use model::size::ByteSize;
use model::validate::KnobError;
use model::watch::WatchSettings;

use super::resolve::{Identity, Platform};
use crate::resolve::Resolve;

/// The cell that runs `settings.command` named `name`, isolated by `knobs` (shm-size, runtime,
/// image, memory, cpus, timeout-s; the loader knobs do not apply to a command).
pub fn cell(
    knobs: &Knobs,
    name: &str,
    settings: WatchSettings,
    platform: &Platform,
) -> Result<CellConfig, KnobError> {
    let id = Identity {
        scenario: "watch".into(),
        environment: name.to_string(),
        cell: name.to_string(),
        claim: None,
    };
    let mut config = knobs.resolve(id, platform)?;
    config.knobs.loader = Loader::Command;
    config.watch = Some(settings);
    config.validate(platform.mem_total)?;
    Ok(config)
}

/// `command` watched in a private /dev/shm of `shm_bytes` (a namespace cell), as shmbench's own
/// checks run one (`bench`'s sampler cost, `doctor --verify` of a job).
pub fn private(
    name: &str,
    command: Vec<String>,
    shm_bytes: u64,
    platform: &Platform,
) -> Result<CellConfig, KnobError> {
    let knobs = Knobs {
        shm_size: Some(ByteSize(shm_bytes)),
        runtime: Some(RuntimeKind::Namespace),
        ..Knobs::default()
    };
    cell(&knobs, name, WatchSettings::plain(command), platform)
}
