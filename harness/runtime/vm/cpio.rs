//! The newc cpio format the kernel unpacks an initramfs from: a header of thirteen 8-digit hex
//! fields per entry, the name and the data each padded to 4 bytes, and a `TRAILER!!!` entry.
//! Archives can be concatenated; the kernel unpacks each in turn.

/// An archive being written.
#[derive(Default)]
pub struct Archive {
    bytes: Vec<u8>,
    next_ino: u32,
}

const DIR: u32 = 0o040_000;
const FILE: u32 = 0o100_000;
const LINK: u32 = 0o120_000;
const CHAR: u32 = 0o020_000;

impl Archive {
    fn entry(&mut self, name: &str, mode: u32, data: &[u8], rdev: (u32, u32)) {
        self.next_ino += 1;
        let name = name.trim_start_matches('/');
        let fields = [
            self.next_ino,
            mode,
            0,
            0,
            1,
            0,
            data.len() as u32,
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() as u32 + 1,
            0,
        ];
        self.bytes.extend_from_slice(b"070701");
        for f in fields {
            self.bytes.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.bytes.extend_from_slice(name.as_bytes());
        self.bytes.push(0);
        self.pad();
        self.bytes.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.bytes.len().is_multiple_of(4) {
            self.bytes.push(0);
        }
    }

    pub fn dir(&mut self, path: &str) {
        self.entry(path, DIR | 0o755, &[], (0, 0));
    }

    /// A regular file; its parent directories must have been added first.
    pub fn file(&mut self, path: &str, data: &[u8], perm: u32) {
        self.entry(path, FILE | perm, data, (0, 0));
    }

    pub fn symlink(&mut self, path: &str, target: &str) {
        self.entry(path, LINK | 0o777, target.as_bytes(), (0, 0));
    }

    pub fn char_device(&mut self, path: &str, major: u32, minor: u32) {
        self.entry(path, CHAR | 0o600, &[], (major, minor));
    }

    /// A file with every parent directory it needs, each added once.
    pub fn file_with_parents(
        &mut self,
        path: &str,
        data: &[u8],
        perm: u32,
        made: &mut Vec<String>,
    ) {
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        for i in 1..parts.len() {
            let dir = parts[..i].join("/");
            if !made.contains(&dir) {
                self.dir(&dir);
                made.push(dir);
            }
        }
        self.file(path, data, perm);
    }

    /// The archive, with its trailer.
    pub fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, &[], (0, 0));
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_newc_and_aligned() {
        let mut a = Archive::default();
        a.file("/init", b"abc", 0o755);
        let bytes = a.finish();
        assert!(bytes.starts_with(b"070701"));
        assert_eq!(bytes.len() % 4, 0);
        let text = String::from_utf8_lossy(&bytes);
        // mode 0100755, size 3, name "init\0" (5)
        assert!(text.starts_with("07070100000001000081ed"), "{text}");
        assert!(text.contains("init\0"));
        assert!(text.contains("TRAILER!!!"));
    }
}
