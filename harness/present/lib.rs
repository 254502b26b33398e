//! Presentation: everything that turns numbers into text, tables, plots and report files. Made
//! from results, analyses and diagnoses only; nothing here runs a cell or measures anything.

pub mod bmf;
pub mod calibration;
pub mod cell_key;
pub mod compare_json;
pub mod compare_note;
pub mod compare_tables;
pub mod doctor;
pub mod history_against;
pub mod history_columns;
pub mod history_table;
pub mod labels;
pub mod matrix;
pub mod outcomes;
pub mod report;
pub mod statements;
pub mod table;
pub mod terminal;
pub mod watch_text;
