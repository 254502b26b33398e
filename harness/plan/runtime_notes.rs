//! What the doctor says about the container runtime it runs under, from docs/RUNTIMES.md's
//! measured table: gVisor (its /dev/shm size holds and df tells the truth, but no memory cgroup
//! is visible inside and an OOM ends the whole sandbox), Podman's own default /dev/shm, and a
//! rootless container on cgroup v1 (whose engine applies no memory limit).

use model::size::ByteSize;
use sys::detect::{Environment, Place};

/// Podman's default /dev/shm (`size=64000k`), rootful and rootless (measured, Podman 4.3).
pub const PODMAN_DEFAULT_SHM: u64 = 64_000 << 10;

/// One sentence per runtime fact that changes how to read the diagnosis here.
pub fn notes(env: &Environment) -> Vec<String> {
    let mut notes = Vec::new();
    if env.gvisor {
        notes.push("this is a gVisor sandbox (its /proc/version is gVisor's): /dev/shm's size holds and df tells the truth here as on Linux (measured under runsc 20221219), but no memory cgroup is visible inside, so the memory line cannot see the sandbox's limit; at that limit an OOM kill ends the whole sandbox, not one worker, and leaves no DataLoader error to read".to_string());
    }
    let podman = env.place == Place::OtherContainer && env.evidence.contains("podman");
    if podman && env.shm_total_bytes == PODMAN_DEFAULT_SHM {
        notes.push(format!(
            "this /dev/shm is Podman's default (size=64000k: {}, not Docker's 64 MiB), rootless or not: `podman run --shm-size` sets it",
            ByteSize(PODMAN_DEFAULT_SHM)
        ));
    }
    // A container started by root in a user namespace (userns-remap) may have its limit: said
    // only where none is visible.
    let unlimited = env.cgroup_memory_limit.is_none();
    if env.user_namespace && env.place != Place::Host && env.cgroup_version == Some(1) && unlimited
    {
        notes.push("this container runs in a user namespace (rootless, by /proc/self/uid_map) on cgroup v1 and no memory limit is visible: a rootless engine applies none there (Podman ignores --memory, measured), so only /dev/shm's own size bounds its pages".to_string());
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(place: Place, evidence: &str, shm: u64) -> Environment {
        Environment {
            place,
            evidence: evidence.into(),
            shm_total_bytes: shm,
            shm_free_bytes: shm,
            cgroup_memory_limit: None,
            nofile_soft: 1024,
            max_map_count: None,
            kernel: String::new(),
            mem_total_bytes: 0,
            gvisor: false,
            user_namespace: false,
            cgroup_version: Some(1),
        }
    }

    #[test]
    fn each_runtime_fact_is_said_only_where_it_holds() {
        let host = env(Place::Host, "no container markers", 8 << 30);
        assert!(notes(&host).is_empty());
        let podman = env(
            Place::OtherContainer,
            "/run/.containerenv exists (podman)",
            65_536_000,
        );
        assert!(notes(&podman)[0].contains("size=64000k: 62.5 MiB"));
        let sized = env(
            Place::OtherContainer,
            "/run/.containerenv exists (podman)",
            2 << 30,
        );
        assert!(notes(&sized).is_empty());
        let rootless = Environment {
            user_namespace: true,
            ..sized
        };
        assert!(notes(&rootless)[0].contains("no memory limit"));
        let v2 = Environment {
            cgroup_version: Some(2),
            ..rootless
        };
        assert!(notes(&v2).is_empty());
        let gvisor = Environment {
            gvisor: true,
            ..env(Place::Docker, "/.dockerenv exists", 64 << 20)
        };
        assert!(notes(&gvisor)[0].contains("gVisor sandbox"));
    }
}
