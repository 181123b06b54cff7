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
        let version: usize = tx.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))?.try_into()?;
        if version > CURRENT {
            bail!(
                "its schema is version {version}, newer than this fsscale knows ({CURRENT}); use the fsscale that wrote it, or another --history-db"
            );
        }
        if version >= to {
            return Ok(());
        }
        tx.execute_batch(MIGRATIONS[version])
            .with_context(|| format!("migrating it to schema version {}", version + 1))?;
        tx.pragma_update(None, "user_version", (version + 1) as i64)?;
        tx.commit()?;
    }
}
