//! Values of options: enumerated ones (listed in `--help` and the
//! completions), workloads, filesystems, sizes and durations.

#[cfg(target_os = "linux")]
use fsscale::fs::{Backing, FsSpec};
use fsscale::vocab::{Choice, InputError, Workload};

/// `fsscale export --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormatArg {
    Ministat,
    Csv,
    Markdown,
    JsonLines,
}

fsscale::choice!(ExportFormatArg { Ministat => "ministat", Csv => "csv", Markdown => "markdown" | "md", JsonLines => "json-lines" });

/// `fsscale run --format`: how its tables are written.
#[cfg(target_os = "linux")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

#[cfg(target_os = "linux")]
fsscale::choice!(Format { Text => "text", Markdown => "markdown" | "md", Json => "json" });

/// `analyze --format`: what its renderer writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnalyzeFormat {
    Text,
    Json,
}

fsscale::choice!(AnalyzeFormat { Text => "text", Json => "json" });

/// `history --figure`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FigureArg {
    Ops,
    Cpu,
}

fsscale::choice!(FigureArg { Ops => "ops", Cpu => "cpu" });

/// `gate --check`: which reference this revision is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckArg {
    Good,
    Bad,
}

fsscale::choice!(CheckArg { Good => "good", Bad => "bad" });

/// `--path`: where the lookups' paths start.
#[cfg(target_os = "linux")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathKind {
    Relative,
    Absolute,
}

#[cfg(target_os = "linux")]
fsscale::choice!(PathKind { Relative => "relative", Absolute => "absolute" });

/// `--profile-via`: how the tracepoint profiles are collected.
#[cfg(target_os = "linux")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collector {
    Bpf,
    Tracefs,
}

#[cfg(target_os = "linux")]
fsscale::choice!(Collector { Bpf => "bpf", Tracefs => "tracefs" });

/// A workload name on the command line, or `all`.
#[derive(Clone, Debug)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub enum WorkloadArg {
    One(Workload),
    /// `mdtest`, `mdtest-dirs`: phases run in mdtest's order.
    Group(&'static [Workload]),
    All,
}

impl WorkloadArg {
    /// Whether `workload` is this one, of this group, or any (`all`).
    pub fn includes(&self, workload: Workload) -> bool {
        match self {
            WorkloadArg::One(w) => *w == workload,
            WorkloadArg::Group(phases) => phases.contains(&workload),
            WorkloadArg::All => true,
        }
    }
}

pub(super) fn parse_workload(name: &str) -> Result<Workload, InputError> {
    match parse_workload_arg(name)? {
        WorkloadArg::One(w) => Ok(w),
        WorkloadArg::All | WorkloadArg::Group(_) => Err(InputError::malformed("name one workload, not all or a group")),
    }
}

pub(super) fn parse_workload_arg(name: &str) -> Result<WorkloadArg, InputError> {
    match name {
        "all" => return Ok(WorkloadArg::All),
        "mdtest" => return Ok(WorkloadArg::Group(&Workload::MDTEST)),
        "mdtest-dirs" => return Ok(WorkloadArg::Group(&Workload::MDTEST_DIRS)),
        _ => {}
    }
    Workload::from_name(name).map(WorkloadArg::One).ok_or_else(|| {
        if name.contains(',') {
            return InputError::Malformed(format!(
                "unknown workload {name:?}: give workloads as separate words, e.g. `fsscale run {}`",
                name.split(',').collect::<Vec<_>>().join(" ")
            ));
        }
        let names: Vec<&str> = Workload::ALL.iter().map(|w| w.name()).collect();
        InputError::Malformed(format!(
            "unknown workload {name:?}; choose from {}, the groups mdtest and mdtest-dirs, or all (`fsscale list` describes them)",
            names.join(", ")
        ))
    })
}

/// Parsed `--fs`: mount options may hold commas, so a piece that does not
/// start with a filesystem kind continues the previous one's options.
#[cfg(target_os = "linux")]
#[derive(Clone, Debug)]
pub struct FsList(pub Vec<FsSpec>);

#[cfg(target_os = "linux")]
pub(super) fn parse_fs_list(text: &str) -> Result<FsList, InputError> {
    let mut pieces: Vec<String> = Vec::new();
    for piece in text.split(',') {
        let kind = piece.split(':').next().unwrap_or("");
        let is_kind = <fsscale::vocab::FsKind as fsscale::vocab::Choice>::from_name(kind).is_some();
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

#[cfg(target_os = "linux")]
pub(super) fn parse_backing(text: &str) -> Result<Backing, InputError> {
    Backing::parse(text)
}

/// `512M`, `4G`, `1073741824`.
#[cfg(target_os = "linux")]
pub(super) fn parse_size(text: &str) -> Result<u64, InputError> {
    let t = text.trim();
    let (number, shift) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 30),
        Some('T' | 't') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let value: f64 =
        number.parse().map_err(|_| InputError::Malformed(format!("'{text}' is not a size; write e.g. 512M or 4G")))?;
    if value.is_nan() || value <= 0.0 {
        return Err(InputError::Malformed(format!("'{text}' is not a positive size")));
    }
    let bytes = value * (1u64 << shift) as f64;
    // 2^64 and above (and `inf`) would saturate to u64::MAX: a size nothing has.
    if bytes >= u64::MAX as f64 {
        return Err(InputError::Malformed(format!("'{text}' is too large a size (at most 16E bytes)")));
    }
    Ok(bytes as u64)
}

/// `--map-size`: a whole number of pages.
#[cfg(target_os = "linux")]
pub(super) fn parse_map_size(text: &str) -> Result<u64, InputError> {
    let bytes = parse_size(text)?;
    let page = fsscale::workloads::MAP_PAGE;
    if bytes % page != 0 {
        return Err(InputError::Malformed(format!(
            "--map-size {text}: give a whole number of 4 KiB pages, e.g. 4M or 128M"
        )));
    }
    Ok(bytes)
}

/// An enumerated option's parser: `--help`, errors and the completions
/// list `T`'s names (its aliases are accepted, not shown).
pub(super) fn choice<T: Choice + Send + Sync>() -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values = T::ALL.iter().map(|v| PossibleValue::new(v.name()).aliases(v.aliases().iter().copied()));
    PossibleValuesParser::new(values).map(|text| T::from_name(&text).expect("clap accepts only T's names"))
}

/// `--profile`'s parser: the registry's instruments, each with its help.
#[cfg(target_os = "linux")]
pub(super) fn profile_names() -> impl clap::builder::TypedValueParser<Value = fsscale::instruments::Instrument> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    use fsscale::instruments::Instrument;
    let values = Instrument::profiles().map(|i| PossibleValue::new(i.name()).help(i.help()));
    PossibleValuesParser::new(values)
        .map(|text| Instrument::from_name(&text).expect("clap accepts only instruments' names"))
}

/// A workload argument's parser: [`parse_workload_arg`]'s answers and
/// errors, and every name (with `all` and the groups) for the completions.
#[cfg(target_os = "linux")]
#[derive(Clone)]
pub(super) struct WorkloadNames;

#[cfg(target_os = "linux")]
impl clap::builder::TypedValueParser for WorkloadNames {
    type Value = WorkloadArg;

    fn parse_ref(
        &self,
        _cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<WorkloadArg, clap::Error> {
        let text = value
            .to_str()
            .ok_or_else(|| clap::Error::raw(clap::error::ErrorKind::InvalidUtf8, "a workload name is text"))?;
        parse_workload_arg(text)
            .map_err(|e| clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("{e}\n")))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let names = Workload::ALL.iter().map(|w| w.name()).chain(["mdtest", "mdtest-dirs", "all"]);
        Some(Box::new(names.map(clap::builder::PossibleValue::new)))
    }
}

#[cfg(target_os = "linux")]
pub(super) fn parse_duration(text: &str) -> Result<std::time::Duration, InputError> {
    fsscale::plan::parse_duration(text)
}

#[cfg(target_os = "linux")]
/// `--label`: a short name, shown where a file's path would be.
pub(super) fn parse_label(text: &str) -> Result<String, InputError> {
    one_line_name(text, 64, "--label", "a name", "--label pool-of-threads")
}

/// `text` trimmed, if it is 1 to `max` characters on one line; else an
/// error naming `flag`, what it takes (`what`) and an `example`.
fn one_line_name(text: &str, max: usize, flag: &str, what: &str, example: &str) -> Result<String, InputError> {
    let text = text.trim();
    if text.is_empty() || text.chars().count() > max || text.chars().any(char::is_control) {
        return Err(InputError::malformed(format!(
            "{flag} {text:?}: give {what} of 1 to {max} characters on one line, e.g. {example}"
        )));
    }
    Ok(text.to_string())
}

/// `history changes --since`: a revision's name or a date, one line.
pub(super) fn parse_since(text: &str) -> Result<String, InputError> {
    one_line_name(text, 128, "--since", "a revision or a date", "--since v6.12-rc3 or --since 2026-11-27")
}

/// `--rev`: a revision's name, one line.
pub(super) fn parse_rev(text: &str) -> Result<String, InputError> {
    one_line_name(text, 128, "--rev", "a revision", "--rev v6.12-rc3 or --rev $(git rev-parse --short HEAD)")
}

#[cfg(target_os = "linux")]
/// `--note`: free text kept with the results, one paragraph.
pub(super) fn parse_note(text: &str) -> Result<String, InputError> {
    if text.chars().count() > 2000 || text.chars().any(|c| c.is_control() && c != '\n') {
        return Err(InputError::malformed("--note: give at most 2000 characters of text (no control characters)"));
    }
    Ok(text.trim().to_string())
}

/// `--significance`: a probability in (0, 0.5).
pub(super) fn parse_significance(text: &str) -> Result<f64, InputError> {
    match text.trim().parse::<f64>() {
        Ok(alpha) if alpha > 0.0 && alpha < 0.5 => Ok(alpha),
        _ => Err(InputError::malformed(format!(
            "--significance {text}: give a probability above 0 and below 0.5, e.g. 0.01 or 0.05"
        ))),
    }
}

/// `5%` or `5`: a positive percentage below 1000.
pub(super) fn parse_percent(text: &str) -> Result<f64, InputError> {
    let number = text.trim().trim_end_matches('%');
    match number.parse::<f64>() {
        Ok(pct) if pct > 0.0 && pct < 1000.0 => Ok(pct),
        _ => Err(InputError::malformed(format!(
            "{}: give a percentage above 0, e.g. 5% or 5",
            fsscale::escape::shell_word(text)
        ))),
    }
}

/// `history --rate`: one rate as `--rate` takes it (`20k`, `1.5M`).
pub(super) fn parse_rate(text: &str) -> Result<fsscale::vocab::Rate, InputError> {
    fsscale::vocab::Rate::parse(text)
}
