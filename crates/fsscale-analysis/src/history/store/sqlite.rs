//! The SQLite backend: one file, written by any number of processes.
//!
//! WAL lets readers go on while one process writes; a writer takes the
//! write lock at the start of its transaction (`BEGIN IMMEDIATE`) and waits
//! up to [`BUSY_TIMEOUT`] for another's, so runs finishing at once queue
//! instead of failing with "database is locked".

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use super::{replaces_record, run_id_and_json, Added, Backend, Entry, Series, SeriesFilter, BUSY_TIMEOUT};
use crate::history::point::{figures, Figure, Identity};
use crate::history::schema;
use crate::results::ResultsFile;
use crate::vocab::Rate;

pub(crate) use schema::CURRENT;

/// An open SQLite store.
pub(crate) struct SqliteStore {
    conn: Connection,
    path: PathBuf,
}

impl SqliteStore {
    /// Opens the store at `path`, making it (and its directory, mode 0700) if
    /// it does not exist, and migrating it to schema version `version`.
    pub(crate) fn open_at(path: &Path, version: usize) -> Result<SqliteStore> {
        let what = || format!("history store {}", crate::escape::for_terminal(&path.to_string_lossy()));
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.exists() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("making the directory of the {}", what()))?;
        }
        // Root writes the store: nobody else may be able to plant a link, a
        // FIFO or another program's database at its name, or beside it as
        // its `-wal` and `-shm` files.
        crate::sys::check_private_dir(dir, "directory of the history store")?;
        for (file, what) in [
            (path.to_path_buf(), "history store"),
            (side_file(path, "-wal"), "store's log"),
            (side_file(path, "-shm"), "store's shared memory"),
        ] {
            crate::sys::check_own_file(&file, what)?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let mut conn = Connection::open_with_flags(path, flags).with_context(what)?;
        // Nothing in a store's schema runs as fsscale: its SQL functions are
        // off for views and triggers, and the schema itself is checked
        // against the one fsscale makes before anything is read or written.
        conn.pragma_update(None, "trusted_schema", false).with_context(what)?;
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true).with_context(what)?;
        conn.busy_timeout(BUSY_TIMEOUT).with_context(what)?;
        // One read transaction, so the version and the objects are read from
        // one snapshot: another process may be migrating a new store between them.
        let foreign = conn.transaction().and_then(|tx| schema::check_foreign(&tx));
        if let Some(why) = foreign.map_err(|e| not_a_store(e, path))? {
            bail!("{} {why}", what());
        }
        set_wal(&conn).map_err(|e| not_a_store(e, path))?;
        conn.pragma_update(None, "synchronous", "NORMAL").with_context(what)?;
        conn.pragma_update(None, "foreign_keys", true).with_context(what)?;
        schema::migrate(&mut conn, version).map_err(|e| anyhow!("{}: {e:#}", what()))?;
        Ok(SqliteStore { conn, path: path.to_path_buf() })
    }

    fn add_document(&mut self, doc: &ResultsFile, rev: Option<&str>) -> Result<Added> {
        let (run_id, json) = run_id_and_json(doc);
        let rev = rev.map(str::to_string).or_else(|| doc.rev.clone());
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let packed = crate::history::document::pack(&json)?;
        let inserted = tx.execute(
            "INSERT INTO results (run_id, host, kernel, rev, label, note, started_at, status, added_at, document_zstd)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT (run_id) DO NOTHING",
            params![
                run_id,
                doc.host.hostname,
                doc.host.kernel_release,
                rev,
                doc.label,
                doc.note,
                doc.started_at,
                doc.status.name(),
                crate::results::rfc3339(std::time::SystemTime::now()),
                packed
            ],
        )?;
        let result = if inserted == 1 {
            tx.last_insert_rowid()
        } else {
            let (id, had): (i64, i64) = tx.query_row(
                "SELECT r.id, COALESCE((SELECT SUM(f.runs) FROM figures f WHERE f.result_id = r.id), 0)
                 FROM results r WHERE r.run_id = ?1",
                [&run_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            if !replaces_record(doc, &run_id, had, || read_document(&tx, id, &self.path))? {
                return Ok(Added::Already);
            }
            tx.execute("DELETE FROM figures WHERE result_id = ?1", [id])?;
            tx.execute(
                "UPDATE results SET rev = COALESCE(?2, rev), status = ?3, document_zstd = ?4 WHERE id = ?1",
                params![id, rev, doc.status.name(), packed],
            )?;
            id
        };
        let series = insert_figures(&tx, doc, result)?;
        tx.commit()?;
        Ok(match inserted {
            1 => Added::New { series },
            _ => Added::Updated { series },
        })
    }

    fn series_rows(&self, filter: &SeriesFilter) -> Result<Vec<Series>> {
        use rusqlite::types::Value;
        let mut sql = String::from(
            "SELECT id, host, workload, op, mode, share, workers, fs, cache, variant, memory_limit, rate FROM series WHERE 1 = 1",
        );
        let mut values: Vec<Value> = Vec::new();
        if let Some(workloads) = &filter.workloads {
            let marks = vec!["?"; workloads.len()].join(", ");
            sql.push_str(&format!(" AND workload IN ({marks})"));
            values.extend(workloads.iter().cloned().map(Value::Text));
        }
        if let Some(workers) = filter.workers {
            sql.push_str(" AND workers = ?");
            values.push(Value::Integer(i64::try_from(workers).unwrap_or(i64::MAX)));
        }
        if let Some(rate) = filter.rate {
            sql.push_str(" AND rate = ?");
            values.push(Value::Real(rate.ops_per_s()));
        }
        for (column, want) in filter.text_columns() {
            sql.push_str(&format!(" AND {column} = ?"));
            values.push(Value::Text(want.clone()));
        }
        sql.push_str(" ORDER BY host, workload, workers, id");
        let mut query = self.conn.prepare(&sql)?;
        let rows = query.query_map(rusqlite::params_from_iter(values), |r| {
            let memory_limit: Option<i64> = r.get(10)?;
            Ok(Series {
                id: r.get(0)?,
                host: r.get(1)?,
                identity: Identity {
                    workload: r.get(2)?,
                    op: r.get(3)?,
                    mode: r.get(4)?,
                    share: r.get(5)?,
                    workers: r.get::<_, i64>(6)?.try_into().unwrap_or(0),
                    fs: r.get(7)?,
                    cache: r.get(8)?,
                    variant: r.get(9)?,
                    memory_limit: memory_limit.and_then(|b| u64::try_from(b).ok()),
                    rate: r.get::<_, Option<f64>>(11)?.and_then(Rate::new),
                },
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<Series>>>()?)
    }

    fn entry_rows(&self, series: i64, last: Option<usize>) -> Result<Vec<Entry>> {
        let mut query = self.conn.prepare_cached(
            "SELECT r.id, r.run_id, r.rev, r.label, r.note, r.kernel, r.started_at, f.point_index, f.mean, f.per_cpu,
                    f.runs, f.busy, f.cpu_bound, f.noise, f.profiles, f.unit, f.higher_is_better, f.run_values, f.run_per_cpu
             FROM figures f JOIN results r ON r.id = f.result_id
             WHERE f.series_id = ?1 ORDER BY r.started_at DESC, r.id DESC LIMIT ?2",
        )?;
        let limit = last.map_or(-1, |n| n as i64);
        let rows = query.query_map(params![series, limit], |r| {
            Ok(Entry {
                result: r.get(0)?,
                run_id: r.get(1)?,
                rev: r.get(2)?,
                label: r.get(3)?,
                note: r.get(4)?,
                kernel: r.get(5)?,
                started_at: r.get(6)?,
                point_index: r.get::<_, i64>(7)? as usize,
                figure: Figure {
                    mean: r.get(8)?,
                    per_cpu: r.get(9)?,
                    runs: r.get::<_, i64>(10)? as usize,
                    run_values: numbers(r, 17)?.unwrap_or_default(),
                    run_per_cpu: numbers(r, 18)?,
                    busy: r.get(11)?,
                    cpu_bound: r.get(12)?,
                    noise: r.get(13)?,
                    profiles: r
                        .get::<_, String>(14)?
                        .split(',')
                        .filter(|p| !p.is_empty())
                        .map(str::to_string)
                        .collect(),
                    unit: r.get(15)?,
                    higher_is_better: r.get(16)?,
                },
            })
        })?;
        let mut entries = rows.collect::<rusqlite::Result<Vec<Entry>>>()?;
        entries.reverse();
        Ok(entries)
    }

    /// An SQL error as one line that names the store: its tables are not
    /// what this schema version makes (a damaged store, or another program's).
    fn one_line<T>(&self, result: Result<T>) -> Result<T> {
        result.map_err(|e| match e.downcast_ref::<rusqlite::Error>() {
            Some(sql) => {
                let what = match sql {
                    rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
                    other => other.to_string().split_whitespace().collect::<Vec<_>>().join(" "),
                };
                anyhow!(
                    "history store {}: {what}; it is damaged or not fsscale's: give --history-db another path",
                    self.path.display()
                )
            }
            None => e,
        })
    }
}

impl Backend for SqliteStore {
    /// Records `doc` (with `rev` instead of its own revision, when given),
    /// or nothing if a result with its run id is recorded already. One
    /// transaction: a crash keeps all of it or none.
    fn add(&mut self, doc: &ResultsFile, rev: Option<&str>) -> Result<Added> {
        let added = self.add_document(doc, rev);
        self.one_line(added)
    }

    /// The series `filter` admits, by host, workload and workers.
    fn series(&self, filter: &SeriesFilter) -> Result<Vec<Series>> {
        self.one_line(self.series_rows(filter))
    }

    /// The series of `identity` on `host`, if any result of it is recorded.
    fn series_of(&self, host: &str, identity: &Identity) -> Result<Option<i64>> {
        use rusqlite::OptionalExtension;
        let id = self
            .conn
            .query_row(
                "SELECT id FROM series WHERE host = ?1 AND series_key = ?2",
                params![host, identity.key()],
                |r| r.get(0),
            )
            .optional();
        self.one_line(id.map_err(anyhow::Error::from))
    }

    /// The results of a series in the order they started, the last `last` of them when given.
    fn entries(&self, series: i64, last: Option<usize>) -> Result<Vec<Entry>> {
        self.one_line(self.entry_rows(series, last))
    }

    /// The results file recorded as `result`, read as any received file is.
    fn document(&self, result: i64) -> Result<ResultsFile> {
        read_document(&self.conn, result, &self.path)
    }

    /// How many results are recorded.
    fn len(&self) -> Result<usize> {
        let count = self.conn.query_row("SELECT COUNT(*) FROM results", [], |r| r.get::<_, i64>(0));
        self.one_line(count.map(|n| n as usize).map_err(anyhow::Error::from))
    }
}

/// A result's figures, each under its series (made where new).
fn insert_figures(tx: &rusqlite::Transaction<'_>, doc: &ResultsFile, result: i64) -> Result<usize> {
    let mut series = 0;
    for (identity, figure, index) in figures(doc) {
        let key = identity.key();
        let memory_limit = identity.memory_limit_column()?;
        tx.execute(
            "INSERT INTO series (host, series_key, workload, op, mode, share, workers, fs, cache, variant, memory_limit, description, rate)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) ON CONFLICT (host, series_key) DO NOTHING",
            params![
                doc.host.hostname,
                key,
                identity.workload,
                identity.op,
                identity.mode,
                identity.share,
                identity.workers as i64,
                identity.fs,
                identity.cache,
                identity.variant,
                memory_limit,
                identity.describe(),
                identity.rate_column()
            ],
        )?;
        let id: i64 = tx.query_row(
            "SELECT id FROM series WHERE host = ?1 AND series_key = ?2",
            params![doc.host.hostname, key],
            |r| r.get(0),
        )?;
        let (run_values, run_per_cpu) = figure.run_columns();
        tx.execute(
            "INSERT INTO figures (series_id, result_id, point_index, mean, per_cpu, runs, busy, cpu_bound, noise, profiles, unit, higher_is_better, run_values, run_per_cpu)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                id,
                result,
                index as i64,
                figure.mean,
                figure.per_cpu,
                figure.runs as i64,
                figure.busy,
                figure.cpu_bound,
                figure.noise,
                figure.profiles.join(","),
                figure.unit,
                figure.higher_is_better,
                run_values,
                run_per_cpu
            ],
        )?;
        series += 1;
    }
    Ok(series)
}

/// The results file recorded as `result` in the store at `path`, read as
/// any received file is.
fn read_document(conn: &Connection, result: i64, path: &Path) -> Result<ResultsFile> {
    let packed: Vec<u8> = conn
        .query_row("SELECT document_zstd FROM results WHERE id = ?1", [result], |r| r.get(0))
        .optional()?
        .ok_or_else(|| anyhow!("result {result} is not in {}", path.display()))?;
    let damaged = || format!("result {result} of {} is not an fsscale results file", path.display());
    let json = crate::history::document::unpack(&packed).with_context(damaged)?;
    ResultsFile::from_json(&json, None).with_context(damaged)
}

/// A column of JSON numbers (`run_values`, `run_per_cpu`), as SQL reads a
/// malformed value: an error of the row.
fn numbers(row: &rusqlite::Row, column: usize) -> rusqlite::Result<Option<Vec<f64>>> {
    let Some(text) = row.get::<_, Option<String>>(column)? else { return Ok(None) };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, Box::new(e)))
}

/// SQLite's file beside the store: `PATH-wal`, `PATH-shm`.
fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// WAL, set once per store: switching needs a moment with no other
/// connection, which the busy handler does not wait for, so it is retried.
fn set_wal(conn: &Connection) -> rusqlite::Result<()> {
    let started = std::time::Instant::now();
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && started.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e),
        }
    }
}

/// "file is not a database" as one line that names the file and the fix.
fn not_a_store(error: rusqlite::Error, path: &Path) -> anyhow::Error {
    match &error {
        rusqlite::Error::SqliteFailure(e, _) if e.code == rusqlite::ErrorCode::NotADatabase => anyhow!(
            "{} is not a history store (not an SQLite database); give --history-db another path",
            path.display()
        ),
        _ => anyhow::Error::from(error).context(format!("history store {}", path.display())),
    }
}
