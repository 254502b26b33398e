//! Progress of a run on the terminal: on a TTY one line per cell, rewritten as its steps come in;
//! otherwise (CI logs, pipes) a line when a cell starts and one when it ends.

use std::io::{IsTerminal, Write};

use crate::model::size::ByteSize;
use crate::orchestrate::event::Event;
use crate::present::labels::status_label;
use crate::runtime::Stream;

pub(crate) struct Terminal {
    tty: bool,
    /// A step line is on the terminal's last line (to be erased before other output).
    drawn: std::cell::Cell<bool>,
}

impl Terminal {
    pub(crate) fn new() -> Terminal {
        Terminal {
            tty: std::io::stderr().is_terminal(),
            drawn: std::cell::Cell::new(false),
        }
    }

    /// The observer to hand to orchestration.
    pub(crate) fn observer(self) -> impl FnMut(Event) {
        move |event| self.show(event)
    }

    fn show(&self, event: Event) {
        match event {
            Event::Note(text) => eprintln!("{text}"),
            Event::Swept(swept) => {
                for line in super::sweep::lines(&swept) {
                    eprintln!("{line}");
                }
            }
            Event::Started { label } => {
                if !self.tty {
                    eprintln!("{label} ...");
                }
            }
            Event::Step {
                label,
                progress,
                elapsed,
            } => {
                if self.tty {
                    eprint!(
                        "\r\x1b[2K{label}  step {}/{}  {:.1} s",
                        progress.step,
                        progress.total,
                        elapsed.as_secs_f64()
                    );
                    let _ = std::io::stderr().flush();
                    self.drawn.set(true);
                }
            }
            Event::Output(output) => {
                // The command's bytes as it wrote them (no newline added, none taken away), so
                // no step line may be erased over a line it has not finished.
                if self.drawn.replace(false) {
                    eprint!("\r\x1b[2K");
                }
                let _ = match output.stream {
                    Stream::Stdout => {
                        let mut out = std::io::stdout().lock();
                        out.write_all(&output.bytes).and_then(|_| out.flush())
                    }
                    Stream::Stderr => std::io::stderr().lock().write_all(&output.bytes),
                };
            }
            Event::Finished {
                label,
                row,
                elapsed,
            } => {
                let rate = row
                    .img_per_s
                    .map(|r| format!("{r:.1} img/s"))
                    .unwrap_or_else(|| "-".into());
                if self.tty {
                    eprint!("\r\x1b[2K");
                }
                eprintln!(
                    "{label}  {}  {rate}  peak /dev/shm {}  {:.1} s",
                    status_label(row),
                    ByteSize(row.peak_shm_bytes),
                    elapsed.as_secs_f64()
                );
            }
            Event::Interrupted { label } => {
                if self.tty {
                    eprintln!();
                }
                eprintln!("{label}  interrupted; this cell is not recorded");
            }
        }
    }
}
