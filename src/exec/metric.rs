//! The figure a driver command reports: a number captured by a regular
//! expression, a number at a path in its JSON output, or its wall time.

use regex::Regex;

use crate::vocab::InputError;

/// Where a driver's figure comes from.
#[derive(Debug, Clone)]
pub enum MetricSource {
    /// The first capture group (or the whole match) of the last match in
    /// stdout, else in stderr: benchmarks print their summary last.
    Regex(Regex),
    /// A dotted path into stdout parsed as JSON: `jobs.0.read.iops`.
    JsonPath(String),
    /// Seconds from start to exit.
    WallTime,
}

/// A driver's figure and how to read it.
#[derive(Debug, Clone)]
pub struct Metric {
    pub source: MetricSource,
    /// The name tables and charts show: `--metric-name`, else a default.
    pub name: String,
    pub higher_is_better: bool,
}

impl Metric {
    /// Builds a metric from the command-line pieces; the error names the bad piece.
    pub fn new(
        regex: Option<&str>,
        json_path: Option<&str>,
        name: Option<&str>,
        higher_is_better: bool,
    ) -> Result<Metric, InputError> {
        let source = match (regex, json_path) {
            (Some(_), Some(_)) => return Err(InputError::malformed("give --metric or --metric-json, not both")),
            (Some(pattern), None) => MetricSource::Regex(Regex::new(pattern).map_err(|e| {
                InputError::Malformed(format!(
                    "--metric '{pattern}' is not a valid regular expression: {}",
                    first_line(&e.to_string())
                ))
            })?),
            (None, Some(path)) => {
                if path.trim().is_empty() {
                    return Err(InputError::malformed("--metric-json needs a path such as jobs.0.read.iops"));
                }
                MetricSource::JsonPath(path.trim().to_string())
            }
            (None, None) => MetricSource::WallTime,
        };
        let name = match (name, &source) {
            (Some(n), _) => n.to_string(),
            (None, MetricSource::WallTime) => "time s".to_string(),
            (None, MetricSource::JsonPath(p)) => p.clone(),
            (None, MetricSource::Regex(_)) => "metric".to_string(),
        };
        let higher_is_better = higher_is_better && !matches!(source, MetricSource::WallTime);
        Ok(Metric { source, name, higher_is_better })
    }

    /// How the figure was obtained, for the results file.
    pub fn describe(&self) -> String {
        match &self.source {
            MetricSource::Regex(r) => format!("regex {}", r.as_str()),
            MetricSource::JsonPath(p) => format!("json {p}"),
            MetricSource::WallTime => "wall time".to_string(),
        }
    }

    /// Reads the figure from a finished command's output: for a pattern,
    /// the last matching line (scanned while the output streamed past),
    /// else a match across lines in the kept tails.
    pub fn extract(&self, finished: &super::Finished, wall_s: f64) -> anyhow::Result<f64> {
        let (stdout, stderr) = (&finished.stdout[..], &finished.stderr[..]);
        match &self.source {
            MetricSource::WallTime => Ok(wall_s),
            MetricSource::Regex(regex) => {
                let lines = [finished.stdout_match.as_deref(), finished.stderr_match.as_deref()];
                let tails = [String::from_utf8_lossy(stdout), String::from_utf8_lossy(stderr)];
                for text in lines.into_iter().flatten().chain(tails.iter().map(|t| t.as_ref())) {
                    if let Some(caps) = regex.captures_iter(text).last() {
                        let matched = caps.get(1).or_else(|| caps.get(0)).map_or("", |m| m.as_str());
                        return parse_number(matched).ok_or_else(|| {
                            anyhow::anyhow!("--metric '{}' matched \"{matched}\", which is not a number; put the number in a capture group", regex.as_str())
                        });
                    }
                }
                Err(anyhow::anyhow!(
                    "--metric '{}' matched nothing in the command's output (last line: \"{}\")",
                    regex.as_str(),
                    super::tail(stdout, 1)
                ))
            }
            MetricSource::JsonPath(path) => {
                if finished.stdout_len > stdout.len() as u64 {
                    return Err(anyhow::anyhow!(
                        "--metric-json: the command wrote {} bytes to stdout; fsscale keeps the last {} \
                         (print only the JSON report)",
                        finished.stdout_len,
                        stdout.len()
                    ));
                }
                let value: serde_json::Value = serde_json::from_slice(stdout)
                    .map_err(|e| anyhow::anyhow!("--metric-json: the command's output is not JSON ({e})"))?;
                let mut at = &value;
                for key in path.trim_start_matches('.').split('.') {
                    let next = match at {
                        serde_json::Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
                        serde_json::Value::Object(map) => map.get(key),
                        _ => None,
                    };
                    at = next.ok_or_else(|| {
                        anyhow::anyhow!("--metric-json {path}: no '{key}' in the command's JSON output")
                    })?;
                }
                match at {
                    serde_json::Value::Number(n) => n.as_f64(),
                    serde_json::Value::String(s) => parse_number(s),
                    _ => None,
                }
                .ok_or_else(|| anyhow::anyhow!("--metric-json {path}: the value {at} is not a number"))
            }
        }
    }
}

fn first_line(text: &str) -> String {
    text.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string()
}

fn parse_number(text: &str) -> Option<f64> {
    text.trim().replace(',', "").parse::<f64>().ok().filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A finished command that printed `stdout` and `stderr` (no streaming scan).
    fn output(stdout: &[u8], stderr: &[u8]) -> crate::exec::Finished {
        crate::exec::Finished {
            stdout: stdout.to_vec(),
            stdout_len: stdout.len() as u64,
            stderr: stderr.to_vec(),
            ..Default::default()
        }
    }

    const SYSBENCH: &str = "\
SQL statistics:
    transactions:                        43256  (4325.12 per sec.)
    queries:                             692096 (69201.94 per sec.)
";

    #[test]
    fn regex_takes_the_last_match_and_its_group() {
        let m = Metric::new(Some(r"transactions:.*\(([0-9.]+) per sec"), None, Some("tps"), true).unwrap();
        assert_eq!(m.extract(&output(SYSBENCH.as_bytes(), b""), 1.0).unwrap(), 4325.12);
        let last = Metric::new(Some(r"rate ([0-9]+)"), None, None, true).unwrap();
        assert_eq!(last.extract(&output(b"rate 1\nrate 2\nrate 3\n", b""), 1.0).unwrap(), 3.0);
        assert_eq!(last.extract(&output(b"nothing", b"rate 7"), 1.0).unwrap(), 7.0);
        let err = last.extract(&output(b"x\nfinal line\n", b""), 1.0).unwrap_err().to_string();
        assert_eq!(err, "--metric 'rate ([0-9]+)' matched nothing in the command's output (last line: \"final line\")");
        let whole = Metric::new(Some(r"[0-9]+ ops"), None, None, true).unwrap();
        assert!(whole.extract(&output(b"12 ops", b""), 1.0).unwrap_err().to_string().contains("not a number"));
        assert!(Metric::new(Some("(unclosed"), None, None, true)
            .unwrap_err()
            .to_string()
            .starts_with("--metric '(unclosed' is not a valid"));
    }

    #[test]
    fn json_paths_walk_objects_and_arrays() {
        let m = Metric::new(None, Some("jobs.0.read.iops"), None, true).unwrap();
        let out = br#"{"jobs":[{"read":{"iops":1234.5}}]}"#;
        assert_eq!(m.extract(&output(out, b""), 1.0).unwrap(), 1234.5);
        assert_eq!(m.name, "jobs.0.read.iops");
        assert!(m.extract(&output(br#"{"jobs":[]}"#, b""), 1.0).unwrap_err().to_string().contains("no '0'"));
        assert!(m.extract(&output(b"not json", b""), 1.0).unwrap_err().to_string().contains("not JSON"));
    }

    #[test]
    fn wall_time_is_lower_is_better() {
        let m = Metric::new(None, None, None, true).unwrap();
        assert!(!m.higher_is_better);
        assert_eq!(m.name, "time s");
        assert_eq!(m.extract(&output(b"", b""), 2.5).unwrap(), 2.5);
        assert!(Metric::new(Some("x"), Some("y"), None, true).is_err());
    }
}
