//! Keeping a results document on disk as a run goes, at a cost that grows
//! with the run rather than with its square.
//!
//! Rewriting the whole document after each of 1024 runs writes its size
//! 1024 times (3.9 GB for a 7.9 MB file). Instead every finished run is
//! appended, as one JSON line, to a journal beside the document
//! (`FILE.journal`); the document is rewritten whole only when the journal
//! has grown as large as it (so rewriting costs at most as much as
//! appending), and at the end, when the journal goes. Reading the document
//! folds in a journal found beside it. Lines name their point and run
//! index, so folding is idempotent: a crash between rewriting the document
//! and removing the journal never counts a run twice.

use std::fs::File;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};

use super::{Point, ResultsFile, RunRecord};
use crate::fs::FsRecord;
use crate::sys;

/// One line of the journal.
#[derive(Serialize, Deserialize, Debug)]
#[serde(rename_all = "snake_case")]
enum Line {
    /// A point began (with no runs yet).
    Point { index: usize, point: Box<Point> },
    /// A run of point `point` finished.
    Run { point: usize, record: Box<RunRecord>, filesystem: Option<FsRecord> },
    /// Every run of point `point` finished.
    Complete { point: usize },
}

/// The journal's path beside `document`.
pub fn journal_path(document: &Path) -> PathBuf {
    let mut name = document.as_os_str().to_owned();
    name.push(".journal");
    PathBuf::from(name)
}

/// Writes a document as a run progresses.
pub struct Saver {
    path: PathBuf,
    journal: Option<File>,
    journal_bytes: u64,
    document_bytes: u64,
    /// How many whole-document writes (for tests and the docs' figures).
    pub rewrites: u64,
}

impl Saver {
    pub fn new(path: &Path) -> Saver {
        Saver { path: path.to_path_buf(), journal: None, journal_bytes: 0, document_bytes: 0, rewrites: 0 }
    }

    /// Writes the whole document and starts an empty journal.
    pub fn save(&mut self, doc: &ResultsFile) -> Result<()> {
        let text = doc.to_json();
        crate::atomic_file::write(&self.path, text.as_bytes())?;
        self.rewrites += 1;
        self.document_bytes = text.len() as u64;
        self.journal = None;
        self.journal_bytes = 0;
        match std::fs::remove_file(journal_path(&self.path)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(anyhow!("removing {}: {e}", journal_path(&self.path).display()))
            }
            _ => Ok(()),
        }
    }

    /// Notes that the document's last point began.
    pub fn point_started(&mut self, doc: &ResultsFile) -> Result<()> {
        let index = doc.points.len() - 1;
        let mut point = doc.points[index].clone();
        point.runs.clear();
        point.summary = None;
        self.append(doc, &Line::Point { index, point: Box::new(point) })
    }

    /// Notes the last run of the document's last point.
    pub fn run_finished(&mut self, doc: &ResultsFile) -> Result<()> {
        let index = doc.points.len() - 1;
        let point = &doc.points[index];
        let record = point.runs.last().expect("a run just finished").clone();
        let line = Line::Run { point: index, record: Box::new(record), filesystem: point.filesystem.clone() };
        self.append(doc, &line)
    }

    /// Notes that the document's last point is complete.
    pub fn point_complete(&mut self, doc: &ResultsFile) -> Result<()> {
        self.append(doc, &Line::Complete { point: doc.points.len() - 1 })
    }

    fn append(&mut self, doc: &ResultsFile, line: &Line) -> Result<()> {
        if self.journal_bytes >= self.document_bytes {
            return self.save(doc);
        }
        let journal = match &mut self.journal {
            Some(file) => file,
            empty => empty.insert(create_journal(&journal_path(&self.path))?),
        };
        let mut text = serde_json::to_string(line).expect("journal lines serialize");
        text.push('\n');
        journal
            .write_all(text.as_bytes())
            .map_err(|e| anyhow!("writing {}: {e}", journal_path(&self.path).display()))?;
        self.journal_bytes += text.len() as u64;
        Ok(())
    }
}

/// Creates the journal exclusively: a planted file or link there is refused, never written through.
fn create_journal(path: &Path) -> Result<File> {
    let flags = libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_WRONLY | libc::O_APPEND;
    let fd = sys::openat(libc::AT_FDCWD, &sys::cstring(path)?, flags, 0o644).map_err(|e| {
        anyhow!("creating {}: {} (remove it if no run is writing it)", path.display(), sys::errno_text(e))
    })?;
    // SAFETY: a fresh descriptor, owned by the File from here on.
    Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
}

impl ResultsFile {
    /// Folds in the journal beside `document`, if there is one (a run that
    /// is still going, or was killed). Lines already in the document are skipped.
    pub(super) fn fold_journal(&mut self, document: &Path) -> Result<()> {
        let path = journal_path(document);
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(anyhow!("reading {}: {e}", path.display())),
        };
        for (number, text) in std::io::BufReader::new(file).lines().enumerate() {
            let text = text.map_err(|e| anyhow!("reading {}: {e}", path.display()))?;
            let Ok(line) = serde_json::from_str::<Line>(&text) else {
                // A line cut short by a crash ends the journal; an earlier bad line is an error.
                if text.ends_with('}') {
                    return Err(anyhow!("{} line {}: not a journal line", path.display(), number + 1));
                }
                break;
            };
            match line {
                Line::Point { index, point } if index == self.points.len() => self.points.push(*point),
                Line::Run { point, record, filesystem } => {
                    if let Some(p) = self.points.get_mut(point).filter(|p| record.run == p.runs.len()) {
                        p.runs.push(*record);
                        p.filesystem = p.filesystem.take().or(filesystem);
                        p.summarize();
                    }
                }
                Line::Complete { point } => {
                    if let Some(p) = self.points.get_mut(point) {
                        p.complete = true;
                    }
                }
                Line::Point { .. } => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{doc, point, run};
    use super::*;
    use crate::workloads::{Share, Workload};

    /// Runs `points` points of `runs` runs through a saver, as the runner does,
    /// stopping after `stop_after` runs when given (a kill -9).
    fn simulate(path: &Path, points: usize, runs: usize, stop_after: Option<usize>) -> (ResultsFile, u64) {
        let mut live = doc(runs, 0.5, vec![]);
        let mut saver = Saver::new(path);
        saver.save(&live).unwrap();
        let mut done = 0;
        let mut written = std::fs::metadata(path).unwrap().len();
        for p in 0..points {
            let mut fresh = point(Workload::Stat, Share::Private, p + 1, vec![]);
            fresh.complete = false;
            live.points.push(fresh);
            saver.point_started(&live).unwrap();
            for r in 0..runs {
                if stop_after == Some(done) {
                    return (live, written);
                }
                let last = live.points.last_mut().unwrap();
                last.runs.push(run(r, &vec![1000 + r as u64; p + 1], 0.5));
                last.summarize();
                let rewrites = saver.rewrites;
                saver.run_finished(&live).unwrap();
                written += if saver.rewrites > rewrites { std::fs::metadata(path).unwrap().len() } else { 0 };
                done += 1;
            }
            live.points.last_mut().unwrap().complete = true;
            saver.point_complete(&live).unwrap();
        }
        saver.save(&live).unwrap();
        (live, written + saver.journal_bytes)
    }

    #[test]
    fn a_killed_runs_document_and_journal_hold_every_finished_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let (live, _) = simulate(&path, 6, 10, Some(37));
        assert!(journal_path(&path).exists());
        let loaded = ResultsFile::load(&path).unwrap();
        assert_eq!(loaded.points.len(), live.points.len());
        let runs: usize = loaded.points.iter().map(|p| p.runs.len()).sum();
        assert_eq!(runs, 37);
        assert_eq!(loaded.points, live.points);
        // Folding twice (a crash between a rewrite and the journal's removal) counts nothing twice.
        let mut again = loaded.clone();
        again.fold_journal(&path).unwrap();
        assert_eq!(again.points, loaded.points);
    }

    #[test]
    fn a_finished_run_leaves_no_journal_and_writes_linearly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let (live, written) = simulate(&path, 8, 128, None);
        assert!(!journal_path(&path).exists());
        let loaded = ResultsFile::load(&path).unwrap();
        assert_eq!(loaded.points, live.points);
        // Rewriting the whole file after each of the 1024 runs would write
        // about 1024 / 2 times its final size; the journal keeps it to a few.
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(written < 6 * size, "wrote {written} bytes for a {size}-byte document");
    }
}
