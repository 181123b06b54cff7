//! Keeping a results document on disk as a run goes, at a cost that grows
//! with the run rather than with its square.
//!
//! Rewriting the whole document after each of 1024 runs writes its size
//! 1024 times (3.9 GB for a 7.9 MB file). Instead every finished run is
//! appended, as one JSON line, to a journal beside the document
//! (`FILE.journal`); the document is rewritten whole only when the journal
//! has grown as large as it (so rewriting costs at most as much as
//! appending; the journal is then emptied to its header), and at the end,
//! when the journal goes. Reading the document
//! folds in a journal found beside it. Lines name their point and run
//! index, so folding is idempotent: a crash between rewriting the document
//! and removing the journal never counts a run twice. The journal's first
//! line names the run (the document's `run_id`) and its writer holds an
//! `flock` on it from the run's first save to its last: a journal of
//! another run, live or killed, is never folded into this document, a
//! document whose journal a live run holds is refused to a second run (whose
//! results would otherwise silently replace the first's, or be replaced),
//! and a dead run's journal is replaced.

use std::fs::File;
use std::io::{BufRead, Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};

use super::{Point, ResultsFile, RunRecord, Status};
use crate::vocab::FsRecord;
use crate::{lockfile, sys};

/// One line of the journal.
#[derive(Serialize, Deserialize, Debug)]
#[serde(rename_all = "snake_case")]
enum Line {
    /// The first line: which run's document this journal belongs to.
    Header {
        run_id: String,
        /// The writer's process, for the message that refuses a second writer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
    },
    /// A point began (with no runs yet).
    Point { index: usize, point: Box<Point> },
    /// A run of point `point` finished (a warm-up run when `warmup`).
    Run {
        point: usize,
        record: Box<RunRecord>,
        filesystem: Option<FsRecord>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        warmup: bool,
    },
    /// Every run of point `point` finished.
    Complete { point: usize },
    /// A `--variant`'s setup is about to run (`Some`), or its teardown ran (`None`).
    Variant { in_effect: Option<String> },
    /// How the run ended, when the document itself could not be written
    /// (a full disk, no descriptor left): the journal, already open, says it.
    End { status: Status, error: Option<String>, finished_at: Option<String> },
}

/// The journal's path beside `document`.
pub fn journal_path(document: &Path) -> PathBuf {
    let mut name = document.as_os_str().to_owned();
    name.push(".journal");
    PathBuf::from(name)
}

/// Writes a document as a run progresses. It holds the journal, locked,
/// from the run's first save to its last: that lock is how another run
/// (or a second `-o` of the same name) knows the document is taken.
pub struct Saver {
    path: PathBuf,
    journal: File,
    header: Line,
    journal_bytes: u64,
    document_bytes: u64,
    /// How many whole-document writes (for tests and the docs' figures).
    pub rewrites: u64,
}

impl Saver {
    /// Claims `path` for the run of `doc` and writes the document whole.
    /// Refuses a path whose journal a live run holds, naming that run.
    pub fn create(path: &Path, doc: &ResultsFile) -> Result<Saver> {
        let journal_file = journal_path(path);
        let Some(journal) = create_journal(&journal_file)? else {
            let holder = sys::read_input(&journal_file, 1 << 20).ok().and_then(|t| {
                serde_json::from_str::<Line>(t.lines().next()?).ok().and_then(|line| match line {
                    Line::Header { run_id, pid } => Some(match pid {
                        Some(pid) => format!("run {} (pid {pid})", crate::escape::for_terminal(&run_id)),
                        None => format!("run {}", crate::escape::for_terminal(&run_id)),
                    }),
                    _ => None,
                })
            });
            bail!(
                "-o {}: another fsscale {} is writing it; choose another -o, or wait until that run ends",
                path.display(),
                holder.unwrap_or_else(|| "run".to_string())
            );
        };
        let header = Line::Header { run_id: doc.run_id.clone().unwrap_or_default(), pid: Some(std::process::id()) };
        let mut saver =
            Saver { path: path.to_path_buf(), journal, header, journal_bytes: 0, document_bytes: 0, rewrites: 0 };
        if let Err(error) = saver.save(doc) {
            // Nothing was written (a device, FIFO or directory at -o, a full
            // disk): the journal made for it goes too, while its lock is held.
            let _ = std::fs::remove_file(&journal_file);
            return Err(error);
        }
        Ok(saver)
    }

    /// Writes the whole document and empties the journal (down to its header).
    pub fn save(&mut self, doc: &ResultsFile) -> Result<()> {
        let text = doc.to_json();
        crate::atomic_file::write(&self.path, text.as_bytes())?;
        self.rewrites += 1;
        self.document_bytes = text.len() as u64;
        // A crash before the journal is emptied leaves lines the document
        // already holds; folding skips them.
        let journal = journal_path(&self.path);
        self.journal
            .set_len(0)
            .and_then(|()| self.journal.rewind())
            .map_err(|e| anyhow!("emptying {}: {e}", journal.display()))?;
        self.journal_bytes = write_line(&mut self.journal, &self.header, &self.path)?;
        Ok(())
    }

    /// Writes the whole document for the last time and removes the journal
    /// (while its lock is still held, so no other run's is removed).
    pub fn finish(mut self, doc: &ResultsFile) -> Result<()> {
        if let Err(error) = self.save(doc) {
            let end = Line::End { status: doc.status, error: doc.error.clone(), finished_at: doc.finished_at.clone() };
            let _ = write_line(&mut self.journal, &end, &self.path);
            return Err(error);
        }
        let journal = journal_path(&self.path);
        match std::fs::remove_file(&journal) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(anyhow!("removing {}: {e}", journal.display())),
            _ => Ok(()),
        }
    }

    /// Notes that point `index`, the document's last, was added.
    pub fn point_started(&mut self, doc: &ResultsFile, index: usize) -> Result<()> {
        let mut point = doc.points[index].clone();
        point.runs.clear();
        point.warmup_runs.clear();
        point.summary = None;
        self.append(doc, &Line::Point { index, point: Box::new(point) })
    }

    /// Notes the last run (or warm-up run) of point `index`.
    pub fn run_finished(&mut self, doc: &ResultsFile, index: usize, warmup: bool) -> Result<()> {
        let point = &doc.points[index];
        let runs = if warmup { &point.warmup_runs } else { &point.runs };
        let record = runs.last().expect("a run just finished").clone();
        let line = Line::Run { point: index, record: Box::new(record), filesystem: point.filesystem.clone(), warmup };
        self.append(doc, &line)
    }

    /// Notes the document's `variant_in_effect`, as it just changed.
    pub fn variant_changed(&mut self, doc: &ResultsFile) -> Result<()> {
        self.append(doc, &Line::Variant { in_effect: doc.variant_in_effect.clone() })
    }

    /// Notes that point `index` is complete.
    pub fn point_complete(&mut self, doc: &ResultsFile, index: usize) -> Result<()> {
        self.append(doc, &Line::Complete { point: index })
    }

    fn append(&mut self, doc: &ResultsFile, line: &Line) -> Result<()> {
        if self.journal_bytes >= self.document_bytes {
            return self.save(doc);
        }
        self.journal_bytes += write_line(&mut self.journal, line, &self.path)?;
        Ok(())
    }
}

fn write_line(journal: &mut File, line: &Line, document: &Path) -> Result<u64> {
    let mut text = serde_json::to_string(line).expect("journal lines serialize");
    text.push('\n');
    journal.write_all(text.as_bytes()).map_err(|e| anyhow!("writing {}: {e}", journal_path(document).display()))?;
    Ok(text.len() as u64)
}

/// Creates the journal exclusively and locked: a planted file or link there
/// is refused, never written through. One left by a killed run (unlocked) is
/// replaced; `None` when a live run holds one there.
fn create_journal(path: &Path) -> Result<Option<File>> {
    let name = sys::cstring(path)?;
    let fail = |e| anyhow!("creating {}: {} (remove it if no run is writing it)", path.display(), sys::errno_text(e));
    match lockfile::create_locked(sys::CWD, &name, 0o644) {
        Ok(file) => Ok(Some(file)),
        Err(libc::EEXIST) => match lockfile::lock_if_unheld(sys::CWD, &name) {
            Ok(None) => Ok(None),
            // A dead run's: removed while we hold its lock, then ours is made.
            Ok(Some(_stale)) => {
                sys::unlinkat(sys::CWD, &name, 0).map_err(fail)?;
                lockfile::create_locked(sys::CWD, &name, 0o644).map(Some).map_err(fail)
            }
            Err(e) => Err(fail(e)),
        },
        Err(e) => Err(fail(e)),
    }
}

impl ResultsFile {
    /// Folds in the journal beside `document`, if there is one (a run that
    /// is still going, or was killed). Lines already in the document are skipped.
    pub(super) fn fold_journal(&mut self, document: &Path) -> Result<()> {
        let path = journal_path(document);
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            // A FIFO or a device there is no journal fsscale wrote: the document stands.
            Ok(meta) if !meta.is_file() => {
                self.read_notes.push(format!("{} is not a regular file; passed over", path.display()));
                return Ok(());
            }
            _ => {}
        }
        let file =
            sys::open_input(&path, super::MAX_INPUT_BYTES).map_err(|e| anyhow!("reading {}: {e:#}", path.display()))?;
        for (number, text) in std::io::BufReader::new(file).lines().enumerate() {
            let text = text.map_err(|e| anyhow!("reading {}: {e}", path.display()))?;
            if number == 0 {
                // Another run's journal (same path, written at the same time or left by a kill) is not ours.
                match serde_json::from_str::<Line>(&text) {
                    Ok(Line::Header { run_id, .. }) if Some(&run_id) == self.run_id.as_ref() => continue,
                    Ok(Line::Header { .. }) => return Ok(()),
                    // A journal from before headers: only for a document from before run IDs.
                    _ if self.run_id.is_some() => return Ok(()),
                    _ => {}
                }
            }
            let Ok(line) = serde_json::from_str::<Line>(&text) else {
                // A line cut short by a crash, or damaged: the document and
                // every other line still stand; the reader is told.
                self.read_notes.push(format!(
                    "{} line {}: not a journal line (cut short or damaged); passed over",
                    path.display(),
                    number + 1
                ));
                continue;
            };
            match line {
                Line::Point { index, point } if index == self.points.len() => self.points.push(*point),
                Line::Run { point, record, filesystem, warmup } => {
                    let Some(p) = self.points.get_mut(point) else { continue };
                    let runs = if warmup { &mut p.warmup_runs } else { &mut p.runs };
                    // Only the next run: a line already folded into the document is skipped.
                    if record.run == runs.len() {
                        runs.push(*record);
                        p.filesystem = p.filesystem.take().or(filesystem);
                        p.summarize();
                    }
                }
                Line::Complete { point } => {
                    if let Some(p) = self.points.get_mut(point) {
                        p.complete = true;
                    }
                }
                Line::Variant { in_effect } => self.variant_in_effect = in_effect,
                Line::End { status, error, finished_at } => {
                    self.status = status;
                    self.error = error;
                    self.finished_at = finished_at;
                }
                Line::Point { .. } | Line::Header { .. } => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{doc, point, run};
    use super::*;
    use crate::vocab::{Share, Workload};

    /// Runs `points` points of `runs` runs through a saver, as the runner does,
    /// stopping after `stop_after` runs when given (a kill -9).
    fn simulate(path: &Path, points: usize, runs: usize, stop_after: Option<usize>) -> (ResultsFile, u64) {
        let mut live = doc(runs, 0.5, vec![]);
        let mut saver = Saver::create(path, &live).unwrap();
        let mut done = 0;
        let mut written = std::fs::metadata(path).unwrap().len();
        for p in 0..points {
            let mut fresh = point(Workload::Stat, Share::Private, p + 1, vec![]);
            fresh.complete = false;
            live.points.push(fresh);
            saver.point_started(&live, p).unwrap();
            for r in 0..runs {
                if stop_after == Some(done) {
                    return (live, written);
                }
                let last = live.points.last_mut().unwrap();
                last.runs.push(run(r, &vec![1000 + r as u64; p + 1], 0.5));
                last.summarize();
                let rewrites = saver.rewrites;
                saver.run_finished(&live, p, false).unwrap();
                written += if saver.rewrites > rewrites { std::fs::metadata(path).unwrap().len() } else { 0 };
                done += 1;
            }
            live.points.last_mut().unwrap().complete = true;
            saver.point_complete(&live, p).unwrap();
        }
        let journal = saver.journal_bytes;
        saver.finish(&live).unwrap();
        (live, written + journal + std::fs::metadata(path).unwrap().len())
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

    #[test]
    fn a_live_runs_document_is_refused_and_a_dead_ones_journal_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let start = |id: &str| {
            let mut live = doc(3, 0.5, vec![]);
            live.run_id = Some(id.into());
            Saver::create(&path, &live).map(|saver| (live, saver))
        };
        let add_run = |live: &mut ResultsFile, saver: &mut Saver, workers: usize| {
            live.points.push(point(Workload::Stat, Share::Private, workers, vec![run(0, &vec![7; workers], 0.5)]));
            let index = live.points.len() - 1;
            saver.point_started(live, index).unwrap();
            saver.run_finished(live, index, false).unwrap();
        };
        // A holds the document from its first save, also right after a rewrite.
        let (mut a, mut saver_a) = start("a").unwrap();
        saver_a.save(&a).unwrap();
        let refused = start("b").err().expect("B is refused while A lives").to_string();
        let pid = std::process::id();
        assert!(refused.contains(&format!("another fsscale run a (pid {pid}) is writing it")), "{refused}");
        add_run(&mut a, &mut saver_a, 1);
        assert_eq!(ResultsFile::load(&path).unwrap().points.iter().map(|p| p.workers).collect::<Vec<_>>(), [1]);
        // A is killed (its lock goes with its file); C replaces the dead journal with its own.
        drop(saver_a);
        let (mut c, mut saver_c) = start("c").unwrap();
        add_run(&mut c, &mut saver_c, 4);
        let loaded = ResultsFile::load(&path).unwrap();
        assert_eq!(loaded.points.iter().map(|p| p.workers).collect::<Vec<_>>(), [4]);
        let journal = std::fs::read_to_string(journal_path(&path)).unwrap();
        assert!(journal.starts_with(&format!("{{\"header\":{{\"run_id\":\"c\",\"pid\":{pid}}}}}\n")), "{journal}");
        // A's last view folds nothing of C's.
        let mut stale = a.clone();
        stale.points.clear();
        stale.fold_journal(&path).unwrap();
        assert!(stale.points.is_empty());
        saver_c.finish(&c).unwrap();
        assert!(!journal_path(&path).exists());
    }
}
