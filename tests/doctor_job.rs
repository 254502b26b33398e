//! The doctor for a whole job: ranks per node and several loaders per rank, the limits it meets
//! (RLIMIT_NOFILE, the memory cgroup), fixes per platform, and the prediction checked against
//! every loader of every rank run at once in one real namespace cell (`--verify`).

use crate::common;

use common::*;

const IMAGE: u64 = 3 * 224 * 224 * 4;

fn doctor_json(args: &[&str]) -> serde_json::Value {
    let mut full = vec!["doctor", "--format", "json"];
    full.extend(args);
    let o = shmbench(&full);
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn a_job_of_ranks_and_loaders_is_predicted_as_their_sum() {
    let d = doctor_json(&[
        "--ranks",
        "4",
        "--loaders",
        "train:8x2x128,val:4x2x256",
        "--shm-size",
        "8g",
    ]);
    // train: 8 x 2 + 1 = 17 batches of 128 images; val: 4 x 2 + 1 = 9 of 256; four ranks.
    let rank = (17 * 128 + 9 * 256) * IMAGE;
    assert_eq!(d["peak_bytes"], 4 * rank);
    assert_eq!(d["job"]["ranks"], 4);
    assert_eq!(d["fits"], false, "10 GiB does not fit in 8 GiB");
    assert!(d["recommended_bytes"].as_u64().unwrap() >= 4 * rank);
    // One rank with the knobs' loader is the single-loader diagnosis.
    let one = doctor_json(&["--workers", "8", "--batch", "128"]);
    assert_eq!(one["peak_bytes"], 17 * 128 * IMAGE);
}

#[test]
fn fixes_come_for_the_platform_asked_with_the_number_in_them() {
    let mib = |d: &serde_json::Value| d["recommended_bytes"].as_u64().unwrap() >> 20;
    let text = |d: &serde_json::Value| d["fixes"].to_string();
    let batch = doctor_json(&["--platform", "aws-batch", "--shm-size", "64m"]);
    assert!(
        text(&batch).contains(&format!("\\\"sharedMemorySize\\\": {}", mib(&batch))),
        "{}",
        text(&batch)
    );
    let kubeflow = doctor_json(&["--platform", "kubeflow", "--shm-size", "64m"]);
    assert!(
        text(&kubeflow).contains("empty_dir_mount"),
        "{}",
        text(&kubeflow)
    );
    assert!(text(&kubeflow).contains(&format!("{}Mi", mib(&kubeflow))));
    let slurm = doctor_json(&["--platform", "slurm", "--shm-size", "64m"]);
    assert!(text(&slurm).contains("remount,size="), "{}", text(&slurm));
    let compose = doctor_json(&["--platform", "compose", "--shm-size", "64m"]);
    assert!(text(&compose).contains("shm_size:"), "{}", text(&compose));
    let o = shmbench(&["doctor", "--platform", "mainframe"]);
    assert_eq!(o.status.code(), Some(2));
    let o = shmbench(&["doctor", "--loaders", "train:8x2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("NAME:WORKERSxPREFETCHxBATCH"));
}

#[test]
fn the_fds_file_descriptor_keeps_are_checked_against_rlimit_nofile() {
    let job = [
        "doctor",
        "--loaders",
        "train:16x8x128,val:8x8x64",
        "--shm-size",
        "64g",
    ];
    let under = |nofile: &str, format: &str| {
        let o = std::process::Command::new("prlimit")
            .arg(format!("--nofile={nofile}:{nofile}"))
            .arg(BIN)
            .args(job)
            .args(["--format", format])
            .output()
            .expect("prlimit (util-linux)");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // Each rank's main keeps one fd per batch alive, plus its workers' sockets and pidfds.
    let d: serde_json::Value = serde_json::from_str(&under("200", "json")).unwrap();
    let fds = d["job"]["rank_fds"].as_u64().unwrap();
    let batches: u64 = d["job"]["loaders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["peak_batches"].as_u64().unwrap())
        .sum();
    assert_eq!(fds, batches + (16 + 8) * 4 + 64);
    assert!(fds > 200);
    let text = under("200", "text");
    assert!(
        text.contains(&format!("about {fds} at the peak but RLIMIT_NOFILE is 200")),
        "{text}"
    );
    assert!(text.contains(&format!("ulimit -n {}", fds * 2)), "{text}");
    let text = under("10000", "text");
    assert!(text.contains("within RLIMIT_NOFILE 10000"), "{text}");
}

#[test]
fn verify_runs_every_rank_and_loader_at_once_and_meets_the_prediction() {
    let _guard = serial();
    let before = machine_state();
    let o = shmbench(&[
        "doctor",
        "--ranks",
        "2",
        "--loaders",
        "train:2x2x8,val:1x2x16",
        "--compute-ms",
        "100",
        "--steps",
        "20",
        "--verify",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("verify: PASSED"))
        .unwrap_or_else(|| panic!("{text}"));
    let percent: f64 = line
        .rsplit_once('(')
        .and_then(|(_, p)| p.split('%').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    // Predicted: 2 x ((2 x 2 + 1) x 8 + (1 x 2 + 1) x 16) images. Measured together, with a
    // step slower than the workers every queue fills: at least 3/4 of it; at most one batch per
    // loader more (a worker refills before the loop drops the batch it replaced).
    let predicted = 2 * (5 * 8 + 3 * 16) * IMAGE;
    let handoff = 2 * (8 + 16) * IMAGE;
    let most = 100.0 * (predicted + handoff) as f64 / predicted as f64;
    assert!(
        (75.0..=most).contains(&percent),
        "{percent}% of {predicted}: {line}"
    );
    assert_clean(&before);
}

#[test]
fn the_memory_cgroup_limit_in_force_is_checked_against_the_tmpfs_pages() {
    let _guard = serial();
    let before = machine_state();
    // The doctor inside a real memory cgroup of 512 MiB (a watched command under --memory): the
    // loader's 5 batches of 73.5 MiB are more than half of it.
    let (out, _, _) = watch(
        &["--shm-size", "1g", "--memory", "512m"],
        &[BIN, "doctor", "--workers", "2", "--batch", "128"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("memory: the cgroup limit is 512 MiB: /dev/shm pages count against it, so the peak 367.5 MiB leaves 144.5 MiB"),
        "{text}"
    );
    assert_clean(&before);
}

#[test]
fn nccl_and_ray_beside_the_loaders_add_their_share_with_its_source() {
    let args = [
        "--ranks",
        "8",
        "--loaders",
        "train:8x2x128",
        "--shm-size",
        "64g",
    ];
    let alone = doctor_json(&args);
    let mut with = args.to_vec();
    with.extend(["--with", "nccl:8,ray:2g"]);
    let d = doctor_json(&with);
    // 8 ranks x (2 connections + the proxy ops pool), NCCL 2.23.4's layout.
    let nccl = 8 * (2 * 9_637_888u64 + 10_486_112);
    let ray = 2u64 << 30;
    let node = alone["job"]["node_bytes"].as_u64().unwrap();
    assert_eq!(d["job"]["node_bytes"].as_u64().unwrap(), node + nccl + ray);
    let consumers = d["job"]["consumers"].as_array().unwrap();
    assert_eq!(consumers[0]["measured"], false);
    assert!(consumers[0]["source"].as_str().unwrap().contains("nccl"));
    assert_eq!(consumers[1]["measured"], true);
    // The text names each share and where it comes from.
    let mut text_args = with.clone();
    text_args.insert(0, "doctor");
    let o = shmbench(&text_args);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("NCCL, 8 ranks: 227.1 MiB") && text.contains("a prediction from NVIDIA/nccl"),
        "{text}"
    );
    assert!(
        text.contains("Ray object store 2 GiB") && text.contains("measured with Ray"),
        "{text}"
    );
    // Not a consumer shmbench knows, said as such; --verify does not pretend to run them.
    let o = shmbench(&["doctor", "--with", "gloo:2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nccl:RANKS"));
    let o = shmbench(&["doctor", "--with", "ray:1g", "--verify"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_scenario_s_consumers_and_cell_give_the_same_job_as_the_flags() {
    let dir = temp_dir("doctor-scenario");
    let path = dir.as_ref().join("node.toml");
    std::fs::write(
        &path,
        "name = \"node\"\n[defaults]\nworkers = 8\n[[cells]]\nname = \"small\"\nworkers = 2\nbatch = 16\n[[consumers]]\nkind = \"vllm\"\ntensor-parallel = 2\n[[consumers]]\nkind = \"nccl\"\nranks = 4\nchannels = 1\n",
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let common = ["--ranks", "4", "--shm-size", "64g"];
    let mut from_file = vec!["--scenario", file, "--cell", "small"];
    from_file.extend(common);
    let mut from_flags = vec![
        "--workers",
        "2",
        "--batch",
        "16",
        "--with",
        "vllm:2,nccl:4:1",
    ];
    from_flags.extend(common);
    let (a, b) = (doctor_json(&from_file), doctor_json(&from_flags));
    assert_eq!(a["job"]["node_bytes"], b["job"]["node_bytes"]);
    assert_eq!(a["job"]["loaders"], b["job"]["loaders"]);
    let vllm = &a["job"]["consumers"][0];
    // vLLM 0.33.0 at TP 2: 10 x (16 MiB + 3) + 2 x 10 x (24 MiB + 2) + 6 x (4 MiB + 2).
    assert_eq!(vllm["bytes"].as_u64().unwrap(), 696_254_546);
    assert_eq!(vllm["measured"], false);
    assert!(vllm["source"].as_str().unwrap().contains("vLLM 0.33.0"));
    // A flag overrides the scenario's loader; --with adds to its consumers.
    let mut more = from_file.clone();
    more.extend(["--batch", "32", "--with", "ray:1g"]);
    let c = doctor_json(&more);
    assert_eq!(c["job"]["loaders"][0]["spec"]["batch"], 32);
    assert_eq!(c["job"]["consumers"].as_array().unwrap().len(), 3);
    // A bad table is named with its file; nothing runs.
    std::fs::write(
        &path,
        "name = \"node\"\n[[cells]]\nname = \"a\"\n[[consumers]]\nkind = \"vllm\"\n",
    )
    .unwrap();
    let o = shmbench(&["doctor", "--scenario", file]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("node.toml: consumers[0]") && err.contains("tensor-parallel"),
        "{err}"
    );
}
