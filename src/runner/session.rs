//! The schedule loop: every planned point in the document from the start,
//! runs in the scheduler's order on the filesystems the pool gives, each
//! record kept and saved as it comes, and the document's status saying how
//! it ended. It measures through a [`Measurer`], so everything here is
//! tested with a fake one, without forking a worker.

use std::time::SystemTime;

use anyhow::Result;

use super::document::{finish, new_point};
use super::measure::{self, Inputs, Measurer, RunJob, Timing};
use super::pool::FsPool;
use super::schedule::{Layout, PointState, Repetition, Scheduler, Slot};
use super::signals::{self, Interrupted};
use super::variant;
use super::Progress;
use crate::exec::Containment;
use crate::fs::FsRecord;
use crate::plan::{Cache, PointSpec, RunConfig};
use crate::results::{self, ResultsFile, RunRecord, Saver, Status};
use crate::workloads::CommandSpec;

/// What the schedule runs with.
pub(super) struct Session<'a> {
    pub config: &'a RunConfig,
    pub measurer: &'a dyn Measurer,
    pub inputs: Inputs<'a>,
    /// `--pin`: the CPUs, in the order workers take them.
    pub cpus: Option<&'a [usize]>,
    /// Where the commands' processes are kept and killed after each run.
    pub containment: Option<&'a mut Containment>,
    pub progress: &'a mut dyn Progress,
}

/// Where the schedule is: the plan, what each point has done, the order.
struct Schedule {
    /// Every point of every filesystem, filesystem-major: (filesystem index, point).
    plan: Vec<(usize, PointSpec)>,
    states: Vec<PointState>,
    repetition: Repetition,
    scheduler: Scheduler,
    /// The timing every run starts from.
    timing: Timing,
    /// Runs done so far, warm-ups included (each record's `position`).
    position: usize,
    /// The machine was called busy once already.
    warned_busy: bool,
    /// A warm-up was called unsteady once already.
    warned_unsteady: bool,
}

impl Session<'_> {
    /// Runs the whole schedule into `doc`, saving after every run, and
    /// returns the finished document. Whatever ends it (a run's error, a
    /// full disk, a journal that cannot be written, a signal), the document
    /// on disk records how, and keeps every finished run.
    pub(super) fn run(mut self, mut doc: ResultsFile, mut saver: Saver) -> Result<ResultsFile> {
        let outcome = self.schedule(&mut doc, &mut saver);
        let status = match &outcome {
            Ok(()) => Status::Complete,
            Err(error) if error.downcast_ref::<Interrupted>().is_some() => Status::Interrupted,
            Err(_) => Status::Failed,
        };
        finish(&mut doc, status, outcome.as_ref().err());
        let saved = saver.finish(&doc);
        self.progress.saved();
        match (outcome, saved) {
            (Ok(()), Ok(())) => Ok(doc),
            (Err(error), Ok(())) => Err(error),
            (Ok(()), Err(not_saved)) => Err(not_saved),
            (Err(error), Err(not_saved)) => {
                Err(error.context(format!("the results could not be saved ({not_saved:#})")))
            }
        }
    }

    fn schedule(&mut self, doc: &mut ResultsFile, saver: &mut Saver) -> Result<()> {
        let config = self.config;
        let points = config.points();
        if points.iter().any(|p| p.cache == Some(Cache::Cold)) {
            // Fail before anything runs rather than at the first point.
            measure::drop_caches()?;
        }
        let plan: Vec<(usize, PointSpec)> =
            (0..config.filesystems.specs.len()).flat_map(|f| points.iter().map(move |p| (f, *p))).collect();
        for (fs, spec) in &plan {
            let mut point = new_point(config, &config.filesystems.specs[*fs], spec);
            point.ranks = self.measurer.ranks_for(spec.workers);
            doc.points.push(point);
            saver.point_started(doc, doc.points.len() - 1)?;
        }
        self.progress.plan(plan.len(), config.runs);
        let repetition = Repetition {
            warmups: config.warmup_runs,
            runs: config.runs,
            max_runs: config.until_ci_pct.map(|_| config.max_runs),
        };
        let mut pool = FsPool::new(&config.filesystems, &config.dir, self.filesystem_sizes(), plan.len());
        let mut schedule = Schedule {
            states: vec![PointState::default(); plan.len()],
            plan,
            repetition,
            scheduler: Scheduler::new(
                config.order,
                repetition,
                config.order_seed,
                Layout { filesystems: config.filesystems.specs.len(), variants: config.variants.len() },
            ),
            timing: Timing::from_plan(config),
            position: 0,
            warned_busy: false,
            warned_unsteady: false,
        };
        while let Some(slot) = schedule.scheduler.next(&schedule.states) {
            let (record, fs_record) = self.run_slot(&mut pool, &schedule, slot, doc)?;
            self.keep(doc, &mut schedule, slot, record, fs_record);
            saver.run_finished(doc, slot.point, slot.warmup)?;
            self.progress.saved();
            if schedule.repetition.is_done(&schedule.states[slot.point]) {
                self.complete(doc, saver, &mut pool, &schedule, slot.point)?;
            }
        }
        pool.finish()
    }

    /// Bytes to make each filesystem with: room for the largest point's data.
    fn filesystem_sizes(&self) -> Vec<u64> {
        let config = self.config;
        let tree = self.inputs.tree;
        let max_workers = config.workers.iter().copied().max().unwrap_or(1) as u64;
        let grown = match config.workloads.contains(&crate::workloads::Workload::AppendGrow) {
            true => config.options.grow_bytes,
            false => 0,
        };
        let data_bytes = tree.map_or(0, |u| u.contents.bytes).max(grown) * max_workers;
        // Every worker's copy of the tree, plus the shared one.
        let data_entries = tree.map_or(0, |u| u.contents.entries() * (max_workers + 1));
        let filesystems = &config.filesystems;
        filesystems.specs.iter().map(|s| filesystems.size_for(s, data_bytes, data_entries)).collect()
    }

    /// Runs `slot` once on its filesystem; an error names the point and the run.
    fn run_slot(
        &mut self,
        pool: &mut FsPool<'_>,
        schedule: &Schedule,
        slot: Slot,
        doc: &ResultsFile,
    ) -> Result<(RunRecord, Option<FsRecord>)> {
        let (fs, spec) = &schedule.plan[slot.point];
        let state = &schedule.states[slot.point];
        let run = if slot.warmup { state.warmups } else { state.runs };
        self.progress.run_started(spec, slot.point, run, slot.warmup);
        let started_at = results::rfc3339_millis(SystemTime::now());
        let cgroup = self.containment.as_mut().map(|c| c.start_run());
        let (measurer, inputs, cpus, config) = (self.measurer, self.inputs, self.cpus, self.config);
        let outcome = signals::check().map_err(anyhow::Error::from).and_then(|()| {
            pool.run_on(*fs, slot.point, |dir, device| {
                let until_steady = config.steady.filter(|_| slot.warmup && !spec.workload.is_fixed_work());
                let timing = Timing {
                    device,
                    drop_caches: spec.cache == Some(Cache::Cold),
                    until_steady,
                    ..schedule.timing.clone()
                };
                let Some(variant) = spec.variant.map(|v| &config.variants[v]) else {
                    return measurer.run_once(dir, RunJob { spec, timing: &timing, inputs, run, cpus });
                };
                // The command workload sees the variant too.
                let command = inputs.command.map(|c| CommandSpec { variant: Some(variant.name.clone()), ..c.clone() });
                let inputs = Inputs { command: command.as_ref(), ..inputs };
                let stop = || signals::check().is_err();
                variant::under(variant, dir, spec.workers, config.stall_timeout, &stop, || {
                    measurer.run_once(dir, RunJob { spec, timing: &timing, inputs, run, cpus })
                })
            })
        });
        if let (Some(c), Some(cgroup)) = (self.containment.as_mut(), cgroup) {
            let killed = c.end_run(cgroup);
            if killed > 0 {
                self.progress.warning(&format!(
                    "run {} of {}: killed {killed} process(es) the commands left running",
                    run + 1,
                    spec.workload
                ));
            }
        }
        let (mut record, fs_record) = outcome.map_err(|error| self.run_error(error, doc, spec, slot, run))?;
        self.warn_of_mismatches(&record, spec, run);
        record.started_at = Some(started_at);
        Ok((record, fs_record))
    }

    /// A run's error, with the point and the run it ended.
    fn run_error(
        &self,
        error: anyhow::Error,
        doc: &ResultsFile,
        spec: &PointSpec,
        slot: Slot,
        run: usize,
    ) -> anyhow::Error {
        // A signal that reached a tool first (mkfs, mount) makes it fail; the cause is the signal.
        let error = match signals::check() {
            Err(signal) if error.downcast_ref::<Interrupted>().is_none() => anyhow::Error::new(signal),
            _ => error,
        };
        let on = doc.points[slot.point].condition().map(|c| format!(" {c}")).unwrap_or_default();
        let config = self.config;
        let which = match slot.warmup {
            true => format!("warm-up run {} of {}", run + 1, config.warmup_runs),
            false => format!("run {} of {}", run + 1, config.runs.max(run + 1)),
        };
        error.context(format!(
            "{} ({}, {}, {} workers){on}, {which}",
            spec.workload, spec.mode, spec.share, spec.workers
        ))
    }

    /// `--verify`: system calls the kernel counted that the ops do not explain.
    fn warn_of_mismatches(&mut self, record: &RunRecord, spec: &PointSpec, run: usize) {
        let Some(check) = &record.syscalls else { return };
        for mismatch in check.mismatches(spec.workers) {
            self.progress.warning(&format!(
                "--verify: {} x{} run {}: the kernel counted {} {} calls where the ops imply {:.0} ({:+.2}%)",
                spec.workload,
                spec.workers,
                run + 1,
                mismatch.counted,
                mismatch.syscall,
                mismatch.expected,
                100.0 * (mismatch.ratio() - 1.0)
            ));
        }
    }

    /// Puts `record` in its point, summarised, and tells of a busy machine once.
    fn keep(
        &mut self,
        doc: &mut ResultsFile,
        schedule: &mut Schedule,
        slot: Slot,
        mut record: RunRecord,
        fs_record: Option<FsRecord>,
    ) {
        record.position = Some(schedule.position);
        schedule.position += 1;
        let point = &mut doc.points[slot.point];
        point.filesystem = point.filesystem.take().or(fs_record);
        let state = &mut schedule.states[slot.point];
        if slot.warmup {
            let unsteady = record.steady.filter(|s| !s.reached);
            if let (Some(outcome), false) = (unsteady, schedule.warned_unsteady) {
                schedule.warned_unsteady = true;
                let change = outcome
                    .change_pct
                    .map(|c| format!(" (its last two blocks differed by {c:+.1}%)"))
                    .unwrap_or_default();
                self.progress.warning(&format!(
                    "the warm-up of {} x{} was not steady after --warmup-max {}s{change}: its first runs may still \
                     be ramping; the report counts such points, and a longer --warmup-max gives them longer",
                    point.workload,
                    point.workers,
                    self.config.steady.map_or(0.0, |s| s.max_s)
                ));
            }
            point.warmup_runs.push(record);
            state.warmups += 1;
            self.progress.run_finished(point, true);
            return;
        }
        point.runs.push(record);
        point.summarize();
        state.runs += 1;
        state.precise = self.config.until_ci_pct.is_some_and(|pct| point.is_precise(pct));
        let busy = point.summary.as_ref().is_some_and(|s| s.busy_runs.contains(&(point.runs.len() - 1)));
        if busy && !schedule.warned_busy {
            schedule.warned_busy = true;
            let share = point.runs.last().and_then(|r| r.noise).map_or(0.0, |n| n.others_cpu);
            self.progress.warning(&format!(
                "other work took {:.0}% of the machine during run {} of {} x{}; such runs are marked !busy, \
                 and compare calls differences on points busy in more than a fifth of their runs too noisy",
                100.0 * share,
                point.runs.len(),
                point.workload,
                point.workers
            ));
        }
        self.progress.run_finished(point, false);
    }

    /// Point `index` has every run: it is marked complete, and filesystems
    /// nothing more runs on are taken down.
    fn complete(
        &mut self,
        doc: &mut ResultsFile,
        saver: &mut Saver,
        pool: &mut FsPool<'_>,
        schedule: &Schedule,
        index: usize,
    ) -> Result<()> {
        pool.point_done(index);
        let point = &mut doc.points[index];
        point.complete = true;
        self.progress.point_finished(point);
        saver.point_complete(doc, index)?;
        let fs = schedule.plan[index].0;
        let states = schedule.plan.iter().zip(&schedule.states);
        if states.filter(|((f, _), _)| *f == fs).all(|(_, s)| schedule.repetition.is_done(s)) {
            pool.filesystem_done(fs);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
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
        rate: fn(usize, usize) -> u64,
        fail_at: Option<(usize, fn() -> anyhow::Error)>,
        /// (workers, run, warm-up as the timing cannot say, dir) of every call, in order.
        calls: RefCell<Vec<(usize, usize, PathBuf)>>,
        ranks: bool,
    }

    impl Fake {
        fn steady() -> Fake {
            Fake { rate: |workers, _| 1000 * workers as u64, fail_at: None, calls: RefCell::default(), ranks: false }
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
            let ops = (self.rate)(job.spec.workers, call);
            Ok(record_of(job.run, &vec![ops; job.spec.workers], 1.0))
        }

        fn ranks_for(&self, workers: usize) -> Option<Vec<usize>> {
            self.ranks.then(|| (0..workers).rev().collect())
        }
    }

    /// Every progress event, in words.
    #[derive(Default)]
    struct Events(Vec<String>);

    impl Progress for Events {
        fn plan(&mut self, points: usize, runs: usize) {
            self.0.push(format!("plan {points}x{runs}"));
        }
        fn run_started(&mut self, point: &PointSpec, index: usize, run: usize, warmup: bool) {
            let kind = if warmup { "warm-up" } else { "run" };
            self.0.push(format!("start {index} x{} {kind} {run}", point.workers));
        }
        fn point_finished(&mut self, point: &crate::results::Point) {
            self.0.push(format!("done x{}", point.workers));
        }
        fn warning(&mut self, text: &str) {
            self.0.push(format!("warning {text}"));
        }
    }

    /// `stat` in process mode at 1 and 2 workers, in `dir`, saving to `dir/r.json`.
    fn plan(dir: &Path) -> RunConfig {
        let mut config = fixtures::config(vec![Workload::Stat], vec![]);
        config.modes = vec![Mode::Process];
        config.dir = dir.to_path_buf();
        config.output = dir.join("r.json");
        config.runs = 3;
        config.warmup_runs = 1;
        config
    }

    /// Runs `config`'s schedule with `fake`: the outcome, the events, the document on disk.
    fn schedule(config: &RunConfig, fake: &dyn Measurer) -> (Result<ResultsFile>, Vec<String>, ResultsFile) {
        let sources = Sources { tree: None, trace: None, walks_only_a_given_tree: false };
        let doc = new_document(config, &sources, None);
        let saver = Saver::create(&config.output, &doc).unwrap();
        let mut events = Events::default();
        let session = Session {
            config,
            measurer: fake,
            inputs: sources.inputs(config),
            cpus: None,
            containment: None,
            progress: &mut events,
        };
        let outcome = session.run(doc, saver);
        let on_disk = ResultsFile::load(&config.output).unwrap();
        (outcome, events.0, on_disk)
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
            rate: |workers, call| if workers == 1 { 500 } else { 1000 + 2000 * (call / 2 % 2) as u64 },
            ..Fake::steady()
        };
        let (outcome, _, on_disk) = schedule(&config, &fake);
        outcome.unwrap();
        assert_eq!(on_disk.points[0].runs.len(), 3, "steady: precise at the minimum");
        assert_eq!(on_disk.points[1].runs.len(), 7, "noisy: up to --max-runs");
        assert!(on_disk.points.iter().all(|p| p.complete));
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
        assert!(warnings[0]
            .contains("stat x1 was not steady after --warmup-max 3s (its last two blocks differed by +4.0%)"));
        assert_eq!(doc.settings.warmup_until_steady, steady);
        assert_eq!(doc.points[1].warmup_until_steady(), Some((1.0, false)));
    }
}
