//! The marks at the end of a table's row: what a point's runs say about the
//! measurement itself (`!drift`, `~outlier: run 3`, ...), and what each
//! means, in one line under the tables that show it or in full for
//! `fsscale help marks`.

use crate::results::{Point, Settings};

/// A kind of mark a row can carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mark {
    Drift,
    TwoModes,
    Busy,
    Quota,
    Outlier,
    Short,
    Impossible,
    AboveCpus,
    Behind,
}

impl Mark {
    pub const ALL: [Mark; 9] = [
        Mark::Drift,
        Mark::TwoModes,
        Mark::Busy,
        Mark::Quota,
        Mark::Outlier,
        Mark::Short,
        Mark::Impossible,
        Mark::AboveCpus,
        Mark::Behind,
    ];

    /// How the mark starts in a row.
    pub fn tag(self) -> &'static str {
        match self {
            Mark::Drift => "!drift",
            Mark::TwoModes => "!2 modes",
            Mark::Busy => "!busy",
            Mark::Quota => "~quota",
            Mark::Outlier => "~outlier",
            Mark::Short => "!short",
            Mark::Impossible => "!impossible",
            Mark::AboveCpus => "~above CPUs",
            Mark::Behind => "!behind",
        }
    }

    /// What it means, in one line.
    pub fn meaning(self) -> &'static str {
        match self {
            Mark::Drift => "!drift: the runs trend with their order (Spearman, p < 0.05)",
            Mark::TwoModes => "!2 modes: the runs fall into two groups (bimodality coefficient > 5/9)",
            Mark::Busy => "!busy k/n: other work took more than 5% of the machine in k of the n runs",
            Mark::Quota => {
                "~quota k/n: a CPU quota on the run's cgroup ran out in k of the n runs: the wait is the quota's"
            }
            Mark::Outlier => "~outlier: a run beyond Tukey's fences (1.5 IQR)",
            Mark::Short => "!short: fixed work under 50 ms, too short to time: give it more work",
            Mark::Impossible => "!impossible: a speedup above the usable CPUs beyond the runs' noise: a mistimed job",
            Mark::AboveCpus => "~above CPUs: a speedup above the usable CPUs, within the runs' noise",
            Mark::Behind => "!behind k/n: an open loop could not keep up with its rate in k of the n runs",
        }
    }

    /// Whether it keeps `compare` from calling the point better or worse.
    pub fn vetoes(self) -> bool {
        self.tag().starts_with('!')
    }
}

/// The noise marks of a point's runs (not `!impossible`, which needs the host: see `PointView::above_cpus`).
pub(crate) fn noise_marks_of(point: &Point) -> Vec<(Mark, String)> {
    let Some(summary) = &point.summary else { return Vec::new() };
    let mut marks = Vec::new();
    if let Some(d) = &summary.diagnostics {
        if d.is_drifting() {
            marks.push((Mark::Drift, Mark::Drift.tag().to_string()));
        }
        if d.is_bimodal() {
            marks.push((Mark::TwoModes, Mark::TwoModes.tag().to_string()));
        }
        match d.outliers.as_slice() {
            [] => {}
            [one] => marks.push((Mark::Outlier, format!("~outlier: run {}", one + 1))),
            many => marks.push((
                Mark::Outlier,
                format!("~outliers: runs {}", many.iter().map(|i| (i + 1).to_string()).collect::<Vec<_>>().join(",")),
            )),
        }
    }
    if !summary.busy_runs.is_empty() {
        marks.push((Mark::Busy, format!("!busy {}/{}", summary.busy_runs.len(), point.runs.len())));
    }
    if !summary.throttled_runs.is_empty() {
        marks.push((Mark::Quota, format!("~quota {}/{}", summary.throttled_runs.len(), point.runs.len())));
    }
    if point.too_short().is_some() {
        marks.push((Mark::Short, Mark::Short.tag().to_string()));
    }
    if let Some((behind, runs)) = point.behind_runs().filter(|(behind, _)| *behind > 0) {
        marks.push((Mark::Behind, format!("!behind {behind}/{runs}")));
    }
    marks
}

/// The noise marks of a point, as its row shows them.
pub(crate) fn noise_marks(point: &Point) -> String {
    noise_marks_of(point).into_iter().map(|(_, shown)| shown).collect::<Vec<_>>().join(" ")
}

/// What a point's row must say about its runs: missing ones (an
/// interrupted run), or with `--until-ci`, how many it took and whether its
/// interval got as tight as asked: the mean's, or with variants the paired
/// ratio's to `paired_base` (the first variant's point, which has no note).
pub fn run_note(point: &Point, settings: &Settings, paired_base: Option<&Point>) -> String {
    let (n, runs) = (point.runs.len(), settings.runs);
    let interval = match paired_base {
        // The first variant's rounds are judged by the others' ratios to it.
        Some(base) if std::ptr::eq(base, point) => None,
        Some(base) => point.paired_interval_pct(base).map(|h| (h, "ratio ")),
        None => point.mean_interval_pct().map(|h| (h, "")),
    };
    let count = if n < runs {
        format!("({n} of {runs} runs)")
    } else if let Some(target) = settings.until_ci_pct {
        match interval {
            Some((half, what)) if half > target => format!("({n} runs: {what}±{half:.1}%, not ±{target})"),
            _ if n > runs => format!("({n} runs)"),
            _ => String::new(),
        }
    } else {
        String::new()
    };
    let marks = noise_marks(point);
    [count, marks].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" ")
}

/// One line for each mark in `shown`, in [`Mark::ALL`]'s order, and what a
/// `!` mark does to `compare`, when one is among them.
pub fn legend(shown: &std::collections::BTreeSet<Mark>) -> String {
    let mut out: String = shown.iter().map(|m| format!("{}\n", m.meaning())).collect();
    if shown.iter().any(|m| m.vetoes()) {
        out.push_str(
            "a ! mark: compare calls that point's differences too noisy, not better or worse (fsscale help marks)\n",
        );
    }
    out
}

/// Every mark and column in full: `fsscale help marks` and the man page.
pub const MARKS_HELP: &str = "\
What the marks at the end of a row say about its runs

  !drift        The runs trend with the order they ran in: Spearman's rank correlation of the
                runs' figures against their order, p < 0.05. Something changed during the
                measurement (a clock ramping up, a filling filesystem, another job).
  !2 modes      The runs fall into two groups: Sarle's bimodality coefficient above 5/9,
                computed from 10 runs or more. The machine switched between two states.
  !busy k/n     Other work took more than 5% of the machine during k of the n runs (the
                CPU time /proc/stat saw beyond the workers', their commands' and fsscale's).
  ~quota k/n    A CPU quota on the run's cgroup (cgroup v2 cpu.max, v1 cpu.cfs_quota_us) ran
                out in k of the n runs: the workers' runq wait is the quota's, not other
                work's. Such a run is busy only where they waited beyond the throttled time;
                compare judges its ops/s as a real difference.
  ~outlier      A run beyond Tukey's fences (1.5 interquartile ranges from the quartiles),
                named by its number; kept in every figure, only pointed out.
  !short        Fixed work whose job took under 50 ms: the start's skew and a scheduler
                slice are a large share of it. Give it more work (--items, --scale).
  !impossible   A speedup (effective concurrency) over 2% above the CPUs the workers could
                use while mostly on a CPU, beyond two standard deviations of the runs' noise:
                a mistimed job, or a 1-worker point slowed throughout (a clock still ramping
                up). Not a real scaling figure.
  ~above CPUs   The same, within the runs' noise: more runs tell.
  !behind k/n   An open loop (--rate) could not keep up in k of the n runs: it achieved under
                99% of the rate asked, or its queue of ops due grew through the window. Its
                response times are those of an overload, not a figure at that rate.
  (7 runs)      --until-ci took 7 runs; (30 runs: ±3.1%, not ±2) missed its target.
  (2 of 5 runs) An interrupted or failed run kept the runs that finished.

compare calls a significant difference too noisy, not better or worse, where a side drifts,
has two modes, is short, or is busy in more than a fifth of its runs. Variants and
--between are paired by round, which cancels what moves both sides of a round alike; at
busy points of CPU-bound workers they compare ops per CPU-second.

What the columns say

  ops/s         All workers' ops over the exact window, median of the runs.
  sd            Standard deviation of the runs' figures, relative to their mean.
  ops/s/worker  ops/s over the workers: the \"op/s per process\" of published tables.
  efficiency    ops/s per worker against 1 worker of the same mode and share.
  ops/cpu-s     Ops per second of the workers' own CPU time (user + system): what an op
                costs in CPU; it moves far less than ops/s when other work shares the
                machine (compare --per-cpu).
  runq          Share of each worker's window spent runnable but waiting for a CPU.
  asleep        Share spent neither running nor runnable: a lock, I/O, a child.
                Means over the workers, medians of the runs; - where the workers run a
                command (command, untar --extract-cmd): they only wait for it.
  time s        Fixed work: the slowest worker's time, median of the runs.
  entries/s     Fixed work: all workers' entries over that time (command: runs/s).
  eff. concurrency  Entries/s at N over entries/s at 1; for untar N x T(1) / T(N):
                12 extractions taking 5.69 times one give 2.11; below 1 is worse than
                one after another.
  spread        The slowest worker's time over the fastest's (fairness).
  work share    A walk the workers share: the smallest and largest share one worker listed.
  user s, sys s CPU seconds of all workers and the commands they ran.
  sync s        A syncfs after the job (untimed; setup's writes were synced before the
                start): what the job left to write back.
  dev MB        Written to the device during the job (and during that sync); dev MB read:
                read from it, as a cold walk reads.
  p50 ... max   Latency of single ops (log-linear histogram, within 6.25%).
  asked         An open loop (--rate): the ops a second asked of all workers; ops/s is what
                they achieved.
  resp p50 ...  Its ops' response times: from when each op was due to when it ended, the
                queue included (what a client at that rate would see).
  svc p99       Their service times: from when each began (a closed loop's latency).
  lag p99       How late the workers began their ops.
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mark_has_one_line_that_starts_with_its_tag() {
        for mark in Mark::ALL {
            let line = mark.meaning();
            assert!(line.starts_with(mark.tag()), "{line}");
            assert!(!line.contains('\n') && line.len() < 110, "{line}");
            assert!(MARKS_HELP.contains(&format!("  {}", mark.tag())), "{mark:?} is in the full help");
        }
    }

    #[test]
    fn the_legend_names_only_the_marks_shown() {
        let shown: std::collections::BTreeSet<Mark> = [Mark::Outlier].into();
        assert_eq!(legend(&shown), "~outlier: a run beyond Tukey's fences (1.5 IQR)\n");
        let shown: std::collections::BTreeSet<Mark> = [Mark::Busy, Mark::Drift].into();
        let text = legend(&shown);
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(text.starts_with("!drift:") && text.contains("\n!busy k/n:") && text.contains("a ! mark"), "{text}");
        assert_eq!(legend(&Default::default()), "");
    }
}
