//! `fsscale report` and `fsscale plot` on real results, and the report in a real browser.

use std::path::Path;

use crate::util::*;

/// Two real results files of the same plan (stat and creat-unlink at 1..4 workers), as two systems would give.
fn results(env: &TestEnv) -> (std::path::PathBuf, std::path::PathBuf) {
    let a = env.root.path().join("a.json");
    let b = env.root.path().join("b.json");
    let plan =
        ["stat", "creat-unlink", "-j", "1..4", "-n", "2", "--duration", "0.03", "--warmup", "0", "--share", "private"];
    run_each(env, &plan, &[&a, &b]);
    (a, b)
}

#[test]
fn report_holds_every_workload_chart_and_environment() {
    let env = TestEnv::new();
    let (a, b) = results(&env);
    let html_path = env.root.path().join("report.html");
    let out = fsscale().arg("report").arg(&a).arg(&b).arg("-o").arg(&html_path).output().unwrap();
    assert_success(&out);
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // Self-contained: nothing that would load a resource (the SVG namespace URI is only a name).
    for loader in ["<script", "<link", "<img", "src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!html.contains(loader), "the report loads something: {loader}");
    }
    for id in ["environment", "findings", "stat", "creat-unlink"] {
        assert!(html.contains(&format!("id=\"{id}\"")), "section {id}");
    }
    // Environment: one column per file, differences highlighted (the command lines differ).
    let env_table = &html[html.find("class=\"environment\"").unwrap()..];
    let env_table = &env_table[..env_table.find("</table>").unwrap()];
    assert!(env_table.contains(&a.display().to_string()) && env_table.contains(&b.display().to_string()));
    assert!(env_table.contains("class=\"diff\""));
    // Per workload: a throughput and an efficiency chart; the throughput chart has
    // 2 series (one per file) of 4 points each, so 8 markers.
    for workload in ["stat", "creat-unlink"] {
        let start = html.find(&format!("<h2 id=\"{workload}\">")).unwrap();
        let section = &html[start..];
        let section = &section[..section[4..].find("<h2").map_or(section.len(), |e| e + 4)];
        assert_eq!(section.matches("<svg").count(), 2, "{workload}: two charts");
        let scaling =
            &section[section.find("class=\"scaling\"").unwrap()..section.find("class=\"efficiency\"").unwrap()];
        assert_eq!(scaling.matches("<circle").count(), 8, "{workload}: 2 series x 4 points");
        assert!(section.contains("against"), "{workload}: a comparison table");
        assert!(section.contains("class=\"bar\""), "{workload}: CPU breakdown bars");
    }
    // Findings in words: 4 worker counts give every series a fit, and a regime where the fit is reliable.
    let findings = &html[html.find("id=\"findings\"").unwrap()..];
    let findings = &findings[..findings.find("<h2").unwrap()];
    let regimes = ["coherency-bound", "contention-bound", "near-linear"];
    assert_eq!(findings.matches("<li>").count(), 6, "4 series, and 2 comparison summaries:\n{findings}");
    // "× of 1 worker)" belongs to each series' peak statement only (a COLLAPSE flag also says "peak").
    assert_eq!(findings.matches("× of 1 worker)").count(), 4, "{findings}");
    let verdicts = regimes.iter().map(|r| findings.matches(r).count()).sum::<usize>()
        + findings.matches("no reliable USL fit: ").count();
    assert!(verdicts >= 4, "{findings}");
}

#[test]
fn plot_writes_svg_and_png() {
    let env = TestEnv::new();
    let (a, _) = results(&env);
    let svg = env.root.path().join("c.svg");
    assert_success(&fsscale().arg("plot").arg(&a).args(["--workload", "stat", "-o"]).arg(&svg).output().unwrap());
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.matches("<circle").count() == 4, "one series of 4 points");
    let png = env.root.path().join("c.png");
    let out = fsscale().arg("plot").arg(&a).args(["--workload", "stat", "-o"]).arg(&png).output().unwrap();
    if cfg!(feature = "png") {
        assert_success(&out);
        assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
    } else {
        // The default build: PNG is the `png` feature's (.ci/run builds with it).
        assert_one_line_error(&out, "built without PNG output (cargo feature `png`)");
        assert!(!png.exists(), "nothing written");
    }
    let out = fsscale().arg("plot").arg(&a).args(["--workload", "read", "-o"]).arg(&png).output().unwrap();
    assert_one_line_error(&out, "no results of read in");
    let out = fsscale().arg("plot").arg(&a).args(["--workload", "stat", "-o", "chart.gif"]).output().unwrap();
    assert_one_line_error(&out, "use a .svg or .png file name");
}

/// Loads `html` in headless Chromium: the screenshot, after asserting the
/// page logged no console error. `None` (said visibly) without Chromium.
pub(crate) fn load_in_chromium(env: &TestEnv, html: &Path) -> Option<Vec<u8>> {
    let Some(chromium) = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| std::process::Command::new(c).arg("--version").output().map(|o| o.status.success()).unwrap_or(false))
    else {
        prerequisite(false, "the report in a real browser", "no chromium (.ci/run installs Debian's chromium)");
        return None;
    };
    let shot = env.root.path().join("shot.png");
    let profile = env.root.path().join("profile");
    let out = std::process::Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        .args(["--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"])
        .args(["--enable-logging=stderr", "--v=0", "--window-size=1200,1600"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    let log = stderr(&out);
    // Console messages from the page are logged as "CONSOLE(...)" or "Uncaught ...".
    assert!(!log.contains("CONSOLE") && !log.contains("Uncaught"), "page errors:\n{log}");
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}):\n{log}"));
    assert_eq!(&png[1..4], b"PNG");
    Some(png)
}

#[test]
fn report_loads_in_headless_chromium_without_errors() {
    let env = TestEnv::new();
    let (a, b) = results(&env);
    let html = env.root.path().join("report.html");
    assert_success(&fsscale().arg("report").arg(&a).arg(&b).arg("-o").arg(&html).output().unwrap());
    let Some(png) = load_in_chromium(&env, &html) else { return };
    // Not blank: a blank white page compresses to a few kilobytes.
    assert!(png.len() > 30_000, "screenshot of {} bytes looks blank", png.len());
}

#[test]
fn a_compared_point_is_explained_with_a_differential_flame_graph_in_a_real_browser() {
    if !needs_root("the report's differential flame graph") {
        return;
    }
    let env = TestEnv::new();
    let out = env.run(&["creat-unlink", "-j", "2", "-n", "2", "--duration", "0.1", "--profile", "locks,cpu,offcpu"]);
    assert_success(&out);
    let html = env.root.path().join("report.html");
    let report = fsscale()
        .arg("report")
        .arg(&env.output)
        .args(["--between", "share=private,shared", "-o"])
        .arg(&html)
        .output()
        .unwrap();
    assert_success(&report);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<figcaption>creat-unlink process private→shared x2: "), "{page}");
    assert!(page.contains(" share=private, differential: widths are "), "{page}");
    assert!(page.contains("<pre class=\"why\">"), "{page}");
    // Which lock grew from private to shared directories depends on whether the two workers ran at once,
    // which a busy machine decides (beside a CI build neither waited on the directory's rwsem): that
    // finding is the renderer's unit test, on planted profiles. Here: the real profiles reach the page.
    let why = &page[page.find("<pre class=\"why\">").unwrap()..];
    let why = &why[..why.find("</pre>").unwrap()];
    for part in ["waiting on kernel locks: ", "asleep: ", "CPU, share of samples in the function itself"] {
        assert!(why.contains(part), "{part}: {why}");
    }
    assert!(page.contains("'s samples; red frames"), "the CPU samples' differential graph: {page}");
    // The graph of time asleep is drawn exactly when a worker of either side slept.
    let doc = env.results();
    let slept = doc
        .points
        .iter()
        .flat_map(|p| &p.runs)
        .any(|r| r.sections.offcpu.as_ref().is_some_and(|o| !o.folded.is_empty()));
    assert_eq!(page.contains("'s time asleep; red frames"), slept, "{page}");
    load_in_chromium(&env, &html);
}

#[test]
fn the_report_shows_where_workers_waited_and_a_flame_graph() {
    if !needs_root("the report's profile sections") {
        return;
    }
    let env = TestEnv::new();
    let out =
        env.run(&["creat-unlink", "-j", "1,2", "--share", "shared", "--duration", "0.2", "--profile", "locks,cpu"]);
    assert_success(&out);
    let html = env.root.path().join("report.html");
    assert_success(&fsscale().arg("report").arg(&env.output).arg("-o").arg(&html).output().unwrap());
    let page = std::fs::read_to_string(&html).unwrap();
    let section = section(&page, "creat-unlink");
    assert!(section.contains("<h3>Why: where creat-unlink's workers waited, slept and spent CPU</h3>"));
    assert!(section.contains("<figure class=\"locks\"><svg"), "stacked wait bars");
    assert!(section.contains("<figure class=\"flame\"><svg"), "a flame graph");
    assert!(section.contains("<title>do_syscall_64 ("), "kernel frames in the flame graph");
    // The findings name the dominant site of the largest point, when it
    // took a notable share of the workers' time (on a busy machine it may not).
    let findings = &page[page.find("<h2 id=\"findings\">").unwrap()..page.find("</ul>").unwrap()];
    let doc = env.results();
    let largest = doc.points.iter().find(|p| p.workers == 2).expect("the 2-worker point");
    // Out of CPUs comes first where the workers waited longer for a CPU than on the locks.
    let cpus = fsscale::report::profile::out_of_cpus(largest, doc.host.usable_cpus);
    match (fsscale::report::profile::dominant_site(largest), cpus) {
        (Some(site), cpus) => {
            let site = fsscale::report::markup::Html::text(&site);
            let finding = match cpus {
                Some(cpus) => format!("creat-unlink process/shared</b>: {cpus}; then {}", site.as_str()),
                None => format!("creat-unlink process/shared</b>: {}", site.as_str()),
            };
            assert!(findings.contains(&finding), "{finding}\n{findings}");
        }
        (None, _) => assert!(!findings.contains("of worker time waiting on "), "{findings}"),
    }
    load_in_chromium(&env, &html);
}

/// The `<h2>` section of `workload` in a report.
fn section<'a>(html: &'a str, workload: &str) -> &'a str {
    let start = html.find(&format!("<h2 id=\"{workload}\">")).unwrap_or_else(|| panic!("no {workload} section"));
    let section = &html[start..];
    &section[..section[4..].find("<h2").map_or(section.len(), |e| e + 4)]
}

#[test]
fn the_report_shows_what_ran_and_only_the_columns_a_workload_has() {
    let env = TestEnv::new();
    let timed = env.root.path().join("timed.json");
    let fixed = env.root.path().join("fixed.json");
    let driver = env.root.path().join("driver.json");
    // Warmed until steady (run_each's default is not to): the environment says how long that took.
    // At most 1 s: room for the two blocks a steady rate needs, not the 5 s of an unsteady one.
    let stat = ["stat", "-j", "1,2", "-n", "2", "--duration", "0.03", "--warmup", "0.01", "--warmup-max", "1s"];
    run_each(&env, &stat, &[&timed]);
    run_each(&env, &["untar", "-j", "1,2", "-n", "2", "--scale", "0.002", "--share", "private"], &[&fixed]);
    // A driver whose figure grows as the square of its clients: superlinear.
    let square =
        ["command", "--shell", "--cmd", "echo tps=$(({workers} * {workers} * 10))", "--metric", "tps=([0-9]+)"];
    run_each(
        &env,
        &[&square[..], &["--metric-name", "tps", "--higher-is-better", "-j", "1,2,4", "-n", "2"]].concat(),
        &[&driver],
    );
    let report = |file: &std::path::Path| {
        let html_path = env.root.path().join("r.html");
        assert_success(&fsscale().arg("report").arg(file).arg("-o").arg(&html_path).output().unwrap());
        std::fs::read_to_string(&html_path).unwrap()
    };

    let html = report(&timed);
    // Its warm-up runs lasted until steady, and the environment table says how long they took.
    let each_run = "<th>each run</th><td>stat: a 0.03 s window after 0.01 s of warm-up; fixed-time loops warmed \
                    until steady (two 0.5 s blocks within 2%): ";
    assert!(html.contains(each_run), "{html}");
    assert!(html.contains("<th>runs per point</th><td>2</td>"));
    let stat = section(&html, "stat");
    assert!(stat.contains("the median of each point's runs, as in the tables"), "the chart says what it draws");
    assert!(stat.contains("ops/s, median of runs"), "and so does its axis");
    assert!(stat.contains("<th>per worker, middle run: ops"), "a loop has per-worker counts");
    assert!(!stat.contains("device written"), "a directory has no device of its own");

    let html = report(&fixed);
    let each = &html[html.find("<th>each run</th>").unwrap()..];
    let each = &each[..each.find("</tr>").unwrap()];
    assert!(each.contains("untar: every worker extracts the archive once, timed to the last one's end ("), "{each}");
    assert!(!each.contains("window"), "fixed work has no window: {each}");
    assert!(section(&html, "untar").contains("<th>per worker, middle run: ops, or completion"));

    let html = report(&driver);
    assert!(html.contains("command: one run of the driver command, its figure read from its output ("), "{html}");
    let command = section(&html, "command");
    assert!(!command.contains("<th>per worker"), "a driver has no per-worker figures: {command}");
    assert!(command.contains("<h3>CPU</h3>"));
    // 1, 2, 4 clients at 10, 40, 160 tps: 200% and 400% efficiency, said and explained.
    assert!(command.contains("Above 100% (superlinear)"), "{command}");
    assert!(command.contains("workers (log₂ scale)"), "1, 2, 4 are doublings");
    // ministat gets the same per-run figures the chart's medians come from.
    let text =
        stdout(&fsscale().args(["export"]).arg(&driver).args(["--workload", "command", "-j", "4"]).output().unwrap());
    assert_eq!(text.lines().skip(1).collect::<Vec<_>>(), ["160", "160"]);
}

/// Markup that runs script if it reaches a page unescaped.
const PAYLOAD: &str = "\"'><img src=x onerror=console.error('xss')><script>console.error('xss')</script>";

#[test]
fn no_string_of_a_results_file_can_run_script_in_the_report() {
    let env = TestEnv::new();
    let (a, _) = results(&env);
    // A driver's metric name and unit, the strings most likely to be crafted.
    let driver = env.root.path().join("driver.json");
    let metric = format!("--metric-name={PAYLOAD}");
    run_each(
        &env,
        &["command", "--cmd", "echo 5", "--metric", "^(\\d+)", &metric, "-j", "1,2", "-n", "2", "--duration", "0.03"],
        &[&driver],
    );
    let mut poisoned = 0;
    for file in [&a, &driver] {
        let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let mut paths = Vec::new();
        collect_strings(&doc, &mut Vec::new(), &mut paths);
        for path in paths {
            let slot = path.iter().fold(&mut doc, |v, k| match v {
                serde_json::Value::Array(items) => &mut items[k.parse::<usize>().unwrap()],
                other => &mut other[k.as_str()],
            });
            let old = std::mem::replace(slot, serde_json::Value::String(PAYLOAD.into()));
            std::fs::write(file, serde_json::to_string(&doc).unwrap()).unwrap();
            if fsscale::results::ResultsFile::load(file).is_ok() {
                poisoned += 1;
                continue;
            }
            let slot = path.iter().fold(&mut doc, |v, k| match v {
                serde_json::Value::Array(items) => &mut items[k.parse::<usize>().unwrap()],
                other => &mut other[k.as_str()],
            });
            *slot = old;
        }
        std::fs::write(file, serde_json::to_string(&doc).unwrap()).unwrap();
    }
    assert!(poisoned > 40, "only {poisoned} strings could be poisoned");
    let html = env.root.path().join("report.html");
    assert_success(&fsscale().arg("report").arg(&a).arg(&driver).arg("-o").arg(&html).output().unwrap());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("&lt;img src=x onerror=console.error('xss')&gt;"), "the payload is shown as text");
    for tag in ["<img", "<script", "onerror=console.error('xss')>"] {
        assert!(!page.contains(tag), "a payload reached the page as markup: {tag}");
    }
    // And a real browser runs nothing (a console.error would fail it).
    load_in_chromium(&env, &html);
}

/// The paths (object keys and array indices) of every string in `value`.
fn collect_strings(value: &serde_json::Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match value {
        serde_json::Value::String(_) => out.push(path.clone()),
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                collect_strings(item, path, out);
                path.pop();
            }
        }
        serde_json::Value::Object(map) => {
            for (key, item) in map {
                path.push(key.clone());
                collect_strings(item, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

#[test]
fn csv_export_cannot_carry_a_formula_into_a_spreadsheet() {
    let env = TestEnv::new();
    let driver = env.root.path().join("driver.json");
    let args = ["command", "--cmd", "echo 5", "--metric", "^(\\d+)", "--metric-name=@SUM(1+1)*cmd", "-j", "1"];
    run_each(&env, &[&args[..], &["-n", "1", "--duration", "0.03"]].concat(), &[&driver]);
    let out = fsscale().arg("export").arg(&driver).args(["--format", "csv"]).output().unwrap();
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains(",'@SUM(1+1)*cmd"), "{text}");
    assert!(!text.contains(",@SUM"), "{text}");
}
