//! The schedule loop: every planned point in the document from the start,
//! runs in the scheduler's order on the filesystems the pool gives, each
//! record kept and saved as it comes, and the document's status saying how
//! it ended. It measures through a [`Measurer`], so everything here is
//! tested with a fake one, without forking a worker.

use std::time::SystemTime;

use anyhow::Result;

use super::document::{finish, new_point};
use super::eta::{Eta, PointPlan};
use super::measure::{Inputs, Measurer, RunJob, Timing};
use super::memory_limit::MemoryLimit;
use super::pool::FsPool;
use super::schedule::{Layout, PointState, Repetition, Scheduler, Slot};
use super::signals::{self, Interrupted};
use super::variant;
use super::{PlanSummary, Progress, RunStart};
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
    /// `--memory-limit`'s cgroup, whose OOM kills a failed run is told of.
    pub memory: Option<&'a MemoryLimit>,
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
    /// What each point's runs took, for the time left.
    eta: Eta,
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
            super::coordinate::drop_caches()?;
        }
        let plan: Vec<(usize, PointSpec)> =
            (0..config.filesystems.specs.len()).flat_map(|f| points.iter().map(move |p| (f, *p))).collect();
        let repetition = Repetition {
            warmups: config.warmup_runs,
            runs: config.runs,
            max_runs: config.until_ci_pct.map(|_| config.max_runs),
        };
        // A resumed document holds the plan's points already, with their runs.
        let resumed = !doc.points.is_empty();
        let mut states = vec![PointState::default(); plan.len()];
        if resumed {
            states = self.resumed_states(doc, &plan, repetition)?;
        } else {
            for (fs, spec) in &plan {
                let mut point = new_point(config, &config.filesystems.specs[*fs], spec);
                point.ranks = self.measurer.ranks_for(spec.workers);
                doc.points.push(point);
                saver.point_started(doc, doc.points.len() - 1)?;
            }
        }
        let mut pool = FsPool::new(&config.filesystems, &config.dir, self.filesystem_sizes(), plan.len());
        let mut scheduler = Scheduler::new(
            config.order,
            repetition,
            config.order_seed,
            Layout { filesystems: config.filesystems.specs.len(), variants: config.variants.len() },
        );
        // The rounds already run are replayed, so the order goes on where it stopped.
        scheduler.fast_forward(&states);
        let position = doc.resumed.last().map_or(0, |r| r.first_position);
        let mut schedule = Schedule {
            states,
            plan,
            repetition,
            scheduler,
            timing: Timing::from_plan(config),
            position,
            warned_busy: false,
            warned_unsteady: false,
            eta: Eta::default(),
        };
        self.progress.plan(&PlanSummary {
            points: schedule.plan.len(),
            runs_per_point: config.runs,
            warmups_per_point: config.warmup_runs,
            max_runs: repetition.max_runs,
            eta_s: self.remaining_s(&schedule),
            eta_max_s: repetition.max_runs.and_then(|_| self.remaining_at_most_s(&schedule)),
            probes_per_point: (!config.objectives.is_empty()).then_some(crate::results::objective::MAX_PROBES),
        });
        loop {
            while let Some(slot) = schedule.scheduler.next(&schedule.states) {
                let started = std::time::Instant::now();
                let (record, fs_record) = self.run_slot(&mut pool, &schedule, slot, doc, saver)?;
                let workload = schedule.plan[slot.point].1.workload;
                schedule.eta.record(slot.point, workload, started.elapsed().as_secs_f64());
                self.keep(doc, &mut schedule, slot, record, fs_record);
                saver.run_finished(doc, slot.point, slot.warmup)?;
                self.progress.saved();
                // A run can finish its point's whole group of variants (see `mark_precise`).
                for index in self.group(slot.point) {
                    if !doc.points[index].complete && schedule.repetition.is_done(&schedule.states[index]) {
                        self.complete(doc, saver, &mut pool, &schedule, index)?;
                    }
                }
            }
            if !self.next_probes(doc, saver, &mut pool, &mut schedule)? {
                break;
            }
        }
        // `--slo` kept every filesystem for the probes that might come.
        for fs in 0..config.filesystems.specs.len() {
            pool.filesystem_done(fs);
        }
        pool.finish()
    }

    /// `--resume`: what each point of the resumed `doc` has done, once its
    /// points are checked to be this plan's, in order. Points whose runs
    /// were all done are complete; the rest go on.
    fn resumed_states(
        &self,
        doc: &mut ResultsFile,
        plan: &[(usize, PointSpec)],
        repetition: Repetition,
    ) -> Result<Vec<PointState>> {
        let config = self.config;
        if doc.points.len() != plan.len() {
            anyhow::bail!(
                "--resume: the file holds {} points and its plan makes {}: it is not this plan's document",
                doc.points.len(),
                plan.len()
            );
        }
        let mut states = Vec::with_capacity(plan.len());
        for (index, (fs, spec)) in plan.iter().enumerate() {
            let planned = new_point(config, &config.filesystems.specs[*fs], spec);
            let point = &mut doc.points[index];
            let same = (point.workload, point.mode, point.share, point.workers, &point.fs, point.cache, &point.variant)
                == (
                    planned.workload,
                    planned.mode,
                    planned.share,
                    planned.workers,
                    &planned.fs,
                    planned.cache,
                    &planned.variant,
                );
            if !same {
                anyhow::bail!(
                    "--resume: point {} of the file is {} x{} where its plan has {} x{}: it is not this plan's document",
                    index + 1,
                    point.workload,
                    point.workers,
                    planned.workload,
                    planned.workers
                );
            }
            point.summarize();
            states.push(PointState {
                warmups: point.warmup_runs.len(),
                runs: point.runs.len(),
                precise: false,
                projected: None,
            });
        }
        // Each point (with --variant, each group) is precise as a run of it would find it.
        for index in 0..plan.len() {
            self.mark_precise(doc, &mut states, index);
        }
        for (point, state) in doc.points.iter_mut().zip(&states) {
            point.complete = repetition.is_done(state);
        }
        Ok(states)
    }

    /// Seconds the plan has left (see [`Eta`]): with `--until-ci`, each point
    /// takes the runs its scatter so far projects.
    fn remaining_s(&self, schedule: &Schedule) -> Option<f64> {
        let r = schedule.repetition;
        self.remaining_with(schedule, |state| match (state.precise, r.max_runs) {
            (false, Some(max)) => state.projected.unwrap_or(r.runs).clamp(r.runs, max),
            _ => r.runs,
        })
    }

    /// Seconds the plan has left if every imprecise point runs to `--max-runs`.
    fn remaining_at_most_s(&self, schedule: &Schedule) -> Option<f64> {
        let r = schedule.repetition;
        self.remaining_with(schedule, |state| match (state.precise, r.max_runs) {
            (false, Some(max)) => max,
            _ => r.runs,
        })
    }

    /// Seconds left when each point takes `runs(state)` measured runs in all.
    fn remaining_with(&self, schedule: &Schedule, runs: impl Fn(&PointState) -> usize) -> Option<f64> {
        let r = schedule.repetition;
        let loop_guess = (self.config.warmup + self.config.duration).as_secs_f64();
        let points = schedule.plan.iter().zip(&schedule.states).enumerate().map(|(index, ((_, spec), state))| {
            let plan = PointPlan {
                workload: spec.workload,
                runs_left: r.warmups.saturating_sub(state.warmups) + runs(state).saturating_sub(state.runs),
                guess_s: (!spec.workload.is_fixed_work()).then_some(loop_guess),
            };
            (index, plan)
        });
        schedule.eta.remaining_s(points)
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
        let mapped = match config.workloads.iter().any(|w| w.maps_a_file()) {
            true => config.options.map_bytes,
            false => 0,
        };
        let data_bytes = tree.map_or(0, |u| u.contents.bytes).max(grown).max(mapped) * max_workers;
        // Every worker's copy of the tree, plus the shared one; every worker's mdtest items.
        let mdtest = match config.workloads.iter().any(|w| w.is_mdtest()) {
            true => config.options.mdtest.items * max_workers,
            false => 0,
        };
        let data_entries = tree.map_or(0, |u| u.contents.entries() * (max_workers + 1)).max(mdtest);
        let filesystems = &config.filesystems;
        filesystems.specs.iter().map(|s| filesystems.size_for(s, data_bytes, data_entries)).collect()
    }

    /// Runs `slot` once on its filesystem; an error names the point and the run.
    fn run_slot(
        &mut self,
        pool: &mut FsPool<'_>,
        schedule: &Schedule,
        slot: Slot,
        doc: &mut ResultsFile,
        saver: &mut Saver,
    ) -> Result<(RunRecord, Option<FsRecord>)> {
        let (fs, spec) = &schedule.plan[slot.point];
        let state = &schedule.states[slot.point];
        let run = if slot.warmup { state.warmups } else { state.runs };
        let label = self.config.filesystems.specs[*fs].made_label();
        let per_point = schedule.repetition.warmups + schedule.repetition.runs;
        self.progress.run_started(&RunStart {
            point: spec,
            index: slot.point,
            run,
            warmup: slot.warmup,
            filesystem: label.as_deref(),
            variant: spec.variant.map(|v| self.config.variants[v].name.as_str()),
            done: schedule.position,
            total: (schedule.plan.len() * per_point).max(schedule.position + 1),
            eta_s: self.remaining_s(schedule),
        });
        let started_at = results::rfc3339_millis(SystemTime::now());
        let oom_kills_before = self.memory.map_or(0, MemoryLimit::oom_kills);
        let mut saver_error = None;
        let cgroup = self.containment.as_mut().map(|c| c.start_run());
        let (measurer, inputs, cpus, config, memory) =
            (self.measurer, self.inputs, self.cpus, self.config, self.memory);
        let outcome = signals::check().map_err(anyhow::Error::from).and_then(|()| {
            pool.run_on(*fs, slot.point, |dir, device| {
                let until_steady = config.steady.filter(|_| slot.warmup && !spec.workload.is_fixed_work());
                // `--profile-cost`'s baseline runs without the instruments.
                let unprofiled = spec.variant.is_some_and(|v| config.variants[v].unprofiled);
                let timing = Timing {
                    device,
                    drop_caches: spec.cache == Some(Cache::Cold),
                    until_steady,
                    memory: memory.map(MemoryLimit::switch),
                    instruments: if unprofiled { Default::default() } else { schedule.timing.instruments },
                    ..schedule.timing.clone()
                };
                let Some(variant) = spec.variant.map(|v| &config.variants[v]) else {
                    return measurer.run_once(dir, RunJob { spec, timing: &timing, inputs, run, cpus });
                };
                // The command workload sees the variant too.
                let command = inputs.command.map(|c| CommandSpec { variant: Some(variant.name.clone()), ..c.clone() });
                let inputs = Inputs { command: command.as_ref(), ..inputs };
                let stop = || signals::check().is_err();
                // Journaled as it changes: a kill in between leaves a file that says what may be set.
                let mut in_effect = |set: bool| {
                    doc.variant_in_effect = set.then(|| variant.name.clone());
                    saver_error = saver.variant_changed(doc).err().or(saver_error.take());
                };
                let applied =
                    variant::under(variant, dir, spec.workers, config.stall_timeout, &stop, &mut in_effect, || {
                        measurer.run_once(dir, RunJob { spec, timing: &timing, inputs, run, cpus })
                    })?;
                let mut record = applied.value;
                record.setup_stderr = applied.setup_stderr;
                Ok(record)
            })
        });
        if let Some(error) = saver_error {
            return Err(error);
        }
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
        let outcome = outcome.map_err(|error| self.blame_memory_limit(error, oom_kills_before));
        let (mut record, fs_record) = outcome.map_err(|error| self.run_error(error, doc, spec, slot, run))?;
        if let (Some(stderr), Some(v)) = (&record.setup_stderr, spec.variant) {
            self.progress.warning(&format!(
                "--variant {}: its setup exited 0 but wrote to stderr (run {} of {}): {}",
                self.config.variants[v].name,
                run + 1,
                spec.workload,
                crate::escape::for_terminal(stderr)
            ));
        }
        self.warn_of_mismatches(&record, spec, run);
        record.started_at = Some(started_at);
        Ok((record, fs_record))
    }

    /// A run's error, said to be the memory limit's doing where it killed
    /// processes since `oom_kills_before`.
    fn blame_memory_limit(&self, error: anyhow::Error, oom_kills_before: u64) -> anyhow::Error {
        match self.memory {
            Some(limit) if limit.oom_kills() > oom_kills_before => error.context(format!(
                "the memory limit killed {} process(es) of this run (--memory-limit {}, in {}): what the \
                 workers keep in memory did not fit; raise it",
                limit.oom_kills() - oom_kills_before,
                crate::vocab::format_size(limit.bytes()),
                limit.describe()
            )),
            _ => error,
        }
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
            "{} ({}, {}, {}){on}, {which}",
            spec.workload,
            spec.mode,
            spec.share,
            crate::vocab::workers(spec.workers)
        ))
    }

    /// `--verify`: system calls the kernel counted that the ops do not explain.
    fn warn_of_mismatches(&mut self, record: &RunRecord, spec: &PointSpec, run: usize) {
        let Some(check) = &record.sections.syscalls else { return };
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
        self.mark_precise(doc, &mut schedule.states, slot.point);
        let point = &doc.points[slot.point];
        let busy = point.summary.as_ref().is_some_and(|s| s.busy_runs.contains(&(point.runs.len() - 1)));
        if busy && !schedule.warned_busy {
            schedule.warned_busy = true;
            let share = point.runs.last().and_then(|r| r.noise).map_or(0.0, |n| n.others_cpu);
            self.progress.warning(&format!(
                "other work took {:.0}% of the machine during run {} of {} x{}; such runs are marked !busy, \
                 compare calls differences between files at points busy in more than a fifth of their runs too \
                 noisy, and compares variants' CPU-bound points there in ops per CPU-second",
                100.0 * share,
                point.runs.len(),
                point.workload,
                point.workers
            ));
        }
        self.progress.run_finished(point, false);
    }

    /// `--until-ci`: whether point `index` (or, with `--variant`s, its
    /// group of variants) needs no more rounds. A group goes on in lockstep
    /// until every variant's ratio to the first, paired by round, is precise
    /// enough: the comparison the variants are for, whose interval the
    /// machine's drift between rounds does not widen.
    fn mark_precise(&self, doc: &ResultsFile, states: &mut [PointState], index: usize) {
        let Some(pct) = self.config.until_ci_pct else { return };
        let group = self.group(index);
        // An interval narrows as 1/√n: the runs that would bring `half` to `pct`.
        let runs = doc.points[index].runs.len();
        let projected = |half: f64| (runs as f64 * (half / pct).powi(2)).ceil() as usize;
        if group.len() < 2 {
            let half = doc.points[index].mean_interval_pct();
            let state = &mut states[index];
            state.precise = half.is_some_and(|half| half <= pct);
            state.projected = half.map(projected);
            return;
        }
        let first = &doc.points[group.start];
        let halves: Vec<Option<f64>> =
            doc.points[group.start + 1..group.end].iter().map(|p| p.paired_interval_pct(first)).collect();
        let precise = halves.iter().all(|h| h.is_some_and(|half| half <= pct));
        let widest = halves.iter().flatten().copied().fold(None, |w: Option<f64>, h| Some(w.map_or(h, |w| w.max(h))));
        for state in &mut states[group] {
            state.precise = precise;
            state.projected = widest.map(projected);
        }
    }

    /// Point `index` and its other variants: the plan's innermost dimension,
    /// so a group is that many neighbours (just `index` without variants).
    fn group(&self, index: usize) -> std::ops::Range<usize> {
        let variants = self.config.variants.len().max(1);
        let start = index - index % variants;
        start..start + variants
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
        // A search's next probes come once every point is done (see `next_probes`).
        let more_may_come = !self.config.objectives.is_empty();
        if !more_may_come && states.filter(|((f, _), _)| *f == fs).all(|(_, s)| schedule.repetition.is_done(s)) {
            pool.filesystem_done(fs);
        }
        Ok(())
    }
}

mod search;
#[cfg(test)]
mod search_tests;
#[cfg(test)]
mod tests;
