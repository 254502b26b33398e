//! The worker processes of one cell and the failure monitor over them.
//!
//! Workers are re-execs of this binary (`/proc/self/exe worker ...`), not forks of a threaded
//! process. Each has a socket pair, a second one for its sharer thread and a pidfd (`sys::child_fd`); one `poll`
//! over all of them wakes the main the moment a message arrives or a worker dies, so a SIGBUS is
//! noticed within milliseconds.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::poll::{poll, PollFd, PollFlags};

use super::feeder::Feeder;
use super::sharer::{self, FetchError, SHARER_SOCKET_FD};
use super::wire::{self, FromWorker, RecvError, ToWorker, WORKER_SOCKET_FD};
use model::config::CellConfig;
use sys::child_fd::{self, ChildFd, DeathPipe};
use sys::owner::Token;
use sys::process::{self, Exit};
use sys::reexec;

struct Worker {
    pid: u32,
    sock: OwnedFd,
    /// The main's end of the worker's sharer socket.
    sharer: OwnedFd,
    /// Its death as a pollable fd (a pidfd, or a death pipe where the kernel has no pidfds).
    death: ChildFd,
    /// The worker closed its socket (it is exiting); stop polling it so a slow exit cannot spin.
    closed: bool,
    exited: Option<Exit>,
    /// The death was handed out as an event.
    reported: bool,
}

impl Worker {
    /// Waits up to `grace` for the worker to exit and reaps it if it has.
    fn reap_within(&mut self, grace: Duration) {
        if self.exited.is_none() {
            self.exited = self.death.reap_within(grace);
        }
    }
}

/// Something the main must react to.
pub enum Event {
    Message {
        worker: u32,
        msg: FromWorker,
    },
    /// A worker is gone (after any messages it sent first have been delivered).
    Died {
        pid: u32,
        exit: Exit,
    },
    /// Nothing happened before the deadline.
    Timeout,
}

pub struct Pool {
    /// Sends the workers' indices (torch's index-queue feeder thread).
    feeder: Feeder,
    workers: Vec<Worker>,
}

impl Pool {
    /// Starts `config.workers` workers.
    /// Their segments carry `token`, their main's owner record's.
    /// Starts the workers of `config`, each with `env` besides this process's environment.
    pub fn spawn(config: &CellConfig, token: &Token, env: &[(&str, String)]) -> Result<Pool> {
        let config_json = serde_json::to_string(config)?;
        let mut workers = Vec::with_capacity(config.knobs.workers as usize);
        for id in 0..config.knobs.workers {
            let (main_end, worker_end) = wire::pair().context("creating a worker socket pair")?;
            let (sharer_main, sharer_worker) =
                wire::pair().context("creating a worker's sharer socket pair")?;
            let raw = worker_end.as_raw_fd();
            let raw_sharer = sharer_worker.as_raw_fd();
            let pipe = DeathPipe::new().context("creating a worker's death pipe")?;
            let death_end = pipe.child_end();
            let mut cmd = reexec::self_command();
            cmd.arg("worker")
                .arg(id.to_string())
                .arg(std::process::id().to_string())
                .arg(token.as_str())
                .arg(&config_json)
                .envs(env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null())
                .stdout(Stdio::null());
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::dup2(raw, WORKER_SOCKET_FD) < 0
                        || libc::dup2(raw_sharer, SHARER_SOCKET_FD) < 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                    child_fd::keep_across_exec(death_end)?;
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
            let child = cmd.spawn().context("starting a worker process")?;
            drop(worker_end);
            drop(sharer_worker);
            let pid = child.id();
            let death = ChildFd::open(pid, pipe).context("pidfd_open on a worker")?;
            workers.push(Worker {
                pid,
                sock: main_end,
                sharer: sharer_main,
                death,
                closed: false,
                exited: None,
                reported: false,
            });
        }
        let sockets = workers
            .iter()
            .map(|w| w.sock.try_clone())
            .collect::<std::io::Result<Vec<_>>>()
            .context("duplicating the workers' sockets for the index feeder")?;
        let feeder = Feeder::start(sockets).context("starting the index feeder thread")?;
        Ok(Pool { feeder, workers })
    }

    /// Pids of the workers still running.
    pub fn live_pids(&self) -> Vec<u32> {
        self.workers
            .iter()
            .filter(|w| w.exited.is_none())
            .map(|w| w.pid)
            .collect()
    }

    pub fn pid(&self, worker: u32) -> u32 {
        self.workers[worker as usize].pid
    }

    /// Sends each (worker, index) through the feeder thread and returns once all are sent (see
    /// [`Feeder`]). A dead worker's send error is ignored: its death arrives as an event.
    pub fn send_tasks(&self, tasks: Vec<(u32, u64)>) {
        self.feeder.send(tasks);
    }

    /// Waits until `deadline` for the next event. Messages already sent by a worker are always
    /// delivered before its death.
    pub fn next_event(&mut self, deadline: Instant) -> Result<Event> {
        loop {
            let timeout = deadline.saturating_duration_since(Instant::now());
            let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(self.workers.len() * 2);
            for w in &self.workers {
                let flags = if w.closed {
                    PollFlags::empty()
                } else {
                    PollFlags::POLLIN
                };
                fds.push(PollFd::new(w.sock.as_fd(), flags));
            }
            for w in &self.workers {
                let flags = if w.exited.is_some() {
                    PollFlags::empty()
                } else {
                    PollFlags::POLLIN
                };
                fds.push(PollFd::new(w.death.as_fd(), flags));
            }
            let ready = match poll(&mut fds, process::poll_timeout(timeout)) {
                Ok(n) => n,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e).context("poll on workers"),
            };
            if ready == 0 {
                return Ok(Event::Timeout);
            }
            let n = self.workers.len();
            let sock_ready: Vec<bool> = fds[..n]
                .iter()
                .zip(&self.workers)
                .map(|(f, w)| {
                    !w.closed
                        && f.revents()
                            .is_some_and(|r| r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP))
                })
                .collect();
            let died: Vec<bool> = fds[n..]
                .iter()
                .map(|f| f.revents().is_some_and(|r| !r.is_empty()))
                .collect();
            drop(fds);
            for (i, dead) in died.iter().enumerate() {
                let w = &mut self.workers[i];
                if *dead && w.exited.is_none() {
                    w.exited = w.death.try_reap();
                }
            }
            // A death by signal is the root cause of whatever the others report next (a
            // file_system segment left by a SIGBUS fills the tmpfs for everyone), so it comes
            // first. A worker that exits with a code reported why before it went, so its
            // messages come first and its death once its socket is drained.
            let unreported = |w: &Worker, by_signal: bool| {
                !w.reported
                    && matches!(w.exited, Some(Exit::Signal(_))) == by_signal
                    && w.exited.is_some()
            };
            if let Some(i) = self.workers.iter().position(|w| unreported(w, true)) {
                return Ok(self.report_death(i));
            }
            for (i, ready) in sock_ready.iter().enumerate() {
                if !ready {
                    continue;
                }
                match wire::recv::<FromWorker>(self.workers[i].sock.as_fd()) {
                    Ok(r) => {
                        return Ok(Event::Message {
                            worker: i as u32,
                            msg: r.msg,
                        })
                    }
                    // Batch messages carry no fd (the sharer hands it over).
                    Err(RecvError::FdTableFull) => {
                        anyhow::bail!("worker {i} sent an fd on its task socket")
                    }
                    // Its death follows through the pidfd.
                    Err(RecvError::Closed) => self.workers[i].closed = true,
                    Err(RecvError::Io(e)) => {
                        return Err(e).with_context(|| format!("reading from worker {i}"))
                    }
                }
            }
            if let Some(i) = self
                .workers
                .iter()
                .position(|w| unreported(w, false) && w.closed)
            {
                return Ok(self.report_death(i));
            }
            if Instant::now() >= deadline {
                return Ok(Event::Timeout);
            }
        }
    }

    /// Fetches batch `idx`'s fd from `worker`'s sharer (see [`sharer`]).
    pub fn fetch_fd(
        &self,
        worker: u32,
        idx: u64,
        deadline: Instant,
    ) -> Result<OwnedFd, FetchError> {
        let w = &self.workers[worker as usize];
        sharer::fetch(w.sharer.as_fd(), w.death.as_fd(), idx, deadline)
    }

    /// How `worker` ended, waiting up to `grace` for it, once its sharer went quiet mid-fetch;
    /// its death is then not reported again as an event.
    pub fn death_of(&mut self, worker: u32, grace: Duration) -> Option<(u32, Exit)> {
        let w = &mut self.workers[worker as usize];
        w.reap_within(grace);
        w.reported = true;
        w.exited.map(|exit| (w.pid, exit))
    }

    fn report_death(&mut self, i: usize) -> Event {
        let w = &mut self.workers[i];
        w.reported = true;
        Event::Died {
            pid: w.pid,
            exit: w.exited.expect("only reaped workers are reported"),
        }
    }

    /// Asks every worker to stop and waits up to `grace` for them; kills the rest.
    pub fn shutdown(mut self, grace: Duration) {
        for w in &self.workers {
            let _ = wire::send(w.sock.as_fd(), &ToWorker::Stop, None);
        }
        let deadline = Instant::now() + grace;
        for w in &mut self.workers {
            w.reap_within(deadline.saturating_duration_since(Instant::now()));
        }
        self.kill_all();
    }

    /// SIGKILLs every worker still alive and reaps it.
    pub fn kill_all(&mut self) {
        for w in &mut self.workers {
            if w.exited.is_none() {
                w.exited = Some(w.death.kill_and_reap());
            }
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.kill_all();
    }
}
