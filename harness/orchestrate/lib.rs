//! Orchestration: the jobs that run cells for a command (a matrix of cells, the min-shm
//! bisection, the harness benchmark, the doctor's verification, calibration). It chooses cells
//! and runtimes, collects rows and tells what happens through [`event::Event`]s.

pub mod calibrate;
pub mod event;
pub mod launcher;
pub mod leftovers;
pub mod minshm;
pub mod runner;
pub mod verify;
