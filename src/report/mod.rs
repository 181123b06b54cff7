//! Renderers: pure functions from results to text. Nothing here prints.

mod analyze;
mod catalogue;
pub mod chart;
mod compare;
mod html;
mod table;
mod text;

pub use analyze::{fit_line, render_analysis, verdict_line};
pub use catalogue::render_catalogue;
pub use compare::{render_comparisons, CompareFormat};
pub use html::{render_html, workload_series};
pub use table::{Align, Table};
pub use text::{format_rate, render_results, sparkline};
