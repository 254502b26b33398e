//! Plain types every layer shares: the knobs, a resolved cell config and its validation, the
//! record a cell prints, byte sizes, a calibration. No I/O here.

pub mod bench;
pub mod calibration;
pub mod claim;
pub mod config;
pub mod cpus;
pub mod estimate;
pub mod knobs;
pub mod record;
pub mod repeat;
pub mod size;
pub mod validate;
