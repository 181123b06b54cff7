//! Pure statistics: no I/O, no printing. Invariants are checked once, when a
//! [`Sample`] is built; everything after that can rely on them.

pub mod changepoint;
pub mod diagnostics;
pub mod distributions;
pub mod hierarchical;
pub mod histogram;
pub mod hypothesis;
pub mod knee;
pub mod random;
pub mod replicated_steps;
mod sample;
pub mod scaling;
pub mod series_outliers;
pub mod steady;
pub mod usl;

pub use sample::{Sample, StatsError, Summary};
