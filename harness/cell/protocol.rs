//! What a cell process and the runtime that launched it agree on, beyond the JSON record on
//! stdout: the environment variables a runtime sets and the progress lines a cell writes on
//! stderr. Both sides use these definitions, so they cannot drift apart.

/// Set (to anything) by a runtime that wants progress lines on stderr.
pub const PROGRESS_ENV: &str = "SHMBENCH_PROGRESS";

/// A folder the harness made for the cell and removes once the cell's processes are all gone,
/// however they ended: what a cell keeps on disk (a torch cell's multiprocessing folder) goes in
/// it, since a cell killed by an interrupt or its deadline never runs its own cleanup.
pub const SCRATCH_ENV: &str = "SHMBENCH_CELL_SCRATCH";

/// Set to `stdin` by the Docker runtime: end the cell when stdin closes (the harness died).
pub const LIFELINE_ENV: &str = "SHMBENCH_LIFELINE";

/// Where a VM guest finds its cell's config (in the initramfs).
pub const GUEST_CELL_FILE: &str = "/cell.json";
/// The console line a VM guest prints its record behind.
pub const RECORD_MARK: &str = "SHMBENCH-RECORD ";
/// On the kernel command line of a VM shmbench boots for a cell (`/proc/cmdline`): the machine
/// is shmbench's own, booted for that cell, so an injection that costs the kernel a page for
/// good (memory-error) may run there. Not an environment variable: a process's environment is
/// anyone's to set, a running kernel's command line is not.
pub const GUEST_ARG: &str = "shmbench.guest=1";

/// Whether this kernel was booted by shmbench for a cell ([`GUEST_ARG`]).
pub fn in_guest() -> bool {
    std::fs::read_to_string("/proc/cmdline")
        .is_ok_and(|line| line.split_whitespace().any(|arg| arg == GUEST_ARG))
}
/// The console line a VM guest without a cell prints (the accelerator probe).
pub const READY_MARK: &str = "SHMBENCH-READY";

/// Progress of a running cell, as its stderr reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    pub step: u64,
    pub total: u64,
}

impl Progress {
    /// The stderr line for this progress: `progress <step> <total>`.
    pub fn line(self) -> String {
        format!("progress {} {}", self.step, self.total)
    }

    /// Reads a line written by [`Progress::line`]; None for any other line.
    pub fn parse(line: &str) -> Option<Progress> {
        let mut parts = line.strip_prefix("progress ")?.split(' ');
        let step = parts.next()?.parse().ok()?;
        let total = parts.next()?.parse().ok()?;
        Some(Progress { step, total })
    }
}

/// Which stream of a watched command a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// One line a watched command printed, relayed by its cell to the harness, which prints it
/// where the command meant it (the cell's own stdout carries only its record).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    pub stream: Stream,
    /// The bytes as the command wrote them: any bytes, CRs and partial lines included.
    pub bytes: Vec<u8>,
}

impl Output {
    /// The stderr line for this output: `out 1 <escaped>` or `out 2 <escaped>`, where every byte
    /// but printable ASCII other than `%` and space is written `%XX`, so the line is one line of
    /// ASCII whatever the command wrote, and [`Output::parse`] gives back the very bytes.
    pub fn line(&self) -> String {
        let fd = match self.stream {
            Stream::Stdout => 1,
            Stream::Stderr => 2,
        };
        let mut line = String::with_capacity(6 + self.bytes.len());
        line.push_str(&format!("out {fd} "));
        for &b in &self.bytes {
            if b.is_ascii_graphic() && b != b'%' {
                line.push(b as char);
            } else {
                line.push_str(&format!("%{b:02X}"));
            }
        }
        line
    }

    /// Reads a line written by [`Output::line`]; None for any other line.
    pub fn parse(line: &str) -> Option<Output> {
        let rest = line.strip_prefix("out ")?;
        let (stream, text) = match rest.split_at_checked(2)? {
            ("1 ", text) => (Stream::Stdout, text),
            ("2 ", text) => (Stream::Stderr, text),
            _ => return None,
        };
        Some(Output {
            stream,
            bytes: unescape(text)?,
        })
    }
}

/// The bytes an escaped output line stands for; None when it is not one.
fn unescape(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex = [bytes.next()?, bytes.next()?];
            out.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
        } else {
            out.push(b);
        }
    }
    Some(out)
}

/// What a running cell reports to the runtime that launched it, beside free text on stderr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CellMessage {
    Progress(Progress),
    Output(Output),
}

impl CellMessage {
    /// Reads one stderr line of a cell; None for free text.
    pub fn parse(line: &str) -> Option<CellMessage> {
        Progress::parse(line)
            .map(CellMessage::Progress)
            .or_else(|| Output::parse(line).map(CellMessage::Output))
    }
}

#[cfg(test)]
mod tests {
    use super::{CellMessage, Output, Progress, Stream};

    #[test]
    fn output_lines_round_trip() {
        let o = Output {
            stream: Stream::Stderr,
            bytes: b"  progress 1 2 (the job's own words)".to_vec(),
        };
        assert_eq!(CellMessage::parse(&o.line()), Some(CellMessage::Output(o)));
        // Any bytes: CR, LF, NUL, invalid UTF-8, '%', no final newline.
        let raw = Output {
            stream: Stream::Stdout,
            bytes: b"a\r\nb\xff\x00c 100% done\r".to_vec(),
        };
        let line = raw.line();
        assert!(
            line.is_ascii() && !line.contains('\n') && !line.contains('\r'),
            "{line}"
        );
        assert_eq!(Output::parse(&line), Some(raw));
        assert_eq!(Output::parse("out 1 %G0"), None);
        let empty = Output {
            stream: Stream::Stdout,
            bytes: Vec::new(),
        };
        assert_eq!(Output::parse(&empty.line()), Some(empty));
        assert_eq!(Output::parse("out 3 x"), None);
    }

    #[test]
    fn progress_lines_round_trip() {
        let p = Progress {
            step: 7,
            total: 100,
        };
        assert_eq!(Progress::parse(&p.line()), Some(p));
        assert_eq!(Progress::parse("warning: progress 1 2"), None);
    }
}
