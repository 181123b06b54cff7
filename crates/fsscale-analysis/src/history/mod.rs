//! The results history: every recorded result in one store, as series of
//! each point's figure on each host, where the level stepped and why, and
//! a gate for `git bisect run`.
//!
//! Results files are the interchange: [`Store::add`] keeps each one's full
//! document, idempotently by run id; the series are read back from it.

#[cfg(test)]
mod bisections;
mod changes;
mod document;
mod gate;
mod point;
mod schema;
mod spread;
mod store;
#[cfg(test)]
pub(crate) mod tests;
mod upgrade;

pub use changes::{
    changes, changes_unit, find_changes, outliers_of, Attributed, Change, ChangeConfig, ChangesFound, FigureSteps,
    Level, OtherFigure, SeriesChanges, SeriesFigure, Since, Weighed, CHANGES_SCHEMA,
};
pub use gate::{check, judge, GateDecision, GateRule, GateVerdict};
pub use point::{figures, Figure, Identity};
pub use spread::{invocation_spread, spread_of_means, InvocationSpread, MIN_RESULTS as MIN_HISTORY_RESULTS};
pub use store::{with_database, without_password_in, Added, Entry, Series, SeriesFilter, Store, BUSY_TIMEOUT};
