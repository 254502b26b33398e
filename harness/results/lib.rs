//! Results: the typed row of one cell run, the CSV files that hold rows (written atomically after
//! every cell), the per-step series and watch reports beside them, merging files from many
//! machines, the rows of a Kubernetes fleet's pods (`k8s`), and a scenario's statements beside
//! its results (`statements`).

pub mod atomic;
pub mod baseline;
pub mod claims_file;
pub mod columns;
pub mod csv;
pub mod knob_columns;
pub mod log_lines;
pub mod merge;
pub mod record;
pub mod row;
pub mod row_build;
pub mod sidecar;
pub mod spreadsheet;
pub mod steps;
pub mod stream;
pub mod watch_file;

pub use row::Row;
