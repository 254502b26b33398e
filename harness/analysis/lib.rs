//! Numbers from results, no text: statistics across runs, claims against measurements,
//! comparisons of two result sets and histories across many,
//! statements that several cells measure together.

pub mod cell_key;
pub mod change_points;
pub mod claims;
pub mod compare;
pub mod convergence;
pub mod exact_tests;
pub mod history;
pub mod history_against;
pub mod natural_order;
mod order_stats;
pub mod outcomes;
pub mod runs;
pub mod statements;
pub mod stats;
pub mod summary;
pub mod trend;
pub mod verdict;
