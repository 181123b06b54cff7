//! User-space addresses of this process (the workers are its forks or
//! threads, so they share its mappings) to function names, from the ELF
//! symbol tables of the mapped executable files.

use std::collections::HashMap;
use std::path::Path;

/// The executable mappings of this process and the functions of their files.
pub struct UserSymbols {
    /// (start, end, index into `files`, file offset of start).
    mappings: Vec<(u64, u64, usize, u64)>,
    files: Vec<ElfFunctions>,
}

impl UserSymbols {
    /// Reads `/proc/self/maps` and every executable file mapped.
    pub fn load() -> UserSymbols {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        let mut by_path: HashMap<String, usize> = HashMap::new();
        let mut files = Vec::new();
        let mut mappings = Vec::new();
        for line in maps.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [range, perms, offset, _, _, path, ..] = fields.as_slice() else { continue };
            if !perms.contains('x') || !path.starts_with('/') {
                continue;
            }
            let Some((start, end)) = range.split_once('-') else { continue };
            let (Ok(start), Ok(end), Ok(offset)) =
                (u64::from_str_radix(start, 16), u64::from_str_radix(end, 16), u64::from_str_radix(offset, 16))
            else {
                continue;
            };
            let index = *by_path.entry(path.to_string()).or_insert_with(|| {
                files.push(ElfFunctions::read(Path::new(path)).unwrap_or_default());
                files.len() - 1
            });
            mappings.push((start, end, index, offset));
        }
        UserSymbols { mappings, files }
    }

    /// The function at `address`, demangled, if a mapped file names it.
    pub fn function(&self, address: u64) -> Option<&str> {
        let &(start, _, file, offset) = self.mappings.iter().find(|m| m.0 <= address && address < m.1)?;
        self.files[file].at_file_offset(address - start + offset)
    }
}

/// A file's functions: (virtual address, size, name), sorted, and the
/// executable segments' (file offset, virtual address).
#[derive(Default)]
struct ElfFunctions {
    functions: Vec<(u64, u64, String)>,
    segments: Vec<(u64, u64, u64)>,
}

impl ElfFunctions {
    fn at_file_offset(&self, offset: u64) -> Option<&str> {
        let &(file_offset, vaddr, _) = self.segments.iter().find(|(o, _, size)| *o <= offset && offset < o + size)?;
        let address = offset - file_offset + vaddr;
        let at = self.functions.partition_point(|f| f.0 <= address);
        let (start, size, name) = self.functions.get(at.checked_sub(1)?)?;
        (address < start + (*size).max(1)).then_some(name.as_str())
    }

    /// Parses a 64-bit little-endian ELF file's `.symtab` (or `.dynsym`).
    fn read(path: &Path) -> Option<ElfFunctions> {
        let bytes = std::fs::read(path).ok()?;
        let b = Bytes(&bytes);
        if bytes.get(0..4)? != b"\x7fELF" || bytes[4] != 2 || bytes[5] != 1 {
            return None;
        }
        let (phoff, shoff) = (b.u64(0x20)? as usize, b.u64(0x28)? as usize);
        let (phentsize, phnum) = (b.u16(0x36)? as usize, b.u16(0x38)? as usize);
        let (shentsize, shnum) = (b.u16(0x3a)? as usize, b.u16(0x3c)? as usize);
        let mut segments = Vec::new();
        for i in 0..phnum {
            let at = phoff + i * phentsize;
            // PT_LOAD with PF_X.
            if b.u32(at)? == 1 && b.u32(at + 4)? & 1 != 0 {
                segments.push((b.u64(at + 8)?, b.u64(at + 16)?, b.u64(at + 32)?));
            }
        }
        let section = |i: usize| -> Option<(u32, u64, u64, u32, u64)> {
            let at = shoff + i * shentsize;
            Some((b.u32(at + 4)?, b.u64(at + 24)?, b.u64(at + 32)?, b.u32(at + 40)?, b.u64(at + 56)?))
        };
        // SHT_SYMTAB (2), else SHT_DYNSYM (11).
        let table = [2u32, 11].iter().find_map(|&t| (0..shnum).find(|&i| section(i).is_some_and(|s| s.0 == t)))?;
        let (_, offset, size, link, entsize) = section(table)?;
        let (_, str_offset, str_size, _, _) = section(link as usize)?;
        let strings = bytes.get(str_offset as usize..(str_offset + str_size) as usize)?;
        let mut functions = Vec::new();
        for i in 0..(size / entsize.max(1)) as usize {
            let at = offset as usize + i * entsize as usize;
            let (name, info, value, sym_size) = (b.u32(at)?, *bytes.get(at + 4)?, b.u64(at + 8)?, b.u64(at + 16)?);
            // STT_FUNC with an address.
            if info & 0xf != 2 || value == 0 {
                continue;
            }
            let raw = strings.get(name as usize..)?.split(|&c| c == 0).next()?;
            let raw = String::from_utf8_lossy(raw);
            functions.push((value, sym_size, format!("{:#}", rustc_demangle::demangle(&raw))));
        }
        functions.sort_by_key(|f| f.0);
        Some(ElfFunctions { functions, segments })
    }
}

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u16(&self, at: usize) -> Option<u16> {
        Some(u16::from_le_bytes(self.0.get(at..at + 2)?.try_into().ok()?))
    }
    fn u32(&self, at: usize) -> Option<u32> {
        Some(u32::from_le_bytes(self.0.get(at..at + 4)?.try_into().ok()?))
    }
    fn u64(&self, at: usize) -> Option<u64> {
        Some(u64::from_le_bytes(self.0.get(at..at + 8)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn a_function_to_find() -> u64 {
        std::hint::black_box(42)
    }

    #[test]
    fn this_process_names_its_own_functions() {
        let symbols = UserSymbols::load();
        let address = a_function_to_find as *const () as usize as u64;
        let name = symbols.function(address).expect("the test binary has a symbol table");
        assert!(name.contains("a_function_to_find"), "{name}");
        assert_eq!(symbols.function(8), None);
    }
}
