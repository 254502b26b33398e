//! Signals: Ctrl-C, SIGTERM and SIGHUP (a closed terminal or SSH session) are noted (not acted on in the handler) so the harness can end the
//! running cell's process group, keep the results written so far and exit with a summary; and
//! signals are named as strsignal(3) and torch name them ("Bus error").

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The last SIGINT/SIGTERM/SIGHUP received (0: none), stored by signal-hook's handlers.
static RECEIVED: AtomicUsize = AtomicUsize::new(0);

/// Installs the handlers for SIGINT, SIGTERM and SIGHUP (once; later calls do nothing more). A
/// SIGHUP that is ignored already (`nohup shmbench ...`) stays ignored.
pub fn install() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let hangup = (!ignored(libc::SIGHUP)).then_some(libc::SIGHUP);
        for sig in [libc::SIGINT, libc::SIGTERM].into_iter().chain(hangup) {
            // A handler that only stores to an atomic; failure to install leaves the default
            // disposition (the process dies of the signal), which is what it would do anyway.
            let _ = signal_hook::flag::register_usize(sig, &RECEIVED, sig as usize);
        }
    });
}

/// Whether `sig` is ignored now (its disposition read, not changed).
fn ignored(sig: i32) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// The signal received, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig as i32),
    }
}

/// Human name of a signal, as strsignal(3) and torch print it ("Bus error").
pub fn name(sig: i32) -> String {
    // SAFETY: strsignal returns a pointer to a static or thread-local NUL-terminated string.
    unsafe {
        let p = libc::strsignal(sig);
        if p.is_null() {
            format!("signal {sig}")
        } else {
            std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }
}
