//! Removing a tmpfs's stale entries (`shmbench shm --sweep-stale`). By default only files whose
//! owner is named and proven gone (`staleness`); files of unknown owner only under a path
//! the user opts in, and then only when unchanged (mtime and ctime: `cp -a` and `touch -d` set
//! the mtime back, never the ctime) and provably unread (the atime, read as the mount's atime
//! rule allows) for the age asked.
//!
//! Each candidate is proven unheld as it goes (`lease_removal`: a write lease and one /proc
//! read per batch), and each removal is reported as it happens.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use nix::fcntl::OFlag;
use nix::sys::stat::FileStat;

use crate::findings::{
    old_enough, AtimeUpdates, ShmAudit, ShmEntry, StaleSweep, Staleness, SweepEvent,
};
use crate::live::seconds_since;
use crate::staleness::record_token;
use sys::lease_removal::{
    lease, open_on, unlink_unheld, HoldStops, IgnoreSigio, Kept, Leased, Whose, BATCH,
};
use sys::signals;

/// What the user asked a sweep to remove.
pub struct SweepAsk<'a> {
    /// Only what has been unchanged (and, for unowned files, unread) this long.
    pub older_than: Duration,
    /// Paths (canonical, under the root) whose files of unknown owner the user opts in.
    pub unowned: &'a [PathBuf],
}

/// One candidate, as the audit saw it.
struct Candidate<'a> {
    entry: &'a ShmEntry,
    /// Why it may go (the owner gone, or the user's opt-in).
    because: String,
    /// A file of unknown owner: its atime must prove it unread too.
    unowned: bool,
}

/// Removes the audit's stale files (and the opted-in unowned ones), reporting each event to
/// `report` as it happens.
pub fn sweep(
    root: &Path,
    audit: &ShmAudit,
    ask: &SweepAsk,
    report: &mut dyn FnMut(&SweepEvent),
) -> StaleSweep {
    let mut out = StaleSweep::default();
    let mut note = |out: &mut StaleSweep, event: SweepEvent| {
        report(&event);
        out.record(&event);
    };
    let candidates = candidates(root, audit, ask, &mut out, &mut note);
    let Ok(device) =
        std::fs::symlink_metadata(root).map(|m| std::os::unix::fs::MetadataExt::dev(&m))
    else {
        return out;
    };
    let _sigio = IgnoreSigio::install();
    // A record is the proof for its run's files: records go in a pass of their own, after
    // every file, and only a record none of whose files is left.
    let (records, files): (Vec<_>, Vec<_>) = candidates
        .into_iter()
        .partition(|c| record_token(c.entry).is_some());
    for pass in [files, records] {
        for batch in pass.chunks(BATCH) {
            if signals::received().is_some() {
                out.interrupted = true;
                return out;
            }
            let stops = HoldStops::hold();
            let events = remove_batch(root, device, batch, ask.older_than, audit.atime);
            drop(stops);
            for event in events {
                note(&mut out, event);
            }
        }
    }
    out
}

/// The entries a sweep may remove, owned files' owner records last (a record is the proof for
/// its files); the others counted or reported as kept.
fn candidates<'a>(
    root: &Path,
    audit: &'a ShmAudit,
    ask: &SweepAsk,
    out: &mut StaleSweep,
    note: &mut dyn FnMut(&mut StaleSweep, SweepEvent),
) -> Vec<Candidate<'a>> {
    let age = ask.older_than.as_secs_f64();
    let mut found = Vec::new();
    for entry in &audit.entries {
        if let Staleness::DeadOwner { owner } = &entry.staleness {
            if !old_enough(entry.ages(), age, None) {
                out.younger += 1;
                continue;
            }
            let because = format!("its owner is gone ({owner})");
            found.push(Candidate {
                entry,
                because,
                unowned: false,
            });
        } else if entry.unowned() {
            let Some(opted) = ask.unowned.iter().find(|p| under(root, entry, p)) else {
                out.unowned_left += 1;
                continue;
            };
            if audit.atime == AtimeUpdates::Never {
                note(out, kept(entry, Kept::NoAtime));
            } else if !old_enough(entry.ages(), age, Some(audit.atime)) {
                out.younger += 1;
            } else {
                found.push(Candidate {
                    entry,
                    because: format!(
                        "unknown owner, opted in by {}, unheld, unchanged and unread for the age asked",
                        opted.display()
                    ),
                    unowned: true,
                });
            }
        }
    }
    found
}

/// Whether the entry lies under `path` (a canonical path), compared by raw bytes.
fn under(root: &Path, entry: &ShmEntry, path: &Path) -> bool {
    let mut full = root.to_path_buf();
    for part in &entry.raw_path {
        full.push(OsStr::from_bytes(part));
    }
    full.starts_with(path)
}

fn kept(entry: &ShmEntry, why: Kept) -> SweepEvent {
    SweepEvent::Kept {
        name: entry.name.clone(),
        why: why.to_string(),
    }
}

/// Leases a batch, reads /proc once for it, and removes each candidate still unheld.
fn remove_batch(
    root: &Path,
    device: u64,
    batch: &[Candidate],
    older_than: Duration,
    atime: AtimeUpdates,
) -> Vec<SweepEvent> {
    let mut events = Vec::new();
    let mut leased = Vec::new();
    for (index, candidate) in batch.iter().enumerate() {
        if let Some(left) = proven_files_left(root, candidate.entry) {
            events.push(kept(candidate.entry, left));
            continue;
        }
        match lease_candidate(root, device, index, candidate, older_than, atime) {
            Ok(l) => leased.push(l),
            Err(why) => events.push(kept(candidate.entry, why)),
        }
    }
    for (index, done) in unlink_unheld(leased, Whose::Others) {
        let candidate = &batch[index];
        events.push(match done {
            Ok(()) => SweepEvent::Removed {
                name: candidate.entry.name.clone(),
                bytes: candidate.entry.allocated_bytes,
                because: candidate.because.clone(),
            },
            Err(why) => kept(candidate.entry, why),
        });
    }
    events
}

/// For an owner record, why it must stay: files it proves are still there.
fn proven_files_left(root: &Path, entry: &ShmEntry) -> Option<Kept> {
    let token = record_token(entry)?;
    let dir = crate::staleness::parent_dir(root, &entry.raw_path);
    let left = sys::owner::owned_files(&dir, sys::shm::NAME_PREFIX, &token).len();
    (left > 0).then_some(Kept::ProvesFiles(left))
}

/// Opens a candidate through its directories (each on the root's tmpfs, none through a
/// symlink) and leases it, if it is still the file the audit saw and still old (and unread)
/// enough.
fn lease_candidate(
    root: &Path,
    device: u64,
    index: usize,
    candidate: &Candidate,
    older_than: Duration,
    atime: AtimeUpdates,
) -> Result<Leased, Kept> {
    let entry = candidate.entry;
    let mut dir = open_on(
        None,
        root.as_os_str().as_bytes(),
        OFlag::O_DIRECTORY,
        device,
    )?;
    let (file, dirs) = entry.raw_path.split_last().ok_or(Kept::Changed)?;
    for part in dirs {
        dir = open_on(Some(&dir), part, OFlag::O_DIRECTORY, device)?;
    }
    let rule = candidate.unowned.then_some(atime);
    lease(
        index,
        dir,
        file,
        (device, entry.inode),
        |st| match still_old(st, older_than, rule) {
            true => Ok(()),
            false => Err(Kept::Touched),
        },
    )
}

/// Whether a file is still unchanged (and, given the mount's atime rule, unread) for `age`.
fn still_old(st: &FileStat, age: Duration, atime: Option<AtimeUpdates>) -> bool {
    let now = SystemTime::now();
    let ages = (
        seconds_since(now, st.st_mtime, st.st_mtime_nsec),
        seconds_since(now, st.st_ctime, st.st_ctime_nsec),
        seconds_since(now, st.st_atime, st.st_atime_nsec),
    );
    old_enough(ages, age.as_secs_f64(), atime)
}
