//! shmbench: reproduce, measure and track the PyTorch DataLoader "Bus error".
//!
//! One folder per layer; imports point down only (ARCHITECTURE.md has the map and the rules,
//! `tests/architecture/` checks them):
//!
//! ```text
//! cli -> orchestrate -> runtime -> cell -> sys -> model -> explain
//!   |                              \--> explain (the fault tracer, the causes)
//!   |--> present -> check -> plan (scenario, predict, advice) -> sys, model
//!   |          \--> analysis -> results -> model
//!   |--> fleet (the node check, the fleet's verdict) -> present, analysis, results, sys
//!   \--> cluster (Slurm and Kubernetes: scripts, manifests, collect) -> runtime, plan, results
//! ```

pub use analysis;
pub use audit;
pub use cell;
pub use check;
pub use cluster;
pub use explain;
pub use fleet;
pub mod cli;
pub use model;
pub use orchestrate;
pub use plan;
pub use present;
pub use results;
pub use runtime;
pub use sys;
