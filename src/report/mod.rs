//! Renderers: pure functions from results to text. Nothing here prints.

mod catalogue;
mod table;
mod text;

pub use catalogue::render_catalogue;
pub use table::{Align, Table};
pub use text::{format_rate, render_results};
