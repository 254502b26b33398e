//! The `--format` of the commands that print either words or JSON (`calibrate`, `min-shm`,
//! `shm`): one type, so the same word means the same format in each.

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TextOrJson {
    Text,
    Json,
}
