//! From what the user asked to the cells to run, and what the model predicts for them: scenario
//! files, resolving knobs for this machine, the refusal of loaders bigger than the machine,
//! predictions and the doctor's advice, the cell a watched command runs in, and a plan spread over
//! kernels. Nothing here runs a cell.

pub mod advice;
pub mod command_cell;
pub mod consumers;
pub mod container_runtimes;
pub mod fixes;
pub mod job;
pub mod kernels;
pub mod loader_fixes;
pub mod memory;
pub mod peak_words;
pub mod predict;
pub mod resolve;
pub mod runtime_notes;
pub mod scenario;
