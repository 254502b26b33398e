//! The lanes of the machine tests: a test that touches machine-wide state holds one lane's
//! lock, so the tests of a lane run one at a time while the lanes run side by side; each lane's
//! processes carry a mark of their own, so its leak checks judge only what it started.

use std::path::Path;
use std::process::Command;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use super::*;

/// A lane's lock: held by one test at a time; a test that asks with priority gets it next,
/// before the tests already waiting (every test starts at once, so a lane's queue is long).
pub struct LaneLock {
    state: Mutex<LockState>,
    freed: Condvar,
}

#[derive(Default)]
struct LockState {
    held: bool,
    priority_waiting: bool,
}

impl LaneLock {
    const fn new() -> LaneLock {
        LaneLock {
            state: Mutex::new(LockState {
                held: false,
                priority_waiting: false,
            }),
            freed: Condvar::new(),
        }
    }

    fn acquire(&self, priority: bool) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if priority {
            state.priority_waiting = true;
        }
        while state.held || (!priority && state.priority_waiting) {
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.held = true;
        if priority {
            state.priority_waiting = false;
        }
    }

    fn release(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).held = false;
        self.freed.notify_all();
    }
}

/// Cells are heavy and the leak checks look at machine-wide state: one test at a time.
static SERIAL: LaneLock = LaneLock::new();

pub fn serial() -> Lane {
    mark();
    Lane::take("machine", &SERIAL, false)
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
    Lane::take("second machine", &SECOND, false)
}

/// The VM lane: tests whose cells run in QEMU guests of their own (their kernel, their /dev/shm,
/// their cgroups), beside the other lanes: nothing of theirs touches the host's state but their
/// QEMU processes and initrd files, which carry the lane's own mark. TCG keeps a core busy, yet
/// the machine lanes spend much of their time waiting, so the suite is shorter with it beside
/// them than behind the second lane (where the guest's causes, three runs each, made that lane
/// the suite's critical path).
static VM: LaneLock = LaneLock::new();

pub fn vm_serial() -> Lane {
    let lane = format!("{}-vm", mark());
    LANE_MARK.with(|m| *m.borrow_mut() = Some(lane));
    Lane::take("vm", &VM, false)
}

/// Every lane at once, for a test that times its cells against
/// each other (the made fleet's nodes, each judged against the others' img/s): no other test
/// that starts work on this machine runs beside it. The second lane's lock first, then the
/// Slurm lane's, the VM lane's and the first's, each with priority (next after the test that holds it): the one
/// order any test that takes several uses, so no two wait on each other; the first lane, the
/// suite's critical path, is not held idle while the others' long tests finish. Its processes
/// carry the first lane's mark.
pub fn exclusive_serial() -> (Lane, Lane, Lane, Lane) {
    let second = Lane::take("second machine", &SECOND, false);
    let slurm = Lane::take("slurm", &SLURM, true);
    let vm = Lane::take("vm", &VM, true);
    mark();
    let first = Lane::take("machine", &SERIAL, true);
    (first, second, slurm, vm)
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
    Lane::take("slurm", &SLURM, false)
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
    fn take(lane: &'static str, lock: &'static LaneLock, priority: bool) -> Lane {
        lock.acquire(priority);
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
