//! `--fs`: filesystems made fresh on RAM-backed loop devices, recorded,
//! and always taken down (root only; the tests say when they skip).

use std::process::{Command, Stdio};
use std::time::Duration;

use fsscale::fs::FsKind;
use fsscale::results::ResultsFile;

use crate::util::*;

/// Everything a given fsscale process made that still exists.
fn leftovers_of(pid: u32) -> Vec<String> {
    let tag = format!(".fsscale-fs-{pid}-");
    let mut found = Vec::new();
    for dir in ["/run/fsscale", "/dev/shm"] {
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with(&tag) || name.starts_with(&format!("mnt-{pid}-")) {
                    found.push(format!("{dir}/{name}"));
                }
            }
        }
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    found.extend(mounts.lines().filter(|l| l.contains(&format!("/run/fsscale/mnt-{pid}-"))).map(String::from));
    if let Ok(entries) = std::fs::read_dir("/sys/block") {
        for e in entries.flatten() {
            let backing = std::fs::read_to_string(e.path().join("loop/backing_file")).unwrap_or_default();
            if backing.contains(&tag) {
                found.push(format!("loop {}", e.file_name().to_string_lossy()));
            }
        }
    }
    found
}

fn f2fs_supported() -> bool {
    std::fs::read_to_string("/proc/filesystems").unwrap_or_default().contains("f2fs")
}

fn skip_unless_root() -> bool {
    !needs_root("making filesystems")
}

/// `stat` and `fsync` on a filesystem of each of `kinds`, made anew for
/// every run: every point records its filesystem and device, and nothing is
/// left. One test per kind or two, so that none runs long (mkfs and a loop
/// device per run); the run's text, for the caller's checks.
fn made_recorded_and_removed(kinds: &str) -> Option<(ResultsFile, String)> {
    if skip_unless_root() {
        return None;
    }
    let env = TestEnv::new();
    let child = fsscale()
        .args([
            "run",
            "stat",
            "fsync",
            "-j",
            "1",
            "-n",
            "1",
            "--duration",
            "0.1",
            "--warmup",
            "0",
            "--share",
            "private",
        ])
        .args(["--fs", kinds, "-o"])
        .arg(&env.output)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_success(&out);
    let doc = env.results();
    let labels: Vec<&str> = kinds.split(',').collect();
    assert_eq!(doc.points.len(), 2 * labels.len());
    for point in &doc.points {
        let fs = point.filesystem.as_ref().expect("made filesystems are recorded");
        assert_eq!(point.fs.as_deref(), Some(fs.label.as_str()));
        assert!(!fs.mount_options.is_empty() && !fs.super_options.is_empty(), "{fs:?}");
        let run = &point.runs[0];
        if fs.kind == FsKind::Tmpfs {
            assert_eq!((fs.device.as_deref(), run.device_io), (None, None));
        } else {
            assert!(fs.device.as_deref().unwrap().starts_with("/dev/loop"), "{fs:?}");
            assert!(fs.mkfs_command.as_deref().unwrap().starts_with(&format!("mkfs.{}", fs.kind.name())));
            assert!(fs.mkfs_version.is_some());
            let io = run.device_io.expect("device I/O recorded");
            if point.workload == fsscale::workloads::Workload::Fsync && fs.kind == FsKind::Ext4 {
                assert!(io.write_bytes > 0 && io.write_ios > 0, "fsync on ext4 writes to the device: {io:?}");
            }
        }
    }
    assert_eq!(doc.settings.fresh, Some(fsscale::fs::Fresh::Run));
    assert_eq!(leftovers_of(pid), Vec::<String>::new());
    Some((doc, stdout(&out)))
}

#[test]
fn tmpfs_and_ext4_are_made_recorded_and_removed() {
    let Some((doc, text)) = made_recorded_and_removed("tmpfs,ext4") else { return };
    assert!(text.contains("fsync on ext4: "), "{text}");
    // Every table says what it ran on: the size chosen, the device, how often it was made.
    let ext4 = doc.points.iter().find(|p| p.fs.as_deref() == Some("ext4")).unwrap().filesystem.as_ref().unwrap();
    let line = format!(
        "  filesystem: ext4 of {} on {} (ram), made anew for every run\n",
        fsscale::fs::format_size(ext4.size_bytes),
        ext4.device.as_deref().unwrap()
    );
    assert!(text.contains(&line), "{line} in {text}");
    assert!(text.contains("  filesystem: tmpfs of 1.0 GiB in memory, made anew for every run\n"), "{text}");
}

#[test]
fn xfs_is_made_recorded_and_removed() {
    let Some((_, text)) = made_recorded_and_removed("xfs") else { return };
    assert!(text.contains("fsync on xfs: "), "{text}");
}

#[test]
fn btrfs_is_made_recorded_and_removed() {
    let Some((_, text)) = made_recorded_and_removed("btrfs") else { return };
    assert!(text.contains("fsync on btrfs: "), "{text}");
}

#[test]
fn f2fs_is_made_recorded_and_removed_where_the_kernel_has_it() {
    if !f2fs_supported() {
        crate::skips::kernel_lacks(
            "f2fs_is_made_recorded_and_removed_where_the_kernel_has_it",
            "f2fs (not in /proc/filesystems)",
        );
        return;
    }
    let Some((_, text)) = made_recorded_and_removed("f2fs") else { return };
    assert!(text.contains("fsync on f2fs: "), "{text}");
}

#[test]
fn mount_options_reach_the_kernel_and_unsupported_kinds_are_reported() {
    if skip_unless_root() {
        return;
    }
    let env = TestEnv::new();
    let out = fsscale()
        .args(["run", "stat", "-j", "1", "-n", "1", "--duration", "0.05", "--share", "private"])
        .args(["--fs", "ext4:data=journal,noatime", "--fresh", "once", "-o"])
        .arg(&env.output)
        .arg("--force")
        .output()
        .unwrap();
    assert_success(&out);
    let fs = env.results().points[0].filesystem.clone().unwrap();
    assert_eq!(fs.label, "ext4:data=journal,noatime");
    assert!(fs.super_options.contains("data=journal") && fs.mount_options.contains("noatime"), "{fs:?}");
    if !f2fs_supported() {
        let out =
            fsscale().args(["run", "stat", "--fs", "f2fs", "-o"]).arg(&env.output).arg("--force").output().unwrap();
        assert_one_line_error(&out, "--fs f2fs: unsupported: this kernel has no f2fs filesystem");
    }
}

/// Starts a long run on ext4 in its own process group and waits until its
/// filesystem is mounted.
fn start_long_run(env: &TestEnv) -> std::process::Child {
    let output = env.output.display().to_string();
    let child = spawn_group(&[
        "run",
        "creat-unlink",
        "-j",
        "2",
        "-n",
        "50",
        "--duration",
        "0.3",
        "--share",
        "private",
        "--fs",
        "ext4",
        "-o",
        &output,
    ]);
    let tag = format!("/run/fsscale/mnt-{}-", child.id());
    wait_until("mounting the run's filesystem", || {
        std::fs::read_to_string("/proc/self/mountinfo").unwrap().contains(&tag)
    });
    std::thread::sleep(Duration::from_millis(200));
    child
}

#[test]
fn signals_mid_run_leave_no_mount_loop_or_image() {
    if skip_unless_root() {
        return;
    }
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143), (libc::SIGQUIT, 131), (libc::SIGHUP, 129)] {
        let env = TestEnv::new();
        let child = start_long_run(&env);
        let pid = child.id();
        let _ = fsscale::sys::send_signal(-(pid as i32), signal);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
        assert_eq!(leftovers_of(pid), Vec::<String>::new(), "after signal {signal}");
    }
}

#[test]
fn cleanup_removes_what_a_killed_run_left() {
    if skip_unless_root() {
        return;
    }
    let env = TestEnv::new();
    let child = start_long_run(&env);
    let pid = child.id();
    // Any cleanup removes what killed runs left: no other test's from here
    // to this one's own, which then says it removed it.
    let turn = cleanups();
    let _ = fsscale::sys::send_signal(-(pid as i32), libc::SIGKILL);
    let _ = child.wait_with_output();
    assert!(!leftovers_of(pid).is_empty(), "SIGKILL leaves the mount behind");
    // The next run warns about it.
    let out = fsscale()
        .args(["run", "stat", "-j", "1", "-n", "1", "--duration", "0.02", "--fs", "tmpfs", "-o"])
        .arg(&env.output)
        .arg("--force")
        .output()
        .unwrap();
    assert_success(&out);
    assert!(stderr(&out).contains(&format!("(pid {pid}); `fsscale cleanup` removes it")), "{}", stderr(&out));
    // The killed run's lock goes with the last of its processes, which may
    // still be exiting (beside two hogs cleanup once found it "still
    // going"): cleanup takes its filesystem down once it is free.
    let mut said = String::new();
    wait_until("cleanup to take down the killed run's filesystem", || {
        let out = fsscale().arg("cleanup").output().unwrap();
        assert_success(&out);
        said.push_str(&stdout(&out));
        leftovers_of(pid).is_empty()
    });
    drop(turn);
    assert!(said.contains(&format!("unmounted /run/fsscale/mnt-{pid}-")), "{said}");
    assert!(said.contains(&format!("removed mount point /run/fsscale/mnt-{pid}-")), "{said}");
}

#[test]
fn a_real_device_needs_the_flag_and_is_never_formatted_while_mounted() {
    if skip_unless_root() {
        return;
    }
    // A loop device stands in for a disk.
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("disk.img");
    std::fs::File::create(&image).unwrap().set_len(256 << 20).unwrap();
    let losetup = Command::new("losetup").args(["--find", "--show"]).arg(&image).output().unwrap();
    let device = String::from_utf8_lossy(&losetup.stdout).trim().to_string();
    assert!(device.starts_with("/dev/loop"), "{losetup:?}");
    let detach = Detach(device.clone());
    let env = TestEnv::new();
    let run = |extra: &[&str]| {
        fsscale()
            .args(["run", "stat", "-j", "1", "-n", "1", "--duration", "0.02", "--share", "private", "--fs", "ext4"])
            .arg(format!("--backing=dev:{device}"))
            .args(extra)
            .arg("-o")
            .arg(&env.output)
            .output()
            .unwrap()
    };
    assert_one_line_error(&run(&[]), "would destroy all data on it; add --destroy-device-data");
    // Mounted: refused even with the flag.
    assert!(Command::new("mkfs.ext4").args(["-F", "-q", &device]).status().unwrap().success());
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    assert!(Command::new("mount").arg(&device).arg(&mnt).status().unwrap().success());
    let out = run(&["--destroy-device-data"]);
    // Another name for the same device: found by its numbers, not its name.
    let alias = dir.path().join("alias");
    std::os::unix::fs::symlink(&device, &alias).unwrap();
    let by_alias = fsscale()
        .args(["run", "stat", "--fs", "ext4", "--destroy-device-data"])
        .arg(format!("--backing=dev:{}", alias.display()))
        .arg("-o")
        .arg(&env.output)
        .output()
        .unwrap();
    let _ = Command::new("umount").arg(&mnt).status();
    let mounted = format!("({device}) is mounted on {}; fsscale never formats a device in use", mnt.display());
    assert_one_line_error(&out, &mounted);
    assert_one_line_error(&by_alias, &mounted);
    // Unmounted and allowed: it runs on the device, and leaves the device attached.
    let out = run(&["--destroy-device-data"]);
    assert_success(&out);
    let fs = env.results().points[0].filesystem.clone().unwrap();
    assert_eq!(fs.backing, format!("dev:{device}"));
    assert!(std::path::Path::new(&device).exists());
    let out = fsscale()
        .args(["run", "stat", "--fs", "ext4", "--backing", "dev:/etc/passwd", "--destroy-device-data"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "--backing dev:/etc/passwd is not a block device");
    drop(detach);
    let _ = ResultsFile::load(&env.output);
}

/// Detaches a test's loop device however the test ends.
struct Detach(String);

impl Drop for Detach {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

#[test]
fn file_backing_keeps_the_image_in_the_directory_given_and_removes_it() {
    if skip_unless_root() {
        return;
    }
    let env = TestEnv::new();
    let images = env.root.path().join("images");
    std::fs::create_dir(&images).unwrap();
    let out = fsscale()
        .args(["run", "creat-unlink", "-j", "1,2", "-n", "2", "--duration", "0.05", "--share", "private"])
        .args(["--fs", "ext4", "--fresh", "point", "--fs-size", "128M"])
        .arg(format!("--backing=file:{}", images.display()))
        .arg("-o")
        .arg(&env.output)
        .output()
        .unwrap();
    assert_success(&out);
    let doc = env.results();
    for point in &doc.points {
        let fs = point.filesystem.as_ref().unwrap();
        assert_eq!(fs.backing, format!("file:{}", images.display()));
        assert_eq!(fs.size_bytes, 128 << 20);
    }
    assert_eq!(entries(&images), Vec::<String>::new(), "the images are gone");
    let out = fsscale().args(["run", "stat", "--fs", "tmpfs", "--backing", "file:/nonexistent"]).output().unwrap();
    assert_one_line_error(&out, "--backing file:/nonexistent: not a directory");
}

#[test]
fn fixed_work_accounts_for_what_reaches_the_device_after_the_job() {
    if skip_unless_root() {
        return;
    }
    // Regression: an untar on ext4 showed almost nothing written, the data still in the page cache.
    let env = TestEnv::new();
    let out = fsscale()
        .args(["run", "untar", "-j", "1", "-n", "1", "--scale", "0.05", "--fs", "ext4", "-o"])
        .arg(&env.output)
        .output()
        .unwrap();
    assert_success(&out);
    assert!(stdout(&out).contains("dev MB in sync"), "{}", stdout(&out));
    let doc = env.results();
    let run = &doc.points[0].runs[0];
    let extracted = run.bytes.unwrap();
    let writeback = run.writeback.expect("fixed work records its writeback");
    let written = run.device_io.unwrap().write_bytes + writeback.device_io.unwrap().write_bytes;
    assert!(written >= extracted, "job + sync wrote {written} bytes for {extracted} extracted");
    assert!(writeback.sync_s > 0.0);

    // A walk's setup extracts a copy of the tree; it is written back before the
    // start, so the sync after the walk holds no more than the walk's own writes
    // (directory atimes), a fraction of the copy's data.
    let walk = TestEnv::new();
    let out = fsscale()
        .args(["run", "traverse", "-j", "1", "-n", "1", "--scale", "0.05", "--fs", "ext4", "--share", "private", "-o"])
        .arg(&walk.output)
        .output()
        .unwrap();
    assert_success(&out);
    let doc = walk.results();
    let copied = doc.settings.untar.as_ref().unwrap().bytes;
    let synced = doc.points[0].runs[0].writeback.unwrap().device_io.unwrap().write_bytes;
    assert!(synced < copied / 2, "the sync after a walk wrote {synced} bytes; the setup's copy has {copied}");
}

#[test]
fn ramfs_is_made_recorded_and_removed() {
    if skip_unless_root() {
        return;
    }
    let env = TestEnv::new();
    let child = fsscale()
        .args([
            "run",
            "creat-unlink",
            "-j",
            "1",
            "-n",
            "1",
            "--duration",
            "0.05",
            "--share",
            "private",
            "--fs",
            "ramfs",
            // What ramfs is refused without (it has no limit): this much
            // memory free now, which a machine short of memory still has.
            "--fs-size",
            "64M",
        ])
        .arg("-o")
        .arg(&env.output)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    assert_success(&child.wait_with_output().unwrap());
    let doc = env.results();
    let fs = doc.points[0].filesystem.as_ref().unwrap();
    assert_eq!((fs.kind, fs.backing.as_str()), (fsscale::fs::FsKind::Ramfs, "ram"));
    assert!(doc.points[0].runs[0].ops > 0);
    assert_eq!(leftovers_of(pid), Vec::<String>::new());
}

#[test]
fn a_failed_teardown_is_recorded_and_the_matrix_goes_on() {
    if skip_unless_root() {
        return;
    }
    // An image in an immutable directory cannot be deleted: ext4's teardown fails, tmpfs still runs.
    let images = tempfile::tempdir().unwrap();
    let env = TestEnv::new();
    // From the run's failure until the chattr -i below, its image is a
    // leftover no cleanup can remove: no other test's cleanup runs until then
    // (one ran in that window once, beside a profiled run, and failed on it).
    let turn = cleanups();
    let cmd = format!("chattr +i '{}'", images.path().display());
    let out = fsscale()
        .args([
            "run",
            "command",
            "--shell",
            "--cmd",
            &cmd,
            "-j",
            "1",
            "-n",
            "1",
            "--warmup-runs",
            "0",
            "--fs",
            "ext4,tmpfs",
        ])
        .arg(format!("--backing=file:{}", images.path().display()))
        .arg("-o")
        .arg(&env.output)
        .output()
        .unwrap();
    let _ = Command::new("chattr").arg("-i").arg(images.path()).status();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = stderr(&out).lines().last().unwrap_or_default().to_string();
    assert!(line.contains("cleaning up ext4: removing ") && line.contains("Operation not permitted"), "{line}");
    let doc = env.results();
    assert_eq!(doc.status, fsscale::results::Status::Failed);
    let ran: Vec<Option<String>> = doc.points.iter().map(|p| p.fs.clone()).collect();
    assert_eq!(ran, [Some("ext4".to_string()), Some("tmpfs".to_string())], "tmpfs still ran");
    assert!(doc.points.iter().all(|p| p.complete));
    // What was left is cleanup's, once the failed run's last process is
    // gone: its registry entry stays locked until then, and cleanup leaves a
    // locked entry alone as a live run's (beside a memory hog it once was
    // still exiting when the first cleanup came).
    let mut said = String::new();
    wait_until("cleanup to remove the failed teardown's image", || {
        let out = fsscale().arg("cleanup").output().unwrap();
        assert_success(&out);
        said.push_str(&stdout(&out));
        entries(images.path()).is_empty()
    });
    drop(turn);
    assert!(said.contains("removed image "), "{said}");
}

#[test]
fn o_direct_runs_where_the_filesystem_has_it_and_is_refused_clearly_where_not() {
    if skip_unless_root() {
        return;
    }
    let env = TestEnv::new();
    let spawn = |fs: &str| {
        fsscale()
            // A direct write goes through the loop device to the disk: a
            // 50 ms window beside other tests once held not one.
            .args(["run", "read-direct", "write-direct", "-j", "1", "-n", "1", "--duration", "0.3"])
            // ramfs is refused unless its size fits in the memory free now: a small one.
            .args(if fs == "ramfs" { &["--fs-size", "64M"][..] } else { &[] })
            .args(["--warmup-runs", "0", "--share", "private", "--fs", fs, "--verify", "-o"])
            .arg(&env.output)
            .arg("--force")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    // ext4 reads and writes past the page cache, every call counted.
    let child = spawn("ext4");
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_success(&out);
    assert!(!stderr(&out).contains("--verify: "), "{}", stderr(&out));
    let doc = env.results();
    // A window waits for every worker's first op: one direct write through
    // the loop device outlasted a whole 0.3 s window beside two hogs and a build.
    assert_eq!(doc.points.len(), 2);
    assert!(doc.points.iter().all(|p| p.runs[0].ops > 0));
    assert_eq!(leftovers_of(pid), Vec::<String>::new());
    // ramfs has no O_DIRECT: one line says so and what to use instead.
    let child = spawn("ramfs");
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_one_line_error(&out, "read-direct: this filesystem does not support O_DIRECT");
    assert!(stderr(&out).contains("measure it on one that does, e.g. --fs ext4"), "{}", stderr(&out));
    assert_eq!(leftovers_of(pid), Vec::<String>::new());
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

/// A FUSE passthrough (bindfs) of a directory of the test's, unmounted on drop.
struct FuseMount {
    path: std::path::PathBuf,
    backing: std::path::PathBuf,
}

impl FuseMount {
    fn new(env: &TestEnv) -> Option<FuseMount> {
        let backing = env.root.path().join("backing");
        let path = env.root.path().join("fuse");
        std::fs::create_dir(&backing).unwrap();
        std::fs::create_dir(&path).unwrap();
        let ok = Command::new("bindfs").arg(&backing).arg(&path).status().map(|s| s.success()).unwrap_or(false);
        ok.then_some(FuseMount { path, backing })
    }
}

impl Drop for FuseMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

#[test]
fn a_filesystem_that_keeps_unlinked_open_files_is_left_clean() {
    // FUSE, like NFS, keeps a file that is unlinked while open as a hidden
    // entry (`.fuse_hidden*`, `.nfs*`) until its last close; a directory
    // holding one cannot be removed. Every run's scratch must still go.
    let test = "a_filesystem_that_keeps_unlinked_open_files_is_left_clean";
    if !needs_root(test)
        || !prerequisite(std::path::Path::new("/dev/fuse").exists(), test, "no /dev/fuse")
        || !prerequisite(
            Command::new("bindfs").arg("--version").output().is_ok(),
            test,
            "bindfs is not installed (.ci/run installs it)",
        )
    {
        return;
    }
    let env = TestEnv::new();
    let Some(fuse) = FuseMount::new(&env) else {
        prerequisite(false, test, "bindfs could not mount (FUSE unavailable here)");
        return;
    };
    for mode in ["process", "thread"] {
        let out = env.run_at(
            &fuse.path,
            &["creat-unlink", "read", "dup-close", "mdtest", "-j", "1,2", "--mode", mode, "--items", "50"],
        );
        assert_success(&out);
        assert_eq!(entries(&fuse.path), Vec::<String>::new(), "{mode}: left in the mount");
        assert_eq!(entries(&fuse.backing), Vec::<String>::new(), "{mode}: left in the backing directory");
        assert!(env.results().points.iter().all(|p| p.runs.iter().all(|r| r.ops > 0)), "{mode}");
    }
    // What the filesystem cannot do is refused in one line, and still nothing is left.
    let out = env.run_at(&fuse.path, &["fallocate"]);
    assert_one_line_error(&out, "fallocate: this filesystem does not support fallocate");
    assert_eq!(entries(&fuse.path), Vec::<String>::new());
}
