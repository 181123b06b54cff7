//! Which object a contended lock belongs to, where it is a field of one
//! the kernel's type information describes: an inode's `i_rwsem` (a
//! directory's, for creates and unlinks in it), a dentry's `d_lock`, an
//! inode's `i_lock`, or a super block's `s_inode_list_lock`.
//!
//! A lock's address alone does not say; so the BPF program, the first
//! time it sums a (lock, stack) pair, checks the candidate object around
//! the address for a field that points into the object itself (an
//! inode's `i_mapping` is `&i_data`; a short-named dentry's `d_name.name`
//! is its inline name; a super block's root dentry's `d_sb` is the super
//! block), which memory that is not such an object almost
//! never has, and then reads its inode number, mode and device.
//! Only with BPF: tracefs cannot read kernel memory.

use anyhow::Result;

use crate::results::LockObject;

use super::{MUTEX, PERCPU, READ, RT, SPIN, WRITE};
use crate::instruments::bpf::asm::{Asm, Cond, Helper, Size, FP, R0, R1, R2, R3, R7, R9};
use crate::instruments::bpf::btf::Btf;

/// The object kinds, in the value's top half of its mode word.
const INODE: i32 = 1;
const DENTRY: i32 = 2;
/// A super block's list of inodes (`s_inode_list_lock`): every inode made or evicted takes it.
const SUPER: i32 = 3;

/// Byte offsets of the fields read, on this kernel.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    i_rwsem: i32,
    i_lock: i32,
    i_mapping: i32,
    i_data: i32,
    i_ino: i32,
    i_mode: i32,
    i_sb: i32,
    s_dev: i32,
    s_inode_list_lock: i32,
    s_root: i32,
    d_sb: i32,
    d_lock: i32,
    d_name: i32,
    d_inline_name: i32,
    d_inode: i32,
}

impl Layout {
    /// This kernel's layout, from its BTF; an error where it has none.
    pub fn read() -> Result<Layout> {
        let btf = Btf::load()?;
        let at = |s: &str, f: &str| btf.offset(s, f).map(|o| o as i32);
        Ok(Layout {
            i_rwsem: at("inode", "i_rwsem")?,
            i_lock: at("inode", "i_lock")?,
            i_mapping: at("inode", "i_mapping")?,
            i_data: at("inode", "i_data")?,
            i_ino: at("inode", "i_ino")?,
            i_mode: at("inode", "i_mode")?,
            i_sb: at("inode", "i_sb")?,
            s_dev: at("super_block", "s_dev")?,
            s_inode_list_lock: at("super_block", "s_inode_list_lock")?,
            s_root: at("super_block", "s_root")?,
            d_sb: at("dentry", "d_sb")?,
            d_lock: at("dentry", "d_lockref")? + at("lockref", "lock")?,
            d_name: at("dentry", "d_name")? + at("qstr", "name")?,
            // Renamed in Linux 6.14.
            d_inline_name: btf.offset_of_any("dentry", &["d_shortname", "d_iname"])? as i32,
            d_inode: at("dentry", "d_inode")?,
        })
    }
}

/// `probe_read_kernel(fp + to, size, r3)` (r3 set by the caller); to `failed` on a fault.
fn read(a: &mut Asm, to: i16, size: i32, failed: &'static str) {
    a.mov(R1, FP).add_imm(R1, to.into()).mov_imm(R2, size).call(Helper::ProbeReadKernel);
    a.jump_if(Cond::Ne, R0, 0, failed);
}

/// r7 = the inode whose field at `field` the lock at `key` would be; to
/// `otherwise` unless its `i_mapping` points at its own `i_data`, as every inode's does.
fn inode_around(a: &mut Asm, layout: &Layout, key: i16, field: i32, scratch: i16, otherwise: &'static str) {
    a.load(Size::U64, R7, FP, key).add_imm(R7, -field);
    a.mov(R3, R7).add_imm(R3, layout.i_mapping);
    read(a, scratch, 8, otherwise);
    a.load(Size::U64, R1, FP, scratch).mov(R2, R7).add_imm(R2, layout.i_data).jump_if_reg(Cond::Ne, R1, R2, otherwise);
}

/// Code that fills a new site's object fields (value at `value`: inode
/// number at +24, device at +32, mode and kind at +36) from the lock at
/// `key` (+0) with flags at `key + 12`; leaves them zero when the lock is
/// no known object's. Uses r1–r3, r7, r9 and 8 bytes of stack at `scratch`.
pub(crate) fn emit(a: &mut Asm, layout: &Layout, key: i16, value: i16, scratch: i16) {
    let (ino, dev, mode) = (value + 24, value + 32, value + 36);
    a.load(Size::U32, R9, FP, key + 12);
    // A plain spinlock may be a dentry's; an rwsem (no other flag) an inode's.
    a.jump_if(Cond::Eq, R9, SPIN as i32, "dentry");
    a.and_imm(R9, (SPIN | MUTEX | PERCPU | RT) as i32).jump_if(Cond::Ne, R9, 0, "known");
    a.load(Size::U32, R9, FP, key + 12).and_imm(R9, (READ | WRITE) as i32).jump_if(Cond::Eq, R9, 0, "known");
    inode_around(a, layout, key, layout.i_rwsem, scratch, "known");
    a.store_imm(Size::U32, FP, mode, INODE << 16).jump("inode");
    a.label("dentry");
    a.load(Size::U64, R7, FP, key).add_imm(R7, -layout.d_lock);
    a.mov(R3, R7).add_imm(R3, layout.d_name);
    read(a, scratch, 8, "inode_lock");
    a.load(Size::U64, R1, FP, scratch).mov(R2, R7).add_imm(R2, layout.d_inline_name);
    a.jump_if_reg(Cond::Ne, R1, R2, "inode_lock");
    a.store_imm(Size::U32, FP, mode, DENTRY << 16);
    // The dentry's inode, if it has one, stands for it.
    a.mov(R3, R7).add_imm(R3, layout.d_inode);
    read(a, scratch, 8, "known");
    a.load(Size::U64, R7, FP, scratch).jump_if(Cond::Eq, R7, 0, "known");
    // Not a dentry's: an inode's own spinlock (i_lock)?
    a.label("inode_lock");
    inode_around(a, layout, key, layout.i_lock, scratch, "super");
    a.store_imm(Size::U32, FP, mode, INODE << 16).jump("inode");
    // Nor an inode's: a super block's inode list lock? Its root dentry points back to it.
    a.label("super");
    a.load(Size::U64, R7, FP, key).add_imm(R7, -layout.s_inode_list_lock);
    a.mov(R3, R7).add_imm(R3, layout.s_root);
    read(a, scratch, 8, "known");
    a.load(Size::U64, R3, FP, scratch).jump_if(Cond::Eq, R3, 0, "known").add_imm(R3, layout.d_sb);
    read(a, scratch, 8, "known");
    a.load(Size::U64, R1, FP, scratch).jump_if_reg(Cond::Ne, R1, R7, "known");
    a.store_imm(Size::U32, FP, mode, SUPER << 16);
    a.mov(R3, R7).add_imm(R3, layout.s_dev);
    read(a, dev, 4, "known");
    a.jump("known");
    // r7 is an inode: its number, mode (the low half of the mode word, little-endian) and device.
    a.label("inode");
    a.mov(R3, R7).add_imm(R3, layout.i_ino);
    read(a, ino, 8, "known");
    a.mov(R3, R7).add_imm(R3, layout.i_mode);
    read(a, mode, 2, "known");
    a.mov(R3, R7).add_imm(R3, layout.i_sb);
    read(a, scratch, 8, "known");
    a.load(Size::U64, R3, FP, scratch).add_imm(R3, layout.s_dev);
    read(a, dev, 4, "known");
    a.label("known");
}

/// What a site's value says its lock belongs to: `directory inode 1234
/// on 7:0`, with the inode's number and device.
pub fn object(ino: u64, dev: u32, mode_and_kind: u32) -> Option<LockObject> {
    let (kind, mode) = ((mode_and_kind >> 16) as i32, mode_and_kind & 0xffff);
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

    #[test]
    fn the_code_reads_only_through_the_checked_candidate() {
        let layout = Layout {
            i_rwsem: 160,
            i_lock: 136,
            i_mapping: 48,
            i_data: 400,
            i_ino: 64,
            i_mode: 0,
            i_sb: 40,
            s_dev: 16,
            s_inode_list_lock: 1200,
            s_root: 104,
            d_sb: 104,
            d_lock: 88,
            d_name: 40,
            d_inline_name: 56,
            d_inode: 48,
        };
        let mut a = Asm::new();
        emit(&mut a, &layout, -24, -64, -72);
        a.pass_on();
        let insns = a.finish();
        let reads = insns.iter().filter(|i| i.code == 0x85 && i.imm == Helper::ProbeReadKernel as i32).count();
        // Inode: i_mapping, then number, mode, i_sb, s_dev; dentry: d_name, d_inode; an inode's
        // spinlock: i_mapping; a super block's: s_root, its d_sb, s_dev.
        assert_eq!(reads, 11);
    }
}
