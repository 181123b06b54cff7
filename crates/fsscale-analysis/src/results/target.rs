//! Where the workloads ran: filesystem type and mount details.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::sys::{find_mount, mounts};

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
        if let Ok(st) = rustix::fs::statfs(&path) {
            let magic = st.f_type as u64 & 0xffff_ffff;
            target.fs_magic = format!("0x{magic:x}");
            target.fs_type = type_name(magic, None);
            // i64 on Linux, u64 on FreeBSD.
            #[allow(clippy::unnecessary_cast)]
            let block_size = st.f_bsize as u64;
            target.block_size = block_size;
        }
        if let Some(mount) = find_mount(&mounts(), &target.path) {
            target.device = mount.device.clone();
            target.mount_point = mount.mount_point.clone();
            target.mount_options = mount.mount_options.clone();
            target.mount_fs_type = mount.fs_type.clone();
            // The kernel's own name for the mount (ext2, ext3 and ext4 share one magic number).
            target.fs_type = type_name(target.fs_magic_value(), Some(&mount.fs_type));
            target.mount_source = mount.source.clone();
            target.super_options = mount.super_options.clone();
        }
        target
    }
}

impl Target {
    fn fs_magic_value(&self) -> u64 {
        u64::from_str_radix(self.fs_magic.trim_start_matches("0x"), 16).unwrap_or(0)
    }
}

/// The filesystem's type: mountinfo's, which the kernel names itself, else
/// the `statfs` magic number's name, else `unknown`.
fn type_name(magic: u64, from_mountinfo: Option<&str>) -> String {
    match from_mountinfo.filter(|t| !t.is_empty()) {
        Some(kind) => kind.to_string(),
        None => fs_name(magic).unwrap_or("unknown").to_string(),
    }
}

/// Names of common `statfs` magic numbers (see `linux/magic.h`), where
/// mountinfo has no entry; one number serves ext2, ext3 and ext4.
fn fs_name(magic: u64) -> Option<&'static str> {
    Some(match magic {
        0x0102_1994 => "tmpfs",
        0xef53 => "ext2/3/4",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_common_filesystems() {
        assert_eq!(fs_name(0x0102_1994), Some("tmpfs"));
        assert_eq!(fs_name(0xef53), Some("ext2/3/4"));
        // mountinfo's name wins: an ext3 mount is ext3, not the magic number's guess.
        assert_eq!(type_name(0xef53, Some("ext3")), "ext3");
        assert_eq!(type_name(0xef53, None), "ext2/3/4");
        assert_eq!(type_name(0x1234, Some("")), "unknown");
        assert_eq!(fs_name(0x1234), None);
    }

    #[test]
    fn detects_tmpfs() {
        let target = Target::detect(Path::new("/dev/shm"));
        assert_eq!(target.fs_type, "tmpfs");
        assert_eq!(target.mount_point, "/dev/shm");
    }
}
