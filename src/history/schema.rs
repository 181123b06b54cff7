//! The store's schema, as the migrations that build it from nothing.
//!
//! `PRAGMA user_version` is the number of migrations applied. Each
//! migration is plain SQL that a shared server would take as well
//! (docs/ARCHITECTURE.md): standard types, no SQLite-only syntax beyond the
//! connection's pragmas. A migration is never edited once released; a
//! change of schema is a new one at the end.

use anyhow::{bail, Context, Result};
use rusqlite::{Connection, TransactionBehavior};

/// The migrations in order: applying the first k gives schema version k.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: results, the series their points belong to, and each point's figure.
    "CREATE TABLE results (
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
    );",
    // 2: what the queries look up by: a series' figures in order, results by revision.
    "CREATE INDEX figures_by_result ON figures (result_id);
    CREATE INDEX results_by_rev ON results (rev);
    CREATE INDEX results_by_start ON results (started_at, id);
    CREATE INDEX series_by_workload ON series (workload, workers);",
];

/// The schema version this fsscale writes.
pub(crate) const CURRENT: usize = MIGRATIONS.len();

/// Brings the store to [`CURRENT`], in one transaction per migration taken
/// with the write lock (another process migrating at the same moment waits,
/// then finds the work done).
pub(crate) fn migrate(conn: &mut Connection, to: usize) -> Result<()> {
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Checked again in the transaction that migrates: another process
        // may have migrated since the store was opened.
        if let Some(why) = check_foreign(&tx)? {
            bail!("it {why}");
        }
        let version = tx.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))? as usize;
        if version >= to {
            return Ok(());
        }
        tx.execute_batch(MIGRATIONS[version])
            .with_context(|| format!("migrating it to schema version {}", version + 1))?;
        tx.pragma_update(None, "user_version", (version + 1) as i64)?;
        tx.commit()?;
    }
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
        reference.execute_batch(migration)?;
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
