//! Open loops (`--rate`): ops due at a rate, timed from when they were due
//! and from when they began, and points that cannot keep up marked.

use fsscale::plan::Rate;
use fsscale::results::{OpenLoop, ResultsFile};
use fsscale::vocab::Arrivals;

use crate::replay::TINY;
use crate::util::*;

fn rate(text: &str) -> Rate {
    Rate::parse(text).unwrap()
}

/// What holds of every open-loop run, however busy the machine: each op
/// timed three ways, its response no shorter than its service, and never
/// more ops than the schedule let it begin.
fn check_run(o: &OpenLoop, ops: u64, elapsed_s: f64, workers: usize, context: &str) {
    assert_eq!((o.service.count, o.lag.count), (o.response.count, o.response.count), "{context}: each op three ways");
    assert!(
        o.response.sum_ns >= o.service.sum_ns,
        "{context}: response {} < service {}",
        o.response.sum_ns,
        o.service.sum_ns
    );
    assert!(o.response.sum_ns >= o.lag.sum_ns, "{context}");
    assert!(o.response.max_ns >= o.service.max_ns, "{context}");
    // An op begins no earlier than it is due: the window holds at most the
    // rate's ops over it, those already due as it opened, and one per worker.
    let most = o.asked_ops_per_s * elapsed_s + o.backlog_at_start + workers as f64;
    assert!(ops as f64 <= most + 1e-6, "{context}: {ops} ops, at most {most} due");
}

#[test]
fn an_open_loop_keeps_to_its_schedule_and_times_each_op_from_when_it_was_due() {
    let env = TestEnv::new();
    let out = env.run(&[
        "stat",
        "--rate",
        "400,1k",
        "-j",
        "1,2",
        "--mode",
        "process,thread",
        "--share",
        "private",
        "-n",
        "2",
        "--duration",
        "0.1",
    ]);
    assert_success(&out);
    let doc = env.results();
    let settings = doc.settings.open_loop.as_ref().expect("the open loop's settings");
    assert_eq!(
        (settings.rates.clone(), settings.per_worker, settings.arrivals),
        (vec![rate("400"), rate("1k")], false, Arrivals::Even)
    );
    assert_eq!(settings.seed, None, "even arrivals draw nothing");
    assert_eq!(doc.points.len(), 8);
    for p in &doc.points {
        let asked = p.rate.expect("every point has its rate");
        assert!([rate("400"), rate("1k")].contains(&asked));
        assert_eq!(p.runs.len(), 2);
        for (i, r) in p.runs.iter().enumerate() {
            let context = format!("{} x{} at {asked}, run {i}", p.mode, p.workers);
            let o = r.open_loop.as_ref().unwrap_or_else(|| panic!("{context}: no open-loop record"));
            assert_eq!((o.asked_ops_per_s, o.arrivals), (asked.ops_per_s(), Arrivals::Even), "{context}");
            assert_eq!(r.latency, None, "{context}: the closed loop's histogram is not kept beside them");
            check_run(o, r.ops, r.elapsed_s, p.workers, &context);
        }
    }
    // Each run's ops in the window are timed by the workers that saw it open.
    let timed: u64 =
        doc.points.iter().flat_map(|p| &p.runs).map(|r| r.open_loop.as_ref().unwrap().response.count).sum();
    assert!(timed > 0, "no op timed in any window");
    let text = stdout(&out);
    let header = text.lines().find(|l| l.contains("asked")).unwrap_or_else(|| panic!("no open-loop table:\n{text}"));
    for column in ["asked", "ops/s", "resp p50", "resp p99", "resp p99.9", "svc p99", "lag p99"] {
        assert!(header.contains(column), "{column} in {header}");
    }
    assert!(text.contains("asked: the ops a second asked of all workers (--rate)"), "{text}");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn a_rate_beyond_the_machine_is_marked_behind_and_its_response_holds_the_queue() {
    let env = TestEnv::new();
    let out = env.run(&["stat", "--rate", "1G", "-j", "1", "-n", "2", "--duration", "0.05"]);
    assert_success(&out);
    let doc = env.results();
    let p = &doc.points[0];
    for r in &p.runs {
        let o = r.open_loop.as_ref().unwrap();
        assert!(o.behind, "a billion stats a second: {} achieved", r.ops_per_s);
        check_run(o, r.ops, r.elapsed_s, 1, "1G");
        // Every op after the first was due before the last one ended: the queue is in its response time.
        assert!(o.lag.count == 0 || o.lag.quantile(0.5) > 0, "{:?}", o.lag);
    }
    assert_eq!(p.behind_runs(), Some((2, 2)));
    let text = stdout(&out);
    let row = text.lines().find(|l| l.contains("!behind 2/2")).unwrap_or_else(|| panic!("not marked:\n{text}"));
    assert!(row.trim_start().starts_with('1'), "{row}");
    assert!(text.contains("!behind k/n: an open loop could not keep up with its rate"), "{text}");
    // Compared with another such run, it is never a clean figure: the noise says why.
    let first = env.root.path().join("first.json");
    std::fs::copy(&env.output, &first).unwrap();
    assert_success(&env.run(&["stat", "--rate", "1G", "-j", "1", "-n", "2", "--duration", "0.05"]));
    let compared = fsscale().arg("compare").arg(&first).arg(&env.output).args(["--format", "json"]).output().unwrap();
    assert_success(&compared);
    // (After whatever else a busy machine adds to the base's noise.)
    assert!(stdout(&compared).contains("behind its rate in 2 of 2 runs"), "{}", stdout(&compared));
    // Judged by the response p99 (the rate is the one asked), smaller better, the row named by its rate.
    let rows: serde_json::Value = serde_json::from_str(&stdout(&compared)).unwrap();
    let row = &rows[0]["rows"][0];
    assert_eq!((row["unit"].as_str(), row["higher_is_better"].as_bool()), (Some("µs p99 response"), Some(false)));
    assert_eq!(row["rate"].as_f64(), Some(1e9));
    let text = fsscale().arg("compare").arg(&first).arg(&env.output).output().unwrap();
    assert!(stdout(&text).contains("1 at 1G/s  process  private"), "{}", stdout(&text));
}

#[test]
fn per_worker_rates_grow_with_the_workers_and_poisson_arrivals_record_their_seed() {
    let env = TestEnv::new();
    let out = env.run(&[
        "stat",
        "--rate-per-worker",
        "300",
        "-j",
        "1,3",
        "--share",
        "private",
        "--arrivals",
        "poisson",
        "--order-seed",
        "77",
    ]);
    assert_success(&out);
    let doc = env.results();
    let rates: Vec<(usize, Option<Rate>)> = doc.points.iter().map(|p| (p.workers, p.rate)).collect();
    assert_eq!(rates, [(1, Some(rate("300"))), (3, Some(rate("900")))]);
    let settings = doc.settings.open_loop.as_ref().unwrap();
    assert_eq!((settings.per_worker, settings.arrivals, settings.seed), (true, Arrivals::Poisson, Some(77)));
    assert_eq!(doc.settings.order_seed, Some(77), "recorded where --like takes it again");
    for p in &doc.points {
        let o = p.runs[0].open_loop.as_ref().unwrap();
        assert_eq!((o.asked_ops_per_s, o.arrivals), (p.rate.unwrap().ops_per_s(), Arrivals::Poisson));
    }
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn replay_at_a_rate_keeps_its_operations_and_each_ops_response() {
    let env = TestEnv::new();
    let trace = env.root.path().join("tiny.load");
    std::fs::write(&trace, TINY).unwrap();
    let out = env.run(&["replay", "--trace", trace.to_str().unwrap(), "-j", "2", "--rate", "2k", "--duration", "0.1"]);
    assert_success(&out);
    let doc: ResultsFile = env.results();
    let r = &doc.points[0].runs[0];
    let o = r.open_loop.as_ref().expect("the open loop's record");
    check_run(o, r.ops, r.elapsed_s, 2, "replay");
    let kinds: u64 = r.replay_ops.as_ref().unwrap().values().map(|h| h.count).sum();
    assert_eq!(kinds, o.service.count, "each op in its kind's histogram and in the open loop's");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn a_rate_where_ops_cannot_be_paced_is_refused_in_one_line() {
    let env = TestEnv::new();
    assert_one_line_error(
        &env.run(&["untar", "--rate", "1k"]),
        "--rate: untar is fixed work, whose ops cannot be set at a rate; an open loop paces the fixed-time loops and replay",
    );
    assert_one_line_error(&env.run(&["stat", "--rate", "1k", "--latency"]), "leave out --latency");
    assert_one_line_error(&env.run(&["stat", "--arrivals", "poisson"]), "give --rate too");
    assert_one_line_error(&env.run(&["stat", "--rate", "fast"]), "--rate: 'fast' is not a rate");
    assert_one_line_error(
        &env.run(&["stat", "--rate-per-worker", "0"]),
        "--rate-per-worker: '0' is not a rate fsscale can ask for",
    );
    assert_one_line_error(&env.run(&["stat", "--rate", "50k..10k"]), "runs backwards");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn an_objective_search_bisects_below_each_closed_loop_and_says_the_rate_it_found() {
    use fsscale::results::objective::{search, searches, Verdict, MAX_PROBES};
    let env = TestEnv::new();
    let out = env.run(&["creat-unlink", "--share", "shared", "-j", "1,2", "--slo", "p99=200us", "-n", "2"]);
    assert_success(&out);
    let doc = env.results();
    let objectives = doc.settings.open_loop.as_ref().expect("the open loop's settings").objectives.clone();
    assert_eq!(objectives.iter().map(|o| o.to_string()).collect::<Vec<_>>(), ["p99=200us"]);
    let points: Vec<&fsscale::results::Point> = doc.points.iter().collect();
    let found = searches(&points, &objectives);
    assert_eq!(found.iter().map(|s| points[s.closed].workers).collect::<Vec<_>>(), [1, 2], "a search per point");
    let text = stdout(&out);
    for one in &found {
        // However fast the machine was, the probes are the bisection's, in the order it made them.
        let mut probes: Vec<usize> = one.probes.clone();
        probes.sort_unstable();
        assert!((1..=MAX_PROBES).contains(&probes.len()), "{} probes", probes.len());
        let verdicts: Vec<(Rate, Verdict)> = probes
            .iter()
            .map(|&i| (points[i].rate.unwrap(), fsscale::results::objective::verdict(&objectives, points[i]).unwrap()))
            .collect();
        for k in 0..verdicts.len() {
            assert_eq!(search(one.search.capacity, &verdicts[..k]).next, Some(verdicts[k].0), "probe {k}");
        }
        assert_eq!(one.search.next, None, "the search ran to its end");
        for &i in &probes {
            assert_eq!(points[i].runs.len(), 2, "each probe has its runs");
            assert!(points[i].runs.iter().all(|r| r.open_loop.is_some()), "each probe is an open loop");
        }
        let line = format!("  slo p99=200us x{} shared: ", points[one.closed].workers);
        assert!(text.contains(&line), "{line} in:\n{text}");
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("fsscale: --slo: creat-unlink shared x1: its closed loop did "), "{err}");
    assert!(err.contains("; --slo then probes each point at up to 12 rates"), "the plan says what may come: {err}");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn an_objective_search_is_refused_where_it_cannot_run_in_one_line() {
    let env = TestEnv::new();
    assert_one_line_error(
        &env.run(&["stat", "--slo", "p95=1ms"]),
        "--slo: 'p95' is not a quantile an objective bounds",
    );
    assert_one_line_error(&env.run(&["untar", "--slo", "p99=1ms"]), "--slo: untar is fixed work");
    assert_one_line_error(
        &env.run(&["stat", "--slo", "p99=1ms", "--variant", "a=true", "--variant", "b=true"]),
        "--slo searches each point on its own",
    );
    let both = env.run(&["stat", "--slo", "p99=1ms", "--rate", "1k"]);
    assert!(!both.status.success());
    assert!(String::from_utf8_lossy(&both.stderr).contains("cannot be used with"), "clap refuses the pair");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}
