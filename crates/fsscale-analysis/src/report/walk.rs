//! A walk shared through a queue (`traverse --share shared`): what its
//! walkers did with the queue, the line that says why a second walker is or
//! is not faster than one (work stolen, time idle, the queue found locked).

use std::collections::BTreeMap;

use super::format::thousands;
use crate::results::{Point, WalkRecord};
use crate::vocab::{Mode, Share};

/// Per series, the largest point's median run (by ops/s): one line each,
/// for points whose runs kept their walkers' tallies.
pub(super) fn lines(points: &[&Point]) -> String {
    let mut largest: BTreeMap<(Mode, Share), &Point> = BTreeMap::new();
    for p in points.iter().filter(|p| p.runs.iter().any(|r| !r.walk.is_empty())) {
        let entry = largest.entry((p.mode, p.share)).or_insert(p);
        if p.workers > entry.workers {
            *entry = p;
        }
    }
    let mut out = String::new();
    for p in largest.values() {
        let Some(run) = super::ranks::median_run(p).filter(|r| !r.walk.is_empty()) else { continue };
        out.push_str(&format!(
            "  walkers at {} ({}): {}\n",
            crate::vocab::workers(p.workers),
            p.mode,
            describe(&run.walk)
        ));
    }
    out
}

/// `listed 812 / 790 dirs, stole 40 / 38, idle 1.2 / 0.4 ms, queue found locked 3 / 5 times`:
/// each walker's figure in worker order, or min / median / max beyond four walkers.
pub(super) fn describe(walkers: &[WalkRecord]) -> String {
    let each = walkers.len() <= 4;
    let spread = |get: fn(&WalkRecord) -> f64, show: &dyn Fn(f64) -> String| {
        let mut values: Vec<f64> = walkers.iter().map(get).collect();
        if !each {
            values.sort_by(f64::total_cmp);
            values = vec![values[0], values[values.len() / 2], values[values.len() - 1]];
        }
        values.iter().map(|v| show(*v)).collect::<Vec<_>>().join(" / ")
    };
    let count = |v: f64| thousands(v as u64);
    let legend = if each { String::new() } else { format!(" (min / median / max of {} walkers)", walkers.len()) };
    format!(
        "listed {} dirs, stole {}, idle {} ms, queue found locked {} times{legend}",
        spread(|w| w.dirs as f64, &count),
        spread(|w| w.stolen as f64, &count),
        spread(|w| w.idle_s * 1e3, &|v| format!("{v:.1}")),
        spread(|w| w.lock_waits as f64, &count),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walker(dirs: u64, stolen: u64, idle_ms: f64, lock_waits: u64) -> WalkRecord {
        WalkRecord { dirs, stolen, given: 0, idle_s: idle_ms / 1e3, lock_waits }
    }

    #[test]
    fn each_walker_in_order_then_the_spread_beyond_four() {
        let two = [walker(812, 40, 1.24, 3), walker(1790, 38, 0.4, 5)];
        assert_eq!(
            describe(&two),
            "listed 812 / 1,790 dirs, stole 40 / 38, idle 1.2 / 0.4 ms, queue found locked 3 / 5 times"
        );
        let many: Vec<WalkRecord> = (1..=9).map(|i| walker(i * 100, i, i as f64, 0)).collect();
        assert_eq!(
            describe(&many),
            "listed 100 / 500 / 900 dirs, stole 1 / 5 / 9, idle 1.0 / 5.0 / 9.0 ms, \
             queue found locked 0 / 0 / 0 times (min / median / max of 9 walkers)"
        );
    }
}
