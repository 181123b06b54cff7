//! Values of options: enumerated ones (listed in `--help` and the
//! completions), workloads, filesystems, sizes and durations.

use anyhow::Result;

use fsscale::fs::{Backing, Fresh, FsSpec};
use fsscale::plan::{self, Cache, Mode, Order};
use fsscale::stats::hypothesis::TestKind;
use fsscale::workloads::{Share, Workload};

/// `fsscale export --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormatArg {
    Ministat,
    Csv,
    Markdown,
    JsonLines,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

pub(super) fn parse_format(text: &str) -> Result<Format, String> {
    match text {
        "text" => Ok(Format::Text),
        "markdown" | "md" => Ok(Format::Markdown),
        "json" => Ok(Format::Json),
        _ => Err("use text, markdown or json".into()),
    }
}

pub(super) fn parse_test(text: &str) -> Result<TestKind, String> {
    match text {
        "welch" => Ok(TestKind::Welch),
        "student" => Ok(TestKind::Student),
        "mann-whitney" | "mw" => Ok(TestKind::MannWhitney),
        _ => Err("use welch, student or mann-whitney".into()),
    }
}

/// A workload name on the command line, or `all`.
#[derive(Clone, Debug)]
pub enum WorkloadArg {
    One(Workload),
    /// `mdtest`, `mdtest-dirs`: phases run in mdtest's order.
    Group(&'static [Workload]),
    All,
}

pub(super) fn parse_workload(name: &str) -> Result<Workload, String> {
    match parse_workload_arg(name)? {
        WorkloadArg::One(w) => Ok(w),
        WorkloadArg::All | WorkloadArg::Group(_) => Err("name one workload, not all or a group".into()),
    }
}

pub(super) fn parse_workload_arg(name: &str) -> Result<WorkloadArg, String> {
    match name {
        "all" => return Ok(WorkloadArg::All),
        "mdtest" => return Ok(WorkloadArg::Group(&Workload::MDTEST)),
        "mdtest-dirs" => return Ok(WorkloadArg::Group(&Workload::MDTEST_DIRS)),
        _ => {}
    }
    Workload::from_name(name).map(WorkloadArg::One).ok_or_else(|| {
        let names: Vec<&str> = Workload::ALL.iter().map(|w| w.name()).collect();
        format!(
            "unknown workload; choose from {}, the groups mdtest and mdtest-dirs, or all (`fsscale list` describes them)",
            names.join(", ")
        )
    })
}

/// Parsed `--fs`: mount options may hold commas, so a piece that does not
/// start with a filesystem kind continues the previous one's options.
#[derive(Clone, Debug)]
pub struct FsList(pub Vec<FsSpec>);

pub(super) fn parse_fs_list(text: &str) -> Result<FsList, String> {
    let mut pieces: Vec<String> = Vec::new();
    for piece in text.split(',') {
        let kind = piece.split(':').next().unwrap_or("");
        let is_kind = ["dir", "tmpfs", "ramfs", "ext4", "xfs", "btrfs", "f2fs"].contains(&kind);
        match pieces.last_mut() {
            Some(last) if !is_kind && last.contains(':') => {
                last.push(',');
                last.push_str(piece);
            }
            _ => pieces.push(piece.to_string()),
        }
    }
    pieces.iter().map(|p| FsSpec::parse(p)).collect::<Result<Vec<_>, _>>().map(FsList)
}

pub(super) fn parse_backing(text: &str) -> Result<Backing, String> {
    Backing::parse(text)
}

pub(super) fn parse_fresh(text: &str) -> Result<Fresh, String> {
    match text {
        "run" => Ok(Fresh::Run),
        "point" => Ok(Fresh::Point),
        "once" => Ok(Fresh::Once),
        _ => Err("use run, point or once".into()),
    }
}

/// `512M`, `4G`, `1073741824`.
pub(super) fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (number, shift) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 30),
        Some('T' | 't') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let value: f64 = number.parse().map_err(|_| format!("'{text}' is not a size; write e.g. 512M or 4G"))?;
    if value.is_nan() || value <= 0.0 {
        return Err(format!("'{text}' is not a positive size"));
    }
    Ok((value * (1u64 << shift) as f64) as u64)
}

pub(super) fn parse_order(text: &str) -> Result<Order, String> {
    match text {
        "interleaved" => Ok(Order::Interleaved),
        "sequential" => Ok(Order::Sequential),
        "shuffled" => Ok(Order::Shuffled),
        _ => Err("use interleaved, sequential or shuffled".into()),
    }
}

pub(super) fn parse_cache(text: &str) -> Result<Cache, String> {
    match text {
        "warm" => Ok(Cache::Warm),
        "cold" => Ok(Cache::Cold),
        _ => Err("use warm or cold".into()),
    }
}

pub(super) fn parse_mode(text: &str) -> Result<Mode, String> {
    match text {
        "process" | "processes" => Ok(Mode::Process),
        "thread" | "threads" => Ok(Mode::Thread),
        _ => Err("use process or thread (or process,thread for both)".into()),
    }
}

pub(super) fn parse_share(text: &str) -> Result<Share, String> {
    Share::ALL
        .into_iter()
        .find(|s| s.name() == text)
        .ok_or_else(|| "use private, shared or same (comma-separated for several)".into())
}

/// An enumerated option's parser: `--help` and the completions list the
/// `values` (their aliases are accepted, not shown); `parse` makes the value.
pub(super) fn choices<T: Clone + Send + Sync + 'static>(
    values: &[(&'static str, &'static [&'static str])],
    parse: fn(&str) -> Result<T, String>,
) -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values: Vec<PossibleValue> =
        values.iter().map(|(name, aliases)| PossibleValue::new(*name).aliases(aliases.iter().copied())).collect();
    PossibleValuesParser::new(values).try_map(move |text| parse(&text))
}

pub(super) const MODES: &[(&str, &[&str])] = &[("process", &["processes"]), ("thread", &["threads"])];
pub(super) const SHARES: &[(&str, &[&str])] = &[("private", &[]), ("shared", &[]), ("same", &[])];
pub(super) const CACHES: &[(&str, &[&str])] = &[("warm", &[]), ("cold", &[])];
pub(super) const FORMATS: &[(&str, &[&str])] = &[("text", &[]), ("markdown", &["md"]), ("json", &[])];
pub(super) const FRESHNESS: &[(&str, &[&str])] = &[("run", &[]), ("point", &[]), ("once", &[])];
pub(super) const ORDERS: &[(&str, &[&str])] = &[("interleaved", &[]), ("sequential", &[]), ("shuffled", &[])];
pub(super) const TESTS: &[(&str, &[&str])] = &[("welch", &[]), ("student", &[]), ("mann-whitney", &["mw"])];
pub(super) const PLACEMENTS: &[(&str, &[&str])] = &[("spread", &[]), ("pack", &[])];

pub(super) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    plan::parse_duration(text)
}

pub(super) fn parse_placement(text: &str) -> Result<fsscale::cluster::Placement, String> {
    text.parse()
}
