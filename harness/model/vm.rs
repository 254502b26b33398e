//! A VM cell's settings and what it reports (`--runtime vm`): the kernel it boots, the
//! accelerator (KVM, or QEMU's software emulation, TCG), its memory and CPUs, and the guest's own
//! fingerprint (its kernel is what the row's `kernel` column says).

use serde::{Deserialize, Serialize};

use super::fingerprint::Fingerprint;

crate::choice! {
    /// How QEMU runs the guest.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Accel {
        #[default]
        Auto = "auto": "KVM when a probe VM boots with it in time, else TCG (said in the output).",
        Kvm = "kvm": "Hardware virtualization: near-native speed.",
        Tcg = "tcg": "Software emulation: outcomes and crash kinds hold, speeds do not (memory writes run 30-40x slower), so img/s of TCG rows is never compared with other rows'.",
    }
}

/// What a VM cell ran on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VmInfo {
    /// The kernel as asked for (`debian:6.1.0-57-cloud-amd64`, or a path).
    pub kernel: String,
    /// The accelerator used (never `auto`).
    pub accel: Option<Accel>,
    pub memory_bytes: u64,
    pub cpus: u32,
    /// Seconds from starting QEMU to the record.
    pub boot_and_run_s: f64,
    /// The guest as it saw itself.
    pub fingerprint: Fingerprint,
}
