//! What the instruments recorded of a run (`--profile`, `--verify`): one
//! field per instrument, written flat into the run's record, and how a
//! received file's section is capped. A new instrument's section type goes
//! in a file of its own below this one (`sections/NAME.rs`), declared here
//! beside its field.

use serde::{Deserialize, Serialize};

use super::bounds::{Cut, MAX_SITES};
use super::kernel_latency::KernelLatency;
use super::offcpu::OffCpuProfile;
use super::profile::{CpuProfile, LockProfile, SyscallCheck, MAX_LOCK_OBJECTS};
use super::stacks::bound_stacks;
use crate::vocab::Instrument;

/// What the instruments recorded of a run, each absent where its
/// instrument was off. A new instrument's field goes here, with its arm of
/// [`Sections::bound`]; its `instruments::Section` reads it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Sections {
    /// `--profile locks`: where the workers waited on kernel locks in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locks: Option<LockProfile>,
    /// `--profile offcpu`: where the workers slept in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offcpu: Option<OffCpuProfile>,
    /// `--profile latency`: the workers' system calls' time in the kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_latency: Option<KernelLatency>,
    /// `--profile cpu`: the workers' sampled call stacks in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_profile: Option<CpuProfile>,
    /// `--verify`: the workers' system calls as the kernel counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls: Option<SyscallCheck>,
}

impl Sections {
    /// Caps what `instrument`'s section of a received file could make a
    /// reader do (see `results::bounds`), counting what it cut.
    pub(crate) fn bound(&mut self, instrument: Instrument, cut: &mut Cut) {
        match instrument {
            Instrument::Locks => {
                if let Some(p) = &mut self.locks {
                    cut.sites += p.sites.len().saturating_sub(MAX_SITES);
                    p.sites.truncate(MAX_SITES);
                    for site in &mut p.sites {
                        site.objects.truncate(MAX_LOCK_OBJECTS);
                        site.holders.truncate(MAX_LOCK_OBJECTS);
                    }
                }
            }
            Instrument::Cpu => {
                if let Some(p) = &mut self.cpu_profile {
                    bound_stacks(&mut p.folded, cut);
                }
            }
            Instrument::Offcpu => {
                if let Some(p) = &mut self.offcpu {
                    bound_stacks(&mut p.folded, cut);
                    cut.sites += p.sites.len().saturating_sub(MAX_SITES);
                    p.sites.truncate(MAX_SITES);
                }
            }
            Instrument::Latency => {
                if let Some(p) = &mut self.kernel_latency {
                    cut.sites += p.bound();
                    for h in p.calls.iter_mut().filter_map(|c| c.ns.as_mut()) {
                        cut.buckets += h.bound();
                    }
                }
            }
            // A handful of calls per workload: nothing a file could make large that is read further.
            Instrument::Verify => {}
        }
    }
}
