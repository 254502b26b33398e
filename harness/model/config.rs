//! A fully resolved cell: every knob present, ready to ship to a cell process as JSON, and the
//! sizes that follow from it. Validation is in [`super::validate`].

use serde::{Deserialize, Serialize};

use super::claim::Claim;
use super::knobs::KnobValues;
use super::watch::WatchSettings;

/// A fully resolved, validated cell: what `shmbench cell` receives as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellConfig {
    pub scenario: String,
    pub cell: String,
    /// Human label of the setup this cell stands for, e.g. "Docker Default".
    pub environment: String,
    /// Why the runtime is not the one the setup names (e.g. no Docker engine answered).
    pub runtime_note: Option<String>,
    /// Every knob, resolved (flattened: the JSON is one object, as before knobs were grouped).
    #[serde(flatten)]
    pub knobs: KnobValues,
    pub claim: Option<Claim>,
    /// The command a `loader command` cell runs and how it is watched (`shmbench watch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<WatchSettings>,
}

impl CellConfig {
    /// A cell named `name` with every knob at its default, outside any scenario of the user's:
    /// what the orchestration's and the surfaces' unit tests run through a fake launcher.
    pub fn with_defaults(name: &str) -> CellConfig {
        CellConfig {
            scenario: "test".into(),
            cell: name.into(),
            environment: name.into(),
            runtime_note: None,
            knobs: KnobValues::default(),
            claim: None,
            watch: None,
        }
    }

    /// Bytes of one image.
    pub fn image_bytes(&self) -> u64 {
        self.knobs
            .shape
            .elements()
            .unwrap_or(u64::MAX)
            .saturating_mul(self.knobs.dtype.size())
    }

    /// Bytes of one batch: what one shared segment holds.
    pub fn batch_bytes(&self) -> u64 {
        self.image_bytes().saturating_mul(self.knobs.batch as u64)
    }

    /// Bytes of the Dataset's tensors that move into shared memory as the first worker starts
    /// and stay there while the loader lives: forkserver and spawn pickle the Dataset to each
    /// worker, fork workers inherit it (and a loader without workers starts none).
    pub fn dataset_shm_bytes(&self) -> u64 {
        let pickled = self.knobs.workers > 0 && self.knobs.start_method.pickles_the_dataset();
        if pickled {
            self.knobs.dataset_bytes
        } else {
            0
        }
    }

    /// At most this many batches are outstanding (torch's `num_workers * prefetch_factor`).
    pub fn max_outstanding(&self) -> u64 {
        self.knobs.workers as u64 * self.knobs.prefetch as u64
    }

    /// Whether the cell's steps are known: a loader's always, a watched command's only through
    /// its step regex (without one its crash has a time, not a step).
    pub fn counts_steps(&self) -> bool {
        self.watch.as_ref().is_none_or(|w| w.step_regex.is_some())
    }

    pub fn total_steps(&self) -> u64 {
        self.knobs.steps.saturating_mul(self.knobs.epochs as u64)
    }
}
