//! `history changes --since REV|DATE`: which steps are new, for an alert.

use anyhow::{bail, Result};
use serde::Serialize;

use super::{Change, ChangesFound, SeriesChanges};

/// Where "new" begins: after every result of a revision, or from a date.
#[derive(Clone, Debug, Serialize)]
pub struct Since {
    /// As given.
    pub asked: String,
    /// The RFC 3339 time a step's first result must start after (for a
    /// revision: its last result's start), or the date it must start on or after.
    pub after: String,
    /// Whether `asked` is a date (else a revision).
    pub date: bool,
}

impl Since {
    /// `asked` as a date (`2026-11-27`, or an RFC 3339 time) or as a
    /// revision some searched series records.
    pub fn resolve(asked: &str, found: &ChangesFound) -> Result<Since> {
        let bytes = asked.as_bytes();
        let is_date = bytes.len() >= 10
            && bytes[..10]
                .iter()
                .enumerate()
                .all(|(i, b)| if i == 4 || i == 7 { *b == b'-' } else { b.is_ascii_digit() });
        if is_date {
            return Ok(Since { asked: asked.to_string(), after: asked.to_string(), date: true });
        }
        let last = found
            .series
            .iter()
            .flat_map(|s| &s.entries)
            .filter(|e| e.rev.as_deref() == Some(asked))
            .map(|e| e.started_at.as_str())
            .max();
        match last {
            Some(at) => Ok(Since { asked: asked.to_string(), after: at.to_string(), date: false }),
            None => bail!(
                "--since {}: no result of that revision in the series searched; give a revision the history records (`fsscale history show` lists them) or a date such as 2026-11-27",
                crate::escape::for_terminal(asked)
            ),
        }
    }

    /// Whether `change` of `series` began after this: for a revision, after
    /// its last result in the series' own order (results are timed to the
    /// second, so two of them may share one), in a series without it after
    /// its last result's start.
    pub(crate) fn is_new(&self, series: &SeriesChanges, change: &Change) -> bool {
        let started = series.entries[change.index].started_at.as_str();
        let revision = series.entries.iter().rposition(|e| e.rev.as_deref() == Some(self.asked.as_str()));
        match (self.date, revision) {
            (true, _) => started >= self.after.as_str(),
            (false, Some(last)) => change.index > last,
            (false, None) => started > self.after.as_str(),
        }
    }

    /// Every step to worse that began after this, with its series.
    pub fn worse<'a>(&'a self, found: &'a ChangesFound) -> impl Iterator<Item = (&'a SeriesChanges, &'a Change)> + 'a {
        found
            .series
            .iter()
            .flat_map(|s| s.changes.iter().map(move |c| (s, c)))
            .filter(|(s, c)| !c.improved && self.is_new(s, c))
    }

    /// [`Since::worse`], a phrase each.
    pub fn worse_steps(&self, found: &ChangesFound) -> Vec<String> {
        self.worse(found)
            .map(|(s, c)| {
                let first = &s.entries[c.index];
                format!(
                    "{} on {}: {:+.1}% {} from {}",
                    s.point,
                    s.host,
                    c.pct(),
                    super::figures::unit(&s.entries, c.figure),
                    first.rev.as_deref().map_or_else(|| first.started_at.clone(), |r| format!("rev {r}"))
                )
            })
            .collect()
    }
}
