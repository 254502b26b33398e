//! Presentation: everything that turns numbers into text, tables, plots and report files. Made
//! from results, analyses and diagnoses only; nothing here runs a cell or measures anything.

pub(crate) mod bench;
pub mod bmf;
pub(crate) mod calibration;
pub(crate) mod check;
pub mod compare;
pub mod doctor;
pub(crate) mod fidelity;
pub(crate) mod history;
pub(crate) mod k8s_manifest;
pub(crate) mod labels;
pub mod matrix;
pub(crate) mod report;
pub(crate) mod sbatch_line;
pub(crate) mod shm_audit;
pub(crate) mod slurm_script;
pub(crate) mod statements;
pub(crate) mod table;
pub(crate) mod terminal;
pub(crate) mod watch;
