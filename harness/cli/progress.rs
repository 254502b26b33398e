//! Progress of a run on the terminal. On a TTY, a run of several cells keeps one bar at the
//! bottom (indicatif): the cells done of those due, the elapsed time and an ETA, and the current
//! cell with its step; each finished cell prints its line above the bar. Elsewhere (CI logs,
//! pipes) plain lines only: one when a cell starts and one when it ends.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::model::size::ByteSize;
use crate::orchestrate::event::{Event, Place};
use crate::present::labels::status_label;
use crate::runtime::Stream;

pub(crate) struct Terminal {
    tty: bool,
    /// The bar, once a run of more than one cell has started on a TTY.
    bar: Option<ProgressBar>,
}

/// The bar's look: cells done of those due, the time so far and to go, the current cell.
fn style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{bar:24.cyan/blue} {pos}/{len} cells  {elapsed_precise} elapsed, ETA {eta_precise}  {wide_msg}",
    )
    .expect("a valid template")
    .progress_chars("=> ")
}

impl Terminal {
    pub(crate) fn new() -> Terminal {
        Terminal {
            tty: std::io::stderr().is_terminal(),
            bar: None,
        }
    }

    /// The observer to hand to orchestration.
    pub(crate) fn observer(mut self) -> impl FnMut(Event) {
        move |event| self.show(event)
    }

    /// A line for the terminal: above the bar when there is one.
    fn line(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    fn started(&mut self, label: &str, place: Place) {
        if !self.tty {
            eprintln!("{label} ...");
            return;
        }
        if self.bar.is_none() && place.most > 1 {
            let bar = ProgressBar::with_draw_target(
                Some(place.most as u64),
                ProgressDrawTarget::stderr(),
            );
            bar.set_style(style());
            bar.enable_steady_tick(Duration::from_millis(500));
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(place.done.saturating_sub(1) as u64);
            bar.set_message(label.to_string());
        }
    }

    fn show(&mut self, event: Event) {
        match event {
            Event::Note(text) => self.line(&text),
            Event::Swept(swept) => {
                for line in super::sweep::lines(&swept) {
                    self.line(&line);
                }
            }
            Event::Started { label, place } => self.started(label, place),
            Event::Step {
                label,
                progress,
                elapsed,
            } => {
                let text = format!(
                    "{label}  step {}/{}  {:.1} s",
                    progress.step,
                    progress.total,
                    elapsed.as_secs_f64()
                );
                match &self.bar {
                    Some(bar) => bar.set_message(text),
                    None if self.tty => {
                        eprint!("\r\x1b[2K{text}");
                        let _ = std::io::stderr().flush();
                    }
                    None => {}
                }
            }
            Event::Output(output) => {
                // The command's bytes as it wrote them (no newline added, none taken away).
                let write = || {
                    let _ = match output.stream {
                        Stream::Stdout => {
                            let mut out = std::io::stdout().lock();
                            out.write_all(&output.bytes).and_then(|_| out.flush())
                        }
                        Stream::Stderr => std::io::stderr().lock().write_all(&output.bytes),
                    };
                };
                match &self.bar {
                    Some(bar) => bar.suspend(write),
                    None => write(),
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
                if self.tty && self.bar.is_none() {
                    eprint!("\r\x1b[2K");
                }
                self.line(&format!(
                    "{label}  {}  {rate}  peak /dev/shm {}  {:.1} s",
                    status_label(row),
                    ByteSize(row.peak_shm_bytes),
                    elapsed.as_secs_f64()
                ));
                if let Some(bar) = &self.bar {
                    bar.inc(1);
                }
            }
            Event::Interrupted { label } => {
                if let Some(bar) = self.bar.take() {
                    bar.abandon();
                } else if self.tty {
                    eprintln!();
                }
                eprintln!("{label}  interrupted; this cell is not recorded");
            }
        }
    }
}

impl Drop for Terminal {
    /// The bar goes when the run is over, leaving the lines printed above it.
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
