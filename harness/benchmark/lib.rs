//! The benchmark surface (`shmbench bench`): the harness measuring itself against this machine's
//! limits, targets checked by measurement, never by timed tests.
//!
//! - [`measure`]: the seed setup as a host cell against the calibrated limit, the private memory of
//!   its processes, the seed matrix's wall time and crash times, and what `watch`'s sampler
//!   costs.
//! - [`targets`]: what it measures, as numbers, and the targets they are held to.
//! - [`table`]: each measure, its target and whether it is met.

pub mod measure;
pub mod scorecard;
pub mod targets;
