//! `bpf/build --check` with the toolchain that built the committed objects
//! (bytes compared) and with another (objects rebuilt for the tests to judge).

use std::path::Path;
use std::process::Command;

use crate::util::*;

/// A copy of bpf/ (sources, headers, the script, the objects) in `to`.
fn copy_bpf(to: &Path) {
    let out = Command::new("cp").arg("-r").arg(repo().join("bpf")).arg(to).output();
    assert!(out.unwrap().status.success());
}

fn check(bpf: &Path) -> std::process::Output {
    Command::new(bpf.join("build")).arg("--check").output().unwrap()
}

#[test]
fn the_check_compares_bytes_with_the_recorded_toolchain_and_rebuilds_with_another() {
    let test = "the_check_compares_bytes_with_the_recorded_toolchain_and_rebuilds_with_another";
    let tools = ["clang", "llvm-strip"].iter().all(|t| Command::new(t).arg("--version").output().is_ok())
        && Path::new("/usr/include/bpf/bpf_helpers.h").exists();
    if !prerequisite(tools, test, "clang, llvm-strip and libbpf's headers (apt-get install clang llvm libbpf-dev)") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    copy_bpf(root.path());
    let bpf = root.path().join("bpf");
    let committed = std::fs::read(bpf.join("out/locks.bpf.o")).unwrap();
    // An object that is not what its source compiles to.
    let mut tampered = committed.clone();
    tampered.push(0);
    std::fs::write(bpf.join("out/locks.bpf.o"), &tampered).unwrap();
    let out = check(&bpf);
    // This machine may have another toolchain than the recorded one (a
    // contributor's clang): then the other path below is what it takes.
    let same_toolchain = !stderr(&out).contains("built with another toolchain");
    if same_toolchain {
        // The recorded toolchain: bytes compared, the object named.
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert_eq!(
            stderr(&out),
            "bpf/out/locks.bpf.o is not what bpf/locks.bpf.c compiles to; run bpf/build and commit it\n"
        );
        assert_eq!(std::fs::read(bpf.join("out/locks.bpf.o")).unwrap(), tampered, "a check changes nothing");
    }
    // Another toolchain recorded: no bytes compared; fresh objects in their place, and said.
    std::fs::write(bpf.join("out/TOOLCHAIN"), "clang version 0.0 (another machine)\n").unwrap();
    let out = check(&bpf);
    assert_success(&out);
    let said = stderr(&out);
    assert!(said.starts_with("bpf/build --check: bpf/out was built with another toolchain"), "{said}");
    assert!(said.contains("  recorded: clang version 0.0 (another machine)\n"), "{said}");
    assert!(said.contains("the objects were rebuilt here into bpf/out; the tests load these"), "{said}");
    let rebuilt = std::fs::read(bpf.join("out/locks.bpf.o")).unwrap();
    assert_ne!(rebuilt, tampered, "rebuilt");
    assert!(rebuilt.starts_with(b"\x7fELF"), "an object");
    if same_toolchain {
        assert_eq!(rebuilt, committed, "this machine's toolchain makes the committed bytes");
    }
    // A source that no longer compiles fails either way.
    std::fs::write(bpf.join("locks.bpf.c"), "this is not C\n").unwrap();
    assert!(!check(&bpf).status.success());
}
