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
}
