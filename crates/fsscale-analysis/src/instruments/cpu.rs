//! `--profile cpu`: where the workers' CPU time went (sampled kernel and
//! user stacks).

use super::attribution::{function_deltas, Attribution};
use super::{Explains, Section};
use crate::render::markup::Html;
use crate::render::phrases::percent;
use crate::render::table::{Align, Table};
use crate::results::{CpuProfile, Point, RunRecord};

/// Rows of the table.
const TOP: usize = 5;

/// The `--profile cpu` table of `point` (`what`): its functions by their own samples.
fn cpu_table(cpu: &CpuProfile, what: &str) -> String {
    let mut out = format!(
        "  where CPU time went, {what}: {} {} samples, {} in the kernel{}\n",
        cpu.samples,
        cpu.event,
        percent(cpu.kernel_share()),
        if cpu.lost_samples > 0 { format!(", {} lost", cpu.lost_samples) } else { String::new() }
    );
    let mut table = Table::new(&[
        ("self", Align::Right),
        ("total", Align::Right),
        ("function", Align::Left),
        ("mostly under", Align::Left),
    ])
    .indented(4);
    for f in cpu.functions().iter().take(TOP) {
        table.row(vec![
            percent(f.self_samples as f64 / cpu.samples.max(1) as f64),
            percent(f.inclusive_samples as f64 / cpu.samples.max(1) as f64),
            f.name.clone(),
            f.caller.clone().unwrap_or_default(),
        ]);
    }
    out.push_str(&table.render());
    out
}

/// The flame graph of the largest of `points` with a CPU profile, or nothing.
fn cpu_flame(points: &[&Point], title: &str) -> Html {
    let mut out = Html::new();
    if let Some((point, cpu)) = points.iter().rev().find_map(|p| Some((*p, p.cpu_profile()?))) {
        let caption = format!(
            "{title}, {}: {} {} samples, {} in the kernel; width = share of samples, root at the bottom; \
             hover a frame for its name and share.",
            crate::vocab::workers(point.workers),
            cpu.samples,
            cpu.event,
            percent(cpu.kernel_share())
        );
        let graph_title = format!("{title} x{}: where CPU time went", point.workers);
        crate::render::flame::figure(&mut out, &cpu.folded, &graph_title, crate::render::flame::ON_CPU, &caption);
    }
    out
}

/// What the CPU tables under the explained points mean.
const CPU_LEGEND: &str = "where CPU time went: sampled stacks (--profile cpu); self = share of samples in the \
     function itself, total = with what it called, mostly under = the caller most of them came through.\n";

pub(super) struct Cpu;

impl Section for Cpu {
    fn recorded(&self, run: &RunRecord) -> bool {
        run.sections.cpu_profile.is_some()
    }

    fn merge_ranks(&self, ranks: &[RunRecord], into: &mut RunRecord) {
        into.sections.cpu_profile = CpuProfile::sum(ranks.iter().filter_map(|r| r.sections.cpu_profile.as_ref()));
    }

    fn explains(&self, point: &Point) -> Explains {
        match point.runs.iter().any(|r| r.sections.cpu_profile.is_some()) {
            true => Explains::IfFalling,
            false => Explains::No,
        }
    }

    fn explain(&self, point: &Point, what: &str) -> String {
        point.cpu_profile().map(|cpu| cpu_table(&cpu, what)).unwrap_or_default()
    }

    fn legend(&self) -> &'static str {
        CPU_LEGEND
    }

    fn html_series(&self, points: &[&Point], title: &str, _widest: f64) -> Html {
        cpu_flame(points, title)
    }

    fn attribute(&self, base: &Point, new: &Point, why: &mut Attribution) -> bool {
        let Some((b, n)) = base.cpu_profile().zip(new.cpu_profile()) else { return false };
        why.cpu = function_deltas(&b, &n);
        why.stacks = Some((b.folded, n.folded));
        true
    }

    fn attributes(&self) -> bool {
        true
    }
}
