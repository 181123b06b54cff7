//! System-wide CPU time from `/proc/stat`, to tell how busy the machine was
//! during the window and where the time went.

use crate::results::SystemCpu;

/// The aggregate "cpu" line, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTicks {
    fields: [u64; 8],
}

impl CpuTicks {
    pub fn read() -> CpuTicks {
        std::fs::read_to_string("/proc/stat").map(|text| CpuTicks::parse(&text)).unwrap_or_default()
    }

    fn parse(text: &str) -> CpuTicks {
        let mut ticks = CpuTicks::default();
        if let Some(line) = text.lines().find(|l| l.starts_with("cpu ")) {
            for (slot, value) in ticks.fields.iter_mut().zip(line.split_whitespace().skip(1)) {
                *slot = value.parse().unwrap_or(0);
            }
        }
        ticks
    }

    /// Clock ticks of all CPUs between `self` and `later`.
    pub fn ticks(&self, later: &CpuTicks) -> u64 {
        (0..8).map(|i| later.fields[i].saturating_sub(self.fields[i])).sum()
    }

    /// The share of all CPU time between `self` (earlier) and `later` that
    /// went to anything but `own_s` seconds of the run's own workers and
    /// commands: other processes, and kernel threads (some of them working
    /// for the run: writeback, RCU). `None` without readable ticks.
    pub fn others_share(&self, later: &CpuTicks, own_s: f64) -> Option<f64> {
        let delta = |i: usize| later.fields[i].saturating_sub(self.fields[i]) as f64;
        let total: f64 = (0..8).map(delta).sum();
        if total == 0.0 {
            return None;
        }
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let busy = total - delta(3) - delta(4);
        Some(((busy / hz - own_s) / (total / hz)).clamp(0.0, 1.0))
    }

    /// Fractions of all CPU time between `self` (earlier) and `later`.
    pub fn breakdown(&self, later: &CpuTicks) -> SystemCpu {
        let delta: Vec<f64> = self.fields.iter().zip(later.fields).map(|(a, b)| b.saturating_sub(*a) as f64).collect();
        let total: f64 = delta.iter().sum();
        if total == 0.0 {
            return SystemCpu::default();
        }
        let f = |i: usize| delta[i] / total;
        SystemCpu {
            user: f(0),
            nice: f(1),
            system: f(2),
            idle: f(3),
            iowait: f(4),
            irq: f(5),
            softirq: f(6),
            steal: f(7),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breakdown_is_fractions_of_the_delta() {
        let a = CpuTicks::parse("cpu  100 0 50 800 10 0 0 0 0 0\ncpu0 1 2 3\n");
        let b = CpuTicks::parse("cpu  160 0 90 900 10 0 0 0 0 0\n");
        let cpu = a.breakdown(&b);
        assert_eq!((cpu.user, cpu.system, cpu.idle, cpu.iowait), (0.3, 0.2, 0.5, 0.0));
        assert_eq!(a.breakdown(&a), SystemCpu::default());
    }

    #[test]
    fn others_share_is_busy_time_not_the_runs_own() {
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        // 200 ticks (2 CPUs × 1 s at 100 Hz): 150 busy, 50 idle.
        let a = CpuTicks::parse("cpu  0 0 0 0 0 0 0 0\n");
        let b = CpuTicks::parse("cpu  100 0 50 40 10 0 0 0\n");
        let busy_s = 150.0 / hz;
        let own = busy_s - 50.0 / hz;
        assert!((a.others_share(&b, own).unwrap() - 0.25).abs() < 1e-9, "50 of 200 ticks were others'");
        assert_eq!(a.others_share(&b, busy_s * 2.0), Some(0.0), "never below 0 (tick rounding)");
        assert_eq!(a.others_share(&a, 0.0), None);
    }
}
