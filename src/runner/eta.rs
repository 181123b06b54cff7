//! How long a run has left: each point's runs so far, wall time included
//! (setup, warm-up, teardown), or before its first, what its timing says:
//! a fixed-time loop takes about its warm-up and window; fixed work is
//! unknown until one of its workload's runs has finished. Pure: the session
//! records what happened and asks.

use std::collections::BTreeMap;

use crate::vocab::Workload;

/// A point's part in the estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PointPlan {
    pub workload: Workload,
    /// Runs it has left, warm-ups included, counting only `-n` (an
    /// `--until-ci` point may take more).
    pub runs_left: usize,
    /// A fixed-time loop's run before any has been timed (its warm-up and
    /// window); `None` for fixed work.
    pub guess_s: Option<f64>,
}

/// Wall seconds per run, measured.
#[derive(Clone, Debug, Default)]
pub(crate) struct Eta {
    per_point: BTreeMap<usize, (f64, usize)>,
    per_workload: BTreeMap<Workload, (f64, usize)>,
}

impl Eta {
    /// Point `index` of `workload` took `wall_s` for one run.
    pub fn record(&mut self, index: usize, workload: Workload, wall_s: f64) {
        for (sum, n) in [self.per_point.entry(index).or_default(), self.per_workload.entry(workload).or_default()] {
            *sum += wall_s;
            *n += 1;
        }
    }

    /// Seconds left for `points` (index, plan), or `None` while a point
    /// with runs left has nothing to go by (fixed work not yet timed).
    pub(crate) fn remaining_s(&self, points: impl IntoIterator<Item = (usize, PointPlan)>) -> Option<f64> {
        let mut total = 0.0;
        for (index, plan) in points {
            if plan.runs_left == 0 {
                continue;
            }
            let each = mean(self.per_point.get(&index))
                .or_else(|| mean(self.per_workload.get(&plan.workload)))
                .or(plan.guess_s)?;
            total += each * plan.runs_left as f64;
        }
        Some(total)
    }
}

fn mean(entry: Option<&(f64, usize)>) -> Option<f64> {
    entry.map(|(sum, n)| sum / *n as f64)
}

/// `seconds` as a person says it: "45 s", "3 min 20 s", "2 h 05 min" (at least "1 s").
pub fn human_duration(seconds: f64) -> String {
    // Under a second still takes a moment: never "0 s".
    let s = (seconds.round() as u64).max(1);
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(workload: Workload, runs_left: usize, guess_s: Option<f64>) -> PointPlan {
        PointPlan { workload, runs_left, guess_s }
    }

    #[test]
    fn guesses_loops_measures_fixed_work_and_prefers_what_a_point_took() {
        let mut eta = Eta::default();
        let points = |stat_left, untar_left| {
            [(0, plan(Workload::Stat, stat_left, Some(0.6))), (1, plan(Workload::Untar, untar_left, None))]
        };
        // Untar not yet timed: no estimate while it has runs left.
        assert_eq!(eta.remaining_s(points(5, 3)), None);
        assert_eq!(eta.remaining_s(points(5, 0)), Some(3.0));
        // Timed once at 2 s: its other runs are taken to take as long.
        eta.record(1, Workload::Untar, 2.0);
        assert_eq!(eta.remaining_s(points(5, 3)), Some(3.0 + 6.0));
        // stat's own runs (0.8 s with its setup) replace the guess.
        eta.record(0, Workload::Stat, 0.8);
        eta.record(0, Workload::Stat, 1.0);
        assert_eq!(eta.remaining_s(points(2, 0)), Some(1.8));
        // Another point of a workload goes by the workload's runs.
        assert_eq!(eta.remaining_s([(7, plan(Workload::Untar, 2, None))]), Some(4.0));
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human_duration(44.6), "45 s");
        assert_eq!(human_duration(0.02), "1 s");
        assert_eq!(human_duration(200.0), "3 min 20 s");
        assert_eq!(human_duration(7500.0), "2 h 05 min");
    }
}
