//! `replay`: N clients each replay a file-operation trace (dbench loadfile
//! format) in their own directory, looping for the timed window. The
//! built-in trace is [`BUILTIN`], made by `traces/generate.py`.

mod player;
mod trace;

use std::path::Path;

use anyhow::{Context, Result};
use sha2::Digest;

pub use player::{Player, ReplayError};
pub use trace::{parse, OpIndex, OpKind, Trace, TraceOp};

/// The built-in trace's name.
pub(crate) const BUILTIN_NAME: &str = "fileserver";
/// An office worker's session on a file server (see `traces/generate.py`).
pub(crate) const BUILTIN: &str = include_str!("../../traces/fileserver.load");

/// The largest loadfile read (dbench's own is 26 KB).
const MAX_LOADFILE_BYTES: u64 = 256 << 20;

/// The built-in trace, or the loadfile at `path`.
pub fn load(path: Option<&Path>) -> Result<Trace> {
    match path {
        None => Ok(parse(&format!("{BUILTIN_NAME} (built in)"), BUILTIN)?),
        Some(path) => {
            let text = crate::sys::read_input(path, MAX_LOADFILE_BYTES)
                .with_context(|| format!("--trace {}: cannot read the loadfile", path.display()))?;
            let mut trace = parse(&path.display().to_string(), &text).map_err(|e| anyhow::anyhow!("--trace {e}"))?;
            trace.sha256 = Some(crate::archive::hex(&sha2::Sha256::digest(text.as_bytes())));
            Ok(trace)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys;
    use std::os::fd::{AsFd, OwnedFd};

    fn open_dir(path: &Path) -> OwnedFd {
        sys::open(sys::CWD, &sys::cstring(path).unwrap(), libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap()
    }

    const TINY: &str = r#"# a hand-counted trace
0.000 Deltree "\work" NT_STATUS_OK
Mkdir "\work" NT_STATUS_OK
NTCreateX "\work\a.txt" 0x0 2 7 NT_STATUS_OK
WriteX 7 0 1000 1000 NT_STATUS_OK
WriteX 7 1000 500 500 NT_STATUS_OK
Flush 7 NT_STATUS_OK
ReadX 7 0 1500 1500 NT_STATUS_OK
QUERY_FILE_INFORMATION 7 1004 NT_STATUS_OK
SET_FILE_INFORMATION 7 1004 NT_STATUS_OK
LockX 7 0 10 NT_STATUS_OK
UnlockX 7 0 10 NT_STATUS_OK
Close 7 NT_STATUS_OK
QUERY_PATH_INFORMATION "\work\a.txt" 1004 NT_STATUS_OK
QUERY_PATH_INFORMATION "\work\none" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
NTCreateX "\work\none" 0x0 1 8 NT_STATUS_OBJECT_NAME_NOT_FOUND
FIND_FIRST "\work\*" 260 1366 0 NT_STATUS_OK
QUERY_FS_INFORMATION 259 NT_STATUS_OK
Mkdir "\work\sub" NT_STATUS_OK
Rename "\work\a.txt" "\work\sub\b.txt" NT_STATUS_OK
Unlink "\work\sub\b.txt" 0x6 NT_STATUS_OK
Rmdir "\work\sub" NT_STATUS_OK
Sleep 100 NT_STATUS_OK
"#;

    #[test]
    fn a_tiny_trace_replays_its_hand_counted_mix_exactly() {
        let trace = parse("tiny", TINY).unwrap();
        assert_eq!(trace.ops.len(), 21);
        assert_eq!(trace.lines[0], 2);
        let mix = trace.mix();
        let expected: [(OpKind, u64); 17] = [
            (OpKind::NTCreateX, 2),
            (OpKind::Close, 1),
            (OpKind::ReadX, 1),
            (OpKind::WriteX, 2),
            (OpKind::Rename, 1),
            (OpKind::Unlink, 1),
            (OpKind::Mkdir, 2),
            (OpKind::Rmdir, 1),
            (OpKind::Deltree, 1),
            (OpKind::Flush, 1),
            (OpKind::FindFirst, 1),
            (OpKind::QueryPath, 2),
            (OpKind::QueryFile, 1),
            (OpKind::QueryFs, 1),
            (OpKind::SetFileInfo, 1),
            (OpKind::LockX, 1),
            (OpKind::UnlockX, 1),
        ];
        for (kind, count) in expected {
            assert_eq!(mix[kind.index()], count, "{kind:?}");
        }
        assert_eq!(trace.bytes_per_pass(), 3000);

        let dir = tempfile::tempdir().unwrap();
        let fd = open_dir(dir.path());
        let mut player = Player::new(&trace, fd.as_fd());
        let mut seen = [0u64; 17];
        let mut bytes = 0;
        // Three passes: the trace cleans up after itself, so it loops.
        for _ in 0..3 * trace.ops.len() {
            let (kind, moved) = player.step().unwrap();
            seen[kind.index()] += 1;
            bytes += moved;
        }
        for kind in OpKind::ALL {
            assert_eq!(seen[kind.index()], 3 * mix[kind.index()], "{kind:?}");
        }
        assert_eq!(bytes, 9000);
        // What is left is the trace's own directory, empty.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["work"]);
        assert_eq!(std::fs::read_dir(dir.path().join("work")).unwrap().count(), 0);
    }

    #[test]
    fn the_built_in_trace_parses_and_uses_every_operation() {
        let trace = load(None).unwrap();
        assert!(trace.ops.len() > 2000);
        assert!(trace.mix().iter().all(|&n| n > 0), "{:?}", trace.mix());
        let dir = tempfile::tempdir().unwrap();
        let fd = open_dir(dir.path());
        let mut player = Player::new(&trace, fd.as_fd());
        for _ in 0..2 * trace.ops.len() {
            player.step().unwrap();
        }
    }

    #[test]
    fn dbench_s_own_loadfile_replays_pass_after_pass() {
        // Its first 5,000 lines, played twice over: the second pass finds
        // what the first left (dbench's own cleanup between passes) and
        // makes every op again, exactly (in the real binary a client's
        // passes in a window are the machine's to count).
        let loadfile = Path::new("/usr/share/dbench/client.txt");
        if !loadfile.exists() {
            crate::skips::skip(
                "replay::tests::dbench_s_own_loadfile_replays_pass_after_pass",
                "dbench is not installed (.ci/run installs it)",
            );
            return;
        }
        let text = std::fs::read_to_string(loadfile).unwrap();
        let prefix: String = text.lines().take(5_000).map(|l| format!("{l}\n")).collect();
        let trace = parse("client-prefix.txt", &prefix).unwrap();
        assert_eq!(trace.ops.len(), 5_000, "every line of the prefix is an op");
        let mix = trace.mix();
        assert!(mix[OpKind::FindFirst.index()] > 0, "{mix:?}");
        let dir = tempfile::tempdir().unwrap();
        let fd = open_dir(dir.path());
        let mut player = Player::new(&trace, fd.as_fd());
        let mut seen = vec![0u64; mix.len()];
        for _ in 0..2 * trace.ops.len() {
            let (kind, _) = player.step().unwrap();
            seen[kind.index()] += 1;
        }
        assert_eq!(seen, mix.iter().map(|n| 2 * n).collect::<Vec<_>>(), "two whole passes, op for op");
    }

    #[test]
    fn a_divergent_replay_names_the_line() {
        // Where dbench checks the status (Unlink, Rmdir, Rename), a divergence fails the replay.
        let trace =
            parse("t", "Mkdir \"\\d\" NT_STATUS_OK\nRmdir \"\\d\" NT_STATUS_OK\nRmdir \"\\d\" NT_STATUS_OK\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let fd = open_dir(dir.path());
        let mut player = Player::new(&trace, fd.as_fd());
        player.step().unwrap();
        player.step().unwrap();
        let err = player.step().unwrap_err();
        assert_eq!(err.line, 3);
        assert_eq!(err.error.to_string(), "Rmdir: rmdir(\"d\") failed: No such file or directory (ENOENT)");
        let expected_failure = parse("t", "Unlink \"\\x\" 0x16 NT_STATUS_OBJECT_NAME_NOT_FOUND\n").unwrap();
        std::fs::write(dir.path().join("x"), "").unwrap();
        let mut player = Player::new(&expected_failure, fd.as_fd());
        assert_eq!(
            player.step().unwrap_err().error.to_string(),
            "Unlink \"x\" succeeded, but the trace recorded a failure"
        );
    }

    #[test]
    fn dbench_semantics_where_dbench_does_not_check() {
        // An existing directory for Mkdir, a lookup that fails, an open that
        // disagrees with its status, a FIND_FIRST whose pattern matches
        // nothing: dbench carries on, and so does the replay, pass after pass.
        let text = "Deltree \"\\c\" NT_STATUS_OK\n\
                    Mkdir \"\\c\" NT_STATUS_OK\n\
                    Mkdir \"\\c\" NT_STATUS_OK\n\
                    NTCreateX \"\\c\\f\" 0x0 2 7 NT_STATUS_OK\n\
                    Close 7 NT_STATUS_OK\n\
                    NTCreateX \"\\c\\f\" 0x0 1 8 NT_STATUS_OBJECT_NAME_NOT_FOUND\n\
                    QUERY_PATH_INFORMATION \"\\c\\F\" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND\n\
                    FIND_FIRST \"\\c\\FILLER.*\" 260 1366 0 NT_STATUS_NO_SUCH_FILE\n\
                    FIND_FIRST \"\\c\" 260 1366 1 NT_STATUS_OK\n";
        let trace = parse("t", text).unwrap();
        assert!(matches!(&trace.ops[7], TraceOp::FindFirst { wildcard: true, max: 1366, .. }));
        assert!(matches!(&trace.ops[8], TraceOp::FindFirst { wildcard: false, .. }));
        let dir = tempfile::tempdir().unwrap();
        let fd = open_dir(dir.path());
        let mut player = Player::new(&trace, fd.as_fd());
        for _ in 0..3 * trace.ops.len() {
            player.step().unwrap();
        }
        // Deltree removed the file each pass; the directory stayed, as in dbench.
        assert!(dir.path().join("c").is_dir());
    }

    #[test]
    fn malformed_lines_are_named() {
        let cases = [
            (
                "Frobnicate \"\\a\" NT_STATUS_OK",
                "t: line 2: unknown operation 'Frobnicate'; a loadfile may use NTCreateX, Close,",
            ),
            (
                "ReadX 1 0 NT_STATUS_OK",
                "t: line 2: ReadX needs 4 arguments (handle, offset, size, bytes done) and a status, found 2",
            ),
            ("Close 99 NT_STATUS_OK", "t: line 2: Close: handle 99 is never opened by an NTCreateX before this line"),
            ("WriteX 5 zero 10 10 NT_STATUS_OK", "t: line 2: WriteX: 'zero' is not a number"),
            ("Mkdir \"\\a\\..\\..\\etc\" NT_STATUS_OK", "t: line 2: Mkdir: path \"\\a\\..\\..\\etc\" contains '..'"),
            ("Mkdir \"\\a", "t: line 2: unterminated \" in a path"),
            ("Mkdir \"\\a\"", "t: line 2: Mkdir: the last field must be a status such as NT_STATUS_OK"),
            ("NTCreateX \"\\a\" 0x0 9 5 NT_STATUS_OK", "t: line 2: NTCreateX: disposition 9 is not 0-5"),
        ];
        for (line, expected) in cases {
            let text = format!("NTCreateX \"\\f\" 0x0 2 5 NT_STATUS_OK\n{line}\n");
            let err = parse("t", &text).unwrap_err().to_string();
            assert!(err.starts_with(expected), "{line}: {err}");
        }
        assert_eq!(
            parse("t", "# nothing\n\n").unwrap_err().to_string(),
            "t: no operations (only comments or empty lines)"
        );
    }
}
