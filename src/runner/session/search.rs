//! `--slo`: the searches' probes, point by point. The plan's points are
//! closed loops; once every point is done, each search that has not ended
//! (see [`objective::search`]) gets its next rate as a new point at the
//! end of the plan and the document, and the schedule goes on. Where a
//! search stands is read from the document's points alone.

use anyhow::Result;

use super::{Schedule, Session};
use crate::plan::PointSpec;
use crate::results::objective;
use crate::results::{ResultsFile, Saver};
use crate::runner::document::new_point;
use crate::runner::pool::FsPool;
use crate::runner::schedule::PointState;

impl Session<'_> {
    /// Appends each unfinished search's next probe; whether any was.
    pub(super) fn next_probes(
        &mut self,
        doc: &mut ResultsFile,
        saver: &mut Saver,
        pool: &mut FsPool<'_>,
        schedule: &mut Schedule,
    ) -> Result<bool> {
        let config = self.config;
        if config.objectives.is_empty() {
            return Ok(false);
        }
        let mut added = false;
        let points: Vec<&crate::results::Point> = doc.points.iter().collect();
        let searches = objective::searches(&points, &config.objectives);
        for found in searches {
            let Some(rate) = found.search.next else { continue };
            let (fs, closed) = schedule.plan[found.closed];
            let spec = PointSpec { rate: Some(rate), ..closed };
            let mut point = new_point(config, &config.filesystems.specs[fs], &spec);
            point.ranks = self.measurer.ranks_for(spec.workers);
            doc.points.push(point);
            saver.point_started(doc, doc.points.len() - 1)?;
            schedule.plan.push((fs, spec));
            schedule.states.push(PointState::default());
            pool.add_point();
            self.progress.probing(&spec, &found.search);
            added = true;
        }
        // The probes run in plan order: the points' layout of filesystems
        // and variants (see `Layout`) is the first plan's alone.
        schedule.scheduler.plain_order();
        Ok(added)
    }
}
