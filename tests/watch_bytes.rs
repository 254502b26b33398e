//! `watch` passes a command's output through byte for byte (CRs, invalid UTF-8, NULs, no
//! newline added, any size), counts `\r`-separated progress updates as steps, and its `--sweep`
//! removes only files of the job that no live process holds, told apart by (device, inode),
//! never by a name after a lossy conversion.

use crate::common;

use std::io::BufReader;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::*;

#[test]
fn output_is_relayed_byte_for_byte_and_cr_updates_are_steps() {
    let _guard = serial();
    let (o, row, _) = watch(&["--runtime", "host"], &["printf", "a\\r\\nb\\377\\000c"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout, b"a\r\nb\xff\x00c", "relayed as written");
    assert_eq!(row.unwrap()["status"], "pass");
    // 12 MB of random bytes, with their CRs, NULs and one very long line.
    let dir = temp_dir("bytes");
    let big = dir.join("big.bin");
    let bytes: Vec<u8> = (0..12_000_005u64)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&big, &bytes).unwrap();
    let (o, _, _) = watch(&["--runtime", "host"], &["cat", big.to_str().unwrap()]);
    assert!(
        o.stdout == bytes,
        "{} bytes out of {}",
        o.stdout.len(),
        bytes.len()
    );
    // tqdm-style progress: 15 updates on one line, each ended by a CR.
    let (o, row, _) = watch(
        &["--runtime", "host", "--step-regex", "step (\\d+)"],
        &[
            "bash",
            "-c",
            "for i in $(seq 1 15); do printf '\\rstep %d' $i; sleep 0.02; done; echo",
        ],
    );
    assert!(o.status.success());
    assert_eq!(row.unwrap()["steps_done"], "15");
}

#[test]
fn sweep_leaves_what_another_program_holds_and_compares_raw_names() {
    let _guard = serial();
    let tag = std::process::id();
    let victim = PathBuf::from(format!("/dev/shm/victim_{tag}"));
    let mut job_name = format!("/dev/shm/bad_{tag}").into_bytes();
    job_name.push(0xff);
    let job_file = PathBuf::from(std::ffi::OsStr::from_bytes(&job_name));
    // The outsider's name reads the same as the job's after a lossy conversion (U+FFFD).
    let outsider_file = PathBuf::from(format!("/dev/shm/bad_{tag}\u{FFFD}"));
    let dir = temp_dir("wsweep").keep();
    let script = format!(
        "while [ ! -e {v} ]; do sleep 0.02; done; exec 3<{v}; \
         exec 4<>$'/dev/shm/bad_{tag}\\xff'; head -c 1048576 /dev/zero >&4; sleep 2",
        v = victim.display()
    );
    let mut watched = command_in(&dir)
        // A file is the job's only once a sample sees the job hold it, and the sampler looks at
        // holders when /dev/shm rises by 256 KiB: the job's file is 1 MiB, held from the open
        // that creates it (a file written, closed and reopened can rise while no one holds it,
        // and is then left, listed as a leftover) and for 2 s after.
        .args([
            "watch",
            "--runtime",
            "host",
            "--sweep",
            "--interval-ms",
            "20",
        ])
        .args(["--out", "w.csv"])
        .args(["--", "bash", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Another program makes both files during the run and keeps them open: each is created by
    // the open that holds it (`<>`), so no moment exists when it is there and nobody holds it,
    // however late a loaded machine schedules this shell against the job's end.
    let mut outsider = Command::new("bash")
        .args([
            "-c",
            &format!(
                "exec 3<>{v} 4<>'{o}'; printf v >&3; printf o >&4; echo ready; exec sleep 600",
                v = victim.display(),
                o = outsider_file.display()
            ),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_line(
        &mut BufReader::new(outsider.stdout.take().unwrap()),
        "ready",
    );
    assert!(watched.wait().unwrap().success());
    let victim_kept = victim.exists();
    let outsider_kept = outsider_file.exists();
    let job_removed = !job_file.exists();
    let _ = outsider.kill();
    let _ = outsider.wait();
    for f in [&victim, &outsider_file, &job_file] {
        let _ = std::fs::remove_file(f);
    }
    assert!(victim_kept, "--sweep removed a file another program holds");
    assert!(outsider_kept, "--sweep removed a file by a lossy name");
    assert!(job_removed, "--sweep left the job's own file");
}
