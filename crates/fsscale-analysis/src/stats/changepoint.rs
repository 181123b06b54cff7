//! Change points in a series of results: where its level stepped.
//!
//! A step is found and judged by the replicated-steps search, with each
//! result's runs. E-Divisive means (Matteson and James, JASA 2014), which
//! the history searched with until its schema 3, is gone with its last
//! user: docs/STATISTICS.md keeps how the two compared.

/// A step: the values from `index` on are at another level than those before.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ChangePoint {
    /// The first value after the step.
    pub index: usize,
    /// The statistic of the split that found it (the |t| of the results
    /// on either side, held to their runs' spread).
    pub divergence: f64,
    /// Its p-value, corrected for the search.
    pub p_value: f64,
}
