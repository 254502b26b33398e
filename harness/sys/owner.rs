//! Ownership by run token: what shmbench may delete on a node it shares with other programs.
//!
//! A name pattern is not ownership: another run, a run in another pid namespace, or another
//! program can make a file called `shmbench_...`. So whatever creates things that may outlive it
//! (named segments, memory cgroups, containers) first creates an **owner record**: an empty file
//! named `<prefix><token>` (a random 64-bit token) that it holds `flock`ed for as long as it
//! lives. The lock dies with the last process holding the record's open file, however it died
//! (SIGKILL, the OOM killer), and `flock` works across pid namespaces and containers that share
//! the directory. Things the owner makes carry the token in their names (`<prefix><token>_...`).
//!
//! A sweep removes a thing only when (1) its token's record exists and its lock can be taken
//! (the owner is dead) and (2) `lease_removal` proves it unheld, by fd or by mapping, in any pid
//! namespace, and covered by no mount in any mount namespace. A record goes only once no file
//! it proves is left. Names are compared as raw bytes and files as (device, inode), never after a lossy
//! conversion. Records appear already locked (O_TMPFILE, then linked into place), so a sweep can
//! never mistake a record being created for a dead one.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::holders::{file_id, FileId};
use super::lease_removal::{remove_held_by_self, remove_proven_unheld, Removal, Whose};

/// Hex digits in a token (64 random bits).
const TOKEN_LEN: usize = 16;

/// A run's random token: 16 lowercase hex digits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Token(String);

impl Token {
    /// A fresh token from the kernel's random source.
    pub fn random() -> io::Result<Token> {
        let mut bytes = [0u8; TOKEN_LEN / 2];
        // SAFETY: getrandom fills the buffer we pass, of the length we pass.
        let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
        if n != bytes.len() as isize {
            return Err(io::Error::last_os_error());
        }
        Ok(Token(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// The token at the start of `bytes`, if they begin with one.
    pub fn leading(bytes: &[u8]) -> Option<Token> {
        let head = bytes.get(..TOKEN_LEN)?;
        head.iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
            .then(|| Token(String::from_utf8_lossy(head).into_owned()))
    }

    /// `text` if it is exactly a token.
    pub fn parse(text: &str) -> Option<Token> {
        (text.len() == TOKEN_LEN)
            .then(|| Token::leading(text.as_bytes()))
            .flatten()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a name in an owner's directory is, read from its raw bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum Named {
    /// `<prefix><token>`: an owner record.
    Record(Token),
    /// `<prefix><token>_<rest>`: a thing that token's owner made.
    Owned(Token),
    /// Anything else: not shmbench's to touch.
    Foreign,
}

/// Classifies `name` (raw bytes) against `prefix`.
pub fn classify(name: &[u8], prefix: &str) -> Named {
    let Some(rest) = name.strip_prefix(prefix.as_bytes()) else {
        return Named::Foreign;
    };
    let Some(token) = Token::leading(rest) else {
        return Named::Foreign;
    };
    match &rest[TOKEN_LEN..] {
        [] => Named::Record(token),
        [b'_', more @ ..] if !more.is_empty() => Named::Owned(token),
        _ => Named::Foreign,
    }
}

pub fn flock(file: &File, how: libc::c_int) -> io::Result<()> {
    // SAFETY: plain syscall on an fd we own.
    if unsafe { libc::flock(file.as_raw_fd(), how) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Gives the unnamed file `file` the name `path` (linkat through /proc/self/fd, which needs no
/// capability, unlike AT_EMPTY_PATH).
fn link_into_place(file: &File, path: &Path) -> io::Result<()> {
    let from = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
    let to = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: plain syscall on two NUL-terminated paths we own.
    let rc = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A live owner record: the lock is held while this value (and any process that inherited
/// its fd) lives.
pub struct OwnerRecord {
    file: File,
    path: PathBuf,
    dir: PathBuf,
    prefix: &'static str,
    token: Token,
}

impl OwnerRecord {
    /// Creates `dir/<prefix><token>` with a fresh token, locked before it has a name.
    pub fn create(dir: &Path, prefix: &'static str) -> io::Result<OwnerRecord> {
        let token = Token::random()?;
        let path = dir.join(format!("{prefix}{token}"));
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_TMPFILE)
            .mode(0o600)
            .open(dir)
        {
            Ok(file) => {
                flock(&file, libc::LOCK_EX)?;
                // Linked into place already locked: no sweep can see it unlocked while we live.
                link_into_place(&file, &path)?;
                file
            }
            // A filesystem without O_TMPFILE: a dot-name no sweep considers, locked, renamed.
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                let staging = dir.join(format!(".{prefix}{token}.new"));
                let file = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&staging)?;
                flock(&file, libc::LOCK_EX)?;
                std::fs::rename(&staging, &path)?;
                file
            }
            Err(e) => return Err(e),
        };
        Ok(OwnerRecord {
            file,
            path,
            dir: dir.to_path_buf(),
            prefix,
            token,
        })
    }

    pub fn token(&self) -> &Token {
        &self.token
    }

    /// Adds a line to the record (what the run used that a later sweep must ask about).
    pub fn note(&self, line: &str) -> io::Result<()> {
        use std::io::Write;
        (&self.file).write_all(format!("{line}\n").as_bytes())
    }

    /// Removes the record from a directory that only this user's shmbench runs write (a run's
    /// record in `run_owner::run_dir`, mode 0700): no other program's file or mount is there
    /// to prove anything against, and no lease need be supported there.
    pub fn unlink_from_private_dir(&self) {
        unlink_if_same(&self.path, &self.file);
    }

    /// Removes what this owner made in its directory that no live process holds.
    pub fn remove_unheld(&self) -> Removal {
        remove_owned(&self.dir, self.prefix, &self.token, Whose::OwnRun)
    }
}

impl Drop for OwnerRecord {
    fn drop(&mut self) {
        // The record goes only with the last thing it proves: whatever a live process still
        // holds stays provably ours for a later sweep, once that process lets go.
        self.remove_unheld();
        if owned_files(&self.dir, self.prefix, &self.token).is_empty() {
            let _ = remove_held_by_self(&self.path, &self.file, Whose::OwnRun);
        }
    }
}

/// Whether the owner of `token` in `dir` is provably dead: its record exists and its lock could
/// be taken. The lock is held until the returned value drops, so the owner cannot come back.
pub fn claim_dead(dir: &Path, prefix: &str, token: &Token) -> Option<DeadOwner> {
    let path = dir.join(format!("{prefix}{token}"));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    flock(&file, libc::LOCK_EX | libc::LOCK_NB).ok()?;
    Some(DeadOwner { file, path })
}

/// A dead owner's record, locked by us.
pub struct DeadOwner {
    file: File,
    path: PathBuf,
}

/// Unlinks `path` only if it is still the file `file` is open on (not a replacement): for a
/// private directory only (see [`OwnerRecord::unlink_from_private_dir`]).
fn unlink_if_same(path: &Path, file: &File) {
    let same = match (std::fs::symlink_metadata(path), file.metadata()) {
        (Ok(on_disk), Ok(ours)) => file_id(&on_disk) == file_id(&ours),
        _ => false,
    };
    if same {
        let _ = std::fs::remove_file(path);
    }
}

impl DeadOwner {
    /// Removes a dead run's record from a private directory (see
    /// [`OwnerRecord::unlink_from_private_dir`]).
    pub fn remove_from_private_dir(self) {
        unlink_if_same(&self.path, &self.file);
    }

    /// Removes the record (once what it proved is gone), by the proof every removal takes.
    pub fn remove(self) -> Result<(), super::lease_removal::Kept> {
        remove_held_by_self(&self.path, &self.file, Whose::Others)
    }
}

/// Files in `dir` that `token`'s owner made: path and identity.
pub fn owned_files(dir: &Path, prefix: &str, token: &Token) -> Vec<(PathBuf, FileId)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| classify(e.file_name().as_bytes(), prefix) == Named::Owned(token.clone()))
        .filter_map(|e| {
            let meta = e.metadata().ok()?; // does not follow symlinks
            meta.is_file().then(|| (e.path(), file_id(&meta)))
        })
        .collect()
}

/// Removes the files `token` owns in `dir` that are proven unheld.
pub fn remove_owned(dir: &Path, prefix: &str, token: &Token, whose: Whose) -> Removal {
    remove_proven_unheld(&owned_files(dir, prefix, token), whose)
}

/// Removes, in `dir`, the owned files of every dead owner no live process holds, and the
/// records of owners that left nothing else. Live owners and foreign names are not touched.
pub fn sweep(dir: &Path, prefix: &str) -> Removal {
    let mut removal = Removal::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return removal;
    };
    let tokens: Vec<Token> = entries
        .flatten()
        .filter_map(|e| match classify(e.file_name().as_bytes(), prefix) {
            Named::Record(token) => Some(token),
            _ => None,
        })
        .collect();
    for token in tokens {
        let Some(dead) = claim_dead(dir, prefix, &token) else {
            continue;
        };
        removal.absorb(remove_owned(dir, prefix, &token, Whose::Others));
        // The record is the proof for its files: it goes only once none is left.
        if owned_files(dir, prefix, &token).is_empty() {
            if let Err(why) = dead.remove() {
                let record = dir.join(format!("{prefix}{token}"));
                removal
                    .kept
                    .push((record, format!("{why} (its owner record)")));
            }
        }
    }
    removal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_classified_from_raw_bytes() {
        let t = "0123456789abcdef";
        let p = "shmbench_";
        assert_eq!(
            classify(format!("{p}{t}").as_bytes(), p),
            Named::Record(Token(t.into()))
        );
        assert_eq!(
            classify(format!("{p}{t}_0_3").as_bytes(), p),
            Named::Owned(Token(t.into()))
        );
        // The old pid-named segments, upper case, short tokens, a bare separator, other bytes.
        for foreign in [
            "shmbench_999999_0_0".as_bytes(),
            b"shmbench_12_important",
            b"shmbench_0123456789ABCDEF",
            b"shmbench_0123456789abcde",
            b"shmbench_0123456789abcdef_",
            b"shmbench_0123456789abcdefX",
            b"torch_0123456789abcdef",
            b"shmbench_0123456789abcd\xff\xfe",
        ] {
            assert_eq!(classify(foreign, p), Named::Foreign, "{foreign:?}");
        }
    }

    #[test]
    fn a_record_is_locked_while_it_lives_and_claimable_after() {
        let dir = tempfile::tempdir().unwrap();
        let record = OwnerRecord::create(dir.path(), "t_").unwrap();
        let token = record.token().clone();
        assert!(
            claim_dead(dir.path(), "t_", &token).is_none(),
            "a live owner"
        );
        let owned = dir.path().join(format!("t_{token}_a"));
        std::fs::write(&owned, b"x").unwrap();
        let holder = File::open(&owned).unwrap();
        assert!(
            record
                .remove_unheld()
                .kept
                .iter()
                .map(|(p, _)| p)
                .eq([&owned]),
            "held by us"
        );
        drop(holder);
        drop(record);
        // Gone with the record, or, when a process forked by a test beside this one still held
        // a copy of our fd for a moment (fds are closed at its exec), left for the sweep that
        // the record's free lock allows: nothing held is removed, nothing unheld stays.
        let empty = || std::fs::read_dir(dir.path()).unwrap().next().is_none();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !empty() && std::time::Instant::now() < deadline {
            sweep(dir.path(), "t_");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(!owned.exists() && empty());
    }
}
