//! The history store: where results are kept, as series of each point's
//! figure on each host. Two backends behind one [`Backend`] trait: an
//! SQLite file, the embedded default, written by any number of local
//! processes; and a PostgreSQL server (`--history-db postgresql://...`)
//! that a lab's machines share. Both keep the same tables, each result's
//! document compressed, and read a document back as any received file.

mod postgres;
mod sqlite;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Result};

use super::point::{Figure, Identity};
use crate::results::ResultsFile;

/// How long a writer waits for another's transaction before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(120);

/// What a store keeps and answers, whatever it is kept in.
pub(crate) trait Backend {
    /// Records `doc` (with `rev` instead of its own revision, when given),
    /// or nothing if a result with its run id is recorded already. One
    /// transaction: a crash keeps all of it or none.
    fn add(&mut self, doc: &ResultsFile, rev: Option<&str>) -> Result<Added>;
    /// The series `filter` admits, by host, workload and workers.
    fn series(&self, filter: &SeriesFilter) -> Result<Vec<Series>>;
    /// The series of `identity` on `host`, if any result of it is recorded.
    fn series_of(&self, host: &str, identity: &Identity) -> Result<Option<i64>>;
    /// The results of a series in the order they started, the last `last` of them when given.
    fn entries(&self, series: i64, last: Option<usize>) -> Result<Vec<Entry>>;
    /// The results file recorded as `result`, read as any received file is.
    fn document(&self, result: i64) -> Result<ResultsFile>;
    /// How many results are recorded.
    fn len(&self) -> Result<usize>;
}

/// An open history store.
pub struct Store {
    backend: Box<dyn Backend>,
    /// Where it is, as messages name it (a server's password left out).
    location: String,
}

/// What adding a results file did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Added {
    /// Recorded, with its figures in this many series.
    New { series: usize },
    /// A result with its run id was already recorded, with as many runs: nothing changed.
    Already,
    /// Recorded before with fewer runs (an unfinished run since resumed): its record replaced.
    Updated { series: usize },
}

/// One series: a point's results on one host.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub id: i64,
    pub host: String,
    pub identity: Identity,
}

/// One result in a series.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The store's id of the result (its document: [`Store::document`]).
    pub result: i64,
    pub run_id: String,
    pub rev: Option<String>,
    pub label: Option<String>,
    pub note: Option<String>,
    pub kernel: String,
    /// RFC 3339, UTC: series are in this order.
    pub started_at: String,
    /// The point's index in its document.
    pub point_index: usize,
    pub figure: Figure,
}

impl Entry {
    /// What the result is called: its revision, else its label, else its start.
    pub fn name(&self) -> &str {
        self.rev.as_deref().or(self.label.as_deref()).unwrap_or(&self.started_at)
    }
}

/// Which series a query wants; `None` matches any.
#[derive(Clone, Debug, Default)]
pub struct SeriesFilter {
    /// Workload names (a group's members, already expanded).
    pub workloads: Option<Vec<String>>,
    pub workers: Option<usize>,
    pub host: Option<String>,
    pub mode: Option<String>,
    pub share: Option<String>,
    pub fs: Option<String>,
    pub variant: Option<String>,
    /// An open loop's rate: only its series (of response p99 at it).
    pub rate: Option<crate::vocab::Rate>,
}

impl SeriesFilter {
    /// The text columns it filters on, with the value each must equal.
    pub(crate) fn text_columns(&self) -> impl Iterator<Item = (&'static str, &String)> {
        [
            ("host", &self.host),
            ("mode", &self.mode),
            ("share", &self.share),
            ("fs", &self.fs),
            ("variant", &self.variant),
        ]
        .into_iter()
        .filter_map(|(column, want)| Some((column, want.as_ref()?)))
    }
}

/// A server's URL with `database` as the one it names (`postgresql://u@h/db?o` with db replaced).
pub fn with_database(url: &str, database: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let query = tail.split_once('?').map(|(_, q)| format!("?{q}")).unwrap_or_default();
    format!("{scheme}://{authority}/{database}{query}")
}

impl Store {
    /// Where the store is when `--history-db` is not given:
    /// `$XDG_DATA_HOME/fsscale/history.sqlite`, else `~/.local/share/fsscale/history.sqlite`.
    pub fn default_path() -> Result<PathBuf> {
        let data = match (std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME")) {
            (Some(d), _) if Path::new(&d).is_absolute() => PathBuf::from(d),
            (_, Some(home)) if Path::new(&home).is_absolute() => Path::new(&home).join(".local/share"),
            _ => bail!(
                "no data directory for the history (neither XDG_DATA_HOME nor HOME is set); give --history-db PATH"
            ),
        };
        Ok(data.join("fsscale").join("history.sqlite"))
    }

    /// Whether `location` names a PostgreSQL server (`postgresql://...`,
    /// `postgres://...`) rather than an SQLite file.
    pub(crate) fn is_server(location: &Path) -> bool {
        let text = location.to_string_lossy();
        text.starts_with("postgresql://") || text.starts_with("postgres://")
    }

    /// Whether a store is there to read: a server always is; a file where it exists.
    pub fn exists(location: &Path) -> bool {
        Store::is_server(location) || location.exists()
    }

    /// Opens the store at `location`: a PostgreSQL server's URL, or an
    /// SQLite file, made (and its directory, mode 0700) if it does not exist.
    /// Either is brought to this fsscale's schema.
    pub fn open(location: &Path) -> Result<Store> {
        if Store::is_server(location) {
            let Some(url) = location.to_str() else { bail!("the history server's URL is not UTF-8; give it as text") };
            let store = postgres::PostgresStore::connect(url)?;
            return Ok(Store { location: postgres::without_password(url), backend: Box::new(store) });
        }
        Store::open_at(location, sqlite::CURRENT)
    }

    /// An SQLite store at `path`, migrated only to schema version `version`
    /// (tests make old stores with it).
    pub(crate) fn open_at(path: &Path, version: usize) -> Result<Store> {
        let store = sqlite::SqliteStore::open_at(path, version)?;
        Ok(Store { location: path.display().to_string(), backend: Box::new(store) })
    }

    /// Where the store is, as messages name it.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// See [`Backend::add`].
    pub fn add(&mut self, doc: &ResultsFile, rev: Option<&str>) -> Result<Added> {
        self.backend.add(doc, rev)
    }

    /// See [`Backend::series`].
    pub fn series(&self, filter: &SeriesFilter) -> Result<Vec<Series>> {
        self.backend.series(filter)
    }

    /// See [`Backend::series_of`].
    pub(crate) fn series_of(&self, host: &str, identity: &Identity) -> Result<Option<i64>> {
        self.backend.series_of(host, identity)
    }

    /// See [`Backend::entries`].
    pub fn entries(&self, series: i64, last: Option<usize>) -> Result<Vec<Entry>> {
        self.backend.entries(series, last)
    }

    /// See [`Backend::document`].
    pub fn document(&self, result: i64) -> Result<ResultsFile> {
        self.backend.document(result)
    }

    /// See [`Backend::len`].
    pub fn len(&self) -> Result<usize> {
        self.backend.len()
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// An argument with a history server's password left out (`--history-db
/// postgresql://lab:***@db/h`, or the URL alone); any other as it is.
pub fn without_password_in(arg: &str) -> String {
    match arg.find("postgresql://").or_else(|| arg.find("postgres://")) {
        Some(at) => format!("{}{}", &arg[..at], postgres::without_password(&arg[at..])),
        None => arg.to_string(),
    }
}

/// A run id for `doc`: its own, or for a file from before run ids were
/// written, its content's digest; with the document's compact JSON.
fn run_id_and_json(doc: &ResultsFile) -> (String, String) {
    use sha2::Digest;
    let json = doc.to_compact_json();
    let run_id = doc.run_id.clone().unwrap_or_else(|| format!("sha256:{:x}", sha2::Sha256::digest(json.as_bytes())));
    (run_id, json)
}

/// Whether `doc`, whose run id is recorded already with `had` runs,
/// replaces that record. The same run again (a file added twice, a run
/// recorded with --history and then added) changes nothing: `false`. A run
/// recorded while unfinished and since continued (`run --resume`, which
/// keeps its run id) has more runs now, and its record is the later
/// document's: `true`. Only the same run, continued, may replace its
/// record: a file that merely carries its run id (copied, edited, or another
/// host's) would move its figures into another series, and is refused.
fn replaces_record(
    doc: &ResultsFile,
    run_id: &str,
    had: i64,
    stored: impl FnOnce() -> Result<ResultsFile>,
) -> Result<bool> {
    let has: usize = doc.points.iter().map(|p| p.runs.len()).sum();
    if has as i64 <= had {
        return Ok(false);
    }
    if let Some(why) = not_a_continuation(&stored()?, doc) {
        bail!(
            "its run id {} is recorded already, and this is not that run continued ({why}); not recorded: a run keeps its own id, so this file was copied or edited",
            crate::escape::for_terminal(run_id)
        );
    }
    Ok(true)
}

/// Why `later` is not the run `stored` records, continued (`run --resume`):
/// the same host, start and command line, the points `stored` holds first
/// (a run adds its points as it reaches them), and every run `stored` holds
/// still first in its point. `None` when it is.
fn not_a_continuation(stored: &ResultsFile, later: &ResultsFile) -> Option<&'static str> {
    let same_point = |a: &crate::results::Point, b: &crate::results::Point| {
        (&a.workload, &a.op, a.mode, a.share, a.workers, &a.fs, a.cache, &a.variant)
            == (&b.workload, &b.op, b.mode, b.share, b.workers, &b.fs, b.cache, &b.variant)
    };
    if stored.host.hostname != later.host.hostname {
        Some("another host")
    } else if stored.started_at != later.started_at {
        Some("another start")
    } else if stored.command_line != later.command_line {
        Some("another command line")
    } else if stored.points.len() > later.points.len()
        || stored.points.iter().zip(&later.points).any(|(a, b)| !same_point(a, b))
    {
        Some("other points")
    } else if stored.points.iter().zip(&later.points).any(|(a, b)| !b.runs.starts_with(&a.runs)) {
        Some("the recorded runs are not its first ones")
    } else {
        None
    }
}
