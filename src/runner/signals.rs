//! Ctrl-C and SIGTERM: the handler only records the signal; the coordinator
//! notices it within one polling interval, stops the workers, removes the
//! scratch directory and saves the results before returning
//! [`Interrupted`].

use std::fmt;
use std::sync::atomic::{AtomicI32, Ordering};

static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// Returned (inside `anyhow::Error`) when a signal stopped the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted {
    pub signal: i32,
}

impl Interrupted {
    /// The shell convention: 128 + signal number (130 for Ctrl-C).
    pub fn exit_code(self) -> i32 {
        128 + self.signal
    }
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.signal {
            libc::SIGINT => "SIGINT",
            libc::SIGTERM => "SIGTERM",
            libc::SIGHUP => "SIGHUP",
            _ => "a signal",
        };
        write!(f, "interrupted by {name}")
    }
}

impl std::error::Error for Interrupted {}

extern "C" fn record(signal: libc::c_int) {
    RECEIVED.store(signal, Ordering::SeqCst);
}

/// Installs the handlers (without `SA_RESTART`, so sleeps return early).
pub fn install() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = record as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// In a forked worker: leave signals to the coordinator, and die with it.
pub fn detach_worker(parent: libc::pid_t) {
    // SAFETY: plain syscalls with valid arguments.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // The parent may have died between fork and prctl.
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
}

/// In a worker thread: block the signals, so the kernel delivers them to the
/// coordinator thread, whose sleep they interrupt.
pub fn block_in_worker_thread() {
    // SAFETY: sigset_t is plain data; pthread_sigmask only affects this thread.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, signal);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

pub fn check() -> Result<(), Interrupted> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => Ok(()),
        signal => Err(Interrupted { signal }),
    }
}
