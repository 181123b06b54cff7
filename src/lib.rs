//! fsscale: measure how filesystem and VFS operations scale with CPU cores,
//! and compare systems with statistics a kernel developer trusts.
//!
//! This crate measures: workloads, the runner, instruments, filesystems,
//! scratch directories, MPI jobs (Linux only). What it measures goes into
//! the analysis crate's results document, which it re-exports with the rest
//! of that crate (results, statistics, comparison, history, reports), so
//! `fsscale::results` is the one path to it. The `fsscale` binary only
//! parses the command line, builds a [`plan::RunConfig`], calls
//! [`runner::run`] and renders the returned [`results::ResultsFile`] with
//! [`report`].

pub use fsscale_analysis::{
    analyze, atomic_file, choice, compare, escape, history, lockfile, ministat, report, results, stats, sys, vocab,
};

// MPI jobs run on Linux (their record in the results, and `--placement`,
// are the analysis crate's `results::cluster`).
#[cfg(target_os = "linux")]
pub mod cluster;
#[doc(hidden)]
pub mod fuzzing;

#[cfg(target_os = "linux")]
pub mod archive;
#[cfg(target_os = "linux")]
pub mod cleanup;
#[cfg(target_os = "linux")]
pub mod exec;
#[cfg(target_os = "linux")]
pub mod fs;
#[cfg(target_os = "linux")]
pub mod instruments;
// A worker's panic caught and reported: the runner's.
#[cfg(target_os = "linux")]
pub(crate) mod panics;
#[cfg(target_os = "linux")]
pub mod plan;
#[cfg(target_os = "linux")]
pub mod replay;
#[cfg(target_os = "linux")]
pub mod runner;
#[cfg(target_os = "linux")]
pub mod scratch;
#[cfg(target_os = "linux")]
pub mod tree;
#[cfg(target_os = "linux")]
pub mod workloads;

// The unit tests' skip summary, shared with the analysis crate's.
#[cfg(test)]
#[path = "../crates/fsscale-analysis/src/skips.rs"]
mod skips;
