//! An open-loop point's asked rate (`--rate`): ops a second of all its
//! workers together, held exactly in thousandths so that points and
//! history series compare as equal or not without floating-point doubt.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::InputError;

/// Ops a second, all workers together, in thousandths of an op: 0.001 to
/// about 18 trillion ops/s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rate(u64);

/// The highest rate asked: far above what any filesystem op reaches
/// (tmpfs `stat` on a big machine is tens of millions a second).
pub const MAX_RATE: f64 = 1e12;

impl Rate {
    /// `ops_per_s` rounded to the thousandth; `None` unless it is a
    /// positive, finite number within [`MAX_RATE`].
    pub fn new(ops_per_s: f64) -> Option<Rate> {
        (ops_per_s.is_finite() && ops_per_s > 0.0 && ops_per_s <= MAX_RATE)
            .then(|| Rate((ops_per_s * 1000.0).round().max(1.0) as u64))
    }

    pub fn ops_per_s(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// This rate for each of `n` workers, all together.
    pub fn times(self, n: usize) -> Option<Rate> {
        Rate::new(self.ops_per_s() * n as f64)
    }

    /// The rate of three significant figures nearest `ops_per_s` (as a
    /// search names the rates it probes: 187k, not 186.932417k).
    pub fn rounded(ops_per_s: f64) -> Option<Rate> {
        if !(ops_per_s.is_finite() && ops_per_s > 0.0) {
            return None;
        }
        let unit = 10f64.powi(ops_per_s.log10().floor() as i32 - 2);
        Rate::new((ops_per_s / unit).round() * unit)
    }

    /// Parses what users type: `5000`, `2.5k`, `10k`, `1.2M`, `1e5`.
    pub fn parse(text: &str) -> Result<Rate, InputError> {
        let t = text.trim();
        let (number, scale) = match t.chars().last() {
            Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
            Some('M') => (&t[..t.len() - 1], 1e6),
            Some('G') => (&t[..t.len() - 1], 1e9),
            _ => (t, 1.0),
        };
        let value: f64 = number.trim().parse().map_err(|_| {
            InputError::malformed(format!("'{text}' is not a rate; give ops a second, e.g. 5000, 10k or 1.5M"))
        })?;
        Rate::new(value * scale).ok_or_else(|| {
            InputError::malformed(format!(
                "'{text}' is not a rate fsscale can ask for; give a positive number of ops a second up to 1e12"
            ))
        })
    }
}

/// The most rates one list may give (a range's steps included).
pub const MAX_RATES: usize = 100;

/// Parses a list of rates as `--rate` takes it: `10k,20k,50k`, or ranges
/// that step by their first rate (`10k..50k` is 10k, 20k, 30k, 40k, 50k;
/// an end that is no multiple of the step comes last). Sorted, each once.
/// `option` names the option in errors.
pub fn parse_rates(spec: &str, option: &str) -> Result<Vec<Rate>, InputError> {
    let hint = "give ops a second like 5000, 10k or 1.5M, lists like 10k,20k, or ranges like 10k..100k";
    let one = |t: &str| Rate::parse(t).map_err(|why| InputError::malformed(format!("{option}: {why}")));
    let bad = |why: String| Err(InputError::malformed(why));
    let mut rates = Vec::new();
    for item in spec.split(',') {
        if item.trim().is_empty() {
            return bad(format!("{option}: empty entry in '{spec}'; {hint}"));
        }
        match item.split_once("..") {
            Some((from, to)) => {
                let (from, to) = (one(from)?, one(to)?);
                if from > to {
                    return bad(format!("{option}: range '{}' runs backwards; write it as {to}..{from}", item.trim()));
                }
                let steps = (to.0 / from.0) as usize;
                if steps > MAX_RATES {
                    return bad(format!(
                        "{option}: range '{}' steps by {from} to {to}: {steps} rates, more than {MAX_RATES}; \
                         give a larger first rate or a list",
                        item.trim()
                    ));
                }
                rates.extend((1..=steps as u64).map(|k| Rate(from.0 * k)));
                rates.push(to);
            }
            None => rates.push(one(item)?),
        }
    }
    rates.sort_unstable();
    rates.dedup();
    if rates.len() > MAX_RATES {
        return bad(format!("{option}: {} rates, more than {MAX_RATES}; give fewer", rates.len()));
    }
    Ok(rates)
}

impl std::fmt::Display for Rate {
    /// The shortest exact form: `500`, `2.5k`, `10k`, `1.25M`, `0.5`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let milli = self.0;
        for (unit, suffix) in [(1_000_000_000_000u64, "G"), (1_000_000_000, "M"), (1_000_000, "k")] {
            if milli >= unit {
                return write!(f, "{}{suffix}", exact(milli, unit));
            }
        }
        write!(f, "{}", exact(milli, 1000))
    }
}

/// `value / unit` in as few decimals as say it exactly.
fn exact(value: u64, unit: u64) -> String {
    let whole = value / unit;
    let rest = value % unit;
    if rest == 0 {
        return whole.to_string();
    }
    let digits = unit.ilog10() as usize;
    let fraction = format!("{rest:0digits$}");
    format!("{whole}.{}", fraction.trim_end_matches('0'))
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.ops_per_s())
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Rate, D::Error> {
        let value = f64::deserialize(d)?;
        Rate::new(value)
            .ok_or_else(|| serde::de::Error::custom(format!("rate {value} is not a positive number up to 1e12")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounded_rates_keep_three_significant_figures() {
        let r = |v: f64| Rate::rounded(v).unwrap().to_string();
        assert_eq!(r(186_932.417), "187k");
        assert_eq!(r(1_234_567.0), "1.23M");
        assert_eq!(r(99.96), "100");
        assert_eq!(r(0.5), "0.5");
        assert_eq!(Rate::rounded(0.0), None);
        assert_eq!(Rate::rounded(f64::NAN), None);
    }

    #[test]
    fn rates_parse_as_typed_and_print_back_the_same() {
        for (typed, shown, ops) in [
            ("5000", "5k", 5000.0),
            ("2.5k", "2.5k", 2500.0),
            ("10k", "10k", 10_000.0),
            ("1.25M", "1.25M", 1_250_000.0),
            ("1e5", "100k", 100_000.0),
            ("0.5", "0.5", 0.5),
            ("999", "999", 999.0),
            ("1234.5", "1.2345k", 1234.5),
        ] {
            let rate = Rate::parse(typed).unwrap();
            assert_eq!(rate.to_string(), shown, "{typed}");
            assert_eq!(rate.ops_per_s(), ops, "{typed}");
            assert_eq!(Rate::parse(shown).unwrap(), rate, "{shown} reads back");
        }
        assert_eq!(Rate::parse("2k").unwrap().times(4), Rate::new(8000.0));
    }

    #[test]
    fn lists_and_ranges_of_rates() {
        let list = |spec: &str| {
            parse_rates(spec, "--rate")
                .map(|r| r.iter().map(|r| r.to_string()).collect::<Vec<_>>())
                .map_err(|e| e.to_string())
        };
        assert_eq!(list("50k,10k,20k,10k").unwrap(), ["10k", "20k", "50k"]);
        assert_eq!(list("10k..50k").unwrap(), ["10k", "20k", "30k", "40k", "50k"]);
        assert_eq!(list("20k..50k, 1k").unwrap(), ["1k", "20k", "40k", "50k"]);
        assert_eq!(list("50k..10k").unwrap_err(), "--rate: range '50k..10k' runs backwards; write it as 10k..50k");
        assert_eq!(
            list("1..1M").unwrap_err(),
            "--rate: range '1..1M' steps by 1 to 1M: 1000000 rates, more than 100; give a larger first rate or a list"
        );
        assert!(list("1k,,2k").unwrap_err().starts_with("--rate: empty entry in '1k,,2k'"));
        assert_eq!(
            list("1k,fast").unwrap_err(),
            "--rate: 'fast' is not a rate; give ops a second, e.g. 5000, 10k or 1.5M"
        );
    }

    #[test]
    fn what_is_not_a_rate_is_refused_in_words() {
        assert_eq!(
            Rate::parse("fast").unwrap_err().to_string(),
            "'fast' is not a rate; give ops a second, e.g. 5000, 10k or 1.5M"
        );
        for bad in ["0", "-5", "inf", "NaN", "2e12"] {
            assert!(Rate::parse(bad).unwrap_err().to_string().contains("is not a rate fsscale can ask for"), "{bad}");
        }
    }

    #[test]
    fn a_rate_is_written_as_ops_a_second_and_a_received_one_checked() {
        let rate = Rate::parse("2.5k").unwrap();
        assert_eq!(serde_json::to_string(&rate).unwrap(), "2500.0");
        assert_eq!(serde_json::from_str::<Rate>("2500").unwrap(), rate);
        assert!(serde_json::from_str::<Rate>("-1").is_err());
        assert!(serde_json::from_str::<Rate>("1e300").is_err());
    }
}
