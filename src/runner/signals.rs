//! Ctrl-C, SIGTERM, SIGHUP and SIGQUIT: the handler only records the signal; the coordinator
//! notices it within one polling interval, stops the workers, removes the
//! scratch directory and saves the results before returning
//! [`Interrupted`].

use std::fmt;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};

static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// Bumped on every SIGCHLD: a child exited, was killed, stopped or continued.
static CHILD_EVENTS: AtomicU64 = AtomicU64::new(0);

/// Bumped on every SIGCONT: this process was stopped (Ctrl-Z, SIGSTOP) and
/// continued, so a window that spans one did not run as timed.
static CONTINUED: AtomicU64 = AtomicU64::new(0);

/// The coordinator's event word while it watches workers (see [`WakeOnSignal`]).
static WAKE: AtomicPtr<AtomicU32> = AtomicPtr::new(std::ptr::null_mut());

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
            libc::SIGQUIT => "SIGQUIT",
            _ => "a signal",
        };
        write!(f, "interrupted by {name}")
    }
}

impl std::error::Error for Interrupted {}

extern "C" fn record(signal: libc::c_int) {
    if signal == libc::SIGCHLD {
        CHILD_EVENTS.fetch_add(1, Ordering::SeqCst);
    } else if signal == libc::SIGCONT {
        CONTINUED.fetch_add(1, Ordering::SeqCst);
    } else {
        RECEIVED.store(signal, Ordering::SeqCst);
    }
    wake();
}

/// Bumps the watched event word and wakes its sleeper: only an atomic add
/// and a futex call, both async-signal-safe.
fn wake() {
    let word = WAKE.load(Ordering::SeqCst);
    if !word.is_null() {
        // SAFETY: the pointer is set only while the region it points into is
        // mapped (cleared by `WakeOnSignal::drop` before the region goes).
        let word = unsafe { &*word };
        word.fetch_add(1, Ordering::SeqCst);
        crate::sys::futex_wake_all(word);
    }
}

/// While alive, signals and child state changes bump `word` and wake
/// whoever sleeps on it, so that neither is noticed only at the next timeout.
pub(super) struct WakeOnSignal;

impl WakeOnSignal {
    pub(super) fn new(word: &AtomicU32) -> WakeOnSignal {
        WAKE.store(word as *const AtomicU32 as *mut AtomicU32, Ordering::SeqCst);
        WakeOnSignal
    }
}

impl Drop for WakeOnSignal {
    fn drop(&mut self) {
        WAKE.store(std::ptr::null_mut(), Ordering::SeqCst);
    }
}

/// How many times this process was continued after a stop so far.
pub(super) fn continued() -> u64 {
    CONTINUED.load(Ordering::SeqCst)
}

/// How many times a child changed state so far.
pub(super) fn child_events() -> u64 {
    CHILD_EVENTS.load(Ordering::SeqCst)
}

/// Installs the handlers: Ctrl-C, SIGTERM, SIGHUP and SIGQUIT (Ctrl-\\,
/// which would otherwise dump core and leave mounts, loop devices and a
/// "running" results file behind) without `SA_RESTART`,
/// so sleeps return early; SIGCHLD with it (it comes often, from every
/// command too), so that it only wakes the coordinator's wait.
pub fn install() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGCHLD, libc::SIGCONT] {
        // SAFETY: the handler only touches atomics and calls futex, which are async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = record as *const () as libc::sighandler_t;
            let restart = signal == libc::SIGCHLD || signal == libc::SIGCONT;
            action.sa_flags = if restart { libc::SA_RESTART } else { 0 };
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// The conventional name of a signal, for messages.
pub fn name(signal: i32) -> String {
    let known = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {signal}"),
    };
    format!("signal {signal}, {known}")
}

/// In a forked worker: leave signals to the coordinator, and die with it.
pub(crate) fn detach_worker(parent: libc::pid_t) {
    // SAFETY: plain syscalls with valid arguments.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        // Commands a worker runs are its own business, not the coordinator's.
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // The parent may have died between fork and prctl.
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
}

/// In a worker thread: block the signals, so the kernel delivers them to the
/// coordinator thread, whose sleep they interrupt.
pub(crate) fn block_in_worker_thread() {
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
