//! A node check as a check file for LBNL NHC (Node Health Check, which sites run as Slurm's
//! `HealthCheckProgram`): a bash function, `check_shmbench_shm`, that runs `shmbench node` with
//! the policy it was made with and, on a problem, calls NHC's `die` with shmbench's first line,
//! NHC's way of failing a check (NHC then drains the node with that reason). Unknown (exit 2
//! with a `shmbench: unknown:` line) is logged and passes: a node that could not be seen is not
//! drained for it. Anything else (the binary gone, a flag an upgrade removed) fails the check:
//! a check that cannot run must not pass every node.

/// The check file: `command` is `shmbench node` with its policy, already shell-quoted.
pub fn check_file(command: &str) -> String {
    format!(
        r#"# shmbench's /dev/shm check for LBNL NHC, made by `shmbench node --emit nhc`.
# Install: copy to /etc/nhc/scripts/shmbench.nhc, and add to /etc/nhc/nhc.conf:
#   * || check_shmbench_shm
# It runs the command below: exit 0 passes; 1 (a problem) fails the check with shmbench's first
# line, 'shmbench: ...', which NHC makes the node's drain reason; unknown (exit 2, the node
# could not be seen well enough) is logged and passes; any other end (the binary gone, a usage
# error) fails the check with what it printed. To change the policy, make the file again.
function check_shmbench_shm() {{
    local out status
    out=$({command} 2>&1 </dev/null)
    status=$?
    case "$status:$out" in
        0:*) return 0 ;;
        1:shmbench:*) die 1 "$FUNCNAME:  ${{out%%$'\n'*}}"
           return 1 ;;
        "2:shmbench: unknown:"*) echo "$FUNCNAME:  ${{out%%$'\n'*}} (not judged)" >&2
           return 0 ;;
        *) die 1 "$FUNCNAME:  shmbench node could not check (exit status $status): ${{out%%$'\n'*}}"
           return 1 ;;
    esac
}}
"#
    )
}
