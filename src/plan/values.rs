//! The values users type for a plan: worker lists and durations, and the
//! defaults they stand in for.

use std::time::Duration;

use super::MAX_WORKERS;
use crate::vocab::InputError;

/// 1, then powers of two below the core count, the core count, and twice it
/// (oversubscribed): the classic 1 / NR_CORES / 2×NR_CORES points with the
/// curve between them.
pub fn default_workers(cores: usize) -> Vec<usize> {
    let cores = cores.max(1);
    let mut counts = Vec::new();
    let mut n = 1;
    while n < cores {
        counts.push(n);
        n *= 2;
    }
    counts.push(cores);
    counts.push(2 * cores);
    counts
}

/// Under MPI: 1, powers of two below the ranks, then all ranks (as mdtest's first/last/stride sweeps).
pub fn default_rank_workers(ranks: usize) -> Vec<usize> {
    let ranks = ranks.max(1);
    let mut counts: Vec<usize> = std::iter::successors(Some(1), |n| Some(n * 2)).take_while(|&n| n < ranks).collect();
    counts.push(ranks);
    counts
}

/// Parses a worker list such as `1,2,4`, `1..8`, `cores`, `2xcores` or
/// `1,cores..2xcores`. The result is sorted and free of duplicates.
pub fn parse_workers(spec: &str, cores: usize) -> Result<Vec<usize>, InputError> {
    let hint = "use counts like 1,2,4, ranges like 1..8, 'cores' or '2xcores'";
    let term = |t: &str| -> Result<usize, InputError> {
        let t = t.trim();
        let value = if t == "cores" {
            Some(cores)
        } else if let Some(k) = t.strip_suffix("xcores") {
            k.parse::<usize>().ok().map(|k| k.saturating_mul(cores))
        } else {
            t.parse::<usize>().ok()
        };
        match value {
            Some(0) => Err(InputError::Malformed(format!("--workers: '{t}' gives 0 workers; {hint}"))),
            Some(n) if n > MAX_WORKERS => Err(InputError::Malformed(format!(
                "--workers: '{t}' is {n} workers, more than the limit of {MAX_WORKERS}"
            ))),
            Some(n) => Ok(n),
            None => Err(InputError::Malformed(format!("--workers: '{t}' is not a worker count; {hint}"))),
        }
    };
    let mut counts = Vec::new();
    for item in spec.split(',') {
        if item.trim().is_empty() {
            return Err(InputError::Malformed(format!("--workers: empty entry in '{spec}'; {hint}")));
        }
        match item.split_once("..") {
            Some((from, to)) => {
                let (from, to) = (term(from)?, term(to)?);
                if from > to {
                    return Err(InputError::Malformed(format!(
                        "--workers: range '{}' runs backwards; write it as {to}..{from}",
                        item.trim()
                    )));
                }
                counts.extend(from..=to);
            }
            None => counts.push(term(item)?),
        }
    }
    counts.sort_unstable();
    counts.dedup();
    Ok(counts)
}

/// The sampling interval of the per-second time series: one second for
/// windows of 10 s or more, a tenth of the window (at least 10 ms) for
/// shorter ones, so that short runs still get a curve.
pub fn auto_sample_interval(duration: Duration) -> Duration {
    if duration >= Duration::from_secs(10) {
        Duration::from_secs(1)
    } else {
        (duration / 10).max(Duration::from_millis(10))
    }
}

/// Parses `2`, `0.5`, `500ms`, `2s`, `1.5m` or `250us`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, InputError> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    if number.is_empty() {
        return Err(InputError::Malformed(format!("'{text}' is not a duration; write e.g. 2s, 500ms or 0.5")));
    }
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" => 60.0,
        other => {
            return Err(InputError::Malformed(format!(
                "'{text}': unknown unit '{other}'; use s, ms, us or m (e.g. 2s, 500ms)"
            )))
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| InputError::malformed(format!("'{text}' is not a duration; write e.g. 2s, 500ms or 0.5")))?;
    let seconds = value * scale;
    if !seconds.is_finite() || seconds > 1e7 {
        return Err(InputError::Malformed(format!("'{text}' is too long a duration")));
    }
    Ok(Duration::from_secs_f64(seconds))
}
