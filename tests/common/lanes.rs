//! The lanes of the machine tests: a test that touches machine-wide state holds one lane's
//! lock, so the tests of a lane run one at a time while the lanes run side by side; each lane's
//! processes carry a mark of their own, so its leak checks judge only what it started.

use std::path::Path;
use std::process::Command;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use super::*;

/// A lane's lock: held by one test at a time (a Mutex's poisoning is not wanted here: the
/// next test checks the machine for itself).
pub struct LaneLock {
    held: Mutex<bool>,
    freed: Condvar,
}

impl LaneLock {
    const fn new() -> LaneLock {
        LaneLock {
            held: Mutex::new(false),
            freed: Condvar::new(),
        }
    }

    fn acquire(&self) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        while *held {
            held = self.freed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        *held = true;
    }

    /// Takes the lock when it is free; never waits.
    fn try_acquire(&self) -> bool {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        !std::mem::replace(&mut *held, true)
    }

    fn release(&self) {
        *self.held.lock().unwrap_or_else(|e| e.into_inner()) = false;
        self.freed.notify_all();
    }
}

/// Cells are heavy and the leak checks look at machine-wide state: one test at a time.
static SERIAL: LaneLock = LaneLock::new();

pub fn serial() -> Lane {
    mark();
    Lane::take("machine", &SERIAL)
}

/// The second machine lane: machine tests that run beside the first, one at a time: each is
/// self-contained (its cells in tmpfs mounts of their own, nothing timed against the machine's
/// quiet) and spends its time on one limit (vm.max_map_count's 65k mappings) or waiting (a
/// bisection's sleeping steps), so the two lanes share the 2 cores instead of queueing. Its
/// processes carry a mark of their own (`lane_mark`, set for the test's thread: start them
/// through `command`, `command_in`, `shmbench` or `run_cell`), so each lane's leak checks
/// judge only their own lane's processes, segments and containers.
static SECOND: LaneLock = LaneLock::new();

pub fn second_serial() -> Lane {
    let lane = format!("{}-second", mark());
    LANE_MARK.with(|m| *m.borrow_mut() = Some(lane));
    Lane::take("second machine", &SECOND)
}

/// The third lane: self-contained tests beside the two machine lanes, whose cells run where
/// nothing of theirs touches the host's state but processes and containers that carry the
/// lane's own mark: the VM tests (their kernel, their /dev/shm, their cgroups in a QEMU guest),
/// cells in containers of their own /dev/shm, and watched training scripts in a private one.
/// TCG keeps a core busy, yet the machine lanes spend much of their time waiting, so the suite
/// is shorter with these beside them than behind them (the guest's causes, three runs each,
/// made the second lane the suite's critical path; the first lane held 535 s of tests).
static THIRD: LaneLock = LaneLock::new();

pub fn third_serial() -> Lane {
    let lane = format!("{}-third", mark());
    LANE_MARK.with(|m| *m.borrow_mut() = Some(lane));
    Lane::take("third", &THIRD)
}

/// Every lane at once, for a test that times its cells against each other (the made fleet's
/// nodes, each judged against the others' img/s): no other test that starts work on this
/// machine runs beside it. All four are taken together or none: a lane taken while another's
/// long test ends would stand idle (taken one by one, the second lane was held 155 s for a 17 s
/// test, and was the suite's critical path), so the test waits until every lane is free at
/// once, which is when their queues have drained. Its processes carry the first lane's mark.
pub fn exclusive_serial() -> (Lane, Lane, Lane, Lane) {
    mark();
    let locks: [(&'static str, &'static LaneLock); 4] = [
        ("machine", &SERIAL),
        ("second machine", &SECOND),
        ("slurm", &SLURM),
        ("third", &THIRD),
    ];
    loop {
        let taken: Vec<_> = locks
            .iter()
            .take_while(|(_, lock)| lock.try_acquire())
            .collect();
        if taken.len() == locks.len() {
            let [first, second, slurm, third] = locks.map(|(lane, lock)| Lane::held(lane, lock));
            return (first, second, slurm, third);
        }
        for (_, lock) in taken {
            lock.release();
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

thread_local! {
    /// The mark of the lane this test's thread holds, when it is not the machine lane's.
    static LANE_MARK: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// The owner mark this test's processes carry and its leak checks judge: its lane's.
pub fn lane_mark() -> String {
    LANE_MARK
        .with(|m| m.borrow().clone())
        .unwrap_or_else(|| mark().to_string())
}

/// The one-node Slurm cluster's tests: one at a time (they share the node's /dev/shm), but beside
/// the machine tests, since they spend their time waiting on the scheduler. What they start runs
/// under `beside_mark` (`slurm_command`), so the machine tests' leak checks, which judge only this
/// binary's mark, never count a Slurm test's processes or segments as their own.
static SLURM: LaneLock = LaneLock::new();

pub fn slurm_serial() -> Lane {
    mark();
    Lane::take("slurm", &SLURM)
}

/// A held lane lock. On release it appends how long the test held it to `lanes.tsv` in the
/// tests' scratch directory (`cargo xtask test` sums the lanes and names the longest holders
/// after the run: the machine lane is the suite's critical path, so that is where time goes).
pub struct Lane {
    lock: &'static LaneLock,
    lane: &'static str,
    began: Instant,
}

impl Lane {
    fn take(lane: &'static str, lock: &'static LaneLock) -> Lane {
        lock.acquire();
        Lane::held(lane, lock)
    }

    /// A lock this test has just taken.
    fn held(lane: &'static str, lock: &'static LaneLock) -> Lane {
        Lane {
            lock,
            lane,
            began: Instant::now(),
        }
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        // Released even when the test panicked (a Mutex's poisoning is not wanted here: the
        // next test checks the machine for itself).
        self.lock.release();
        LANE_MARK.with(|m| *m.borrow_mut() = None);
        let Some(scratch) = std::env::var_os("SHMBENCH_TEST_SCRATCH") else {
            return;
        };
        let test = std::thread::current()
            .name()
            .unwrap_or("unnamed")
            .to_string();
        let line = format!(
            "{}\t{:.1}\t{test}\n",
            self.lane,
            self.began.elapsed().as_secs_f64()
        );
        // One short O_APPEND write per test: whole lines, whatever runs beside it.
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(Path::new(&scratch).join("lanes.tsv"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    }
}

/// The owner mark of what the Slurm tests start: this binary's, told apart.
pub fn beside_mark() -> String {
    format!("{}-slurm", mark())
}

/// `command` marked as the Slurm tests' (see `slurm_serial`).
pub fn slurm_command(command: &mut Command) -> &mut Command {
    command.env(OWNER_VARIABLE, beside_mark())
}
