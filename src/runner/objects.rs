//! Where the objects whose locks a run's workers waited on were: the lock
//! profile names an inode by number and device; a run's own directories
//! (the shared one, each worker's) are found by them in its scratch
//! directory, before it is removed.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::results::RunRecord;

/// The scratch directory's entries looked at, at most: the workers' own
/// directories sit in its top levels; a deep tree (untar's) is not walked.
const MOST_ENTRIES: usize = 10_000;
const DEEPEST: usize = 2;

/// Sets each lock object's `path` (relative to `scratch`; `.` for itself) where it is in there.
pub(super) fn place_lock_objects(record: &mut RunRecord, scratch: &Path) {
    let Some(locks) = record.sections.locks.as_mut() else { return };
    let mut wanted: HashMap<(u64, String), Option<String>> = locks
        .sites
        .iter()
        .flat_map(|s| &s.objects)
        .filter(|o| o.ino != 0)
        .map(|o| ((o.ino, o.dev.clone()), None))
        .collect();
    if wanted.is_empty() {
        return;
    }
    let mut seen = 0;
    walk(scratch, scratch, 0, &mut seen, &mut wanted);
    for object in locks.sites.iter_mut().flat_map(|s| s.objects.iter_mut()) {
        if let Some(Some(path)) = wanted.get(&(object.ino, object.dev.clone())) {
            object.path = Some(path.clone());
        }
    }
}

fn walk(root: &Path, at: &Path, depth: usize, seen: &mut usize, wanted: &mut HashMap<(u64, String), Option<String>>) {
    let Ok(meta) = std::fs::symlink_metadata(at) else { return };
    let dev = format!("{}:{}", libc::major(meta.dev()), libc::minor(meta.dev()));
    if let Some(slot) = wanted.get_mut(&(meta.ino(), dev)) {
        let relative = at.strip_prefix(root).map(|p| p.display().to_string()).unwrap_or_default();
        *slot = Some(if relative.is_empty() { ".".to_string() } else { relative });
    }
    if depth == DEEPEST || !meta.is_dir() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(at) else { return };
    for entry in entries.flatten() {
        *seen += 1;
        if *seen > MOST_ENTRIES {
            return;
        }
        walk(root, &entry.path(), depth + 1, seen, wanted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures::{run, rwsem_site};
    use crate::results::{LockObject, LockProfile};

    #[test]
    fn a_lock_object_in_the_scratch_directory_gets_its_place() {
        let scratch = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(scratch.path().join("shared/deeper")).unwrap();
        let meta = std::fs::metadata(scratch.path().join("shared")).unwrap();
        let dev = format!("{}:{}", libc::major(meta.dev()), libc::minor(meta.dev()));
        let object = |ino: u64| LockObject {
            object: format!("directory inode {ino} on {dev}"),
            ino,
            dev: dev.clone(),
            path: None,
            count: 1,
            wait_s: 1.0,
        };
        let mut site = rwsem_site("down_write ← filename_create", 1, 1.0);
        let root_ino = std::fs::metadata(scratch.path()).unwrap().ino();
        site.objects = vec![object(meta.ino()), object(root_ino), object(1)];
        let mut record = run(0, &[1], 1.0);
        record.sections.locks = Some(LockProfile::from_sites(1, 0, vec![site]));
        place_lock_objects(&mut record, scratch.path());
        let locks = record.sections.locks.unwrap();
        let places: Vec<Option<&str>> = locks.sites[0].objects.iter().map(|o| o.path.as_deref()).collect();
        assert_eq!(places, [Some("shared"), Some("."), None]);
    }
}
