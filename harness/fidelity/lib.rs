//! The fidelity surface (`shmbench fidelity`, docs/TORCH.md): the emulation measured against
//! the real DataLoader on this machine.
//!
//! - [`run`]: every cell planned twice, emulated and as real torch per Python given, and run
//!   interleaved and repeated through the runner.
//! - [`pairs`]: the rows of such a run paired cell by cell, each loader's outcomes, crash steps,
//!   peak and throughput; [`verdict`] the rule that judges a pair (the exact tests, then the
//!   passing peak against 10% of torch's).
//! - [`table`]: the pairs as a Markdown table with their verdicts and evidence.

pub mod agreement;
pub mod pairs;
pub mod run;
pub mod table;
