//! What fsscale trusts of files and directories it did not make: inputs
//! that must be regular files of bounded size, directories only root or
//! this user can change, a descriptor's real path, the memory there is.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;

use super::{errno_text_plain, euid};

/// Makes `dir` (mode 0700 where created) and checks it is a directory of
/// this user's that nobody else can write, on a path nobody else can
/// change: a shared or planted one could hand a root process someone else's
/// files, and a directory another user can write above it could be renamed
/// away and replaced.
pub fn ensure_private_dir(dir: &Path, what: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| anyhow::anyhow!("cannot create the {what} {}: {e}", dir.display()))?;
    check_private_dir(dir, what)
}

/// The check of [`ensure_private_dir`] on a directory that exists: a
/// directory (not a link to one), this user's, writable by nobody else, and
/// every directory above it (links resolved) root's or this user's and
/// writable by nobody else unless sticky, as /tmp.
pub fn check_private_dir(dir: &Path, what: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let shown = crate::escape::for_terminal(&dir.to_string_lossy()).into_owned();
    let meta =
        std::fs::symlink_metadata(dir).map_err(|e| anyhow::anyhow!("{what} {shown}: {}", errno_text_plain(&e)))?;
    let problem = if !meta.is_dir() {
        Some("not a directory (a symbolic link?)".to_string())
    } else if meta.uid() != euid() {
        Some(format!("owned by uid {}, not by you (uid {})", meta.uid(), euid()))
    } else if meta.mode() & 0o022 != 0 {
        Some(format!("writable by others (mode {:o})", meta.mode() & 0o7777))
    } else {
        None
    };
    if let Some(p) = problem {
        anyhow::bail!("the {what} {shown} is {p}; use a directory of your own that only you can write");
    }
    let real = std::fs::canonicalize(dir).map_err(|e| anyhow::anyhow!("{what} {shown}: {}", errno_text_plain(&e)))?;
    for above in real.ancestors().skip(1) {
        let meta =
            std::fs::metadata(above).map_err(|e| anyhow::anyhow!("{}: {}", above.display(), errno_text_plain(&e)))?;
        if let Some(why) = others_can_replace_in(&meta) {
            anyhow::bail!(
                "the {what} {shown} is inside {}, which {why}: another user could replace it; use a directory on a path only you and root can change",
                crate::escape::for_terminal(&above.to_string_lossy())
            );
        }
    }
    Ok(())
}

/// Checks that the file at `path`, if there is one, is a regular file of
/// this user's with one name, not a link, FIFO or device.
pub fn check_own_file(path: &Path, what: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => anyhow::bail!("{what} {}: {}", path.display(), errno_text_plain(&e)),
    };
    let kind = meta.file_type();
    let problem = if kind.is_symlink() {
        Some("a symbolic link".to_string())
    } else if !kind.is_file() {
        Some("not a regular file".to_string())
    } else if meta.uid() != euid() {
        Some(format!("owned by uid {}, not by you (uid {})", meta.uid(), euid()))
    } else if meta.nlink() != 1 {
        Some(format!("a file with {} names (a hard link)", meta.nlink()))
    } else {
        None
    };
    match problem {
        Some(p) => anyhow::bail!(
            "the {what} {} is {p}; fsscale opens only its own files there: remove it or choose another path",
            crate::escape::for_terminal(&path.to_string_lossy())
        ),
        None => Ok(()),
    }
}

/// Opens an input file (a results file, a journal, a loadfile, a tarball)
/// for reading, never blocking: `O_NONBLOCK`, so a FIFO planted at its name
/// cannot hang the open through Ctrl-C, and refused unless what was opened
/// is a regular file (no FIFO, device such as /dev/zero, or directory) of at
/// most `max_bytes`. Callers add what the file is as context.
pub fn open_input(path: &Path, max_bytes: u64) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| anyhow::anyhow!(errno_text_plain(&e)))?;
    let meta = file.metadata().map_err(|e| anyhow::anyhow!(errno_text_plain(&e)))?;
    let kind = meta.file_type();
    let not = if kind.is_dir() {
        Some("a directory")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        None
    };
    if let Some(not) = not {
        anyhow::bail!("{} is not a regular file (it is {not}); name a file", path.display());
    }
    if meta.len() > max_bytes {
        anyhow::bail!(
            "{} is {} MiB, more than the {} MiB fsscale reads from such a file",
            path.display(),
            meta.len() >> 20,
            max_bytes >> 20
        );
    }
    Ok(file)
}

/// The directory at `path`, opened for reading without blocking and
/// without following a final link's target elsewhere than a directory: a
/// FIFO, device or file there is refused, not waited on.
pub fn open_dir_input(path: &Path) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_DIRECTORY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENOTDIR) => anyhow::anyhow!("{} is not a directory; name a directory", path.display()),
            _ => anyhow::anyhow!(errno_text_plain(&e)),
        })
}

/// [`open_input`], read whole as text.
pub fn read_input(path: &Path, max_bytes: u64) -> anyhow::Result<String> {
    let file = open_input(path, max_bytes)?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(file, max_bytes), &mut text)
        .map_err(|e| anyhow::anyhow!(errno_text_plain(&e)))?;
    Ok(text)
}

/// Why someone other than root or this user could replace what is in the
/// directory `meta` describes: `belongs to uid N`, or `is writable by others
/// (mode M)` unless sticky (as /tmp and /dev/shm); `None` when nobody can.
pub fn others_can_replace_in(meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    // S_ISVTX, whose libc type differs between Unixes.
    const STICKY: u32 = 0o1000;
    let sticky = meta.mode() & STICKY != 0;
    if meta.uid() != 0 && meta.uid() != euid() {
        Some(format!("belongs to uid {}", meta.uid()))
    } else if meta.mode() & 0o022 != 0 && !sticky {
        Some(format!("is writable by others (mode {:o})", meta.mode() & 0o7777))
    } else {
        None
    }
}

/// The path the kernel has for an open descriptor (its real path, no
/// symbolic link in it), read from /proc/self/fd.
pub fn fd_path(fd: impl AsFd) -> io::Result<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd()))
}

/// `MemAvailable` from /proc/meminfo, in bytes.
pub fn available_memory() -> Option<u64> {
    meminfo("MemAvailable")
}

/// `MemTotal` from /proc/meminfo, in bytes.
pub fn total_memory() -> Option<u64> {
    meminfo("MemTotal")
}

/// `SwapTotal` from /proc/meminfo, in bytes: 0 means tmpfs's pages cannot be evicted.
pub fn total_swap() -> Option<u64> {
    meminfo("SwapTotal")
}

/// One `key:  N kB` line of /proc/meminfo, in bytes.
fn meminfo(key: &str) -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_value(&info, key)
}

pub fn meminfo_value(info: &str, key: &str) -> Option<u64> {
    let kib: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// Freezes the filesystem of `fd` and thaws it at once (`FIFREEZE`,
/// `FITHAW`: CAP_SYS_ADMIN): everything is written home and a journaling
/// filesystem's log checkpointed. Only for filesystems fsscale made: a
/// freeze stops every writer of the filesystem while it lasts.
pub fn freeze_and_thaw(fd: impl AsFd) {
    const FIFREEZE: libc::c_ulong = 0xC004_5877;
    const FITHAW: libc::c_ulong = 0xC004_5878;
    let fd = fd.as_fd().as_raw_fd();
    // SAFETY: the ioctls take an int argument they ignore.
    unsafe {
        if libc::ioctl(fd, FIFREEZE as _, 0) == 0 {
            libc::ioctl(fd, FITHAW as _, 0);
        }
    }
}
