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

/// A loadfile's operations by name and by their place in the counters.
pub trait OpIndex {
    fn from_name(name: &str) -> Option<OpKind>;

    fn index(self) -> usize;
}

impl OpIndex for OpKind {
    fn from_name(name: &str) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|k| k.name() == name)
    }

    fn index(self) -> usize {
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
    /// SHA-256 of the loadfile's bytes (none for the built-in trace).
    pub sha256: Option<String>,
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
    let mut trace = Trace {
        name: name.to_string(),
        ops: Vec::new(),
        lines: Vec::new(),
        handle_names: Vec::new(),
        max_io: 0,
        sha256: None,
    };
    let mut handles = Handles { slots: HashMap::new(), names: Vec::new() };
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
            fail(format!("unknown operation '{}'; a loadfile may use {}", excerpt(op_name), known.join(", ")))
        })?;
        let (args, status) = match tokens[1..].split_last() {
            Some((status, args)) if status.starts_with("NT_STATUS_") || status.starts_with("0x") => (args, status),
            _ => return Err(fail(format!("{op_name}: the last field must be a status such as NT_STATUS_OK"))),
        };
        let expect_ok = status == "NT_STATUS_OK" || status == "0x00000000";
        let line = Line { file: name, line: line_no, op_name, args, expect_ok };
        trace.ops.push(parse_op(kind, &line, &mut handles, &mut trace.max_io)?);
        trace.lines.push(line_no as u32);
    }
    if trace.ops.is_empty() {
        return Err(InputError::Malformed(format!("{name}: no operations (only comments or empty lines)")));
    }
    trace.handle_names = handles.names;
    Ok(trace)
}

/// One line of a loadfile: its operation's fields, and how to name it in an error.
struct Line<'a> {
    file: &'a str,
    line: usize,
    op_name: &'a str,
    args: &'a [String],
    /// The recorded status is success.
    expect_ok: bool,
}

impl Line<'_> {
    fn fail(&self, message: String) -> InputError {
        InputError::Line { file: self.file.to_string(), line: self.line, message }
    }

    /// Exactly `n` arguments (named `names`) before the status.
    fn want(&self, n: usize, names: &str) -> Result<(), InputError> {
        if self.args.len() == n {
            return Ok(());
        }
        Err(self.fail(format!(
            "{} needs {n} argument{} ({names}) and a status, found {}",
            self.op_name,
            if n == 1 { "" } else { "s" },
            self.args.len()
        )))
    }

    fn number(&self, text: &str) -> Result<u64, InputError> {
        parse_number(text).ok_or_else(|| self.fail(format!("{}: '{}' is not a number", self.op_name, excerpt(text))))
    }

    fn path(&self, text: &str) -> Result<CString, InputError> {
        client_path(text).map_err(|e| self.fail(format!("{}: {e}", self.op_name)))
    }

    /// The directory of the path `text`.
    fn parent(&self, text: &str) -> Result<CString, InputError> {
        let unified = text.replace('\\', "/");
        self.path(unified.rsplit_once('/').map_or("", |(dir, _)| dir))
    }
}

/// The loadfile's handle numbers, mapped to dense slots in order of their opening.
struct Handles {
    slots: HashMap<u64, usize>,
    /// The number of each slot.
    names: Vec<u64>,
}

impl Handles {
    /// The slot of handle `text`; `opens`: an NTCreateX that opens it.
    fn slot(&mut self, line: &Line<'_>, text: &str, opens: bool) -> Result<usize, InputError> {
        let fnum = line.number(text)?;
        match self.slots.get(&fnum) {
            Some(&slot) => Ok(slot),
            None if opens => {
                self.slots.insert(fnum, self.names.len());
                self.names.push(fnum);
                Ok(self.names.len() - 1)
            }
            None => {
                Err(line
                    .fail(format!("{}: handle {fnum} is never opened by an NTCreateX before this line", line.op_name)))
            }
        }
    }
}

/// The op of one line of kind `kind`; `max_io` grows to its transfer size.
fn parse_op(kind: OpKind, line: &Line<'_>, handles: &mut Handles, max_io: &mut usize) -> Result<TraceOp, InputError> {
    Ok(match kind {
        OpKind::NTCreateX => create_op(line, handles)?,
        OpKind::Close => {
            line.want(1, "handle")?;
            TraceOp::Close { handle: handles.slot(line, &line.args[0], false)? }
        }
        OpKind::ReadX | OpKind::WriteX => io_op(kind == OpKind::WriteX, line, handles, max_io)?,
        OpKind::Rename => {
            line.want(2, "old path, new path")?;
            TraceOp::Rename {
                from: line.path(&line.args[0])?,
                to: line.path(&line.args[1])?,
                expect_ok: line.expect_ok,
            }
        }
        OpKind::Unlink => {
            if line.args.is_empty() || line.args.len() > 2 {
                line.want(2, "path, attributes")?;
            }
            TraceOp::Unlink { path: line.path(&line.args[0])?, expect_ok: line.expect_ok }
        }
        OpKind::Mkdir => {
            line.want(1, "path")?;
            TraceOp::Mkdir { path: line.path(&line.args[0])?, parent: line.parent(&line.args[0])? }
        }
        OpKind::Rmdir => {
            line.want(1, "path")?;
            TraceOp::Rmdir { path: line.path(&line.args[0])?, expect_ok: line.expect_ok }
        }
        OpKind::Deltree => {
            line.want(1, "path")?;
            TraceOp::Deltree { path: line.path(&line.args[0])? }
        }
        OpKind::Flush => {
            line.want(1, "handle")?;
            TraceOp::Flush { handle: handles.slot(line, &line.args[0], false)? }
        }
        OpKind::FindFirst => {
            line.want(4, "pattern, level, max count, count")?;
            let pattern = line.args[0].replace('\\', "/");
            TraceOp::FindFirst {
                path: line.path(&pattern)?,
                dir: line.parent(&pattern)?,
                wildcard: pattern.contains(['<', '>', '*', '?', '"']),
                max: line.number(&line.args[2])?.min(1 << 20) as usize,
            }
        }
        OpKind::QueryPath => {
            line.want(2, "path, level")?;
            TraceOp::QueryPath { path: line.path(&line.args[0])?, parent: line.parent(&line.args[0])? }
        }
        OpKind::QueryFile => {
            line.want(2, "handle, level")?;
            TraceOp::QueryFile { handle: handles.slot(line, &line.args[0], false)? }
        }
        OpKind::QueryFs => {
            line.want(1, "level")?;
            TraceOp::QueryFs
        }
        OpKind::SetFileInfo => {
            line.want(2, "handle, level")?;
            TraceOp::SetFileInfo { handle: handles.slot(line, &line.args[0], false)? }
        }
        OpKind::LockX | OpKind::UnlockX => {
            line.want(3, "handle, offset, size")?;
            TraceOp::Lock {
                handle: handles.slot(line, &line.args[0], false)?,
                offset: line.number(&line.args[1])? as i64,
                size: line.number(&line.args[2])? as i64,
                unlock: kind == OpKind::UnlockX,
                expect_ok: line.expect_ok,
            }
        }
    })
}

/// NTCreateX: path, create options, disposition, handle.
fn create_op(line: &Line<'_>, handles: &mut Handles) -> Result<TraceOp, InputError> {
    line.want(4, "path, create options, disposition, handle")?;
    let options = line.number(&line.args[1])?;
    let disposition = line.number(&line.args[2])?;
    if disposition > 5 {
        return Err(line.fail(format!("NTCreateX: disposition {disposition} is not 0-5")));
    }
    Ok(TraceOp::Create {
        path: line.path(&line.args[0])?,
        parent: line.parent(&line.args[0])?,
        directory: options & 1 != 0,
        disposition: disposition as u32,
        handle: if line.expect_ok { handles.slot(line, &line.args[3], true)? } else { usize::MAX },
        expect_ok: line.expect_ok,
    })
}

/// ReadX and WriteX: handle, offset, size, bytes done; `max_io` grows to the size.
fn io_op(write: bool, line: &Line<'_>, handles: &mut Handles, max_io: &mut usize) -> Result<TraceOp, InputError> {
    line.want(4, "handle, offset, size, bytes done")?;
    let (handle, offset, size) =
        (handles.slot(line, &line.args[0], false)?, line.number(&line.args[1])?, line.number(&line.args[2])?);
    if size > 16 << 20 {
        return Err(line.fail(format!("{}: size {size} is over the 16 MiB fsscale allows", line.op_name)));
    }
    *max_io = (*max_io).max(size as usize);
    let (offset, size) = (offset as i64, size as usize);
    Ok(match write {
        false => TraceOp::Read { handle, offset, size },
        true => TraceOp::Write { handle, offset, size },
    })
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

/// What an error quotes of a loadfile: at most its first 24 characters,
/// escaped. A loadfile may be any file a received results file names, and
/// an error must not print what it holds.
fn excerpt(text: &str) -> String {
    const MOST: usize = 24;
    let cut: String = text.chars().take(MOST).collect();
    let more = if text.chars().nth(MOST).is_some() { "…" } else { "" };
    format!("{}{more}", crate::escape::for_terminal(&cut))
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
            "path \"{}\" contains '..'; trace paths must stay inside the client's directory",
            excerpt(text)
        )));
    }
    let joined = if parts.is_empty() { ".".to_string() } else { parts.join("/") };
    CString::new(joined).map_err(|_| InputError::Malformed(format!("path \"{}\" contains a NUL byte", excerpt(text))))
}
