//! A response-time objective (`--slo p99=1ms`): a quantile of every op's
//! response time and the limit it must stay within, held exactly in
//! nanoseconds.

use serde::{Deserialize, Serialize};

use super::InputError;

/// Which quantile of the response times an objective bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Quantile {
    #[serde(rename = "p50")]
    P50,
    #[serde(rename = "p99")]
    P99,
    #[serde(rename = "p99.9")]
    P999,
}

crate::choice!(Quantile { P50 => "p50" | "median", P99 => "p99", P999 => "p99.9" });

impl Quantile {
    /// The quantile as a fraction (0.5, 0.99, 0.999).
    pub fn fraction(self) -> f64 {
        match self {
            Quantile::P50 => 0.5,
            Quantile::P99 => 0.99,
            Quantile::P999 => 0.999,
        }
    }
}

/// A response-time quantile that must stay at or under `limit_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Objective {
    pub quantile: Quantile,
    pub limit_ns: u64,
}

/// The longest limit an objective takes: an hour, far beyond any op's
/// response time a search could measure in a run.
pub const MAX_LIMIT_NS: u64 = 3_600_000_000_000;

impl Objective {
    /// Parses one objective as users type it: `p99=1ms`, `p50=200us`,
    /// `p99.9=2.5ms`, `median=50µs`.
    pub fn parse(text: &str) -> Result<Objective, InputError> {
        let hint = "write a quantile (p50, p99 or p99.9), '=' and a time, e.g. p99=1ms or p50=200us";
        let (name, limit) = text
            .split_once('=')
            .ok_or_else(|| InputError::malformed(format!("'{}' is not an objective; {hint}", text.trim())))?;
        let quantile = <Quantile as super::Choice>::from_name(name.trim()).ok_or_else(|| {
            InputError::malformed(format!("'{}' is not a quantile an objective bounds; {hint}", name.trim()))
        })?;
        let limit_ns = parse_ns(limit.trim()).ok_or_else(|| {
            InputError::malformed(format!(
                "'{}' is not a time limit; give a positive time up to an hour in ns, us, ms or s, e.g. 1ms",
                limit.trim()
            ))
        })?;
        Ok(Objective { quantile, limit_ns })
    }

    /// Whether a run's `quantile_ns` (its value at this objective's quantile) meets it.
    pub fn met_by(&self, quantile_ns: u64) -> bool {
        quantile_ns <= self.limit_ns
    }
}

/// Parses `--slo`: objectives separated by commas, at most one per
/// quantile (`p50=200us,p99=1ms`), all to be met at once. In quantile order.
pub fn parse_objectives(spec: &str) -> Result<Vec<Objective>, InputError> {
    let mut objectives = Vec::new();
    for item in spec.split(',') {
        let objective = Objective::parse(item).map_err(|why| InputError::malformed(format!("--slo: {why}")))?;
        if objectives.iter().any(|o: &Objective| o.quantile == objective.quantile) {
            return Err(InputError::malformed(format!(
                "--slo: {} is bounded twice in '{spec}'; give each quantile once",
                objective.quantile
            )));
        }
        objectives.push(objective);
    }
    objectives.sort_by_key(|o| o.quantile);
    Ok(objectives)
}

/// A time in whole nanoseconds from `1ms`, `250us`, `250µs`, `2.5ms`,
/// `800ns` or `1s`; `None` unless positive and at most [`MAX_LIMIT_NS`].
fn parse_ns(text: &str) -> Option<u64> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    let ns = number.parse::<f64>().ok()? * scale;
    (ns.is_finite() && ns >= 1.0 && ns <= MAX_LIMIT_NS as f64).then(|| ns.round() as u64)
}

impl std::fmt::Display for Objective {
    /// As typed, in the largest unit that says the limit exactly: `p99=1ms`, `p99.9=1500us`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ns = self.limit_ns;
        let (value, unit) = match ns {
            _ if ns.is_multiple_of(1_000_000_000) => (ns / 1_000_000_000, "s"),
            _ if ns.is_multiple_of(1_000_000) => (ns / 1_000_000, "ms"),
            _ if ns.is_multiple_of(1_000) => (ns / 1_000, "us"),
            _ => (ns, "ns"),
        };
        write!(f, "{}={value}{unit}", self.quantile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse_in_every_unit_and_print_as_typed() {
        let o = parse_objectives("p99=1ms").unwrap();
        assert_eq!(o, [Objective { quantile: Quantile::P99, limit_ns: 1_000_000 }]);
        let o = parse_objectives("p99.9=2.5ms, median=200µs").unwrap();
        assert_eq!(o[0], Objective { quantile: Quantile::P50, limit_ns: 200_000 });
        assert_eq!(o[1], Objective { quantile: Quantile::P999, limit_ns: 2_500_000 });
        let printed: Vec<String> = o.iter().map(|o| o.to_string()).collect();
        assert_eq!(printed, ["p50=200us", "p99.9=2500us"]);
        assert_eq!(Objective::parse("p50=800ns").unwrap().to_string(), "p50=800ns");
        assert_eq!(Objective::parse("p50=2s").unwrap().to_string(), "p50=2s");
    }

    #[test]
    fn bad_objectives_name_what_is_wrong() {
        let error = |spec: &str| parse_objectives(spec).unwrap_err().to_string();
        assert!(error("p99").contains("'p99' is not an objective"), "{}", error("p99"));
        assert!(error("p95=1ms").contains("'p95' is not a quantile"));
        assert!(error("p99=fast").contains("'fast' is not a time limit"));
        assert!(error("p99=0ms").contains("is not a time limit"));
        assert!(error("p99=2h").contains("is not a time limit"));
        assert!(error("p99=5000s").contains("is not a time limit"), "over an hour");
        assert!(error("p99=1ms,p99=2ms").contains("p99 is bounded twice"));
        assert!(error("p99=1ms,").contains("is not an objective"));
    }

    #[test]
    fn a_limit_is_met_at_or_under_it() {
        let o = Objective::parse("p99=1ms").unwrap();
        assert!(o.met_by(1_000_000) && o.met_by(1) && !o.met_by(1_000_001));
    }
}
