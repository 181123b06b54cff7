//! Which object a contended lock belongs to, where it is a member of one
//! the kernel's type information describes: an inode's `i_rwsem` (a
//! directory's, for creates and unlinks in it), a dentry's `d_lock`, an
//! inode's `i_lock`, or a super block's `s_inode_list_lock`.
//!
//! A lock's address alone does not say; so the BPF program (`identify` in
//! `bpf/locks.bpf.c`), the first time it sums a (lock, stack) pair, checks
//! the candidate object around the address for a member that points into
//! the object itself (an inode's `i_mapping` is `&i_data`; a short-named
//! dentry's `d_name.name` is its inline name; a super block's root
//! dentry's `d_sb` is the super block), which memory that is not such an
//! object almost never has, and then reads its inode number, mode and
//! device. Here its findings are named. Only with BPF: tracefs cannot read
//! kernel memory.

use crate::instruments::bpf::shared::{OBJECT_DENTRY as DENTRY, OBJECT_INODE as INODE, OBJECT_SUPER as SUPER};
use crate::results::LockObject;

/// What a site's value says its lock belongs to: `directory inode 1234
/// on 7:0`, with the inode's number and device.
pub fn object(ino: u64, dev: u32, mode_and_kind: u32) -> Option<LockObject> {
    let (kind, mode) = (mode_and_kind >> 16, mode_and_kind & 0xffff);
    let what = match mode & 0o170000 {
        0o040000 => "directory",
        0o100000 => "file",
        0o120000 => "symlink",
        _ => "inode",
    };
    // The kernel's dev_t: 12 bits of major above 20 of minor.
    let dev = format!("{}:{}", dev >> 20, dev & 0xf_ffff);
    let object = match kind {
        INODE if ino != 0 => format!("{what} inode {ino} on {dev}"),
        DENTRY if ino != 0 => format!("dentry of {what} inode {ino} on {dev}"),
        DENTRY => "a dentry".to_string(),
        SUPER => format!("the inode list of the super block of {dev}"),
        _ => return None,
    };
    Some(LockObject { object, ino, dev, path: None, count: 0, wait_s: 0.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_named_by_kind_mode_inode_and_device() {
        let dev = (7 << 20) | 3;
        let name = |ino, dev, mode| object(ino, dev, mode).map(|o| o.object);
        assert_eq!(name(131, dev, (1 << 16) | 0o040755).as_deref(), Some("directory inode 131 on 7:3"));
        assert_eq!(name(9, dev, (1 << 16) | 0o100644).as_deref(), Some("file inode 9 on 7:3"));
        assert_eq!(name(131, dev, (2 << 16) | 0o040755).as_deref(), Some("dentry of directory inode 131 on 7:3"));
        assert_eq!(name(0, 0, 2 << 16).as_deref(), Some("a dentry"));
        assert_eq!(name(0, dev, 3 << 16).as_deref(), Some("the inode list of the super block of 7:3"));
        assert_eq!(name(0, 0, 0), None, "not identified");
        let o = object(131, dev, (1 << 16) | 0o040755).unwrap();
        assert_eq!((o.ino, o.dev.as_str()), (131, "7:3"));
    }
}
