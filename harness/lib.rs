//! shmbench: reproduce, measure and track the PyTorch DataLoader "Bus error".
//!
//! One folder per layer; imports point down only (ARCHITECTURE.md has the map and the rules,
//! `tests/architecture/` checks them):
//!
//! ```text
//! cli -> orchestrate -> runtime -> cell -> sys -> model
//!   \--> present -> analysis -> results -> model
//!                  plan (scenario, predict, advice) -> sys, model
//! ```

pub mod analysis;
pub mod cell;
pub mod check;
pub mod cli;
pub mod model;
pub mod orchestrate;
pub mod plan;
pub mod present;
pub mod results;
pub mod runtime;
pub mod sys;
