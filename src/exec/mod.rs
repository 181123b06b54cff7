//! Running external commands for the `command` workload and `untar
//! --extract-cmd`: each in a process group of its own, with a timeout that
//! kills the whole group, output captured without helper threads (so a
//! forked worker or the coordinator stays single-threaded), and failures
//! described with the command's exit status and the tail of its stderr.

mod contain;
mod metric;
mod words;

use std::io::Read;
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::sys;

pub(crate) use contain::make_locked_cgroup;
pub use contain::{
    dead_cgroups, enter_memory_cgroup, kill_cgroup, memory_limited, remove_dead_cgroups, run_cgroup_cpu_s,
    set_memory_cgroup, Containment, RunCgroup, CGROUP_PREFIX,
};
pub use metric::{Metric, MetricSource};
pub use words::{sh_quote, split_words, CommandLine, Placeholders};

/// How to run one command.
pub struct RunOptions<'a> {
    pub cwd: Option<&'a Path>,
    /// Kill the command's process group after this long.
    pub timeout: Option<Duration>,
    /// Keep the tail of stdout (for a metric); otherwise it goes to /dev/null.
    pub capture_stdout: bool,
    /// Scan stdout and stderr line by line for this pattern's last match,
    /// so the figure survives output far larger than the kept tail.
    pub scan: Option<&'a regex::Regex>,
    /// Environment variables to add.
    pub env: &'a [(&'a str, String)],
    /// Polled while the command runs; true kills it (a failure elsewhere, or Ctrl-C).
    pub stop: &'a dyn Fn() -> bool,
}

/// A command that exited with status 0.
#[derive(Debug, Default)]
pub struct Finished {
    /// The last [`STDOUT_KEEP`] bytes of stdout (all of it when shorter).
    pub stdout: Vec<u8>,
    /// Every byte the command wrote to stdout.
    pub stdout_len: u64,
    /// The last [`STDERR_KEEP`] bytes of stderr.
    pub stderr: Vec<u8>,
    /// With [`RunOptions::scan`]: the last line of stdout, and of stderr, that matched.
    pub stdout_match: Option<String>,
    pub stderr_match: Option<String>,
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

/// How much of stderr is kept for the error message (and a metric).
pub(crate) const STDERR_KEEP: usize = 8192;

/// How much of a captured stdout is kept: enough for any JSON report a
/// benchmark prints, while `yes | head -c 2G` costs 4 MiB, not 2 GB.
pub(crate) const STDOUT_KEEP: usize = 4 << 20;

/// The exit status of a command that could not join the run's cgroup
/// (before its program started; its stderr says so).
pub const JOIN_FAILED_STATUS: i32 = 125;

/// Runs `line` to completion. The command gets its own process group, which
/// is killed (SIGKILL) when it times out, when `stop` says so, and after it
/// exits, so that nothing it started in the background outlives it.
pub fn run(line: &CommandLine, options: &RunOptions<'_>) -> Result<Finished, RunError> {
    let display = line.display();
    let mut command = command(line, options);
    let started = Instant::now();
    let mut child = command.spawn().map_err(|error| RunError::Spawn { command: display.clone(), error })?;
    let group = child.id() as libc::pid_t;
    let kill_group = || {
        // The process group this function created; ESRCH when it is empty is fine.
        let _ = sys::send_signal(-group, libc::SIGKILL);
    };
    let mut stdout = Pipe::new(child.stdout.take().map(|s| Box::new(s) as Box<dyn ReadFd>), STDOUT_KEEP, options.scan);
    let mut stderr = Pipe::new(child.stderr.take().map(|s| Box::new(s) as Box<dyn ReadFd>), STDERR_KEEP, options.scan);
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
    stdout.finish_scan();
    stderr.finish_scan();
    Ok(Finished {
        stdout_len: stdout.total,
        stdout_match: stdout.last_match,
        stderr_match: stderr.last_match,
        stdout: stdout.data,
        stderr: stderr.data,
        wall,
    })
}

/// The command of `line`, its own process group, with the signals a worker
/// ignores or blocks restored, dying with its runner, in the run's cgroup.
fn command(line: &CommandLine, options: &RunOptions<'_>) -> Command {
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
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGPIPE] {
                libc::signal(signal, libc::SIG_DFL);
            }
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            // Dies with whoever runs it (a killed worker), and joins the run's cgroup.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if let Err(errno) = contain::enter_run_cgroup() {
                // A command outside the run's cgroup would outlive the run: it
                // does not start, and says why on the stderr fsscale reads.
                contain::say_join_failed(errno);
                libc::_exit(JOIN_FAILED_STATUS);
            }
            Ok(())
        });
    }
    command
}

/// The last `lines` non-empty lines of `text`, joined with " | ".
pub fn tail(text: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(text);
    let mut last: Vec<&str> = text.lines().map(str::trim_end).filter(|l| !l.is_empty()).rev().take(lines).collect();
    last.reverse();
    last.join(" | ")
}

trait ReadFd: Read + AsFd {}
impl<T: Read + AsFd> ReadFd for T {}

/// One output pipe being drained; keeps up to `keep` bytes (the last ones),
/// and with a pattern the last line that matched it.
struct Pipe<'a> {
    source: Option<Box<dyn ReadFd>>,
    data: Vec<u8>,
    keep: usize,
    total: u64,
    scan: Option<&'a regex::Regex>,
    /// The unfinished last line, while scanning.
    partial: Vec<u8>,
    last_match: Option<String>,
}

/// A line longer than this is scanned in pieces.
const LINE_MAX: usize = 1 << 20;

impl<'a> Pipe<'a> {
    fn new(source: Option<Box<dyn ReadFd>>, keep: usize, scan: Option<&'a regex::Regex>) -> Pipe<'a> {
        if let Some(s) = &source {
            sys::set_nonblocking(s.as_fd());
        }
        Pipe { source, data: Vec::new(), keep, total: 0, scan, partial: Vec::new(), last_match: None }
    }

    fn scan_chunk(&mut self, chunk: &[u8]) {
        let Some(regex) = self.scan else { return };
        self.partial.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(end) = self.partial[start..].iter().position(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(&self.partial[start..start + end]);
            if regex.is_match(&line) {
                self.last_match = Some(line.into_owned());
            }
            start += end + 1;
        }
        self.partial.drain(..start);
        if self.partial.len() > LINE_MAX {
            self.finish_scan();
        }
    }

    /// Scans what is left of the last line.
    fn finish_scan(&mut self) {
        let Some(regex) = self.scan else { return };
        let line = String::from_utf8_lossy(&self.partial);
        if !line.is_empty() && regex.is_match(&line) {
            self.last_match = Some(line.into_owned());
        }
        self.partial.clear();
    }

    /// Reads what is available; returns whether anything was read.
    fn drain(&mut self) -> bool {
        let Some(mut source) = self.source.take() else { return false };
        let mut buf = [0u8; 16384];
        let mut got = false;
        loop {
            match source.read(&mut buf) {
                Ok(0) => return got, // EOF: the source stays taken

                Ok(n) => {
                    got = true;
                    self.total += n as u64;
                    self.scan_chunk(&buf[..n]);
                    self.data.extend_from_slice(&buf[..n]);
                    if self.data.len() > self.keep.saturating_mul(2) {
                        let cut = self.data.len() - self.keep;
                        self.data.drain(..cut);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    // EAGAIN: nothing more for now.
                    self.source = Some(source);
                    return got;
                }
            }
        }
    }
}

/// Waits up to `timeout_ms` for output on any open pipe and drains them all;
/// returns whether anything was read.
fn poll_pipes(pipes: &mut [&mut Pipe<'_>], timeout_ms: i32) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds: Vec<PollFd<'_>> =
        pipes.iter().filter_map(|p| p.source.as_ref()).map(|s| PollFd::new(s, PollFlags::IN)).collect();
    if fds.is_empty() {
        if timeout_ms > 0 {
            std::thread::sleep(Duration::from_millis(timeout_ms as u64));
        }
        return false;
    }
    let timeout = Timespec { tv_sec: 0, tv_nsec: i64::from(timeout_ms) * 1_000_000 };
    let _ = poll(&mut fds, Some(&timeout));
    drop(fds);
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
        RunOptions { cwd: None, timeout, capture_stdout: true, scan: None, env: &[], stop: &|| false }
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

    #[test]
    fn huge_output_keeps_a_bounded_tail_and_the_last_match() {
        // Four times the kept tail in noise after the figure: memory stays bounded.
        let regex = regex::Regex::new(r"rate: ([0-9]+)").unwrap();
        let noise = 4 * STDOUT_KEEP;
        let line = CommandLine::Shell(format!("echo rate: 1; echo rate: 42; yes noise | head -c {noise}; echo"));
        let options = RunOptions { scan: Some(&regex), ..options(Some(Duration::from_secs(60))) };
        let done = run(&line, &options).unwrap();
        assert_eq!(done.stdout_len, noise as u64 + 8 + 9 + 1);
        assert!(done.stdout.len() <= 2 * STDOUT_KEEP, "{}", done.stdout.len());
        assert_eq!(done.stdout_match.as_deref(), Some("rate: 42"));
    }
}
