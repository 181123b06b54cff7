//! `--variant NAME=COMMAND`: configurations of the system under test
//! measured against each other in one run, the seeds' tunable on/off
//! design. Every point runs under every variant in every round, the
//! variant's command applied just before its run, so the variants of a
//! round share one stretch of the machine's time and a paired comparison
//! (`compare --between variant=A,B`) cancels what moved between rounds.

use anyhow::{bail, Result};

pub use crate::vocab::{
    is_valid_variant_name, Variant, DEFAULT_PAIRED_CI_PCT, DEFAULT_PAIRED_MAX_ROUNDS, VARIANT_NAME_RULE,
};
use crate::vocab::{InputError, Order};

/// The most variants one run may have (each multiplies every point).
pub(crate) const MAX_VARIANTS: usize = 16;

/// Splits `NAME=COMMAND` as `flag` takes it.
fn parse_assignment(flag: &str, text: &str) -> Result<(String, String), InputError> {
    let malformed = |why: &str| InputError::malformed(format!("{flag} {text}: {why}"));
    let (name, command) =
        text.split_once('=').ok_or_else(|| malformed("give NAME=COMMAND, e.g. on='sysctl -w vm.swappiness=10'"))?;
    if !is_valid_variant_name(name) {
        return Err(malformed(VARIANT_NAME_RULE));
    }
    Ok((name.to_string(), command.to_string()))
}

/// The variants `--variant` and `--variant-teardown` give, in the order named.
pub fn from_flags(setups: &[String], teardowns: &[String]) -> Result<Vec<Variant>, InputError> {
    let mut variants: Vec<Variant> = Vec::new();
    for text in setups {
        let (name, setup) = parse_assignment("--variant", text)?;
        if variants.iter().any(|v| v.name == name) {
            return Err(InputError::malformed(format!(
                "--variant {text}: {name} is named twice; give each variant once"
            )));
        }
        variants.push(Variant { name, setup, teardown: None, unprofiled: false });
    }
    for text in teardowns {
        let (name, teardown) = parse_assignment("--variant-teardown", text)?;
        let names = variants.iter().map(|v| v.name.as_str()).collect::<Vec<_>>().join(", ");
        let Some(variant) = variants.iter_mut().find(|v| v.name == name) else {
            return Err(InputError::malformed(format!(
                "--variant-teardown {text}: there is no --variant {name} (the variants are: {})",
                if names.is_empty() { "none" } else { &names }
            )));
        };
        variant.teardown = Some(teardown);
    }
    Ok(variants)
}

/// `--profile-cost`: the same point with its instruments off and on, as
/// two variants paired round by round, so that what profiling costs is a
/// ratio with its interval from one invocation (the first is the baseline).
pub fn profile_cost() -> Vec<Variant> {
    let variant =
        |name: &str, unprofiled| Variant { name: name.into(), setup: String::new(), teardown: None, unprofiled };
    vec![variant("unprofiled", true), variant("profiled", false)]
}

/// What the rest of the plan must be for variants to pair.
pub(super) fn check(variants: &[Variant], order: Order) -> Result<()> {
    match variants.len() {
        0 => return Ok(()),
        1 => bail!(
            "--variant {}: one variant has nothing to be compared with; give at least two (one may be a baseline: --variant base=)",
            variants[0].name
        ),
        n if n > MAX_VARIANTS => bail!("{n} variants: at most {MAX_VARIANTS} (each multiplies every point)"),
        _ => {}
    }
    if order == Order::Sequential {
        bail!(
            "--variant pairs each round's runs of the variants, and --order sequential has no rounds: \
             use --order interleaved (the default) or shuffled"
        );
    }
    Ok(())
}

/// The order the `variants` of one point take in round `round` of an
/// interleaved run: rotated by one each round, so that over `variants`
/// rounds each goes first, second, ... equally often (a cyclic Latin square)
/// and no variant always runs right after another's setup.
pub(crate) fn rotation(variants: usize, round: usize, variant: usize) -> usize {
    (variant + variants - round % variants.max(1)) % variants.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_give_named_variants_with_their_teardowns() {
        let v = from_flags(&strings(&["off=", "on=sysctl -w vm.x=1"]), &strings(&["on=sysctl -w vm.x=0"])).unwrap();
        assert_eq!(
            v,
            [
                Variant { name: "off".into(), setup: "".into(), teardown: None, unprofiled: false },
                Variant {
                    name: "on".into(),
                    setup: "sysctl -w vm.x=1".into(),
                    teardown: Some("sysctl -w vm.x=0".into()),
                    unprofiled: false
                },
            ]
        );
        for (setups, teardowns, says) in [
            (&["on"][..], &[][..], "--variant on: give NAME=COMMAND"),
            (&["=true"], &[], "--variant =true: a name is 1 to 32"),
            (&["a b=true"], &[], "a name is 1 to 32"),
            (&["a=x", "a=y"], &[], "--variant a=y: a is named twice"),
            (&["a=x"], &["b=y"], "--variant-teardown b=y: there is no --variant b (the variants are: a)"),
        ] {
            let error = from_flags(&strings(setups), &strings(teardowns)).unwrap_err().to_string();
            assert!(error.contains(says), "{error}");
        }
    }

    #[test]
    fn variants_need_a_partner_and_rounds() {
        let two = from_flags(&strings(&["a=", "b="]), &[]).unwrap();
        assert!(check(&two, Order::Interleaved).is_ok());
        assert!(check(&two, Order::Shuffled).is_ok());
        let sequential = check(&two, Order::Sequential).unwrap_err().to_string();
        assert!(sequential.contains("--order sequential has no rounds"), "{sequential}");
        let one = check(&two[..1], Order::Interleaved).unwrap_err().to_string();
        assert!(one.starts_with("--variant a: one variant has nothing to be compared with"), "{one}");
    }

    #[test]
    fn rotation_puts_each_variant_in_each_place_once_per_cycle() {
        for k in 1..6 {
            for round in 0..k {
                let mut places: Vec<usize> = (0..k).map(|v| rotation(k, round, v)).collect();
                places.sort_unstable();
                assert_eq!(places, (0..k).collect::<Vec<_>>(), "a permutation");
            }
            for v in 0..k {
                let mut places: Vec<usize> = (0..k).map(|round| rotation(k, round, v)).collect();
                places.sort_unstable();
                assert_eq!(places, (0..k).collect::<Vec<_>>(), "variant {v} takes every place once over {k} rounds");
            }
        }
        // Two variants alternate: AB, BA, AB, ...
        assert_eq!([rotation(2, 0, 0), rotation(2, 1, 0), rotation(2, 2, 0)], [0, 1, 0]);
    }
}
