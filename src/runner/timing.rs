//! A run's timing and the machine figures read at its window's edges,
//! shared by the workers' coordinator and the command driver.

use std::time::Duration;

use crate::fs::{DeviceIo, DeviceSnapshot};
use crate::instruments::InstrumentConfig;
use crate::plan::SteadyWarmup;

use super::memory_limit::LimitSwitch;

/// Timing of the run, from the plan.
#[derive(Clone)]
pub(super) struct Timing {
    pub warmup: Duration,
    pub duration: Duration,
    pub sample_interval: Duration,
    /// Fixed work: sync and drop page, dentry and inode caches before the start (the point's `--cache cold`).
    pub drop_caches: bool,
    /// The block device under the run's filesystem (`loop3`), for its I/O counters.
    pub device: Option<String>,
    /// A worker without progress for this long fails the run.
    pub stall_timeout: Duration,
    /// What is measured alongside, exactly over the window.
    pub instruments: InstrumentConfig,
    /// A warm-up run of a fixed-time loop: its window lasts until the rate is steady.
    pub until_steady: Option<SteadyWarmup>,
    /// `--memory-limit`: lifted while the workers set up, set before they are measured.
    pub memory: Option<LimitSwitch>,
}

impl Timing {
    /// The timing every run of `config` starts from.
    pub(super) fn from_plan(config: &crate::plan::RunConfig) -> Timing {
        Timing {
            warmup: config.warmup,
            duration: config.duration,
            sample_interval: config.sample_interval,
            drop_caches: false,
            device: None,
            stall_timeout: config.stall_timeout,
            instruments: config.instruments,
            until_steady: None,
            memory: None,
        }
    }
}

/// The 1-minute load average (0 where `/proc/loadavg` cannot be read).
pub(super) fn load_average() -> f64 {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0.0)
}

/// The device's I/O since `start`, when the run has a device.
pub(super) fn device_io(timing: &Timing, start: Option<DeviceSnapshot>) -> Option<DeviceIo> {
    let end = timing.device.as_deref().and_then(DeviceSnapshot::read)?;
    Some(start?.delta(&end))
}
