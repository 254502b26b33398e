//! Orchestration: the jobs that run cells for a command (a matrix of cells, the min-shm
//! bisection, the harness benchmark, the doctor's verification, calibration). It chooses cells
//! and runtimes, collects rows and tells what happens through [`event::Event`]s.

pub(crate) mod bench;
pub(crate) mod calibrate;
pub(crate) mod event;
pub(crate) mod fidelity;
pub(crate) mod leftovers;
pub(crate) mod minshm;
pub(crate) mod runner;
pub(crate) mod slurm_task;
pub(crate) mod verify;
