//! What the machine looks like to a test: shmbench's segments, mounts, processes, containers and
//! memory cgroups, snapshotted before a test and required unchanged after it.

use super::*;

/// What the machine looked like: shmbench segments in /dev/shm, mounts, shmbench processes.
#[derive(Debug, PartialEq)]
pub struct MachineState {
    pub shm_entries: Vec<String>,
    pub mounts: String,
    pub processes: Vec<String>,
    pub containers: Vec<String>,
}

/// shmbench's containers, by the label every one of them carries (empty without a docker CLI).
fn shmbench_containers() -> Vec<String> {
    Command::new("docker")
        .args([
            "ps",
            "-a",
            "--filter",
            "label=org.shmbench.run-token",
            "--format",
            "{{.Names}} {{.Status}}",
        ])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

fn shmbench_processes() -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.chars().all(|c| c.is_ascii_digit()) || name == me {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let is_ours = args
            .first()
            .is_some_and(|a| a == BIN || a == "/proc/self/exe");
        if is_ours && args.get(1).is_some_and(|a| a == "cell" || a == "worker") {
            found.push(format!("{name}: {}", args[..2].join(" ")));
        }
        // A torch cell's Python and its DataLoader workers (they share the cell's bootstrap),
        // and the segment manager torch starts for file_system.
        if args.iter().any(|a| a.contains("shmbench-torch-cell")) || args[0] == "torch_shm_manager"
        {
            found.push(format!("{name}: {}", args[0]));
        }
    }
    found
}

pub fn machine_state() -> MachineState {
    let mut shm_entries: Vec<String> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("shmbench_") || n.starts_with("torch_"))
        .collect();
    shm_entries.sort();
    MachineState {
        shm_entries,
        mounts: std::fs::read_to_string("/proc/self/mounts").unwrap(),
        processes: shmbench_processes(),
        containers: shmbench_containers(),
    }
}

/// Asserts the machine is as clean as `before`: no shmbench process, segment, mount or container
/// more. Teardown is asynchronous (exiting workers, the engine unmounting and removing a container
/// after its cell ended), so it waits for the state to settle, up to a bound that covers a loaded
/// 2-core machine, and returns as soon as it is clean.
pub fn assert_clean(before: &MachineState) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = machine_state();
        let clean = now.processes.is_empty()
            && now.shm_entries.is_empty()
            && now.mounts == before.mounts
            && now.containers == before.containers;
        if clean || Instant::now() > deadline {
            assert_eq!(
                now.processes,
                Vec::<String>::new(),
                "shmbench processes left behind"
            );
            assert_eq!(
                now.shm_entries,
                Vec::<String>::new(),
                "segments left in /dev/shm"
            );
            assert_eq!(now.mounts, before.mounts, "mounts changed");
            assert_eq!(now.containers, before.containers, "containers left behind");
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The memory cgroups shmbench made, in v1's memory hierarchy or v2's root.
pub fn shmbench_cgroups() -> Vec<String> {
    ["/sys/fs/cgroup/memory", "/sys/fs/cgroup"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|d| d.flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("shmbench-"))
        .collect()
}

/// This node's vm.max_map_count, for the tests that fill it with batches kept alive (a page
/// each); None, said on the test output, where it is too high to fill in a test's time.
pub fn max_map_count_within_reach() -> Option<u64> {
    let limit: u64 = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    if limit > 262_144 {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!(
                "skipped: vm.max_map_count is {limit} here; the test needs about {limit} batches\n"
            )
            .as_bytes(),
        );
        return None;
    }
    Some(limit)
}
