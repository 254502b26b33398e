//! The report's content as blocks that each output format renders its own way: made by
//! `document` (and its sections), written by `markdown` and `html`.

pub enum Block {
    Heading(u8, String),
    Paragraph(String),
    Table(Vec<String>, Vec<Vec<String>>),
    List(Vec<String>),
    Code(String),
    /// Index into `ReportContent::plots`.
    Plot(usize),
}
