//! The integration tests, one binary (ripgrep's `tests/tests.rs`): each file below is a module,
//! so the suite is built and linked once. Tests that touch machine-wide state (cells, /dev/shm,
//! the Docker engine, Slurm, VMs) hold `common::serial()` and run one at a time; the pure ones
//! (reading fixtures, parsing, rendering) run beside them. `cargo xtask test` runs them all; a
//! filter runs a part (`cargo test --release --test integration sweep_safety::`).

mod common;

mod alert_rules;
mod cells;
mod check;
mod check_untrusted;
mod claims;
mod cli;
mod collect_untrusted;
mod compare;
mod disk_faults;
mod docker;
mod docker_image;
mod doctor;
mod doctor_job;
mod explain;
mod faults;
mod fidelity_inconclusive;
mod fleet;
mod fleet_made;
mod fuzz;
mod generated_files;
mod help;
mod history;
mod k8s;
mod k8s_pods;
mod live_node;
mod node;
mod node_npd;
mod node_prometheus;
mod ownership;
mod packaging;
mod present_snapshots;
mod ray_store;
mod repeat;
mod report;
mod report_scale;
mod results_files;
mod results_schema;
mod rootless_podman;
mod runtime_doctor;
mod runtime_seed;
mod runtime_speed;
mod runtime_torch;
mod runtime_watch;
mod runtimes;
mod shm_audit;
mod slurm;
mod slurm_fleet;
mod slurm_health;
mod start_methods;
mod sweep_safety;
mod torch;
mod torch_limits;
mod torch_start_methods;
mod tune;
mod untrusted_results;
mod vm;
mod watch;
mod watch_bytes;
mod watch_containment;
mod wheel;
mod worker_faults;
