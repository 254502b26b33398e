//! The mounts a test's leak check compares: its mount namespace's, less the container engines'.

/// The mounts of this test's mount namespace, less those the Docker and Podman engines make
/// for any container and for their storage (its overlay and /dev/shm mounts, judged through
/// the containers instead; Podman bind-mounts its overlay store when its service starts).
pub(super) fn mounts() -> String {
    const ENGINES: [&str; 4] = [
        "/var/lib/docker/",
        "/run/docker/",
        "/var/lib/containers/",
        "/run/containers/",
    ];
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .filter(|l| {
            let point = l.split(' ').nth(1).unwrap_or("");
            !ENGINES.iter().any(|e| point.starts_with(e))
        })
        .map(|l| format!("{l}\n"))
        .collect()
}
