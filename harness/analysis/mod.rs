//! Numbers from results, no text: statistics across runs, claims against measurements,
//! comparisons of two result sets and histories across many,
//! statements that several cells measure together.

pub(crate) mod change_points;
pub(crate) mod claims;
pub mod compare;
pub(crate) mod convergence;
pub(crate) mod exact_tests;
pub(crate) mod fidelity;
pub(crate) mod history;
mod order_stats;
pub(crate) mod outcomes;
pub(crate) mod power;
pub(crate) mod runs;
pub(crate) mod statements;
pub(crate) mod stats;
pub mod summary;
pub(crate) mod trend;
