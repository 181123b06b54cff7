//! Terminal side of progress reporting on stderr: the plan's size and
//! estimated time, then one self-overwriting line on a terminal, or a line
//! every 30 s when stderr is a file or a pipe (a log); nothing with --quiet.

#[cfg(target_os = "linux")]
pub use progress::TerminalProgress;

/// The runner's progress (the measuring half: Linux only).
#[cfg(target_os = "linux")]
mod progress {
    use std::io::Write;
    use std::time::{Duration, Instant};

    use fsscale::plan::{PointSpec, Rate};
    use fsscale::report::format_rate;
    use fsscale::results::objective::Search;
    use fsscale::results::Point;
    use fsscale::runner::{human_duration, PlanSummary, Progress, RunStart};

    /// Overwrites the terminal's current line with `text`: the carriage
    /// return and erase-line are fsscale's own, written here as they are;
    /// `text` (a point's name, a workload's label) is escaped, so nothing
    /// in it can move the cursor or erase another line.
    fn rewrite_line(text: &str) {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{}", fsscale::escape::for_output(text));
        let _ = err.flush();
    }

    /// How often a log (stderr not a terminal) gets a progress line.
    const LOG_INTERVAL: Duration = Duration::from_secs(30);

    /// Where progress goes: a line rewritten in place, a line now and then, or nowhere.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Mode {
        Terminal,
        Log,
        Quiet,
    }

    pub struct TerminalProgress {
        mode: Mode,
        points: usize,
        runs_per_point: usize,
        /// The last run's figure and its unit.
        last_rate: Option<(f64, String)>,
        dirty: bool,
        /// When a log last got a progress line.
        logged: Option<Instant>,
        /// Whether this invocation has written the results file.
        pub saved: bool,
    }

    impl TerminalProgress {
        /// Progress on stderr: in place on a terminal, every 30 s otherwise; none when `quiet`.
        pub fn new(quiet: bool) -> TerminalProgress {
            let mode = match (quiet, std::io::IsTerminal::is_terminal(&std::io::stderr())) {
                (true, _) => Mode::Quiet,
                (false, true) => Mode::Terminal,
                (false, false) => Mode::Log,
            };
            TerminalProgress {
                mode,
                points: 0,
                runs_per_point: 0,
                last_rate: None,
                dirty: false,
                logged: None,
                saved: false,
            }
        }

        /// Clears the progress line so that what follows starts on a clean line.
        pub fn clear(&mut self) {
            if self.mode == Mode::Terminal && self.dirty {
                rewrite_line("");
                self.dirty = false;
            }
        }
    }

    /// "about 3 min 20 s left", or what is not known yet.
    fn left(eta_s: Option<f64>) -> String {
        match eta_s {
            Some(s) => format!("about {} left", human_duration(s)),
            None => "time left known once fixed work has run".to_string(),
        }
    }

    /// "[3/12] stat process private x1 on ext4 cold cache, run 2/5".
    fn describe(run: &RunStart<'_>, points: usize, runs_per_point: usize) -> String {
        let p = run.point;
        let on = run.filesystem.map(|f| format!(" on {f}")).unwrap_or_default();
        let cache = p.cache.map(|c| format!(" {c} cache")).unwrap_or_default();
        let variant = run.variant.map(|v| format!(" variant {v}")).unwrap_or_default();
        // Past -n (--until-ci), the count has no fixed end.
        let which = match (run.warmup, run.run < runs_per_point) {
            (true, _) => format!("warm-up run {}", run.run + 1),
            (false, true) => format!("run {}/{}", run.run + 1, runs_per_point),
            (false, false) => format!("run {}", run.run + 1),
        };
        format!(
            "[{:>width$}/{points}] {} {} {} x{}{on}{cache}{variant}, {which}",
            run.index + 1,
            p.workload,
            p.mode,
            p.share,
            p.workers,
            width = points.to_string().len()
        )
    }

    impl Progress for TerminalProgress {
        fn plan(&mut self, plan: &PlanSummary) {
            self.points = plan.points;
            self.runs_per_point = plan.runs_per_point;
            if self.mode == Mode::Quiet {
                return;
            }
            let warmups = match plan.warmups_per_point {
                0 => String::new(),
                1 => "1 warm-up and ".to_string(),
                k => format!("{k} warm-ups and "),
            };
            let more = match plan.max_runs {
                Some(max) if max > plan.runs_per_point => format!(", up to {max} until precise"),
                _ => String::new(),
            };
            let time = match (plan.eta_s, plan.eta_max_s) {
                (Some(s), Some(max)) if max > s * 1.05 => {
                    format!("about {} if precise soon, at most {}", human_duration(s), human_duration(max))
                }
                (Some(s), _) => format!("about {}", human_duration(s)),
                (None, _) => "fixed work is timed as it runs".to_string(),
            };
            let search = match plan.probes_per_point {
                Some(most) => format!(
                    "; --slo then probes each point at up to {most} rates, each a point of as many runs (its time comes on top)"
                ),
                None => String::new(),
            };
            self.clear();
            eprintln!(
                "fsscale: {} point{}, {} run{} ({warmups}{} run{} each{more}); {time}{search}",
                plan.points,
                if plan.points == 1 { "" } else { "s" },
                plan.total_runs(),
                if plan.total_runs() == 1 { "" } else { "s" },
                plan.runs_per_point,
                if plan.runs_per_point == 1 { "" } else { "s" },
            );
        }

        fn run_started(&mut self, run: &RunStart<'_>) {
            let points = self.points.max(run.index + 1);
            match self.mode {
                Mode::Quiet => {}
                Mode::Terminal => {
                    let last = self
                        .last_rate
                        .as_ref()
                        .map(|(r, unit)| format!("  last: {} {unit}", format_rate(*r)))
                        .unwrap_or_default();
                    rewrite_line(&format!(
                        "{}{last}  ({}/{} runs, {})",
                        describe(run, points, self.runs_per_point),
                        run.done,
                        run.total,
                        left(run.eta_s)
                    ));
                    self.dirty = true;
                }
                Mode::Log => {
                    if self.logged.is_some_and(|at| at.elapsed() < LOG_INTERVAL) {
                        return;
                    }
                    self.logged = Some(Instant::now());
                    eprintln!(
                        "fsscale: {}: {} of {} runs done, {}",
                        describe(run, points, self.runs_per_point),
                        run.done,
                        run.total,
                        left(run.eta_s)
                    );
                }
            }
        }

        fn run_finished(&mut self, point: &Point, warmup: bool) {
            let record = if warmup { point.warmup_runs.last() } else { point.runs.last() };
            self.last_rate = record.map(|r| (r.ops_per_s, point.unit()));
        }

        fn probing(&mut self, spec: &PointSpec, search: &Search) {
            if self.mode == Mode::Quiet {
                return;
            }
            let Some(next) = spec.rate else { return };
            let rate = |r: Option<Rate>| r.map_or("none".to_string(), |r| format!("{r}/s"));
            let stands = match search.probes {
                0 => format!("its closed loop did {}/s", format_rate(search.capacity)),
                _ => format!("met up to {}, missed at {}", rate(search.met), rate(search.missed)),
            };
            self.clear();
            eprintln!("fsscale: --slo: {} {} x{}: {stands}; probing {next}/s", spec.workload, spec.share, spec.workers);
        }

        fn warning(&mut self, text: &str) {
            self.clear();
            eprintln!("fsscale: warning: {text}");
        }

        fn saved(&mut self) {
            self.saved = true;
        }

        fn preparing(&mut self, what: &str) {
            match self.mode {
                Mode::Terminal => {
                    rewrite_line(&format!("{what}..."));
                    self.dirty = true;
                }
                Mode::Log => eprintln!("fsscale: {what}..."),
                Mode::Quiet => {}
            }
        }
    }
}

/// ministat's default plot width: 74, or on a terminal `$COLUMNS` (as `atoi`
/// reads it) or the window's width less 2.
pub fn ministat_default_width() -> i64 {
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return 74;
    }
    if let Some(columns) = std::env::var_os("COLUMNS").filter(|c| !c.is_empty()) {
        let text = columns.to_string_lossy();
        let digits: String = text.trim_start().chars().take_while(|c| c.is_ascii_digit()).collect();
        return digits.parse().unwrap_or(0);
    }
    match rustix::termios::tcgetwinsize(std::io::stdout()) {
        Ok(size) if size.ws_col > 0 => i64::from(size.ws_col) - 2,
        _ => 74,
    }
}
