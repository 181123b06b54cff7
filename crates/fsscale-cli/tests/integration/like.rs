//! `run --like` reads a received results file as data: it never runs a
//! command, takes a place or writes a path the file records, and a finished
//! results file is never replaced without `--force`.

use std::path::{Path, PathBuf};

use fsscale::results::ResultsFile;

use crate::util::*;

/// A real results file whose recorded command line is `recorded` (the
/// words after `fsscale run`), as someone could mail it.
fn crafted(env: &TestEnv, name: &str, recorded: &[&str]) -> PathBuf {
    let path = env.root.path().join(name);
    if !env.output.exists() {
        assert_success(&env.run(&["stat", "-j", "1", "--share", "private"]));
    }
    let mut doc = env.results();
    doc.command_line = ["fsscale", "run"].iter().chain(recorded).map(|s| s.to_string()).collect();
    doc.save(&path).unwrap();
    path
}

/// `fsscale run --like FILE ARGS`, in `cwd`.
fn like(cwd: &Path, file: &Path, args: &[&str]) -> std::process::Output {
    fsscale().current_dir(cwd).args(["run", "--like"]).arg(file).args(args).output().unwrap()
}

#[test]
fn a_recorded_command_is_never_run_unless_given_again_or_trusted() {
    let env = TestEnv::new();
    let canary = env.root.path().join("CANARY");
    let touch = format!("a=touch {}", canary.display());
    let dir = env.dir.to_str().unwrap();
    let quick = ["stat", "-j", "1", "-n", "1", "--max-runs", "1", "-d", "0.02", "--warmup", "0", "--warmup-runs", "0"];
    let mut recorded: Vec<&str> = quick.to_vec();
    recorded.extend(["-q", "--variant", &touch, "--variant", "b=true", "--dir", dir]);
    let file = crafted(&env, "a.json", &recorded);
    let b = env.root.path().join("b.json");
    let out = like(env.root.path(), &file, &["-o", b.to_str().unwrap()]);
    // One line, naming every command and place, and nothing ran (a recorded -q hides nothing).
    assert_one_line_error(&out, "never taken from a file unless given again or accepted with --trust-recorded");
    let err = stderr(&out);
    assert!(err.contains(&format!("--variant 'a=touch {}'", canary.display())), "{err}");
    assert!(err.contains("--variant b=true") && err.contains(&format!("--dir {dir}")), "{err}");
    assert!(!canary.exists() && !b.exists());
    // Each kind of recorded command is refused alike.
    for (flag, command) in [
        ("--variant-teardown", "a=touch X"),
        ("--cmd", "touch X"),
        ("--extract-cmd", "touch X"),
        ("--mkfs-opts", "-O ^has_journal"),
        ("--backing", "dev:/dev/loop7"),
        ("--fs", "ext4:data=journal"),
    ] {
        let file = crafted(&env, "c.json", &["stat", "-j", "1", flag, command]);
        let out = like(env.root.path(), &file, &["-o", b.to_str().unwrap()]);
        assert_one_line_error(&out, &format!("--trust-recorded: {flag} "));
    }
    let file =
        crafted(&env, "d.json", &["stat", "--fs", "ext4", "--backing", "dev:/dev/loop7", "--destroy-device-data"]);
    let out = like(env.root.path(), &file, &["-o", b.to_str().unwrap()]);
    assert_one_line_error(&out, "--backing dev:/dev/loop7, --destroy-device-data");
    // Given again, the user's own commands run; the plan names them first.
    let mine = format!("a=touch {}.mine", canary.display());
    let out = like(
        env.root.path(),
        &file_of(&env, &recorded),
        &["-o", b.to_str().unwrap(), "--variant", &mine, "--variant", "b=true", "--dir", dir],
    );
    assert_success(&out);
    let err = stderr(&out);
    assert!(err.contains("running the plan it records, read as data"), "{err}");
    assert!(
        err.contains(&format!("commands: --variant 'a=touch {}.mine', --variant b=true", canary.display())),
        "{err}"
    );
    assert!(err.contains("given here in place of the file's: --variant"), "{err}");
    assert!(!canary.exists() && PathBuf::from(format!("{}.mine", canary.display())).exists());
    // Accepted whole with --trust-recorded.
    std::fs::remove_file(&b).unwrap();
    let out = like(env.root.path(), &file_of(&env, &recorded), &["-o", b.to_str().unwrap(), "--trust-recorded"]);
    assert_success(&out);
    assert!(canary.exists());
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

/// The file `crafted` made first (`a.json`), recorded as `recorded`.
fn file_of(env: &TestEnv, recorded: &[&str]) -> PathBuf {
    crafted(env, "a.json", recorded)
}

#[test]
fn the_output_is_never_taken_from_the_file_nor_the_file_itself() {
    let env = TestEnv::new();
    let victim = env.root.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let quick = ["stat", "-j", "1", "-n", "1", "-d", "0.02", "--warmup", "0", "--warmup-runs", "0"];
    let mut recorded = quick.to_vec();
    recorded.extend(["-qo", victim.to_str().unwrap(), "--label", "kernel-A", "--note", "A's own note"]);
    let file = crafted(&env, "a.json", &recorded);
    let cwd = env.root.path().join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    // Without -o: the default place in the current directory, never the recorded one.
    let out = like(&cwd, &file, &["--dir", env.dir.to_str().unwrap()]);
    assert_success(&out);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    let written: Vec<String> = entries(&cwd.join("fsscale-results"));
    assert_eq!(written.len(), 1, "{written:?}");
    let b = ResultsFile::load(&cwd.join("fsscale-results").join(&written[0])).unwrap();
    // Neither A's label nor its note is B's.
    assert_eq!((b.label.as_deref(), b.note.as_deref()), (None, None));
    assert!(stderr(&out).contains(&format!("--output {}, --label kernel-A", victim.display())), "{}", stderr(&out));
    // B's own label and note are allowed.
    let b_path = env.root.path().join("b.json");
    let out = like(&cwd, &file, &["-o", b_path.to_str().unwrap(), "--label", "kernel-B", "--note", "after the patch"]);
    assert_success(&out);
    let b = ResultsFile::load(&b_path).unwrap();
    assert_eq!((b.label.as_deref(), b.note.as_deref()), (Some("kernel-B"), Some("after the patch")));
    // -o that is the --like file itself, by any name and with --force too.
    let alias = env.root.path().join("alias.json");
    std::fs::hard_link(&file, &alias).unwrap();
    let before = std::fs::read(&file).unwrap();
    for args in [&["-o", alias.to_str().unwrap()][..], &["-o", file.to_str().unwrap(), "--force"][..]] {
        let out = like(&cwd, &file, args);
        assert_one_line_error(&out, "it is the --like file itself, which this run would replace; give another -o");
    }
    assert_eq!(std::fs::read(&file).unwrap(), before);
    // A nested --like, and options that would change the plan, are refused.
    let nested = crafted(&env, "n.json", &["stat", "--like", "other.json"]);
    assert_one_line_error(&like(&cwd, &nested, &[]), "it records a nested --like other.json, which is refused");
    let out = like(&cwd, &file, &["-j", "4"]);
    assert_one_line_error(&out, "--workers 4 would change the plan it records");
}

#[test]
fn an_input_with_the_same_counts_but_other_content_is_refused() {
    let env = TestEnv::new();
    let tarball = env.root.path().join("t.tar");
    assert_success(&fsscale().args(["tree", "--scale", "0.002", "--tar"]).arg(&tarball).output().unwrap());
    assert_success(&env.run(&["untar", "-j", "1", "--tarball", tarball.to_str().unwrap()]));
    let a = env.results();
    let untar = a.settings.untar.as_ref().unwrap();
    assert_eq!(untar.sha256.as_deref(), Some(fsscale::archive::file_sha256(&tarball).unwrap().as_str()));
    assert!(Path::new(&untar.tarball).is_absolute(), "{}", untar.tarball);
    // One byte of one file's data changed: the same entries and bytes, another tarball.
    let mut bytes = std::fs::read(&tarball).unwrap();
    let data = first_file_data(&bytes);
    bytes[data] ^= 0x20;
    std::fs::write(&tarball, &bytes).unwrap();
    let c = env.root.path().join("c.json");
    let dir = ["--dir", env.dir.to_str().unwrap()];
    let out = like(env.root.path(), &env.output, &["-o", c.to_str().unwrap(), dir[0], dir[1]]);
    assert_one_line_error(&out, "when it was recorded: it is not the same tarball");
    // A file edited to look generated (no scale) is checked all the same: the check follows the command line.
    let edited = env.root.path().join("edited.json");
    let mut doc = a.clone();
    doc.settings.untar.as_mut().unwrap().scale = None;
    doc.settings.untar.as_mut().unwrap().sha256 = None;
    doc.save(&edited).unwrap();
    assert_one_line_error(&like(env.root.path(), &edited, &dir), "without the tarball's content hash");
    // A FIFO at the tarball's name is refused, not waited on.
    std::fs::remove_file(&tarball).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&tarball).status().unwrap().success());
    let started = std::time::Instant::now();
    assert_one_line_error(&like(env.root.path(), &env.output, &dir), "is not a regular file (it is a FIFO)");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert!(!c.exists());
    // A walked tree's digest: an entry renamed, the same counts, refused.
    let tree = env.root.path().join("tree");
    std::fs::create_dir_all(tree.join("d")).unwrap();
    std::fs::write(tree.join("d/f"), "x").unwrap();
    let t_out = env.root.path().join("t.json");
    let run = fsscale()
        .args(["run", "traverse", "-j", "1", "-n", "1", "--warmup-runs", "0", "--share", "same", "--tree"])
        .arg(&tree)
        .arg("--dir")
        .arg(&env.dir)
        .arg("-o")
        .arg(&t_out)
        .output()
        .unwrap();
    assert_success(&run);
    assert!(ResultsFile::load(&t_out).unwrap().settings.walked_tree.unwrap().digest.is_some());
    std::fs::rename(tree.join("d/f"), tree.join("d/g")).unwrap();
    assert_one_line_error(&like(env.root.path(), &t_out, &["-o", "u.json", dir[0], dir[1]]), "holds other entries now");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn a_finished_results_file_is_replaced_only_with_force() {
    let env = TestEnv::new();
    let quick = ["run", "stat", "-j", "1", "-n", "1", "-d", "0.02", "--warmup", "0", "--warmup-runs", "0", "--dir"];
    let run =
        |extra: &[&str]| fsscale().args(quick).arg(&env.dir).arg("-o").arg(&env.output).args(extra).output().unwrap();
    assert_success(&run(&[]));
    let before = std::fs::read(&env.output).unwrap();
    assert_one_line_error(
        &run(&[]),
        &format!("-o {}: a results file (complete, 2 runs) is there already; give --force", env.output.display()),
    );
    assert_eq!(std::fs::read(&env.output).unwrap(), before, "the baseline is untouched");
    // Any file is kept: not only results.
    let other = env.root.path().join("notes.txt");
    std::fs::write(&other, "mine").unwrap();
    let out = fsscale().args(quick).arg(&env.dir).arg("-o").arg(&other).output().unwrap();
    assert_one_line_error(&out, "a file is there already; give --force to replace it");
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "mine");
    assert_success(&run(&["--force"]));
    assert_ne!(std::fs::read(&env.output).unwrap(), before);
}

/// The offset of the first byte of the first regular file's data with any.
fn first_file_data(tar: &[u8]) -> usize {
    let mut at = 0;
    while at + 512 <= tar.len() && tar[at] != 0 {
        let size = std::str::from_utf8(&tar[at + 124..at + 136]).unwrap().trim_matches(|c: char| c == '\0' || c == ' ');
        let size = u64::from_str_radix(size, 8).unwrap() as usize;
        if matches!(tar[at + 156], b'0' | 0) && size > 0 {
            return at + 512;
        }
        at += 512 + size.div_ceil(512) * 512;
    }
    panic!("the tarball has no file with data");
}

/// `fsscale run ARGS -n 1` into `name` beside the test's files: a recorded run.
fn recorded(env: &TestEnv, name: &str, args: &[&str]) -> PathBuf {
    let path = env.root.path().join(name);
    let out = fsscale()
        .args(["run", "-n", "1", "--warmup-runs", "0"])
        .args(args)
        .arg("--dir")
        .arg(&env.dir)
        .arg("-o")
        .arg(&path)
        .output()
        .unwrap();
    assert_success(&out);
    path
}

/// A copy of `doc` whose command line gives `option` the value `value`, saved as `forged.json`.
fn forged(env: &TestEnv, doc: &ResultsFile, option: &str, value: &str) -> PathBuf {
    let mut doc = doc.clone();
    let at = doc.command_line.iter().position(|w| w == option).unwrap() + 1;
    doc.command_line[at] = value.to_string();
    let path = env.root.path().join("forged.json");
    doc.save(&path).unwrap();
    path
}

#[test]
fn a_recorded_loadfile_is_hashed_never_parsed_before_it_matches_so_no_error_quotes_a_secret() {
    let env = TestEnv::new();
    let trace = env.root.path().join("tiny.load");
    std::fs::write(&trace, crate::replay::TINY).unwrap();
    let recorded =
        recorded(&env, "replay.json", &["replay", "-j", "1", "-d", "0.05", "--trace", trace.to_str().unwrap()]);
    let doc = ResultsFile::load(&recorded).unwrap();
    let sha = doc.settings.replay.as_ref().unwrap().sha256.clone().expect("the loadfile's hash is recorded");
    assert_eq!(sha.len(), 64);
    // A file naming a secret (readable by root only) as its loadfile.
    let secret = env.root.path().join("secret");
    std::fs::write(&secret, "SECRETWORD and the rest\n").unwrap();
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let dir = ["--dir", env.dir.to_str().unwrap()];
    let forged_path = forged(&env, &doc, "--trace", secret.to_str().unwrap());
    let out = like(env.root.path(), &forged_path, &["-o", "x.json", dir[0], dir[1]]);
    assert_one_line_error(&out, "it is not the same loadfile");
    assert!(!stderr(&out).contains("SECRETWORD"), "{}", stderr(&out));
    let mut unhashed = ResultsFile::load(&forged_path).unwrap();
    unhashed.settings.replay.as_mut().unwrap().sha256 = None;
    unhashed.save(&forged_path).unwrap();
    let out = like(env.root.path(), &forged_path, &["-o", "x.json", dir[0], dir[1]]);
    assert_one_line_error(&out, "without the loadfile's content hash");
    assert!(!stderr(&out).contains("SECRETWORD"), "{}", stderr(&out));
    // The loadfile as recorded is run again.
    assert_success(&like(env.root.path(), &recorded, &["-o", "again.json", dir[0], dir[1]]));
}

#[test]
fn a_recorded_tree_is_walked_no_further_than_the_entries_it_held() {
    let env = TestEnv::new();
    let tree = env.root.path().join("tree");
    std::fs::create_dir_all(tree.join("d")).unwrap();
    std::fs::write(tree.join("d/f"), "x").unwrap();
    let recorded =
        recorded(&env, "t.json", &["traverse", "-j", "1", "--share", "same", "--tree", tree.to_str().unwrap()]);
    // The same file naming the whole system as its tree: refused after a
    // walk of at most the 2 entries it held, not a walk of /.
    let forged = forged(&env, &ResultsFile::load(&recorded).unwrap(), "--tree", "/");
    let dir = ["--dir", env.dir.to_str().unwrap()];
    let out = like(env.root.path(), &forged, &["-o", "x.json", dir[0], dir[1]]);
    assert_one_line_error(&out, "--tree / holds more than the 2 entries it held when it was recorded");
}
