//! Cells as Kubernetes Jobs: the manifests, their YAML, and the pods collected.

pub mod collect;
pub mod jobs;
pub mod manifest;
pub mod yaml;
