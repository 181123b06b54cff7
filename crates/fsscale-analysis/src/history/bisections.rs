//! Whole bisections simulated with the noise `bench/bisect.sh` meets on this
//! VM beside two CPU hogs, to tell which measuring protocol names the right
//! commit how often, and at what cost: docs/BENCHMARKS.md ("Bisecting
//! beside load") tabulates them.

use crate::compare::tests::doc;
use crate::history::gate::{judge, GateRule, GateVerdict};
use crate::results::ResultsFile;
use crate::stats::random::SplitMix64;
use crate::vocab::Workload::Stat;

/// The noise measured beside two hogs (20 invocations of 10 runs of the
/// bench's awk loop, good and bad alternately, 2026-11-28): each run's cost
/// per CPU-second spread by 6.8%, each invocation offset by 4.0%, and bad
/// 8.7% below good.
struct Noise {
    run_sd: f64,
    invocation_sd: f64,
    step: f64,
}

const BESIDE_HOGS: Noise = Noise { run_sd: 0.068, invocation_sd: 0.040, step: 0.087 };

/// How a bisection measures: runs an invocation, invocations of each
/// reference, the gate's `--max-rounds` and `--confidence`.
#[derive(Clone, Copy)]
struct Protocol {
    runs: usize,
    invocations: usize,
    rounds: usize,
    confidence: f64,
}

/// One invocation of `runs` runs at `level`.
fn invocation(level: f64, runs: usize, noise: &Noise, rng: &mut SplitMix64) -> ResultsFile {
    let offset = (noise.invocation_sd * rng.normal()).exp();
    let values: Vec<f64> = (0..runs).map(|_| level * offset * (noise.run_sd * rng.normal()).exp()).collect();
    doc(&[(Stat, 1, &values)])
}

/// What one bisection of 16 commits (the 11th the first bad) ends with:
/// the commit named, if any (none: only skipped commits left, or references
/// that do not separate), the invocations it measured, and whether both
/// `--check`s passed.
struct Bisection {
    named: Option<usize>,
    invocations: usize,
    checked: bool,
}

fn bisect(protocol: Protocol, noise: &Noise, rng: &mut SplitMix64) -> Bisection {
    let level = |commit: usize| if commit >= 11 { 100.0 * (1.0 - noise.step) } else { 100.0 };
    let mut measured = 0;
    let mut measure = |commit: usize, rng: &mut SplitMix64| {
        measured += 1;
        invocation(level(commit), protocol.runs, noise, rng)
    };
    let (mut good, mut bad) = (Vec::new(), Vec::new());
    for _ in 0..protocol.invocations {
        good.push(measure(1, rng));
        bad.push(measure(16, rng));
    }
    // As the gate does: undecided revisions are measured again, up to
    // --max-rounds. References that do not separate stop it (exit 128).
    let rule = GateRule { confidence: protocol.confidence, ..GateRule::DEFAULT };
    let mut gate = |commit: usize, rng: &mut SplitMix64| {
        let mut rounds = vec![measure(commit, rng)];
        loop {
            let decision = judge(&rounds, &good, Some(&bad), &rule).ok()?;
            if !decision.undecided || rounds.len() >= protocol.rounds {
                return Some(decision.verdict);
            }
            rounds.push(measure(commit, rng));
        }
    };
    let checked = gate(1, rng) == Some(GateVerdict::Good) && gate(16, rng) == Some(GateVerdict::Bad);
    // git bisect: test the untested commit nearest the middle of what is
    // left, skipped ones set aside; only skipped left is no answer.
    let (mut lo, mut hi, mut skipped): (usize, usize, Vec<usize>) = (1, 16, Vec::new());
    let named = loop {
        if hi - lo == 1 {
            break Some(hi);
        }
        let middle = (lo + hi) / 2;
        let next = (lo + 1..hi).filter(|c| !skipped.contains(c)).min_by_key(|c| c.abs_diff(middle));
        let Some(commit) = next else { break None };
        match gate(commit, rng) {
            Some(GateVerdict::Good) => lo = commit,
            Some(GateVerdict::Bad) => hi = commit,
            Some(_) => skipped.push(commit),
            None => break None,
        }
    };
    Bisection { named, invocations: measured, checked }
}

/// `cargo test --release --lib bisection_table -- --ignored --nocapture`.
#[test]
#[ignore = "prints the table of docs/BENCHMARKS.md (a minute)"]
fn bisection_table() {
    println!("| runs an invocation | invocations a reference | rounds | confidence | named the 11th | none | wrong | both checks passed | invocations a bisection | minutes a bisection |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let protocols = [(10, 2, 3), (10, 4, 6), (20, 4, 6), (10, 8, 8), (10, 6, 12), (30, 6, 8)];
    for ((runs, invocations, rounds), confidence) in protocols.into_iter().flat_map(|p| [0.95, 0.99].map(|c| (p, c))) {
        let protocol = Protocol { runs, invocations, rounds, confidence };
        let mut rng = SplitMix64::new(50);
        let (mut right, mut none, mut checked, mut cost) = (0, 0, 0, 0);
        for _ in 0..200 {
            let b = bisect(protocol, &BESIDE_HOGS, &mut rng);
            right += usize::from(b.named == Some(11));
            none += usize::from(b.named.is_none());
            checked += usize::from(b.checked);
            cost += b.invocations;
        }
        // Beside the hogs an invocation took 6.4 s for 11 runs (one warm-up): 0.5 s a run, 0.9 s to start.
        let measured = cost as f64 / 200.0;
        let minutes = measured * (0.5 * (runs + 1) as f64 + 0.9) / 60.0;
        let pct = |k: usize| format!("{:.1}%", k as f64 / 2.0);
        println!(
            "| {runs} | {invocations} | {rounds} | {:.0}% | {} | {} | {} | {} | {:.1} | {:.1} |",
            confidence * 100.0,
            pct(right),
            pct(none),
            pct(200 - right - none),
            pct(checked),
            measured,
            minutes
        );
    }
}
