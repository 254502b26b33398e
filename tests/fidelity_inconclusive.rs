//! Fidelity never blames the emulation for real torch's own crash: a torch cell whose Python
//! dies of a signal outside the loader is `inconclusive`, named as such, and fidelity does not
//! fail on it. The crash is real (a process killed by SIGSEGV), the torch is not needed.

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::*;

#[test]
fn a_torch_that_segfaults_is_inconclusive_not_a_difference() {
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("fid-segv");
    // A "python" that answers the probe like a torch 2.9 and dies of SIGSEGV when it runs a cell.
    let python = dir.join("python");
    std::fs::write(
        &python,
        "#!/bin/sh\ncase \"$*\" in *\"import torch; print\"*) echo 2.9.1 False; exit 0;; esac\nkill -SEGV $$\n",
    )
    .unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let scenario = dir.join("s.toml");
    std::fs::write(
        &scenario,
        "name = \"fid\"\n[defaults]\nbatch = 8\nworkers = 2\nsteps = 5\nruntime = \"namespace\"\n\
         [[cells]]\nname = \"roomy\"\nshm-size = \"256m\"\n",
    )
    .unwrap();
    let o = shmbench(&[
        "fidelity",
        scenario.to_str().unwrap(),
        "--with",
        python.to_str().unwrap(),
        "--out",
        dir.join("f.csv").to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("0 of 1 cell(s) agree, 0 differ"),
        "{stdout}"
    );
    assert!(stdout.contains("1 inconclusive (roomy"), "{stdout}");
    assert!(!stdout.contains("differs"), "{stdout}");
    // A Python that crashes on import is named by its signal.
    let crashing = dir.join("crashing");
    std::fs::write(&crashing, "#!/bin/sh\nkill -SEGV $$\n").unwrap();
    std::fs::set_permissions(&crashing, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = shmbench(&[
        "fidelity",
        scenario.to_str().unwrap(),
        "--with",
        crashing.to_str().unwrap(),
        "--out",
        dir.join("g.csv").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("killed by signal Segmentation fault"), "{err}");
    assert_clean(&before);
}
