//! shmbench: reproduce, measure and track the PyTorch DataLoader "Bus error".
//!
//! Data flows one way: scenario -> plan (cells) -> runtime launches `shmbench cell` -> loader ->
//! record (JSON) -> results (CSV) -> table.

pub mod bench;
pub mod calibrate;
pub mod cell;
pub mod cgroup;
pub mod compare;
pub mod config;
pub mod detect;
pub mod doctor;
pub mod history;
pub mod interrupt;
pub mod loader;
pub mod minshm;
pub mod predict;
pub mod process;
pub mod record;
pub mod report;
pub mod runner;
pub mod runtime;
pub mod scenario;
pub mod size;
pub mod stats;
pub mod table;
pub mod timefmt;
pub mod verdict;
