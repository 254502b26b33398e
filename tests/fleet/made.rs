//! A fleet made here (placeholder).
