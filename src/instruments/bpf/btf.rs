//! Field offsets of kernel structures from the kernel's own type
//! information (BTF, `/sys/kernel/btf/vmlinux`; Documentation/bpf/btf.rst),
//! so that a program can tell what object a lock belongs to on this
//! kernel's layout, not on one compiled in.

use std::collections::HashMap;

use anyhow::{anyhow, bail, Context, Result};

pub const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

const MAGIC: u16 = 0xeb9f;
const STRUCT: u32 = 4;
const UNION: u32 = 5;
const TYPEDEF: u32 = 8;
const VOLATILE: u32 = 9;
const CONST: u32 = 10;
const RESTRICT: u32 = 11;
const TYPE_TAG: u32 = 18;

/// One type: its kind, name, and (for structs and unions) its members.
struct Type {
    kind: u32,
    name: u32,
    /// A typedef's or qualifier's target.
    target: u32,
    /// (name, type, offset in bytes) of a struct's or union's members.
    members: Vec<(u32, u32, u32)>,
}

/// The parsed type section: enough to find members of named structs.
pub struct Btf {
    types: Vec<Type>,
    strings: Vec<u8>,
    structs: HashMap<String, u32>,
}

fn u32_at(data: &[u8], at: usize) -> Result<u32> {
    data.get(at..at + 4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
        .ok_or_else(|| anyhow!("BTF ends early, at byte {at}"))
}

impl Btf {
    pub fn load() -> Result<Btf> {
        let data = std::fs::read(VMLINUX)
            .with_context(|| format!("reading {VMLINUX} (a kernel with CONFIG_DEBUG_INFO_BTF)"))?;
        Btf::parse(&data)
    }

    /// Parses a little-endian BTF blob (this machine's byte order: x86-64, arm64).
    pub fn parse(data: &[u8]) -> Result<Btf> {
        if data.len() < 24 || u16::from_le_bytes([data[0], data[1]]) != MAGIC {
            bail!("not BTF (or not in this machine's byte order)");
        }
        let header = u32_at(data, 4)? as usize;
        let (type_off, type_len) = (u32_at(data, 8)? as usize, u32_at(data, 12)? as usize);
        let (str_off, str_len) = (u32_at(data, 16)? as usize, u32_at(data, 20)? as usize);
        let types_at = header + type_off;
        let strings = data
            .get(header + str_off..header + str_off + str_len)
            .ok_or_else(|| anyhow!("BTF's strings lie past its end"))?
            .to_vec();
        // Type 0 is void.
        let mut types = vec![Type { kind: 0, name: 0, target: 0, members: Vec::new() }];
        let mut at = types_at;
        while at < types_at + type_len {
            let name = u32_at(data, at)?;
            let info = u32_at(data, at + 4)?;
            let size_or_type = u32_at(data, at + 8)?;
            let (kind, vlen, bitfields) = ((info >> 24) & 0x1f, (info & 0xffff) as usize, info >> 31 == 1);
            at += 12;
            let mut members = Vec::new();
            at += match kind {
                1 | 14 | 17 => 4,
                3 => 12,
                STRUCT | UNION => {
                    for i in 0..vlen {
                        let m = at + 12 * i;
                        let offset = u32_at(data, m + 8)?;
                        let bits = if bitfields { offset & 0xff_ffff } else { offset };
                        members.push((u32_at(data, m)?, u32_at(data, m + 4)?, bits / 8));
                    }
                    12 * vlen
                }
                6 | 13 => 8 * vlen,
                15 | 19 => 12 * vlen,
                2 | 7 | 8 | 9 | 10 | 11 | 12 | 16 | 18 => 0,
                other => bail!("BTF type {} has an unknown kind {other}", types.len()),
            };
            types.push(Type { kind, name, target: size_or_type, members });
        }
        let mut btf = Btf { types, strings, structs: HashMap::new() };
        for (id, t) in btf.types.iter().enumerate() {
            if t.kind == STRUCT && t.name != 0 {
                let name = btf.name(t.name).to_string();
                btf.structs.entry(name).or_insert(id as u32);
            }
        }
        Ok(btf)
    }

    fn name(&self, offset: u32) -> &str {
        let tail = self.strings.get(offset as usize..).unwrap_or_default();
        std::str::from_utf8(&tail[..tail.iter().position(|&b| b == 0).unwrap_or(tail.len())]).unwrap_or("")
    }

    /// A type without its typedefs and qualifiers.
    fn resolve(&self, mut id: u32) -> Option<&Type> {
        for _ in 0..32 {
            let t = self.types.get(id as usize)?;
            match t.kind {
                TYPEDEF | VOLATILE | CONST | RESTRICT | TYPE_TAG => id = t.target,
                _ => return Some(t),
            }
        }
        None
    }

    /// The byte offset of `path` (`"d_name.name"`) in struct `strukt`,
    /// looking through anonymous structs and unions as C does.
    pub fn offset(&self, strukt: &str, path: &str) -> Result<u32> {
        let id = *self.structs.get(strukt).ok_or_else(|| anyhow!("this kernel's BTF has no struct {strukt}"))?;
        let mut t = &self.types[id as usize];
        let mut total = 0;
        for field in path.split('.') {
            let (offset, member) =
                self.find(t, field).ok_or_else(|| anyhow!("this kernel's struct {strukt} has no {path}"))?;
            total += offset;
            t = self.resolve(member).ok_or_else(|| anyhow!("struct {strukt}'s {path} has no type"))?;
        }
        Ok(total)
    }

    /// The first of `paths` struct `strukt` has (fields renamed across kernels).
    pub(crate) fn offset_of_any(&self, strukt: &str, paths: &[&str]) -> Result<u32> {
        paths
            .iter()
            .find_map(|p| self.offset(strukt, p).ok())
            .ok_or_else(|| anyhow!("this kernel's struct {strukt} has none of {}", paths.join(", ")))
    }

    /// Member `field` of struct or union `t`: its offset and type.
    fn find(&self, t: &Type, field: &str) -> Option<(u32, u32)> {
        for &(name, ty, offset) in &t.members {
            if name != 0 {
                if self.name(name) == field {
                    return Some((offset, ty));
                }
            } else if let Some(inner) = self.resolve(ty).filter(|i| i.kind == STRUCT || i.kind == UNION) {
                if let Some((o, found)) = self.find(inner, field) {
                    return Some((offset + o, found));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BTF blob of `struct inner { int a; int b; }` and
    /// `struct outer { int x; union { struct inner in; long y; }; const struct inner *p; }`.
    fn blob() -> Vec<u8> {
        let strings = b"\0int\0inner\0a\0b\0outer\0x\0in\0y\0long\0p\0".to_vec();
        let at = |s: &str| {
            strings.windows(s.len() + 1).position(|w| &w[..s.len()] == s.as_bytes() && w[s.len()] == 0).unwrap() as u32
        };
        let mut types: Vec<u8> = Vec::new();
        let mut push = |words: &[u32]| words.iter().for_each(|w| types.extend_from_slice(&w.to_le_bytes()));
        // 1: int (INT, 4 bytes, encoding word).
        push(&[at("int"), 1 << 24, 4, 32]);
        // 2: struct inner { a at 0, b at 32 bits }.
        push(&[at("inner"), (STRUCT << 24) | 2, 8, at("a"), 1, 0, at("b"), 1, 32]);
        // 3: long.
        push(&[at("long"), 1 << 24, 8, 64]);
        // 4: anonymous union { struct inner in; long y; }.
        push(&[0, (UNION << 24) | 2, 8, at("in"), 2, 0, at("y"), 3, 0]);
        // 5: const struct inner; 6: pointer to it.
        push(&[0, CONST << 24, 2]);
        push(&[0, 2 << 24, 5]);
        // 7: struct outer { x at 0, the union at 64 bits, p at 128 }.
        push(&[at("outer"), (STRUCT << 24) | 3, 24, at("x"), 1, 0, 0, 4, 64, at("p"), 6, 128]);
        let mut blob = Vec::new();
        blob.extend_from_slice(&MAGIC.to_le_bytes());
        blob.extend_from_slice(&[1, 0]);
        for w in [24u32, 0, types.len() as u32, types.len() as u32, strings.len() as u32] {
            blob.extend_from_slice(&w.to_le_bytes());
        }
        blob.extend_from_slice(&types);
        blob.extend_from_slice(&strings);
        blob
    }

    #[test]
    fn members_are_found_through_anonymous_unions_and_nested_structs() {
        let btf = Btf::parse(&blob()).unwrap();
        assert_eq!(btf.offset("outer", "x").unwrap(), 0);
        assert_eq!(btf.offset("outer", "y").unwrap(), 8);
        assert_eq!(btf.offset("outer", "in.b").unwrap(), 12);
        assert_eq!(btf.offset("outer", "p").unwrap(), 16);
        assert_eq!(btf.offset_of_any("outer", &["z", "in.a"]).unwrap(), 8);
        assert!(btf.offset("outer", "z").unwrap_err().to_string().contains("has no z"));
        assert!(btf.offset("nothing", "x").is_err());
        assert!(Btf::parse(b"not btf at all, not at all").is_err());
    }

    #[test]
    fn this_kernels_inode_and_dentry_are_found() {
        // The kernel's own BTF where there is one (a kernel without it has no BPF profiles either).
        let btf = match Btf::load() {
            Ok(btf) => btf,
            Err(e) => {
                assert!(std::env::var_os("CI").is_none(), "CI's kernel has BTF: {e:#}");
                eprintln!("SKIPPED this_kernels_inode_and_dentry_are_found: {e:#}");
                return;
            }
        };
        let rwsem = btf.offset("inode", "i_rwsem").unwrap();
        let ino = btf.offset("inode", "i_ino").unwrap();
        assert!(rwsem > 0 && ino > 0 && rwsem != ino);
        assert_eq!(btf.offset("lockref", "lock").unwrap(), 0);
        assert_eq!(btf.offset("qstr", "name").unwrap(), 8);
        btf.offset("dentry", "d_name.name").unwrap();
    }
}
