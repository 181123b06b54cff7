//! `--profile cpu`: cpu-clock samples (hardware cycles where the machine
//! counts them) on every CPU, kept for the workers and the tasks they
//! start, with kernel and user call chains, folded into stacks.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};

use anyhow::Result;
use perf_event_open_sys::bindings as b;

use super::kallsyms::KernelSymbols;
use super::perf::{attr, PerfEvent};
use super::usersyms::{Mapping, ProcessMaps, UserSymbols};
use super::{u32_at, u64_at};
use crate::results::CpuProfile;

/// Samples per second per CPU.
pub(crate) const FREQUENCY_HZ: u64 = 1000;
/// Ring buffer data pages per CPU (512 KiB with 4 KiB pages): about a
/// second of samples with deep stacks, drained every sample interval.
const RING_PAGES: usize = 128;

/// What is sampled: CPU cycles where the machine counts them, else the
/// kernel's cpu-clock (a VM without a PMU, like the one this was built on).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    Cycles,
    CpuClock,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Source::Cycles => "cycles",
            Source::CpuClock => "cpu-clock",
        }
    }

    fn attr(self) -> super::perf::Attr {
        match self {
            Source::Cycles => {
                let mut a = attr(b::PERF_TYPE_HARDWARE, b::PERF_COUNT_HW_CPU_CYCLES as u64);
                a.set_freq(1);
                a.__bindgen_anon_1.sample_freq = FREQUENCY_HZ;
                a
            }
            Source::CpuClock => {
                let mut a = attr(b::PERF_TYPE_SOFTWARE, b::PERF_COUNT_SW_CPU_CLOCK as u64);
                // cpu-clock counts nanoseconds: one sample per millisecond of CPU.
                a.__bindgen_anon_1.sample_period = 1_000_000_000 / FREQUENCY_HZ;
                a
            }
        }
    }
}

/// A sample: the task (its process and thread) and its call chain (context markers included).
struct Sample {
    pid: i32,
    tid: i32,
    chain: Vec<u64>,
}

/// One run's sampling: armed before the window, on in it, read after.
pub(crate) struct CpuSampler {
    event: &'static str,
    events: Vec<PerfEvent>,
    /// The workers and every task they started.
    members: HashSet<i32>,
    /// The last drain's samples of tasks not (yet) known to be members: a
    /// fork record may be read a drain after its child's first samples.
    unknown: Vec<Sample>,
    /// Per (process, chain): user frames are named from each process's own files.
    folded: HashMap<(i32, Vec<u64>), u64>,
    /// The executable mappings of the processes sampled.
    maps: ProcessMaps,
    samples: u64,
    kernel_samples: u64,
    lost: u64,
}

impl CpuSampler {
    pub(crate) fn arm(tasks: &[i32]) -> Result<CpuSampler> {
        let cpus = crate::sys::online_cpu_ids();
        let mut events = Vec::with_capacity(cpus.len());
        let mut source = Source::Cycles;
        for &cpu in &cpus {
            let mut event = loop {
                let mut attr = source.attr();
                attr.sample_type = (b::PERF_SAMPLE_TID | b::PERF_SAMPLE_CALLCHAIN) as u64;
                attr.set_task(1); // fork records: which tasks the workers start
                                  // mmap records of executable mappings: the files a started command's frames are in.
                attr.set_mmap(1);
                attr.set_mmap2(1);
                let what = format!("{} sampling on CPU {cpu}", source.name());
                match PerfEvent::open(&mut attr, -1, cpu as i32, &what) {
                    Ok(event) => break event,
                    // No hardware counters (a VM): the kernel's clock instead.
                    Err(_) if source == Source::Cycles => source = Source::CpuClock,
                    Err(e) => return Err(e),
                }
            };
            event.map_ring(RING_PAGES)?;
            events.push(event);
        }
        let mut maps = ProcessMaps::default();
        // The workers' processes as they are now; what they map from here on comes as records.
        for &task in tasks {
            maps.snapshot(process_of(task));
        }
        Ok(CpuSampler {
            event: source.name(),
            events,
            members: tasks.iter().copied().collect(),
            unknown: Vec::new(),
            folded: HashMap::new(),
            maps,
            samples: 0,
            kernel_samples: 0,
            lost: 0,
        })
    }

    pub fn start(&mut self) -> Result<()> {
        self.events.iter().try_for_each(PerfEvent::enable)
    }

    pub fn stop(&mut self) -> Result<()> {
        self.events.iter().try_for_each(PerfEvent::disable)
    }

    pub(crate) fn drain(&mut self) {
        let mut samples = Vec::new();
        let mut forks = Vec::new();
        let mut mappings = Vec::new();
        let mut lost = 0;
        for event in &mut self.events {
            event.drain(|kind, body| match kind {
                b::PERF_RECORD_MMAP2 => mappings.extend(mapping_of(body)),
                b::PERF_RECORD_SAMPLE => {
                    if let Some(sample) = parse_sample(body) {
                        samples.push(sample);
                    }
                }
                b::PERF_RECORD_FORK => forks.push(fork_of(body)),
                // id, lost.
                b::PERF_RECORD_LOST => lost += u64_at(body, 8),
                _ => {}
            });
        }
        self.lost += lost;
        for (pid, mapping) in mappings {
            self.maps.record(pid, mapping);
        }
        for (tid, parent) in forks {
            if self.members.contains(&parent) {
                self.members.insert(tid);
            }
        }
        // Samples of the last drain not yet known to be members get this one
        // chance (their fork record has been read by now); then they are
        // another task's (the sampling is system-wide) and dropped.
        for sample in std::mem::take(&mut self.unknown) {
            if self.members.contains(&sample.tid) {
                self.add(sample);
            }
        }
        for sample in samples {
            if self.members.contains(&sample.tid) {
                self.add(sample);
            } else if sample.tid != 0 {
                self.unknown.push(sample);
            }
        }
    }

    fn add(&mut self, sample: Sample) {
        self.samples += 1;
        // The first context marker tells where the sample hit.
        if sample.chain.first() == Some(&b::PERF_CONTEXT_KERNEL) {
            self.kernel_samples += 1;
        }
        // A process first seen now (a command's child) is read while it lives.
        self.maps.snapshot(sample.pid);
        *self.folded.entry((sample.pid, sample.chain)).or_default() += 1;
    }

    /// The window's samples, symbolised and folded.
    pub fn finish(mut self) -> Result<CpuProfile> {
        self.drain();
        // The last samples' fork records are in by now too.
        self.drain();
        // Read now, not before the run: a module loaded since (a filesystem's) has its names.
        let kernel = KernelSymbols::now()?;
        let user = UserSymbols::of(std::mem::take(&mut self.maps));
        let mut folded = BTreeMap::new();
        for ((pid, chain), n) in &self.folded {
            *folded.entry(fold(chain, &kernel, &user, *pid)).or_default() += n;
        }
        Ok(CpuProfile {
            event: self.event.to_string(),
            frequency_hz: FREQUENCY_HZ,
            samples: self.samples,
            kernel_samples: self.kernel_samples,
            lost_samples: self.lost,
            folded,
        })
    }
}

/// A call chain (leaf first, with context markers) of process `pid` as a
/// folded stack, root first: user frames, then kernel frames.
fn fold(chain: &[u64], kernel: &KernelSymbols, user: &UserSymbols, pid: i32) -> String {
    let mut in_kernel = false;
    let mut frames: Vec<String> = Vec::with_capacity(chain.len());
    for &address in chain {
        if address >= b::PERF_CONTEXT_MAX {
            in_kernel = address == b::PERF_CONTEXT_KERNEL;
            continue;
        }
        let name = match in_kernel {
            true => kernel.function(address).map(Cow::Borrowed),
            false => user.function(pid, address).map(Cow::Owned),
        };
        let name = name.unwrap_or(Cow::Borrowed("[unknown]"));
        // Consecutive unknown frames say nothing more than one.
        if name == "[unknown]" && frames.last().is_some_and(|f| *f == name) {
            continue;
        }
        frames.push(name.replace(';', ":"));
    }
    // Unknown frames at the root end are where the user-space unwinder read
    // past the last frame pointer (code built without them): a chance
    // address, not a caller. Stacks start at their outermost known frame.
    while frames.len() > 1 && frames.last().is_some_and(|f| f == "[unknown]") {
        frames.pop();
    }
    frames.reverse();
    frames.join(";")
}

/// A fork record's new task and the task that made it: the body is
/// pid, ppid, tid, ptid, time (u32 each, then u64).
fn fork_of(body: &[u8]) -> (i32, i32) {
    (u32_at(body, 8) as i32, u32_at(body, 12) as i32)
}

/// The process a task belongs to (its thread group), from `/proc`; the task itself if that cannot be read.
fn process_of(task: i32) -> i32 {
    let status = std::fs::read_to_string(format!("/proc/{task}/status")).unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Tgid:")).and_then(|v| v.trim().parse().ok()).unwrap_or(task)
}

/// An mmap2 record's process and executable mapping: pid, tid, addr, len,
/// pgoff (u32, u32, u64 each), 24 bytes of device and inode, prot, flags
/// (u32 each), then the file's name, NUL-terminated.
fn mapping_of(body: &[u8]) -> Option<(i32, Mapping)> {
    let (pid, start, len, offset) = (u32_at(body, 0) as i32, u64_at(body, 8), u64_at(body, 16), u64_at(body, 24));
    let name = body.get(64..)?;
    let path = String::from_utf8_lossy(name.split(|&c| c == 0).next()?).into_owned();
    path.starts_with('/').then_some((pid, Mapping { start, end: start.checked_add(len)?, offset, path }))
}

/// `PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN`: pid, tid, nr, `ips[nr]`.
fn parse_sample(body: &[u8]) -> Option<Sample> {
    let pid = u32_at(body, 0) as i32;
    let tid = u32_at(body, 4) as i32;
    let nr = u64_at(body, 8) as usize;
    let chain = (0..nr).map(|i| u64_at(body, 16 + 8 * i)).collect::<Vec<_>>();
    (body.len() >= 16 + 8 * nr).then_some(Sample { pid, tid, chain })
}

/// `--profile cpu`'s measuring half.
pub(crate) struct CpuRecorder;

impl super::Recorder for CpuRecorder {
    fn needs(&self, _config: &super::InstrumentConfig) -> super::Needs {
        use crate::sys::cap;
        super::Needs {
            caps: vec![(cap::PERFMON, "perf events of every CPU"), (cap::SYSLOG, "kernel symbols")],
            kernel_symbols: true,
            ..super::Needs::default()
        }
    }

    fn arm(&self, run: &super::ArmFor<'_>) -> Result<Option<Box<dyn super::Armed>>> {
        let tasks = run.tasks;
        Ok(Some(Box::new(CpuSampler::arm(tasks)?)))
    }
}

impl super::Armed for CpuSampler {
    fn start(&mut self, _ops: &dyn Fn() -> u64) -> Result<()> {
        CpuSampler::start(self)
    }
    fn drain(&mut self) -> Result<()> {
        CpuSampler::drain(self);
        Ok(())
    }
    fn stop(&mut self, _ops: &dyn Fn() -> u64) -> Result<()> {
        CpuSampler::stop(self)
    }
    fn finish(self: Box<Self>, record: &mut crate::results::RunRecord) -> Result<()> {
        record.sections.cpu_profile = Some(CpuSampler::finish(*self)?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_fold_root_first_with_user_below_kernel() {
        let kernel = KernelSymbols::parse(
            "ffffffff81000000 T entry_SYSCALL_64\nffffffff81000100 T do_syscall_64\nffffffff81000200 T vfs_statx\n",
        )
        .unwrap();
        let user = UserSymbols::of_this_process();
        let pid = std::process::id() as i32;
        let here = chains_fold_root_first_with_user_below_kernel as *const () as usize as u64;
        let chain = [
            b::PERF_CONTEXT_KERNEL,
            0xffffffff81000210,
            0xffffffff81000110,
            0xffffffff81000010,
            b::PERF_CONTEXT_USER,
            8,
            9,
            here,
        ];
        let folded = fold(&chain, &kernel, &user, pid);
        let frames: Vec<&str> = folded.split(';').collect();
        assert!(frames[0].contains("chains_fold_root_first"), "{folded}");
        assert_eq!(&frames[1..], ["[unknown]", "entry_SYSCALL_64", "do_syscall_64", "vfs_statx"]);
        // Past the last frame pointer the unwinder reads chance addresses: no unknown root.
        let read_past = [b::PERF_CONTEXT_USER, here, 8, 9];
        let folded = fold(&read_past, &kernel, &user, pid);
        assert!(!folded.contains("[unknown]") && folded.contains("chains_fold_root_first"), "{folded}");
        assert_eq!(fold(&[b::PERF_CONTEXT_USER, 8, 9], &kernel, &user, pid), "[unknown]");
    }

    #[test]
    fn samples_parse_and_short_ones_are_refused() {
        let mut body = 5u32.to_ne_bytes().to_vec();
        body.extend_from_slice(&6u32.to_ne_bytes());
        body.extend_from_slice(&2u64.to_ne_bytes());
        body.extend_from_slice(&b::PERF_CONTEXT_KERNEL.to_ne_bytes());
        body.extend_from_slice(&0xffffffff81000000u64.to_ne_bytes());
        let sample = parse_sample(&body).unwrap();
        assert_eq!((sample.pid, sample.tid, sample.chain.len()), (5, 6, 2));
        assert!(parse_sample(&body[..20]).is_none());
    }

    #[test]
    fn an_mmap2_record_gives_the_process_and_its_file_mapping() {
        let mut body: Vec<u8> = [700u32, 701].iter().flat_map(|v| v.to_ne_bytes()).collect();
        for v in [0x55d0c0a10000u64, 0x10000, 0x2000] {
            body.extend_from_slice(&v.to_ne_bytes());
        }
        body.extend_from_slice(&[0; 24 + 8]);
        body.extend_from_slice(b"/usr/bin/spin\0\0\0");
        let (pid, mapping) = mapping_of(&body).unwrap();
        assert_eq!(pid, 700);
        assert_eq!(
            mapping,
            Mapping { start: 0x55d0c0a10000, end: 0x55d0c0a20000, offset: 0x2000, path: "/usr/bin/spin".into() }
        );
        // Anonymous memory ("//anon") and the vdso ("[vdso]") are no files.
        let anon: Vec<u8> = body[..64].iter().copied().chain(*b"[vdso]\0").collect();
        assert!(mapping_of(&anon).is_none());
    }

    #[test]
    fn a_fork_record_names_the_child_and_its_parent_thread() {
        let body: Vec<u8> =
            [100u32, 50, 101, 51].iter().flat_map(|v| v.to_ne_bytes()).chain(7u64.to_ne_bytes()).collect();
        assert_eq!(fork_of(&body), (101, 51));
    }
}
