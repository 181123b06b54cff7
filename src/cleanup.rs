//! `fsscale cleanup`: undo what killed runs left behind, and only that.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::fs::{self, CleanupReport};
use crate::scratch::{self, DeadScratch};

/// What `cleanup` found and did.
#[derive(Debug, Default)]
pub struct Cleanup {
    pub filesystems: CleanupReport,
    /// Scratch directories of killed runs that were removed (`--scratch DIR`).
    pub scratch_removed: Vec<PathBuf>,
    /// Scratch directories of killed runs still there, to remove with `--scratch DIR`.
    pub scratch_left: Vec<DeadScratch>,
    /// Scratch directories it would not remove, and why.
    pub scratch_refused: Vec<String>,
    /// Tracing instances, command cgroups and cache temporaries of killed
    /// runs it removed (each held by no live run).
    pub other_removed: Vec<String>,
    /// Tracing instances it left alone, each with why (a live process holds it).
    pub other_held: Vec<String>,
    /// Killed runs whose `--variant` setup ran and teardown did not: the
    /// results file and the variant, for the person to undo by hand.
    pub variants_in_effect: Vec<(PathBuf, String)>,
}

/// Takes down filesystems of killed runs, their tracing instances, command
/// cgroups and the temporaries in `cache_dir`; lists their scratch
/// directories, and removes those in `remove_in`.
pub fn cleanup(remove_in: &[PathBuf], cache_dir: &Path) -> Result<Cleanup> {
    let mut done = Cleanup { filesystems: fs::cleanup(), ..Cleanup::default() };
    let instances = crate::instruments::tracefs::sweep_dead();
    done.other_removed.extend(instances.removed);
    done.other_held.extend(instances.held);
    done.other_removed.extend(crate::exec::remove_dead_cgroups());
    done.other_removed.extend(crate::atomic_file::remove_dead_temporaries(cache_dir));
    for dir in remove_in {
        for dead in scratch::dead_scratches(dir)? {
            match scratch::remove_dead(&dead.path) {
                Ok(()) => done.scratch_removed.push(dead.path),
                Err(e) => done.scratch_refused.push(format!("{e:#}")),
            }
        }
    }
    for scratch::DeadRun { entry, dirs, results } in scratch::dead_runs() {
        // The run's own journal says whether it died with a variant set (its
        // teardown is not run here: a file's commands never run unasked).
        let in_effect = results.as_deref().and_then(|r| Some((r, crate::results::ResultsFile::load(r).ok()?)));
        if let Some((file, variant)) = in_effect.and_then(|(r, doc)| Some((r, doc.variant_in_effect?))) {
            done.variants_in_effect.push((file.to_path_buf(), variant));
        }
        let mut left = Vec::new();
        for dir in &dirs {
            left.extend(scratch::dead_scratches(dir).unwrap_or_default());
        }
        if left.is_empty() {
            scratch::forget(&entry);
        }
        for dead in left {
            if !done.scratch_left.contains(&dead) {
                done.scratch_left.push(dead);
            }
        }
    }
    Ok(done)
}
