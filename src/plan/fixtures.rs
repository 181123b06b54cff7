//! A plan for unit tests: `--dir .`, both modes, private sharing, 1 and 2 workers, one 1 s run.

use super::*;

pub fn config(workloads: Vec<Workload>, caches: Vec<Cache>) -> RunConfig {
    RunConfig {
        dir: PathBuf::from("."),
        workloads,
        modes: vec![Mode::Process, Mode::Thread],
        shares: vec![Share::Private],
        strict_shares: true,
        shares_given: true,
        filesystems: FsOptions::existing_dir(),
        macro_options: MacroOptions {
            scale: 0.01,
            seed: 1,
            tarball: None,
            extract_cmd: None,
            cache_dir: PathBuf::from("/tmp"),
            tree: None,
            stat: false,
            caches,
        },
        command: None,
        trace: None,
        latency: false,
        instruments: Default::default(),
        options: crate::workloads::WorkloadOptions { grow_bytes: 16 << 20, ..Default::default() },
        workers: vec![1, 2],
        pin: false,
        duration: Duration::from_secs(1),
        warmup: Duration::ZERO,
        runs: 1,
        warmup_runs: 0,
        steady: None,
        variants: Vec::new(),
        order: Order::Interleaved,
        order_seed: 1,
        until_ci_pct: None,
        max_runs: super::DEFAULT_MAX_RUNS,
        sample_interval: Duration::from_secs(1),
        stall_timeout: Duration::from_secs(60),
        output: PathBuf::from("x.json"),
        command_line: vec![],
        memory_limit: None,
        label: None,
        note: None,
    }
}
