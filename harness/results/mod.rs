//! Results: the typed row of one cell run, the CSV files that hold rows (written atomically after
//! every cell), the per-step series and watch reports beside them, and merging files from many machines.

pub mod atomic;
pub mod baseline;
pub mod csv;
pub mod merge;
pub mod row;
pub mod steps;
pub mod watch;

pub use row::Row;
