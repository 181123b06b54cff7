//! The filesystems a run's points run on: `--dir` as it is, or filesystems
//! made as `--fresh` says (for every run, every point, or once) and taken
//! down when nothing more runs on them.

use std::path::Path;

use anyhow::Result;

use crate::fs::{Fresh, FsInstance, FsKind, FsOptions, FsRecord};
use crate::results::RunRecord;

/// Made filesystems kept across runs, and what could not be taken down.
pub(super) struct FsPool<'a> {
    options: &'a FsOptions,
    /// `--dir`, where runs on `FsKind::Dir` happen.
    dir: &'a Path,
    /// Bytes to make each filesystem with, by filesystem index.
    sizes: Vec<u64>,
    /// `--fresh once`: by filesystem index.
    once: Vec<Option<FsInstance>>,
    /// `--fresh point`: by point index.
    per_point: Vec<Option<FsInstance>>,
    /// A filesystem that could not be taken down is recorded, and the rest of the matrix still runs.
    failures: Vec<String>,
}

impl<'a> FsPool<'a> {
    pub(super) fn new(options: &'a FsOptions, dir: &'a Path, sizes: Vec<u64>, points: usize) -> FsPool<'a> {
        FsPool {
            options,
            dir,
            once: options.specs.iter().map(|_| None).collect(),
            sizes,
            per_point: (0..points).map(|_| None).collect(),
            failures: Vec::new(),
        }
    }

    /// Runs `measure` in the directory filesystem `fs` gives point `point`:
    /// `--dir`, or a filesystem made now (`--fresh run`, taken down right
    /// after) or kept. Any error drops, and so takes down, a filesystem made here.
    pub(super) fn run_on(
        &mut self,
        fs: usize,
        point: usize,
        measure: impl FnOnce(&Path, Option<String>) -> Result<RunRecord>,
    ) -> Result<(RunRecord, Option<FsRecord>)> {
        let spec = &self.options.specs[fs];
        if spec.kind == FsKind::Dir {
            return Ok((measure(self.dir, None)?, None));
        }
        let make = || FsInstance::create(spec, self.options, self.sizes[fs]);
        let mut made_now = None;
        let instance = match self.options.fresh {
            Fresh::Run => made_now.insert(make()?),
            Fresh::Point => match &mut self.per_point[point] {
                Some(i) => i,
                empty => empty.insert(make()?),
            },
            Fresh::Once => match &mut self.once[fs] {
                Some(i) => i,
                empty => empty.insert(make()?),
            },
        };
        let record = measure(instance.mountpoint(), instance.block_name())?;
        let fs_record = instance.record.clone();
        if let Some(made) = made_now {
            self.tear_down(made);
        }
        Ok((record, Some(fs_record)))
    }

    /// A point was appended to the plan (a `--slo` search's probe).
    pub(super) fn add_point(&mut self) {
        self.per_point.push(None);
    }

    /// Point `point` has all its runs: a filesystem made for it alone goes.
    pub(super) fn point_done(&mut self, point: usize) {
        if let Some(made) = self.per_point[point].take() {
            self.tear_down(made);
        }
    }

    /// Every point of filesystem `fs` is done: a filesystem kept for all of them goes.
    pub(super) fn filesystem_done(&mut self, fs: usize) {
        if let Some(made) = self.once[fs].take() {
            self.tear_down(made);
        }
    }

    /// Every filesystem that could not be taken down, as the run's error.
    pub(super) fn finish(self) -> Result<()> {
        match self.failures.is_empty() {
            true => Ok(()),
            false => Err(anyhow::anyhow!("{}; `fsscale cleanup` removes what is left", self.failures.join("; "))),
        }
    }

    /// Takes a made filesystem down; a failure is recorded, not fatal: every
    /// step is still tried, what is left stays registered for `fsscale cleanup`.
    fn tear_down(&mut self, made: FsInstance) {
        let label = made.record.label.clone();
        if let Err(e) = made.destroy() {
            self.failures.push(format!("cleaning up {label}: {e:#}"));
        }
    }
}
