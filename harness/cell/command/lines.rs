//! A watched command's output cut into lines for `--step-regex` and the evidence of how it
//! ended, while the bytes themselves are relayed untouched. A line ends at `\n` or at `\r` (a
//! tqdm-style progress update rewrites its line with `\r`: each update is a line here), and only
//! its first [`MAX_LINE`] bytes are kept, so a line of any length takes bounded memory.

/// Bytes of one line kept for matching; the rest of a longer line is relayed but not matched.
pub const MAX_LINE: usize = 64 * 1024;

/// Cuts a byte stream into lines.
#[derive(Default)]
pub struct Lines {
    current: Vec<u8>,
    /// The current line has run past [`MAX_LINE`].
    cut: bool,
}

impl Lines {
    /// Feeds `chunk`; returns the lines it completed (lossily decoded, without their ending).
    pub fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        let mut done = Vec::new();
        for piece in chunk.split_inclusive(|b| *b == b'\n' || *b == b'\r') {
            let (body, ended) = match piece.last() {
                Some(b'\n' | b'\r') => (&piece[..piece.len() - 1], true),
                _ => (piece, false),
            };
            let room = MAX_LINE.saturating_sub(self.current.len());
            self.current
                .extend_from_slice(&body[..body.len().min(room)]);
            self.cut |= body.len() > room;
            if ended {
                done.extend(self.take());
            }
        }
        done
    }

    /// The last line, if the stream ended without a line ending.
    pub fn finish(&mut self) -> Option<String> {
        self.take()
    }

    fn take(&mut self) -> Option<String> {
        let empty = self.current.is_empty() && !self.cut;
        let line = String::from_utf8_lossy(&self.current).into_owned();
        self.current.clear();
        self.cut = false;
        (!empty).then_some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_at_lf_and_cr_across_chunks() {
        let mut lines = Lines::default();
        assert_eq!(lines.push(b"step 1\rstep"), vec!["step 1"]);
        assert_eq!(lines.push(b" 2\r\nlast"), vec!["step 2"]);
        assert_eq!(lines.finish(), Some("last".to_string()));
        assert_eq!(lines.finish(), None);
    }

    #[test]
    fn a_long_line_keeps_its_first_bytes_only() {
        let mut lines = Lines::default();
        let long = vec![b'x'; 3 * MAX_LINE];
        assert!(lines.push(&long).is_empty());
        assert!(lines.current.len() <= MAX_LINE);
        let done = lines.push(b"\n");
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].len(), MAX_LINE);
    }
}
