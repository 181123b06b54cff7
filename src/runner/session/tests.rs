//! The session's schedule with a fake `Measurer`: nothing forks.
use std::cell::RefCell;
use std::path::{Path, PathBuf};

use super::*;
use crate::plan::{fixtures, Mode, Order};
use crate::results::fixtures::run as record_of;
use crate::results::SteadyOutcome;
use crate::runner::document::new_document;
use crate::runner::sources::Sources;
use crate::workloads::Workload;

/// A measurer that forks nothing: each run's workers "did" the ops
/// `rate` gives for (point's workers, call number), or the run fails
/// with `fail` at call `fail_at`.
struct Fake {
    /// Ops of a run of this point, at this call.
    rate: fn(&PointSpec, usize) -> u64,
    fail_at: Option<(usize, fn() -> anyhow::Error)>,
    /// (workers, run, warm-up as the timing cannot say, dir) of every call, in order.
    calls: RefCell<Vec<(usize, usize, PathBuf)>>,
    ranks: bool,
}

impl Fake {
    fn steady() -> Fake {
        Fake { rate: |spec, _| 1000 * spec.workers as u64, fail_at: None, calls: RefCell::default(), ranks: false }
    }
}

impl Measurer for Fake {
    fn run_once(&self, dir: &Path, job: RunJob<'_>) -> Result<RunRecord> {
        let call = self.calls.borrow().len();
        self.calls.borrow_mut().push((job.spec.workers, job.run, dir.to_path_buf()));
        if let Some((at, fail)) = self.fail_at.filter(|(at, _)| *at == call) {
            let _ = at;
            return Err(fail());
        }
        let ops = (self.rate)(job.spec, call);
        Ok(record_of(job.run, &vec![ops; job.spec.workers], 1.0))
    }

    fn ranks_for(&self, workers: usize) -> Option<Vec<usize>> {
        self.ranks.then(|| (0..workers).rev().collect())
    }
}

/// Every progress event, in words.
#[derive(Default)]
pub(super) struct Events(pub Vec<String>);

impl Progress for Events {
    fn plan(&mut self, plan: &crate::runner::PlanSummary) {
        self.0.push(format!("plan {}x{}", plan.points, plan.runs_per_point));
    }
    fn run_started(&mut self, run: &crate::runner::RunStart<'_>) {
        let kind = if run.warmup { "warm-up" } else { "run" };
        self.0.push(format!("start {} x{} {kind} {}", run.index, run.point.workers, run.run));
    }
    fn point_finished(&mut self, point: &crate::results::Point) {
        self.0.push(format!("done x{}", point.workers));
    }
    fn warning(&mut self, text: &str) {
        self.0.push(format!("warning {text}"));
    }
    fn probing(&mut self, spec: &PointSpec, search: &crate::results::objective::Search) {
        let rate = |r: Option<crate::plan::Rate>| r.map_or("-".to_string(), |r| r.to_string());
        self.0.push(format!("probe {} ({}..{})", rate(spec.rate), rate(search.met), rate(search.missed)));
    }
}

/// `stat` in process mode at 1 and 2 workers, in `dir`, saving to `dir/r.json`.
pub(super) fn plan(dir: &Path) -> RunConfig {
    let mut config = fixtures::config(vec![Workload::Stat], vec![]);
    config.modes = vec![Mode::Process];
    config.dir = dir.to_path_buf();
    config.output = dir.join("r.json");
    config.runs = 3;
    config.warmup_runs = 1;
    config
}

/// Runs `config`'s schedule with `fake`: the outcome, the events, the document on disk.
pub(super) fn schedule(config: &RunConfig, fake: &dyn Measurer) -> (Result<ResultsFile>, Vec<String>, ResultsFile) {
    let mut events = Events::default();
    let (outcome, on_disk) = schedule_with(config, fake, &mut events);
    (outcome, events.0, on_disk)
}

/// [`schedule`] telling `progress`.
fn schedule_with(
    config: &RunConfig,
    fake: &dyn Measurer,
    progress: &mut dyn Progress,
) -> (Result<ResultsFile>, ResultsFile) {
    let sources = Sources { tree: None, trace: None, walks_only_a_given_tree: false };
    let doc = new_document(config, &sources, None);
    let saver = Saver::create(&config.output, &doc).unwrap();
    let session = Session {
        config,
        measurer: fake,
        inputs: sources.inputs(config),
        cpus: None,
        containment: None,
        memory: None,
        progress,
    };
    let outcome = session.run(doc, saver);
    (outcome, ResultsFile::load(&config.output).unwrap())
}

#[test]
fn interleaved_rounds_warm_up_every_point_then_run_round_by_round_and_save_all() {
    let dir = tempfile::tempdir().unwrap();
    let config = plan(dir.path());
    let fake = Fake { ranks: true, ..Fake::steady() };
    let (outcome, events, on_disk) = schedule(&config, &fake);
    let doc = outcome.unwrap();
    let calls: Vec<(usize, usize)> = fake.calls.borrow().iter().map(|(w, r, _)| (*w, *r)).collect();
    // One warm-up round, then three rounds of measured runs, each point once per round.
    assert_eq!(calls, [(1, 0), (2, 0), (1, 0), (2, 0), (1, 1), (2, 1), (1, 2), (2, 2)]);
    assert!(fake.calls.borrow().iter().all(|(_, _, d)| d == dir.path()), "every run in --dir");
    assert_eq!(events[0], "plan 2x3");
    assert_eq!(events[1], "start 0 x1 warm-up 0");
    assert_eq!(events[3], "start 0 x1 run 0");
    assert_eq!(events[events.len() - 3..], ["done x1", "start 1 x2 run 2", "done x2"]);
    assert_eq!(doc.status, Status::Complete);
    assert_eq!(on_disk.status, Status::Complete);
    assert_eq!(on_disk.points.len(), 2);
    for (point, workers) in on_disk.points.iter().zip([1usize, 2]) {
        assert_eq!((point.workers, point.runs.len(), point.warmup_runs.len()), (workers, 3, 1));
        assert!(point.complete);
        assert_eq!(point.ranks, Some((0..workers).rev().collect()));
        assert_eq!(point.summary.as_ref().unwrap().ops_per_s.mean, 1000.0 * (workers * workers) as f64);
    }
    // Positions follow the order the runs happened in.
    let position = |p: usize, warmup: bool, run: usize| {
        let point = &on_disk.points[p];
        let runs = if warmup { &point.warmup_runs } else { &point.runs };
        runs[run].position.unwrap()
    };
    assert_eq!(
        [position(0, true, 0), position(1, true, 0), position(0, false, 0), position(1, false, 2)],
        [0, 1, 2, 7]
    );
    assert!(!crate::results::journal_path(&config.output).exists(), "the journal goes with a finished run");
}

#[test]
fn sequential_order_runs_every_run_of_a_point_before_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let config = RunConfig { order: Order::Sequential, ..plan(dir.path()) };
    let fake = Fake::steady();
    let (outcome, _, _) = schedule(&config, &fake);
    outcome.unwrap();
    let calls: Vec<(usize, usize)> = fake.calls.borrow().iter().map(|(w, r, _)| (*w, *r)).collect();
    assert_eq!(calls, [(1, 0), (1, 0), (1, 1), (1, 2), (2, 0), (2, 0), (2, 1), (2, 2)]);
}

#[test]
fn until_ci_stops_a_steady_point_early_and_runs_a_noisy_one_to_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let config = RunConfig { runs: 3, warmup_runs: 0, until_ci_pct: Some(1.0), max_runs: 7, ..plan(dir.path()) };
    // One worker steady; two workers (every other call) alternate between 1000 and 3000 ops.
    let fake = Fake {
        rate: |spec, call| if spec.workers == 1 { 500 } else { 1000 + 2000 * (call / 2 % 2) as u64 },
        ..Fake::steady()
    };
    let (outcome, _, on_disk) = schedule(&config, &fake);
    outcome.unwrap();
    assert_eq!(on_disk.points[0].runs.len(), 3, "steady: precise at the minimum");
    assert_eq!(on_disk.points[1].runs.len(), 7, "noisy: up to --max-runs");
    assert!(on_disk.points.iter().all(|p| p.complete));
}

#[test]
fn variants_go_on_in_lockstep_until_their_paired_ratio_is_precise() {
    let dir = tempfile::tempdir().unwrap();
    let variant = |name: &str| crate::vocab::Variant {
        name: name.into(),
        setup: String::new(),
        teardown: None,
        unprofiled: false,
    };
    let config = RunConfig {
        runs: 3,
        warmup_runs: 0,
        until_ci_pct: Some(1.0),
        max_runs: 7,
        variants: vec![variant("a"), variant("b")],
        ..plan(dir.path())
    };
    // Four calls a round (x1 a, x1 b, x2 a, x2 b). The machine doubles
    // every other round, under both variants alike; at one worker b is
    // 10% slower every round, at two it is 50% slower in every other.
    let fake = Fake {
        rate: |spec, call| {
            let machine = 1000 * (1 + (call / 4 % 2) as u64);
            match (spec.workers, spec.variant) {
                (_, Some(0)) => machine,
                (1, _) => machine * 9 / 10,
                _ => machine / (1 + (call / 4 % 2) as u64),
            }
        },
        ..Fake::steady()
    };
    let (outcome, _, on_disk) = schedule(&config, &fake);
    outcome.unwrap();
    let runs: Vec<(usize, Option<&str>, usize)> =
        on_disk.points.iter().map(|p| (p.workers, p.variant.as_deref(), p.runs.len())).collect();
    // Each variant alone spreads by 2x (imprecise); the x1 ratio is exactly 0.9 from the least rounds on.
    assert_eq!(runs, [(1, Some("a"), 3), (1, Some("b"), 3), (2, Some("a"), 7), (2, Some("b"), 7)]);
    assert!(on_disk.points.iter().all(|p| p.complete));
    // Failed after its 14th run and resumed, the same plan runs the same runs:
    // the precise x1 group is not run again, the x2 group goes on to its cap.
    let fail_at = |at: usize| Fake { fail_at: Some((at, || anyhow::anyhow!("a worker died"))), ..fake_like(&fake) };
    let stopped = fail_at(14);
    let (outcome, _, partial) = schedule(&config, &stopped);
    assert!(outcome.is_err());
    assert_eq!(partial.status, Status::Failed);
    let resumed = fake_like(&fake);
    let mut events = Events::default();
    let session = Session {
        config: &config,
        measurer: &resumed,
        inputs: Sources { tree: None, trace: None, walks_only_a_given_tree: false }.inputs(&config),
        cpus: None,
        containment: None,
        memory: None,
        progress: &mut events,
    };
    let doc = crate::runner::document::reopen(partial.clone());
    let saver = Saver::create(&config.output, &doc).unwrap();
    let finished = session.run(doc, saver).unwrap();
    let again: Vec<(usize, Option<&str>, usize)> =
        finished.points.iter().map(|p| (p.workers, p.variant.as_deref(), p.runs.len())).collect();
    assert_eq!(again, runs);
    assert!(finished.points.iter().all(|p| p.complete) && finished.status == Status::Complete);
    // The kept runs are the same records; the resumed ones follow them in position.
    let kept: usize = partial.points.iter().map(|p| p.runs.len()).sum();
    assert_eq!(kept, 14);
    assert_eq!(resumed.calls.borrow().len(), 20 - kept);
    let first = finished.resumed[0].first_position;
    assert_eq!(first, 14);
    for (before, after) in partial.points.iter().zip(&finished.points) {
        assert_eq!(after.runs[..before.runs.len()], before.runs[..]);
        assert!(after.runs[before.runs.len()..].iter().all(|r| r.position.unwrap() >= first));
    }
}

/// A fake with `fake`'s rates and no calls yet.
fn fake_like(fake: &Fake) -> Fake {
    Fake { rate: fake.rate, fail_at: None, calls: RefCell::default(), ranks: fake.ranks }
}

#[test]
fn a_failed_run_ends_the_schedule_named_and_keeps_every_finished_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = plan(dir.path());
    let fake = Fake { fail_at: Some((5, || anyhow::anyhow!("the disk caught fire"))), ..Fake::steady() };
    let (outcome, _, on_disk) = schedule(&config, &fake);
    let error = format!("{:#}", outcome.unwrap_err());
    // Call 5 is the second worker count's second measured run.
    assert_eq!(error, "stat (process, private, 2 workers), run 2 of 3: the disk caught fire");
    assert_eq!(on_disk.status, Status::Failed);
    assert_eq!(on_disk.error.as_deref(), Some(error.as_str()));
    let kept: Vec<(usize, usize)> = on_disk.points.iter().map(|p| (p.warmup_runs.len(), p.runs.len())).collect();
    assert_eq!(kept, [(1, 2), (1, 1)]);
    assert!(on_disk.points.iter().all(|p| !p.complete));
    assert_eq!(fake.calls.borrow().len(), 6, "nothing runs after the failure");
}

#[test]
fn a_signal_during_a_run_records_interrupted_with_the_runs_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = plan(dir.path());
    let fake = Fake { fail_at: Some((2, || Interrupted { signal: libc::SIGINT }.into())), ..Fake::steady() };
    let (outcome, _, on_disk) = schedule(&config, &fake);
    let error = outcome.unwrap_err();
    assert_eq!(error.downcast_ref::<Interrupted>().map(|i| i.signal), Some(libc::SIGINT));
    assert_eq!(on_disk.status, Status::Interrupted);
    assert_eq!(on_disk.points.iter().map(|p| p.warmup_runs.len() + p.runs.len()).sum::<usize>(), 2);
}

#[test]
fn a_busy_machine_is_warned_of_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = plan(dir.path());
    struct Busy(Fake);
    impl Measurer for Busy {
        fn run_once(&self, dir: &Path, job: RunJob<'_>) -> Result<RunRecord> {
            let mut record = self.0.run_once(dir, job)?;
            record.noise = Some(crate::results::RunNoise { others_cpu: 0.6, ticks: 1000, ..Default::default() });
            Ok(record)
        }
    }
    let (outcome, events, _) = schedule(&config, &Busy(Fake::steady()));
    outcome.unwrap();
    let warnings: Vec<&String> = events.iter().filter(|e| e.starts_with("warning other work took 60%")).collect();
    assert_eq!(warnings.len(), 1, "{events:?}");
    assert!(warnings[0].contains("during run 1 of stat x1"), "{}", warnings[0]);
}

#[test]
fn only_warm_ups_of_fixed_time_loops_run_until_steady_and_an_unsteady_one_is_warned_of_once() {
    let dir = tempfile::tempdir().unwrap();
    let steady = crate::plan::SteadyWarmup::at_most(std::time::Duration::from_secs(3));
    let config = RunConfig { steady, ..plan(dir.path()) };
    /// Every warm-up ends unsteady; records which runs were asked to run until steady.
    struct Ramping(Fake, RefCell<Vec<bool>>);
    impl Measurer for Ramping {
        fn run_once(&self, dir: &Path, job: RunJob<'_>) -> Result<RunRecord> {
            let until_steady = job.timing.until_steady;
            self.1.borrow_mut().push(until_steady.is_some());
            let mut record = self.0.run_once(dir, job)?;
            record.steady = until_steady.map(|_| SteadyOutcome { reached: false, change_pct: Some(4.0) });
            Ok(record)
        }
    }
    let ramping = Ramping(Fake::steady(), RefCell::new(Vec::new()));
    let (outcome, events, _) = schedule(&config, &ramping);
    let doc = outcome.unwrap();
    // The warm-up round (two points), then three measured rounds.
    assert_eq!(*ramping.1.borrow(), [true, true, false, false, false, false, false, false]);
    let warnings: Vec<&String> = events.iter().filter(|e| e.contains("was not steady")).collect();
    assert_eq!(warnings.len(), 1, "{events:?}");
    assert!(
        warnings[0].contains("stat x1 was not steady after --warmup-max 3s (its last two blocks differed by +4.0%)")
    );
    assert_eq!(doc.settings.warmup_until_steady, steady);
    assert_eq!(doc.points[1].warmup_until_steady(), Some((1.0, false)));
}

#[test]
fn progress_is_told_the_plan_and_where_every_run_stands_with_the_time_left() {
    #[derive(Default)]
    struct Standing {
        plan: Option<crate::runner::PlanSummary>,
        runs: Vec<(usize, usize, Option<f64>)>,
    }
    impl Progress for Standing {
        fn plan(&mut self, plan: &crate::runner::PlanSummary) {
            self.plan = Some(*plan);
        }
        fn run_started(&mut self, run: &crate::runner::RunStart<'_>) {
            self.runs.push((run.done, run.total, run.eta_s));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let config = plan(dir.path());
    let mut standing = Standing::default();
    schedule_with(&config, &Fake::steady(), &mut standing).0.unwrap();
    // Two points of one warm-up and three runs: 8 runs, guessed before any
    // ran at a loop's warm-up and window each.
    let guess = (config.warmup + config.duration).as_secs_f64();
    let plan = standing.plan.unwrap();
    assert_eq!((plan.points, plan.total_runs()), (2, 8));
    assert_eq!(plan.eta_s, Some(8.0 * guess));
    let done: Vec<(usize, usize)> = standing.runs.iter().map(|(d, t, _)| (*d, *t)).collect();
    assert_eq!(done, (0..8).map(|d| (d, 8)).collect::<Vec<_>>());
    // Once runs have been timed (a fake's take microseconds), they set the pace.
    let etas: Vec<f64> = standing.runs.iter().map(|(_, _, e)| e.unwrap()).collect();
    assert_eq!(etas[0], 8.0 * guess);
    assert!(etas[2..].iter().all(|&e| e < guess), "{etas:?}");
}
