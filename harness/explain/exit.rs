//! How one process ended, as a wait status says: its exit code, or the signal that killed it.

use serde::{Deserialize, Serialize};

/// How one process ended: exit code, or the signal that killed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    /// From a raw wait status.
    pub fn from_wait(status: i32) -> Exit {
        if libc::WIFSIGNALED(status) {
            Exit::Signal(libc::WTERMSIG(status))
        } else {
            Exit::Code(libc::WEXITSTATUS(status))
        }
    }

    /// The signal that killed it, if one did.
    pub fn signal(self) -> Option<i32> {
        match self {
            Exit::Signal(s) => Some(s),
            Exit::Code(_) => None,
        }
    }

    /// The processes of `ends` a signal killed: (pid, signal).
    pub fn killed(ends: impl IntoIterator<Item = (u32, Exit)>) -> Vec<(u32, i32)> {
        let by_signal = |(pid, exit): (u32, Exit)| Some((pid, exit.signal()?));
        ends.into_iter().filter_map(by_signal).collect()
    }

    /// As a shell reports it: the code, or 128 + the signal.
    pub fn code(self) -> i32 {
        match self {
            Exit::Code(c) => c,
            Exit::Signal(s) => 128 + s,
        }
    }
}
