//! One data set as ministat reads and summarizes it.

use super::cformat::parse_c_double;
use super::Failure;

/// ministat reads with `fgets` into a `BUFSIZ` (8192) buffer, so a longer
/// line is taken as several lines; reproduced for identical line numbers.
const LINE_BUFFER: usize = 8192;

/// Values in input order and sorted, with ministat's running sums.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub name: String,
    /// Sorted ascending.
    pub points: Vec<f64>,
    sum: f64,
    sum_squares: f64,
}

impl Dataset {
    /// Parses `text` the way ministat does: column `column` (from 1) of each
    /// line split at any of `delimiters`; lines whose fields run out, or
    /// reach a field starting with `#` first, are skipped.
    pub fn parse(name: &str, text: &[u8], column: usize, delimiters: &[u8]) -> Result<Dataset, Failure> {
        Dataset::read(name, &mut std::io::Cursor::new(text), column, delimiters)
    }

    /// [`Dataset::parse`] of what `input` gives, read as ministat reads it:
    /// a line (at most a buffer's worth) at a time, so memory grows with
    /// the values read, never with a line's length (`/dev/zero` is one
    /// invalid line, not an endless read).
    pub fn read(
        name: &str,
        input: &mut dyn std::io::BufRead,
        column: usize,
        delimiters: &[u8],
    ) -> Result<Dataset, Failure> {
        let mut points = Vec::new();
        let (mut sum, mut sum_squares) = (0.0, 0.0);
        let mut record = Vec::with_capacity(LINE_BUFFER);
        let shown = crate::escape::for_terminal(name);
        let name = shown.as_ref();
        for index in 0.. {
            if !next_record(input, &mut record).map_err(|e| Failure {
                stderr: format!("ministat: reading {name}: {}\n", crate::sys::errno_text_plain(&e)),
                code: 1,
            })? {
                break;
            }
            let line = trim_trailing_space(&record);
            let mut fields = line.split(|b| delimiters.contains(b)).filter(|f| !f.is_empty());
            let mut chosen = None;
            for (i, field) in (1..).zip(&mut fields) {
                if field.first() == Some(&b'#') {
                    break;
                }
                if i == column {
                    chosen = Some(field);
                    break;
                }
            }
            let Some(field) = chosen else { continue };
            let value = std::str::from_utf8(field).ok().and_then(parse_c_double).ok_or_else(|| Failure {
                stderr: format!("ministat: Invalid data on line {} in {name}\n", index + 1),
                code: 2,
            })?;
            if !value.is_finite() {
                // The reference accepts "nan" and "inf" (strtod does) and prints nonsense.
                return Err(Failure {
                    stderr: format!(
                        "ministat: Invalid data on line {} in {name}: {value} is not a finite number\n",
                        index + 1
                    ),
                    code: 2,
                });
            }
            points.push(value);
            sum += value;
            sum_squares += value * value;
        }
        if points.len() < 3 {
            return Err(Failure { stderr: format!("Dataset {name} must contain at least 3 data points\n"), code: 2 });
        }
        points.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        Ok(Dataset { name: name.to_string(), points, sum, sum_squares })
    }

    /// A data set from values already in hand (at least one).
    pub(crate) fn from_values(name: &str, values: &[f64]) -> Dataset {
        assert!(!values.is_empty(), "a data set needs a value");
        let mut points = values.to_vec();
        points.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        let sum = values.iter().sum();
        let sum_squares = values.iter().map(|v| v * v).sum();
        Dataset { name: name.to_string(), points, sum, sum_squares }
    }

    pub fn n(&self) -> usize {
        self.points.len()
    }

    pub fn min(&self) -> f64 {
        self.points[0]
    }

    pub fn max(&self) -> f64 {
        self.points[self.n() - 1]
    }

    /// ministat's median: the upper middle value for an even count (kept
    /// because scripts parse ministat's output).
    pub fn median(&self) -> f64 {
        self.points[self.n() / 2]
    }

    /// The sum in input order over n, exactly as ministat computes it.
    pub(crate) fn avg(&self) -> f64 {
        self.sum / self.n() as f64
    }

    /// ministat's one-pass variance (Σy² − (Σy)²/n)/(n − 1) where it is
    /// accurate, so the printed digits are the reference's; where values are
    /// large against their spread that formula cancels catastrophically (the
    /// reference then prints wrong digits, or `nan`), and the two-pass
    /// variance is used instead.
    pub fn var(&self) -> f64 {
        let n = self.n() as f64;
        let one_pass = (self.sum_squares - self.sum * self.sum / n) / (n - 1.0);
        let mean = self.avg();
        let two_pass = self.points.iter().map(|p| (p - mean) * (p - mean)).sum::<f64>() / (n - 1.0);
        let accurate = (one_pass - two_pass).abs() <= 1e-9 * two_pass.abs();
        if accurate || !two_pass.is_finite() {
            one_pass
        } else {
            two_pass
        }
    }

    pub(crate) fn stddev(&self) -> f64 {
        self.var().sqrt()
    }
}

/// Reads the next record into `record` as `fgets` would: through the next
/// newline, or `LINE_BUFFER - 1` bytes, whichever comes first; false at the end.
fn next_record(input: &mut dyn std::io::BufRead, record: &mut Vec<u8>) -> std::io::Result<bool> {
    record.clear();
    while record.len() < LINE_BUFFER - 1 {
        let available = match input.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            break;
        }
        let room = (LINE_BUFFER - 1 - record.len()).min(available.len());
        let (take, newline) = match available[..room].iter().position(|&b| b == b'\n') {
            Some(p) => (p + 1, true),
            None => (room, false),
        };
        record.extend_from_slice(&available[..take]);
        input.consume(take);
        if newline {
            break;
        }
    }
    Ok(!record.is_empty())
}

/// Removes trailing bytes for which C's `isspace` is true.
fn trim_trailing_space(record: &[u8]) -> &[u8] {
    let end = record
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'))
        .map_or(0, |p| p + 1);
    &record[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_columns_comments_and_blank_lines() {
        let text = b"# header\n1 # note\n#2\n 3\n4\r\n\n5\n";
        let ds = Dataset::parse("f", text, 1, b" \t").unwrap();
        assert_eq!(ds.points, [1.0, 3.0, 4.0, 5.0]);
        assert_eq!(ds.median(), 4.0, "upper middle value");
        let csv = Dataset::parse("c", b"a,1\nb,2\nc,3\n", 2, b",").unwrap();
        assert_eq!(csv.points, [1.0, 2.0, 3.0]);
    }

    #[test]
    fn errors_match_ministat() {
        let err = Dataset::parse("bad.txt", b"1\nx\n3\n", 1, b" \t").unwrap_err();
        assert_eq!((err.stderr.as_str(), err.code), ("ministat: Invalid data on line 2 in bad.txt\n", 2));
        let err = Dataset::parse("two.txt", b"1\n2\n", 1, b" \t").unwrap_err();
        assert_eq!(err.stderr, "Dataset two.txt must contain at least 3 data points\n");
    }

    #[test]
    fn variance_is_the_reference_where_accurate_and_right_where_not() {
        let ds = Dataset::parse("a", b"1\n2\n3\n4\n5\n", 1, b" ").unwrap();
        assert_eq!(ds.var(), 2.5);
        // One-pass cancels completely here: Σy² ≈ 4e18 loses the spread.
        let ds = Dataset::parse("big", b"1000000001\n1000000002\n1000000003\n1000000004\n", 1, b" ").unwrap();
        assert!((ds.var() - 5.0 / 3.0).abs() < 1e-6, "{}", ds.var());
    }

    #[test]
    fn long_lines_count_as_several_like_fgets() {
        let mut text = vec![b' '; 9000];
        text.extend_from_slice(b"x\n1\n2\n3\n");
        let err = Dataset::parse("long", &text, 1, b" ").unwrap_err();
        assert_eq!(err.stderr, "ministat: Invalid data on line 2 in long\n");
    }
}
