//! Who a /dev/shm name says made it, where the name can say: the producers that put their
//! creator's pid in the name, and the files that live unheld by design. A name is a claim, not
//! proof: a pid in a name still has to be shown dead (`crate::staleness` checks every
//! process's own pid and start time). shmbench's own run tokens are read from raw bytes by
//! `sys::owner`. A name that names no owner makes a file of unknown owner, which no default
//! sweep removes.

/// The owner a name carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NamedOwner {
    /// Made by process `pid` (as that process saw its own pid, in its pid namespace).
    Pid { pid: u32, maker: &'static str },
    /// Kept unheld between uses by design: never stale.
    ByDesign(&'static str),
    /// The name names no owner.
    Unknown,
}

/// Names whose pid is the creating process's, with the producer: (prefix, producer). The pid
/// follows the prefix and ends at `_` or the end of the name.
const PID_NAMES: &[(&str, &str)] = &[
    // torch's libshm: `torch_<pid>_<random>_<n>` (file_system batches, shared tensors).
    ("torch_", "torch"),
    // Intel's OpenMP runtime: `__KMP_REGISTERED_LIB_<pid>[_<uid>]`.
    ("__KMP_REGISTERED_LIB_", "Intel OpenMP"),
];

/// Names whose pid is their last `_` field: (prefix, producer).
const TRAILING_PID_NAMES: &[(&str, &str)] = &[
    // sglang: `sgl_shm_<kind>_<pid>`.
    ("sgl_shm_", "sglang"),
];

/// Names that live unheld between uses by design: (prefix, why it must stay).
const BY_DESIGN: &[(&str, &str)] = &[
    (
        "libpod_lock",
        "Podman's lock memory (kept unheld between podman commands)",
    ),
    (
        "libpod_rootless_lock_",
        "rootless Podman's lock memory (kept unheld between podman commands)",
    ),
    (
        "lttng-ust-wait-",
        "LTTng's wait file (kept for its session daemon)",
    ),
];

/// The owner the name of an entry (its path under the audited root; only the last part
/// counts) carries.
pub(crate) fn named_owner(name: &str) -> NamedOwner {
    let base = name.rsplit('/').next().unwrap_or(name);
    if let Some((_, why)) = BY_DESIGN.iter().find(|(p, _)| base.starts_with(p)) {
        return NamedOwner::ByDesign(why);
    }
    for (prefix, maker) in PID_NAMES {
        if let Some(rest) = base.strip_prefix(prefix) {
            let digits = rest.split('_').next().unwrap_or("");
            if let Some(pid) = pid_of(digits) {
                return NamedOwner::Pid { pid, maker };
            }
        }
    }
    for (prefix, maker) in TRAILING_PID_NAMES {
        if let Some(rest) = base.strip_prefix(prefix) {
            if let Some(pid) = rest.rsplit_once('_').and_then(|(_, p)| pid_of(p)) {
                return NamedOwner::Pid { pid, maker };
            }
        }
    }
    NamedOwner::Unknown
}

/// A pid written in decimal: digits only, no leading zero, above 0, within a pid's range.
fn pid_of(digits: &str) -> Option<u32> {
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|pid| *pid <= 4_194_304)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_carry_a_pid_give_it() {
        assert_eq!(
            named_owner("torch_4242_1117630682_0"),
            NamedOwner::Pid {
                pid: 4242,
                maker: "torch"
            }
        );
        assert_eq!(
            named_owner("sub/__KMP_REGISTERED_LIB_77_0"),
            NamedOwner::Pid {
                pid: 77,
                maker: "Intel OpenMP"
            }
        );
        assert_eq!(
            named_owner("sgl_shm_cache_9000"),
            NamedOwner::Pid {
                pid: 9000,
                maker: "sglang"
            }
        );
    }

    #[test]
    fn names_that_only_look_like_it_name_no_owner() {
        for name in [
            "torch_",
            "torch_x_1_0",
            "torch_0123_1_0",
            "torch_99999999999_1",
            "my_torch_1_2",
            "data_0001.bin",
            "shmbench_0123456789abcdef_0_1",
            "sgl_shm_cache",
        ] {
            assert_eq!(named_owner(name), NamedOwner::Unknown, "{name}");
        }
    }

    #[test]
    fn files_kept_by_design_are_told_apart() {
        assert!(matches!(
            named_owner("libpod_lock"),
            NamedOwner::ByDesign(_)
        ));
        assert!(matches!(
            named_owner("libpod_rootless_lock_1000"),
            NamedOwner::ByDesign(_)
        ));
    }
}
