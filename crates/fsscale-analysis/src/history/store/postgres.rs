//! The PostgreSQL backend: one server a lab's machines share
//! (`--history-db postgresql://user@server/db`).
//!
//! The tables are the SQLite store's, in the connection's schema, made on
//! first use where that schema is empty. Writers take one transaction-level
//! advisory lock, so results added from many hosts at once queue as they
//! do in a file; readers take none. What the server sends back is read as
//! any received file: documents are unpacked to a bounded size and checked.

use std::cell::RefCell;

use anyhow::{anyhow, bail, Result};
use postgres::types::ToSql;
use postgres::{Client, NoTls, Row};

use super::{replaces_record, run_id_and_json, Added, Backend, Entry, Series, SeriesFilter};
use crate::history::point::{figures, Figure, Identity};
use crate::results::ResultsFile;
use crate::vocab::Rate;

/// The schema version this fsscale makes on a server: [`SCHEMA`] is the
/// first, each of [`MIGRATIONS`] one more.
const VERSION: i32 = 2;

/// What takes a server's schema from each version to the next, in order
/// (the first from 1 to 2).
const MIGRATIONS: &[&str] = &[
    // 2: an open loop's rate, a part of its series' identity.
    "ALTER TABLE series ADD COLUMN rate double precision;",
];

/// The advisory lock writers and the schema's creation take ("fsscale").
const WRITE_LOCK: i64 = 0x0066_7373_6361_6c65;

const SCHEMA: &str = "CREATE TABLE fsscale_schema (version integer NOT NULL);
    INSERT INTO fsscale_schema VALUES (1);
    CREATE TABLE results (
        id bigserial PRIMARY KEY,
        run_id text NOT NULL UNIQUE,
        host text NOT NULL,
        kernel text NOT NULL,
        rev text,
        label text,
        note text,
        started_at text NOT NULL,
        status text NOT NULL,
        added_at text NOT NULL,
        document_zstd bytea NOT NULL
    );
    CREATE INDEX results_by_rev ON results (rev);
    CREATE TABLE series (
        id bigserial PRIMARY KEY,
        host text NOT NULL,
        series_key text NOT NULL,
        workload text NOT NULL,
        op text NOT NULL,
        mode text NOT NULL,
        share text NOT NULL,
        workers bigint NOT NULL,
        fs text,
        cache text,
        variant text,
        memory_limit bigint,
        description text NOT NULL,
        UNIQUE (host, series_key)
    );
    CREATE INDEX series_by_point ON series (workload, workers, mode, share);
    CREATE TABLE figures (
        series_id bigint NOT NULL REFERENCES series (id),
        result_id bigint NOT NULL REFERENCES results (id),
        point_index bigint NOT NULL,
        mean double precision NOT NULL,
        per_cpu double precision,
        runs bigint NOT NULL,
        busy boolean NOT NULL,
        cpu_bound boolean NOT NULL,
        noise text,
        profiles text NOT NULL,
        unit text NOT NULL,
        higher_is_better boolean NOT NULL,
        run_values text NOT NULL,
        run_per_cpu text,
        PRIMARY KEY (series_id, result_id, point_index)
    );
    CREATE INDEX figures_by_result ON figures (result_id);";

/// Brings a schema at `version` to [`VERSION`], in the transaction that
/// holds the write lock.
fn migrate(tx: &mut postgres::Transaction<'_>, version: i32) -> Result<(), postgres::Error> {
    for (from, migration) in (1..).zip(MIGRATIONS).filter(|(from, _)| *from >= version) {
        tx.batch_execute(migration)?;
        tx.execute("UPDATE fsscale_schema SET version = $1", &[&(from + 1)])?;
    }
    Ok(())
}

/// An open connection to a history server.
pub(crate) struct PostgresStore {
    // The client's calls take it mutably; the store's reads do not.
    client: RefCell<Client>,
    location: String,
}

impl PostgresStore {
    /// Connects to `url` and makes fsscale's tables where its schema has none.
    pub(crate) fn connect(url: &str) -> Result<PostgresStore> {
        let location = without_password(url);
        let fail = |e: postgres::Error| one_line(&location, &e);
        let mut client = Client::connect(url, NoTls).map_err(fail)?;
        let mut tx = client.transaction().map_err(fail)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK]).map_err(fail)?;
        let made: bool = tx.query_one("SELECT to_regclass('fsscale_schema') IS NOT NULL", &[]).map_err(fail)?.get(0);
        if made {
            let version: i32 = tx.query_one("SELECT max(version) FROM fsscale_schema", &[]).map_err(fail)?.get(0);
            if version > VERSION {
                bail!("history server {location} has schema version {version}, newer than this fsscale knows ({VERSION}); use the fsscale that wrote it");
            }
            migrate(&mut tx, version).map_err(fail)?;
        } else {
            let tables: i64 = tx
                .query_one("SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()", &[])
                .map_err(fail)?
                .get(0);
            if tables > 0 {
                bail!("history server {location}: its schema holds tables that are not fsscale's; give a database (or schema) of its own");
            }
            tx.batch_execute(SCHEMA).map_err(fail)?;
            migrate(&mut tx, 1).map_err(fail)?;
        }
        tx.commit().map_err(fail)?;
        Ok(PostgresStore { client: RefCell::new(client), location })
    }

    fn failed(&self, e: postgres::Error) -> anyhow::Error {
        one_line(&self.location, &e)
    }

    fn add_document(&mut self, doc: &ResultsFile, rev: Option<&str>) -> Result<Added> {
        let (run_id, json) = run_id_and_json(doc);
        let rev = rev.map(str::to_string).or_else(|| doc.rev.clone());
        let packed = crate::history::document::pack(&json)?;
        let location = self.location.clone();
        let mut client = self.client.borrow_mut();
        let mut tx = client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])?;
        let status = doc.status.name();
        let added_at = crate::results::rfc3339(std::time::SystemTime::now());
        let inserted = tx.query_opt(
            "INSERT INTO results (run_id, host, kernel, rev, label, note, started_at, status, added_at, document_zstd)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (run_id) DO NOTHING RETURNING id",
            &[
                &run_id,
                &doc.host.hostname,
                &doc.host.kernel_release,
                &rev,
                &doc.label,
                &doc.note,
                &doc.started_at,
                &status,
                &added_at,
                &packed,
            ],
        )?;
        let (result, new) = match inserted {
            Some(row) => (row.get::<_, i64>(0), true),
            None => {
                let row = tx.query_one(
                    "SELECT r.id, COALESCE((SELECT SUM(f.runs) FROM figures f WHERE f.result_id = r.id), 0)::bigint
                     FROM results r WHERE r.run_id = $1",
                    &[&run_id],
                )?;
                let (id, had): (i64, i64) = (row.get(0), row.get(1));
                let stored = || -> Result<ResultsFile> {
                    let packed: Vec<u8> =
                        tx.query_one("SELECT document_zstd FROM results WHERE id = $1", &[&id])?.get(0);
                    read_packed(&packed, id, &location)
                };
                if !replaces_record(doc, &run_id, had, stored)? {
                    return Ok(Added::Already);
                }
                tx.execute("DELETE FROM figures WHERE result_id = $1", &[&id])?;
                tx.execute(
                    "UPDATE results SET rev = COALESCE($2, rev), status = $3, document_zstd = $4 WHERE id = $1",
                    &[&id, &rev, &status, &packed],
                )?;
                (id, false)
            }
        };
        let series = insert_figures(&mut tx, doc, result)?;
        tx.commit()?;
        Ok(if new { Added::New { series } } else { Added::Updated { series } })
    }
}

/// A result's figures, each under its series (made where new).
fn insert_figures(tx: &mut postgres::Transaction<'_>, doc: &ResultsFile, result: i64) -> Result<usize> {
    let mut series = 0;
    for (identity, figure, index) in figures(doc) {
        let key = identity.key();
        let memory_limit = identity.memory_limit_column()?;
        tx.execute(
            "INSERT INTO series (host, series_key, workload, op, mode, share, workers, fs, cache, variant, memory_limit, description, rate)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (host, series_key) DO NOTHING",
            &[
                &doc.host.hostname,
                &key,
                &identity.workload,
                &identity.op,
                &identity.mode,
                &identity.share,
                &(identity.workers as i64),
                &identity.fs,
                &identity.cache,
                &identity.variant,
                &memory_limit,
                &identity.describe(),
                &identity.rate_column(),
            ],
        )?;
        let id: i64 = tx
            .query_one("SELECT id FROM series WHERE host = $1 AND series_key = $2", &[&doc.host.hostname, &key])?
            .get(0);
        let (run_values, run_per_cpu) = figure.run_columns();
        tx.execute(
            "INSERT INTO figures (series_id, result_id, point_index, mean, per_cpu, runs, busy, cpu_bound, noise, profiles, unit, higher_is_better, run_values, run_per_cpu)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
            &[
                &id,
                &result,
                &(index as i64),
                &figure.mean,
                &figure.per_cpu,
                &(figure.runs as i64),
                &figure.busy,
                &figure.cpu_bound,
                &figure.noise,
                &figure.profiles.join(","),
                &figure.unit,
                &figure.higher_is_better,
                &run_values,
                &run_per_cpu,
            ],
        )?;
        series += 1;
    }
    Ok(series)
}

impl Backend for PostgresStore {
    fn add(&mut self, doc: &ResultsFile, rev: Option<&str>) -> Result<Added> {
        let location = self.location.clone();
        self.add_document(doc, rev).map_err(|e| match e.downcast::<postgres::Error>() {
            Ok(sql) => one_line(&location, &sql),
            Err(other) => other,
        })
    }

    fn series(&self, filter: &SeriesFilter) -> Result<Vec<Series>> {
        let mut sql = String::from(
            "SELECT id, host, workload, op, mode, share, workers, fs, cache, variant, memory_limit, rate FROM series WHERE true",
        );
        let mut values: Vec<Box<dyn ToSql + Sync>> = Vec::new();
        let mut bind = |sql: &mut String, clause: &str, value: Box<dyn ToSql + Sync>| {
            values.push(value);
            sql.push_str(&clause.replace('?', &format!("${}", values.len())));
        };
        if let Some(workloads) = &filter.workloads {
            bind(&mut sql, " AND workload = ANY(?)", Box::new(workloads.clone()));
        }
        if let Some(workers) = filter.workers {
            bind(&mut sql, " AND workers = ?", Box::new(i64::try_from(workers).unwrap_or(i64::MAX)));
        }
        if let Some(rate) = filter.rate {
            bind(&mut sql, " AND rate = ?", Box::new(rate.ops_per_s()));
        }
        for (column, want) in filter.text_columns() {
            bind(&mut sql, &format!(" AND {column} = ?"), Box::new(want.clone()));
        }
        sql.push_str(" ORDER BY host, workload, workers, id");
        let params: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v.as_ref()).collect();
        let rows = self.client.borrow_mut().query(&sql, &params).map_err(|e| self.failed(e))?;
        Ok(rows
            .iter()
            .map(|r| Series {
                id: r.get(0),
                host: r.get(1),
                identity: Identity {
                    workload: r.get(2),
                    op: r.get(3),
                    mode: r.get(4),
                    share: r.get(5),
                    workers: usize::try_from(r.get::<_, i64>(6)).unwrap_or(0),
                    fs: r.get(7),
                    cache: r.get(8),
                    variant: r.get(9),
                    memory_limit: r.get::<_, Option<i64>>(10).and_then(|b| u64::try_from(b).ok()),
                    rate: r.get::<_, Option<f64>>(11).and_then(Rate::new),
                },
            })
            .collect())
    }

    fn series_of(&self, host: &str, identity: &Identity) -> Result<Option<i64>> {
        let row = self
            .client
            .borrow_mut()
            .query_opt("SELECT id FROM series WHERE host = $1 AND series_key = $2", &[&host, &identity.key()])
            .map_err(|e| self.failed(e))?;
        Ok(row.map(|r| r.get(0)))
    }

    fn entries(&self, series: i64, last: Option<usize>) -> Result<Vec<Entry>> {
        let limit = last.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        let rows = self
            .client
            .borrow_mut()
            .query(
                "SELECT r.id, r.run_id, r.rev, r.label, r.note, r.kernel, r.started_at, f.point_index, f.mean, f.per_cpu,
                        f.runs, f.busy, f.cpu_bound, f.noise, f.profiles, f.unit, f.higher_is_better, f.run_values, f.run_per_cpu
                 FROM figures f JOIN results r ON r.id = f.result_id
                 WHERE f.series_id = $1 ORDER BY r.started_at DESC, r.id DESC LIMIT $2",
                &[&series, &limit],
            )
            .map_err(|e| self.failed(e))?;
        let mut entries = rows.iter().map(|r| self.entry(r)).collect::<Result<Vec<Entry>>>()?;
        entries.reverse();
        Ok(entries)
    }

    fn document(&self, result: i64) -> Result<ResultsFile> {
        let row = self
            .client
            .borrow_mut()
            .query_opt("SELECT document_zstd FROM results WHERE id = $1", &[&result])
            .map_err(|e| self.failed(e))?
            .ok_or_else(|| anyhow!("result {result} is not in {}", self.location))?;
        read_packed(&row.get::<_, Vec<u8>>(0), result, &self.location)
    }

    fn len(&self) -> Result<usize> {
        let row =
            self.client.borrow_mut().query_one("SELECT count(*) FROM results", &[]).map_err(|e| self.failed(e))?;
        Ok(usize::try_from(row.get::<_, i64>(0)).unwrap_or(0))
    }
}

impl PostgresStore {
    fn entry(&self, r: &Row) -> Result<Entry> {
        let numbers = |column: usize| -> Result<Option<Vec<f64>>> {
            let Some(text) = r.get::<_, Option<String>>(column) else { return Ok(None) };
            serde_json::from_str(&text).map(Some).map_err(|_| {
                anyhow!("history server {}: a figure's runs are not numbers; it is damaged", self.location)
            })
        };
        Ok(Entry {
            result: r.get(0),
            run_id: r.get(1),
            rev: r.get(2),
            label: r.get(3),
            note: r.get(4),
            kernel: r.get(5),
            started_at: r.get(6),
            point_index: usize::try_from(r.get::<_, i64>(7)).unwrap_or(0),
            figure: Figure {
                mean: r.get(8),
                per_cpu: r.get(9),
                runs: usize::try_from(r.get::<_, i64>(10)).unwrap_or(0),
                busy: r.get(11),
                cpu_bound: r.get(12),
                noise: r.get(13),
                profiles: r.get::<_, String>(14).split(',').filter(|p| !p.is_empty()).map(str::to_string).collect(),
                unit: r.get(15),
                higher_is_better: r.get(16),
                run_values: numbers(17)?.unwrap_or_default(),
                run_per_cpu: numbers(18)?,
            },
        })
    }
}

/// A stored document, unpacked and read as any received file is.
fn read_packed(packed: &[u8], result: i64, location: &str) -> Result<ResultsFile> {
    let damaged = || format!("result {result} of {location} is not an fsscale results file");
    let json = crate::history::document::unpack(packed).map_err(|e| e.context(damaged()))?;
    ResultsFile::from_json(&json, None).map_err(|e| e.context(damaged()))
}

/// A server's error as one line that names it.
fn one_line(location: &str, e: &postgres::Error) -> anyhow::Error {
    let what = match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    };
    let what = what.split_whitespace().collect::<Vec<_>>().join(" ");
    anyhow!("history server {location}: {}", crate::escape::for_terminal(&what))
}

/// `url` with its password, if any, left out (messages name the store by it).
pub(crate) fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:***@{host}"),
            None => format!("{user}@{host}"),
        },
        None => authority.to_string(),
    };
    let tail: String = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|kv| if kv.starts_with("password=") { "password=***".to_string() } else { kv.to_string() })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_string(),
    };
    crate::escape::for_terminal(&format!("{scheme}://{authority}{tail}")).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_password_never_reaches_a_message() {
        assert_eq!(
            without_password("postgresql://lab:s3cret@db.example/fsscale"),
            "postgresql://lab:***@db.example/fsscale"
        );
        assert_eq!(
            without_password("postgres://lab@db/h?password=x&sslmode=disable"),
            "postgres://lab@db/h?password=***&sslmode=disable"
        );
        assert_eq!(without_password("postgresql:///h?host=/run/pg"), "postgresql:///h?host=/run/pg");
    }

    #[test]
    fn a_server_at_schema_version_1_is_migrated_and_keeps_its_results() {
        let Some(server) = std::env::var_os("FSSCALE_TEST_POSTGRES") else {
            crate::skips::skip(
                "history::store::postgres::tests::a_server_at_schema_version_1_is_migrated_and_keeps_its_results",
                "FSSCALE_TEST_POSTGRES names no server (.ci/run starts one)",
            );
            return;
        };
        let database = crate::history::tests::test_database(server.to_str().expect("a URL"));
        // Version 1 as the fsscale of d52af8b made it, with one series in it.
        let mut client = Client::connect(&database.url, NoTls).unwrap();
        client.batch_execute(SCHEMA).unwrap();
        client
            .batch_execute(
                "INSERT INTO series (host, series_key, workload, op, mode, share, workers, description)
                 VALUES ('lab1', 'k', 'stat', 'op', 'process', 'private', 1, 'stat process private x1')",
            )
            .unwrap();
        drop(client);
        let store = PostgresStore::connect(&database.url).unwrap();
        let mut client = store.client.borrow_mut();
        let version: i32 = client.query_one("SELECT max(version) FROM fsscale_schema", &[]).unwrap().get(0);
        assert_eq!(version, VERSION);
        let kept: Option<f64> = client.query_one("SELECT rate FROM series WHERE series_key = 'k'", &[]).unwrap().get(0);
        assert_eq!(kept, None, "its series kept, of no rate");
        drop(client);
        // Opened again, it is at the version and nothing runs twice.
        drop(store);
        PostgresStore::connect(&database.url).unwrap();
    }
}
