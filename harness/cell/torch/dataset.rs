//! A user's own Dataset (the knob `dataset`) read once before any cell runs it: one sample's
//! bytes as the default collate makes it, the samples it has, and the tensor bytes it holds
//! (what forkserver and spawn workers receive through /dev/shm). The model counts these in place
//! of the synthetic image's shape and dtype.

use std::io::Read;
use std::time::{Duration, Instant};

use serde::Deserialize;

use model::config::CellConfig;
use model::knobs::{Dtype, KnobValues, Shape};
use sys::process;

/// One sample of the user's Dataset, as the torch program read it.
#[derive(Clone, Debug, Deserialize)]
pub struct Sample {
    /// Bytes of one sample's tensors after the default collate (numbers become 8-byte ones).
    pub sample_bytes: u64,
    /// Samples in the Dataset (cycled for the cell's steps x batch).
    pub length: u64,
    /// Bytes of the tensors the Dataset object holds.
    pub held_bytes: u64,
    /// The tensors' shapes and dtypes, for words (`3x32x32 float32, int64`).
    pub shapes: String,
}

impl Sample {
    /// Makes `knobs` say what this Dataset puts through /dev/shm: a sample's bytes as a flat u8
    /// image, the tensors it holds as dataset-bytes (what the model and a row count).
    pub fn describe(&self, knobs: &mut KnobValues) {
        knobs.shape = Shape(vec![self.sample_bytes]);
        knobs.dtype = Dtype::U8;
        knobs.dataset_bytes = self.held_bytes;
    }
}

#[derive(Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Line {
    Probe(Sample),
    Error { message: String },
}

/// Loads `config`'s Dataset with its Python and reads its first sample; the error says what
/// failed (the user's code's own exception, or an interpreter that did not answer within the
/// cell's watchdog).
pub fn probe(config: &CellConfig) -> Result<Sample, String> {
    let mut json = serde_json::to_value(config).map_err(|e| e.to_string())?;
    json["probe"] = serde_json::Value::Bool(true);
    let mut cmd = super::interpreter(config, json.to_string(), None);
    process::piped_and_tied(&mut cmd);
    // A group of its own, ended whole: what the user's code started would keep the pipes open
    // (and this reading) past the interpreter's end or the deadline.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .spawn()
        .map_err(|e| super::python::cannot_run(&config.knobs.python, e).to_string())?;
    let read = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = read(Box::new(child.stdout.take().expect("piped")));
    let stderr = read(Box::new(child.stderr.take().expect("piped")));
    let deadline = Instant::now() + Duration::from_secs_f64(config.knobs.timeout_s);
    // Waited for without reaping it, so that its pid (the group's id) stays its own until the
    // group is killed below.
    let exited = || {
        // SAFETY: waitid(2) on our own child into a zeroed struct; WNOWAIT leaves it unreaped.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
            libc::waitid(libc::P_PID, child.id(), &mut info, flags) == 0 && info.si_pid() != 0
        }
    };
    let mut in_time = true;
    while !exited() {
        if Instant::now() >= deadline {
            in_time = false;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) of the group this child leads, while the child is unreaped.
    unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
    let status = child.wait().ok().filter(|_| in_time);
    let (stdout, stderr) = (
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    );
    for line in stdout.lines() {
        match serde_json::from_str::<Line>(line) {
            Ok(Line::Probe(sample)) => return Ok(sample),
            Ok(Line::Error { message }) => return Err(message),
            Err(_) => {}
        }
    }
    let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
    let tail = match tail.is_empty() {
        true => "it printed nothing".to_string(),
        false => tail.into_iter().rev().collect::<Vec<_>>().join(" | "),
    };
    Err(match status {
        None => format!(
            "reading the Dataset's first sample took more than {} s (timeout-s): {tail}",
            config.knobs.timeout_s
        ),
        Some(status) => format!("the Dataset's first sample could not be read ({status}): {tail}"),
    })
}
