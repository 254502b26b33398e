//! Podman's Docker-compatible service, for cells with `engine podman`: one that already answers
//! (`CONTAINER_HOST`, else the system socket), or one this run starts on a socket in a directory
//! of its own and stops when it is done. A service of the run's own is started per OCI runtime
//! (`podman --runtime NAME system service`): Podman's runtime flags are global, and gVisor needs
//! one the others refuse (`--network=none`: runsc will not start a sandbox's network from the
//! root network namespace). The service dies with the harness (PR_SET_PDEATHSIG), and the
//! containers it started lose their stdin lifeline with it and end themselves.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::engine::Engine;
use model::knobs::{EngineKind, OciRuntime};
use sys::owner::Token;

/// The start of the name of a service's directory in the temporary directory, before the run's
/// token.
const DIR_PREFIX: &str = "shmbench-podman-";

/// What a run's owner record notes once it starts Podman: only such runs' leftovers are asked
/// of Podman (`sys::run_owner::note_use`).
const USED: &str = "podman";

/// How long a started service may take to answer.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stopped service may take to go before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// A `podman system service` this run started, stopped when dropped.
pub struct Service {
    child: Child,
    dir: tempfile::TempDir,
}

impl Service {
    fn socket(dir: &Path) -> PathBuf {
        dir.join("podman.sock")
    }

    /// Starts a service whose containers run under `oci`, and waits until it answers.
    fn start(oci: &OciRuntime) -> Result<(Service, Engine)> {
        let podman = which::which("podman").map_err(|_| {
            anyhow::anyhow!("engine podman: podman is not installed (Debian: `apt-get install podman`; `cargo xtask test` installs it)")
        })?;
        // Named by the run's token: a directory a SIGKILLed run left is swept by proof of
        // ownership (`sweep_dead_runs_dirs`), never by its name's pattern alone.
        let token = sys::run_owner::this_run()?;
        sys::run_owner::note_use(USED);
        let dir = tempfile::Builder::new()
            .prefix(&format!("{DIR_PREFIX}{token}-"))
            .tempdir()
            .context("engine podman: making the service's socket directory")?;
        let socket = Service::socket(dir.path());
        // sun_path holds 108 bytes, the terminating NUL among them.
        if socket.as_os_str().len() > 107 {
            bail!(
                "engine podman: the service's socket {} is longer than a unix socket's path may be (107 bytes): set TMPDIR to a shorter directory",
                socket.display()
            );
        }
        let log = std::fs::File::create(dir.path().join("service.log"))
            .context("engine podman: the service's log")?;
        if rootless() {
            // Rootless, the first Podman command makes the user's namespace and a pause process
            // to keep it, and re-executes itself inside in a child the death signal does not
            // reach (a SIGKILLed run left such a service serving): one made before the service
            // lets it join the namespace in place.
            let _ = Command::new(&podman)
                .args(["unshare", "true"])
                .env_remove("CONTAINER_HOST")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let mut command = Command::new(podman);
        if let Some(name) = oci.named() {
            command.args(["--runtime", name]);
        }
        if oci.is_gvisor() {
            command.args(["--runtime-flag", "network=none"]);
            // Rootless on cgroup v1 runsc cannot make its cgroups ("mkdir
            // /sys/fs/cgroup/blkio/ID: permission denied", runsc 20221219) and Podman applies no
            // limits there anyway: the sandbox runs in the service's.
            if rootless() && sys::cgroup::version() == Some(1) {
                command.args(["--runtime-flag", "ignore-cgroups"]);
            }
        }
        // A service of its own, not a client of another: CONTAINER_HOST would make this podman
        // a remote client, which has no `--runtime` and no `system service`.
        command
            .env_remove("CONTAINER_HOST")
            .env_remove("CONTAINER_CONNECTION")
            .args(["system", "service", "--time=0"])
            .arg(format!("unix://{}", socket.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        // SAFETY: prctl and setpgid are async-signal-safe. The service must not outlive the
        // harness, and must outlive a Ctrl-C (or `timeout`'s signal) to the harness's process
        // group: the harness removes its container through it after one.
        unsafe {
            command.pre_exec(|| {
                libc::setpgid(0, 0);
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let child = command
            .spawn()
            .context("engine podman: starting `podman system service`")?;
        let mut service = Service { child, dir };
        let began = Instant::now();
        loop {
            let socket = Service::socket(service.dir.path());
            if socket.exists() {
                if let Ok(engine) = Engine::connect_unix(EngineKind::Podman, &socket) {
                    return Ok((service, engine));
                }
            }
            if let Ok(Some(status)) = service.child.try_wait() {
                bail!(
                    "engine podman: `podman system service` ended ({status}) before it answered: {}",
                    service.log_tail()
                );
            }
            if let Some(sig) = sys::signals::received() {
                bail!(
                    "engine podman: {} while its service started",
                    sys::signals::name(sig)
                );
            }
            if began.elapsed() > START_TIMEOUT {
                bail!(
                    "engine podman: `podman system service` did not answer within {} s: {}",
                    START_TIMEOUT.as_secs(),
                    service.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The service's pid (its limits are its containers').
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The end of what the service said, for an error.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("service.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(3).collect();
        let tail: Vec<&str> = lines.into_iter().rev().collect();
        match tail.is_empty() {
            true => "it said nothing".to_string(),
            false => tail.join(" / "),
        }
    }
}

impl Drop for Service {
    /// Stops the service's whole process group: a rootless Podman re-executes itself inside its
    /// user namespace, and the child the harness started only waits for that one (killed alone
    /// after the grace, it left the service serving, orphaned).
    fn drop(&mut self) {
        use nix::sys::signal::{killpg, Signal};
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = killpg(group, Signal::SIGTERM);
        let began = Instant::now();
        let mut reaped = false;
        while began.elapsed() < STOP_GRACE {
            reaped = reaped || matches!(self.child.try_wait(), Ok(Some(_)));
            if reaped && sys::proc_tree::group_members(self.child.id()).is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = killpg(group, Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// Whether this run is an unprivileged user's: a service it starts is a rootless Podman.
fn rootless() -> bool {
    !nix::unistd::geteuid().is_root()
}

/// Refuses an OCI runtime Podman cannot find: it looks for runtimes on PATH.
pub(super) fn runtime_on_path(name: &str) -> Result<()> {
    if which::which(name).is_err() {
        bail!("oci-runtime {name}: Podman finds runtimes on PATH and there is no `{name}` here: install it (Debian packages runc, crun and runsc; `cargo xtask test` installs them) or put it on PATH");
    }
    Ok(())
}

/// The socket of a Podman service that may already run: `CONTAINER_HOST` (a unix address), else
/// the system service's (root) or the user's (`$XDG_RUNTIME_DIR/podman/podman.sock`).
fn existing_socket() -> Option<PathBuf> {
    if let Ok(host) = std::env::var("CONTAINER_HOST") {
        return host.strip_prefix("unix://").map(PathBuf::from);
    }
    let user = std::env::var_os("XDG_RUNTIME_DIR")
        .map(|d| PathBuf::from(d).join("podman/podman.sock"))
        .filter(|_| rootless());
    let system = PathBuf::from("/run/podman/podman.sock");
    user.into_iter()
        .chain(std::iter::once(system))
        .find(|p| p.exists())
}

/// An engine for `oci`'s containers: a service already answering when the engine's default
/// runtime will do, else one this run starts (returned with it, to keep it running).
pub fn connect(oci: &OciRuntime) -> Result<(Engine, Option<Service>)> {
    if let Some(name) = oci.named() {
        runtime_on_path(name)?;
    }
    if oci.named().is_none() {
        if let Some((mut engine, socket)) = existing_socket().and_then(|s| {
            let engine = Engine::connect_unix(EngineKind::Podman, &s).ok()?;
            Some((engine, s))
        }) {
            engine.info.rootless |= owned_by_a_user(&socket);
            return Ok((engine, None));
        }
    }
    let (service, mut engine) = Service::start(oci)?;
    engine.info.rootless |= rootless();
    Ok((engine, Some(service)))
}

/// Whether a service's socket belongs to an unprivileged user: Podman's compatible API does not
/// list `rootless` among its security options as Docker's does (Podman 4.3), and a service
/// makes its socket as the user it runs as.
fn owned_by_a_user(socket: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(socket).is_ok_and(|m| m.uid() != 0)
}

/// The service directories (`shmbench-podman-TOKEN-*`) in the temporary directory: (path, the
/// run's token).
fn service_dirs() -> Vec<(PathBuf, Token)> {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let token = Token::parse(name.strip_prefix(DIR_PREFIX)?.split('-').next()?)?;
            Some((e.path(), token))
        })
        .collect()
}

/// The runs whose Podman service directories or containers are still there (their records must
/// stay to prove them), each asked once: a sweep of many records asks about each of them.
pub fn runs_with_leftovers() -> Vec<Token> {
    let dirs = service_dirs().into_iter().map(|(_, t)| t);
    let containers = dead_runs_containers().into_iter().map(|(.., t)| t);
    dirs.chain(containers).collect()
}

/// Removes the service directories of runs provably dead (their owner record unlocked) whose
/// socket no process answers on (a live service holds it); their paths.
pub fn sweep_dead_runs_dirs() -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for (dir, token) in service_dirs() {
        let Some(_dead) = sys::run_owner::dead_run(&token) else {
            continue;
        };
        let socket = Service::socket(&dir);
        // A service still answering for a dead run is an orphan (a rootless Podman that
        // re-executed itself in its user namespace escapes the death signal): the run's token
        // in its socket's path proves it the dead run's.
        if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
            end_orphaned_service(&socket);
        }
        let answering = std::os::unix::net::UnixStream::connect(&socket).is_ok();
        if !answering && dir.is_dir() && std::fs::remove_dir_all(&dir).is_ok() {
            removed.push(dir);
        }
    }
    removed
}

/// Ends the processes of this user serving on `socket` (their command line names it): SIGTERM,
/// then SIGKILL after the grace.
fn end_orphaned_service(socket: &Path) {
    use nix::sys::signal::{kill, Signal};
    let address = format!("unix://{}", socket.display());
    let me = nix::unistd::geteuid().as_raw();
    let serving = || -> Vec<nix::unistd::Pid> {
        sys::proc_tree::all_pids()
            .into_iter()
            .filter(|pid| {
                use std::os::unix::fs::MetadataExt;
                let mine = std::fs::metadata(format!("/proc/{pid}")).is_ok_and(|m| m.uid() == me);
                let line = sys::proc_tree::command_line(*pid, 4096);
                mine && line.contains("system service") && line.ends_with(&address)
            })
            .map(|pid| nix::unistd::Pid::from_raw(pid as i32))
            .collect()
    };
    for pid in serving() {
        let _ = kill(pid, Signal::SIGTERM);
    }
    let began = Instant::now();
    while began.elapsed() < STOP_GRACE && !serving().is_empty() {
        std::thread::sleep(Duration::from_millis(100));
    }
    for pid in serving() {
        let _ = kill(pid, Signal::SIGKILL);
    }
}

/// The containers of shmbench runs on this host that Podman holds, asked through its command
/// (no service need answer): (id, name, the run's token). Podman is asked only when a dead run
/// used it (its record says so): a run that never used Podman never starts it.
fn dead_runs_containers() -> Vec<(String, String, Token)> {
    if which::which("podman").is_err() || !sys::run_owner::a_dead_run_used(USED) {
        return Vec::new();
    }
    let host = format!("label={}={}", super::LABEL_HOST, super::hostname());
    let Ok(out) = Command::new("podman")
        .args(["ps", "-a", "--format", "json", "--filter", &host])
        .stderr(Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    let listed: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
    listed
        .iter()
        .filter_map(|c| {
            let token = Token::parse(c["Labels"][super::LABEL_OWNER].as_str()?)?;
            let name = c["Names"][0].as_str().unwrap_or_default().to_string();
            Some((c["Id"].as_str()?.to_string(), name, token))
        })
        .collect()
}

/// Removes the Podman containers of runs provably dead (a run SIGKILLed while its container was
/// being made leaves it created, never started, and its service gone); their names.
pub fn sweep_dead_owners() -> Vec<String> {
    let mut removed = Vec::new();
    for (id, name, token) in dead_runs_containers() {
        let Some(_dead) = sys::run_owner::dead_run(&token) else {
            continue;
        };
        let gone = Command::new("podman")
            .args(["rm", "-f", &id])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if gone {
            removed.push(name);
        }
    }
    removed
}
