//! Every instrument in the registry, through run → results → report →
//! compare with the real binary: a new instrument is tested here by being
//! registered, and a registered one that a layer forgets fails here.

use fsscale::instruments::Instrument;
use fsscale::results::{Point, ResultsFile};
use fsscale::vocab::Choice;

use crate::util::*;

/// How `instrument` is asked for on the command line, and how compare names it.
fn asked(instrument: Instrument) -> (Vec<String>, String) {
    match instrument.flag() {
        Some(flag) => (vec![flag.to_string()], flag.to_string()),
        None => (vec!["--profile".into(), instrument.name().into()], format!("--profile {instrument}")),
    }
}

fn series_title(point: &Point) -> String {
    format!("{} {}/{}", point.workload, point.mode, point.share)
}

/// What the results say of `instrument`: it was on, alone, and every run recorded its section.
fn assert_recorded(doc: &ResultsFile, instrument: Instrument) {
    assert_eq!(doc.settings.instruments.on.iter().collect::<Vec<_>>(), [instrument]);
    for point in &doc.points {
        for run in &point.runs {
            assert!(
                instrument.section().recorded(run),
                "{instrument}: a run of {} without its section",
                series_title(point)
            );
        }
    }
}

/// The run's own tables say what the library's section says of its results.
fn assert_explained(doc: &ResultsFile, instrument: Instrument, text: &str) {
    let mut explained = false;
    for point in &doc.points {
        let tables = fsscale::report::profile::explain(point);
        assert!(text.contains(&tables), "{instrument}: the tables of {}:\n{tables}\nin:\n{text}", series_title(point));
        explained |= !tables.is_empty();
    }
    if explained {
        assert!(text.contains(instrument.section().legend()), "{instrument}'s legend: {text}");
    }
    if let Some(finding) = instrument.section().finding(doc) {
        assert!(text.contains(&finding), "{instrument}'s finding {finding:?}: {text}");
    }
}

/// The HTML report draws what the section draws of each series.
fn assert_drawn(doc: &ResultsFile, instrument: Instrument, html: &str) {
    let widest = fsscale::report::profile::widest_wait_share(&doc.points);
    for point in &doc.points {
        let drawn = instrument.section().html_series(&[point], &series_title(point), widest).into_string();
        assert!(html.contains(&drawn), "{instrument}: the report lacks its view of {}:\n{drawn}", series_title(point));
    }
}

#[test]
fn every_registered_instrument_goes_through_run_results_report_and_compare() {
    let test = "every_registered_instrument_goes_through_run_results_report_and_compare";
    if !needs_root(test) {
        return;
    }
    let env = TestEnv::new();
    let args = ["stat", "-j", "1", "--share", "private,shared", "--duration", "0.1", "--explain-all"];
    let base = env.root.path().join("base.json");
    assert_success(&env.run(&args));
    std::fs::rename(&env.output, &base).unwrap();
    for &instrument in Instrument::ALL {
        let (flags, named) = asked(instrument);
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let out = env.run(&[&args[..], &flags].concat());
        assert_success(&out);
        let file = env.root.path().join(format!("{instrument}.json"));
        std::fs::rename(&env.output, &file).unwrap();
        let doc = ResultsFile::load(&file).unwrap();
        assert_recorded(&doc, instrument);
        assert_explained(&doc, instrument, &stdout(&out));
        let html_path = env.root.path().join(format!("{instrument}.html"));
        let report = fsscale().arg("report").arg(&file).arg("-o").arg(&html_path).output().unwrap();
        assert_success(&report);
        assert_drawn(&doc, instrument, &std::fs::read_to_string(&html_path).unwrap());
        // compare names the instrument as what differs from a run without it.
        let compared = fsscale().arg("compare").arg(&base).arg(&file).output().unwrap();
        assert_success(&compared);
        assert!(
            stdout(&compared).lines().any(|l| l.starts_with("differs: instruments: none → ") && l.contains(&named)),
            "{instrument}: {}",
            stdout(&compared)
        );
        // Against itself, compare attributes each point where the instrument can.
        let json = fsscale().args(["compare", "--format", "json"]).arg(&file).arg(&file).output().unwrap();
        assert_success(&json);
        let comparisons: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
        let rows = comparisons[0]["rows"].as_array().expect("rows");
        assert_eq!(rows.len(), doc.points.len());
        for (row, point) in rows.iter().zip(&doc.points) {
            let attributes = fsscale::compare::attribute(point, point).is_some();
            assert_eq!(!row["attribution"].is_null(), attributes, "{instrument} at {}: {row}", series_title(point));
        }
    }
}
