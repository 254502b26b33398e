//! CSV results (placeholder, filled in below).
