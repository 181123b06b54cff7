//! Opt-in instruments that explain a run: where its workers waited on
//! kernel locks (`--profile locks`), where their CPU time went (`--profile
//! cpu`), where they slept (`--profile offcpu`), and whether the kernel
//! counted the system calls their op counters imply (`--verify`).
//!
//! Each is armed for one run's workers once they are ready, turned on
//! exactly for the timed window, drained while it runs, and read into the
//! run's record after it; everything it opened (a tracefs instance, perf
//! descriptors, BPF maps and programs) is closed when it is dropped, on
//! every path.

pub use crate::vocab::{Collector, InstrumentConfig};

pub mod bpf;
pub mod cpu;
pub mod kallsyms;
pub mod latency;
pub mod locks;
pub mod offcpu;
pub mod perf;
pub mod ringbuf;
pub(crate) mod sampling;
pub mod tracefs;
pub mod usersyms;
pub mod verify;

use anyhow::{bail, Result};

/// The most waits or sleeps one walked stack stands for on average, where
/// stacks are sampled (`InstrumentConfig::sampled_stacks`).
pub(crate) const MAX_EVERY: u64 = 64;

use crate::results::RunRecord;
use crate::workloads::Workload;

/// The native-endian `u32` at `at` of a kernel record or a BPF map entry, 0 past its end.
pub(crate) fn u32_at(bytes: &[u8], at: usize) -> u32 {
    bytes.get(at..at + 4).map_or(0, |b| u32::from_ne_bytes(b.try_into().expect("4 bytes")))
}

/// The native-endian `u64` at `at` of a kernel record or a BPF map entry, 0 past its end.
pub(crate) fn u64_at(bytes: &[u8], at: usize) -> u64 {
    bytes.get(at..at + 8).map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
}

/// Instruments made ready for a run: what this kernel and user can have, and how it is collected.
pub trait Preparing {
    /// Checks what the instruments need before anything runs and chooses
    /// how the tracepoint profiles are collected (BPF where the kernel
    /// allows it); returns the config as it will run, and what it did to
    /// the machine or chose for the caller to report.
    fn prepare(&self) -> Result<(InstrumentConfig, Vec<String>)>;

    /// BPF unless asked for tracefs or unavailable (then said why).
    fn collector(&self, notes: &mut Vec<String>) -> Result<Collector>;

    /// Why this kernel will not run the BPF programs the profiles asked for
    /// need, if it will not: each is loaded and attached once, for no task,
    /// so that a kernel too old for one is found before any run, not in one.
    fn bpf_refused(&self) -> Option<String>;

    /// The capabilities (of `have`, a `CapEff` mask) the instruments asked
    /// for need and this process lacks, each with what needs it.
    /// CAP_SYS_ADMIN stands in for CAP_PERFMON and CAP_BPF, as in the kernel.
    fn lacking(&self, have: u64) -> Vec<String>;

    fn flags(&self) -> String;
}

impl Preparing for InstrumentConfig {
    fn prepare(&self) -> Result<(InstrumentConfig, Vec<String>)> {
        let mut notes = Vec::new();
        let mut resolved = *self;
        if let (Some(via), false) = (self.via, self.traces()) {
            bail!(
                "--profile-via {} chooses how --profile locks and offcpu collect; add one of them, or drop it",
                via.name()
            );
        }
        if self.min_sleep_us > 0 && !self.offcpu {
            bail!("--min-sleep chooses which sleeps --profile offcpu counts; add --profile offcpu, or drop it");
        }
        if !self.any() {
            return Ok((resolved, notes));
        }
        let flags = self.flags();
        let lacking = self.lacking(crate::sys::effective_capabilities().unwrap_or(0));
        if !lacking.is_empty() {
            bail!(
                "{flags} needs capabilities this process lacks: {}; run fsscale as root, or grant them",
                lacking.join(", ")
            );
        }
        if (self.traces() || self.verify) && crate::sys::in_initial_pid_namespace() == Some(false) {
            bail!(
                "{flags}: fsscale runs in a PID namespace of its own (a container, unshare -p), where its workers' \
                 PIDs are not the kernel's global ones that tracepoints report and tracefs filters by; run it in \
                 the host's PID namespace, or use --profile cpu"
            );
        }
        if self.traces() || self.verify {
            if tracefs::ensure_mounted()? {
                notes.push(format!("mounted tracefs at {} for {flags}", tracefs::TRACEFS));
            }
            // Killed runs' instances go now, whichever way this run collects.
            notes.extend(tracefs::remove_dead());
            if self.locks {
                tracefs::event_id("lock", "contention_begin")
                    .and_then(|_| tracefs::event_id("lock", "contention_end"))
                    .map_err(|e| anyhow::anyhow!("--profile locks: {e:#} (it needs Linux 5.19 or later)"))?;
            }
            if self.offcpu {
                tracefs::event_id("sched", "sched_switch")
                    .and_then(|_| tracefs::event_id("sched", "sched_wakeup"))
                    .map_err(|e| anyhow::anyhow!("--profile offcpu: {e:#}"))?;
            }
            if self.verify {
                tracefs::event_id("raw_syscalls", "sys_enter").map_err(|e| anyhow::anyhow!("--verify: {e:#}"))?;
            }
        }
        if self.latency && !(self.traces() || self.verify) {
            // Its fallback, classic tracepoints, needs tracefs: mounted now, where it is said.
            if let Ok(true) = tracefs::ensure_mounted() {
                notes.push(format!("mounted tracefs at {} for {flags}", tracefs::TRACEFS));
            }
        }
        if self.latency {
            // Loaded and attached once, for no task: a kernel that will not run it is found now, not in a run.
            if let Some(why) =
                bpf::unavailable().or_else(|| latency::BpfLatency::arm(&[]).err().map(|e| format!("{e:#}")))
            {
                bail!("--profile latency needs BPF, which this kernel will not run: {why}");
            }
        }
        resolved.via = if self.traces() { Some(self.collector(&mut notes)?) } else { None };
        if self.traces() || self.cpu {
            kallsyms::KernelSymbols::now()?;
        }
        Ok((resolved, notes))
    }

    fn collector(&self, notes: &mut Vec<String>) -> Result<Collector> {
        choose(self.via, || self.bpf_refused(), notes)
    }

    fn bpf_refused(&self) -> Option<String> {
        bpf::unavailable()
            .or_else(|| {
                self.locks
                    .then(|| locks::bpf::BpfLocks::arm(&[], self.sampled_stacks).err())
                    .flatten()
                    .map(|e| format!("{e:#}"))
            })
            .or_else(|| {
                self.offcpu
                    .then(|| offcpu::bpf::BpfSleeps::arm(&[], 0, self.sampled_stacks).err())
                    .flatten()
                    .map(|e| format!("{e:#}"))
            })
    }

    fn lacking(&self, have: u64) -> Vec<String> {
        use crate::sys::cap;
        let has = |c: u32| {
            have & (1 << c) != 0 || (matches!(c, cap::PERFMON | cap::BPF) && have & (1 << cap::SYS_ADMIN) != 0)
        };
        let mut needs: Vec<(u32, &str)> = Vec::new();
        if self.traces() || self.verify {
            needs.extend([(cap::SYS_ADMIN, "tracefs"), (cap::DAC_OVERRIDE, "tracefs's files")]);
        }
        if (self.traces() && self.via == Some(Collector::Bpf)) || self.latency {
            needs.push((cap::BPF, "BPF programs"));
        }
        if self.traces() || self.cpu || self.latency {
            needs.extend([(cap::PERFMON, "perf events of every CPU"), (cap::SYSLOG, "kernel symbols")]);
        }
        needs.into_iter().filter(|(c, _)| !has(*c)).map(|(c, why)| format!("{} ({why})", cap::name(c))).collect()
    }

    fn flags(&self) -> String {
        let mut flags: Vec<String> = Vec::new();
        if self.locks || self.cpu || self.offcpu || self.latency {
            let what: Vec<&str> = self.names().into_iter().filter(|n| *n != "verify").collect();
            flags.push(format!("--profile {}", what.join(",")));
        }
        if self.verify {
            flags.push("--verify".into());
        }
        flags.join(" and ")
    }
}

/// How the tracepoint profiles are collected: as `via` asks, BPF by default;
/// `refused` says why BPF will not run here, if it will not (asked only when it matters).
fn choose(
    via: Option<Collector>,
    refused: impl FnOnce() -> Option<String>,
    notes: &mut Vec<String>,
) -> Result<Collector> {
    if via == Some(Collector::Tracefs) {
        return Ok(Collector::Tracefs);
    }
    match (via, refused()) {
        (_, None) => Ok(Collector::Bpf),
        (Some(_), Some(why)) => bail!("--profile-via bpf: {why}; use --profile-via tracefs"),
        (None, Some(why)) => {
            notes.push(format!(
                "--profile collects through tracefs, as BPF is unavailable ({why}): each traced wait costs its task more"
            ));
            Ok(Collector::Tracefs)
        }
    }
}

/// One run's tracepoint profile (`P`), however it is collected: off until
/// the window, on in it, read after.
pub(crate) trait Collect<P> {
    fn switch(&mut self, on: bool) -> Result<()>;
    /// Empties what would fill during the window (tracefs' buffers; BPF's maps need not be).
    fn drain(&mut self) -> Result<()> {
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<P>;
}

/// The collector of `method` for the tasks: BPF's or tracefs'.
fn collector<P, B, T>(
    method: Collector,
    bpf: impl FnOnce() -> Result<B>,
    tracefs: impl FnOnce() -> Result<T>,
) -> Result<Box<dyn Collect<P>>>
where
    B: Collect<P> + 'static,
    T: Collect<P> + 'static,
{
    Ok(match method {
        Collector::Bpf => Box::new(bpf()?),
        Collector::Tracefs => Box::new(tracefs()?),
    })
}

/// One run's armed instruments.
#[derive(Default)]
pub(crate) struct RunInstruments {
    locks: Option<Box<dyn Collect<crate::results::LockProfile>>>,
    offcpu: Option<Box<dyn Collect<crate::results::OffCpuProfile>>>,
    cpu: Option<cpu::CpuSampler>,
    latency: Option<latency::BpfLatency>,
    verify: Option<verify::SyscallCounter>,
}

impl RunInstruments {
    /// Arms what `config` asks for on `tasks` (the workers' task ids), off until [`RunInstruments::start`].
    pub(crate) fn arm(
        config: &InstrumentConfig,
        tasks: &[i32],
        workload: Workload,
        options: &crate::workloads::WorkloadOptions,
    ) -> Result<RunInstruments> {
        let mut armed = RunInstruments::default();
        if config.locks {
            let (bpf, tracefs) = (
                || locks::bpf::BpfLocks::arm(tasks, config.sampled_stacks),
                || locks::tracefs::TracefsLocks::arm(tasks),
            );
            armed.locks = Some(collector(config.via.unwrap_or_default(), bpf, tracefs)?);
        }
        if config.offcpu {
            let min_sleep_ns = config.min_sleep_us * 1000;
            let (bpf, tracefs) = (
                || offcpu::bpf::BpfSleeps::arm(tasks, min_sleep_ns, config.sampled_stacks),
                || offcpu::tracefs::TracefsSleeps::arm(tasks, min_sleep_ns),
            );
            armed.offcpu = Some(collector(config.via.unwrap_or_default(), bpf, tracefs)?);
        }
        if config.cpu {
            armed.cpu = Some(cpu::CpuSampler::arm(tasks)?);
        }
        if config.latency {
            armed.latency = Some(latency::BpfLatency::arm(tasks)?);
        }
        if let (true, Some(calls)) = (config.verify, verify::verified_calls(workload, options)) {
            armed.verify = Some(verify::SyscallCounter::arm(tasks, &calls)?);
        }
        Ok(armed)
    }

    /// Turns everything on; the system call counters last, nearest the
    /// window's first op count, as they are compared with it. `ops` reads
    /// the workers' op counters, just before and after the counters go on.
    pub fn start(&mut self, ops: impl Fn() -> u64) -> Result<()> {
        if let Some(l) = &mut self.locks {
            l.switch(true)?;
        }
        if let Some(o) = &mut self.offcpu {
            o.switch(true)?;
        }
        if let Some(l) = &mut self.latency {
            l.switch(true, &ops)?;
        }
        if let Some(c) = &mut self.cpu {
            c.start()?;
        }
        if let Some(v) = &mut self.verify {
            v.start(&ops)?;
        }
        Ok(())
    }

    /// Empties the buffers during the window so they do not overflow, and
    /// ends a sample interval of the window (the timeline's sample just taken).
    pub(crate) fn drain(&mut self) -> Result<()> {
        if let Some(c) = &mut self.cpu {
            c.drain();
        }
        if let Some(l) = &mut self.latency {
            l.sample()?;
        }
        if let Some(l) = &mut self.locks {
            l.drain()?;
        }
        if let Some(o) = &mut self.offcpu {
            o.drain()?;
        }
        Ok(())
    }

    /// Forgets the last sample interval: the timeline's sample was dropped for the window's end.
    pub(crate) fn forget_last_sample(&mut self) {
        if let Some(l) = &mut self.latency {
            l.forget_last_sample();
        }
    }

    /// Turns everything off, the system call counters first (`ops` as for [`RunInstruments::start`]).
    pub fn stop(&mut self, ops: impl Fn() -> u64) -> Result<()> {
        if let Some(v) = &mut self.verify {
            v.stop(&ops)?;
        }
        if let Some(c) = &mut self.cpu {
            c.stop()?;
        }
        if let Some(l) = &mut self.latency {
            l.switch(false, &ops)?;
        }
        if let Some(o) = &mut self.offcpu {
            o.switch(false)?;
        }
        if let Some(l) = &mut self.locks {
            l.switch(false)?;
        }
        Ok(())
    }

    /// Reads everything into the run's record.
    pub fn finish(self, record: &mut RunRecord) -> Result<()> {
        if let Some(l) = self.locks {
            record.locks = Some(l.finish()?);
        }
        if let Some(o) = self.offcpu {
            record.offcpu = Some(o.finish()?);
        }
        if let Some(c) = self.cpu {
            record.cpu_profile = Some(c.finish()?);
        }
        if let Some(l) = self.latency {
            record.kernel_latency = Some(l.finish()?);
        }
        if let Some(v) = self.verify {
            let per_kind = record.replay_ops.as_ref().map(|kinds| kinds.iter().map(|(k, h)| (*k, h.count)).collect());
            record.syscalls = Some(v.finish(record.ops, per_kind)?);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bpf_is_chosen_unless_refused_and_a_refusal_falls_back_or_fails_as_asked() {
        let mut notes = Vec::new();
        assert_eq!(choose(None, || None, &mut notes).unwrap(), Collector::Bpf);
        assert_eq!(choose(Some(Collector::Bpf), || None, &mut notes).unwrap(), Collector::Bpf);
        assert!(notes.is_empty());
        // Asked for tracefs: BPF is not even tried.
        let tried = std::cell::Cell::new(false);
        let refused = || {
            tried.set(true);
            Some("no".to_string())
        };
        assert_eq!(choose(Some(Collector::Tracefs), refused, &mut notes).unwrap(), Collector::Tracefs);
        assert!(!tried.get());
        // Refused: the default falls back, saying why; asked for BPF, it fails, saying why.
        assert_eq!(choose(None, || Some("old kernel".into()), &mut notes).unwrap(), Collector::Tracefs);
        assert_eq!(
            notes,
            ["--profile collects through tracefs, as BPF is unavailable (old kernel): each traced wait costs its task more"]
        );
        let e = choose(Some(Collector::Bpf), || Some("old kernel".into()), &mut notes).unwrap_err();
        assert_eq!(e.to_string(), "--profile-via bpf: old kernel; use --profile-via tracefs");
    }

    #[test]
    fn the_capabilities_each_instrument_needs_are_named_when_missing() {
        use crate::sys::cap;
        let all = u64::MAX;
        let locks = InstrumentConfig { locks: true, via: Some(Collector::Bpf), ..Default::default() };
        assert!(locks.lacking(all).is_empty());
        assert_eq!(
            locks.lacking(0),
            [
                "CAP_SYS_ADMIN (tracefs)",
                "CAP_DAC_OVERRIDE (tracefs's files)",
                "CAP_BPF (BPF programs)",
                "CAP_PERFMON (perf events of every CPU)",
                "CAP_SYSLOG (kernel symbols)"
            ]
        );
        // CAP_SYS_ADMIN stands in for CAP_BPF and CAP_PERFMON.
        let admin = (1 << cap::SYS_ADMIN) | (1 << cap::DAC_OVERRIDE) | (1 << cap::SYSLOG);
        assert!(locks.lacking(admin).is_empty());
        let cpu = InstrumentConfig { cpu: true, ..Default::default() };
        assert_eq!(cpu.lacking(1 << cap::PERFMON), ["CAP_SYSLOG (kernel symbols)"]);
        let verify = InstrumentConfig { verify: true, ..Default::default() };
        assert_eq!(verify.lacking(1 << cap::SYS_ADMIN), ["CAP_DAC_OVERRIDE (tracefs's files)"]);
        // Through tracefs, no BPF.
        let tracefs = InstrumentConfig { offcpu: true, via: Some(Collector::Tracefs), ..Default::default() };
        assert!(!tracefs.lacking(admin & !(1 << cap::SYS_ADMIN)).iter().any(|c| c.contains("BPF")));
    }
}
