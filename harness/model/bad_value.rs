//! The one error of the model's parsers: a flag's or scenario key's text that is not a value of
//! its kind, said as what was given and what is wanted (with an example), so clap, scenario
//! errors and CSV readers all print the same sentence.

/// `'<given>' is not <wanted>`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{given}' is not {wanted}")]
pub struct BadValue {
    /// The text as given.
    pub given: String,
    /// What a value of this kind is, and how to write one.
    pub wanted: String,
}

impl BadValue {
    pub fn new(given: &str, wanted: impl Into<String>) -> BadValue {
        BadValue {
            given: given.to_string(),
            wanted: wanted.into(),
        }
    }
}
