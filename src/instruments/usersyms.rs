//! User-space addresses to function names, process by process: each
//! process's executable mappings (its `/proc/PID/maps` while it lives, and
//! the kernel's mmap records of what it maps during the window), and the
//! symbol tables of the ELF files mapped, read with the `object` crate. A
//! command's processes (`command`, `--extract-cmd`) are named from their
//! own files, not from fsscale's.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use object::{Object, ObjectSegment, ObjectSymbol, SegmentFlags, SymbolKind};

/// One executable mapping: `[start, end)` of a process's addresses, mapped
/// from `path` at file offset `offset`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mapping {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub path: String,
}

/// The executable mappings of the processes a profile saw.
#[derive(Default)]
pub(crate) struct ProcessMaps {
    by_pid: HashMap<i32, Vec<Mapping>>,
    /// Processes whose `/proc/PID/maps` was read (or tried).
    read: HashSet<i32>,
}

impl ProcessMaps {
    /// Reads `/proc/PID/maps` of `pid` once, while it lives (a process
    /// gone by then keeps what its mmap records said).
    pub fn snapshot(&mut self, pid: i32) {
        if pid <= 0 || !self.read.insert(pid) {
            return;
        }
        if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/maps")) {
            self.by_pid.entry(pid).or_default().extend(parse_maps(&text));
        }
    }

    /// A mapping the kernel reported as it was made.
    pub fn record(&mut self, pid: i32, mapping: Mapping) {
        self.by_pid.entry(pid).or_default().push(mapping);
    }

    /// The mapping of `pid` holding `address`: the latest made, where an
    /// `exec` reused the addresses.
    fn find(&self, pid: i32, address: u64) -> Option<&Mapping> {
        self.by_pid.get(&pid)?.iter().rev().find(|m| m.start <= address && address < m.end)
    }
}

/// The executable mappings in `/proc/PID/maps` text: `start-end perms offset dev inode path`.
pub(crate) fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.splitn(6, ' ').collect();
            let [range, perms, offset, _, _, path] = fields.as_slice() else { return None };
            let path = path.trim_start();
            if !perms.contains('x') || !path.starts_with('/') {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            Some(Mapping {
                start: u64::from_str_radix(start, 16).ok()?,
                end: u64::from_str_radix(end, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
                path: path.to_string(),
            })
        })
        .collect()
}

/// Every mapped file's functions, for the processes of `maps`.
pub(crate) struct UserSymbols {
    maps: ProcessMaps,
    files: HashMap<String, Arc<ElfFunctions>>,
}

impl UserSymbols {
    /// Reads the symbol tables of every file `maps` maps (each once, and
    /// once per process while the file is unchanged: every run of a
    /// profiled point maps the same binary and libraries).
    pub fn of(maps: ProcessMaps) -> UserSymbols {
        let mut files = HashMap::new();
        for mapping in maps.by_pid.values().flatten() {
            if !files.contains_key(&mapping.path) {
                files.insert(mapping.path.clone(), ElfFunctions::cached(Path::new(&mapping.path)));
            }
        }
        UserSymbols { maps, files }
    }

    /// This process's own (its threads are the workers of thread mode).
    #[cfg(test)]
    pub(crate) fn of_this_process() -> UserSymbols {
        let mut maps = ProcessMaps::default();
        maps.snapshot(std::process::id() as i32);
        UserSymbols::of(maps)
    }

    /// The function at `address` of process `pid`, demangled, if a file it maps names it.
    pub fn function(&self, pid: i32, address: u64) -> Option<String> {
        let mapping = self.maps.find(pid, address)?;
        let mangled = self.files.get(&mapping.path)?.at_file_offset(address - mapping.start + mapping.offset)?;
        Some(format!("{:#}", rustc_demangle::demangle(mangled)))
    }
}

/// A file's functions: (virtual address, size, name as the symbol table
/// has it), sorted, and its executable segments' (file offset, virtual
/// address, size). Names are demangled when looked up: a debug build's
/// table has a hundred thousand, and a profile names a few hundred (all of
/// them demangled took two thirds of a profiled test run's CPU).
#[derive(Default)]
struct ElfFunctions {
    functions: Vec<(u64, u64, Box<str>)>,
    segments: Vec<(u64, u64, u64)>,
}

impl ElfFunctions {
    fn at_file_offset(&self, offset: u64) -> Option<&str> {
        let &(file_offset, vaddr, _) = self.segments.iter().find(|(o, _, size)| *o <= offset && offset < o + size)?;
        let address = offset - file_offset + vaddr;
        let at = self.functions.partition_point(|f| f.0 <= address);
        let (start, size, name) = self.functions.get(at.checked_sub(1)?)?;
        (address < start + (*size).max(1)).then_some(&**name)
    }

    /// [`ElfFunctions::read`], kept for the process's life under the file's
    /// identity (device, inode, size, modification time): a file replaced
    /// or rebuilt in place is read again.
    fn cached(path: &Path) -> Arc<ElfFunctions> {
        type Identity = (u64, u64, u64, i64, i64);
        // One entry per path, its latest identity's.
        static READ: Mutex<BTreeMap<PathBuf, (Identity, Arc<ElfFunctions>)>> = Mutex::new(BTreeMap::new());
        let identity = std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()));
        let Some(identity) = identity else { return Arc::default() };
        if let Some((seen, functions)) = READ.lock().unwrap_or_else(|e| e.into_inner()).get(path) {
            if *seen == identity {
                return Arc::clone(functions);
            }
        }
        let functions = Arc::new(ElfFunctions::read(path).unwrap_or_default());
        READ.lock().unwrap_or_else(|e| e.into_inner()).insert(path.to_path_buf(), (identity, Arc::clone(&functions)));
        functions
    }

    /// The functions of an ELF file's symbol table (or, stripped, its dynamic one).
    fn read(path: &Path) -> Option<ElfFunctions> {
        let bytes = std::fs::read(path).ok()?;
        let file = object::File::parse(bytes.as_slice()).ok()?;
        let segments = file
            .segments()
            .filter(|s| matches!(s.flags(), SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0))
            .map(|s| {
                let (offset, size) = s.file_range();
                (offset, s.address(), size)
            })
            .collect();
        fn text<'data>(symbol: object::Symbol<'data, '_>) -> Option<(u64, u64, &'data str)> {
            let function = symbol.kind() == SymbolKind::Text && symbol.address() != 0;
            function.then(|| Some((symbol.address(), symbol.size(), symbol.name().ok()?))).flatten()
        }
        let mut raw: Vec<(u64, u64, &str)> = file.symbols().filter_map(text).collect();
        if raw.is_empty() {
            raw = file.dynamic_symbols().filter_map(text).collect();
        }
        let mut functions: Vec<(u64, u64, Box<str>)> =
            raw.into_iter().map(|(address, size, name)| (address, size, name.into())).collect();
        functions.sort_by_key(|f| f.0);
        Some(ElfFunctions { functions, segments })
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
        let symbols = UserSymbols::of_this_process();
        let pid = std::process::id() as i32;
        let address = a_function_to_find as *const () as usize as u64;
        let name = symbols.function(pid, address).expect("the test binary has a symbol table");
        assert!(name.contains("a_function_to_find"), "{name}");
        assert_eq!(symbols.function(pid, 8), None);
        // Another process's addresses are not looked up in this one's files.
        assert_eq!(symbols.function(pid + 1_000_000, address), None);
    }

    #[test]
    fn a_files_functions_are_read_once_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("true");
        std::fs::copy("/proc/self/exe", &copy).unwrap();
        let first = ElfFunctions::cached(&copy);
        assert!(!first.functions.is_empty());
        assert!(Arc::ptr_eq(&first, &ElfFunctions::cached(&copy)), "read again though unchanged");
        // Rebuilt in place (another size): read anew.
        std::fs::write(&copy, b"not an ELF file").unwrap();
        let rebuilt = ElfFunctions::cached(&copy);
        assert!(!Arc::ptr_eq(&first, &rebuilt) && rebuilt.functions.is_empty());
        assert!(ElfFunctions::cached(&dir.path().join("gone")).functions.is_empty());
    }

    #[test]
    fn maps_lines_give_the_executable_file_mappings() {
        let text = "55d0c0a00000-55d0c0a10000 r--p 00000000 08:01 131 /usr/bin/spin\n\
                    55d0c0a10000-55d0c0a20000 r-xp 00010000 08:01 131 /usr/bin/spin\n\
                    7f0000000000-7f0000001000 r-xp 00000000 00:00 0 \n\
                    7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0                          [vdso]\n\
                    7f1000000000-7f1000100000 r-xp 00028000 08:01 77 /usr/lib/with space.so\n";
        let maps = parse_maps(text);
        let spin =
            Mapping { start: 0x55d0c0a10000, end: 0x55d0c0a20000, offset: 0x10000, path: "/usr/bin/spin".into() };
        assert_eq!(maps[0], spin);
        assert_eq!(maps.len(), 2, "{maps:?}");
        assert_eq!(maps[1].path, "/usr/lib/with space.so");
        // The latest mapping of an address wins (an exec reused it).
        let mut all = ProcessMaps::default();
        all.record(7, spin.clone());
        all.record(7, Mapping { path: "/usr/bin/other".into(), ..spin });
        assert_eq!(all.find(7, 0x55d0c0a10010).unwrap().path, "/usr/bin/other");
        assert!(all.find(8, 0x55d0c0a10010).is_none());
    }
}
