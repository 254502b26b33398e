//! Progress of a run on the terminal: on a TTY one line per cell, rewritten as its steps come in;
//! otherwise (CI logs, pipes) a line when a cell starts and one when it ends.

use std::io::{IsTerminal, Write};

use crate::model::size::ByteSize;
use crate::orchestrate::event::Event;
use crate::present::labels::status_label;
use crate::runtime::Stream;

pub struct Terminal {
    tty: bool,
}

impl Terminal {
    pub fn new() -> Terminal {
        Terminal {
            tty: std::io::stderr().is_terminal(),
        }
    }

    /// The observer to hand to orchestration.
    pub fn observer(self) -> impl FnMut(Event) {
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
                }
            }
            Event::Output(output) => {
                if self.tty {
                    eprint!("\r\x1b[2K");
                }
                match output.stream {
                    Stream::Stdout => println!("{}", output.text),
                    Stream::Stderr => eprintln!("{}", output.text),
                }
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
