//! The dbench loadfile format, parsed once into operations that replay
//! without parsing, allocating or hashing.
//!
//! A line is `[timestamp] Operation arg... STATUS`, whitespace-separated,
//! paths in double quotes with `\` or `/` separators, `#` starts a comment.
//! Handles (`fnum`) are mapped to dense slots here so the player indexes an
//! array. Paths are made relative to the client's directory and may not
//! climb out of it.

use std::collections::HashMap;
use std::ffi::CString;

use crate::vocab::InputError;
pub use crate::vocab::OpKind;

impl OpKind {
    /// The system call that this kind, and no other, makes exactly once
    /// (`--verify` counts those); `None` for kinds whose calls vary (name
    /// resolution, directory scans) or that other kinds make too.
    pub fn exact_syscall(self) -> Option<&'static str> {
        match self {
            OpKind::ReadX => Some("pread64"),
            OpKind::WriteX => Some("pwrite64"),
            OpKind::Rename => Some("renameat"),
            OpKind::Flush => Some("fsync"),
            OpKind::QueryFs => Some("fstatfs"),
            OpKind::SetFileInfo => Some("utimensat"),
            OpKind::LockX | OpKind::UnlockX => Some("fcntl"),
            _ => None,
        }
    }

    /// The POSIX calls it maps to, for the catalogue and docs.
    pub fn posix(self) -> &'static str {
        match self {
            OpKind::NTCreateX => "openat (O_CREAT for create, O_CREAT|O_TRUNC for overwrite(-if), as dbench; mkdirat first for a directory)",
            OpKind::Close => "close",
            OpKind::ReadX => "pread",
            OpKind::WriteX => "pwrite",
            OpKind::Rename => "renameat",
            OpKind::Unlink => "unlinkat",
            OpKind::Mkdir => "mkdirat (an existing directory is fine, as in dbench)",
            OpKind::Rmdir => "unlinkat(AT_REMOVEDIR)",
            OpKind::Deltree => "recursive getdents64 + unlinkat of every file (directories stay, as in dbench)",
            OpKind::Flush => "fsync",
            OpKind::FindFirst => "name lookup; with a wildcard, openat(O_DIRECTORY) + getdents64 of up to max-count entries + close",
            OpKind::QueryPath => "fstatat (when missing: a case-insensitive search of its directory, as dbench)",
            OpKind::QueryFile => "fstat",
            OpKind::QueryFs => "fstatfs",
            OpKind::SetFileInfo => "futimens",
            OpKind::LockX => "fcntl(F_SETLK, F_WRLCK)",
            OpKind::UnlockX => "fcntl(F_SETLK, F_UNLCK)",
        }
    }

    fn from_name(name: &str) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|k| k.name() == name)
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// One parsed operation; `expect_ok` is whether the trace recorded success.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceOp {
    /// `parent` is `path`'s directory, for dbench's case-insensitive lookup (made at parse time).
    Create {
        path: CString,
        parent: CString,
        directory: bool,
        disposition: u32,
        handle: usize,
        expect_ok: bool,
    },
    Close {
        handle: usize,
    },
    Read {
        handle: usize,
        offset: i64,
        size: usize,
    },
    Write {
        handle: usize,
        offset: i64,
        size: usize,
    },
    Rename {
        from: CString,
        to: CString,
        expect_ok: bool,
    },
    Unlink {
        path: CString,
        expect_ok: bool,
    },
    Mkdir {
        path: CString,
        parent: CString,
    },
    Rmdir {
        path: CString,
        expect_ok: bool,
    },
    Deltree {
        path: CString,
    },
    Flush {
        handle: usize,
    },
    /// `path` is the pattern's full name (looked up as dbench does); with a
    /// wildcard (`*?<>"`) in it, up to `max` entries of `dir` are listed.
    FindFirst {
        path: CString,
        dir: CString,
        wildcard: bool,
        max: usize,
    },
    QueryPath {
        path: CString,
        parent: CString,
    },
    QueryFile {
        handle: usize,
    },
    QueryFs,
    SetFileInfo {
        handle: usize,
    },
    Lock {
        handle: usize,
        offset: i64,
        size: i64,
        unlock: bool,
        expect_ok: bool,
    },
}

impl TraceOp {
    pub fn kind(&self) -> OpKind {
        match self {
            TraceOp::Create { .. } => OpKind::NTCreateX,
            TraceOp::Close { .. } => OpKind::Close,
            TraceOp::Read { .. } => OpKind::ReadX,
            TraceOp::Write { .. } => OpKind::WriteX,
            TraceOp::Rename { .. } => OpKind::Rename,
            TraceOp::Unlink { .. } => OpKind::Unlink,
            TraceOp::Mkdir { .. } => OpKind::Mkdir,
            TraceOp::Rmdir { .. } => OpKind::Rmdir,
            TraceOp::Deltree { .. } => OpKind::Deltree,
            TraceOp::Flush { .. } => OpKind::Flush,
            TraceOp::FindFirst { .. } => OpKind::FindFirst,
            TraceOp::QueryPath { .. } => OpKind::QueryPath,
            TraceOp::QueryFile { .. } => OpKind::QueryFile,
            TraceOp::QueryFs => OpKind::QueryFs,
            TraceOp::SetFileInfo { .. } => OpKind::SetFileInfo,
            TraceOp::Lock { unlock: false, .. } => OpKind::LockX,
            TraceOp::Lock { unlock: true, .. } => OpKind::UnlockX,
        }
    }
}

/// A parsed loadfile.
#[derive(Debug, Clone)]
pub struct Trace {
    /// Where it came from: "fileserver (built in)" or the file's path.
    pub name: String,
    pub ops: Vec<TraceOp>,
    /// The loadfile line of each op (1-based), for errors.
    pub lines: Vec<u32>,
    /// The trace's handle numbers, by slot.
    pub handle_names: Vec<u64>,
    /// The largest ReadX or WriteX, for the buffer.
    pub max_io: usize,
}

impl Trace {
    /// How many ops of each kind one pass does.
    pub fn mix(&self) -> [u64; OpKind::ALL.len()] {
        let mut counts = [0; OpKind::ALL.len()];
        for op in &self.ops {
            counts[op.kind().index()] += 1;
        }
        counts
    }

    /// Bytes one pass reads and writes (as the trace asks; short reads move less).
    pub fn bytes_per_pass(&self) -> u64 {
        self.ops
            .iter()
            .map(|op| match op {
                TraceOp::Read { size, .. } | TraceOp::Write { size, .. } => *size as u64,
                _ => 0,
            })
            .sum()
    }
}

/// Parses a loadfile; an error names the line and what is wrong with it.
pub fn parse(name: &str, text: &str) -> Result<Trace, InputError> {
    let mut trace =
        Trace { name: name.to_string(), ops: Vec::new(), lines: Vec::new(), handle_names: Vec::new(), max_io: 0 };
    let mut slots: HashMap<u64, usize> = HashMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let fail = |message: String| InputError::Line { file: name.to_string(), line: line_no, message };
        let tokens = tokenize(raw).map_err(|e| fail(e.to_string()))?;
        let mut tokens: &[String] = &tokens;
        if tokens.is_empty() || tokens[0].starts_with('#') {
            continue;
        }
        // dbench 4 loadfiles start each line with a timestamp; replay ignores it.
        if tokens.len() > 1 && tokens[0].parse::<f64>().is_ok() {
            tokens = &tokens[1..];
        }
        let op_name = tokens[0].as_str();
        if op_name == "Sleep" {
            continue; // fsscale replays as fast as it can, like dbench without --timelimit pacing
        }
        let kind = OpKind::from_name(op_name).ok_or_else(|| {
            let known: Vec<&str> = OpKind::ALL.iter().map(|k| k.name()).collect();
            fail(format!("unknown operation '{op_name}'; a loadfile may use {}", known.join(", ")))
        })?;
        let (args, status) = match tokens[1..].split_last() {
            Some((status, args)) if status.starts_with("NT_STATUS_") || status.starts_with("0x") => (args, status),
            _ => return Err(fail(format!("{op_name}: the last field must be a status such as NT_STATUS_OK"))),
        };
        let expect_ok = status == "NT_STATUS_OK" || status == "0x00000000";
        let want = |n: usize, names: &str| {
            if args.len() == n {
                Ok(())
            } else {
                Err(fail(format!(
                    "{op_name} needs {n} argument{} ({names}) and a status, found {}",
                    if n == 1 { "" } else { "s" },
                    args.len()
                )))
            }
        };
        let number =
            |text: &str| parse_number(text).ok_or_else(|| fail(format!("{op_name}: '{text}' is not a number")));
        let path = |text: &str| client_path(text).map_err(|e| fail(format!("{op_name}: {e}")));
        let parent = |text: &str| {
            let unified = text.replace('\\', "/");
            path(unified.rsplit_once('/').map_or("", |(dir, _)| dir))
        };
        let mut handle = |text: &str, opens: bool| -> Result<usize, InputError> {
            let fnum = number(text)?;
            match slots.get(&fnum) {
                Some(&slot) => Ok(slot),
                None if opens => {
                    slots.insert(fnum, trace.handle_names.len());
                    trace.handle_names.push(fnum);
                    Ok(trace.handle_names.len() - 1)
                }
                None => Err(fail(format!("{op_name}: handle {fnum} is never opened by an NTCreateX before this line"))),
            }
        };
        let op = match kind {
            OpKind::NTCreateX => {
                want(4, "path, create options, disposition, handle")?;
                let options = number(&args[1])?;
                let disposition = number(&args[2])?;
                if disposition > 5 {
                    return Err(fail(format!("NTCreateX: disposition {disposition} is not 0-5")));
                }
                TraceOp::Create {
                    path: path(&args[0])?,
                    parent: parent(&args[0])?,
                    directory: options & 1 != 0,
                    disposition: disposition as u32,
                    handle: if expect_ok { handle(&args[3], true)? } else { usize::MAX },
                    expect_ok,
                }
            }
            OpKind::Close => {
                want(1, "handle")?;
                TraceOp::Close { handle: handle(&args[0], false)? }
            }
            OpKind::ReadX | OpKind::WriteX => {
                want(4, "handle, offset, size, bytes done")?;
                let (handle, offset, size) = (handle(&args[0], false)?, number(&args[1])?, number(&args[2])?);
                if size > 16 << 20 {
                    return Err(fail(format!("{op_name}: size {size} is over the 16 MiB fsscale allows")));
                }
                trace.max_io = trace.max_io.max(size as usize);
                let (offset, size) = (offset as i64, size as usize);
                if kind == OpKind::ReadX {
                    TraceOp::Read { handle, offset, size }
                } else {
                    TraceOp::Write { handle, offset, size }
                }
            }
            OpKind::Rename => {
                want(2, "old path, new path")?;
                TraceOp::Rename { from: path(&args[0])?, to: path(&args[1])?, expect_ok }
            }
            OpKind::Unlink => {
                if args.is_empty() || args.len() > 2 {
                    want(2, "path, attributes")?;
                }
                TraceOp::Unlink { path: path(&args[0])?, expect_ok }
            }
            OpKind::Mkdir => {
                want(1, "path")?;
                TraceOp::Mkdir { path: path(&args[0])?, parent: parent(&args[0])? }
            }
            OpKind::Rmdir => {
                want(1, "path")?;
                TraceOp::Rmdir { path: path(&args[0])?, expect_ok }
            }
            OpKind::Deltree => {
                want(1, "path")?;
                TraceOp::Deltree { path: path(&args[0])? }
            }
            OpKind::Flush => {
                want(1, "handle")?;
                TraceOp::Flush { handle: handle(&args[0], false)? }
            }
            OpKind::FindFirst => {
                want(4, "pattern, level, max count, count")?;
                let pattern = args[0].replace('\\', "/");
                TraceOp::FindFirst {
                    path: path(&pattern)?,
                    dir: parent(&pattern)?,
                    wildcard: pattern.contains(['<', '>', '*', '?', '"']),
                    max: number(&args[2])?.min(1 << 20) as usize,
                }
            }
            OpKind::QueryPath => {
                want(2, "path, level")?;
                TraceOp::QueryPath { path: path(&args[0])?, parent: parent(&args[0])? }
            }
            OpKind::QueryFile => {
                want(2, "handle, level")?;
                TraceOp::QueryFile { handle: handle(&args[0], false)? }
            }
            OpKind::QueryFs => {
                want(1, "level")?;
                TraceOp::QueryFs
            }
            OpKind::SetFileInfo => {
                want(2, "handle, level")?;
                TraceOp::SetFileInfo { handle: handle(&args[0], false)? }
            }
            OpKind::LockX | OpKind::UnlockX => {
                want(3, "handle, offset, size")?;
                TraceOp::Lock {
                    handle: handle(&args[0], false)?,
                    offset: number(&args[1])? as i64,
                    size: number(&args[2])? as i64,
                    unlock: kind == OpKind::UnlockX,
                    expect_ok,
                }
            }
        };
        trace.ops.push(op);
        trace.lines.push(line_no as u32);
    }
    if trace.ops.is_empty() {
        return Err(InputError::Malformed(format!("{name}: no operations (only comments or empty lines)")));
    }
    Ok(trace)
}

/// Splits a line into fields; double quotes keep spaces.
fn tokenize(line: &str) -> Result<Vec<String>, InputError> {
    let mut tokens = Vec::new();
    let mut chars = line.trim().chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut token = String::new();
        if c == '"' {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some(c) => token.push(c),
                    None => return Err(InputError::malformed("unterminated \" in a path")),
                }
            }
        } else {
            while let Some(&c) = chars.peek().filter(|c| !c.is_whitespace()) {
                token.push(c);
                chars.next();
            }
        }
        tokens.push(token);
    }
    Ok(tokens)
}

/// `1040`, `0x20`: what dbench's `strtol(s, NULL, 0)` accepts, without sign.
fn parse_number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// A trace path relative to the client's directory: `\a\b` or `/a/b` is
/// `a/b`; the root is `.`; `..` and NUL are refused so a trace can never
/// reach outside the directory fsscale made for the client.
fn client_path(text: &str) -> Result<CString, InputError> {
    let unified = text.replace('\\', "/");
    let parts: Vec<&str> = unified.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.contains(&"..") {
        return Err(InputError::Malformed(format!(
            "path \"{text}\" contains '..'; trace paths must stay inside the client's directory"
        )));
    }
    let joined = if parts.is_empty() { ".".to_string() } else { parts.join("/") };
    CString::new(joined).map_err(|_| InputError::Malformed(format!("path \"{text}\" contains a NUL byte")))
}
