//! Running external commands for the `command` workload and `untar
//! --extract-cmd`: each in a process group of its own, with a timeout that
//! kills the whole group, output captured without helper threads (so a
//! forked worker or the coordinator stays single-threaded), and failures
//! described with the command's exit status and the tail of its stderr.

mod metric;
mod words;

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub use metric::{Metric, MetricSource};
pub use words::{sh_quote, split_words, CommandLine, Placeholders};

/// How to run one command.
pub struct RunOptions<'a> {
    pub cwd: Option<&'a Path>,
    /// Kill the command's process group after this long.
    pub timeout: Option<Duration>,
    /// Keep stdout (for a metric); otherwise it goes to /dev/null.
    pub capture_stdout: bool,
    /// Environment variables to add.
    pub env: &'a [(&'a str, String)],
    /// Polled while the command runs; true kills it (a failure elsewhere, or Ctrl-C).
    pub stop: &'a dyn Fn() -> bool,
}

/// A command that exited with status 0.
#[derive(Debug, Default)]
pub struct Finished {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// From spawn to exit.
    pub wall: Duration,
}

/// Why a command did not succeed; `Display` is the one-line message.
#[derive(Debug)]
pub enum RunError {
    Spawn { command: String, error: std::io::Error },
    Failed { command: String, status: ExitStatus, stderr_tail: String },
    TimedOut { command: String, after: Duration },
    Stopped,
    Io { command: String, error: std::io::Error },
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Spawn { command, error } if error.kind() == std::io::ErrorKind::NotFound => {
                write!(f, "cannot run `{command}`: program not found (is it installed and on PATH? for a shell script use --shell)")
            }
            RunError::Spawn { command, error } => write!(f, "cannot run `{command}`: {error}"),
            RunError::Failed { command, status, stderr_tail } => {
                let how = match (status.code(), status.signal()) {
                    (Some(code), _) => format!("exited with status {code}"),
                    (None, Some(signal)) => format!("was killed by signal {signal}"),
                    (None, None) => "failed".to_string(),
                };
                write!(f, "`{command}` {how}")?;
                if !stderr_tail.is_empty() {
                    write!(f, ": {stderr_tail}")?;
                }
                Ok(())
            }
            RunError::TimedOut { command, after } => {
                write!(f, "`{command}` timed out after {after:?}; its process group was killed (raise --timeout?)")
            }
            RunError::Stopped => f.write_str("stopped"),
            RunError::Io { command, error } => write!(f, "running `{command}`: {error}"),
        }
    }
}

impl std::error::Error for RunError {}

/// How much of stderr is kept for the error message.
const STDERR_KEEP: usize = 8192;

/// Runs `line` to completion. The command gets its own process group, which
/// is killed (SIGKILL) when it times out, when `stop` says so, and after it
/// exits, so that nothing it started in the background outlives it.
pub fn run(line: &CommandLine, options: &RunOptions<'_>) -> Result<Finished, RunError> {
    let display = line.display();
    let mut command = match line {
        CommandLine::Argv(words) => {
            let mut c = Command::new(&words[0]);
            c.args(&words[1..]);
            c
        }
        CommandLine::Shell(script) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(script);
            c
        }
    };
    command
        .stdin(Stdio::null())
        .stdout(if options.capture_stdout { Stdio::piped() } else { Stdio::null() })
        .stderr(Stdio::piped())
        .process_group(0);
    for (key, value) in options.env {
        command.env(key, value);
    }
    if let Some(dir) = options.cwd {
        command.current_dir(dir);
    }
    // SAFETY: between fork and exec only async-signal-safe calls: restore the
    // signals a worker ignores or blocks, so the command behaves normally.
    unsafe {
        command.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
                libc::signal(signal, libc::SIG_DFL);
            }
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
    let started = Instant::now();
    let mut child = command.spawn().map_err(|error| RunError::Spawn { command: display.clone(), error })?;
    let group = child.id() as libc::pid_t;
    let kill_group = || {
        // SAFETY: signalling the process group this function created; ESRCH when empty is fine.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    };
    let mut stdout = Pipe::new(child.stdout.take().map(|s| Box::new(s) as Box<dyn ReadFd>), usize::MAX);
    let mut stderr = Pipe::new(child.stderr.take().map(|s| Box::new(s) as Box<dyn ReadFd>), STDERR_KEEP);
    let deadline = options.timeout.map(|t| started + t);
    let status = loop {
        let waited = child.try_wait().map_err(|error| RunError::Io { command: display.clone(), error });
        match waited {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => {
                kill_group();
                let _ = child.wait();
                return Err(e);
            }
        }
        if (options.stop)() {
            kill_group();
            let _ = child.wait();
            return Err(RunError::Stopped);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            kill_group();
            let _ = child.wait();
            return Err(RunError::TimedOut { command: display, after: options.timeout.unwrap_or_default() });
        }
        // Drain both pipes (a full pipe would block the command), waiting at most 5 ms.
        poll_pipes(&mut [&mut stdout, &mut stderr], 5);
    };
    let wall = started.elapsed();
    // The command is gone; stop anything it left running in its group, then
    // take what is still in the pipes without waiting for their writers.
    kill_group();
    while poll_pipes(&mut [&mut stdout, &mut stderr], 0) {}
    if !status.success() {
        return Err(RunError::Failed { command: display, status, stderr_tail: tail(&stderr.data, 3) });
    }
    Ok(Finished { stdout: stdout.data, stderr: stderr.data, wall })
}

/// The last `lines` non-empty lines of `text`, joined with " | ".
pub fn tail(text: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(text);
    let mut last: Vec<&str> = text.lines().map(str::trim_end).filter(|l| !l.is_empty()).rev().take(lines).collect();
    last.reverse();
    last.join(" | ")
}

trait ReadFd: Read + AsRawFd {}
impl<T: Read + AsRawFd> ReadFd for T {}

/// One output pipe being drained; keeps up to `keep` bytes (the last ones).
struct Pipe {
    source: Option<Box<dyn ReadFd>>,
    data: Vec<u8>,
    keep: usize,
}

impl Pipe {
    fn new(source: Option<Box<dyn ReadFd>>, keep: usize) -> Pipe {
        if let Some(s) = &source {
            // SAFETY: setting O_NONBLOCK on a pipe this process owns.
            unsafe {
                let fd = s.as_raw_fd();
                let flags = libc::fcntl(fd, libc::F_GETFL);
                libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
            }
        }
        Pipe { source, data: Vec::new(), keep }
    }

    /// Reads what is available; returns whether anything was read.
    fn drain(&mut self) -> bool {
        let Some(source) = self.source.as_mut() else { return false };
        let mut buf = [0u8; 16384];
        let mut got = false;
        loop {
            match source.read(&mut buf) {
                Ok(0) => {
                    self.source = None;
                    return got;
                }
                Ok(n) => {
                    got = true;
                    self.data.extend_from_slice(&buf[..n]);
                    if self.data.len() > self.keep.saturating_mul(2) {
                        let cut = self.data.len() - self.keep;
                        self.data.drain(..cut);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return got, // EAGAIN: nothing more for now
            }
        }
    }
}

/// Waits up to `timeout_ms` for output on any open pipe and drains them all;
/// returns whether anything was read.
fn poll_pipes(pipes: &mut [&mut Pipe], timeout_ms: i32) -> bool {
    let mut fds: Vec<libc::pollfd> = pipes
        .iter()
        .filter_map(|p| p.source.as_ref())
        .map(|s| libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 })
        .collect();
    if fds.is_empty() {
        if timeout_ms > 0 {
            std::thread::sleep(Duration::from_millis(timeout_ms as u64));
        }
        return false;
    }
    // SAFETY: `fds` is a valid array of pollfd of the given length.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    let mut got = false;
    for pipe in pipes.iter_mut() {
        got |= pipe.drain();
    }
    got
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(timeout: Option<Duration>) -> RunOptions<'static> {
        RunOptions { cwd: None, timeout, capture_stdout: true, env: &[], stop: &|| false }
    }

    #[test]
    fn captures_output_and_reports_failures() {
        let ok = run(&CommandLine::Shell("echo out; echo err >&2".into()), &options(None)).unwrap();
        assert_eq!(ok.stdout, b"out\n");
        assert_eq!(ok.stderr, b"err\n");
        let failed = run(&CommandLine::Shell("echo a >&2; echo b >&2; exit 3".into()), &options(None)).unwrap_err();
        assert_eq!(failed.to_string(), "`echo a >&2; echo b >&2; exit 3` exited with status 3: a | b");
        let missing = run(&CommandLine::Argv(vec!["/nonexistent/fsscale-x".into()]), &options(None)).unwrap_err();
        assert!(missing.to_string().starts_with("cannot run `/nonexistent/fsscale-x`: program not found"), "{missing}");
    }

    #[test]
    fn a_timeout_kills_the_whole_group() {
        let start = Instant::now();
        let line = CommandLine::Shell("sleep 30 & sleep 30; echo never".into());
        let err = run(&line, &options(Some(Duration::from_millis(200)))).unwrap_err();
        assert!(matches!(err, RunError::TimedOut { .. }), "{err}");
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn large_output_does_not_block() {
        let line = CommandLine::Shell("head -c 1000000 /dev/zero; head -c 300000 /dev/zero >&2".into());
        let done = run(&line, &options(Some(Duration::from_secs(20)))).unwrap();
        assert_eq!(done.stdout.len(), 1_000_000);
        assert!(done.stderr.len() <= 2 * STDERR_KEEP);
    }
}
