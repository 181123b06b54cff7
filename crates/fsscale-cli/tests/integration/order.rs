//! The order of runs, warm-up runs and `--until-ci`, as the results record them.

use fsscale::plan::Order;
use fsscale::results::{Point, ResultsFile};

use crate::util::*;

/// Each point's measured runs' positions, and its warm-up runs' positions.
fn positions(doc: &ResultsFile) -> Vec<(Vec<usize>, Vec<usize>)> {
    let of = |runs: &[fsscale::results::RunRecord]| runs.iter().map(|r| r.position.unwrap()).collect();
    doc.points.iter().map(|p: &Point| (of(&p.runs), of(&p.warmup_runs))).collect()
}

const TWO_POINTS: [&str; 7] = ["stat", "-j", "1,2", "--share", "private", "-n", "3"];

#[test]
fn interleaved_is_the_default_with_a_warmup_round_first() {
    let env = TestEnv::new();
    // Warm-up runs of exactly --duration: their length is another test's.
    let out = env.run(&[&TWO_POINTS[..], &["--warmup-runs", "1", "--warmup-max", "0"]].concat());
    assert_success(&out);
    let doc = env.results();
    assert_eq!(doc.settings.order, Some(Order::Interleaved));
    assert_eq!(doc.settings.warmup_runs, 1);
    assert_eq!(doc.settings.warmup_until_steady, None);
    assert_eq!(positions(&doc), [(vec![2, 4, 6], vec![0]), (vec![3, 5, 7], vec![1])]);
    // Warm-up runs are measured, kept, and in no figure.
    for p in &doc.points {
        assert!(p.warmup_runs[0].ops > 0);
        assert_eq!(p.summary.as_ref().unwrap().ops_per_s.n, 3);
    }
    // Start times follow the positions.
    let mut starts: Vec<(usize, String)> = doc
        .points
        .iter()
        .flat_map(|p| p.runs.iter().chain(&p.warmup_runs))
        .map(|r| (r.position.unwrap(), r.started_at.clone().unwrap()))
        .collect();
    starts.sort();
    assert!(starts.windows(2).all(|w| w[0].1 <= w[1].1), "{starts:?}");
    assert!(starts[0].1.len() == "2026-11-23T10:04:05.123Z".len() && starts[0].1.ends_with('Z'));
    assert!(stdout(&out).contains("runs: interleaved order, after 1 warm-up run of every point, in no figure.\n"));
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn a_loops_warm_up_run_lasts_until_its_rate_is_steady_or_warmup_max() {
    let env = TestEnv::new();
    let out = env.run(&["stat", "-j", "1", "--share", "private", "--warmup-runs", "1", "--warmup-max", "1.5s"]);
    assert_success(&out);
    let doc = env.results();
    let steady = doc.settings.warmup_until_steady.expect("the rule is recorded");
    assert_eq!((steady.max_s, steady.rule.block, steady.rule.tolerance), (1.5, 5, 0.02));
    let warmup = &doc.points[0].warmup_runs[0];
    let outcome = warmup.steady.expect("the warm-up says how it ended");
    // At least two blocks of five 100 ms windows, though --duration is 0.05 s.
    assert!(warmup.elapsed_s >= 0.999, "{}", warmup.elapsed_s);
    // Its timeline is the rule's windows, one sample per 100 ms, none before
    // its time; at most --warmup-max's 15 (a late sample moves the end, not the count).
    assert_eq!(warmup.timeline.interval_s, 0.1);
    let at = &warmup.timeline.at_s;
    assert!((10..=15).contains(&at.len()), "{at:?}");
    assert!(at.iter().enumerate().all(|(i, t)| *t >= 0.1 * (i + 1) as f64 - 1e-6), "{at:?}");
    let change = outcome.change_pct.expect("two blocks were compared");
    match outcome.reached {
        // Steady: the last two blocks (sliding by a window) agree.
        true => assert!(change.abs() <= 2.0, "{change} {at:?}"),
        false => assert!(change.abs() > 2.0 && warmup.elapsed_s >= 1.499 && at.len() == 15, "{outcome:?} {at:?}"),
    }
    // The measured run is still --duration long (not the warm-up's blocks),
    // and says nothing of steadiness.
    let run = &doc.points[0].runs[0];
    let samples = (0.05 / run.timeline.interval_s).round() as usize;
    assert!(run.elapsed_s >= 0.05 && run.timeline.at_s.len() == samples && run.steady.is_none(), "{run:?}");
    let text = stdout(&out);
    assert!(text.contains("; fixed-time loops warmed until steady (two 0.5 s blocks within 2%): "), "{text}");
    // Too short to compare two blocks: refused before anything runs.
    assert_one_line_error(
        &env.run(&["stat", "--warmup-runs", "1", "--warmup-max", "0.8s"]),
        "--warmup-max 0.8s is too short to tell a steady rate",
    );
}

#[test]
fn sequential_and_shuffled_orders() {
    let env = TestEnv::new();
    assert_success(
        &env.run(&[&TWO_POINTS[..], &["--warmup-runs", "1", "--warmup-max", "0", "--order", "sequential"]].concat()),
    );
    assert_eq!(positions(&env.results()), [(vec![1, 2, 3], vec![0]), (vec![5, 6, 7], vec![4])]);

    // Shuffled: every round holds every point once, and the seed repeats the order.
    let shuffled = |seed: &str| {
        let env = TestEnv::new();
        let args = ["stat", "-j", "1..6", "--share", "private", "-n", "4", "--order", "shuffled", "--order-seed", seed];
        assert_success(&env.run(&args));
        let doc = env.results();
        assert_eq!(doc.settings.order_seed, Some(seed.parse().unwrap()));
        positions(&doc).into_iter().map(|(runs, _)| runs).collect::<Vec<_>>()
    };
    let a = shuffled("11");
    assert_eq!(a, shuffled("11"));
    for round in 0..4 {
        let mut slots: Vec<usize> = a.iter().map(|runs| runs[round]).collect();
        slots.sort_unstable();
        assert_eq!(slots, (6 * round..6 * round + 6).collect::<Vec<_>>(), "round {round}: {a:?}");
    }
    let in_plan_order = (0..6).all(|p| a[p][0] == p);
    assert!(!in_plan_order || shuffled("12") != a, "shuffling changed nothing: {a:?}");
}

#[test]
fn until_ci_repeats_a_point_until_precise_or_the_cap() {
    let env = TestEnv::new();
    // A target no machine meets: every point takes the cap, and says so.
    let out = env.run(&["stat", "-j", "1,2", "--share", "private", "-n", "2", "--until-ci", "0.01", "--max-runs", "4"]);
    assert_success(&out);
    let doc = env.results();
    assert!(doc.points.iter().all(|p| p.runs.len() == 4 && p.complete));
    assert_eq!((doc.settings.until_ci_pct, doc.settings.max_runs), (Some(0.01), Some(4)));
    let text = stdout(&out);
    assert_eq!(text.matches("(4 runs: ±").count(), 2, "{text}");
    assert!(text.contains("%, not ±0.01)"), "{text}");
    // A target every point meets at once: -n runs, no more. A driver whose
    // figures are exact (99, 100, 101 in turn): a loop's runs beside a busy
    // machine once spread too far even for ±99% (a clean-clone CI run).
    let easy = TestEnv::new();
    let counter = easy.root.path().join("count");
    let cmd = format!(
        "n=$(cat '{0}' 2>/dev/null || echo 0); echo $((n + 1)) > '{0}'; echo \"rate: $((99 + n % 3))\"",
        counter.display()
    );
    let driver = ["command", "--shell", "--cmd", &cmd, "--metric", "rate: ([0-9]+)", "--higher-is-better", "-j", "1"];
    assert_success(&easy.run(&[&driver[..], &["-n", "5", "--until-ci", "5", "--max-runs", "30"]].concat()));
    assert!(easy.results().points.iter().all(|p| p.runs.len() == 5));
    assert_eq!(std::fs::read_to_string(&counter).unwrap().trim(), "5", "five runs of the driver, no more");
    // Bad values are refused before anything runs.
    assert_one_line_error(&env.run(&["stat", "--until-ci", "0"]), "--until-ci 0: give the half-width");
    assert_one_line_error(
        &env.run(&["stat", "--until-ci", "1e-300"]),
        "--until-ci 1e-300: no run-to-run noise is that small (the clock alone is coarser); use at least --until-ci 0.01",
    );
    assert_one_line_error(
        &env.run(&["stat", "-n", "5", "--until-ci", "2", "--max-runs", "3"]),
        "--max-runs 3 is below",
    );
}

#[test]
fn kept_filesystems_stay_across_interleaved_rounds_and_go_at_the_end() {
    if !needs_root("kept_filesystems_stay_across_interleaved_rounds_and_go_at_the_end") {
        return;
    }
    for fresh in ["point", "once"] {
        let env = TestEnv::new();
        let out = env.run(&[
            "creat-unlink",
            "-j",
            "1,2",
            "--share",
            "private",
            "-n",
            "2",
            "--fs",
            "ext4,tmpfs",
            "--fresh",
            fresh,
        ]);
        assert_success(&out);
        let doc = env.results();
        assert_eq!(doc.points.len(), 4);
        assert!(doc.points.iter().all(|p| p.complete && p.runs.len() == 2), "{fresh}");
        // Rounds: every point's first run before any second run, across both filesystems.
        let firsts: Vec<usize> = doc.points.iter().map(|p| p.runs[0].position.unwrap()).collect();
        assert_eq!(firsts, [0, 1, 2, 3], "{fresh}");
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(!mounts.contains(".fsscale-fs-"), "{fresh}: a made filesystem is still mounted");
    }
}
