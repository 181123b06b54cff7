//! The kernel's tracing filesystem: one private instance per run, so that
//! fsscale never touches the global buffer or another tracer's settings.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{anyhow, bail, Context, Result};

use super::ringbuf::{page_events, RawEvent};

/// Where tracefs lives since Linux 4.1.
pub(crate) const TRACEFS: &str = "/sys/kernel/tracing";
/// `statfs` magic of tracefs.
const TRACEFS_MAGIC: i64 = 0x7472_6163;
/// Instances are named `fsscale-<pid>-<n>-<8 hex>`; the pid is for people,
/// the random part keeps two runs in separate PID namespaces (both pid 1,
/// say) apart, and the run's `flock` on the directory says it is alive.
const PREFIX: &str = "fsscale-";

/// Makes sure tracefs is mounted at [`TRACEFS`], mounting it if not (root
/// only). Returns whether it mounted it, which the caller reports; it stays
/// mounted, as other tools expect it there.
pub(crate) fn ensure_mounted() -> Result<bool> {
    if is_tracefs(Path::new(TRACEFS)) {
        return Ok(false);
    }
    if !Path::new(TRACEFS).is_dir() {
        bail!("{TRACEFS} does not exist: this kernel has no tracefs (CONFIG_TRACING); --profile locks and --verify need it");
    }
    let source = c"nodev";
    let target = crate::sys::cname(TRACEFS);
    // SAFETY: plain mount(2) with NUL-terminated strings and no data.
    let ret = unsafe { libc::mount(source.as_ptr(), target.as_ptr(), c"tracefs".as_ptr(), 0, std::ptr::null()) };
    if ret != 0 {
        let e = std::io::Error::last_os_error();
        bail!("tracefs is not mounted at {TRACEFS} and mounting it failed ({e}); mount it (mount -t tracefs nodev {TRACEFS}) or run as root");
    }
    Ok(true)
}

fn is_tracefs(path: &Path) -> bool {
    rustix::fs::statfs(path).is_ok_and(|stat| stat.f_type == TRACEFS_MAGIC)
}

/// A private tracing instance (`instances/fsscale-<pid>-<n>-<hex>`), removed on drop:
/// on success, error, and the unwinding after Ctrl-C or SIGTERM.
pub(crate) struct Instance {
    path: PathBuf,
    /// The instance's directory, `flock`ed while it exists: how another
    /// fsscale (in any PID namespace) tells it from a killed run's.
    _lock: File,
}

impl Instance {
    pub fn create() -> Result<Instance> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        remove_dead();
        // Locked, it is told from a killed run's (a sweep may take it
        // before the lock: then a new name).
        let instances = Path::new(TRACEFS).join("instances");
        let (path, lock) = crate::lockfile::make_locked_dir(&instances, || {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            format!("{PREFIX}{}-{n}-{}", std::process::id(), crate::sys::random_hex(4))
        })
        .context("making a tracing instance")?;
        Ok(Instance { path, _lock: lock })
    }

    /// Writes `value` to the instance's file `name` (e.g. `tracing_on`).
    pub fn write(&self, name: &str, value: &str) -> Result<()> {
        let path = self.path.join(name);
        std::fs::write(&path, value).map_err(|e| anyhow!("writing {value:?} to {}: {e}", path.display()))
    }

    pub fn read(&self, name: &str) -> Result<String> {
        let path = self.path.join(name);
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
    }

    /// The CPUs the instance has buffers for.
    pub fn cpus(&self) -> Result<Vec<usize>> {
        let dir = self.path.join("per_cpu");
        let mut cpus: Vec<usize> = std::fs::read_dir(&dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .filter_map(|e| e.ok()?.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
            .collect();
        cpus.sort_unstable();
        Ok(cpus)
    }

    /// Opens CPU `cpu`'s raw pages for non-blocking reads.
    fn raw_pipe(&self, cpu: usize) -> Result<RawPipe> {
        let path = self.path.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        let page = self.read("buffer_subbuf_size_kb").ok().and_then(|s| s.trim().parse::<usize>().ok()).unwrap_or(4);
        Ok(RawPipe { file, page_size: page * 1024 })
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // Tracing off first: removal fails while a reader holds a pipe open,
        // which every owner of a pipe has closed by now (they borrow self).
        let _ = std::fs::write(self.path.join("tracing_on"), "0");
        let _ = std::fs::remove_dir(&self.path);
    }
}

/// Each trace buffer's size: enough for tens of thousands of events per
/// CPU between two drains, bounded for machines with many CPUs.
fn buffer_kb_per_cpu(cpus: usize) -> usize {
    (256 * 1024 / cpus.max(1)).clamp(1024, 16 * 1024)
}

/// A private instance recording the events of some tasks (and of every task
/// they start), read from every CPU's buffer in time order.
pub(crate) struct Recording {
    pipes: Vec<RawPipe>,
    missed_pages: u64,
    /// Pages read with events at or after the last drain's watermark, held for the next.
    held: Vec<Vec<u8>>,
    /// Events before this (the last watermark) were handed out already.
    done_until: u64,
    // Last: dropped after the pipes, which keep it busy.
    instance: Instance,
}

impl Recording {
    /// An instance, off, filtered to `tasks`, with what `events` enables in it.
    pub(crate) fn of_tasks(tasks: &[i32], events: impl FnOnce(&Instance) -> Result<()>) -> Result<Recording> {
        let instance = Instance::create()?;
        instance.write("tracing_on", "0")?;
        // CLOCK_MONOTONIC, so that a drain can tell which events it may not have from every CPU yet.
        instance.write("trace_clock", "mono")?;
        let cpus = instance.cpus()?;
        instance.write("buffer_size_kb", &buffer_kb_per_cpu(cpus.len()).to_string())?;
        // Keep the window's start when a buffer fills, and count what is lost.
        instance.write("options/overwrite", "0")?;
        instance.write("options/event-fork", "1")?;
        let pids: Vec<String> = tasks.iter().map(|t| t.to_string()).collect();
        instance.write("set_event_pid", &pids.join(" "))?;
        events(&instance)?;
        let pipes = cpus.iter().map(|&cpu| instance.raw_pipe(cpu)).collect::<Result<Vec<_>>>()?;
        Ok(Recording { pipes, missed_pages: 0, held: Vec::new(), done_until: 0, instance })
    }

    pub fn switch(&self, on: bool) -> Result<()> {
        self.instance.write("tracing_on", if on { "1" } else { "0" })
    }

    /// Hands `each` the events the buffers hold now, in time order. While
    /// tracing is on, only those before the drain began: the CPUs' buffers
    /// are read one after another, so a later event on a CPU read earlier
    /// is not in hand yet, and a task's wait may begin on one CPU and end
    /// on another. The rest wait for the next drain; `last` hands out everything.
    pub(crate) fn drain(&mut self, last: bool, mut each: impl FnMut(RawEvent<'_>)) -> Result<()> {
        // CLOCK_MONOTONIC: the `mono` trace clock.
        let watermark = if last { u64::MAX } else { crate::sys::monotonic_ns() };
        let mut pages: Vec<Vec<u8>> = std::mem::take(&mut self.held);
        // Pages from here on are new.
        let fresh = pages.len();
        for pipe in &mut self.pipes {
            pipe.drain(|page| pages.push(page.to_vec()))?;
        }
        let mut events: Vec<RawEvent<'_>> = Vec::new();
        let mut keep = vec![false; pages.len()];
        for (i, page) in pages.iter().enumerate() {
            let missed = page_events(page, |e| {
                if e.timestamp >= watermark {
                    keep[i] = true;
                } else if i >= fresh || e.timestamp >= self.done_until {
                    // A held page's earlier events were handed out by the drain that held it.
                    events.push(e);
                }
            });
            if missed && i >= fresh {
                self.missed_pages += 1;
            }
        }
        events.sort_by_key(|e| e.timestamp);
        events.into_iter().for_each(&mut each);
        self.held = pages.into_iter().zip(keep).filter_map(|(page, kept)| kept.then_some(page)).collect();
        self.done_until = watermark;
        Ok(())
    }

    /// Events each CPU's buffer refused because it was full (at least the pages seen missing).
    pub fn lost(&self) -> Result<u64> {
        let mut total = 0;
        for cpu in self.instance.cpus()? {
            let stats = self.instance.read(&format!("per_cpu/cpu{cpu}/stats"))?;
            total += stats
                .lines()
                .filter_map(|l| l.strip_prefix("dropped events:").or_else(|| l.strip_prefix("overrun:")))
                .filter_map(|v| v.trim().parse::<u64>().ok())
                .sum::<u64>();
        }
        Ok(total.max(self.missed_pages))
    }
}

/// The id the kernel gave an event: `events/<system>/<name>/id`, or the
/// `ID:` line of its `format` (the ftrace-internal ones, e.g. `kernel_stack`).
pub(crate) fn event_id(system: &str, name: &str) -> Result<u16> {
    let dir = Path::new(TRACEFS).join("events").join(system).join(name);
    let text = std::fs::read_to_string(dir.join("id"))
        .or_else(|_| std::fs::read_to_string(dir.join("format")))
        .map_err(|e| anyhow!("this kernel has no {system}:{name} tracepoint ({}: {e})", dir.display()))?;
    let id = text.lines().find_map(|l| l.strip_prefix("ID:")).unwrap_or(&text);
    id.trim().parse().with_context(|| format!("parsing the id of {}", dir.display()))
}

/// Where field `name` of event `system:event` sits in its record (the
/// `offset:` of its line in the event's `format`), checked to be `size`
/// bytes as the reader takes it: a kernel whose field differs is refused,
/// not misread.
pub(crate) fn field(system: &str, event: &str, name: &str, size: usize) -> Result<usize> {
    let path = Path::new(TRACEFS).join("events").join(system).join(event).join("format");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| anyhow!("this kernel has no {system}:{event} tracepoint ({}: {e})", path.display()))?;
    checked_field(&text, name, size).map_err(|e| anyhow!("{system}:{event}: {e:#} ({})", path.display()))
}

/// The offset of field `name` in `format`, if it is `size` bytes; else why not.
fn checked_field(format: &str, name: &str, size: usize) -> Result<usize> {
    let (offset, found) = field_offset(format, name).ok_or_else(|| anyhow!("no field {name} on this kernel"))?;
    if found != size {
        bail!(
            "its field {name} is {found} bytes on this kernel, where fsscale reads {size}; use --profile-via bpf, \
             whose programs find it by its type"
        );
    }
    Ok(offset)
}

/// The offset and size of field `name` in a `format` file's text.
fn field_offset(format: &str, name: &str) -> Option<(usize, usize)> {
    format.lines().find_map(|line| {
        let mut parts = line.trim().split(';').map(str::trim);
        let declaration = parts.next()?.strip_prefix("field:")?;
        // `pid_t prev_pid`, `char prev_comm[16]`: the name is the last word, before any brackets.
        let last = declaration.rsplit(' ').next()?;
        if last.split('[').next()? != name {
            return None;
        }
        let rest: Vec<&str> = parts.collect();
        let number = |key: &str| rest.iter().find_map(|p| p.strip_prefix(key))?.parse().ok();
        Some((number("offset:")?, number("size:")?))
    })
}

/// Takes the `flock` of directory `path` if nobody holds it: `Some(file)`
/// holding it, `None` when a live run does.
fn lock_dir(path: &Path) -> Result<Option<File>> {
    let name = crate::sys::cstring(path)?;
    crate::lockfile::lock_if_unheld(crate::sys::CWD, &name)
        .map_err(|e| anyhow!("locking {}: {}", path.display(), crate::sys::errno_text(e)))
}

/// Removes the instances killed runs left (SIGKILL and SIGQUIT leave tracing
/// on, with its buffers and events): fsscale's whose lock nobody holds,
/// never by PID, which another PID namespace or a reused PID would fool.
/// Returns what it removed; `fsscale cleanup` calls [`sweep_dead`] to say
/// what it left as well.
pub(crate) fn remove_dead() -> Vec<String> {
    sweep_dead().removed
}

/// What [`sweep_dead`] did with fsscale's tracing instances.
#[derive(Debug, Default)]
pub(crate) struct Swept {
    /// One line per instance removed.
    pub removed: Vec<String>,
    /// Instances left alone: their lock is held (a run still going, or a
    /// killed run's process still exiting and holding the inherited lock),
    /// cannot be taken, or the kernel refused the removal while a buffer
    /// was still open.
    pub held: Vec<String>,
}

/// [`remove_dead`], also naming the instances it left and why.
pub(crate) fn sweep_dead() -> Swept {
    let mut swept = Swept::default();
    let Ok(entries) = std::fs::read_dir(Path::new(TRACEFS).join("instances")) else { return swept };
    for entry in entries.flatten() {
        if !is_ours(&entry.file_name().to_string_lossy()) {
            continue;
        }
        let path = entry.path();
        let _held = match lock_dir(&path) {
            Ok(Some(held)) => held,
            Ok(None) => {
                swept.held.push(format!("tracing instance {} (held by a live process)", path.display()));
                continue;
            }
            // Gone meanwhile: another fsscale's sweep removed it.
            Err(_) if !path.exists() => continue,
            Err(e) => {
                swept.held.push(format!("tracing instance {} ({e:#})", path.display()));
                continue;
            }
        };
        let _ = std::fs::write(path.join("tracing_on"), "0");
        match std::fs::remove_dir(&path) {
            Ok(()) => swept.removed.push(format!("removed tracing instance {}", path.display())),
            Err(e) => swept.held.push(format!("tracing instance {} (removing it: {e})", path.display())),
        }
    }
    swept
}

/// Whether an instance's name is one fsscale gives (`fsscale-<pid>-<n>-<hex>`,
/// or an older fsscale's `fsscale-<pid>-<n>`): another tool's
/// `fsscale-plant` is not, however unlocked.
fn is_ours(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
    let Some(rest) = name.strip_prefix(PREFIX) else { return false };
    let parts: Vec<&str> = rest.split('-').collect();
    match parts.as_slice() {
        [pid, n] => digits(pid) && digits(n),
        [pid, n, random] => digits(pid) && digits(n) && hex(random),
        _ => false,
    }
}

/// One CPU's `trace_pipe_raw`: whole pages, consumed as read.
pub(crate) struct RawPipe {
    file: File,
    page_size: usize,
}

impl RawPipe {
    /// Reads every page there is now, handing each to `each`.
    pub(crate) fn drain(&mut self, mut each: impl FnMut(&[u8])) -> Result<()> {
        let mut page = vec![0u8; self.page_size];
        loop {
            match self.file.read(&mut page) {
                Ok(0) => return Ok(()),
                Ok(n) => each(&page[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(anyhow!("reading a trace buffer: {e}")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{checked_field, field_offset, is_ours};

    #[test]
    fn only_instances_named_as_fsscale_names_them_are_its_own() {
        assert!(is_ours("fsscale-123-0"));
        assert!(is_ours("fsscale-1-0-9f3a0b1c"));
        for other in [
            "fsscale-plant-123",
            "fsscale-",
            "fsscale-12",
            "fsscale-1-x",
            "perf-1-0",
            "fsscale-1-2-xyz",
            "fsscale-1-2-3-4",
        ] {
            assert!(!is_ours(other), "{other}");
        }
    }

    #[test]
    fn fields_are_found_by_name_in_a_format() {
        let format = "name: sched_switch\nID: 316\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
                      \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
                      \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
                      \tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n";
        assert_eq!(field_offset(format, "prev_pid"), Some((24, 4)));
        assert_eq!(field_offset(format, "prev_state"), Some((32, 8)));
        assert_eq!(field_offset(format, "prev_comm"), Some((8, 16)));
        assert_eq!(field_offset(format, "next_pid"), None);
        // Read as the reader takes it, or refused with the reason.
        assert_eq!(checked_field(format, "prev_state", 8).unwrap(), 32);
        let refused = checked_field(format, "prev_state", 4).unwrap_err().to_string();
        assert!(refused.contains("field prev_state is 8 bytes on this kernel, where fsscale reads 4"), "{refused}");
        assert_eq!(field_offset(format, "pid"), None);
    }
}
