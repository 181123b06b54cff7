//! Short phrases the instruments' tables share: a share as a percentage,
//! what collecting a profile cost, what it could not record.

use super::format::format_ns;
use crate::results::{Collector, Point, ProgramCost, RunRecord};

/// `58%`, `1.2%`, `0.03%`: enough digits to tell small shares apart;
/// `<0.01%` for a share too small to print, `0%` for none (a share that
/// float rounding made a hair negative, too: never `-0.00%`).
pub fn percent(share: f64) -> String {
    match 100.0 * share {
        p if p >= 10.0 => format!("{p:.0}%"),
        p if p >= 1.0 => format!("{p:.1}%"),
        p if p >= 0.005 => format!("{p:.2}%"),
        p if p > 0.0 => "<0.01%".to_string(),
        p if p > -0.005 => "0%".to_string(),
        p => format!("{p:.2}%"),
    }
}

/// "; its BPF programs ran 6726 times for 17.9ms (0.90% of the workers'
/// time)", where the kernel counted them; the runs are those `profiled` says have the profile.
pub fn cost(programs: Option<ProgramCost>, point: &Point, profiled: impl Fn(&RunRecord) -> bool) -> String {
    let Some(p) = programs else { return String::new() };
    let worker_s: f64 = point.runs.iter().filter(|r| profiled(r)).map(|r| r.worker_seconds()).sum();
    let share = if worker_s > 0.0 { p.seconds / worker_s } else { 0.0 };
    let on = match p.attached {
        Some(crate::results::Attach::BtfRaw) => " (on BTF raw tracepoints)",
        Some(crate::results::Attach::Classic) => " (on classic tracepoints)",
        None => "",
    };
    format!(
        "; its BPF programs{on} ran {} times for {} ({} of the workers' time)",
        p.runs,
        format_ns(p.seconds * 1e9),
        percent(share)
    )
}

/// "; 12 events lost to full buffers: figures are low", or nothing.
pub fn lost(events: u64, method: Collector) -> String {
    match (events, method) {
        (0, _) => String::new(),
        (n, Collector::Tracefs) => format!("; {n} events lost to full buffers: figures are low"),
        (n, Collector::Bpf) => {
            format!("; {n} events not recorded (full maps, or waits nested too deep): figures are low")
        }
    }
}
