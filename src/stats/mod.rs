//! Pure statistics: no I/O, no printing. Invariants are checked once, when a
//! [`Sample`] is built; everything after that can rely on them.

mod sample;

pub use sample::{Sample, StatsError, Summary};
