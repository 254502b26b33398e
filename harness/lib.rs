//! shmbench: reproduce, measure and track the PyTorch DataLoader "Bus error".
//!
//! One folder per crate: a layered core and the product surfaces over it; imports point down
//! only (ARCHITECTURE.md has the map and the rules, `tests/architecture/` checks them):
//!
//! ```text
//! cli -> orchestrate -> runtime -> cell -> sys -> model -> explain
//!   |                              \--> explain (the fault tracer, the causes)
//!   |--> present -> plan (scenario, predict, advice) -> sys, model
//!   |          \--> analysis -> results -> model
//!   |--> audit (a live /dev/shm, its stale files) -> present, sys
//!   |--> fleet (the node check, the fleet's verdict) -> audit, present, analysis, results, sys
//!   |--> cluster (Slurm and Kubernetes: scripts, manifests, collect) -> runtime, plan, results
//!   |--> fidelity (the emulation against real torch) -> orchestrate, present, analysis
//!   |--> benchmark (`shmbench bench`: the harness against this machine) -> orchestrate, present
//!   \--> check (deployment files, its report formats) -> present, plan
//! ```

pub use analysis;
pub use audit;
pub use benchmark;
pub use cell;
pub use check;
pub use cluster;
pub use explain;
pub use fidelity;
pub use fleet;
pub mod cli;
pub use model;
pub use orchestrate;
pub use plan;
pub use present;
pub use results;
pub use runtime;
pub use sys;
pub use tune;
