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
pub use fsscale_analysis::instruments::{Instrument, Instruments, Section};

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

/// What an instrument needs of the machine before it can run.
#[derive(Default)]
pub(crate) struct Needs {
    /// Capabilities, each with what needs it.
    pub caps: Vec<(u32, &'static str)>,
    /// Tracepoints that must exist, as (system, event).
    pub tracepoints: &'static [(&'static str, &'static str)],
    /// Said after a missing tracepoint's error: " (it needs Linux 5.19 or later)".
    pub tracepoints_hint: &'static str,
    /// It filters or reads by the kernel's global PIDs, which a PID namespace hides.
    pub global_pids: bool,
    /// tracefs mounted (for its events, or for a fallback to classic tracepoints).
    pub tracefs: bool,
    /// /proc/kallsyms readable with addresses.
    pub kernel_symbols: bool,
}

/// The measuring half of an instrument (its results' half is its
/// [`fsscale_analysis::instruments::Section`]): what it needs, and how it
/// is armed for a run's workers.
pub(crate) trait Recorder: Sync {
    /// What it needs, as `config` asks for it.
    fn needs(&self, config: &InstrumentConfig) -> Needs;

    /// Why this kernel will not run its BPF programs, if it will not: each
    /// is loaded and attached once, for no task, so that a kernel too old
    /// for one is found before any run, not in one. Where the instrument is
    /// collected as `--profile-via` chooses, a refusal falls back to
    /// tracefs; otherwise it is an error.
    fn bpf_refused(&self, _config: &InstrumentConfig) -> Option<String> {
        None
    }

    /// Arms it on `tasks` (the workers' task ids), off until [`Armed::start`];
    /// `None` where it has nothing to measure in this run.
    fn arm(&self, run: &ArmFor<'_>) -> Result<Option<Box<dyn Armed>>>;
}

/// What arming an instrument for a run needs: the run's instrument
/// settings, the workers' task ids, and the work they do.
pub(crate) struct ArmFor<'a> {
    pub config: &'a InstrumentConfig,
    pub tasks: &'a [i32],
    pub workload: Workload,
    pub options: &'a crate::workloads::WorkloadOptions,
}

/// One run's armed instrument.
pub(crate) trait Armed {
    /// Turns it on for the window; `ops` reads the workers' op counters.
    fn start(&mut self, ops: &dyn Fn() -> u64) -> Result<()>;
    /// Empties its buffers during the window, and ends a sample interval.
    fn drain(&mut self) -> Result<()> {
        Ok(())
    }
    /// Forgets the last sample interval (the timeline dropped its sample).
    fn forget_last_sample(&mut self) {}
    /// Turns it off.
    fn stop(&mut self, ops: &dyn Fn() -> u64) -> Result<()>;
    /// Reads it into the run's record.
    fn finish(self: Box<Self>, record: &mut RunRecord) -> Result<()>;
}

/// Every instrument's measuring half: the registry, beside the results'
/// [`Instrument::section`]. The match is exhaustive, so a new
/// [`Instrument`] is not done until it is here.
pub(crate) fn recorder(instrument: Instrument) -> &'static dyn Recorder {
    match instrument {
        Instrument::Locks => &locks::LocksRecorder,
        Instrument::Cpu => &cpu::CpuRecorder,
        Instrument::Offcpu => &offcpu::SleepsRecorder,
        Instrument::Latency => &latency::LatencyRecorder,
        Instrument::Verify => &verify::VerifyRecorder,
    }
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
        if self.min_sleep_us > 0 && !self.has(Instrument::Offcpu) {
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
        let needs: Vec<(Instrument, Needs)> = self.on.iter().map(|i| (i, recorder(i).needs(self))).collect();
        if needs.iter().any(|(_, n)| n.global_pids) && crate::sys::in_initial_pid_namespace() == Some(false) {
            bail!(
                "{flags}: fsscale runs in a PID namespace of its own (a container, unshare -p), where its workers' \
                 PIDs are not the kernel's global ones that tracepoints report and tracefs filters by; run it in \
                 the host's PID namespace, or use --profile cpu"
            );
        }
        if needs.iter().any(|(_, n)| n.tracefs) {
            if tracefs::ensure_mounted()? {
                notes.push(format!("mounted tracefs at {} for {flags}", tracefs::TRACEFS));
            }
            // Killed runs' instances go now, whichever way this run collects.
            notes.extend(tracefs::remove_dead());
        }
        for (i, n) in &needs {
            for (system, event) in n.tracepoints {
                tracefs::event_id(system, event)
                    .map_err(|e| anyhow::anyhow!("{}: {e:#}{}", i.asked_as(), n.tracepoints_hint))?;
            }
        }
        // BPF-only instruments cannot fall back: a kernel that will not run them is found now, not in a run.
        for i in self.on.iter().filter(|i| !i.collected()) {
            if let Some(why) = recorder(i).bpf_refused(self) {
                bail!("{} needs BPF, which this kernel will not run: {why}", i.asked_as());
            }
        }
        resolved.via = if self.traces() { Some(self.collector(&mut notes)?) } else { None };
        if needs.iter().any(|(_, n)| n.kernel_symbols) {
            kallsyms::KernelSymbols::now()?;
        }
        Ok((resolved, notes))
    }

    fn collector(&self, notes: &mut Vec<String>) -> Result<Collector> {
        let refused = || {
            bpf::unavailable()
                .or_else(|| self.on.iter().filter(|i| i.collected()).find_map(|i| recorder(i).bpf_refused(self)))
        };
        choose(self.via, refused, notes)
    }

    fn lacking(&self, have: u64) -> Vec<String> {
        use crate::sys::cap;
        let has = |c: u32| {
            have & (1 << c) != 0 || (matches!(c, cap::PERFMON | cap::BPF) && have & (1 << cap::SYS_ADMIN) != 0)
        };
        let mut needs: Vec<(u32, &str)> = Vec::new();
        for (c, why) in self.on.iter().flat_map(|i| recorder(i).needs(self).caps) {
            if !needs.iter().any(|(n, _)| *n == c) {
                needs.push((c, why));
            }
        }
        needs.into_iter().filter(|(c, _)| !has(*c)).map(|(c, why)| format!("{} ({why})", cap::name(c))).collect()
    }

    fn flags(&self) -> String {
        let mut flags: Vec<String> = Vec::new();
        let profiles: Vec<&str> = self.on.iter().filter(|i| i.flag().is_none()).map(|i| i.name()).collect();
        if !profiles.is_empty() {
            flags.push(format!("--profile {}", profiles.join(",")));
        }
        flags.extend(self.on.iter().filter_map(|i| i.flag()).map(String::from));
        flags.join(" and ")
    }
}

/// What an instrument collected as `--profile-via` chooses needs: its
/// `tracepoints` (a missing one's error ending in `hint`), tracefs, the
/// global PIDs, kernel symbols, and the capabilities of both ways.
pub(crate) fn traced_needs(
    config: &InstrumentConfig,
    tracepoints: &'static [(&'static str, &'static str)],
    tracepoints_hint: &'static str,
) -> Needs {
    use crate::sys::cap;
    let mut caps = vec![(cap::SYS_ADMIN, "tracefs"), (cap::DAC_OVERRIDE, "tracefs's files")];
    if config.via == Some(Collector::Bpf) {
        caps.push((cap::BPF, "BPF programs"));
    }
    caps.extend([(cap::PERFMON, "perf events of every CPU"), (cap::SYSLOG, "kernel symbols")]);
    Needs { caps, tracepoints, tracepoints_hint, global_pids: true, tracefs: true, kernel_symbols: true }
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

/// The collector of `method` for the tasks, BPF's or tracefs', armed as
/// an instrument whose profile `store` puts into the run's record.
pub(crate) fn armed_collector<P: 'static, B, T>(
    method: Collector,
    bpf: impl FnOnce() -> Result<B>,
    tracefs: impl FnOnce() -> Result<T>,
    store: fn(&mut RunRecord, P),
) -> Result<Option<Box<dyn Armed>>>
where
    B: Collect<P> + 'static,
    T: Collect<P> + 'static,
{
    let collect: Box<dyn Collect<P>> = match method {
        Collector::Bpf => Box::new(bpf()?),
        Collector::Tracefs => Box::new(tracefs()?),
    };
    Ok(Some(Box::new(Collected { collect, store })))
}

/// A tracepoint profile's collector as an armed instrument.
struct Collected<P> {
    collect: Box<dyn Collect<P>>,
    store: fn(&mut RunRecord, P),
}

impl<P> Armed for Collected<P> {
    fn start(&mut self, _ops: &dyn Fn() -> u64) -> Result<()> {
        self.collect.switch(true)
    }
    fn drain(&mut self) -> Result<()> {
        self.collect.drain()
    }
    fn stop(&mut self, _ops: &dyn Fn() -> u64) -> Result<()> {
        self.collect.switch(false)
    }
    fn finish(self: Box<Self>, record: &mut RunRecord) -> Result<()> {
        let profile = self.collect.finish()?;
        (self.store)(record, profile);
        Ok(())
    }
}

/// One run's armed instruments, in the registry's order.
#[derive(Default)]
pub(crate) struct RunInstruments {
    armed: Vec<Box<dyn Armed>>,
}

impl RunInstruments {
    /// Arms what `config` asks for on `tasks` (the workers' task ids), off until [`RunInstruments::start`].
    pub(crate) fn arm(run: &ArmFor<'_>) -> Result<RunInstruments> {
        let mut armed = Vec::new();
        for i in run.config.on.iter() {
            armed.extend(recorder(i).arm(run)?);
        }
        Ok(RunInstruments { armed })
    }

    /// Turns everything on in the registry's order, which puts the system
    /// call counters last, nearest the window's first op count, as they are
    /// compared with it. `ops` reads the workers' op counters, just before
    /// and after the counters go on.
    pub fn start(&mut self, ops: impl Fn() -> u64) -> Result<()> {
        self.armed.iter_mut().try_for_each(|a| a.start(&ops))
    }

    /// Empties the buffers during the window so they do not overflow, and
    /// ends a sample interval of the window (the timeline's sample just taken).
    pub(crate) fn drain(&mut self) -> Result<()> {
        self.armed.iter_mut().try_for_each(|a| a.drain())
    }

    /// Forgets the last sample interval: the timeline's sample was dropped for the window's end.
    pub(crate) fn forget_last_sample(&mut self) {
        self.armed.iter_mut().for_each(|a| a.forget_last_sample());
    }

    /// Turns everything off in the reverse order, the system call counters
    /// first (`ops` as for [`RunInstruments::start`]).
    pub fn stop(&mut self, ops: impl Fn() -> u64) -> Result<()> {
        self.armed.iter_mut().rev().try_for_each(|a| a.stop(&ops))
    }

    /// Reads everything into the run's record.
    pub fn finish(self, record: &mut RunRecord) -> Result<()> {
        self.armed.into_iter().try_for_each(|a| a.finish(record))
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
        let locks = InstrumentConfig {
            on: Instruments::of([Instrument::Locks]),
            via: Some(Collector::Bpf),
            ..Default::default()
        };
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
        let cpu = InstrumentConfig { on: Instruments::of([Instrument::Cpu]), ..Default::default() };
        assert_eq!(cpu.lacking(1 << cap::PERFMON), ["CAP_SYSLOG (kernel symbols)"]);
        let verify = InstrumentConfig { on: Instruments::of([Instrument::Verify]), ..Default::default() };
        assert_eq!(verify.lacking(1 << cap::SYS_ADMIN), ["CAP_DAC_OVERRIDE (tracefs's files)"]);
        // Through tracefs, no BPF.
        let tracefs = InstrumentConfig {
            on: Instruments::of([Instrument::Offcpu]),
            via: Some(Collector::Tracefs),
            ..Default::default()
        };
        assert!(!tracefs.lacking(admin & !(1 << cap::SYS_ADMIN)).iter().any(|c| c.contains("BPF")));
    }
}
