//! `fsscale tree` and the `untar` workload: deterministic trees, complete
//! extraction by every worker, external commands, hostile tarballs.

use std::io::Write;

use fsscale::results::Status;
use fsscale::workloads::Workload;

use crate::util::*;

fn sha_like(path: &std::path::Path) -> (u64, u64) {
    // A cheap fingerprint: length and a 64-bit FNV-1a of the bytes.
    let bytes = std::fs::read(path).unwrap();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in &bytes {
        h = (h ^ u64::from(*b)).wrapping_mul(0x1000_0000_01b3);
    }
    (bytes.len() as u64, h)
}

#[test]
fn tree_is_deterministic_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let tar = |name: &str, seed: &str| {
        let out = fsscale()
            .args(["tree", "--scale", "0.01", "--seed", seed, "--tar"])
            .arg(dir.path().join(name))
            .output()
            .unwrap();
        assert_success(&out);
        stdout(&out)
    };
    let summary = tar("a.tar", "9");
    tar("b.tar", "9");
    tar("c.tar", "10");
    assert_eq!(sha_like(&dir.path().join("a.tar")), sha_like(&dir.path().join("b.tar")), "same seed, same bytes");
    assert_ne!(sha_like(&dir.path().join("a.tar")), sha_like(&dir.path().join("c.tar")));
    // Every tree has at least one symbolic link and one hard link.
    assert!(
        summary.contains(" symlinks, ") && !summary.contains(" 0 symlinks") && !summary.contains(" 0 hard links"),
        "{summary}"
    );
    let out = fsscale().args(["tree", "--scale", "0.01", "--tar"]).arg(dir.path().join("a.tar")).output().unwrap();
    assert_one_line_error(&out, "exists; remove it or choose another name");
    // The directory form matches the archive, entry for entry.
    let tree = dir.path().join("tree");
    assert_success(&fsscale().args(["tree", "--scale", "0.01", "--seed", "9", "--dir"]).arg(&tree).output().unwrap());
    let listed = std::process::Command::new("tar").arg("tf").arg(dir.path().join("a.tar")).output().unwrap();
    for line in String::from_utf8_lossy(&listed.stdout).lines() {
        assert!(std::fs::symlink_metadata(tree.join(line.trim_end_matches('/'))).is_ok(), "{line} missing from --dir");
    }
}

#[test]
fn every_worker_extracts_every_entry_in_both_modes() {
    let env = TestEnv::new();
    let out = env.run(&["untar", "-j", "1,3", "--mode", "process,thread", "-n", "2", "--scale", "0.005"]);
    assert_success(&out);
    let doc = env.results();
    let untar = doc.settings.untar.clone().expect("tarball recorded");
    assert_eq!(untar.scale, Some(0.005));
    assert_eq!(doc.points.len(), 4);
    for point in &doc.points {
        for run in &point.runs {
            assert_eq!(run.per_worker_ops, vec![untar.entries; point.workers], "every worker extracted everything");
            assert_eq!(run.bytes, Some(untar.bytes * point.workers as u64));
            let completion = run.completion_s.as_ref().unwrap();
            assert!(completion.iter().all(|&c| c > 0.0 && c <= run.elapsed_s));
        }
    }
    let table = stdout(&out);
    assert!(table.contains("eff. concurrency"), "{table}");
    // A header of one short line, then which tarball it was.
    let lines: Vec<&str> = table.lines().collect();
    let header = lines.iter().position(|l| l.starts_with("untar")).unwrap();
    assert!(lines[header].len() < 200, "{}", lines[header]);
    let tarball = format!("  tarball: the generated tree, --scale 0.005 --seed 1: {} entries", untar.entries);
    assert!(lines[header + 1].starts_with(&tarball), "{table}");
    assert!(table.lines().any(|l| l.trim_start().starts_with("1  process  private") && l.contains("1.00")), "{table}");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn external_command_extracts_with_gnu_tar() {
    let env = TestEnv::new();
    let out = env.run(&["untar", "-j", "2", "--scale", "0.005", "--extract-cmd", "tar xf {tarball} -C {dir}"]);
    assert_success(&out);
    let doc = env.results();
    let untar = doc.settings.untar.clone().unwrap();
    assert_eq!(untar.extract_cmd.as_deref(), Some("tar xf {tarball} -C {dir}"));
    assert_eq!(doc.points[0].runs[0].per_worker_ops, vec![untar.entries; 2]);
    // The workers only wait for tar: their runq and asleep shares are not shown as tar's.
    let text = stdout(&out);
    assert!(text.lines().any(|l| l.trim_end().ends_with("runq  asleep")), "{text}");
    let row = text.lines().find(|l| l.trim_start().starts_with("2 ")).unwrap();
    // The last two figures, before any mark (!busy, ...).
    let cells: Vec<&str> = row.split_whitespace().take_while(|c| !c.starts_with(['!', '~'])).collect();
    assert_eq!(cells[cells.len() - 2..], ["-", "-"], "{text}");
    assert!(text.contains("(- where workers only wait for a command they ran)"), "{text}");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn failing_command_reports_status_and_stderr() {
    let env = TestEnv::new();
    let out = env.run(&["untar", "-j", "1", "--scale", "0.005", "--extract-cmd", "tar xf {tarball} -C {dir}/missing"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("untar (process, private, 1 worker), run 1 of 1: worker 0: `tar xf"), "{err}");
    assert!(err.contains("exited with status 2: tar:"), "{err}");
    assert_eq!(env.results().status, Status::Failed);
    assert_eq!(env.leftovers(), Vec::<String>::new());
    let out = env.run(&["untar", "--extract-cmd", "tar xf {tarball}"]);
    assert_one_line_error(&out, "--extract-cmd must contain {dir}");
}

/// A tarball with one entry, written by hand.
fn tarball_with(name: &str, typeflag: u8, link: &str) -> Vec<u8> {
    let mut out = Vec::new();
    fsscale::tree::write_entry_header(&mut out, name, 0o644, 4, 0, typeflag, link).unwrap();
    out.extend_from_slice(b"evil");
    out.resize(1024, 0);
    out.extend_from_slice(&[0u8; 1024]);
    out
}

#[test]
fn hostile_tarballs_are_refused_and_nothing_escapes() {
    for (bytes, needle) in [
        (
            tarball_with("../escape", b'0', ""),
            "entry \"../escape\" at byte offset 0: refusing a path with a \"..\" component",
        ),
        (tarball_with("/tmp/fsscale-escape", b'0', ""), "refusing an absolute path"),
        (tarball_with("hl", b'1', "../../etc/passwd"), "hard link to \"../../etc/passwd\""),
    ] {
        let env = TestEnv::new();
        let path = env.root.path().join("evil.tar");
        std::fs::File::create(&path).unwrap().write_all(&bytes).unwrap();
        let out = env.run(&["untar", "-j", "2", "--tarball", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
        assert!(stderr(&out).contains(needle), "{}", stderr(&out));
        // Refused before anything ran, with the way out.
        assert_one_line_error(&out, "GNU tar extracts what it refuses: --extract-cmd 'tar xf {tarball} -C {dir}'");
        assert_eq!(env.leftovers(), Vec::<String>::new());
        assert!(!env.root.path().join("escape").exists() && !std::path::Path::new("/tmp/fsscale-escape").exists());
    }
    // A truncated tarball names the byte offset.
    let env = TestEnv::new();
    let good = env.root.path().join("good.tar");
    assert_success(&fsscale().args(["tree", "--scale", "0.002", "--tar"]).arg(&good).output().unwrap());
    let bytes = std::fs::read(&good).unwrap();
    let cut = env.root.path().join("cut.tar");
    std::fs::write(&cut, &bytes[..bytes.len() / 2 + 100]).unwrap();
    let out = env.run(&["untar", "--tarball", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("truncated tarball: it ends at byte offset"), "{}", stderr(&out));
    assert_eq!(env.leftovers(), Vec::<String>::new());
    assert!(Workload::Untar.is_fixed_work());
}

#[test]
fn a_tarball_of_real_trees_with_absolute_and_chained_links_extracts() {
    // GNU tar's tarball of a tree shaped as Debian's /usr/share/doc (doc/cpp/README.Bugs ->
    // ../gcc-12/README.Bugs, doc/gcc-12 -> gcc-12-base) and /etc's absolute links, and the
    // real /usr/share/doc and /etc/alternatives beside it.
    let env = TestEnv::new();
    let own = env.root.path().join("own");
    std::fs::create_dir_all(own.join("doc/gcc-12-base")).unwrap();
    std::fs::create_dir_all(own.join("doc/cpp")).unwrap();
    std::fs::write(own.join("doc/gcc-12-base/README.Bugs"), b"bugs").unwrap();
    std::os::unix::fs::symlink("gcc-12-base", own.join("doc/gcc-12")).unwrap();
    std::os::unix::fs::symlink("../gcc-12/README.Bugs", own.join("doc/cpp/README.Bugs")).unwrap();
    std::os::unix::fs::symlink("/etc/localtime", own.join("localtime")).unwrap();
    let tarball = env.root.path().join("real.tar");
    let mut tar = std::process::Command::new("tar");
    tar.arg("cf").arg(&tarball).arg("-C").arg(env.root.path()).arg("own");
    tar.args(["-C", "/usr/share", "doc", "-C", "/etc", "alternatives"]);
    assert!(tar.status().unwrap().success());
    let out = env.run(&["untar", "-j", "2", "--tarball", tarball.to_str().unwrap()]);
    assert_success(&out);
    let doc = env.results();
    let listed = std::process::Command::new("tar").arg("tf").arg(&tarball).output().unwrap();
    let entries = String::from_utf8(listed.stdout).unwrap().lines().filter(|l| !l.is_empty()).count() as u64;
    let untar = doc.settings.untar.clone().expect("tarball recorded");
    // Every worker created every entry (GNU tar lists directories, files and links alike).
    assert_eq!(untar.entries, entries);
    for run in &doc.points[0].runs {
        assert_eq!(run.per_worker_ops, vec![entries; 2]);
    }
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

/// `tar` with its first entry's name replaced by `name` (any bytes) and the checksum made again.
fn renamed(mut tar: Vec<u8>, name: &[u8]) -> Vec<u8> {
    tar[..100].fill(0);
    tar[..name.len()].copy_from_slice(name);
    tar[148..156].fill(b' ');
    let sum: u32 = tar[..512].iter().map(|&b| u32::from(b)).sum();
    tar[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    tar
}

#[test]
fn an_empty_tarball_a_name_that_is_not_utf8_and_a_link_over_a_directory_are_refused_before_the_run() {
    let mut dir_then_link = Vec::new();
    fsscale::tree::write_entry_header(&mut dir_then_link, "d", 0o755, 0, 0, b'5', "").unwrap();
    fsscale::tree::write_entry_header(&mut dir_then_link, "d", 0o777, 0, 0, b'2', "/etc").unwrap();
    dir_then_link.extend_from_slice(&[0u8; 1024]);
    // Two names that differ only in a byte that is not UTF-8 once read as one.
    let mut not_utf8 = renamed(tarball_with("ab", b'0', ""), b"a\xff");
    not_utf8.truncate(1024);
    not_utf8.extend(renamed(tarball_with("ab", b'0', ""), b"a\xfe"));
    for (bytes, needle) in [
        (Vec::new(), "the tarball holds no entries (it is empty, or only zero blocks): nothing to extract"),
        (vec![0u8; 10240], "the tarball holds no entries"),
        (not_utf8, "the name or link \"a\u{fffd}\" is not UTF-8; fsscale extracts only UTF-8 names"),
        (
            dir_then_link,
            "entry \"d\" at byte offset 512: \"d\" is a directory already: a file or link may not replace it",
        ),
    ] {
        let env = TestEnv::new();
        let path = env.root.path().join("odd.tar");
        std::fs::write(&path, &bytes).unwrap();
        let out = env.run(&["untar", "-j", "1", "--tarball", path.to_str().unwrap()]);
        assert_one_line_error(&out, needle);
        assert_eq!(env.leftovers(), Vec::<String>::new());
        assert!(!env.output.exists(), "refused before the run began");
    }
}
