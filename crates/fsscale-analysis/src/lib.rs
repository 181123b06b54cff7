//! fsscale's analysis: the results document, statistics, comparison, the
//! history, ministat and every report, with the words and the safe file
//! access they share. It builds on any Unix: it reads and writes files, it
//! measures nothing. The measuring library (`fsscale`: workloads, runner,
//! instruments, filesystems) builds on it and re-exports it.

pub mod analyze;
pub mod atomic_file;
pub mod compare;
pub mod escape;
pub mod history;
pub mod instruments;
pub mod lockfile;
pub mod ministat;
pub mod render;
pub mod report;
pub mod results;
#[cfg(test)]
mod skips;
pub mod stats;
pub mod sys;
pub mod vocab;
