//! What the tests need from the machine: one [`Requirement`] per requirement, each in the module of its
//! own (`docker`, `torch`, `slurm`, ...); `main` lists them in the order they are set up.

/// One requirement of the tests.
pub trait Requirement {
    /// What it is, for the log.
    fn name(&self) -> &'static str;
    /// The variable that skips it (and the tests that need it) by name, if it can be skipped.
    fn skip_variable(&self) -> Option<&'static str> {
        None
    }
    /// Variables the tests need to find it (set for `cargo test`).
    fn env(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// Makes it present (idempotent: cheap when it already is); says what was done, or why it
    /// could not be, with the command that would do it.
    fn ensure(&self) -> anyhow::Result<String>;
    /// Ends what `ensure` started, after the tests (a daemon of its own); says what it did.
    fn stop(&self) -> Option<String> {
        None
    }
}
