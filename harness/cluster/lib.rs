//! The cluster surface: the matrix's cells run where a fleet's jobs run, and their results
//! brought back.
//!
//! - [`slurm`]: the batch script of an array job (one task per cell and repeat, its
//!   `#SBATCH` values checked), the task that runs a cell on a node, Slurm's commands
//!   (`sbatch`, `sacct`, `scontrol`), and `slurm collect`: the tasks' output files and Slurm's
//!   word on how each ended, as results rows.
//! - [`k8s`]: the manifests of a matrix as Kubernetes Jobs, JSON as block YAML and back, and
//!   `k8s collect`: the pods' logs and statuses as results rows.
//!
//! Every file and log it reads back is untrusted text, parsed, never run. It depends on the
//! core below it and nothing depends on it but the command line.

pub mod k8s;
pub mod slurm;
