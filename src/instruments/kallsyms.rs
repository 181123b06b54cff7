//! Kernel addresses to names, from `/proc/kallsyms`.

use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};

/// The kernel's symbols, sorted by address.
pub(crate) struct KernelSymbols {
    /// (address, name, is code) for every symbol with a real address; a
    /// module's are named with it, as perf does: `xfs_file_release [xfs]`.
    symbols: Vec<(u64, String, bool)>,
}

/// The symbols in `cache` if the modules are as they were when it was
/// filled, else read afresh (`read` reads a `/proc` file).
fn current(
    cache: &Mutex<Option<(String, Arc<KernelSymbols>)>>,
    read: impl Fn(&str) -> std::io::Result<String>,
) -> Result<Arc<KernelSymbols>> {
    // A kernel without modules has no /proc/modules: nothing changes.
    let modules = read("/proc/modules").unwrap_or_default();
    let mut cache = cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((seen, symbols)) = cache.as_ref() {
        if *seen == modules {
            return Ok(Arc::clone(symbols));
        }
    }
    let text = read("/proc/kallsyms").context("reading /proc/kallsyms")?;
    let symbols = Arc::new(KernelSymbols::parse(&text)?);
    *cache = Some((modules, Arc::clone(&symbols)));
    Ok(symbols)
}

impl KernelSymbols {
    /// The kernel's symbols as they are now: `/proc/kallsyms` (about
    /// 120,000 lines) is read again only when the loaded modules changed
    /// since the last read. A filesystem module loaded by a `--fs` mount
    /// (xfs, btrfs on a distribution kernel) is named from then on.
    pub fn now() -> Result<Arc<KernelSymbols>> {
        static CACHE: Mutex<Option<(String, Arc<KernelSymbols>)>> = Mutex::new(None);
        current(&CACHE, |path| std::fs::read_to_string(path))
    }

    /// Parses kallsyms text: `ffffffff81000000 T _stext [module]`.
    pub fn parse(text: &str) -> Result<KernelSymbols> {
        let mut symbols = Vec::new();
        for line in text.lines() {
            let mut fields = line.split_whitespace();
            let (Some(address), Some(kind), Some(name)) = (fields.next(), fields.next(), fields.next()) else {
                continue;
            };
            let module = fields.next().filter(|m| m.starts_with('[') && m.ends_with(']'));
            let Ok(address) = u64::from_str_radix(address, 16) else { continue };
            if address == 0 {
                continue;
            }
            let code = matches!(kind, "t" | "T" | "w" | "W");
            let data = matches!(kind, "d" | "D" | "b" | "B" | "r" | "R");
            if code || data {
                let name = match module {
                    Some(module) => format!("{name} {module}"),
                    None => name.to_string(),
                };
                symbols.push((address, name, code));
            }
        }
        if symbols.is_empty() {
            bail!(
                "/proc/kallsyms shows no kernel addresses (kernel.kptr_restrict hides them from this user); \
                 run as root, or set kernel.kptr_restrict=0"
            );
        }
        symbols.sort_by_key(|s| s.0);
        Ok(KernelSymbols { symbols })
    }

    fn nearest(&self, address: u64) -> Option<&(u64, String, bool)> {
        let at = self.symbols.partition_point(|s| s.0 <= address);
        at.checked_sub(1).map(|i| &self.symbols[i])
    }

    /// The function that holds `address`, or `None` outside the kernel's code.
    pub fn function(&self, address: u64) -> Option<&str> {
        // Beyond the last symbol's reach (64 KiB past it) is not the kernel's code.
        self.nearest(address).filter(|s| s.2 && address - s.0 < 1 << 16).map(|s| s.1.as_str())
    }

    /// A static kernel variable holding `address` (a lock defined with
    /// `DEFINE_SPINLOCK` and the like), as `name` or `name+0x10`; `None` for
    /// a lock in allocated memory, or where kallsyms lists no data (a kernel
    /// without `CONFIG_KALLSYMS_ALL`).
    pub(crate) fn variable(&self, address: u64) -> Option<String> {
        let (start, name, code) = self.nearest(address)?;
        let offset = address - start;
        // A lock sits inside its variable, within a few KiB of its start.
        if *code || offset >= 4096 {
            return None;
        }
        Some(if offset == 0 { name.clone() } else { format!("{name}+{offset:#x}") })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
0000000000000000 A fixed_percpu_data
ffffffff81000000 T _stext
ffffffff81000100 t down_write
ffffffff81000200 T filename_create
ffffffff82000000 D rename_lock
ffffffff82000040 d other_data
ffffffffc0000000 t ext4_lookup\t[ext4]
";

    #[test]
    fn functions_are_found_by_any_address_inside_them() {
        let symbols = KernelSymbols::parse(TEXT).unwrap();
        assert_eq!(symbols.function(0xffffffff81000100), Some("down_write"));
        assert_eq!(symbols.function(0xffffffff810001ff), Some("down_write"));
        assert_eq!(symbols.function(0xffffffff81000210), Some("filename_create"));
        assert_eq!(symbols.function(0xffffffffc0000010), Some("ext4_lookup [ext4]"));
        assert_eq!(symbols.function(0x1000), None);
        // A data address is no function.
        assert_eq!(symbols.function(0xffffffff82000008), None);
    }

    #[test]
    fn static_locks_are_named_and_allocated_ones_are_not() {
        let symbols = KernelSymbols::parse(TEXT).unwrap();
        assert_eq!(symbols.variable(0xffffffff82000000).as_deref(), Some("rename_lock"));
        assert_eq!(symbols.variable(0xffffffff82000004).as_deref(), Some("rename_lock+0x4"));
        assert_eq!(symbols.variable(0xffff888100000000), None);
        assert_eq!(symbols.variable(0xffffffff81000100), None);
    }

    #[test]
    fn a_module_loaded_between_reads_is_named_at_the_second() {
        use std::cell::RefCell;
        // A simulated kernel: xfs is loaded (by a --fs mount) after the first read.
        let before = ("", "ffffffff81000000 T _stext\nffffffff81000100 t down_write\n");
        let after = (
            "xfs 2932736 1 - Live 0xffffffffc0a00000\n",
            "ffffffff81000000 T _stext\nffffffff81000100 t down_write\n\
             ffffffffc0a10000 t xfs_file_release\t[xfs]\nffffffffc0a10200 t xfs_ilock\t[xfs]\n",
        );
        let kernel = RefCell::new(before);
        let reads = RefCell::new(0);
        let read = |path: &str| {
            let (modules, kallsyms) = *kernel.borrow();
            if path == "/proc/kallsyms" {
                *reads.borrow_mut() += 1;
                return Ok(kallsyms.to_string());
            }
            Ok(modules.to_string())
        };
        let cache = Mutex::new(None);
        let address = 0xffffffffc0a10010;
        let first = current(&cache, read).unwrap();
        assert_eq!(first.function(address), None, "not loaded yet: no name, and no wrong neighbour's");
        // Unchanged modules: the same table, not read again.
        let again = current(&cache, read).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(*reads.borrow(), 1);
        *kernel.borrow_mut() = after;
        let second = current(&cache, read).unwrap();
        assert_eq!(*reads.borrow(), 2);
        assert_eq!(second.function(address), Some("xfs_file_release [xfs]"));
        assert_eq!(second.function(0xffffffffc0a10210), Some("xfs_ilock [xfs]"));
        assert_eq!(second.function(0xffffffff81000110), Some("down_write"));
    }

    #[test]
    fn hidden_addresses_are_a_clear_error() {
        let hidden = "0000000000000000 T _stext\n0000000000000000 t down_write\n";
        let error = KernelSymbols::parse(hidden).err().unwrap().to_string();
        assert!(error.contains("kptr_restrict"), "{error}");
    }
}
