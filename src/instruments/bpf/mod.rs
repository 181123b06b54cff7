//! In-kernel aggregation for the profiles: BPF programs written in C with
//! CO-RE (`bpf/*.bpf.c`), compiled by clang into the objects in `bpf/out`
//! that the binary embeds, and loaded by aya. They pair events and sum
//! them per stack in maps, as `perf lock contention -b` and libbpf-tools'
//! `offcputime` do, so nothing is copied to user space while the workers
//! run; the maps are read once after the window.
//!
//! Each program comes in two forms: on the BTF raw tracepoint (`tp_btf`),
//! where the kernel builds no trace record per event, and on the classic
//! tracepoint, used where the first will not attach (a kernel older than
//! the event's arguments). Where neither loads, the profiles fall back to
//! tracefs (the caller's choice).
//!
//! What every object shares (`bpf/common.bpf.h`): the `window` switch, the
//! `tasks` traced (the workers, and every task they start), the `stacks`
//! map and the per-CPU `lost` counts.

mod maps;
pub(crate) mod shared;

use std::collections::HashMap;
use std::os::fd::OwnedFd;

use anyhow::{anyhow, bail, Context, Result};
use aya::maps::{Array, HashMap as BpfHash, MapData, PerCpuArray, PerCpuHashMap, StackTraceMap};
use aya::programs::{BtfTracePoint, Program, TracePoint};
use aya::{Btf, Ebpf, EbpfLoader, Pod};

use crate::results::ProgramCost;

/// The compiled programs (`bpf/build` makes them from `bpf/*.bpf.c`), each
/// embedded by its instrument's own file; the loader's tests embed their own
/// copies, so that the loader imports no instrument.
#[cfg(test)]
mod objects {
    pub(crate) const LOCKS: &[u8] = aya::include_bytes_aligned!("../../../bpf/out/locks.bpf.o");
    pub(crate) const OFFCPU: &[u8] = aya::include_bytes_aligned!("../../../bpf/out/offcpu.bpf.o");
    pub(crate) const LATENCY: &[u8] = aya::include_bytes_aligned!("../../../bpf/out/latency.bpf.o");
}

/// Whether BPF programs can be loaded here: `None` if so, else why not.
pub fn unavailable() -> Option<String> {
    if let Err(e) = kernel_btf() {
        return Some(format!(
            "the kernel has no BTF type information (/sys/kernel/btf/vmlinux: {e}), which CO-RE needs"
        ));
    }
    static LACKING: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    LACKING.get_or_init(|| std::fs::read("/sys/kernel/btf/vmlinux").ok().and_then(|btf| lacking(&btf))).clone()
}

/// What every program here needs that a kernel's BTF (`vmlinux`, whose
/// strings name every enumerator the kernel has) says it lacks, probed as
/// libbpf-tools do before loading: task storage and the helper that hands
/// a program its own task came in Linux 5.11, and the programs keep each
/// task's open wait or sleep there on either hook (`tp_btf` or a classic
/// tracepoint). Without them no object loads: tracefs collects instead.
fn lacking(btf: &[u8]) -> Option<String> {
    let has = |name: &str| {
        let wanted = [&b"\0"[..], name.as_bytes(), b"\0"].concat();
        btf.windows(wanted.len()).any(|w| w == wanted)
    };
    let missing: Vec<&str> =
        ["BPF_MAP_TYPE_TASK_STORAGE", "BPF_FUNC_get_current_task_btf"].into_iter().filter(|name| !has(name)).collect();
    (!missing.is_empty()).then(|| {
        format!(
            "the kernel has no {} (Linux 5.11 and later have them), which the programs keep each task's state in",
            missing.join(" or ")
        )
    })
}

/// The running kernel's BTF, parsed once per process (about 5 MB): every
/// profile of every run relocates against it.
fn kernel_btf() -> Result<&'static Btf, &'static aya::BtfError> {
    static BTF: std::sync::OnceLock<Result<Btf, aya::BtfError>> = std::sync::OnceLock::new();
    BTF.get_or_init(Btf::from_sys_fs).as_ref()
}

/// How the programs were attached: BTF raw tracepoints (the arguments as
/// the kernel passes them), else classic ones (a trace record built per event).
use crate::results::Attach as Hook;

/// A global a program reads as `const volatile`, set before it loads.
pub(crate) enum Global {
    U8(u8),
    U64(u64),
}

/// Maps sized by user space before a program loads.
#[derive(Default)]
pub(crate) struct MapSizes<'a> {
    /// The classic tracepoints' maps of open events: one entry where the
    /// programs run on BTF raw tracepoints and keep them in task storage.
    pub classic_only: &'a [&'a str],
    /// Maps whose entries are sized to this machine (per-CPU maps, by its CPUs).
    pub sized: &'a [(&'a str, u32)],
}

/// One in-kernel profile: its object's maps, its programs attached (each
/// event's, and the fork follower), and the meter of their cost.
pub(crate) struct Loaded {
    // Dropping it detaches and unloads everything, on every path.
    ebpf: Ebpf,
    programs: Vec<String>,
    hook: Hook,
    meter: Meter,
    stacks: HashMap<i32, Vec<u64>>,
    /// Windows opened so far: the `window` map holds the open one's number.
    windows: u32,
}

impl Loaded {
    /// Loads `object` with `globals`, traces `tasks` and attaches a program
    /// to each of `events` (`system`, `event`): BTF raw tracepoints, else
    /// classic ones. The maps in `classic_only` only the classic programs
    /// use; on BTF raw tracepoints they are made with one entry. Off until
    /// [`Loaded::switch`]; `what` names it in errors.
    pub(crate) fn load(
        what: &str,
        object: &[u8],
        globals: &[(&str, Global)],
        events: &[(&str, &str)],
        maps: &MapSizes<'_>,
        tasks: &[i32],
    ) -> Result<Loaded> {
        Self::load_on(&[Hook::BtfRaw, Hook::Classic], what, object, globals, events, maps, tasks)
    }

    /// [`Loaded::load`] trying `hooks` in turn.
    fn load_on(
        hooks: &[Hook],
        what: &str,
        object: &[u8],
        globals: &[(&str, Global)],
        events: &[(&str, &str)],
        maps: &MapSizes<'_>,
        tasks: &[i32],
    ) -> Result<Loaded> {
        let btf = kernel_btf().map_err(|e| anyhow!("{what}: reading the kernel's BTF: {e}"))?;
        let values: Vec<(&str, Vec<u8>)> = globals
            .iter()
            .map(|(name, value)| match value {
                Global::U8(v) => (*name, vec![*v]),
                Global::U64(v) => (*name, v.to_ne_bytes().to_vec()),
            })
            .collect();
        let all: Vec<(&str, &str)> =
            [("sched", "sched_process_fork")].into_iter().chain(events.iter().copied()).collect();
        let mut refusals = Vec::new();
        for &hook in hooks {
            let mut loader = EbpfLoader::new();
            // Task storage (the programs' per-task state) has no typed map in aya; the programs alone use it.
            loader.btf(Some(btf)).allow_unsupported_maps();
            for (name, value) in &values {
                loader.override_global(name, value.as_slice(), true);
            }
            for (name, entries) in maps.sized {
                loader.map_max_entries(name, *entries);
            }
            if hook == Hook::BtfRaw {
                for name in maps.classic_only {
                    loader.map_max_entries(name, 1);
                }
            }
            let mut ebpf = loader.load(object).map_err(|e| anyhow!("{what}: loading its BPF object: {e:#}"))?;
            trace_tasks(&mut ebpf, tasks).with_context(|| what.to_string())?;
            let attached: Result<Vec<String>> = all.iter().map(|&event| attach(&mut ebpf, hook, event, btf)).collect();
            match attached {
                Ok(programs) => {
                    return Ok(Loaded {
                        ebpf,
                        programs,
                        hook,
                        meter: Meter::default(),
                        stacks: HashMap::new(),
                        windows: 0,
                    });
                }
                // Dropping `ebpf` detaches what did attach; the next hook starts afresh.
                Err(e) => refusals.push(e),
            }
        }
        match <[anyhow::Error; 2]>::try_from(refusals) {
            Ok([btf_error, classic_error]) => {
                bail!("{what}: {classic_error:#} (and as a BTF raw tracepoint: {btf_error:#})")
            }
            Err(mut one) => bail!("{what}: {:#}", one.pop().expect("a hook was tried")),
        }
    }

    /// Turns the programs on for the window, or off.
    pub(crate) fn switch(&mut self, on: bool) -> Result<()> {
        // Each window its own number: what a program kept from an earlier one is told apart.
        if on {
            self.windows = self.windows.checked_add(1).unwrap_or(1);
        }
        let mut window: Array<&mut MapData, u32> = typed(&mut self.ebpf, "window")?;
        window.set(0, if on { self.windows } else { 0 }, 0).context("switching the BPF programs")?;
        let total = self.run_totals();
        self.meter.mark(on, total);
        Ok(())
    }

    /// The kernel's count of the programs' runs and run time, if it keeps one.
    fn run_totals(&self) -> Option<(u64, u64)> {
        self.meter.stats.as_ref()?;
        self.programs.iter().try_fold((0, 0), |(runs, ns), name| {
            let info = self.ebpf.program(name)?.info().ok()?;
            Some((runs + info.run_count(), ns + info.run_time().as_nanos() as u64))
        })
    }

    pub(crate) fn cost(&self) -> Option<ProgramCost> {
        self.meter.during.map(|cost| ProgramCost { attached: Some(self.hook), ..cost })
    }

    /// Events the programs could not record (full maps, waits nested too
    /// deep, sleeps whose end they did not see), all CPUs.
    pub(crate) fn lost(&mut self) -> Result<u64> {
        let lost = self.lost_by_kind()?;
        Ok(lost.full + lost.nested + lost.missed)
    }

    /// [`Loaded::lost`], each kind summed over the CPUs.
    fn lost_by_kind(&mut self) -> Result<shared::Lost> {
        let lost: PerCpuArray<&mut MapData, shared::Lost> = typed(&mut self.ebpf, "lost")?;
        let per_cpu = lost.get(&0, 0).context("reading the lost counts")?;
        let none = shared::Lost { full: 0, nested: 0, missed: 0 };
        Ok(per_cpu.iter().fold(none, |sum, l| shared::Lost {
            full: sum.full + l.full,
            nested: sum.nested + l.nested,
            missed: sum.missed + l.missed,
        }))
    }

    /// Every entry of the hash map `name`.
    pub(crate) fn entries<K: Pod, V: Pod>(&mut self, name: &str) -> Result<Vec<(K, V)>> {
        let map: BpfHash<&mut MapData, K, V> = typed(&mut self.ebpf, name)?;
        map.iter().map(|e| e.with_context(|| format!("reading map {name}"))).collect()
    }

    /// Every entry of the per-CPU hash map `name`, with one value per CPU.
    pub(crate) fn per_cpu_entries<K: Pod, V: Pod>(&mut self, name: &str) -> Result<Vec<(K, Vec<V>)>> {
        let map: PerCpuHashMap<&mut MapData, K, V> = typed(&mut self.ebpf, name)?;
        map.iter()
            .map(|e| e.map(|(k, values)| (k, values.iter().copied().collect())))
            .map(|e| e.with_context(|| format!("reading map {name}")))
            .collect()
    }

    /// The addresses of stack `id` (innermost first); none for a failed id (negative, as the helper returns them).
    pub(crate) fn frames(&mut self, id: i32) -> Result<&[u64]> {
        if !self.stacks.contains_key(&id) {
            let frames = if id < 0 {
                Vec::new()
            } else {
                let map: StackTraceMap<&mut MapData> = typed(&mut self.ebpf, "stacks")?;
                match map.get(&(id as u32), 0) {
                    Ok(stack) => stack.frames().iter().map(|f| f.ip).take_while(|&ip| ip != 0).collect(),
                    Err(aya::maps::MapError::KeyNotFound) => Vec::new(),
                    Err(e) => return Err(e).context("reading a stack"),
                }
            };
            self.stacks.insert(id, frames);
        }
        self.stacks.get(&id).map(Vec::as_slice).ok_or_else(|| anyhow!("stack {id} vanished"))
    }
}

/// Map `name` of `ebpf` as the type its reader expects.
fn typed<'a, M>(ebpf: &'a mut Ebpf, name: &str) -> Result<M>
where
    M: TryFrom<&'a mut aya::maps::Map, Error = aya::maps::MapError>,
{
    let map = ebpf.map_mut(name).ok_or_else(|| anyhow!("the BPF object has no map {name}"))?;
    M::try_from(map).with_context(|| format!("map {name} is not what its reader expects"))
}

/// Seeds the `tasks` map with the workers.
fn trace_tasks(ebpf: &mut Ebpf, tasks: &[i32]) -> Result<()> {
    let mut traced: BpfHash<&mut MapData, u32, u8> = typed(ebpf, "tasks")?;
    for &t in tasks {
        traced.insert(t as u32, 1, 0).with_context(|| format!("tracing task {t}"))?;
    }
    make_task_storage(ebpf, tasks);
    Ok(())
}

/// Gives each of `tasks` its (zeroed) entry in every task-storage map of
/// `ebpf` now, so that the programs only look it up. A program may make it
/// itself, but not while a preempted task on the same CPU holds the
/// kernel's per-CPU task-storage lock (another BPF tool's, or another of
/// ours): that event would be lost (counted). Best effort: an entry not
/// made here (a task gone, a kernel without thread pidfds for a thread
/// that does not lead its process) is made by the program, as before.
fn make_task_storage(ebpf: &Ebpf, tasks: &[i32]) {
    use std::os::fd::AsFd;
    for (_, map) in ebpf.maps() {
        let aya::maps::Map::Unsupported(data) = map else { continue };
        let Ok(info) = data.info() else { continue };
        if !matches!(info.map_type(), Ok(aya::maps::MapType::TaskStorage)) {
            continue;
        }
        let zeroes = vec![0u8; info.value_size() as usize];
        for &t in tasks {
            if let Ok(pidfd) = crate::sys::pidfd_of_thread(t) {
                let key = std::os::fd::AsRawFd::as_raw_fd(&pidfd).to_ne_bytes();
                // SAFETY: a task storage's key is a descriptor (an int),
                // and `zeroes` is its value size.
                let _ = unsafe { maps::bpf_map_update(data.fd().as_fd(), &key, &zeroes) };
            }
        }
    }
}

/// Loads and attaches the program of `event` for `hook` (`{event}_btf` or
/// `{event}_tp`; `fork_*` for `sched_process_fork`), returning its name.
fn attach(ebpf: &mut Ebpf, hook: Hook, (system, event): (&str, &str), btf: &Btf) -> Result<String> {
    let short = if event == "sched_process_fork" { "fork" } else { event };
    let name = match hook {
        Hook::BtfRaw => format!("{short}_btf"),
        Hook::Classic => format!("{short}_tp"),
    };
    let program: &mut Program =
        ebpf.program_mut(&name).ok_or_else(|| anyhow!("the BPF object has no program {name}"))?;
    let failed = |e: aya::programs::ProgramError| anyhow!("{system}:{event}: {}", program_error(e));
    match hook {
        Hook::BtfRaw => {
            let p: &mut BtfTracePoint = program.try_into()?;
            p.load(event, btf).map_err(failed)?;
            p.attach().map_err(failed)?;
        }
        Hook::Classic => {
            // A classic tracepoint is found by its id in tracefs, which a
            // fresh machine may not have mounted yet (a BTF one needs none).
            super::tracefs::ensure_mounted()?;
            let p: &mut TracePoint = program.try_into()?;
            p.load().map_err(failed)?;
            p.attach(system, event).map_err(failed)?;
        }
    }
    Ok(name)
}

/// A load error with the verifier's log, whose lines name the C source (`@ locks.bpf.c:51`).
pub(crate) fn program_error(e: aya::programs::ProgramError) -> String {
    match e {
        aya::programs::ProgramError::LoadError { io_error, verifier_log } => {
            format!("the kernel refused the program ({io_error}); its verifier said:\n{verifier_log}")
        }
        other => format!("{other:#}"),
    }
}

/// What a profile's programs cost in the window, in the kernel's own count
/// of their runs and run time (none where the kernel cannot count them, before 5.8).
struct Meter {
    /// Run-time statistics stay on while this is open.
    stats: Option<OwnedFd>,
    at_start: Option<(u64, u64)>,
    during: Option<ProgramCost>,
}

impl Default for Meter {
    fn default() -> Meter {
        Meter { stats: aya::sys::enable_stats(aya::sys::Stats::RunTime).ok(), at_start: None, during: None }
    }
}

impl Meter {
    /// The window opens (`on`) or closes, with the programs' totals `now`;
    /// only the first close after an open counts (turning off again, when
    /// the profile is read, must not add the runs since).
    fn mark(&mut self, on: bool, now: Option<(u64, u64)>) {
        match (on, self.at_start.take(), now) {
            (true, _, _) => self.at_start = now,
            (false, Some((runs0, ns0)), Some((runs, ns))) => {
                self.during = Some(ProgramCost { runs: runs - runs0, seconds: (ns - ns0) as f64 / 1e9, attached: None })
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::shared::{SleepKey, SleepSite, STATE_INTERRUPTIBLE};
    use super::*;

    /// Root and a kernel with BTF, or a visible skip (a failure under
    /// `.ci/run`, which exports `FSSCALE_TEST_STRICT` and has both).
    fn can_load(test: &str) -> bool {
        let missing = if crate::sys::euid() != 0 { Some("needs root".to_string()) } else { unavailable() };
        let Some(missing) = missing else { return true };
        crate::skips::skip(test, &missing);
        false
    }

    fn this_thread() -> i32 {
        crate::sys::gettid()
    }

    /// Loads the latency program on `hook` for this thread and checks that
    /// it counts exactly the window's 1000 calls of `getppid`.
    fn times_getppid(hook: Hook) {
        let events = [("raw_syscalls", "sys_enter"), ("raw_syscalls", "sys_exit")];
        let tasks = [this_thread()];
        let mut loaded = Loaded::load_on(
            &[hook],
            "test",
            objects::LATENCY,
            &[],
            &events,
            &MapSizes { classic_only: &["calls"], ..Default::default() },
            &tasks,
        )
        .unwrap();
        // Calls before the window are not counted.
        for _ in 0..100 {
            let _ = rustix::process::getppid();
        }
        loaded.switch(true).unwrap();
        for _ in 0..1000 {
            let _ = rustix::process::getppid();
        }
        loaded.switch(false).unwrap();
        let entries: Vec<(shared::CallGroupKey, Vec<shared::CallGroup>)> = loaded.per_cpu_entries("latency").unwrap();
        let getppid: u64 = entries
            .iter()
            .filter(|(key, _)| i64::from(key.nr) == libc::SYS_getppid)
            .flat_map(|(_, cpus)| cpus.iter().map(|c| c.count))
            .sum();
        assert_eq!(getppid, 1000, "{hook:?}: exactly the window's calls of this thread");
        let cost = loaded.cost().expect("the kernel counts the programs' runs");
        assert!(cost.runs >= 2000, "{cost:?}");
        assert_eq!(cost.attached, Some(hook));
    }

    #[test]
    fn the_latency_program_times_this_threads_calls_on_btf_raw_tracepoints() {
        if can_load("latency program") {
            // The default: this kernel has BTF raw tracepoints.
            let events = [("raw_syscalls", "sys_enter"), ("raw_syscalls", "sys_exit")];
            let loaded = Loaded::load(
                "test",
                objects::LATENCY,
                &[],
                &events,
                &MapSizes { classic_only: &["calls"], ..Default::default() },
                &[this_thread()],
            )
            .unwrap();
            assert_eq!(loaded.hook, Hook::BtfRaw);
            times_getppid(Hook::BtfRaw);
        }
    }

    #[test]
    fn the_latency_program_counts_the_same_on_classic_tracepoints() {
        if can_load("latency program on classic tracepoints") {
            times_getppid(Hook::Classic);
        }
    }

    /// The off-CPU programs on `hook`, tracing `tasks`, every sleep kept.
    fn offcpu_on(hook: Hook, tasks: &[i32]) -> Loaded {
        let events = [("sched", "sched_switch"), ("sched", "sched_wakeup")];
        let globals = [("min_sleep_ns", Global::U64(0))];
        Loaded::load_on(
            &[hook],
            "test",
            objects::OFFCPU,
            &globals,
            &events,
            &MapSizes { classic_only: &["asleep"], ..Default::default() },
            tasks,
        )
        .unwrap()
    }

    #[test]
    fn the_offcpu_program_sums_this_threads_sleeps_by_stack_and_state() {
        for hook in [Hook::BtfRaw, Hook::Classic] {
            if !can_load("offcpu program") {
                return;
            }
            sums_sleeps(hook, |tasks| offcpu_on(hook, tasks));
        }
    }

    /// Returns once thread `tid` of this process is asleep in a pipe's read.
    fn wait_asleep_in_pipe_read(tid: i32) {
        let blocked = || {
            let task = format!("/proc/self/task/{tid}");
            let state = std::fs::read_to_string(format!("{task}/stat")).unwrap_or_default();
            let wchan = std::fs::read_to_string(format!("{task}/wchan")).unwrap_or_default();
            state.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('S')) && wchan.ends_with("pipe_read")
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !blocked() {
            assert!(std::time::Instant::now() < deadline, "the reader never blocked: a hang");
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_sleep_begun_in_an_earlier_window_is_not_counted() {
        use std::io::{Read, Write};
        for hook in [Hook::BtfRaw, Hook::Classic] {
            if !can_load("offcpu program") {
                return;
            }
            let me = this_thread();
            let mut loaded = offcpu_on(hook, &[me]);
            let (read_end, write_end) = crate::sys::pipe().unwrap();
            let (mut read_end, mut write_end) = (std::fs::File::from(read_end), std::fs::File::from(write_end));
            loaded.switch(true).unwrap();
            std::thread::scope(|s| {
                let loaded = &mut loaded;
                // Asleep in the first window, woken in the second.
                s.spawn(move || {
                    wait_asleep_in_pipe_read(me);
                    loaded.switch(false).unwrap();
                    loaded.switch(true).unwrap();
                    write_end.write_all(b"x").unwrap();
                });
                read_end.read_exact(&mut [0u8]).unwrap();
            });
            loaded.switch(false).unwrap();
            let sites: Vec<(SleepKey, SleepSite)> = loaded.entries("sites").unwrap();
            let symbols = crate::instruments::kallsyms::KernelSymbols::now().unwrap();
            for (key, site) in &sites {
                let frames = loaded.frames(key.stack).unwrap();
                let read = frames.iter().any(|&ip| symbols.function(ip).is_some_and(|f| f.contains("pipe_read")));
                assert!(!read, "{hook:?}: a sleep from the first window was counted in the second: {site:?}");
            }
            // A switch the kernel ran no program for may leave a sleep of
            // the helper (traced: forked by this thread) missed; nothing else.
            let lost = loaded.lost_by_kind().unwrap();
            assert_eq!((lost.full, lost.nested), (0, 0), "{hook:?}");
        }
    }

    /// Sleeps this thread in 20 reads of a pipe that a helper writes to
    /// only once it sees this thread asleep in that read: at least 20 sleeps
    /// in the pipe's read, and a floor on the time asleep, by the handshake,
    /// not the scheduler. Both threads are traced from the load (`load` is
    /// given their ids), so their task storage is made before the window:
    /// no event of theirs has to make it.
    fn sums_sleeps(hook: Hook, load: impl FnOnce(&[i32]) -> Loaded) {
        use std::io::{Read, Write};
        let (read_end, write_end) = crate::sys::pipe().unwrap();
        let (mut read_end, mut write_end) = (std::fs::File::from(read_end), std::fs::File::from(write_end));
        let me = this_thread();
        let asleep_floor_ns = std::sync::atomic::AtomicU64::new(0);
        let mut loaded = None;
        std::thread::scope(|s| {
            let asleep_floor_ns = &asleep_floor_ns;
            let (helper_tx, helper_rx) = std::sync::mpsc::channel();
            let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
            // The write end moves in: a writer that gives up closes it, and
            // the reader's read ends rather than hangs.
            s.spawn(move || {
                helper_tx.send(this_thread()).unwrap();
                // No go (the load failed and `go_tx` is gone): nothing to do.
                if go_rx.recv().is_err() {
                    return;
                }
                for _ in 0..20 {
                    wait_asleep_in_pipe_read(me);
                    // Asleep from before it was seen to after this wait,
                    // however long the wait turns out to be. A spin, not a
                    // sleep: what this thread sleeps on is not a pipe's read.
                    let seen = crate::sys::monotonic_ns();
                    while crate::sys::monotonic_ns() - seen < 1_000_000 {
                        std::hint::spin_loop();
                    }
                    asleep_floor_ns.fetch_add(crate::sys::monotonic_ns() - seen, std::sync::atomic::Ordering::Relaxed);
                    write_end.write_all(b"x").unwrap();
                }
            });
            let helper = helper_rx.recv().unwrap();
            let mut fresh = load(&[me, helper]);
            assert_eq!(fresh.hook, hook);
            fresh.switch(true).unwrap();
            loaded = Some(fresh);
            go_tx.send(()).unwrap();
            let mut byte = [0u8];
            for _ in 0..20 {
                read_end.read_exact(&mut byte).unwrap();
            }
        });
        let mut loaded = loaded.expect("loaded in the scope");
        loaded.switch(false).unwrap();
        let sites: Vec<(SleepKey, SleepSite)> = loaded.entries("sites").unwrap();
        // The 20 from the pipe's read, interruptibly: one kernel stack, or
        // two where the wait was entered another way (seen beside a CI
        // build: 13 and 7). Preemption is not a sleep (the task stays
        // runnable). The helper is traced too: what it may sleep on (the
        // pipe's mutex, a page fault) is not a pipe's read.
        let symbols = crate::instruments::kallsyms::KernelSymbols::now().unwrap();
        let mut reads = Vec::new();
        // Every site with its stack's functions, for a failure's message.
        let mut described = String::new();
        for (key, site) in &sites {
            let frames = loaded.frames(key.stack).unwrap();
            let names: Vec<&str> = frames.iter().map(|&ip| symbols.function(ip).unwrap_or("?")).collect();
            described += &format!("\n{site:?} {key:?}: {}", names.join(" < "));
            if names.iter().any(|f| f.contains("pipe_read")) {
                reads.push((*key, *site));
            }
        }
        let sites = described;
        assert!(reads.iter().all(|(key, _)| key.state == STATE_INTERRUPTIBLE), "{sites}");
        let (count, asleep_ns) = reads.iter().fold((0, 0), |(c, n), (_, s)| (c + s.count, n + s.asleep_ns));
        // Each read slept at least once; a wake-up that finds the pipe
        // still empty (another's, a signal) sleeps it again.
        // Under load the kernel now and then runs no program for a switch
        // (seen beside two hogs: about 1 run in 50): a sleep whose end went
        // unseen is counted as missed when its task's next sleep begins;
        // nothing else may be lost, nothing may go uncounted.
        let lost = loaded.lost_by_kind().unwrap();
        let missed = lost.missed;
        assert_eq!((lost.full, lost.nested), (0, 0), "{sites}");
        assert!(count + missed >= 20, "{count} sleeps in pipe reads, {missed} missed: {sites}");
        let floor = asleep_floor_ns.load(std::sync::atomic::Ordering::Relaxed);
        if missed == 0 {
            assert!(asleep_ns >= floor, "{asleep_ns} ns asleep, at least {floor}: {sites}");
        }
    }

    #[test]
    fn the_traced_tasks_have_their_task_storage_before_any_event() {
        use std::os::fd::{AsFd, AsRawFd};
        if !can_load("offcpu program") {
            return;
        }
        // `other`, no thread of this process, is passed over: gone, as a worker may be.
        let (me, other) = (this_thread(), this_thread() + 1_000_000);
        let loaded = offcpu_on(Hook::BtfRaw, &[me, other]);
        let aya::maps::Map::Unsupported(map) = loaded.ebpf.map("sleep_of_task").unwrap() else {
            panic!("task storage is not a typed map in aya")
        };
        let mut value = vec![0xa5u8; map.info().unwrap().value_size() as usize];
        let lookup = |tid: i32, value: &mut [u8]| {
            let pidfd = crate::sys::pidfd_of_thread(tid).unwrap();
            // SAFETY: an int key; `value` is the map's value size.
            unsafe { maps::bpf_map_lookup(map.fd().as_fd(), &pidfd.as_raw_fd().to_ne_bytes(), value) }
        };
        // Made, zeroed, with the window still shut: no program made it.
        assert_eq!(lookup(me, &mut value), Ok(()));
        assert!(value.iter().all(|&b| b == 0), "{value:?}");
        // A thread of this process the loader was not given has none.
        let stranger = std::thread::scope(|s| {
            s.spawn(|| (this_thread(), lookup(this_thread(), &mut vec![0; value.len()]))).join().unwrap()
        });
        assert_eq!(stranger.1, Err(libc::ENOENT), "thread {}", stranger.0);
    }

    #[test]
    fn a_kernel_whose_btf_lacks_task_storage_is_named_before_anything_loads() {
        let kernel = |names: &[&str]| [&b"\0int\0"[..], names.join("\0").as_bytes(), b"\0"].concat();
        let new = kernel(&["BPF_MAP_TYPE_TASK_STORAGE", "BPF_FUNC_get_current_task_btf"]);
        assert_eq!(lacking(&new), None);
        // Linux 5.10: neither; a prefix of a name is not the name.
        let old = kernel(&["BPF_MAP_TYPE_INODE_STORAGE", "BPF_MAP_TYPE_TASK_STORAGE_X", "BPF_FUNC_get_current_task"]);
        assert_eq!(
            lacking(&old).unwrap(),
            "the kernel has no BPF_MAP_TYPE_TASK_STORAGE or BPF_FUNC_get_current_task_btf (Linux 5.11 and later \
             have them), which the programs keep each task's state in"
        );
        // This kernel's own BTF has both (the loads in the tests above need them).
        if let Ok(btf) = std::fs::read("/sys/kernel/btf/vmlinux") {
            assert_eq!(lacking(&btf), None);
        }
    }

    #[test]
    fn the_meter_counts_the_window_only_however_often_it_is_closed() {
        let mut meter = Meter { stats: None, at_start: None, during: None };
        meter.mark(true, Some((10, 1_000)));
        meter.mark(false, Some((15, 3_000)));
        // Turned off again when the profile is read: the runs since are not the window's.
        meter.mark(false, Some((40, 9_000)));
        let cost = meter.during.unwrap();
        assert_eq!(cost.runs, 5);
        assert!((cost.seconds - 2e-6).abs() < 1e-15, "{}", cost.seconds);
    }

    #[test]
    fn the_verifier_accepts_the_lock_programs_on_both_hooks() {
        if !can_load("lock programs") {
            return;
        }
        // Counting needs contention, which the integration tests make; here, that both forms verify and attach.
        let events = [("lock", "contention_begin"), ("lock", "contention_end")];
        let globals = [("identify_objects", Global::U8(1))];
        for hook in [Hook::BtfRaw, Hook::Classic] {
            let mut loaded = Loaded::load_on(
                &[hook],
                "test",
                objects::LOCKS,
                &globals,
                &events,
                &MapSizes { classic_only: &["waits"], ..Default::default() },
                &[this_thread()],
            )
            .unwrap_or_else(|e| panic!("{hook:?}: {e:#}"));
            assert_eq!(loaded.hook, hook);
            loaded.switch(true).unwrap();
            loaded.switch(false).unwrap();
            assert_eq!(loaded.lost().unwrap(), 0);
        }
    }

    #[test]
    fn a_refused_program_names_its_c_line() {
        if !can_load("refused program") {
            return;
        }
        const REFUSED: &[u8] = aya::include_bytes_aligned!("../../../bpf/out/tests/refused.bpf.o");
        let source = include_str!("../../../bpf/tests/refused.bpf.c");
        let line = 1 + source.lines().position(|l| l.contains("refused: seen may be NULL")).unwrap();
        let btf = kernel_btf().unwrap();
        let mut ebpf = EbpfLoader::new().btf(Some(btf)).load(REFUSED).unwrap();
        let error =
            attach(&mut ebpf, Hook::BtfRaw, ("sched", "sched_wakeup"), btf).map(|_| ()).unwrap_err().to_string();
        // `refused_btf` is named as `attach` names programs: {event}_btf.
        assert!(error.contains("its verifier said"), "{error}");
        assert!(
            error.contains(&format!("refused.bpf.c:{line}")),
            "the verifier's log names the C line {line}: {error}"
        );
    }
}
