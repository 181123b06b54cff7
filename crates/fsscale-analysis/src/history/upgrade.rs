//! The data steps of the store's migrations: what stored rows need
//! rewritten when the schema changes, written against the rows as the
//! earlier version left them (never against today's types, which move on).

use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension, Transaction};
use serde::Deserialize;

use super::document;
use super::point::{Figure, Identity};
use crate::results::ResultsFile;

/// A series' identity as schema versions 1 and 2 keyed it: the JSON of the
/// struct as it then was (an identity written before `memory_limit` was
/// added lacks it, and was a series of its own; now they are one).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyV2 {
    workload: String,
    op: String,
    mode: String,
    share: String,
    workers: usize,
    #[serde(default)]
    fs: Option<String>,
    #[serde(default)]
    cache: Option<String>,
    #[serde(default)]
    variant: Option<String>,
    #[serde(default)]
    memory_limit: Option<u64>,
}

/// To version 3: each series re-keyed by [`Identity::key`] with its parts
/// in columns (series whose old keys name one identity become one), each
/// figure's runs from its document, and every document compressed.
pub(super) fn to_v3(tx: &Transaction) -> Result<()> {
    let old: Vec<(i64, String, String)> = {
        let mut query = tx.prepare("SELECT id, host, identity FROM series ORDER BY id")?;
        let rows = query.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (id, host, json) in old {
        let k: KeyV2 =
            serde_json::from_str(&json).with_context(|| format!("series {id}'s key is not one fsscale wrote"))?;
        let identity = Identity {
            workload: k.workload,
            op: k.op,
            mode: k.mode,
            share: k.share,
            workers: k.workers,
            fs: k.fs,
            cache: k.cache,
            variant: k.variant,
            memory_limit: k.memory_limit,
            // Stores of version 2 kept no open loop.
            rate: None,
        };
        let key = identity.key();
        let same: Option<i64> = tx
            .query_row("SELECT id FROM series WHERE host = ?1 AND identity = ?2", params![host, key], |r| r.get(0))
            .optional()?;
        match same {
            Some(keep) => {
                tx.execute("UPDATE OR IGNORE figures SET series_id = ?1 WHERE series_id = ?2", params![keep, id])?;
                tx.execute("DELETE FROM figures WHERE series_id = ?1", [id])?;
                tx.execute("DELETE FROM series WHERE id = ?1", [id])?;
            }
            None => {
                tx.execute(
                    "UPDATE series SET identity = ?2, op = ?3, mode = ?4, share = ?5, fs = ?6, cache = ?7, variant = ?8,
                     memory_limit = ?9, description = ?10 WHERE id = ?1",
                    params![
                        id,
                        key,
                        identity.op,
                        identity.mode,
                        identity.share,
                        identity.fs,
                        identity.cache,
                        identity.variant,
                        identity.memory_limit.map(i64::try_from).transpose()?,
                        identity.describe()
                    ],
                )?;
            }
        }
    }
    let results: Vec<i64> = {
        let mut query = tx.prepare("SELECT id FROM results ORDER BY id")?;
        let rows = query.query_map([], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for id in results {
        let text: String = tx.query_row("SELECT document FROM results WHERE id = ?1", [id], |r| r.get(0))?;
        tx.execute("UPDATE results SET document_zstd = ?2 WHERE id = ?1", params![id, document::pack(&text)?])?;
        // A damaged document stays as it was, to be refused where it is
        // read; its figures keep no runs (they count as their means alone),
        // and the rest of the store stays usable.
        let Ok(doc) = ResultsFile::from_json(&text, None) else { continue };
        let points: Vec<i64> = {
            let mut query = tx.prepare("SELECT point_index FROM figures WHERE result_id = ?1")?;
            let rows = query.query_map([id], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for index in points {
            let Some(figure) = usize::try_from(index).ok().and_then(|i| doc.points.get(i)).and_then(Figure::of) else {
                continue;
            };
            let (values, per_cpu) = figure.run_columns();
            tx.execute(
                "UPDATE figures SET run_values = ?3, run_per_cpu = ?4 WHERE result_id = ?1 AND point_index = ?2",
                params![id, index, values, per_cpu],
            )?;
        }
    }
    Ok(())
}
