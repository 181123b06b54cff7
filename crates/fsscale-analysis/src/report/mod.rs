//! Renderers: pure functions from results to text. Nothing here prints.

mod analyze;
mod attribution;
pub mod chart;
mod compare;
mod export;
mod flame;
mod format;
mod history;
mod html;
mod latency;
pub mod marks;
pub mod markup;
mod moved;
pub mod offcpu;
pub mod phrases;
pub mod profile;
mod ranks;
mod replay;
mod table;
mod text;
pub mod view;
mod walk;

pub use analyze::{fit_line, render_analysis, verdict_line};
pub use compare::{render_comparisons, CompareFormat};
pub use export::{export, ExportFormat};
pub use format::{format_rate, sparkline};
pub use history::{changes_json, render_changes, render_series, series_json, sparkline_between};
pub use html::{figure_label, higher_is_better, render_history_html, render_html, workload_series};
pub use latency::format_ns;
pub use table::{Align, Table};
pub use text::{render_results, render_results_with, TextOptions};
