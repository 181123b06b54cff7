use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use super::*;
use crate::tree::{fill_content, write_entry_header, write_tar, EntryKind, TreeSpec};

fn extract_bytes(tar: &[u8], dir: &Path) -> Result<ExtractStats> {
    let root = std::fs::File::open(dir).unwrap();
    extract(&mut &tar[..], root.as_fd(), &|| false, &|_| {})
}

/// A tar archive of hand-made entries: (name, typeflag, link, data).
fn craft(entries: &[(&str, u8, &str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, typeflag, link, data) in entries {
        write_entry_header(&mut out, name, 0o644, data.len() as u64, 1_600_000_000, *typeflag, link).unwrap();
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.extend_from_slice(&[0u8; 1024]);
    out
}

/// Every path below `dir` with its type, size, mode, link target.
fn listing(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(base).unwrap().display().to_string();
            let desc = if meta.file_type().is_symlink() {
                format!("link -> {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                walk(base, &path, out);
                format!("dir {:o}", meta.permissions().mode() & 0o7777)
            } else {
                format!("file {} {:o} {}", meta.len(), meta.permissions().mode() & 0o7777, meta.mtime())
            };
            out.insert(rel, desc);
        }
    }
    walk(dir, dir, &mut out);
    out
}

#[test]
fn extracts_exactly_what_the_generator_made() {
    let spec = TreeSpec { scale: 0.003, seed: 11 };
    let mut tar = Vec::new();
    let made = write_tar(&spec, &mut tar).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let got = extract_bytes(&tar, dir.path()).unwrap();
    let scanned = scan(&mut &tar[..]).unwrap();
    assert_eq!((scanned.contents, scanned.refusal), (got, None), "scan counts what extraction creates");
    assert_eq!(
        (got.files, got.dirs, got.symlinks, got.hardlinks, got.bytes),
        (made.files, made.dirs, made.symlinks, made.hardlinks, made.bytes)
    );
    for entry in spec.entries() {
        let path = dir.path().join(&entry.path);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        match entry.kind {
            EntryKind::Dir => {
                assert!(meta.is_dir());
                assert_eq!(meta.permissions().mode() & 0o777, entry.mode);
                assert_eq!(meta.mtime(), entry.mtime, "{}", entry.path);
            }
            EntryKind::File { size, content_seed } => {
                assert_eq!(meta.len(), size, "{}", entry.path);
                assert_eq!(meta.permissions().mode() & 0o777, entry.mode, "{}", entry.path);
                assert_eq!(meta.mtime(), entry.mtime);
                let mut expected = vec![0u8; size as usize];
                fill_content(content_seed, 0, &mut expected);
                assert!(std::fs::read(&path).unwrap() == expected, "content of {}", entry.path);
            }
            EntryKind::Symlink { target } => {
                assert_eq!(std::fs::read_link(&path).unwrap().display().to_string(), target);
            }
            EntryKind::HardLink { target } => {
                assert_eq!(meta.ino(), std::fs::metadata(dir.path().join(target)).unwrap().ino());
            }
        }
    }
}

#[test]
fn agrees_with_gnu_tar() {
    let spec = TreeSpec { scale: 0.002, seed: 5 };
    let mut tar = Vec::new();
    write_tar(&spec, &mut tar).unwrap();
    let ours = tempfile::tempdir().unwrap();
    extract_bytes(&tar, ours.path()).unwrap();
    let theirs = tempfile::tempdir().unwrap();
    let file = theirs.path().join("t.tar");
    std::fs::write(&file, &tar).unwrap();
    let out_dir = theirs.path().join("x");
    std::fs::create_dir(&out_dir).unwrap();
    let status = std::process::Command::new("tar").arg("xf").arg(&file).arg("-C").arg(&out_dir).status().unwrap();
    assert!(status.success());
    assert_eq!(listing(ours.path()), listing(&out_dir));
}

fn refused(tar: &[u8], needle: &str) {
    let outer = tempfile::tempdir().unwrap();
    let dir = outer.path().join("x");
    std::fs::create_dir(&dir).unwrap();
    let err = format!("{:#}", extract_bytes(tar, &dir).unwrap_err());
    assert!(err.contains(needle), "{err}");
    // Nothing appeared beside the extraction directory.
    let beside: Vec<_> = std::fs::read_dir(outer.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(beside, ["x"]);
    // scan() finds the same before anything runs (or fails the same way on a broken archive).
    match scan(&mut &tar[..]) {
        Ok(scanned) => assert!(scanned.refusal.as_deref().is_some_and(|r| r.contains(needle)), "{scanned:?}"),
        Err(e) => assert!(format!("{e:#}").contains(needle), "{e:#}"),
    }
}

#[test]
fn refuses_paths_that_leave_the_directory() {
    refused(
        &craft(&[("/tmp/fsscale-evil", b'0', "", b"x")]),
        "entry \"/tmp/fsscale-evil\" at byte offset 0: refusing an absolute path",
    );
    refused(
        &craft(&[("ok", b'0', "", b"x"), ("a/../../evil", b'0', "", b"x")]),
        "entry \"a/../../evil\" at byte offset 1024: refusing a path with a \"..\" component",
    );
    refused(
        &craft(&[("hl", b'1', "../outside", b"")]),
        "hard link to \"../outside\": refusing a path with a \"..\" component",
    );
    refused(&craft(&[("hl", b'1', "/etc/passwd", b"")]), "hard link to \"/etc/passwd\": refusing an absolute path");
    // A hard link through a symbolic link would link whatever it leads to.
    refused(
        &craft(&[("up", b'2', "/etc", b""), ("hl", b'1', "up/passwd", b"")]),
        "entry \"hl\" at byte offset 512: hard link to \"up/passwd\": \"up\": is a symbolic link or not a directory",
    );
}

#[test]
fn symbolic_links_are_created_as_they_are_whatever_their_target() {
    // Absolute, leaving the tree, chained, dangling: GNU tar creates each as
    // it is, and so does this extractor, which never follows one.
    let outer = tempfile::tempdir().unwrap();
    let outside = outer.path().join("outside");
    std::fs::write(&outside, b"untouched").unwrap();
    let links = [
        ("localtime", "/etc/localtime"),
        ("out", "../outside"),
        ("doc/cpp/README.Bugs", "../gcc-12/README.Bugs"),
        ("doc/gcc-12", "gcc-12-base"),
        ("doc/up", "../../.."),
        ("esc", "doc/up/../../outside"),
        ("dangling", "no/such/thing"),
    ];
    let mut entries: Vec<(&str, u8, &str, &[u8])> =
        vec![("doc/gcc-12-base/", b'5', "", b""), ("doc/gcc-12-base/README.Bugs", b'0', "", b"bugs")];
    entries.extend(links.iter().map(|(name, target)| (*name, b'2', *target, &b""[..])));
    // A later file of a link's name replaces the link, never writes through it.
    entries.push(("out", b'0', "", b"replaced"));
    let tar = craft(&entries);
    let dir = outer.path().join("x");
    std::fs::create_dir(&dir).unwrap();
    let stats = extract_bytes(&tar, &dir).unwrap();
    assert_eq!((stats.symlinks, stats.files), (7, 2));
    for (name, target) in links.iter().filter(|(name, _)| *name != "out") {
        assert_eq!(std::fs::read_link(dir.join(name)).unwrap().display().to_string(), *target, "{name}");
    }
    assert_eq!(std::fs::read(dir.join("out")).unwrap(), b"replaced");
    assert_eq!(std::fs::read(&outside).unwrap(), b"untouched");
    assert_eq!(scan(&mut &tar[..]).unwrap().refusal, None);
}

#[test]
fn never_writes_through_a_symlink_from_the_archive() {
    // "d/up" -> ".." stays inside, but "d/up/x" must not be written through it,
    // and neither may "esc/x" through a link pointing at an outside directory.
    let tar = craft(&[("d/", b'5', "", b""), ("d/up", b'2', "..", b""), ("d/up/x", b'0', "", b"data")]);
    refused(&tar, "directory \"d/up\": is a symbolic link or not a directory; refusing to write through it");
}

#[test]
fn reports_truncation_and_corruption_with_offsets() {
    let tar = craft(&[("a", b'0', "", &[7u8; 2000]), ("b", b'0', "", b"x")]);
    refused(&tar[..1100], "truncated tarball: it ends at byte offset 1100 inside entry \"a\" (header at byte offset 0, 1412 bytes of data missing)");
    refused(&tar[..2800], "truncated tarball: it ends at byte offset 2800 inside a header");
    let mut bad = tar.clone();
    bad[2560 + 10] ^= 0x55; // inside b's header
    refused(&bad, "corrupt tarball: bad header checksum at byte offset 2560");
    refused(&craft(&[("null", b'3', "", b"")]), "unsupported entry type '3'");
}

#[test]
fn reads_long_names_from_pax_and_gnu_headers() {
    let deep = format!("{}/{}", "d".repeat(200), "f".repeat(150));
    let mut tar = craft(&[(deep.as_str(), b'0', "", b"pax")]);
    tar.truncate(tar.len() - 1024);
    // A GNU long name ('L') entry followed by the entry it names.
    let gnu = format!("{}/{}", "g".repeat(120), "h".repeat(120));
    let mut name_data = gnu.clone().into_bytes();
    name_data.push(0);
    write_entry_header(&mut tar, "././@LongLink", 0o644, name_data.len() as u64, 0, b'L', "").unwrap();
    tar.extend_from_slice(&name_data);
    tar.resize(tar.len().div_ceil(512) * 512, 0);
    write_entry_header(&mut tar, "short", 0o644, 3, 0, b'0', "").unwrap();
    tar.extend_from_slice(b"gnu");
    tar.resize(tar.len().div_ceil(512) * 512, 0);
    tar.extend_from_slice(&[0u8; 1024]);
    let dir = tempfile::tempdir().unwrap();
    extract_bytes(&tar, dir.path()).unwrap();
    assert_eq!(std::fs::read(dir.path().join(&deep)).unwrap(), b"pax");
    assert_eq!(std::fs::read(dir.path().join(&gnu)).unwrap(), b"gnu");
}

#[test]
fn can_be_stopped_between_entries() {
    let tar = craft(&[("a", b'0', "", b"1"), ("b", b'0', "", b"2")]);
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::File::open(dir.path()).unwrap();
    let err = extract(&mut &tar[..], root.as_fd(), &|| true, &|_| {}).unwrap_err();
    assert_eq!(err.to_string(), "stopped");
}

#[test]
fn never_writes_through_a_chain_of_links() {
    // Each link is created; an entry under one is refused, however the chain runs.
    let tar = craft(&[
        ("a/b/c/", b'5', "", b""),
        ("a/b/c/up", b'2', "../../..", b""),
        ("esc", b'2', "a/b/c/up/../../..", b""),
        ("esc/x", b'0', "", b"data"),
    ]);
    refused(&tar, "entry \"esc/x\" at byte offset 1536: directory \"esc\": is a symbolic link or not a directory");
}

/// Every entry of a tarball GNU tar made of real trees of this machine,
/// extracted by this extractor and by GNU tar: the same listing.
#[test]
fn real_trees_with_chained_and_absolute_links_extract_as_gnu_tar_extracts_them() {
    let work = tempfile::tempdir().unwrap();
    // A tree shaped as /usr/share/doc is on Debian (gcc-12's links), with an
    // absolute link as in /etc, beside real trees where this machine has them.
    let own = work.path().join("own");
    std::fs::create_dir_all(own.join("doc/gcc-12-base")).unwrap();
    std::fs::create_dir_all(own.join("doc/cpp")).unwrap();
    std::fs::write(own.join("doc/gcc-12-base/README.Bugs"), b"bugs").unwrap();
    std::os::unix::fs::symlink("gcc-12-base", own.join("doc/gcc-12")).unwrap();
    std::os::unix::fs::symlink("../gcc-12/README.Bugs", own.join("doc/cpp/README.Bugs")).unwrap();
    std::os::unix::fs::symlink("/etc/localtime", own.join("localtime")).unwrap();
    std::os::unix::fs::symlink("../../escapes", own.join("doc/escapes")).unwrap();
    let tarball = work.path().join("real.tar");
    let mut tar = std::process::Command::new("tar");
    tar.arg("cf").arg(&tarball).arg("-C").arg(work.path()).arg("own");
    for real in ["/usr/share/doc", "/etc/alternatives"] {
        if Path::new(real).is_dir() {
            let (parent, name) = real.rsplit_once('/').unwrap();
            tar.arg("-C").arg(parent).arg(name);
        }
    }
    assert!(tar.status().unwrap().success(), "GNU tar (a prerequisite of the tests) made the tarball");
    let bytes = std::fs::read(&tarball).unwrap();
    assert_eq!(scan(&mut &bytes[..]).unwrap().refusal, None);
    let ours = work.path().join("ours");
    let theirs = work.path().join("theirs");
    std::fs::create_dir(&ours).unwrap();
    std::fs::create_dir(&theirs).unwrap();
    let stats = extract_bytes(&bytes, &ours).unwrap();
    assert!(stats.symlinks >= 4, "{stats:?}");
    let status = std::process::Command::new("tar").arg("xf").arg(&tarball).arg("-C").arg(&theirs).status().unwrap();
    assert!(status.success());
    let (a, b) = (listing(&ours), listing(&theirs));
    let differ: Vec<_> = a.iter().filter(|(k, v)| b.get(*k) != Some(*v)).take(5).collect();
    assert!(
        differ.is_empty() && a.len() == b.len(),
        "{} vs {} entries; first that differ: {differ:?}",
        a.len(),
        b.len()
    );
}

#[test]
fn refuses_sizes_that_would_wrap() {
    // GNU base-256 size of 2^64 - 1.
    let mut tar = craft(&[("big", b'0', "", b"")]);
    tar[124..128].copy_from_slice(&[0x80, 0, 0, 0]);
    tar[128..136].copy_from_slice(&[0xff; 8]);
    let sum: u64 =
        tar[..512].iter().enumerate().map(|(i, &b)| if (148..156).contains(&i) { 32 } else { u64::from(b) }).sum();
    tar[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    refused(&tar, "is impossibly large");
    // A pax size of 2^64 - 1.
    let record = "29 size=18446744073709551615\n";
    let mut pax = Vec::new();
    write_entry_header(&mut pax, "pax", 0o644, record.len() as u64, 0, b'x', "").unwrap();
    pax.extend_from_slice(record.as_bytes());
    pax.resize(1024, 0);
    pax.extend_from_slice(&craft(&[("big", b'0', "", b"")]));
    refused(&pax, "is impossibly large");
}

#[test]
fn a_directory_entry_over_a_link_replaces_the_link_and_never_touches_its_target() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o751)).unwrap();
    let before = std::fs::metadata(outside.path()).unwrap();
    let target = outside.path().to_str().unwrap();
    // A link, then a directory of the same name with another mode and mtime:
    // its fixup, by path, must reach the new directory, not the link's target.
    let mut tar = craft(&[("l", b'2', target, b"")]);
    tar.truncate(tar.len() - 1024);
    write_entry_header(&mut tar, "l/", 0o555, 0, 1_500_000_000, b'5', "").unwrap();
    tar.extend_from_slice(&[0u8; 1024]);
    let dir = tempfile::tempdir().unwrap();
    let got = extract_bytes(&tar, dir.path()).unwrap();
    assert_eq!((got.symlinks, got.dirs), (1, 1));
    let made = std::fs::symlink_metadata(dir.path().join("l")).unwrap();
    assert!(made.is_dir(), "the link was replaced by the directory");
    assert_eq!((made.permissions().mode() & 0o7777, made.mtime()), (0o555, 1_500_000_000));
    let after = std::fs::metadata(outside.path()).unwrap();
    assert_eq!((after.permissions().mode(), after.mtime()), (before.permissions().mode(), before.mtime()));
}

#[test]
fn directories_get_their_modes_and_times_with_or_without_a_chmod() {
    // 0755 is made as it is; 0555 and 0700-less modes are fixed at the end,
    // after the entries inside them are written.
    let mut tar = Vec::new();
    for (name, mode, mtime) in
        [("a/", 0o755, 1_400_000_000), ("a/ro/", 0o555, 1_400_000_001), ("a/x/", 0o1777, 1_400_000_002)]
    {
        write_entry_header(&mut tar, name, mode, 0, mtime, b'5', "").unwrap();
    }
    write_entry_header(&mut tar, "a/ro/f", 0o644, 1, 1_400_000_003, b'0', "").unwrap();
    tar.extend_from_slice(b"1");
    tar.resize(tar.len().div_ceil(512) * 512, 0);
    tar.extend_from_slice(&[0u8; 1024]);
    let dir = tempfile::tempdir().unwrap();
    extract_bytes(&tar, dir.path()).unwrap();
    let meta = |p: &str| std::fs::symlink_metadata(dir.path().join(p)).unwrap();
    assert_eq!((meta("a").permissions().mode() & 0o7777, meta("a").mtime()), (0o755, 1_400_000_000));
    assert_eq!((meta("a/ro").permissions().mode() & 0o7777, meta("a/ro").mtime()), (0o555, 1_400_000_001));
    assert_eq!((meta("a/x").permissions().mode() & 0o7777, meta("a/x").mtime()), (0o1777, 1_400_000_002));
    assert_eq!(std::fs::read(dir.path().join("a/ro/f")).unwrap(), b"1");
    std::fs::set_permissions(dir.path().join("a/ro"), std::fs::Permissions::from_mode(0o755)).unwrap();
}
