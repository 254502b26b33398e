//! The report's content as blocks that each output format renders its own way: made by
//! `document` (and its sections), written by `markdown` and `html`.

/// Every text is data to its renderer: each escapes control characters (`terminal::shown`),
/// so no field read from a results file can start a line of its own, forge a workflow command
/// or drive a terminal.
pub enum Block {
    Heading(u8, String),
    Paragraph(String),
    Table(Vec<String>, Vec<Vec<String>>),
    List(Vec<String>),
    /// Shell lines, one command each.
    Code(Vec<String>),
    /// Index into `ReportContent::plots`.
    Plot(usize),
}
