//! Root is never turned against files fsscale did not make: backing
//! directories others can write, images swapped for links, mkfs and mount
//! options that name files, outputs that are inputs, a second run on a live
//! run's results, forged registry entries, half-made scratch directories.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::util::*;

/// A file outside fsscale's reach whose bytes and mtime must never change.
struct Victim {
    path: PathBuf,
    bytes: Vec<u8>,
    mtime: (i64, i64),
}

impl Victim {
    fn new(dir: &Path, name: &str, len: usize) -> Victim {
        let path = dir.join(name);
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        Victim { path, bytes, mtime: (meta.mtime(), meta.mtime_nsec()) }
    }

    fn assert_untouched(&self) {
        let meta = std::fs::symlink_metadata(&self.path).expect("the victim file still exists");
        assert!(meta.file_type().is_file(), "{} is no longer a regular file", self.path.display());
        assert_eq!((meta.mtime(), meta.mtime_nsec()), self.mtime, "{} was written", self.path.display());
        assert!(std::fs::read(&self.path).unwrap() == self.bytes, "{} changed", self.path.display());
    }
}

#[test]
fn a_backing_directory_that_others_can_write_or_own_is_refused() {
    if !needs_root("a_backing_directory_that_others_can_write_or_own_is_refused") {
        return;
    }
    let env = TestEnv::new();
    let open = env.root.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let theirs = env.root.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    for (dir, why) in [(&open, "is writable by others (mode 777)"), (&theirs, "belongs to uid 65534")] {
        let out = fsscale()
            .args(["run", "stat", "-j", "1", "-n", "1", "--duration", "0.05", "--fs", "ext4"])
            .arg(format!("--backing=file:{}", dir.display()))
            .arg("-o")
            .arg(&env.output)
            .output()
            .unwrap();
        assert_one_line_error(&out, why);
        assert_eq!(entries(dir), Vec::<String>::new(), "no image was made in {}", dir.display());
    }
}

#[test]
fn an_image_swapped_for_a_link_is_never_formatted() {
    if !needs_root("an_image_swapped_for_a_link_is_never_formatted") {
        return;
    }
    let env = TestEnv::new();
    // A sticky directory anyone can write, as /tmp: allowed, and a swapper
    // (root here, standing for its owner) replaces every image it sees by a
    // link to the victim, as fast as it can.
    let images = env.root.path().join("images");
    std::fs::create_dir(&images).unwrap();
    std::fs::set_permissions(&images, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = Victim::new(env.root.path(), "victim", 64 << 20);
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, images, target) = (stop.clone(), images.clone(), victim.path.clone());
        std::thread::spawn(move || {
            let mut swapped = 0;
            while !stop.load(Ordering::Relaxed) {
                for entry in std::fs::read_dir(&images).unwrap().flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if name.ends_with(".img") && entry.file_type().is_ok_and(|t| t.is_file()) {
                        let _ = std::fs::rename(entry.path(), images.join(format!("stolen-{swapped}")));
                        let _ = std::os::unix::fs::symlink(&target, entry.path());
                        swapped += 1;
                    }
                }
            }
            swapped
        })
    };
    let out = fsscale()
        .args(["run", "stat", "-j", "1", "-n", "3", "--duration", "0.05", "--warmup-runs", "0", "--fs", "ext4"])
        .args(["--fs-size", "64M"])
        .arg(format!("--backing=file:{}", images.display()))
        .arg("-o")
        .arg(&env.output)
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let swapped = swapper.join().unwrap();
    assert!(swapped > 0, "the swapper never saw an image");
    victim.assert_untouched();
    let backing: Vec<String> = std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("loop/backing_file")).ok())
        .collect();
    assert!(!backing.iter().any(|b| b.contains("victim") || b.contains("stolen")), "{backing:?}\n{}", stderr(&out));
}

#[test]
fn mkfs_and_mount_options_can_only_be_options() {
    let env = TestEnv::new();
    let victim = Victim::new(env.root.path(), "victim", 4096);
    let run = |args: &[&str]| {
        fsscale().current_dir(env.root.path()).arg("run").arg("stat").args(args).arg("-o").arg(&env.output).output()
    };
    let path = victim.path.display().to_string();
    let out = run(&["--fs", "btrfs", "--mkfs-opts", &path]).unwrap();
    assert_one_line_error(&out, &format!("--mkfs-opts '{path}' names a path"));
    let out = run(&["--fs", "btrfs", "--mkfs-opts", "-b 1024 victim"]).unwrap();
    assert_one_line_error(&out, "--mkfs-opts 'victim' is not an option (it would be read as a device to format)");
    // With a `./fsscale` in the working directory, `bind` would mount it.
    std::fs::create_dir(env.root.path().join("fsscale")).unwrap();
    let out = run(&["--fs", "tmpfs:bind"]).unwrap();
    assert_one_line_error(&out, "mount option 'bind' makes mount act on another path or mount");
    let out = run(&["--fs", "ext4:journal_path=/dev/sda"]).unwrap();
    assert_one_line_error(&out, "mount option 'journal_path=/dev/sda' names a path");
    victim.assert_untouched();
    assert!(!env.output.exists());
}

#[test]
fn an_output_that_is_an_input_is_refused_before_anything_is_written() {
    let env = TestEnv::new();
    let trace = Victim::new(env.root.path(), "load.txt", 100);
    let tarball = Victim::new(env.root.path(), "t.tar", 10240);
    let tree = env.root.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let base = |workload: &str| {
        let mut cmd = fsscale();
        cmd.args(["run", workload, "-j", "1", "-n", "1", "--duration", "0.05", "--dir"]).arg(&env.dir);
        cmd
    };
    let out = base("replay").arg("--trace").arg(&trace.path).arg("-o").arg(&trace.path).output().unwrap();
    assert_one_line_error(&out, "is the --trace file");
    // Another name for the same file: a symbolic link to it.
    let link = env.root.path().join("link.json");
    std::os::unix::fs::symlink(&tarball.path, &link).unwrap();
    let out = base("untar").arg("--tarball").arg(&tarball.path).arg("-o").arg(&link).output().unwrap();
    assert_one_line_error(&out, "is the --tarball file");
    let inside = tree.join("sub/r.json");
    let out = base("traverse").arg("--tree").arg(&tree).arg("-o").arg(&inside).output().unwrap();
    assert_one_line_error(&out, "lies inside --tree");
    trace.assert_untouched();
    tarball.assert_untouched();
    assert_eq!(entries(&tree), Vec::<String>::new());
}

#[test]
fn a_second_run_on_a_live_runs_results_file_is_refused() {
    let env = TestEnv::new();
    let first = fsscale()
        .args(["run", "stat", "-j", "1", "-n", "4", "--duration", "0.5", "--warmup-runs", "0", "--dir"])
        .arg(&env.dir)
        .arg("-o")
        .arg(&env.output)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let journal = fsscale::results::journal_path(&env.output);
    // Its header, which names it: the journal is claimed (made and locked)
    // before its first line is written, and a run refused in between is
    // told only that another run writes it (seen beside a profiled run).
    wait_until("the first run's journal header", || {
        std::fs::read_to_string(&journal).is_ok_and(|t| t.contains(&format!("\"pid\":{}", first.id())))
    });
    let out = env.run(&["stat", "-j", "1"]);
    assert_one_line_error(&out, "another fsscale run");
    assert!(stderr(&out).contains(&format!("(pid {})", first.id())), "{}", stderr(&out));
    let first = first.wait_with_output().unwrap();
    assert_success(&first);
    let doc = env.results();
    assert_eq!(doc.status, fsscale::results::Status::Complete);
    assert_eq!(doc.points.iter().map(|p| p.runs.len()).sum::<usize>(), 4 * doc.points.len());
}

#[test]
fn a_forged_registry_entry_cannot_delete_a_file_outside_fsscales_image_directories() {
    if !needs_root("a_forged_registry_entry_cannot_delete_a_file_outside_fsscales_image_directories") {
        return;
    }
    let env = TestEnv::new();
    let id = format!("{}-9-forged00", std::process::id());
    let victim = Victim::new(env.root.path(), &format!(".fsscale-fs-{id}.img"), 100);
    std::fs::create_dir_all("/run/fsscale").unwrap();
    let entry = Path::new("/run/fsscale").join(format!(".fsscale-fs-{id}.json"));
    let image = format!("/dev/shm/../{}", victim.path.strip_prefix("/").unwrap().display());
    let text = format!(r#"{{"pid":1,"mountpoint":"/run/fsscale/mnt-{id}","image":"{image}","loop_device":null}}"#);
    // No other test's cleanup may meet the forged entries: it refuses them too.
    let turn = cleanups();
    std::fs::write(&entry, text).unwrap();
    let out = fsscale().arg("cleanup").output().unwrap();
    let _ = std::fs::remove_file(&entry);
    assert!(stdout(&out).contains("is not named by its real path"), "{}{}", stdout(&out), stderr(&out));
    victim.assert_untouched();
    // Named by its real path, but with no inode recorded: nothing proves fsscale made it.
    let text = format!(
        r#"{{"pid":1,"mountpoint":"/run/fsscale/mnt-{id}","image":"{}","loop_device":null}}"#,
        victim.path.display()
    );
    std::fs::write(&entry, text).unwrap();
    let out = fsscale().arg("cleanup").output().unwrap();
    let _ = std::fs::remove_file(&entry);
    drop(turn);
    let said = format!("not removing {}: its registry entry records no inode", victim.path.display());
    assert!(stdout(&out).contains(&said) || stderr(&out).contains(&said), "{}{}", stdout(&out), stderr(&out));
    victim.assert_untouched();
}

#[test]
fn a_run_out_of_descriptors_leaves_no_scratch_and_records_why_it_failed() {
    let env = TestEnv::new();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 12; exec {} run stat -j 1 -n 1 --duration 0.05 --dir {} -o {}",
            env!("CARGO_BIN_EXE_fsscale"),
            env.dir.display(),
            env.output.display()
        ))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("Too many open files (EMFILE)"), "{}", stderr(&out));
    assert_eq!(env.leftovers(), Vec::<String>::new(), "a half-made scratch directory stayed");
    let doc = env.results();
    assert_eq!(doc.status, fsscale::results::Status::Failed);
    assert!(doc.error.as_deref().is_some_and(|e| e.contains("EMFILE")), "{:?}", doc.error);
}

#[test]
fn cleanup_removes_scratch_directories_a_run_died_making_and_nothing_else() {
    let env = TestEnv::new();
    let d = &env.dir;
    std::fs::create_dir(d.join(".fsscale-123-0-abcdef12")).unwrap();
    std::fs::create_dir(d.join(".fsscale-124-0-abcdef13")).unwrap();
    std::fs::write(d.join(".fsscale-124-0-abcdef13/.fsscale-scratch"), b"").unwrap();
    // Not stillborn: something inside, or not fsscale's form of name.
    std::fs::create_dir(d.join(".fsscale-125-0-abcdef14")).unwrap();
    std::fs::write(d.join(".fsscale-125-0-abcdef14/data"), b"x").unwrap();
    std::fs::create_dir(d.join(".fsscale-mine")).unwrap();
    let out = cleanup_output(fsscale().arg("cleanup").arg("--scratch").arg(d));
    assert_success(&out);
    assert_eq!(entries(d), [".fsscale-125-0-abcdef14", ".fsscale-mine"]);
    assert_eq!(std::fs::read(d.join(".fsscale-125-0-abcdef14/data")).unwrap(), b"x");
}

#[test]
fn absolute_lookups_stay_in_the_scratch_directory_when_dirs_link_is_swapped() {
    let env = TestEnv::new();
    let (real, elsewhere) = (env.root.path().join("real"), env.root.path().join("elsewhere"));
    std::fs::create_dir(&real).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    let link = env.root.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, link, real, elsewhere) = (stop.clone(), link.clone(), real.clone(), elsewhere.clone());
        let staged = link.with_extension("new");
        std::thread::spawn(move || {
            let mut toward_elsewhere = true;
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::remove_file(&staged);
                let _ = std::os::unix::fs::symlink(if toward_elsewhere { &elsewhere } else { &real }, &staged);
                let _ = std::fs::rename(&staged, &link);
                toward_elsewhere = !toward_elsewhere;
            }
        })
    };
    let out = fsscale()
        .args(["run", "mdtest-create", "stat", "-j", "1,2", "-n", "2", "--duration", "0.05", "--warmup-runs", "0"])
        .args(["--items", "200", "--files", "20", "--depth", "2", "--path", "absolute", "--dir"])
        .arg(&link)
        .arg("-o")
        .arg(&env.output)
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert_eq!(entries(&elsewhere), Vec::<String>::new(), "files appeared outside the scratch directory");
    assert_eq!(entries(&real), Vec::<String>::new(), "the scratch directory stayed");
    // Either the run resolved the link once and ran in `real` whole, or it
    // refused a --dir it could not resolve; it never wrote through the link.
    if !out.status.success() {
        assert_one_line_error(&out, "--dir");
    }
}

#[test]
fn absolute_lookups_refuse_a_dir_that_others_can_change() {
    let env = TestEnv::new();
    let open = env.root.path().join("open");
    std::fs::create_dir_all(open.join("d")).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = env.run_at(&open.join("d"), &["stat", "-j", "1", "--path", "absolute"]);
    assert_one_line_error(&out, &format!("--path absolute: {} on the way to --dir", open.display()));
    assert_one_line_error(&out, "is writable by others (mode 777)");
    assert_eq!(entries(&open.join("d")), Vec::<String>::new());
}

#[test]
fn a_closed_stderr_costs_the_run_nothing() {
    let env = TestEnv::new();
    // A stillborn scratch directory makes the run warn before anything runs.
    std::fs::create_dir(env.dir.join(".fsscale-1-0-abcdef12")).unwrap();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(r#""$0" run stat -j 1 -n 2 --duration 0.05 --dir "$1" -o "$2" 2>&1 | true; exit ${PIPESTATUS[0]}"#)
        .arg(env!("CARGO_BIN_EXE_fsscale"))
        .arg(&env.dir)
        .arg(&env.output)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let doc = env.results();
    assert_eq!(doc.status, fsscale::results::Status::Complete);
    assert!(doc.points.iter().all(|p| p.runs.len() == 2));
}

/// Runs `cmd`, failing the test if it has not ended within 20 s (then killed).
fn output_within_20s(cmd: &mut std::process::Command) -> std::process::Output {
    let child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let pid = child.id() as i32;
    let watchdog = std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        // Signal 0 only probes whether our child still exists.
        while std::time::Instant::now() < deadline && fsscale::sys::send_signal(pid, 0).is_ok() {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = fsscale::sys::send_signal(pid, libc::SIGKILL);
    });
    let out = child.wait_with_output().unwrap();
    drop(watchdog);
    assert_ne!(out.status.code(), None, "hung: killed after 20 s\n{}", stderr(&out));
    out
}

#[test]
fn a_fifo_where_an_input_belongs_is_refused_not_waited_on() {
    let env = TestEnv::new();
    assert_success(&env.run(&["stat", "-j", "1"]));
    let fifo = env.root.path().join("fifo");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    // A journal beside the results that is a link to a FIFO: no journal
    // fsscale wrote, passed over (never waited on), and the document stands.
    let journal = fsscale::results::journal_path(&env.output);
    std::os::unix::fs::symlink(&fifo, &journal).unwrap();
    let page = env.root.path().join("page.html");
    let page = page.to_str().unwrap();
    for command in [&["compare"][..], &["analyze"][..], &["report", "-o", page][..]] {
        let mut cmd = fsscale();
        cmd.args(&command[..1]).arg(&env.output);
        if command[0] == "compare" {
            cmd.arg(&env.output);
        }
        cmd.args(&command[1..]);
        let out = output_within_20s(&mut cmd);
        assert_success(&out);
        assert!(stderr(&out).contains("is not a regular file; passed over"), "{}", stderr(&out));
    }
    std::fs::remove_file(&journal).unwrap();
    let out = output_within_20s(
        fsscale()
            .args(["run", "replay", "-j", "1", "--trace"])
            .arg(&fifo)
            .arg("--dir")
            .arg(&env.dir)
            .arg("-o")
            .arg(env.root.path().join("r2.json")),
    );
    assert_one_line_error(&out, "cannot read the loadfile: ");
    assert_one_line_error(&out, "is not a regular file (it is a FIFO)");
    let out = output_within_20s(
        fsscale()
            .args(["run", "replay", "-j", "1", "--trace", "/dev/zero", "--dir"])
            .arg(&env.dir)
            .arg("-o")
            .arg(env.root.path().join("r3.json")),
    );
    assert_one_line_error(&out, "/dev/zero is not a regular file (it is a device)");
}

#[test]
fn a_damaged_journal_line_is_passed_over_and_the_document_stands() {
    let env = TestEnv::new();
    assert_success(&env.run(&["stat", "-j", "1,2", "-n", "2"]));
    let whole = env.results();
    let journal = fsscale::results::journal_path(&env.output);
    let header = format!("{{\"header\":{{\"run_id\":\"{}\"}}}}\n", whole.run_id.clone().unwrap());
    std::fs::write(&journal, format!("{header}{{\"run\":{{\"point\":0,\"garbage\":1}}}}\nnot json at all}}\n"))
        .unwrap();
    let out = fsscale().arg("export").arg(&env.output).args(["--format", "csv"]).output().unwrap();
    assert_success(&out);
    assert_eq!(stdout(&out).lines().count(), 1 + whole.points.len(), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("line 2: not a journal line (cut short or damaged); passed over"), "{err}");
    assert!(err.contains("line 3: not a journal line"), "{err}");
}

/// `doc`'s JSON with `edit` applied to every run (or summary) of every point.
fn edited(path: &Path, edit: impl Fn(&mut serde_json::Value)) -> PathBuf {
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for point in doc["points"].as_array_mut().unwrap() {
        edit(point);
    }
    let out = path.with_extension(format!("{}.json", fsscale::sys::random_hex(4)));
    std::fs::write(&out, serde_json::to_string(&doc).unwrap()).unwrap();
    out
}

#[test]
fn figures_no_run_gives_are_refused_and_stored_summaries_are_not_trusted() {
    let env = TestEnv::new();
    assert_success(&env.run(&["stat", "-j", "1", "--share", "private", "-n", "3"]));
    // Runs of 1e308 and 1 ops/s: compare and report used to panic in the t quantile.
    let huge = edited(&env.output, |p| {
        p["runs"][0]["ops_per_s"] = 1e308.into();
        p["runs"][1]["ops_per_s"] = 1.0.into();
    });
    for args in [vec!["compare", "X", "X"], vec!["report", "X", "-o", "/dev/null"], vec!["export", "X"]] {
        let args: Vec<&std::ffi::OsStr> =
            args.iter().map(|a| if *a == "X" { huge.as_os_str() } else { std::ffi::OsStr::new(a) }).collect();
        let out = fsscale().args(&args).output().unwrap();
        assert_one_line_error(&out, "ops_per_s is 1e308, which no measurement gives");
    }
    let no_cpu = edited(&env.output, |p| p["runs"][0]["worker_cpu"]["user_s"] = (-1.0).into());
    let out = fsscale().arg("compare").arg(&no_cpu).arg(&env.output).arg("--per-cpu").output().unwrap();
    assert_one_line_error(&out, "worker_cpu.user_s is -1, which no measurement gives");
    // Summaries that disagree with the runs, or none at all: read as the runs say.
    let truth = fsscale().arg("export").arg(&env.output).args(["--format", "csv"]).output().unwrap();
    assert_success(&truth);
    let lying = edited(&env.output, |p| p["summary"]["ops_per_s"]["mean"] = 1e300.into());
    let nulls = edited(&env.output, |p| p["summary"] = serde_json::Value::Null);
    for file in [&lying, &nulls] {
        let out = fsscale().arg("export").arg(file).args(["--format", "csv"]).output().unwrap();
        assert_success(&out);
        assert_eq!(stdout(&out), stdout(&truth));
    }
}

#[test]
fn fail_if_worse_fails_a_collapse_however_busy_the_base_was() {
    let env = TestEnv::new();
    assert_success(&env.run(&["stat", "-j", "1", "--share", "private", "-n", "4"]));
    // Busy by its marks, at rates of its own (how far a real base's runs
    // spread on a machine short of memory is not this test's to judge).
    let busy = edited(&env.output, |p| {
        for (run, rate) in p["runs"].as_array_mut().unwrap().iter_mut().zip([1.00e6, 1.02e6, 0.98e6, 1.01e6]) {
            run["noise"] = serde_json::json!({"others_cpu": 0.6, "load_1m": 2.0, "ticks": 10000});
            run["ops_per_s"] = rate.into();
            run["ops_per_s_per_worker"] = rate.into();
        }
    });
    let collapsed = edited(&env.output, |p| {
        for (i, run) in p["runs"].as_array_mut().unwrap().iter_mut().enumerate() {
            run["ops_per_s"] = (i as f64).into();
            run["ops_per_s_per_worker"] = (i as f64).into();
        }
    });
    let out = fsscale().arg("compare").arg(&busy).arg(&collapsed).args(["--fail-if-worse", "5"]).output().unwrap();
    assert!(!out.status.success(), "a collapse to ~0 ops/s passed the gate:\n{}", stdout(&out));
    assert!(stdout(&out).contains("worse"), "{}", stdout(&out));
}

#[test]
fn runs_that_did_no_op_print_no_nan_or_infinite_percentages() {
    let env = TestEnv::new();
    assert_success(&env.run(&["stat", "-j", "1", "--share", "private", "-n", "3"]));
    let zero = edited(&env.output, |p| {
        for run in p["runs"].as_array_mut().unwrap() {
            for field in ["ops_per_s", "ops_per_s_per_worker", "ops"] {
                run[field] = 0.into();
            }
        }
    });
    for (a, b) in [(&zero, &env.output), (&env.output, &zero)] {
        let out = fsscale().arg("compare").arg(a).arg(b).output().unwrap();
        assert_success(&out);
        let text = stdout(&out);
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
    }
}

#[test]
fn working_sets_larger_than_memory_are_refused_before_anything_is_built() {
    let env = TestEnv::new();
    for args in [["stat", "--files", "1000000000"], ["mdtest", "--items", "1000000000"]] {
        let out = output_within_20s(
            fsscale().arg("run").args(args).args(["-j", "1", "--dir"]).arg(&env.dir).arg("-o").arg(&env.output),
        );
        assert_one_line_error(&out, &format!("{} 1000000000 at 1 worker needs about", args[1]));
        assert_one_line_error(&out, "of memory available; use fewer");
    }
    assert!(!env.output.exists());
}

#[test]
fn a_file_whose_points_have_no_runs_is_an_error_not_an_empty_success() {
    let env = TestEnv::new();
    assert_success(&env.run(&["stat", "-j", "1", "--share", "private"]));
    let empty = edited(&env.output, |p| {
        p["runs"] = serde_json::json!([]);
        p["summary"] = serde_json::Value::Null;
    });
    for args in [&["export", "--format", "csv"][..], &["analyze"][..]] {
        let out = fsscale().arg(args[0]).arg(&empty).args(&args[1..]).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded on a file without runs");
        assert!(stderr(&out).contains("has a finished run, so there is nothing to show"), "{}", stderr(&out));
    }
}
