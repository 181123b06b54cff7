//! The words the results and the configuration share: how workers are made
//! and ordered, cache states, filesystem kinds and records, device I/O,
//! which instruments are on. A leaf: it imports nothing else of the crate,
//! so the results document depends on no behaviour (the modules that act
//! on these types add their methods where they live).

mod instrument;
mod objective;
mod rate;
pub use instrument::{Instrument, Instruments};
pub use objective::{parse_objectives, Objective, Quantile, MAX_LIMIT_NS};
pub use rate::{parse_rates, Rate, MAX_RATE, MAX_RATES};

use std::fmt;

use serde::{Deserialize, Serialize};

/// An enumerated word of the command line and the results (a mode, a
/// sharing level, an order...): every value with its name, so `--help`,
/// completions and parsing come from one list.
pub trait Choice: Copy + 'static {
    /// Every value, in the order `--help` lists them.
    const ALL: &'static [Self];

    fn name(self) -> &'static str;

    /// Other spellings accepted on the command line (`processes`, `mw`).
    fn aliases(self) -> &'static [&'static str] {
        &[]
    }

    fn from_name(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.name() == text || v.aliases().contains(&text))
    }
}

/// Gives an enum of words its `name()`, [`Choice`] (every variant, in this
/// order, with its aliases) and `Display`, from one list:
/// `choice!(Mode { Process => "process" | "processes", Thread => "thread" })`.
/// The match is exhaustive, so a new variant must be named here. Exported
/// (as `fsscale::choice!`) so the command line's own words use it too.
#[macro_export]
#[doc(hidden)]
macro_rules! choice {
    ($ty:ident { $($variant:ident => $name:literal $(| $alias:literal)*),+ $(,)? }) => {
        impl $ty {
            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }
        }

        impl $crate::vocab::Choice for $ty {
            const ALL: &'static [$ty] = &[$($ty::$variant),+];

            fn name(self) -> &'static str {
                $ty::name(self)
            }

            fn aliases(self) -> &'static [&'static str] {
                match self {
                    $($ty::$variant => &[$($alias),*],)+
                }
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}
pub use crate::choice;

/// A configuration of the system under test: `setup` before each of its
/// runs (`run --variant`), `teardown` after each, however the run ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Variant {
    pub name: String,
    /// A shell command (`sh -c`); empty: nothing to set (a baseline).
    pub setup: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown: Option<String>,
    /// Its runs have no instruments on (`--profile-cost`'s baseline).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unprofiled: bool,
}

/// `--until-ci` of a run with variants unless it says otherwise: rounds go
/// on until each variant's ratio to the first, paired by round, is known
/// within ±2% (95%), or `--max-runs`. On a quiet machine the least rounds
/// (`-n`) already get there; on a shared one, where runs scatter by 5–9%,
/// it takes 25–30 rounds, and a 5% change is then called in most pairs
/// where five rounds call it in under half (docs/STATISTICS.md).
pub const DEFAULT_PAIRED_CI_PCT: f64 = 2.0;

/// `--max-runs` of a run with variants unless it says otherwise. Runs 8%
/// apart in their ratio (a shared 2-vCPU VM) need about 60 rounds for
/// ±2%; 50 bound the cost at under a minute a point of two 0.5 s variants.
pub const DEFAULT_PAIRED_MAX_ROUNDS: usize = 50;

/// How much the workers share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Share {
    /// Each worker its own directory and files.
    Private,
    /// One directory (or one file) for all, each worker on its own entries (or offsets).
    Shared,
    /// All workers on the very same entry, file and offset.
    Same,
}

choice!(Share { Private => "private", Shared => "shared", Same => "same" });

impl Share {
    pub const ALL: [Share; 3] = [Share::Private, Share::Shared, Share::Same];
}

/// An enum of words whose every variant, its name and the list of all of
/// them come from one list, so a new variant is one line:
/// `words! { pub enum Workload { Stat => "stat", ... } }` gives the enum,
/// `Workload::ALL` (an array, in this order) and an exhaustive `name()`.
macro_rules! words {
    ($(#[$meta:meta])* pub enum $ty:ident { $($(#[$vmeta:meta])* $variant:ident => $name:literal),+ $(,)? }) => {
        $(#[$meta])*
        pub enum $ty { $($(#[$vmeta])* $variant),+ }

        impl $ty {
            /// Every value, in order.
            pub const ALL: [$ty; [$($name),+].len()] = [$($ty::$variant),+];

            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }
        }
    };
}

pub(crate) use words;

words! {
    /// Every workload fsscale knows, in catalogue order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Workload {
        Stat => "stat",
        StatDeep => "stat-deep",
        OpenClose => "open-close",
        CreatUnlink => "creat-unlink",
        MkdirRmdir => "mkdir-rmdir",
        Rename => "rename",
        RenameDirs => "rename-dirs",
        LinkUnlink => "link-unlink",
        Readdir => "readdir",
        Read => "read",
        Write => "write",
        ReadSeq => "read-seq",
        WriteSeq => "write-seq",
        ReadDirect => "read-direct",
        WriteDirect => "write-direct",
        Append => "append",
        AppendGrow => "append-grow",
        Fsync => "fsync",
        DupClose => "dup-close",
        Lseek => "lseek",
        FcntlLock => "fcntl-lock",
        Flock => "flock",
        Fallocate => "fallocate",
        Truncate => "truncate",
        FaultShared => "fault-shared",
        FaultPrivate => "fault-private",
        Untar => "untar",
        Traverse => "traverse",
        Replay => "replay",
        Command => "command",
        MdtestCreate => "mdtest-create",
        MdtestStat => "mdtest-stat",
        MdtestRead => "mdtest-read",
        MdtestRemove => "mdtest-remove",
        MdtestDirCreate => "mdtest-dir-create",
        MdtestDirStat => "mdtest-dir-stat",
        MdtestDirRemove => "mdtest-dir-remove",
    }
}

impl Workload {
    /// `mdtest`: its file phases, in mdtest's order.
    pub const MDTEST: [Workload; 4] =
        [Workload::MdtestCreate, Workload::MdtestStat, Workload::MdtestRead, Workload::MdtestRemove];
    /// `mdtest-dirs`: its directory phases.
    pub const MDTEST_DIRS: [Workload; 3] =
        [Workload::MdtestDirCreate, Workload::MdtestDirStat, Workload::MdtestDirRemove];

    /// The quick default suite: the classic VFS trio, and concurrent
    /// extraction and traversal of a small tree.
    pub const DEFAULT_SUITE: [Workload; 5] =
        [Workload::Stat, Workload::OpenClose, Workload::CreatUnlink, Workload::Untar, Workload::Traverse];

    pub fn from_name(name: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == name)
    }

    /// What kind of work it is, what it reads and what shapes it: one
    /// exhaustive match, so a new workload must say all of it here.
    pub fn traits(self) -> Traits {
        use Lookups::{Files, Items, Own};
        use Workload::*;
        let (fixed_work, lookups, tree) = match self {
            Stat | OpenClose => (false, Files, false),
            StatDeep | CreatUnlink | MkdirRmdir | Rename | RenameDirs | LinkUnlink | Readdir | Read | Write
            | ReadSeq | WriteSeq | ReadDirect | WriteDirect | Append | Fsync | DupClose | Lseek | FcntlLock | Flock
            | Fallocate | Truncate | FaultShared | FaultPrivate | Replay => (false, Own, false),
            AppendGrow | Command => (true, Own, false),
            Untar | Traverse => (true, Own, true),
            MdtestCreate | MdtestStat | MdtestRead | MdtestRemove | MdtestDirCreate | MdtestDirStat
            | MdtestDirRemove => (true, Items, false),
        };
        Traits { fixed_work, lookups, tree }
    }

    /// Fixed-time loops count ops in a window; fixed-work jobs are timed to completion.
    pub fn is_fixed_work(self) -> bool {
        self.traits().fixed_work
    }

    /// `fault-shared` or `fault-private`: `--map-size` defines its op.
    pub fn maps_a_file(self) -> bool {
        matches!(self, Workload::FaultShared | Workload::FaultPrivate)
    }

    /// One of mdtest's phases (`mdtest-create`, ...).
    pub fn is_mdtest(self) -> bool {
        self.traits().lookups == Lookups::Items
    }

    /// Whether `--depth`, `--path` and `--random` place and order what it
    /// names (`--files` only sizes `stat`'s and `open-close`'s working set;
    /// the mdtest phases have `--items`).
    pub fn takes_lookup_shape(self) -> bool {
        self.traits().lookups != Lookups::Own
    }

    /// Whether it extracts or walks the generated tree (`untar`, `traverse`).
    pub fn needs_tree(self) -> bool {
        self.traits().tree
    }

    /// Whether fsscale's own loops run it (not an external command), so that
    /// `fsscale run all` means every built-in workload.
    pub fn is_builtin(self) -> bool {
        self != Workload::Command
    }
}

/// What kind of workload one is (see [`Workload::traits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Traits {
    /// Timed to completion (a job), not counted in a fixed window (a loop).
    pub fixed_work: bool,
    pub lookups: Lookups,
    /// Extracts or walks the generated tree.
    pub tree: bool,
}

/// What the lookup-shape options (`--files`, `--depth`, `--path`, `--random`) do to a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookups {
    /// Nothing: it names its own fixed files.
    Own,
    /// They choose the files it looks up (`stat`, `open-close`).
    Files,
    /// They place and order its `--items` (the mdtest phases).
    Items,
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

words! {
    /// Every operation kind of a dbench loadfile (`replay`), in the order
    /// tables list them, by the loadfile's name of the operation.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    pub enum OpKind {
        NTCreateX => "NTCreateX",
        Close => "Close",
        ReadX => "ReadX",
        WriteX => "WriteX",
        Rename => "Rename",
        Unlink => "Unlink",
        Mkdir => "Mkdir",
        Rmdir => "Rmdir",
        Deltree => "Deltree",
        Flush => "Flush",
        #[serde(rename = "FIND_FIRST")]
        FindFirst => "FIND_FIRST",
        #[serde(rename = "QUERY_PATH_INFORMATION")]
        QueryPath => "QUERY_PATH_INFORMATION",
        #[serde(rename = "QUERY_FILE_INFORMATION")]
        QueryFile => "QUERY_FILE_INFORMATION",
        #[serde(rename = "QUERY_FS_INFORMATION")]
        QueryFs => "QUERY_FS_INFORMATION",
        #[serde(rename = "SET_FILE_INFORMATION")]
        SetFileInfo => "SET_FILE_INFORMATION",
        LockX => "LockX",
        UnlockX => "UnlockX",
    }
}

impl OpKind {
    /// The system call that this kind, and no other, makes exactly once
    /// (`--verify` counts those, and `--profile latency` shows its time
    /// beside the op's); `None` for kinds whose calls vary (name
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
}

/// How workers are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Forked processes: private fd tables, address spaces and cwd.
    Process,
    /// Threads of one process: one fd table, one address space, one cwd.
    Thread,
}

choice!(Mode { Process => "process" | "processes", Thread => "thread" | "threads" });

/// The order a run's runs happen in (see the runner's scheduler).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Rounds: run k of every point before run k+1 of any.
    Interleaved,
    /// Every run of a point before the next point.
    Sequential,
    /// Rounds, each in a random order from a recorded seed.
    Shuffled,
}

choice!(Order { Interleaved => "interleaved", Sequential => "sequential", Shuffled => "shuffled" });

/// How an open-loop run's arrivals are spaced in time (`--arrivals`):
/// evenly (wrk2, fio's `rate_iops`), or as a Poisson process, the
/// arrivals of many independent clients (YCSB's `-target` with
/// exponential gaps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    #[default]
    Even,
    Poisson,
}

choice!(Arrivals { Even => "even", Poisson => "poisson" });

/// Whether fixed work starts with the kernel's caches as the previous run
/// left them, or emptied (`sync; echo 3 > /proc/sys/vm/drop_caches`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cache {
    Warm,
    Cold,
}

choice!(Cache { Warm => "warm", Cold => "cold" });

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsKind {
    /// An existing directory (`--dir`): nothing is made.
    Dir,
    Tmpfs,
    /// The page cache alone: no size limit, nothing swaps (the memory-disk
    /// seeds' filesystem); guarded by a check of available memory.
    Ramfs,
    Ext4,
    Xfs,
    Btrfs,
    F2fs,
}

choice!(FsKind {
    Dir => "dir",
    Tmpfs => "tmpfs",
    Ramfs => "ramfs",
    Ext4 => "ext4",
    Xfs => "xfs",
    Btrfs => "btrfs",
    F2fs => "f2fs",
});

/// When filesystems are made anew.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fresh {
    Run,
    Point,
    Once,
}

choice!(Fresh { Run => "run", Point => "point", Once => "once" });

impl Fresh {
    /// How often a filesystem was made, in words that follow its description.
    pub fn words(self) -> &'static str {
        match self {
            Fresh::Run => "made anew for every run",
            Fresh::Point => "made anew for every point, kept across its runs",
            Fresh::Once => "made once, kept for every point",
        }
    }
}

/// What a run records about the filesystem it ran on.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct FsRecord {
    /// `ext4` or `ext4:data=journal`.
    pub label: String,
    pub kind: FsKind,
    /// The mkfs command line and the version it reports.
    pub mkfs_command: Option<String>,
    pub mkfs_version: Option<String>,
    /// As the kernel reports them (`/proc/self/mountinfo`).
    pub mount_options: String,
    pub super_options: String,
    /// `/dev/loop3`, the real device, or absent for tmpfs.
    pub device: Option<String>,
    /// `ram`, `file:DIR` or `dev:/dev/NAME`.
    pub backing: String,
    pub size_bytes: u64,
}

impl FsRecord {
    /// `ext4 of 1.5 GiB on /dev/loop3 (file:/var/tmp)`: what the figures were measured on.
    pub fn describe(&self) -> String {
        let size = format_size(self.size_bytes);
        match (self.kind, &self.device) {
            (FsKind::Ramfs, _) => format!("{} in memory, no size limit (needs about {size})", self.label),
            (_, None) => format!("{} of {size} in memory", self.label),
            (_, Some(device)) if self.backing.starts_with("dev:") => format!("{} of {size} on {device}", self.label),
            (_, Some(device)) => format!("{} of {size} on {device} ({})", self.label, self.backing),
        }
    }
}

/// What a variant's name may be, as its refusal says it.
pub const VARIANT_NAME_RULE: &str = "a name is 1 to 32 letters, digits and . _ : + -";

/// Whether `name` may name a variant (see [`VARIANT_NAME_RULE`]): a run
/// refuses any other, and so does reading a results file.
pub fn is_valid_variant_name(name: &str) -> bool {
    let valid = |c: char| c.is_ascii_alphanumeric() || "._:+-".contains(c);
    !name.is_empty() && name.len() <= 32 && name.chars().all(valid)
}

/// A number as a person reads it back: `1e-300` and `1e308`, not hundreds of digits.
pub fn readable_number(value: f64) -> String {
    if value != 0.0 && (value.abs() < 1e-4 || value.abs() >= 1e15) {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

/// "1 worker", "4 workers".
pub fn workers(n: usize) -> String {
    match n {
        1 => "1 worker".to_string(),
        n => format!("{n} workers"),
    }
}

/// 1.5 GiB, 512 MiB, 1.5 MiB, 4 KiB, 1 byte: binary units, as `--fs-size`
/// takes them, and never a size shown as less than it is (1 byte is not "0 MiB").
pub fn format_size(bytes: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    const TIB: u64 = 1 << 40;
    let unit = |size: u64, name: &str, exact: bool| match exact && bytes.is_multiple_of(size) {
        true => format!("{} {name}", bytes / size),
        false => format!("{:.1} {name}", bytes as f64 / size as f64),
    };
    match bytes {
        b if b >= TIB => unit(TIB, "TiB", false),
        b if b >= GIB => unit(GIB, "GiB", false),
        b if b >= MIB => unit(MIB, "MiB", true),
        b if b >= KIB => unit(KIB, "KiB", true),
        1 => "1 byte".to_string(),
        b => format!("{b} bytes"),
    }
}

/// The backing device's I/O during the timed window (the `iostat` view).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq)]
pub struct DeviceIo {
    pub read_ios: u64,
    pub read_bytes: u64,
    pub write_ios: u64,
    pub write_bytes: u64,
    /// Milliseconds the device was busy.
    pub io_ms: u64,
}

/// Which instruments a run has on, and how the tracing ones collect.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InstrumentConfig {
    /// Written as one `"name": bool` per instrument (`"locks": true`).
    #[serde(flatten)]
    pub on: Instruments,
    /// How the lock and off-CPU profiles are collected; `None`: in the
    /// kernel by BPF where it can be, else through tracefs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Collector>,
    /// Sleeps shorter than this (to the wakeup) are left out of the off-CPU profile, microseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_sleep_us: u64,
    /// Lock waits' and sleeps' stacks sampled on BPF (each counted exactly;
    /// the sites from a walk of one in N per task, the rest spread over them).
    /// False in files from before sampling, and with `--profile-every-stack`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sampled_stacks: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How a tracepoint profile was collected: BPF programs that pair and sum
/// events in the kernel, or a tracefs instance's buffers read and paired by
/// fsscale (where BPF is unavailable; each stack then costs the traced task more).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Collector {
    Bpf,
    /// Files written before fsscale had BPF were collected this way.
    #[default]
    Tracefs,
}

impl Collector {
    pub fn name(self) -> &'static str {
        match self {
            Collector::Bpf => "bpf",
            Collector::Tracefs => "tracefs",
        }
    }
}

impl InstrumentConfig {
    pub fn any(&self) -> bool {
        !self.on.is_empty()
    }

    pub fn has(&self, instrument: Instrument) -> bool {
        self.on.has(instrument)
    }

    /// Whether a tracepoint profile (collected by BPF or tracefs) is on.
    pub fn traces(&self) -> bool {
        self.on.iter().any(|i| i.collected())
    }

    /// `locks`, `cpu`, `offcpu`, `latency`, `verify`: as the tables mark them.
    pub fn names(&self) -> Vec<&'static str> {
        self.on.iter().map(|i| i.name()).collect()
    }
}

/// The shape of the lookups `stat` and `open-close` make (fxmark MRPM,
/// mdtest): how many distinct files each worker visits, how many path
/// components lead to them, whether the path starts at `/`, and in what
/// order the files are visited. The default is one hot, relative,
/// one-component name.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookupShape {
    /// Distinct files per worker (`--share same`: for all).
    pub files: usize,
    /// Path components from the worker's directory to a file, the file included.
    pub depth: usize,
    /// The path is absolute, so every lookup walks from `/` across the
    /// mount points above `--dir`.
    pub absolute: bool,
    /// Files visited in a random order (fixed per worker), not one after another.
    pub random: bool,
}

impl Default for LookupShape {
    fn default() -> LookupShape {
        LookupShape { files: 1, depth: 1, absolute: false, random: false }
    }
}

impl LookupShape {
    pub fn is_default(&self) -> bool {
        *self == LookupShape::default()
    }

    /// `1000 files, 4 deep, absolute, random`, for tables.
    pub fn describe(&self) -> String {
        let mut words = vec![format!("{} file{}", self.files, if self.files == 1 { "" } else { "s" })];
        if self.depth > 1 {
            words.push(format!("{} deep", self.depth));
        }
        words.push(if self.absolute { "absolute path".into() } else { "relative path".into() });
        if self.files > 1 {
            words.push(if self.random { "random order".into() } else { "in order".into() });
        }
        words.join(", ")
    }

    /// `2 deep, absolute path, random order` for items that have their own
    /// count (the mdtest phases'); `None` when they sit in the worker's
    /// directory, named relative to it, in order.
    pub fn describe_placement(&self) -> Option<String> {
        let mut words = Vec::new();
        if self.depth > 1 {
            words.push(format!("{} deep", self.depth));
        }
        if self.absolute {
            words.push("absolute path".to_string());
        }
        if self.random {
            words.push("random order".to_string());
        }
        (!words.is_empty()).then(|| words.join(", "))
    }
}

/// Input a user gave that fsscale cannot use: an option's value, a
/// combination of options, a line of an input file. Every message names what
/// was given and what to give instead. The kinds are apart because callers
/// treat them apart: a combination one mode cannot run is skipped when
/// another mode can, while a malformed value always ends the command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// A value not in a form fsscale reads: a worker list, a duration, a
    /// size, a filesystem, a command template.
    #[error("{0}")]
    Malformed(String),
    /// A workload asked to run in a mode or at a sharing level it cannot.
    #[error("{0}")]
    Unsupported(String),
    /// A line of an input file (a dbench loadfile).
    #[error("{file}: line {line}: {message}")]
    Line { file: String, line: usize, message: String },
}

impl InputError {
    pub fn malformed(message: impl Into<String>) -> InputError {
        InputError::Malformed(message.into())
    }

    pub fn unsupported(message: impl Into<String>) -> InputError {
        InputError::Unsupported(message.into())
    }
}

/// `text` as one `sh` word, quoted only where it needs to be
/// (`--label 'pool of threads'`, `-j 1,2` as it is).
pub fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./,:=+-@%".contains(c);
    match !text.is_empty() && text.chars().all(plain) {
        true => text.to_string(),
        false => format!("'{}'", text.replace('\'', "'\\''")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_never_shown_smaller_than_they_are() {
        assert_eq!(format_size(1), "1 byte");
        assert_eq!(format_size(1000), "1000 bytes");
        assert_eq!(format_size(4096), "4 KiB");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(format_size(16 << 20), "16 MiB");
        assert_eq!(format_size(3 << 19), "1.5 MiB");
        assert_eq!(format_size(3 << 29), "1.5 GiB");
    }
}
