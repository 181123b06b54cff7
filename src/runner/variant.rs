//! Applying a `--variant` around each of its runs: its setup command before,
//! its teardown after, however the run ended.

use std::path::Path;

use anyhow::{anyhow, Result};

use super::signals;
use crate::exec::{self, CommandLine, Placeholders, RunOptions};
use crate::plan::Variant;

/// Runs `job` under `variant`: its setup in `dir` first (a failure fails the
/// run, naming the variant), its teardown after (a teardown's failure fails
/// a run that had not failed already). `timeout` bounds each command; `stop`
/// (a signal arrived) stops the setup, never the teardown: what a setup
/// changed on the system is put back after Ctrl-C too, the setup's own
/// interruption included.
pub(super) fn under<T>(
    variant: &Variant,
    dir: &Path,
    workers: usize,
    timeout: std::time::Duration,
    stop: &dyn Fn() -> bool,
    job: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let run = |flag: &str, template: &str, stop: &dyn Fn() -> bool| -> Result<()> {
        if template.trim().is_empty() {
            return Ok(());
        }
        let values =
            Placeholders { dir, worker: 0, workers, scratch: dir, tarball: None, variant: Some(&variant.name) };
        let line = CommandLine::build(template, true, &values).map_err(|e| anyhow!("{flag} {}: {e}", variant.name))?;
        let env = values.environment();
        let options =
            RunOptions { cwd: Some(dir), timeout: Some(timeout), capture_stdout: false, scan: None, env: &env, stop };
        exec::run(&line, &options).map(drop).map_err(|e| match (e, signals::check()) {
            (exec::RunError::Stopped, Err(signal)) => anyhow::Error::new(signal),
            (e, _) => anyhow!("{flag} {}: {e}", variant.name),
        })
    };
    let never = || false;
    let teardown = || variant.teardown.as_deref().map_or(Ok(()), |t| run("--variant-teardown", t, &never));
    match run("--variant", &variant.setup, stop) {
        Ok(()) => {}
        // Stopped part-way, the setup may have changed something: undo it.
        Err(error) if stop() => {
            return Err(match teardown() {
                Ok(()) => error,
                Err(undone) => error.context(format!("and then {undone:#}")),
            });
        }
        Err(error) => return Err(error),
    }
    let outcome = job();
    let undone = teardown();
    match (outcome, undone) {
        (Ok(value), Ok(())) => Ok(value),
        (Ok(_), Err(error)) => Err(error),
        (Err(error), Ok(())) => Err(error),
        (Err(error), Err(undone)) => Err(error.context(format!("and then {undone:#}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(setup: &str, teardown: Option<&str>) -> Variant {
        Variant { name: "on".into(), setup: setup.into(), teardown: teardown.map(str::to_string) }
    }

    const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

    #[test]
    fn setup_runs_before_the_job_and_teardown_after_with_the_name_and_dir() {
        let dir = tempfile::tempdir().unwrap();
        let v = variant("echo \"$FSSCALE_VARIANT\" > {dir}/set", Some("rm {dir}/set; echo {variant} > {dir}/undone"));
        let seen =
            under(&v, dir.path(), 2, TIMEOUT, &|| false, || Ok(std::fs::read_to_string(dir.path().join("set"))?))
                .unwrap();
        assert_eq!(seen, "on\n");
        assert!(!dir.path().join("set").exists());
        assert_eq!(std::fs::read_to_string(dir.path().join("undone")).unwrap(), "on\n");
    }

    #[test]
    fn a_failing_setup_fails_the_run_before_it_starts_and_names_the_variant() {
        let dir = tempfile::tempdir().unwrap();
        let v = variant("echo no such tunable >&2; exit 3", Some("touch {dir}/undone"));
        let mut ran = false;
        let error = under(&v, dir.path(), 1, TIMEOUT, &|| false, || {
            ran = true;
            Ok(())
        })
        .unwrap_err();
        assert_eq!(
            format!("{error:#}"),
            "--variant on: `echo no such tunable >&2; exit 3` exited with status 3: no such tunable"
        );
        assert!(!ran && !dir.path().join("undone").exists(), "nothing to undo when nothing was set");
    }

    #[test]
    fn teardown_runs_after_a_failed_run_and_its_own_failure_fails_a_good_one() {
        let dir = tempfile::tempdir().unwrap();
        let v = variant("", Some("touch {dir}/undone"));
        let error = under(&v, dir.path(), 1, TIMEOUT, &|| false, || -> Result<()> { Err(anyhow!("the run failed")) })
            .unwrap_err();
        assert_eq!(format!("{error:#}"), "the run failed");
        assert!(dir.path().join("undone").exists());
        let failing = variant("true", Some("exit 4"));
        let error = under(&failing, dir.path(), 1, TIMEOUT, &|| false, || Ok(())).unwrap_err();
        assert_eq!(format!("{error:#}"), "--variant-teardown on: `exit 4` exited with status 4");
    }

    #[test]
    fn a_stop_ends_the_setup_but_the_teardown_still_runs_to_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let v = variant("sleep 30", Some("sleep 0.2; touch {dir}/undone"));
        let mut ran = false;
        let started = std::time::Instant::now();
        let error = under(&v, dir.path(), 1, TIMEOUT, &|| true, || {
            ran = true;
            Ok(())
        })
        .unwrap_err();
        assert_eq!(format!("{error:#}"), "--variant on: stopped");
        assert!(!ran, "no run after a stopped setup");
        assert!(dir.path().join("undone").exists(), "the teardown ran to its end");
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "the setup was stopped, not waited for");
    }
}
