//! Where one process's workers meet other processes' workers (the ranks
//! of an MPI job): the coordinator and its watch both call it, so it stands
//! apart from both.

use std::time::Duration;

use anyhow::Result;

/// Where this process's workers meet other processes' workers.
pub(crate) trait Gate {
    /// Every process's workers are set up: the windows (warm-up first) open after this.
    fn start(&self) -> Result<()>;
    /// Every process's window has closed or (fixed work) every job is done:
    /// untimed cleanup may start without disturbing anyone's measurement.
    fn end(&self) -> Result<()>;
    /// Whether [`Gate::tend`] has work while a job runs (a walk shared with other processes).
    fn tends(&self) -> bool {
        false
    }
    /// Called about every [`TEND_INTERVAL`] while a fixed-work job runs.
    fn tend(&self) -> Result<()> {
        Ok(())
    }
    /// Called whenever the coordinator checks its workers (setup, window,
    /// job): an MPI rank tells rank 0 it is alive.
    fn alive(&self) {}
}

/// How often a [`Gate`] that tends is tended: how long an idle rank of a
/// shared walk may wait for the message that brings it work.
pub(crate) const TEND_INTERVAL: Duration = Duration::from_micros(500);
