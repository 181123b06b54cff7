//! `fsscale ministat`: a drop-in for FreeBSD's ministat (as packaged by
//! Debian, version 20150715), byte for byte on the same input and flags,
//! except where the reference is wrong:
//!
//! - `-c 99.5` uses true 99.5% t quantiles; the reference's "99.5%" column
//!   holds two-sided 99.8% values (t = 318.313 for one degree of freedom,
//!   where 99.5% is 127.321);
//! - any confidence level in (0, 100) is accepted, with exact t quantiles;
//! - the dot plot is tall enough for every data set's stacked points (the
//!   reference sizes it for the last data set only, and loses points);
//! - a plot narrower than 2 columns is an error (the reference crashes);
//! - where the one-pass variance cancels catastrophically (values large
//!   against their spread) the two-pass variance is used.
//!
//! Arguments are parsed here, not by clap, because a drop-in must take
//! exactly getopt's syntax (`-ns`, `-c95`, options after file names).

mod cformat;
mod dataset;
mod render;

use std::io::Read;

pub use cformat::g as format_g;
pub use dataset::Dataset;
pub use render::{plot, Layout};

use crate::stats::distributions::{normal_quantile, t_quantile_two_sided};

/// The levels of ministat's t table, in its order.
const TABLE_LEVELS: [f64; 6] = [80.0, 90.0, 95.0, 98.0, 99.0, 99.5];

/// The table's last row: one row stands for every df above this.
const TABLE_ROWS: usize = 100;

/// The narrowest plot that does not divide by zero.
pub(crate) const MIN_WIDTH: usize = 2;

/// Output for stderr and an exit code: how ministat fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub stderr: String,
    pub code: i32,
}

/// The t quantile ministat uses at a confidence level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Confidence {
    /// 80, 90, 95, 98 or 99%: the reference's table, which holds quantiles
    /// rounded to 3 decimals and one normal-quantile row for every df above 100.
    Table(f64),
    /// Any other level (including 99.5%): exact quantiles.
    Exact(f64),
}

impl Confidence {
    fn from_percent(percent: f64) -> Option<Confidence> {
        if !(percent > 0.0 && percent < 100.0) {
            return None;
        }
        Some(if TABLE_LEVELS[..5].contains(&percent) { Confidence::Table(percent) } else { Confidence::Exact(percent) })
    }

    pub fn percent(&self) -> f64 {
        match *self {
            Confidence::Table(p) | Confidence::Exact(p) => p,
        }
    }

    pub(crate) fn t_value(&self, df: usize) -> f64 {
        match *self {
            Confidence::Table(p) => {
                let exact = if df > TABLE_ROWS {
                    normal_quantile(0.5 + p / 200.0)
                } else {
                    t_quantile_two_sided(p / 100.0, df as f64)
                };
                (exact * 1000.0).round() / 1000.0
            }
            Confidence::Exact(p) => t_quantile_two_sided(p / 100.0, df as f64),
        }
    }
}

/// Parsed `ministat` arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub column: usize,
    pub confidence: Confidence,
    pub delimiters: Vec<u8>,
    pub summary_only: bool,
    pub suppress_plot: bool,
    pub quiet: bool,
    pub separate_bars: bool,
    /// From `-w`; `None` means the caller's default (74, or the terminal's width).
    pub width: Option<i64>,
    pub files: Vec<String>,
}

/// What the arguments ask for.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Run(Options),
    Help,
}

const USAGE: &str = "Usage: ministat [-C column] [-c confidence] [-d delimiter(s)] [-Anqs] [-w width] [file [file ...]]
\tconfidence = {80%, 90%, 95%, 98%, 99%, 99.5%} (fsscale: any level in (0, 100))
\t-A : print statistics only. suppress the graph.
\t-C : column number to extract (starts and defaults to 1)
\t-d : delimiter(s) string, default to \" \\t\"
\t-n : print summary statistics only, no graph/test
\t-q : suppress printing summary-statistics headers and data-set names
\t-s : print avg/median/stddev bars on separate lines
\t-w : width of graph/test output (default 74 or terminal width)
";

/// `fsscale ministat --help`.
pub const HELP: &str = "fsscale ministat: statistics on data sets, a drop-in for ministat(1).

Reads one number per line (column -C of lines split at -d) from each file
(or standard input), prints a dot plot, N/Min/Max/Median/Avg/Stddev for each
set, and whether each set differs from the first by Student's t.

Usage: fsscale ministat [-C column] [-c confidence] [-d delimiter(s)] [-Anqs] [-w width] [file [file ...]]
\t-A : print statistics only. suppress the graph.
\t-C : column number to extract (starts and defaults to 1)
\t-c : confidence level in percent, default 95; any level in (0, 100)
\t-d : delimiter(s) string, default to \" \\t\"
\t-n : print summary statistics only, no graph/test
\t-q : suppress printing summary-statistics headers and data-set names
\t-s : print avg/median/stddev bars on separate lines
\t-w : width of graph/test output (default 74 or terminal width)

Output is identical to ministat 20150715 (Debian) for the same input and
flags, except where that version is wrong:
  -c 99.5  uses true 99.5% t quantiles (ministat's 99.5% column holds 99.8% values)
  -c X     any level in (0, 100) is accepted, with exact t quantiles
  plot     tall enough for every set's stacked points (ministat sizes it by the last set)
  -w 0, 1  an error (ministat crashes); so is a width over 10000 (ministat allocates it)
  nan, inf an error (ministat accepts them and prints nonsense)
  Stddev   two-pass where the one-pass formula loses precision (huge values, tiny spread)
The median is ministat's (the upper middle value for an even count), as is
the percent difference (relative to the first set's mean).
";

/// The widest plot drawn: the plot is a width × sets grid held in memory.
const MAX_WIDTH: i64 = 10_000;

fn usage(whine: &str, prefix: &str) -> Failure {
    Failure { stderr: format!("{prefix}{whine}\n{USAGE}"), code: 2 }
}

/// Parses arguments with GNU getopt's rules for the option string "AC:c:d:nqsw:".
pub fn parse_args(args: &[String]) -> Result<Request, Failure> {
    let mut options = Options {
        column: 1,
        confidence: Confidence::Table(95.0),
        delimiters: b" \t".to_vec(),
        summary_only: false,
        suppress_plot: false,
        quiet: false,
        separate_bars: false,
        width: None,
        files: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--help" {
            return Ok(Request::Help);
        }
        if arg == "--" {
            options.files.extend(args[i..].iter().cloned());
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            // GNU getopt permutes: options may follow file names.
            options.files.push(arg.clone());
            continue;
        }
        let cluster: Vec<char> = arg[1..].chars().collect();
        let mut k = 0;
        while k < cluster.len() {
            let flag = cluster[k];
            k += 1;
            let takes_value = matches!(flag, 'C' | 'c' | 'd' | 'w');
            let value = if takes_value {
                let attached: String = cluster[k..].iter().collect();
                k = cluster.len();
                if !attached.is_empty() {
                    attached
                } else if i < args.len() {
                    i += 1;
                    args[i - 1].clone()
                } else {
                    return Err(usage(
                        "Unknown option",
                        &format!("ministat: option requires an argument -- '{flag}'\n"),
                    ));
                }
            } else {
                String::new()
            };
            set_option(&mut options, flag, value)?;
        }
    }
    if options.files.len() > SYMBOLS_FOR_SETS {
        return Err(usage("Too many datasets.", ""));
    }
    Ok(Request::Run(options))
}

/// Sets option `flag` (with its `value`, for those that take one) as ministat's getopt loop does.
fn set_option(options: &mut Options, flag: char, value: String) -> Result<(), Failure> {
    match flag {
        'A' => options.suppress_plot = true,
        'n' => options.summary_only = true,
        'q' => options.quiet = true,
        's' => options.separate_bars = true,
        'C' => {
            let column = c_strtol(&value).ok_or_else(|| usage("Invalid column number.", ""))?;
            if column <= 0 {
                return Err(usage("Column number should be positive.", ""));
            }
            options.column = column as usize;
        }
        'c' => {
            let level = cformat::parse_c_double(&value).ok_or_else(|| usage("Not a floating point number", ""))?;
            options.confidence = Confidence::from_percent(level)
                .ok_or_else(|| usage("No support for confidence level (use a level between 0 and 100)", ""))?;
        }
        'd' => {
            if value.is_empty() {
                return Err(usage("Can't use empty delimiter string", ""));
            }
            options.delimiters = value.into_bytes();
        }
        'w' => {
            let width = c_strtol(&value).ok_or_else(|| usage("Invalid width, not a number.", ""))?;
            if width < 0 {
                return Err(usage("Unable to move beyond left margin.", ""));
            }
            options.width = Some(width);
        }
        other => {
            return Err(usage("Unknown option", &format!("ministat: invalid option -- '{other}'\n")));
        }
    }
    Ok(())
}

/// Data sets one run can show (one plot symbol each).
const SYMBOLS_FOR_SETS: usize = 7;

/// `strtol(s, &end, 10)` that must consume the whole string.
fn c_strtol(text: &str) -> Option<i64> {
    let t = text.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(t.parse::<i64>().unwrap_or(if t.starts_with('-') { i64::MIN } else { i64::MAX }))
}

/// Reads the data sets and renders the report; `default_width` applies when
/// `-w` was not given, `stdin` serves `-` and the no-file case.
pub fn run(options: &Options, default_width: i64, stdin: &mut dyn Read) -> Result<String, Failure> {
    let names: Vec<String> = if options.files.is_empty() { vec!["-".to_string()] } else { options.files.clone() };
    let mut sets = Vec::with_capacity(names.len());
    for name in &names {
        let set = if name == "-" {
            Dataset::read("<stdin>", &mut std::io::BufReader::new(&mut *stdin), options.column, &options.delimiters)?
        } else {
            let file = std::fs::File::open(name).map_err(|e| Failure {
                stderr: format!(
                    "ministat: Cannot open {}: {}\n",
                    crate::escape::for_terminal(name),
                    crate::sys::errno_text_plain(&e)
                ),
                code: 1,
            })?;
            Dataset::read(name, &mut std::io::BufReader::new(file), options.column, &options.delimiters)?
        };
        sets.push(set);
    }
    let width = options.width.unwrap_or(default_width);
    if width > MAX_WIDTH {
        return Err(Failure {
            stderr: format!("ministat: -w {width} is wider than any screen; use at most {MAX_WIDTH}\n"),
            code: 2,
        });
    }
    let plotting = !options.summary_only && !options.suppress_plot;
    if plotting && width < MIN_WIDTH as i64 {
        return Err(Failure {
            stderr: format!(
                "ministat: a plot {width} columns wide cannot be drawn; use -w {MIN_WIDTH} or more, or -A for no plot\n"
            ),
            code: 2,
        });
    }
    let layout = Layout {
        width: width.max(MIN_WIDTH as i64) as usize,
        separate_bars: options.separate_bars,
        summary_only: options.summary_only,
        suppress_plot: options.suppress_plot,
        quiet: options.quiet,
    };
    Ok(render::render(&sets, &layout, &options.confidence))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn options(list: &[&str]) -> Options {
        match parse_args(&args(list)).unwrap() {
            Request::Run(o) => o,
            Request::Help => panic!("help"),
        }
    }

    #[test]
    fn table_values_match_the_reference_table() {
        // Entries of ministat's table (rows df, columns 80/90/95/98/99%).
        for (level, df, value) in [
            (95.0, 9, 2.262),
            (99.0, 1, 63.657),
            (98.0, 2, 6.965),
            (80.0, 100, 1.290),
            (90.0, 54, 1.674),
            (95.0, 30, 2.042),
            (99.0, 101, 2.576),
            (80.0, 5000, 1.282),
        ] {
            assert_eq!(Confidence::from_percent(level).unwrap().t_value(df), value, "{level}% df {df}");
        }
        // 99.5% is exact: 127.321 for one degree of freedom, not the table's 318.313.
        let t = Confidence::from_percent(99.5).unwrap().t_value(1);
        assert!((t - 127.321_336).abs() < 1e-5, "{t}");
    }

    #[test]
    fn getopt_syntax() {
        let o = options(&["-ns", "a", "-c99", "-C", "2", "b", "-d,", "-w", "80"]);
        assert!(o.summary_only && o.separate_bars);
        assert_eq!(o.confidence, Confidence::Table(99.0));
        assert_eq!((o.column, o.width, o.delimiters.as_slice()), (2, Some(80), b",".as_slice()));
        assert_eq!(o.files, ["a", "b"]);
        assert_eq!(options(&["--", "-n"]).files, ["-n"]);
        assert_eq!(options(&["-"]).files, ["-"]);
        assert_eq!(parse_args(&args(&["--help"])).unwrap(), Request::Help);
    }

    #[test]
    fn usage_errors_match_the_reference() {
        let first_lines = |list: &[&str]| {
            let f = parse_args(&args(list)).unwrap_err();
            assert_eq!(f.code, 2);
            f.stderr.lines().take(2).map(String::from).collect::<Vec<_>>()
        };
        assert_eq!(first_lines(&["-h"]), ["ministat: invalid option -- 'h'", "Unknown option"]);
        assert_eq!(first_lines(&["-C", "x"])[0], "Invalid column number.");
        assert_eq!(first_lines(&["-C", "0"])[0], "Column number should be positive.");
        assert_eq!(first_lines(&["-w", "-1"])[0], "Unable to move beyond left margin.");
        assert_eq!(first_lines(&["-d", ""])[0], "Can't use empty delimiter string");
        assert_eq!(first_lines(&["-c", "9x"])[0], "Not a floating point number");
        assert_eq!(first_lines(&["-c", "100"])[0], "No support for confidence level (use a level between 0 and 100)");
        assert_eq!(first_lines(&["a", "b", "c", "d", "e", "f", "g", "h"])[0], "Too many datasets.");
        assert_eq!(first_lines(&["-c"]), ["ministat: option requires an argument -- 'c'", "Unknown option"]);
    }

    #[test]
    fn renders_the_reference_output_exactly() {
        // Captured from ministat 20150715 (Debian) on these two files.
        let mut a = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut a, b"1\n2\n3\n4\n5\n").unwrap();
        let mut b = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut b, b"3\n4\n5\n6\n7\n8\n").unwrap();
        let (pa, pb) = (a.path().display().to_string(), b.path().display().to_string());
        let out = run(&options(&[&pa, &pb]), 74, &mut std::io::empty()).unwrap();
        let expected = format!(
            "x {pa}\n+ {pb}\n\
+--------------------------------------------------------------------------+
|x         x          *         *          *         +          +         +|
|    |________________A_____|_________|_________A____M_____________|       |
+--------------------------------------------------------------------------+
    N           Min           Max        Median           Avg        Stddev
x   5             1             5             3             3     1.5811388
+   6             3             8             6           5.5     1.8708287
Difference at 95.0% confidence
\t2.5 +/- 2.39427
\t83.3333% +/- 79.8091%
\t(Student's t, pooled s = 1.74801)
"
        );
        assert_eq!(out, expected);
    }

    #[test]
    fn narrow_plots_are_an_error_not_a_crash() {
        let o = options(&["-w", "1"]);
        let err = run(&o, 74, &mut &b"1\n2\n3\n"[..]).unwrap_err();
        assert_eq!(err.code, 2);
        assert!(err.stderr.contains("use -w 2 or more"), "{}", err.stderr);
        let o = options(&["-w", "1", "-A"]);
        assert!(run(&o, 74, &mut &b"1\n2\n3\n"[..]).unwrap().starts_with("x <stdin>\n"));
    }
}
