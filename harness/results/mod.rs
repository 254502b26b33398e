//! Results: the typed row of one cell run, the CSV files that hold rows (written atomically after
//! every cell), the per-step series and watch reports beside them, merging files from many
//! machines, the rows of a Kubernetes fleet's pods (`k8s`), and a scenario's statements beside
//! its results (`statements`).

pub(crate) mod atomic;
pub(crate) mod baseline;
pub(crate) mod beside;
pub mod csv;
pub(crate) mod k8s;
pub(crate) mod k8s_jobs;
pub(crate) mod knob_columns;
pub(crate) mod logged;
pub(crate) mod merge;
pub mod record;
pub mod row;
pub(crate) mod row_build;
pub(crate) mod slurm;
pub(crate) mod spreadsheet;
pub(crate) mod statements;
pub(crate) mod steps;
pub mod stream;
pub(crate) mod watch;

pub use row::Row;
