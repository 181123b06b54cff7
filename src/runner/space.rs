//! What a plan writes, checked against the room its target has before
//! anything is set up: a plan (a received file's included) must not fill the
//! disk, or the memory behind a tmpfs, of the machine it runs on.

use anyhow::{bail, Result};

use crate::fs::FsKind;
use crate::plan::RunConfig;
use crate::vocab::Workload;

/// The most one point writes into `--dir` at once, by the plan's largest
/// point: every worker's copy of the tree (`untar`, `traverse`), its
/// `--grow-size` (`append-grow`) or its `--map-size` (`fault-*`), as what it
/// takes on a filesystem (a page per file, a kilobyte per entry).
/// `tree_bytes` is one copy of the tree, when there is one.
fn largest_write(config: &RunConfig, workers: u64, tree_bytes: Option<u64>) -> Option<(u64, &'static str)> {
    config
        .workloads
        .iter()
        .filter_map(|w| {
            let (each, what) = match w {
                Workload::Untar | Workload::Traverse => (tree_bytes?, "a copy of the tree"),
                Workload::AppendGrow => (config.options.grow_bytes, "its --grow-size"),
                Workload::FaultShared | Workload::FaultPrivate => (config.options.map_bytes, "its --map-size"),
                _ => return None,
            };
            Some((each.saturating_mul(workers), what))
        })
        .max_by_key(|(bytes, _)| *bytes)
}

/// Refuses, in one line, a plan whose largest point would write more into
/// `--dir` than the filesystem there has free. Filesystems fsscale makes
/// (`--fs`) are sized for their data when made, and checked then.
pub(super) fn check_room(config: &RunConfig, tree_bytes: Option<u64>) -> Result<()> {
    if !config.filesystems.specs.iter().any(|spec| spec.kind == FsKind::Dir) {
        return Ok(());
    }
    let workers = config.workers.iter().copied().max().unwrap_or(1);
    let Some((need, what)) = largest_write(config, workers as u64, tree_bytes) else { return Ok(()) };
    let Some(free) = crate::sys::free_bytes(&config.dir) else { return Ok(()) };
    if need > free {
        bail!(
            "the plan writes about {} MiB into --dir {} at {} ({what} each), more than the {} MiB free there; \
             use fewer workers or less data, or another --dir",
            need.div_ceil(1 << 20),
            crate::escape::for_terminal(&config.dir.to_string_lossy()),
            crate::vocab::workers(workers),
            free >> 20
        );
    }
    Ok(())
}
