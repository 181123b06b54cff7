//! Renderers: pure functions from results to text. Nothing here prints.

mod analyze;
mod attribution;
pub mod chart;
mod compare;
mod export;
mod history;
mod html;
pub(crate) mod latency;
pub mod marks;
mod moved;
pub mod open_loop;
pub mod profile;
mod ranks;
mod replay;
mod text;
pub mod view;
mod walk;

pub use crate::render::format::{format_ns, format_rate, sparkline};
pub use crate::render::table::{Align, Table};
pub use analyze::{fit_line, render_analysis, verdict_line};
pub use compare::{render_comparisons, CompareFormat};
pub use export::{export, ExportFormat};
pub use history::{changes_json, render_changes, render_series, series_json, sparkline_between};
pub use html::{figure_label, higher_is_better, render_history_html, render_html, workload_series};
// The drawing parts, where the renderers and their callers know them.
pub use crate::render::{flame, format, markup, phrases, table};
pub use text::{render_results, render_results_with, TextOptions};
