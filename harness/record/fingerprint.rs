//! Environment fingerprint (placeholder).
