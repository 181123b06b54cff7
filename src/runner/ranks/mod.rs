//! Runs as an MPI job: rank 0 runs the plan as it would on one machine and,
//! for each run, sends every rank an [`Order`]; the ranks serving the
//! point's workers run one worker each, and every rank meets the others at
//! the same places, each saying whether it is fine:
//!
//! 1. the scratch directory rank 0 made is visible here (else `--dir` is not shared),
//! 2. the windows open ([`Gate::start`]) and 3. close ([`Gate::end`]),
//! 4. the records go to rank 0, which merges them and removes the scratch.
//!
//! A rank that fails says so at the next meeting, so every rank learns of
//! it at the same one and the run ends everywhere with that rank's error;
//! rank 0 then records it and sends [`Order::Finish`]. A signal (Ctrl-C, or
//! mpirun ending the job because a rank died) ends every wait at once.

mod merge;
mod walk;

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};

use super::gate::Gate;
use super::measure::{self, Crew, Inputs, Measurer, Place, RunJob, Timing};
use super::signals;
use crate::cluster::Cluster;
use crate::plan::{Cache, PointSpec};
use crate::results::RunRecord;
use crate::scratch::warden::Warden;
use crate::scratch::Scratch;
use crate::sys;
use crate::workloads::{PointState, Share, WalkQueue, Workload};
use walk::WalkAgent;

#[derive(Serialize, Deserialize)]
enum Order {
    Run(RunOrder),
    /// The plan is done, or failed (rank 0 reports why): leave.
    Finish,
}

#[derive(Serialize, Deserialize)]
struct RunOrder {
    /// Counts the orders: tells one run's point-to-point messages from another's.
    serial: u32,
    spec: PointSpec,
    run: usize,
    scratch: PathBuf,
    /// The scratch marker's token: the directory seen is the one rank 0 made.
    token: String,
    /// Worker i is rank `ranks[i]`.
    ranks: Vec<usize>,
}

/// A rank's failure as it crosses to the others: its whole error chain as
/// text (an error value cannot be sent).
#[derive(Debug, Clone, Serialize, Deserialize, thiserror::Error)]
#[error("{0}")]
pub(super) struct RankFailure(String);

impl RankFailure {
    fn of(error: &anyhow::Error) -> RankFailure {
        RankFailure(format!("{error:#}"))
    }
}

/// What a rank says at a meeting: fine, or why not.
pub(super) type Said = Result<(), RankFailure>;

/// What a rank says at the first meeting: its version and plan (see
/// `plan_digest`), and whether it prepared its inputs.
#[derive(Serialize, Deserialize)]
struct Hello {
    plan: String,
    said: Said,
}

/// The first meeting: every rank's [`Hello`]; the lowest rank whose plan
/// differs from rank 0's, or that failed to prepare, is every rank's error.
fn hello(cluster: &Cluster, mine: Hello, waits: &Waits) -> Result<()> {
    let all: Vec<Hello> = cluster.exchange(&mine, &mut idle(cluster, waits))?;
    // From here every rank has prepared: a silent one is stopped or stalled
    // (preparing, a tarball say, may take longer than the stall timeout).
    waits.watching.set(true);
    for (rank, other) in all.iter().enumerate().skip(1) {
        if other.plan != all[0].plan {
            let version = |plan: &str| plan.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
            let (theirs, ours) = (version(&other.plan), version(&all[0].plan));
            let why = if theirs == ours {
                format!("was given other options than rank 0 (both run {ours})")
            } else {
                format!("runs {theirs}, rank 0 runs {ours}")
            };
            anyhow::bail!(
                "rank {rank} on {} would run another plan than rank 0: it {why}; \
                 every rank must run the same fsscale with the same options",
                cluster.host(rank)
            );
        }
    }
    let said: Vec<Said> = all.into_iter().map(|h| h.said).collect();
    first_failure(cluster, &said).map_or(Ok(()), Err)
}

/// Rank 0's side of the job, and what it knows of its state.
pub(super) struct Root<'a> {
    cluster: &'a Cluster,
    /// The first meeting (every rank prepared) is behind us.
    started: Cell<bool>,
    /// Its waits, and whether one was cut short.
    waits: Waits,
    orders: Cell<u32>,
    /// Removes the scratch if rank 0 is killed (mpirun's SIGKILL follows its
    /// SIGTERM within milliseconds when another rank dies).
    warden: RefCell<Option<Warden>>,
    /// What this rank says of its version and plan at the first meeting.
    plan: String,
}

impl Measurer for Root<'_> {
    /// Runs the point once on the ranks; rank 0 serves worker 0.
    fn run_once(&self, dir: &Path, job: RunJob<'_>) -> Result<RunRecord> {
        let mut made = None;
        let outcome = measure::in_scratch(dir, |scratch| {
            made = Some(scratch.path().to_path_buf());
            self.warden(true, scratch.path());
            // Every rank is past its run when this returns (the last meeting is
            // the gather): the removal that follows takes every rank's files.
            self.measure(scratch, job)
        });
        if let Some(path) = made {
            self.warden(false, &path);
        }
        outcome
    }

    fn ranks_for(&self, workers: usize) -> Option<Vec<usize>> {
        Some(self.cluster.ranks_for(workers))
    }
}

impl<'a> Root<'a> {
    /// Starts the warden of rank 0's scratch (`output`: its results file).
    pub(super) fn new(cluster: &'a Cluster, output: &Path, plan: String, stall_timeout: Duration) -> Result<Root<'a>> {
        let mut warden = Warden::start()?;
        warden.results(output);
        Ok(Root {
            cluster,
            started: Cell::new(false),
            waits: Waits::new(cluster, stall_timeout),
            orders: Cell::new(0),
            warden: RefCell::new(Some(warden)),
            plan,
        })
    }

    /// Rank 0 is ending on its own terms: it removed what it made.
    pub(super) fn dismiss_warden(&self) {
        if let Some(warden) = self.warden.borrow_mut().take() {
            warden.dismiss();
        }
    }

    fn warden(&self, watch: bool, path: &Path) {
        if let Some(warden) = self.warden.borrow_mut().as_mut() {
            match watch {
                true => warden.watch(path),
                false => warden.release(path),
            }
        }
    }

    pub(super) fn cluster(&self) -> &Cluster {
        self.cluster
    }

    /// The first meeting: every rank has prepared its inputs (or says why not).
    pub(super) fn start(&self, prepared: Said) -> Result<()> {
        self.started.set(true);
        hello(self.cluster, Hello { plan: self.plan.clone(), said: prepared }, &self.waits).map_err(|e| self.cut(e))
    }

    fn measure(&self, scratch: &Scratch, job: RunJob<'_>) -> Result<RunRecord> {
        let spec = job.spec;
        let cluster = self.cluster;
        let ranks = cluster.ranks_for(spec.workers);
        // The coordinator's part of the point, made once for all ranks.
        let point = measure::prepare_point(scratch, job)?;
        let serial = self.orders.get();
        self.orders.set(serial.wrapping_add(1));
        let order = RunOrder {
            serial,
            spec: *spec,
            run: job.run,
            scratch: scratch.path().to_path_buf(),
            token: scratch.token().to_string(),
            ranks: ranks.clone(),
        };
        cluster.broadcast(Some(&Order::Run(order)), &mut idle(cluster, &self.waits))?;
        let seen = self.exchange(&Ok(()))?;
        if let Some(error) = first_failure(cluster, &seen) {
            return Err(error.context(format!(
                "--dir {} must be one directory every rank sees (a filesystem all nodes mount at that path)",
                scratch.path().parent().unwrap_or(scratch.path()).display()
            )));
        }
        let place = Place { fd: scratch.fd(), path: scratch.path(), point: &point };
        let local = serve(cluster, &self.waits, serial, job, place, &ranks);
        let mine: Outcome = local.as_ref().map(Option::clone).map_err(RankFailure::of);
        let all = cluster.gather(&mine, &mut idle(cluster, &self.waits)).map_err(|e| self.cut(e))?.unwrap_or_default();
        // Rank 0's own error is the cause, or a peer's failure it met.
        local?;
        if let Some(error) = first_failure(
            cluster,
            &all.iter().map(|o| o.as_ref().map(|_| ()).map_err(Clone::clone)).collect::<Vec<_>>(),
        ) {
            return Err(error);
        }
        let mut records: Vec<(usize, RunRecord)> =
            all.into_iter().enumerate().filter_map(|(rank, o)| Some((rank, o.ok()??))).collect();
        // In worker order.
        records.sort_by_key(|(rank, _)| ranks.iter().position(|r| r == rank));
        let hosts: Vec<&str> = records.iter().map(|(rank, _)| cluster.host(*rank)).collect();
        merge::merge(records.into_iter().map(|(_, r)| r).collect(), &hosts, super::cpu::clock_hz())
            .ok_or_else(|| anyhow!("no rank returned a record (internal error)"))
    }

    /// The last word to the other ranks: `Finish` after the plan (done or
    /// failed), or the first meeting's failure if it never came. False when
    /// they cannot be reached (a signal cut a wait): leave without MPI's goodbye.
    pub(super) fn close(&self, outcome: Result<(), &anyhow::Error>) -> bool {
        if self.waits.broken.get() || signals::check().is_err() {
            return false;
        }
        let said = if self.started.get() {
            self.cluster.broadcast(Some(&Order::Finish), &mut idle(self.cluster, &self.waits)).map(|_: Order| ())
        } else {
            // Failed before the first meeting: the others are waiting in it.
            let said = outcome.map_err(RankFailure::of);
            hello(self.cluster, Hello { plan: self.plan.clone(), said }, &self.waits).or_else(|e| {
                // The others learnt of the failure there too: only a lost meeting is an error here.
                if self.waits.broken.get() {
                    Err(e)
                } else {
                    Ok(())
                }
            })
        };
        said.is_ok() && !self.waits.broken.get()
    }

    fn exchange(&self, said: &Said) -> Result<Vec<Said>> {
        self.cluster.exchange(said, &mut idle(self.cluster, &self.waits)).map_err(|e| self.cut(e))
    }

    fn cut(&self, error: anyhow::Error) -> anyhow::Error {
        self.waits.broken.set(true);
        error
    }
}

/// What a rank returns of a run: its worker's record (none when it served
/// no worker), or why it failed.
type Outcome = Result<Option<RunRecord>, RankFailure>;

/// The message tag of the pulse every rank sends rank 0 (the walk's tags start at 100).
const PULSE_TAG: u16 = 7;

/// How often a rank tells rank 0 it is alive, while it waits at a meeting
/// or its coordinator watches its worker.
const PULSE_INTERVAL: Duration = Duration::from_secs(1);

/// A rank's state across its waits: whether a wait was cut short, and the
/// pulse by which rank 0 tells a rank that is stopped (SIGSTOP, Ctrl-Z on
/// its node), stalled or gone from one that is only slow.
pub(super) struct Waits {
    /// A wait was cut short (a signal, a lost rank): the others cannot be met again.
    broken: Cell<bool>,
    last_sent_ns: Cell<u64>,
    /// Rank 0: when each rank was last heard of during the current wait.
    heard_ns: RefCell<Vec<u64>>,
    /// A rank not heard of this long while rank 0 waits ends the job.
    stall_timeout: Duration,
    /// Past the first meeting: silence counts.
    watching: Cell<bool>,
}

impl Waits {
    pub(super) fn new(cluster: &Cluster, stall_timeout: Duration) -> Waits {
        Waits {
            broken: Cell::new(false),
            last_sent_ns: Cell::new(0),
            heard_ns: RefCell::new(vec![sys::monotonic_ns(); cluster.size()]),
            stall_timeout,
            watching: Cell::new(false),
        }
    }

    /// Tells rank 0 this rank is alive, at most once a [`PULSE_INTERVAL`].
    fn beat(&self, cluster: &Cluster) {
        let now = sys::monotonic_ns();
        if cluster.is_root() || now.saturating_sub(self.last_sent_ns.get()) < PULSE_INTERVAL.as_nanos() as u64 {
            return;
        }
        self.last_sent_ns.set(now);
        let _ = cluster.send(0, PULSE_TAG, &[]);
    }

    /// Rank 0, at the start of a wait: every rank counts as just heard of
    /// (its own work, a window, is not a pulse's silence).
    fn begin(&self) {
        self.heard_ns.borrow_mut().fill(sys::monotonic_ns());
    }

    /// Rank 0, while it waits: the pulses that came, and the first rank not
    /// heard of for the stall timeout, as the error that ends the job.
    fn listen(&self, cluster: &Cluster) -> Result<()> {
        if !cluster.is_root() || !self.watching.get() {
            return Ok(());
        }
        let now = sys::monotonic_ns();
        let mut heard = self.heard_ns.borrow_mut();
        while let Some((rank, _)) = cluster.receive(PULSE_TAG) {
            heard[rank] = now;
        }
        let limit = self.stall_timeout.as_nanos() as u64;
        match (1..heard.len()).find(|&rank| now.saturating_sub(heard[rank]) > limit) {
            Some(rank) => Err(anyhow!(
                "rank {rank} on {} was not heard of for {:.1} s while the others waited for it: it is stopped \
                 (SIGSTOP, Ctrl-Z on its node), stalled or gone; raise --stall-timeout if it is only slow",
                cluster.host(rank),
                Duration::from_nanos(now - heard[rank]).as_secs_f64()
            )),
            None => Ok(()),
        }
    }
}

/// A waiting rank's idle step: a signal, or (on rank 0) a rank gone silent,
/// ends the wait and the job's meetings; every other rank sends its pulse.
fn idle<'a>(cluster: &'a Cluster, waits: &'a Waits) -> impl FnMut() -> Result<()> + 'a {
    waits.begin();
    move || {
        waits.beat(cluster);
        let outcome = signals::check().map_err(anyhow::Error::new).and_then(|()| waits.listen(cluster));
        if outcome.is_err() {
            waits.broken.set(true);
        }
        outcome
    }
}

/// The lowest rank that said it failed, as the error every rank reports.
fn first_failure(cluster: &Cluster, said: &[Said]) -> Option<anyhow::Error> {
    said.iter()
        .enumerate()
        .find_map(|(rank, s)| s.as_ref().err().map(|why| anyhow!("rank {rank} on {}: {why}", cluster.host(rank))))
}

/// A rank's worker in the window, or its place at the meetings when it serves none.
fn serve(
    cluster: &Cluster,
    waits: &Waits,
    serial: u32,
    job: RunJob<'_>,
    place: Place<'_>,
    ranks: &[usize],
) -> Result<Option<RunRecord>> {
    let spec = job.spec;
    let worker = ranks.iter().position(|&r| r == cluster.rank());
    let walk = (spec.workload == Workload::Traverse && spec.share == Share::Shared && worker.is_some())
        .then_some(place.point.walk_queue.as_ref())
        .flatten()
        .map(|queue| RefCell::new(WalkAgent::new(cluster, queue, ranks, walk::tag(serial))));
    let gate = RankGate { cluster, waits, met: Cell::new(0), failed: Cell::new(false), walk };
    let timing = Timing { drop_caches: spec.cache == Some(Cache::Cold), device: None, ..job.timing.clone() };
    let outcome = match worker {
        Some(first) => {
            let crew = Crew { first, count: 1, fork: false, gate: Some(&gate) };
            // With --pin, a rank's worker takes its node's CPUs in rank order.
            let cpu = job.cpus.map(|c| vec![c[cluster.local_index() % c.len()]]);
            let job = RunJob { timing: &timing, cpus: cpu.as_deref(), ..job };
            measure::run_workers(job, place, crew).map(Some)
        }
        None => gate.start().and_then(|()| gate.end()).map(|()| None),
    };
    // Each walking rank's messages, for the record (merged in worker order).
    let outcome = outcome.map(|record| {
        record.map(|mut r| {
            if let Some(walk) = &gate.walk {
                r.walk_messages = vec![walk.borrow().traffic().total()];
            }
            r
        })
    });
    if let Err(error) = &outcome {
        if let Some(walk) = &gate.walk {
            // The other walkers must not wait for this rank's requests.
            let _ = walk.borrow_mut().abort();
        }
        gate.meet_the_rest(error);
    }
    outcome
}

/// Opens and closes a rank's window with every other rank's.
struct RankGate<'a> {
    cluster: &'a Cluster,
    waits: &'a Waits,
    /// Meetings held so far this run (two: start and end).
    met: Cell<u8>,
    /// Some rank failed at a meeting: every rank knows, none meets again.
    failed: Cell<bool>,
    /// This rank's part in a walk the ranks share.
    walk: Option<RefCell<WalkAgent<'a>>>,
}

impl RankGate<'_> {
    fn meet(&self, said: Said) -> Result<()> {
        self.met.set(self.met.get() + 1);
        let all = self.cluster.exchange(&said, &mut idle(self.cluster, self.waits))?;
        match first_failure(self.cluster, &all) {
            Some(error) => {
                self.failed.set(true);
                Err(error)
            }
            None => Ok(()),
        }
    }

    /// After this rank failed on its own: it still goes to the meetings it
    /// missed, saying why, so the others learn of it there.
    fn meet_the_rest(&self, error: &anyhow::Error) {
        while self.met.get() < 2 && !self.failed.get() && !self.waits.broken.get() {
            let _ = self.meet(Err(RankFailure::of(error)));
        }
    }
}

impl Gate for RankGate<'_> {
    fn start(&self) -> Result<()> {
        self.meet(Ok(()))
    }

    fn end(&self) -> Result<()> {
        self.meet(Ok(()))
    }

    fn tends(&self) -> bool {
        self.walk.is_some()
    }

    fn tend(&self) -> Result<()> {
        self.walk.as_ref().map_or(Ok(()), |w| w.borrow_mut().tend())
    }

    fn alive(&self) {
        self.waits.beat(self.cluster);
    }
}

/// A rank other than 0: prepares what rank 0 prepares, then serves its orders until told to finish.
pub(super) fn follow(
    cluster: &Cluster,
    prepared: Result<(Timing, Inputs<'_>, Option<Vec<usize>>)>,
    plan: &str,
    stall_timeout: Duration,
) -> Result<()> {
    let waits = Waits::new(cluster, stall_timeout);
    let said: Said = prepared.as_ref().map(|_| ()).map_err(RankFailure::of);
    let met = hello(cluster, Hello { plan: plan.to_string(), said }, &waits);
    let (timing, inputs, cpus) = prepared?;
    met?;
    loop {
        let order: Order = cluster.broadcast(None, &mut idle(cluster, &waits))?;
        let RunOrder { serial, spec, run, scratch, token, ranks } = match order {
            Order::Finish => return Ok(()),
            Order::Run(order) => order,
        };
        let dir = open_scratch(&scratch, &token);
        let said: Said = dir.as_ref().map(|_| ()).map_err(RankFailure::of);
        let seen = cluster.exchange(&said, &mut idle(cluster, &waits))?;
        let Ok(dir) = dir else { continue };
        if first_failure(cluster, &seen).is_some() {
            continue;
        }
        // Of rank 0's point state only the walk's queue has a counterpart here, empty
        // (shared open files are refused under MPI).
        let walks_together = spec.workload == Workload::Traverse && spec.share == Share::Shared;
        let point = match walks_together.then(WalkQueue::empty).transpose() {
            Ok(walk_queue) => PointState { walk_queue, ..PointState::default() },
            Err(e) => {
                let mine: Outcome = Err(RankFailure(format!("mapping the walk queue: {e}")));
                cluster.gather(&mine, &mut idle(cluster, &waits))?;
                continue;
            }
        };
        let place = Place { fd: std::os::fd::AsFd::as_fd(&dir), path: &scratch, point: &point };
        let job = RunJob { spec: &spec, timing: &timing, inputs, run, cpus: cpus.as_deref() };
        let outcome = serve(cluster, &waits, serial, job, place, &ranks);
        let mine: Outcome = outcome.map_err(|e| RankFailure::of(&e));
        cluster.gather(&mine, &mut idle(cluster, &waits))?;
    }
}

/// The scratch directory rank 0 made, opened here: it must be a directory
/// (not a symlink) whose marker holds rank 0's token.
fn open_scratch(path: &Path, token: &str) -> Result<std::os::fd::OwnedFd> {
    let c = sys::cstring(path)?;
    let dir = sys::open(sys::CWD, &c, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0).map_err(|e| {
        anyhow!("cannot see the scratch directory {} rank 0 made: {}", path.display(), sys::errno_text(e))
    })?;
    let marker = sys::read_input(&path.join(crate::scratch::MARKER), 4096)
        .with_context(|| format!("reading the scratch marker in {}", path.display()))?;
    if !marker.lines().any(|l| l == format!("token={token}")) {
        anyhow::bail!("{} is not the scratch directory rank 0 made (its marker differs)", path.display());
    }
    Ok(dir)
}
