//! The fleet surface: what a fleet's health machinery asks of shmbench.
//!
//! - [`node`]: one node's /dev/shm judged against a policy (its facts gathered from the live
//!   tmpfs, the verdict, what it does to the node's Slurm state), said to Slurm, Node Problem
//!   Detector, NHC and Prometheus.
//! - [`judge`]: which nodes of a fleet are the odd ones out, from the results rows the nodes
//!   wrote (`shmbench fleet`): the norm per cell, the judgement, and the verdict in words, JSON
//!   and the commands that act on it.
//!
//! It depends on the core below it and nothing depends on it but the command line.

pub mod judge;
pub mod node;
