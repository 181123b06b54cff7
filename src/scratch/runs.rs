//! Which directories runs make scratch directories in, so that `fsscale
//! cleanup` can list what a killed run left there without being told
//! where to look. Each run holds an entry, created exclusively and
//! `flock`ed for its lifetime (liveness never depends on a PID), in a
//! state directory of the user's own: /run/fsscale for root, else
//! `$XDG_RUNTIME_DIR/fsscale` (no entry where neither exists: `cleanup
//! --scratch DIR` still finds the leftovers).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{lockfile, sys};

const PREFIX: &str = ".fsscale-run-";

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct RunEntry {
    pid: u32,
    /// Where the run makes scratch directories (`--dir`), absolute.
    dirs: Vec<PathBuf>,
    /// Its results file, absolute: what it says a killed run left set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    results: Option<PathBuf>,
}

/// A run that is gone, as its entry recorded it.
#[derive(Debug)]
pub struct DeadRun {
    /// The entry itself, for [`forget`].
    pub entry: PathBuf,
    /// Where it made scratch directories.
    pub dirs: Vec<PathBuf>,
    /// Its results file.
    pub results: Option<PathBuf>,
}

/// A live run's entry; removed when dropped.
pub struct RunRegistration {
    path: PathBuf,
    _lock: File,
}

fn state_dir() -> Option<PathBuf> {
    if sys::euid() == 0 {
        return Some(PathBuf::from(crate::fs::STATE_DIR));
    }
    std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()).map(|d| PathBuf::from(d).join("fsscale"))
}

impl RunRegistration {
    /// Registers a run that makes scratch directories in `dirs` and writes
    /// `results`; `None` where there is no state directory to register in.
    pub fn create(dirs: &[PathBuf], results: &Path) -> Option<RunRegistration> {
        let state = state_dir()?;
        sys::ensure_private_dir(&state, "state directory").ok()?;
        let path = state.join(format!("{PREFIX}{}-{}.json", std::process::id(), sys::random_hex(4)));
        let mut file = lockfile::create_locked(crate::sys::CWD, &sys::cstring(&path).ok()?, 0o600).ok()?;
        let dirs = dirs.iter().filter_map(|d| std::fs::canonicalize(d).ok()).collect();
        let results = std::path::absolute(results).ok();
        let entry = RunEntry { pid: std::process::id(), dirs, results };
        if file.write_all(serde_json::to_string(&entry).expect("entry serializes").as_bytes()).is_err() {
            let _ = std::fs::remove_file(&path);
            return None;
        }
        Some(RunRegistration { path, _lock: file })
    }
}

impl Drop for RunRegistration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Runs that are gone (a live run's entry is locked and skipped).
pub fn dead_runs() -> Vec<DeadRun> {
    let Some(state) = state_dir() else { return Vec::new() };
    let Ok(listing) = std::fs::read_dir(&state) else { return Vec::new() };
    let mut dead = Vec::new();
    for dirent in listing.flatten() {
        if !dirent.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = dirent.path();
        let Ok(cpath) = sys::cstring(&path) else { continue };
        let Ok(Some(file)) = lockfile::lock_if_unheld(crate::sys::CWD, &cpath) else { continue };
        let entry: Option<RunEntry> = std::io::read_to_string(&file).ok().and_then(|t| serde_json::from_str(&t).ok());
        let (dirs, results) = entry.map(|e| (e.dirs, e.results)).unwrap_or_default();
        dead.push(DeadRun { entry: path, dirs, results });
    }
    dead
}

/// Forgets a dead run's entry (once nothing it left remains).
pub fn forget(entry: &Path) {
    let _ = std::fs::remove_file(entry);
}
