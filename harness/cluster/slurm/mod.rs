//! Cells as Slurm array tasks: the batch script and its directives, the task on the node,
//! Slurm's commands, and the tasks' outputs collected.

pub mod collect;
pub mod commands;
pub mod directive;
pub mod ends;
pub mod hostlist;
pub mod output;
pub mod script;
pub mod task;
