//! fsscale: measure how filesystem and VFS operations scale with CPU cores,
//! and compare systems with statistics a kernel developer trusts.
//!
//! The library is the whole engine; the `fsscale` binary only parses the
//! command line, builds a [`plan::RunConfig`], calls [`runner::run`] and
//! renders the returned [`results::ResultsFile`] with [`report`].

// Dead code is judged on Linux, where the whole crate is built: elsewhere
// what the analysis half keeps for the measuring half has no user.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

// The analysis half (results, statistics, comparison, reports) builds on any
// Unix; measuring (workloads, runner, filesystems, instruments, scratch
// directories) drives Linux's system calls, /proc and tracefs, so it is
// Linux only.
pub mod analyze;
pub mod atomic_file;
pub mod cluster;
pub mod compare;
pub mod escape;
#[doc(hidden)]
pub mod fuzzing;
pub mod history;
pub(crate) mod lockfile;
pub mod ministat;
pub mod report;
pub mod results;
#[cfg(test)]
mod skips;
pub mod stats;
pub mod sys;
pub mod vocab;

// A worker's panic caught and reported: the runner's (Linux only).
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
