//! Applying a `--variant` around each of its runs: its setup command before,
//! its teardown after, however the run ended.

use std::path::Path;

use anyhow::{anyhow, Result};

use super::signals;
use crate::exec::{self, CommandLine, Placeholders, RunOptions};
use crate::plan::Variant;

/// What applying a variant around a run left to report: the run's value,
/// and what the setup wrote to stderr though it exited 0.
#[derive(Debug)]
pub(super) struct Applied<T> {
    pub value: T,
    pub setup_stderr: Option<String>,
}

/// Runs `job` under `variant`: its setup in `dir` first (a failure fails the
/// run, naming the variant), its teardown after (a teardown's failure fails
/// a run that had not failed already). The teardown runs whenever the setup
/// was started, however it ended (failed, timed out, stopped): a setup may
/// change the system before it fails. `timeout` bounds each command; `stop`
/// (a signal arrived) stops the setup, never the teardown. `in_effect` is
/// told `true` before the setup starts and `false` once the teardown has
/// succeeded, so that a run killed in between says what may be left set.
pub(super) fn under<T>(
    variant: &Variant,
    dir: &Path,
    workers: usize,
    timeout: std::time::Duration,
    stop: &dyn Fn() -> bool,
    in_effect: &mut dyn FnMut(bool),
    job: impl FnOnce() -> Result<T>,
) -> Result<Applied<T>> {
    let run = |flag: &str, template: &str, stop: &dyn Fn() -> bool| -> Result<Option<String>> {
        if template.trim().is_empty() {
            return Ok(None);
        }
        let values =
            Placeholders { dir, worker: 0, workers, scratch: dir, tarball: None, variant: Some(&variant.name) };
        let line = CommandLine::build(template, true, &values).map_err(|e| anyhow!("{flag} {}: {e}", variant.name))?;
        let env = values.environment();
        let options =
            RunOptions { cwd: Some(dir), timeout: Some(timeout), capture_stdout: false, scan: None, env: &env, stop };
        let finished = exec::run(&line, &options).map_err(|e| match (e, signals::check()) {
            (exec::RunError::Stopped, Err(signal)) => anyhow::Error::new(signal),
            (e, _) => anyhow!("{flag} {}: {e}", variant.name),
        })?;
        Ok(Some(exec::tail(&finished.stderr, 3)).filter(|t| !t.is_empty()))
    };
    // A variant with no setup changes nothing to be left in effect.
    let sets = !variant.setup.trim().is_empty();
    if sets {
        in_effect(true);
    }
    let never = || false;
    let mut teardown = || -> Result<()> {
        variant.teardown.as_deref().map_or(Ok(None), |t| run("--variant-teardown", t, &never))?;
        if sets {
            in_effect(false);
        }
        Ok(())
    };
    let undo = |error: anyhow::Error, undone: Result<()>| match undone {
        Ok(()) => error,
        Err(undone) => error.context(format!("and then {undone:#}")),
    };
    let setup_stderr = match run("--variant", &variant.setup, stop) {
        Ok(stderr) => stderr,
        // The setup may have changed something before it failed: undo it.
        Err(error) => return Err(undo(error, teardown())),
    };
    let outcome = job();
    let undone = teardown();
    match (outcome, undone) {
        (Ok(value), Ok(())) => Ok(Applied { value, setup_stderr }),
        (Ok(_), Err(error)) => Err(error),
        (Err(error), undone) => Err(undo(error, undone)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(setup: &str, teardown: Option<&str>) -> Variant {
        Variant { name: "on".into(), setup: setup.into(), teardown: teardown.map(str::to_string), unprofiled: false }
    }

    const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

    /// `under` with every change of what is in effect kept, in order.
    fn applied<T: std::fmt::Debug>(
        v: &Variant,
        dir: &Path,
        timeout: std::time::Duration,
        stop: &dyn Fn() -> bool,
        job: impl FnOnce() -> Result<T>,
    ) -> (Result<Applied<T>>, Vec<bool>) {
        let mut marks = Vec::new();
        let outcome = under(v, dir, 1, timeout, stop, &mut |set| marks.push(set), job);
        (outcome, marks)
    }

    #[test]
    fn setup_runs_before_the_job_and_teardown_after_with_the_name_and_dir() {
        let dir = tempfile::tempdir().unwrap();
        let v = variant("echo \"$FSSCALE_VARIANT\" > {dir}/set", Some("rm {dir}/set; echo {variant} > {dir}/undone"));
        let (outcome, marks) =
            applied(&v, dir.path(), TIMEOUT, &|| false, || Ok(std::fs::read_to_string(dir.path().join("set"))?));
        let outcome = outcome.unwrap();
        assert_eq!(outcome.value, "on\n");
        assert_eq!(outcome.setup_stderr, None);
        assert_eq!(marks, [true, false], "in effect from before the setup until the teardown succeeded");
        assert!(!dir.path().join("set").exists());
        assert_eq!(std::fs::read_to_string(dir.path().join("undone")).unwrap(), "on\n");
    }

    #[test]
    fn a_setup_that_fails_or_times_out_after_changing_something_is_torn_down() {
        let dir = tempfile::tempdir().unwrap();
        let v = variant("touch {dir}/state; echo no such tunable >&2; exit 3", Some("rm {dir}/state"));
        let mut ran = false;
        let (outcome, marks) = applied(&v, dir.path(), TIMEOUT, &|| false, || {
            ran = true;
            Ok(())
        });
        assert_eq!(
            format!("{:#}", outcome.err().unwrap()),
            "--variant on: `touch \"${FSSCALE_DIR}\"/state; echo no such tunable >&2; exit 3` exited with status 3: \
             no such tunable"
        );
        assert!(!ran, "no run after a failed setup");
        assert!(!dir.path().join("state").exists(), "what the setup changed was undone");
        assert_eq!(marks, [true, false]);
        let slow = variant("touch {dir}/state; sleep 30", Some("rm {dir}/state"));
        let started = std::time::Instant::now();
        let (outcome, _) = applied(&slow, dir.path(), std::time::Duration::from_millis(300), &|| false, || Ok(()));
        assert!(format!("{:#}", outcome.err().unwrap()).contains("timed out"));
        assert!(!dir.path().join("state").exists(), "a timed-out setup is torn down too");
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }

    #[test]
    fn a_setups_stderr_is_returned_though_it_exited_0() {
        let dir = tempfile::tempdir().unwrap();
        let v = variant("echo 'sysctl: cannot stat vm/no_such_knob' >&2; echo set", None);
        let (outcome, _) = applied(&v, dir.path(), TIMEOUT, &|| false, || Ok(()));
        assert_eq!(outcome.unwrap().setup_stderr.as_deref(), Some("sysctl: cannot stat vm/no_such_knob"));
    }

    #[test]
    fn teardown_runs_after_a_failed_run_and_its_own_failure_fails_a_good_one() {
        let dir = tempfile::tempdir().unwrap();
        let v = variant("", Some("touch {dir}/undone"));
        let (outcome, _) =
            applied(&v, dir.path(), TIMEOUT, &|| false, || -> Result<()> { Err(anyhow!("the run failed")) });
        assert_eq!(format!("{:#}", outcome.err().unwrap()), "the run failed");
        assert!(dir.path().join("undone").exists());
        let failing = variant("true", Some("exit 4"));
        let (outcome, marks) = applied(&failing, dir.path(), TIMEOUT, &|| false, || Ok(()));
        assert_eq!(format!("{:#}", outcome.err().unwrap()), "--variant-teardown on: `exit 4` exited with status 4");
        assert_eq!(marks, [true], "a teardown that failed leaves the variant in effect");
    }

    #[test]
    fn a_stop_ends_the_setup_but_the_teardown_still_runs_to_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let v = variant("sleep 30", Some("sleep 0.2; touch {dir}/undone"));
        let mut ran = false;
        let started = std::time::Instant::now();
        let (outcome, _) = applied(&v, dir.path(), TIMEOUT, &|| true, || {
            ran = true;
            Ok(())
        });
        assert_eq!(format!("{:#}", outcome.err().unwrap()), "--variant on: stopped");
        assert!(!ran, "no run after a stopped setup");
        assert!(dir.path().join("undone").exists(), "the teardown ran to its end");
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "the setup was stopped, not waited for");
    }
}
