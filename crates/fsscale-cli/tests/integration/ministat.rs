//! `fsscale ministat` against the reference ministat (Debian's package,
//! installed by .ci/run): byte-identical output over generated data sets and
//! flag combinations, except the documented deviations.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::*;

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One data set's lines in one of several styles benchmarks produce.
fn data_set(rng: &mut Rng, style: u64) -> Vec<String> {
    let range = if rng.below(4) == 0 { 60 } else { 12 };
    let n = 3 + rng.below(range) as usize;
    let center: f64 = [10.0, 1e6, 0.001, -50.0, 384557.7, 12.68][rng.below(6) as usize];
    let spread = center.abs() * [0.01, 0.1, 0.5][rng.below(3) as usize];
    (0..n)
        .map(|_| {
            let v = center + spread * (rng.unit() - 0.5) * 2.0;
            match style {
                0 => format!("{}", (v / spread * 4.0).round()), // small integers: many ties and stacks
                1 => format!("{v:.2}"),
                2 => format!("{v:.6e}"),
                _ => format!("{v}"),
            }
        })
        .collect()
}

/// Whether Debian's ministat, the reference, is installed (a prerequisite:
/// a failure under `.ci/run`, which installs it).
fn has_reference() -> bool {
    let found = Command::new("ministat").arg("-n").arg("/dev/null").output().is_ok();
    prerequisite(found, "ministat reference tests", "Debian's ministat is not installed (.ci/run installs it)")
}

fn run_both(dir: &Path, args: &[String]) -> (Output, Output) {
    let ours = fsscale().arg("ministat").args(args).current_dir(dir).output().unwrap();
    let theirs = Command::new("ministat").args(args).current_dir(dir).output().unwrap();
    (ours, theirs)
}

/// The plot's data rows (between the top border and the first bar row is
/// not knowable from text alone, so: all lines between the borders).
fn split_plot(text: &str) -> (Vec<&str>, Vec<&str>) {
    let lines: Vec<&str> = text.lines().collect();
    let borders: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| l.starts_with("+-")).map(|(i, _)| i).collect();
    if borders.len() < 2 {
        return (Vec::new(), lines);
    }
    let (top, bottom) = (borders[0], borders[borders.len() - 1]);
    let plot = lines[top + 1..bottom].to_vec();
    let rest = lines[..top].iter().chain(&lines[bottom + 1..]).copied().collect();
    (plot, rest)
}

/// The one documented plot deviation: the reference sizes the plot by the
/// last data set and, when it grows it again, zeroes rows that held earlier
/// sets' stacked points. So its data cells may only lack points that ours
/// shows: outside the plot and in the bar rows (which hold an `A`) the two
/// must be identical, and every reference cell's sets must be a subset of ours.
fn is_documented_plot_deviation(ours: &str, theirs: &str) -> bool {
    const SYMBOLS: &str = " x+*%#@O";
    let (our_plot, our_rest) = split_plot(ours);
    let (their_plot, their_rest) = split_plot(theirs);
    let bars = |plot: &[&str]| plot.iter().filter(|l| l.contains('A')).map(|l| l.to_string()).collect::<Vec<_>>();
    let data = |plot: &[&str]| plot.iter().filter(|l| !l.contains('A')).map(|l| l.to_string()).collect::<Vec<_>>();
    if our_rest != their_rest || bars(&our_plot) != bars(&their_plot) {
        return false;
    }
    let (our_rows, their_rows) = (data(&our_plot), data(&their_plot));
    if their_rows.len() > our_rows.len() {
        return false;
    }
    // Rows are printed top-down; align them at the bottom.
    our_rows.iter().rev().zip(their_rows.iter().rev()).all(|(o, t)| {
        o.len() == t.len()
            && o.chars().zip(t.chars()).all(|(oc, tc)| match (SYMBOLS.find(oc), SYMBOLS.find(tc)) {
                (Some(ob), Some(tb)) => tb & !ob == 0,
                _ => oc == tc,
            })
    })
}

#[test]
fn byte_identical_to_the_reference_ministat() {
    if !has_reference() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_f55c_a1e5);
    let flag_sets: [&[&str]; 12] = [
        &[],
        &["-n"],
        &["-A"],
        &["-s"],
        &["-c", "80"],
        &["-c", "90"],
        &["-c", "98"],
        &["-c", "99"],
        &["-w", "40"],
        &["-s", "-w", "120"],
        &["-ns"],
        &["-w", "2"],
    ];
    let (mut compared, mut identical, mut deviations) = (0, 0, 0);
    for case in 0..240 {
        let sets = 1 + rng.below(if case % 5 == 0 { 7 } else { 3 }) as usize;
        let style = rng.below(4);
        let csv = case % 7 == 3;
        let mut files: Vec<PathBuf> = Vec::new();
        for s in 0..sets {
            let mut lines = data_set(&mut rng, style);
            if csv {
                lines = lines.iter().enumerate().map(|(i, v)| format!("row{i},{v},x")).collect();
            }
            if case % 3 == 0 {
                lines.insert(0, "# generated".into());
                lines.insert(lines.len() / 2, String::new());
            }
            let path = dir.path().join(format!("c{case}s{s}.txt"));
            std::fs::write(&path, lines.join("\n") + "\n").unwrap();
            files.push(path);
        }
        let flags = flag_sets[case % flag_sets.len()];
        let mut args: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
        if csv {
            args.extend(["-d".into(), ",".into(), "-C".into(), "2".into()]);
        }
        args.extend(files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()));
        let (ours, theirs) = run_both(dir.path(), &args);
        compared += 1;
        assert_eq!(ours.status.code(), theirs.status.code(), "exit codes differ for {args:?}\n{}", stderr(&ours));
        let (o, t) = (stdout(&ours), stdout(&theirs));
        if o == t {
            identical += 1;
        } else if sets > 1 && !flags.contains(&"-n") && !flags.contains(&"-A") && is_documented_plot_deviation(&o, &t) {
            // Only possible with a plot of two or more sets.
            deviations += 1;
        } else {
            panic!("ministat {args:?} in {}:\n--- reference\n{t}\n--- fsscale\n{o}", dir.path().display());
        }
    }
    eprintln!("ministat: {identical} of {compared} identical, {deviations} differ only by points the reference loses from its plot (documented)");
    // Every difference was the documented one; enough cases are identical to mean something.
    assert!(identical >= 120, "{identical} of {compared}");
}

#[test]
fn errors_and_stdin_match_the_reference() {
    if !has_reference() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("two.txt"), "1\n2\n").unwrap();
    std::fs::write(dir.path().join("bad.txt"), "1\nabc\n3\n").unwrap();
    std::fs::write(dir.path().join("ok.txt"), "1\n2\n3\n4\n").unwrap();
    for args in [
        vec!["two.txt"],
        vec!["bad.txt"],
        vec!["missing.txt"],
        vec!["ok.txt", "ok.txt", "ok.txt", "ok.txt", "ok.txt", "ok.txt", "ok.txt", "ok.txt"],
        vec!["-C", "0", "ok.txt"],
        vec!["-c", "abc", "ok.txt"],
        vec!["-w", "-3", "ok.txt"],
    ] {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let (ours, theirs) = run_both(dir.path(), &args);
        assert_eq!(ours.status.code(), theirs.status.code(), "{args:?}");
        assert_eq!(stdout(&ours), stdout(&theirs), "{args:?}");
        // The first stderr line is the message; the usage text below it lists fsscale's extras.
        assert_eq!(stderr(&ours).lines().next(), stderr(&theirs).lines().next(), "{args:?}");
    }
    // Standard input, with no file and with "-".
    for args in [vec![], vec!["-"], vec!["-n", "-"]] {
        let run = |program: &mut Command| {
            let mut child = program
                .args(&args)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            use std::io::Write;
            child.stdin.take().unwrap().write_all(b"5\n1\n4\n2\n3\n").unwrap();
            child.wait_with_output().unwrap()
        };
        let ours = run(fsscale().arg("ministat"));
        let theirs = run(&mut Command::new("ministat"));
        assert_eq!(stdout(&ours), stdout(&theirs), "{args:?}");
    }
}

#[test]
fn documented_deviations_are_what_the_docs_say() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "1\n2\n3\n4\n5\n").unwrap();
    std::fs::write(dir.path().join("b.txt"), "2\n3\n4\n5\n6\n7\n").unwrap();
    // 99.5%: true quantile (df = 9: 3.690), not the reference's 99.8% value (4.297).
    let out =
        fsscale().args(["ministat", "-A", "-c", "99.5", "a.txt", "b.txt"]).current_dir(dir.path()).output().unwrap();
    assert_success(&out);
    assert!(stdout(&out).contains("No difference proven at 99.5% confidence"), "{}", stdout(&out));
    // Any level works.
    let out =
        fsscale().args(["ministat", "-A", "-c", "75", "a.txt", "b.txt"]).current_dir(dir.path()).output().unwrap();
    assert!(stdout(&out).contains("Difference at 75.0% confidence"), "{}", stdout(&out));
    // A plot of width 1 is an error, not a crash.
    let out = fsscale().args(["ministat", "-w", "1", "a.txt"]).current_dir(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot be drawn"), "{}", stderr(&out));
    // Stddev where the reference's one-pass formula loses the 8th digit: exact
    // rational arithmetic gives 0.7384606751872…, so 0.73846068 is right
    // (the reference prints 0.73846067).
    let values: Vec<String> = (0..69).map(|i| format!("{}", 1000.0 + (i % 7) as f64 * 0.37)).collect();
    std::fs::write(dir.path().join("c.txt"), values.join("\n") + "\n").unwrap();
    let out = fsscale().args(["ministat", "-n", "c.txt"]).current_dir(dir.path()).output().unwrap();
    assert!(stdout(&out).ends_with("1001.0939    0.73846068\n"), "{}", stdout(&out));
    // -q drops names and header (the reference package predates -q).
    let out = fsscale().args(["ministat", "-q", "-n", "a.txt", "b.txt"]).current_dir(dir.path()).output().unwrap();
    assert_eq!(
        stdout(&out),
        "x   5             1             5             3             3     1.5811388\n\
         +   6             2             7             5           4.5     1.8708287\n"
    );
}

/// The t table at one confidence level against the reference, for every
/// reachable df: each data set needs 3 points, so df = n1 + n2 − 2 runs
/// from 4; above 100 the reference uses one row. A large difference makes
/// it print e = t·s to 6 significant digits, which shows any t that
/// differs. One test per level: 107 pairs of processes each.
fn t_table_matches_the_reference_at(level: &str) {
    if !has_reference() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "0\n1\n2\n").unwrap();
    let mut checked = 0;
    for df in 4..=110usize {
        // Values small against their spread, so the one-pass variance is exact enough to print alike.
        let values: Vec<String> = (0..df - 1).map(|i| format!("{}", 10.0 + (i % 7) as f64 * 0.37)).collect();
        std::fs::write(dir.path().join("b.txt"), values.join("\n") + "\n").unwrap();
        let args: Vec<String> = ["-A", "-c", level, "a.txt", "b.txt"].iter().map(|s| s.to_string()).collect();
        let (ours, theirs) = run_both(dir.path(), &args);
        assert_eq!(stdout(&ours), stdout(&theirs), "df {df}, {level}%");
        assert!(stdout(&theirs).contains("Difference at"), "df {df}");
        checked += 1;
    }
    assert_eq!(checked, 107);
}

#[test]
fn t_table_matches_the_reference_for_every_reachable_df_at_80_percent() {
    t_table_matches_the_reference_at("80");
}

#[test]
fn t_table_matches_the_reference_for_every_reachable_df_at_90_percent() {
    t_table_matches_the_reference_at("90");
}

#[test]
fn t_table_matches_the_reference_for_every_reachable_df_at_95_percent() {
    t_table_matches_the_reference_at("95");
}

#[test]
fn t_table_matches_the_reference_for_every_reachable_df_at_98_percent() {
    t_table_matches_the_reference_at("98");
}

#[test]
fn t_table_matches_the_reference_for_every_reachable_df_at_99_percent() {
    t_table_matches_the_reference_at("99");
}

#[test]
fn compare_with_the_veto_off_gives_the_verdicts_of_fsscale_ministat_on_the_same_runs() {
    let env = TestEnv::new();
    let (a, b) = (env.root.path().join("a.json"), env.root.path().join("b.json"));
    run_each(&env, &["stat", "-j", "1", "-n", "5", "--share", "private", "--duration", "0.05"], &[&a, &b]);
    // The base ramps up over its runs (a drift mark); the new side is 40% slower.
    set_rates(&a, &[1000.0, 1010.0, 1020.0, 1030.0, 1040.0]);
    set_rates(&b, &[600.0, 630.0, 590.0, 640.0, 610.0]);
    let compare = |extra: &[&str]| {
        let out = fsscale().arg("compare").arg(&a).arg(&b).args(["--format", "json"]).args(extra).output().unwrap();
        assert_success(&out);
        let c: Vec<fsscale::compare::Comparison> = serde_json::from_slice(&out.stdout).unwrap();
        c[0].rows[0].clone()
    };
    use fsscale::compare::Verdict;
    assert_eq!(compare(&[]).verdict, Verdict::TooNoisy, "the drift vetoes by default");
    let row = compare(&["--test", "student", "--noise-threshold", "0", "--no-noise-veto"]);
    assert_eq!(row.verdict, Verdict::Worse);
    // ministat on the same runs, exported.
    let export = |path: &Path, name: &str| {
        let out = fsscale().arg("export").arg(path).args(["--workload", "stat", "-j", "1"]).output().unwrap();
        assert_success(&out);
        let file = env.root.path().join(name);
        std::fs::write(&file, &out.stdout).unwrap();
        file
    };
    let out = fsscale().arg("ministat").arg("-A").arg(export(&a, "a.txt")).arg(export(&b, "b.txt")).output().unwrap();
    assert_success(&out);
    let text = stdout(&out);
    let line = text.lines().find(|l| l.trim_start().starts_with('-') && l.contains('%')).expect(&text);
    let pct: f64 = line.trim().split('%').next().unwrap().trim().parse().unwrap();
    assert!(text.contains("Difference at 95.0% confidence"), "{text}");
    assert!((pct - row.change_pct).abs() < 0.05, "ministat {pct}% against compare {}%", row.change_pct);
    // The header says what the verdicts promise.
    let out = fsscale()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--test", "student", "--noise-threshold", "0", "--no-noise-veto", "--no-fdr"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(text.contains("p: student test on the runs' figures (ministat's verdicts)"), "{text}");
    assert!(text.contains("verdict: better or worse when p < 0.05; noise marks are shown but veto nothing"), "{text}");
    let default = stdout(&fsscale().arg("compare").arg(&a).arg(&b).output().unwrap());
    assert!(
        default.contains("(ministat's verdicts: --test student --noise-threshold 0 --no-noise-veto --no-fdr)"),
        "{default}"
    );
}
