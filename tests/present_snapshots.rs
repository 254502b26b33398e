//! Snapshots of what `present/` writes: the terminal matrix, `compare` as text, GitHub Markdown
//! and JSON, the benchmark-format export, the doctor's text and Markdown, and the node check's
//! text, metrics and NHC file, each from fixed inputs (the committed seed fixture, a fixed environment), so a change to any renderer shows
//! as a diff of its output. Review a change with `cargo insta review` (or delete the `.snap`
//! and run again with `INSTA_UPDATE=always`).

use std::path::Path;

use shmbench::analysis::compare::{compare_summaries, Thresholds};
use shmbench::analysis::summary::summarize;
use shmbench::model::knobs::Knobs;
use shmbench::model::record::Status;
use shmbench::plan::advice::diagnose;
use shmbench::plan::job;
use shmbench::plan::resolve::{Identity, Platform, Resolve};
use shmbench::present;
use shmbench::results::{csv, Row};
use shmbench::sys::detect::{Environment, Place};

/// The seed fixture's rows: five cells of the how-to's matrix as one run measured them.
fn seed_rows() -> Vec<Row> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/seed.csv");
    csv::read(Path::new(path)).unwrap()
}

/// The seed rows as a later run might find them: the first passing cell 20% slower, the last
/// passing one crashing at step 3.
fn candidate_rows() -> Vec<Row> {
    let mut rows = seed_rows();
    let passing: Vec<usize> = (0..rows.len())
        .filter(|i| rows[*i].status.is_pass())
        .collect();
    let (slower, crashing) = (passing[0], passing[passing.len() - 1]);
    assert_ne!(slower, crashing, "the fixture has two passing cells");
    rows[slower].img_per_s = rows[slower].img_per_s.map(|r| r * 0.8);
    rows[slower].img_per_s_p50 = rows[slower].img_per_s_p50.map(|r| r * 0.8);
    rows[crashing].status = Status::Sigbus;
    rows[crashing].crash_step = Some(3);
    rows
}

const THRESHOLDS: Thresholds = Thresholds {
    rate: 0.05,
    cpu: 0.03,
    instructions: 0.02,
};

#[test]
fn the_matrix_table() {
    insta::assert_snapshot!(present::matrix::matrix(&seed_rows()));
}

#[test]
fn compare_as_text_github_and_json() {
    let base = summarize(&seed_rows());
    let cand = summarize(&candidate_rows());
    let comparisons = compare_summaries(&base, &cand, THRESHOLDS);
    insta::assert_snapshot!(
        "compare_text",
        present::compare_tables::render(&comparisons, THRESHOLDS)
    );
    insta::assert_snapshot!(
        "compare_github",
        present::compare_tables::render_github(&comparisons, THRESHOLDS)
    );
    insta::assert_snapshot!(
        "compare_json",
        present::compare_tables::render_json(&comparisons, THRESHOLDS).unwrap()
    );
}

#[test]
fn the_benchmark_format_export() {
    let rows = seed_rows();
    let cells = rows.iter().cloned().zip(summarize(&rows)).collect();
    let value = present::bmf::render(cells);
    insta::assert_snapshot!(serde_json::to_string_pretty(&value).unwrap());
}

#[test]
fn the_doctor_in_docker_s_default_shm() {
    let config = Knobs::default()
        .resolve(Identity::default(), &Platform::fixed(24 << 30, false))
        .unwrap();
    let specs = job::loaders_of(&config, &[]);
    let peak = job::predict(&config, 1, &specs, &[]);
    let env = Environment {
        place: Place::Docker,
        evidence: "/.dockerenv exists".into(),
        shm_total_bytes: 64 << 20,
        shm_free_bytes: 64 << 20,
        cgroup_memory_limit: None,
        nofile_soft: 1024,
        max_map_count: Some(65530),
        kernel: "6.1.0".into(),
        mem_total_bytes: 24 << 30,
        gvisor: false,
        user_namespace: false,
        cgroup_version: Some(2),
    };
    let diagnosis = diagnose(&config, &peak, env, None);
    insta::assert_snapshot!("doctor_text", present::doctor::render(&diagnosis, false));
    insta::assert_snapshot!("doctor_markdown", present::doctor::render(&diagnosis, true));
}

/// A node with a dead leftover, a too-small size for a job, and files by several producers:
/// the check's text, its Prometheus metrics and the NHC check file.
#[test]
fn the_node_check_as_text_metrics_and_nhc() {
    use shmbench::fleet::node::{judge, DeadFile, NodeFacts, NodePolicy, ProducerBytes};
    use shmbench::model::segment_maker::Producer;
    const MIB: u64 = 1 << 20;
    let facts = NodeFacts {
        path: "/dev/shm".into(),
        filesystem: "tmpfs".into(),
        size_bytes: 64 * MIB,
        used_bytes: 30 * MIB,
        inodes_free: Some(4000),
        read_only: false,
        within_mount: None,
        mode: Some(0o1777),
        dead: vec![
            DeadFile {
                name: "torch_4242_1117630682_0".into(),
                bytes: 18 * MIB,
                age_s: 7200.0,
            },
            DeadFile {
                name: "vllm_offload_63f63241.mmap".into(),
                bytes: 4 * MIB,
                age_s: 20.0,
            },
        ],
        unowned_bytes: MIB,
        unowned_files: 1,
        pinned_bytes: 0,
        pinned_files: 0,
        producers: vec![
            ProducerBytes {
                producer: Producer::Torch,
                bytes: 25 * MIB,
                files: 3,
            },
            ProducerBytes {
                producer: Producer::Vllm,
                bytes: 4 * MIB,
                files: 1,
            },
            ProducerBytes {
                producer: Producer::Unknown,
                bytes: MIB,
                files: 1,
            },
        ],
        max_map_count: Some(65530),
        blind: None,
    };
    let policy = NodePolicy {
        need_bytes: Some(1250 * MIB),
        need_from: "the doctor's model of the job: the peak 1 GiB + 25%".into(),
        max_used_share: 0.9,
        max_dead_bytes: 0,
        dead_older_than_s: 60.0,
        maps_needed: Some(40),
    };
    let verdict = judge(&facts, &policy);
    insta::assert_snapshot!(
        "node_text",
        fleet::node::text::render(&facts, &policy, &verdict)
    );
    insta::assert_snapshot!(
        "node_metrics",
        fleet::node::prom::render(&facts, &policy, &verdict, 1_796_000_000.0)
    );
    insta::assert_snapshot!(
        "node_nhc",
        fleet::node::nhc::check_file("/usr/local/bin/shmbench node --need 8g")
    );
}
