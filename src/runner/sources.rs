//! What the workloads read, prepared once per invocation (per rank under
//! MPI) before anything is timed: the tarball and tree, and the trace.

use anyhow::{bail, Context, Result};

use super::measure::Inputs;
use super::Progress;
use crate::archive;
use crate::plan::{MacroOptions, RunConfig};
use crate::replay::{self, Trace};
use crate::sys;
use crate::tree::{write_tar_file_until, TreeSpec};
use crate::workloads::{TreeSource, Workload};

/// What the workloads read.
pub(super) struct Sources {
    pub tree: Option<TreeSource>,
    pub trace: Option<Trace>,
    /// `traverse --tree` without `untar`: no tarball is made.
    pub walks_only_a_given_tree: bool,
}

impl Sources {
    pub(super) fn prepare(config: &RunConfig, progress: &mut dyn Progress) -> Result<Sources> {
        // A tarball only when something extracts it: `traverse --tree` walks a tree as it is.
        let walks_only_a_given_tree =
            config.macro_options.tree.is_some() && !config.workloads.contains(&Workload::Untar);
        let tree = if config.workloads.iter().any(|w| w.needs_tree()) {
            Some(prepare_tree(&config.macro_options, !walks_only_a_given_tree, progress)?)
        } else {
            None
        };
        let trace = match config.workloads.contains(&Workload::Replay) {
            true => Some(replay::load(config.trace.as_deref())?),
            false => None,
        };
        Ok(Sources { tree, trace, walks_only_a_given_tree })
    }

    /// What every run's workers are given of them, with the rest of the plan's inputs.
    pub(super) fn inputs<'a>(&'a self, config: &'a RunConfig) -> Inputs<'a> {
        Inputs {
            tree: self.tree.as_ref(),
            command: config.command.as_ref(),
            trace: self.trace.as_ref(),
            latency: config.latency,
            options: config.options,
            arrivals: config.arrivals,
            // Recorded, and taken again by --like and --resume.
            arrivals_seed: config.order_seed,
        }
    }
}

/// The tarball `untar` extracts and `traverse` walks: `--tarball`, or the generated tree at
/// `--scale`, made once and kept in the cache directory. Scanning it counts
/// its entries and reads it into the page cache before anything is timed.
fn prepare_tree(options: &MacroOptions, with_tarball: bool, progress: &mut dyn Progress) -> Result<TreeSource> {
    // What `--tree` holds, counted as a tarball's entries are (and read into the cache).
    let (walk_contents, walk_digest) = match &options.tree {
        Some(tree) => {
            // Without blocking: a FIFO there is refused, not waited on.
            let dir = sys::open_dir_input(tree).with_context(|| format!("--tree {}", tree.display()))?;
            let (contents, digest) = archive::tally_with_digest(std::os::fd::AsFd::as_fd(&dir))
                .with_context(|| format!("--tree {}", tree.display()))?;
            (contents, Some(digest))
        }
        None => (archive::ExtractStats::default(), None),
    };
    let source = |tarball, contents, tarball_sha256| TreeSource {
        tarball,
        contents,
        command: options.extract_cmd.clone(),
        walk_tree: options.tree.clone(),
        walk_contents,
        stat: options.stat,
        tarball_sha256,
        walk_digest: walk_digest.clone(),
    };
    if !with_tarball {
        return Ok(TreeSource { command: None, ..source(std::path::PathBuf::new(), walk_contents, None) });
    }
    let tarball = match &options.tarball {
        Some(path) => path.clone(),
        None => generated_tarball(options, progress)?,
    };
    let file =
        sys::open_input(&tarball, u64::MAX).with_context(|| format!("cannot open tarball {}", tarball.display()))?;
    // A given tarball is hashed as it is scanned, in the same pass.
    let mut reader = archive::HashingReader::new(file);
    let scanned = archive::scan(&mut reader).with_context(|| format!("tarball {}", tarball.display()))?;
    let sha256 = options.tarball.is_some().then(|| reader.finish());
    if let (Some(why), None) = (&scanned.refusal, &options.extract_cmd) {
        bail!(
            "tarball {}: {why}; the built-in extractor never writes outside its directory, and GNU tar \
             extracts what it refuses: --extract-cmd 'tar xf {{tarball}} -C {{dir}}'",
            tarball.display()
        );
    }
    Ok(source(tarball, scanned.contents, sha256))
}

/// The generated tree's tarball in the cache directory, made when it is not there yet.
fn generated_tarball(options: &MacroOptions, progress: &mut dyn Progress) -> Result<std::path::PathBuf> {
    let spec = TreeSpec { scale: options.scale, seed: options.seed };
    // Checked before the cached tarball is trusted, not only before one is made.
    sys::ensure_private_dir(&options.cache_dir, "cache directory (FSSCALE_CACHE_DIR)")?;
    let path = options.cache_dir.join(format!("tree-v1-scale{}-seed{}.tar", options.scale, options.seed));
    if !path.is_file() {
        progress.preparing(&format!("generating the scale-{} tree tarball in {}", options.scale, path.display()));
        // A signal stops the writing between entries; the temporary file goes with it.
        let stop = || super::signals::check().is_err();
        if let Err(error) = write_tar_file_until(&spec, &path, &stop) {
            super::signals::check()?;
            // A concurrent run may have made the same tarball first; theirs is as good.
            if !path.is_file() {
                return Err(error);
            }
        }
    }
    Ok(path)
}
