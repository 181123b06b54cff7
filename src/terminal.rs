//! Terminal side of progress reporting: one self-overwriting line on
//! stderr when stderr is a terminal, nothing otherwise.

#[cfg(target_os = "linux")]
pub use progress::TerminalProgress;

/// The runner's progress (the measuring half: Linux only).
#[cfg(target_os = "linux")]
mod progress {
    use std::io::Write;

    use fsscale::plan::PointSpec;
    use fsscale::report::format_rate;
    use fsscale::results::Point;
    use fsscale::runner::Progress;

    pub struct TerminalProgress {
        enabled: bool,
        points: usize,
        runs: usize,
        /// The last run's figure and its unit.
        last_rate: Option<(f64, String)>,
        dirty: bool,
        /// Whether this invocation has written the results file.
        pub saved: bool,
    }

    impl TerminalProgress {
        pub fn new() -> TerminalProgress {
            let enabled = std::io::IsTerminal::is_terminal(&std::io::stderr());
            TerminalProgress { enabled, points: 0, runs: 0, last_rate: None, dirty: false, saved: false }
        }

        /// Clears the progress line so that what follows starts on a clean line.
        pub fn clear(&mut self) {
            if self.enabled && self.dirty {
                eprint!("\r\x1b[K");
                let _ = std::io::stderr().flush();
                self.dirty = false;
            }
        }
    }

    impl Progress for TerminalProgress {
        fn plan(&mut self, points: usize, runs: usize) {
            self.points = points;
            self.runs = runs;
        }

        fn run_started(&mut self, point: &PointSpec, index: usize, run: usize, warmup: bool) {
            if !self.enabled {
                return;
            }
            let last = self
                .last_rate
                .as_ref()
                .map(|(r, unit)| format!("  last: {} {unit}", format_rate(*r)))
                .unwrap_or_default();
            let cache = point.cache.map(|c| format!(" {c} cache")).unwrap_or_default();
            // Past -n (--until-ci), the count has no fixed end.
            let which = match (warmup, run < self.runs) {
                (true, _) => format!("warm-up run {}", run + 1),
                (false, true) => format!("run {}/{}", run + 1, self.runs),
                (false, false) => format!("run {}", run + 1),
            };
            eprint!(
                "\r\x1b[K[{:>width$}/{}] {} {} {} x{}{cache}  {which}{last}",
                index + 1,
                self.points,
                point.workload,
                point.mode,
                point.share,
                point.workers,
                width = self.points.to_string().len()
            );
            let _ = std::io::stderr().flush();
            self.dirty = true;
        }

        fn run_finished(&mut self, point: &Point, warmup: bool) {
            let record = if warmup { point.warmup_runs.last() } else { point.runs.last() };
            self.last_rate = record.map(|r| (r.ops_per_s, point.unit()));
        }

        fn warning(&mut self, text: &str) {
            self.clear();
            eprintln!("fsscale: warning: {text}");
        }

        fn saved(&mut self) {
            self.saved = true;
        }

        fn preparing(&mut self, what: &str) {
            if self.enabled {
                eprint!("\r\x1b[K{what}...");
                let _ = std::io::stderr().flush();
                self.dirty = true;
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
    // SAFETY: winsize is plain data; TIOCGWINSZ fills it.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer for this ioctl.
    if unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut size) } != -1 && size.ws_col > 0 {
        return i64::from(size.ws_col) - 2;
    }
    74
}
