//! The store's schema, as the migrations that build it from nothing.
//!
//! `PRAGMA user_version` is the number of migrations applied. A migration
//! is SQL, and where stored data must be rewritten (re-keyed, compressed),
//! a step in Rust between its SQL before and after. A migration is never
//! edited once released; a change of schema is a new one at the end, and
//! the tests migrate stores of every earlier version.

use anyhow::{bail, Context, Result};
use rusqlite::{Connection, Transaction, TransactionBehavior};

/// One schema version's change.
pub(crate) struct Migration {
    pub before: &'static str,
    /// Rewrites what the store holds, between `before` and `after`; nothing
    /// to do in an empty store.
    pub data: Option<fn(&Transaction) -> Result<()>>,
    pub after: &'static str,
}

/// The migrations in order: applying the first k gives schema version k.
pub(crate) const MIGRATIONS: &[Migration] = &[
    // 1: results, the series their points belong to, and each point's figure.
    Migration { before: V1, data: None, after: "" },
    // 2: what the queries look up by: a series' figures in order, results by revision.
    Migration { before: V2, data: None, after: "" },
    // 3: series keyed by Identity::key, not a serialisation of it, with the
    // identity's parts as columns to filter on; each figure's runs;
    // documents compressed; indexes that serve the queries.
    Migration { before: V3_BEFORE, data: Some(super::upgrade::to_v3), after: V3_AFTER },
    // 4: an open loop's rate, a part of its series' identity (series of
    // response times at a rate); closed loops' series have none.
    Migration { before: V4, data: None, after: "" },
];

const V1: &str = "CREATE TABLE results (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL UNIQUE,
        host TEXT NOT NULL,
        kernel TEXT NOT NULL,
        rev TEXT,
        label TEXT,
        note TEXT,
        started_at TEXT NOT NULL,
        status TEXT NOT NULL,
        added_at TEXT NOT NULL,
        document TEXT NOT NULL
    );
    CREATE TABLE series (
        id INTEGER PRIMARY KEY,
        host TEXT NOT NULL,
        identity TEXT NOT NULL,
        workload TEXT NOT NULL,
        workers INTEGER NOT NULL,
        description TEXT NOT NULL,
        UNIQUE (host, identity)
    );
    CREATE TABLE figures (
        series_id INTEGER NOT NULL REFERENCES series (id),
        result_id INTEGER NOT NULL REFERENCES results (id),
        point_index INTEGER NOT NULL,
        mean REAL NOT NULL,
        per_cpu REAL,
        runs INTEGER NOT NULL,
        busy INTEGER NOT NULL,
        cpu_bound INTEGER NOT NULL,
        noise TEXT,
        profiles TEXT NOT NULL,
        unit TEXT NOT NULL,
        higher_is_better INTEGER NOT NULL,
        PRIMARY KEY (series_id, result_id, point_index)
    );";

const V2: &str = "CREATE INDEX figures_by_result ON figures (result_id);
    CREATE INDEX results_by_rev ON results (rev);
    CREATE INDEX results_by_start ON results (started_at, id);
    CREATE INDEX series_by_workload ON series (workload, workers);";

const V3_BEFORE: &str = "ALTER TABLE series ADD COLUMN op TEXT NOT NULL DEFAULT '';
    ALTER TABLE series ADD COLUMN mode TEXT NOT NULL DEFAULT '';
    ALTER TABLE series ADD COLUMN share TEXT NOT NULL DEFAULT '';
    ALTER TABLE series ADD COLUMN fs TEXT;
    ALTER TABLE series ADD COLUMN cache TEXT;
    ALTER TABLE series ADD COLUMN variant TEXT;
    ALTER TABLE series ADD COLUMN memory_limit INTEGER;
    ALTER TABLE figures ADD COLUMN run_values TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE figures ADD COLUMN run_per_cpu TEXT;
    ALTER TABLE results ADD COLUMN document_zstd BLOB;";

const V3_AFTER: &str = "ALTER TABLE series RENAME COLUMN identity TO series_key;
    ALTER TABLE results DROP COLUMN document;
    DROP INDEX results_by_start;
    DROP INDEX series_by_workload;
    CREATE INDEX series_by_point ON series (workload, workers, mode, share);";

const V4: &str = "ALTER TABLE series ADD COLUMN rate REAL;";

/// The schema version this fsscale writes.
pub(crate) const CURRENT: usize = MIGRATIONS.len();

/// Brings the store to [`CURRENT`], in one transaction per migration taken
/// with the write lock (another process migrating at the same moment waits,
/// then finds the work done).
pub(crate) fn migrate(conn: &mut Connection, to: usize) -> Result<()> {
    let mut rewrote = false;
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Checked again in the transaction that migrates: another process
        // may have migrated since the store was opened.
        if let Some(why) = check_foreign(&tx)? {
            bail!("it {why}");
        }
        let version = tx.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))? as usize;
        if version >= to {
            break;
        }
        let migration = &MIGRATIONS[version];
        let step = || -> Result<()> {
            tx.execute_batch(migration.before)?;
            if let Some(data) = migration.data {
                data(&tx)?;
            }
            tx.execute_batch(migration.after)?;
            Ok(())
        };
        step().with_context(|| format!("migrating it to schema version {}", version + 1))?;
        tx.pragma_update(None, "user_version", (version + 1) as i64)?;
        tx.commit()?;
        rewrote |= migration.data.is_some();
    }
    // A rewrite (documents compressed) leaves the old pages free: the file
    // shrinks only when it is copied anew, which needs no transaction open.
    if rewrote {
        let pages = |what: &str| conn.query_row(&format!("PRAGMA {what}"), [], |r| r.get::<_, i64>(0));
        if pages("freelist_count")? * 4 > pages("page_count")? {
            conn.execute_batch("VACUUM").context("compacting it after the migration")?;
        }
    }
    Ok(())
}

/// Why the store at `conn` is not one fsscale can use, before anything
/// else reads or writes it (with the fix, as words after the store's name):
/// `Ok(None)` when its schema is exactly what fsscale's
/// migrations make at its version (nothing else: no table, index, view or
/// trigger fsscale did not make, since a trigger runs inside fsscale's own
/// writes). SQLite errors (not a database) pass through for the caller.
pub(crate) fn check_foreign(conn: &Connection) -> rusqlite::Result<Option<String>> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version < 0 {
        return Ok(Some(format!("has schema version {version}, which no fsscale writes; it is not fsscale's: give --history-db another path")));
    }
    if version as usize > CURRENT {
        return Ok(Some(format!(
            "has schema version {version}, newer than this fsscale knows ({CURRENT}); use the fsscale that wrote it, or another --history-db"
        )));
    }
    Ok(unexpected_objects(conn, version as usize)?
        .map(|why| format!("{why}; it is not fsscale's: give --history-db another path")))
}

/// What the schema of `conn` has that fsscale's first `version` migrations
/// do not make, or lacks of what they make, as words; `None` when it is
/// exactly theirs. A store at version 0 must be empty: only an empty
/// database is ever migrated.
fn unexpected_objects(conn: &Connection, version: usize) -> rusqlite::Result<Option<String>> {
    let have = schema_objects(conn)?;
    let reference = Connection::open_in_memory()?;
    for migration in &MIGRATIONS[..version] {
        reference.execute_batch(migration.before)?;
        reference.execute_batch(migration.after)?;
    }
    let want = schema_objects(&reference)?;
    if let Some((kind, name, _)) = have.iter().find(|o| !want.contains(o)) {
        let name = crate::escape::for_terminal(name);
        return Ok(Some(if version == 0 {
            format!("has a {kind} {name} but no fsscale schema version")
        } else {
            format!("has a {kind} {name} that fsscale's schema version {version} does not make")
        }));
    }
    if let Some((kind, name, _)) = want.iter().find(|o| !have.contains(o)) {
        return Ok(Some(format!("lacks the {kind} {name} of fsscale's schema version {version}")));
    }
    Ok(None)
}

/// Every object of a schema: its kind, name and the SQL that made it.
fn schema_objects(conn: &Connection) -> rusqlite::Result<Vec<(String, String, Option<String>)>> {
    let mut query = conn.prepare("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")?;
    let rows = query.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    rows.collect()
}
