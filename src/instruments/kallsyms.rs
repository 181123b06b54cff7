//! Kernel addresses to names, from `/proc/kallsyms`.

use std::sync::OnceLock;

use anyhow::{bail, Context, Result};

/// The kernel's symbols, sorted by address.
pub struct KernelSymbols {
    /// (address, name, is code) for every symbol with a real address.
    symbols: Vec<(u64, String, bool)>,
}

impl KernelSymbols {
    /// `/proc/kallsyms`, read once per process (about 120,000 lines).
    pub fn get() -> Result<&'static KernelSymbols> {
        static SYMBOLS: OnceLock<Result<KernelSymbols>> = OnceLock::new();
        SYMBOLS
            .get_or_init(|| {
                std::fs::read_to_string("/proc/kallsyms")
                    .context("reading /proc/kallsyms")
                    .and_then(|text| KernelSymbols::parse(&text))
            })
            .as_ref()
            .map_err(|e| anyhow::anyhow!("{e:#}"))
    }

    /// Parses kallsyms text: `ffffffff81000000 T _stext [module]`.
    pub fn parse(text: &str) -> Result<KernelSymbols> {
        let mut symbols = Vec::new();
        for line in text.lines() {
            let mut fields = line.split_whitespace();
            let (Some(address), Some(kind), Some(name)) = (fields.next(), fields.next(), fields.next()) else {
                continue;
            };
            let Ok(address) = u64::from_str_radix(address, 16) else { continue };
            if address == 0 {
                continue;
            }
            let code = matches!(kind, "t" | "T" | "w" | "W");
            let data = matches!(kind, "d" | "D" | "b" | "B" | "r" | "R");
            if code || data {
                symbols.push((address, name.to_string(), code));
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
        assert_eq!(symbols.function(0xffffffffc0000010), Some("ext4_lookup"));
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
    fn hidden_addresses_are_a_clear_error() {
        let hidden = "0000000000000000 T _stext\n0000000000000000 t down_write\n";
        let error = KernelSymbols::parse(hidden).err().unwrap().to_string();
        assert!(error.contains("kptr_restrict"), "{error}");
    }
}
