//! fsscale: measure how filesystem and VFS operations scale with CPU cores,
//! and compare systems with statistics a kernel developer trusts.
//!
//! The library is the whole engine; the `fsscale` binary only parses the
//! command line, builds a [`plan::RunConfig`], calls [`runner::run`] and
//! renders the returned [`results::ResultsFile`] with [`report`].

pub mod analyze;
pub mod archive;
pub mod atomic_file;
pub mod cleanup;
pub mod cluster;
pub mod compare;
pub mod exec;
pub mod fs;
pub mod instruments;
pub mod lockfile;
pub mod ministat;
pub mod panics;
pub mod plan;
pub mod replay;
pub mod report;
pub mod results;
pub mod runner;
pub mod scratch;
pub mod stats;
pub mod sys;
pub mod tree;
pub mod vocab;
pub mod workloads;
