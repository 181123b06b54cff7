//! Hand-built results for unit tests of the renderers and analyses.

use super::*;

/// A run whose workers did `per_worker` ops in `elapsed_s`.
pub fn run(run: usize, per_worker: &[u64], elapsed_s: f64) -> RunRecord {
    let ops: u64 = per_worker.iter().sum();
    RunRecord {
        run,
        position: None,
        started_at: None,
        setup_stderr: None,
        ops,
        elapsed_s,
        ops_per_s: ops as f64 / elapsed_s,
        ops_per_s_per_worker: ops as f64 / elapsed_s / per_worker.len().max(1) as f64,
        per_worker_ops: per_worker.to_vec(),
        ops_made: None,
        pinned_cpus: None,
        worker_cpu: WorkerCpu::default(),
        system_cpu: SystemCpu::default(),
        timeline: Timeline::default(),
        system_stats: Default::default(),
        completion_s: None,
        bytes: None,
        device_io: None,
        writeback: None,
        latency: None,
        open_loop: None,
        replay_ops: None,
        noise: None,
        sched: Vec::new(),
        sections: Default::default(),
        nodes: None,
        walk_messages: Vec::new(),
        walk: Vec::new(),
        steady: None,
    }
}

/// An open-loop run asked `asked` ops/s, each of whose window's ops took
/// `response_ns` from when it was due (and as long from when it began).
pub fn open_run(run: usize, asked: f64, response_ns: &[u64], behind: bool) -> RunRecord {
    let mut record = self::run(run, &[response_ns.len() as u64], 1.0);
    let times = crate::stats::histogram::Histogram::of(response_ns);
    record.open_loop = Some(OpenLoop {
        asked_ops_per_s: asked,
        arrivals: crate::vocab::Arrivals::Even,
        response: times.clone(),
        service: times,
        lag: crate::stats::histogram::Histogram::of(&[0]),
        backlog_at_start: 0.0,
        backlog_at_end: 0.0,
        behind,
    });
    record
}

/// A summarized point of `workload` at private sharing, process mode.
pub fn point(workload: Workload, share: Share, workers: usize, runs: Vec<RunRecord>) -> Point {
    // The catalogue's words for the op belong to the measuring crate.
    let op = workload.name().to_string();
    let mut p = Point {
        workload,
        op,
        mode: Mode::Process,
        share,
        workers,
        rate: None,
        complete: true,
        runs,
        warmup_runs: Vec::new(),
        summary: None,
        fs: None,
        cache: workload.is_fixed_work().then_some(Cache::Warm),
        variant: None,
        filesystem: None,
        metric: None,
        ranks: None,
    };
    p.summarize();
    p
}

/// A complete results document.
pub fn doc(runs: usize, duration_s: f64, points: Vec<Point>) -> ResultsFile {
    ResultsFile {
        schema_version: SCHEMA_VERSION,
        tool: Tool { name: "fsscale".into(), version: "0.1.0".into() },
        command_line: vec![],
        label: None,
        note: None,
        rev: None,
        started_at: "2026-11-22T00:00:00Z".into(),
        finished_at: None,
        status: Status::Complete,
        error: None,
        read_notes: Vec::new(),
        variant_in_effect: None,
        // A host larger than any fixture's speedup, which would be impossible on fewer CPUs.
        host: Host { online_cpus: 64, usable_cpus: 64, ..Host::default() },
        target: Target::default(),
        settings: Settings {
            duration_s,
            warmup_s: 0.1,
            runs,
            warmup_runs: 0,
            warmup_until_steady: None,
            variants: Vec::new(),
            order: None,
            order_seed: None,
            until_ci_pct: None,
            max_runs: None,
            sample_interval_s: 0.05,
            pin: false,
            pin_order: None,
            untar: None,
            latency: false,
            instruments: Default::default(),
            command: None,
            replay: None,
            containment: None,
            fresh: None,
            walked_tree: None,
            mdtest: None,
            lookup: None,
            grow_bytes: None,
            memory_limit: None,
            open_loop: None,
            map_bytes: None,
        },
        points,
        run_id: Some("fixture".into()),
        cluster: None,
        resumed: Vec::new(),
    }
}

/// A write-locked rwsem site: `count` waits of `wait_s` in all.
pub fn rwsem_site(site: &str, count: u64, wait_s: f64) -> LockSite {
    LockSite {
        site: site.into(),
        kind: "rwsem write".into(),
        lock: None,
        count,
        wait_s,
        max_wait_s: wait_s,
        objects: Vec::new(),
        holders: Vec::new(),
    }
}

/// A kernel-only CPU profile of these folded stacks.
pub fn cpu_profile(folded: &[(&str, u64)]) -> CpuProfile {
    let samples = folded.iter().map(|(_, n)| n).sum();
    CpuProfile {
        event: "cpu-clock".into(),
        frequency_hz: 999,
        samples,
        kernel_samples: samples,
        lost_samples: 0,
        folded: folded.iter().map(|(s, n)| (s.to_string(), *n)).collect(),
    }
}
