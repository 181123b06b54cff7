//! Where the workloads ran: filesystem type and mount details.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::sys;

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Target {
    /// The `--dir` given, made absolute.
    pub path: String,
    /// Filesystem type from `statfs` (`f_type`), by name where known.
    pub fs_type: String,
    pub fs_magic: String,
    pub block_size: u64,
    /// From `/proc/self/mountinfo`: the mount that holds `path`.
    pub mount_point: String,
    pub mount_fs_type: String,
    pub mount_source: String,
    /// Per-mount options (e.g. `rw,relatime`).
    pub mount_options: String,
    /// Superblock options (e.g. `rw,size=...` or `rw,data=ordered`).
    pub super_options: String,
    /// `major:minor` of the filesystem.
    pub device: String,
}

impl Target {
    /// Describes the filesystem holding `dir` (which must exist).
    pub fn detect(dir: &Path) -> Target {
        let path = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let mut target = Target { path: path.display().to_string(), ..Target::default() };
        if let Ok(c) = sys::cstring(&path) {
            // SAFETY: statfs is plain data filled by the kernel.
            let mut st: libc::statfs = unsafe { std::mem::zeroed() };
            // SAFETY: valid C string and buffer.
            if unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0 {
                let magic = st.f_type as u64 & 0xffff_ffff;
                target.fs_magic = format!("0x{magic:x}");
                target.fs_type = fs_name(magic).unwrap_or("unknown").to_string();
                target.block_size = st.f_bsize as u64;
            }
        }
        if let Some(mount) = find_mount(&mounts(), &target.path) {
            target.device = mount.device.clone();
            target.mount_point = mount.mount_point.clone();
            target.mount_options = mount.mount_options.clone();
            target.mount_fs_type = mount.fs_type.clone();
            target.mount_source = mount.source.clone();
            target.super_options = mount.super_options.clone();
        }
        target
    }
}

/// Names of common `statfs` magic numbers (see `linux/magic.h`).
fn fs_name(magic: u64) -> Option<&'static str> {
    Some(match magic {
        0x0102_1994 => "tmpfs",
        0xef53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683e => "btrfs",
        0xf2f5_2010 => "f2fs",
        0x6969 => "nfs",
        0x794c_7630 => "overlayfs",
        0x2fc1_2fc1 => "zfs",
        0x6573_5546 => "fuse",
        0x6a65_6a62 => "ceph",
        0xff53_4d42 => "cifs",
        0x8584_58f6 => "ramfs",
        0x5346_544e => "ntfs",
        0x4d44 => "vfat",
        0x0bd0_0bd0 => "lustre",
        0x4750_4653 => "gpfs",
        0x0bad_1dea => "wekafs",
        0x1373 => "devfs",
        0x9fa0 => "proc",
        0x6265_6572 => "sysfs",
        _ => return None,
    })
}

/// One line of `/proc/self/mountinfo`, mount point and source unescaped.
#[derive(Debug, Clone, PartialEq)]
pub struct Mount {
    /// `major:minor`.
    pub device: String,
    pub mount_point: String,
    pub mount_options: String,
    pub fs_type: String,
    pub source: String,
    pub super_options: String,
}

/// Parses mountinfo text, skipping lines it cannot read.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let left: Vec<&str> = left.split(' ').collect();
            let right: Vec<&str> = right.split(' ').collect();
            (left.len() >= 6 && right.len() >= 3).then(|| Mount {
                device: left[2].to_string(),
                mount_point: unescape(left[4]),
                mount_options: left[5].to_string(),
                fs_type: right[0].to_string(),
                source: unescape(right[1]),
                super_options: right[2].to_string(),
            })
        })
        .collect()
}

/// This process's mounts now.
pub fn mounts() -> Vec<Mount> {
    parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
}

/// The mount whose mount point is the longest prefix of `path`; later lines win
/// ties because they are mounted on top.
fn find_mount<'a>(mounts: &'a [Mount], path: &str) -> Option<&'a Mount> {
    let mut best: Option<&Mount> = None;
    for mount in mounts {
        let point = mount.mount_point.as_str();
        let inside =
            path == point || point == "/" || path.strip_prefix(point).is_some_and(|rest| rest.starts_with('/'));
        if inside && best.is_none_or(|b| point.len() >= b.mount_point.len()) {
            best = Some(mount);
        }
    }
    best
}

/// mountinfo escapes space, tab, newline and backslash as octal `\NNN`.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b)) {
            let value = (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(value);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684096k
40 27 7:0 / /mnt/with\\040space rw,noatime - xfs /dev/loop0 rw,attr2,inode64
41 27 0:50 / /dev/shm rw,nosuid - tmpfs other rw,size=1k
";

    #[test]
    fn picks_the_innermost_and_topmost_mount() {
        let mounts = parse_mountinfo(MOUNTINFO);
        let m = find_mount(&mounts, "/dev/shm/x/y").unwrap();
        assert_eq!((m.device.as_str(), m.source.as_str(), m.mount_options.as_str()), ("0:50", "other", "rw,nosuid"));
        let m = find_mount(&mounts, "/dev/shmfoo").unwrap();
        assert_eq!(m.mount_point, "/");
        let m = find_mount(&mounts, "/mnt/with space/dir").unwrap();
        assert_eq!((m.fs_type.as_str(), m.super_options.as_str()), ("xfs", "rw,attr2,inode64"));
        assert_eq!(m.mount_point, "/mnt/with space", "unescaped");
    }

    #[test]
    fn names_common_filesystems() {
        assert_eq!(fs_name(0x0102_1994), Some("tmpfs"));
        assert_eq!(fs_name(0xef53), Some("ext4"));
        assert_eq!(fs_name(0x1234), None);
    }

    #[test]
    fn detects_tmpfs() {
        let target = Target::detect(Path::new("/dev/shm"));
        assert_eq!(target.fs_type, "tmpfs");
        assert_eq!(target.mount_point, "/dev/shm");
    }
}
