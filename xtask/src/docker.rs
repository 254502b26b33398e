//! The Docker engine the Docker tests use: installed (Debian's docker.io) if missing, started if
//! it does not answer, and asked through its API socket (`GET /_ping`) so no CLI is needed to
//! know that it works.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::apt;
use crate::host::on_path;
use crate::requirement::Requirement;

/// Where the engine listens: `DOCKER_HOST` (a unix:// address) or the local socket.
fn socket() -> PathBuf {
    std::env::var("DOCKER_HOST")
        .ok()
        .and_then(|h| h.strip_prefix("unix://").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/var/run/docker.sock"))
}

/// The body of the engine's answer to `GET path` over its socket (HTTP/1.0: it closes after).
pub fn get(path: &str) -> Option<String> {
    let mut stream = UnixStream::connect(socket()).ok()?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(3)));
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: docker\r\n\r\n").as_bytes())
        .ok()?;
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    let ok = reply.starts_with("HTTP/1.") && reply.lines().next()?.contains(" 200 ");
    ok.then(|| {
        reply
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_string())
    })?
}

/// Whether the engine answers its ping.
fn answers() -> bool {
    get("/_ping").is_some_and(|body| body == "OK")
}

/// How long a starting engine may take to answer.
const START_TIMEOUT: Duration = Duration::from_secs(90);

pub struct Engine;

impl Requirement for Engine {
    fn name(&self) -> &'static str {
        "Docker engine"
    }

    fn skip_variable(&self) -> Option<&'static str> {
        Some("SHMBENCH_SKIP_DOCKER")
    }

    fn ensure(&self) -> anyhow::Result<String> {
        if answers() {
            return Ok(format!("answers at {}", socket().display()));
        }
        let mut done = Vec::new();
        if !on_path("dockerd") {
            apt::install(&["docker.io"])?;
            done.push("installed docker.io");
        }
        let log = std::env::temp_dir().join("shmbench-dockerd.log");
        let file = std::fs::File::create(&log)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", log.display()))?;
        // Started in its own session so it outlives this command (and the tests after it).
        let spawned = Command::new("setsid")
            .arg("dockerd")
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .spawn();
        if let Err(e) = spawned {
            return Err(anyhow::anyhow!(
                "cannot start dockerd ({e}): start the engine yourself (`sudo systemctl start docker`, or `sudo dockerd &`), or set SHMBENCH_SKIP_DOCKER=1 to skip the Docker tests"
            ));
        }
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if answers() {
                done.push("started dockerd");
                return Ok(format!("{} (log: {})", done.join(", "), log.display()));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        let tail = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = tail.lines().rev().take(15).collect();
        Err(anyhow::anyhow!(
            "dockerd did not answer within {} s. The end of its log ({}):\n{}",
            START_TIMEOUT.as_secs(),
            log.display(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ))
    }
}
