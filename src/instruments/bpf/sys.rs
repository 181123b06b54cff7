//! The `bpf(2)` calls fsscale makes: maps, program loading, and attaching
//! a program to a tracepoint through a perf event. Every object is a file
//! descriptor, so the kernel frees it when the process ends, however it ends.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use anyhow::{anyhow, Result};

use super::asm::{encode, Insn};
use crate::instruments::perf::{attr, PerfEvent};

const MAP_CREATE: i32 = 0;
const MAP_LOOKUP_ELEM: i32 = 1;
const MAP_UPDATE_ELEM: i32 = 2;
const MAP_GET_NEXT_KEY: i32 = 4;
const PROG_LOAD: i32 = 5;
const OBJ_GET_INFO_BY_FD: i32 = 15;
const ENABLE_STATS: i32 = 32;

const PROG_TYPE_TRACEPOINT: u32 = 5;
/// The programs call GPL-only helpers (`bpf_get_stackid`,
/// `bpf_probe_read_kernel`); a dual licence is one the kernel accepts as
/// compatible, and fsscale's own (MIT or Apache-2.0) still holds for the rest.
const LICENSE: &std::ffi::CStr = c"Dual MIT/GPL";

/// Map kinds fsscale uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapKind {
    Hash = 1,
    Array = 2,
    StackTrace = 7,
}

#[repr(C)]
#[derive(Default)]
struct MapCreate {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

#[repr(C)]
#[derive(Default)]
struct Element {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

#[repr(C)]
#[derive(Default)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
}

#[repr(C)]
#[derive(Default)]
struct InfoByFd {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

/// `struct bpf_prog_info` up to its run statistics (include/uapi/linux/bpf.h).
const PROG_INFO_LEN: usize = 216;
const PROG_INFO_NAME: usize = 64;
const PROG_INFO_RUN_TIME_NS: usize = 192;
const PROG_INFO_RUN_CNT: usize = 200;

/// The kernel counts every program's runs and their time while this is
/// held (`BPF_ENABLE_STATS`; no sysctl is changed, and closing it stops).
pub struct RunStats {
    _fd: OwnedFd,
}

impl RunStats {
    pub fn enable() -> Result<RunStats> {
        let mut attr = 0u32; // BPF_STATS_RUN_TIME
        let fd = bpf(ENABLE_STATS, &mut attr).map_err(|e| anyhow!("counting BPF programs' run time: {e}"))?;
        // SAFETY: a new descriptor this process owns.
        Ok(RunStats { _fd: unsafe { OwnedFd::from_raw_fd(fd as i32) } })
    }
}

fn bpf<T>(command: i32, attr: &mut T) -> std::io::Result<i64> {
    // SAFETY: attr is a repr(C) prefix of union bpf_attr of the size passed;
    // the kernel zero-fills the rest.
    let ret = unsafe { libc::syscall(libc::SYS_bpf, command, attr as *mut T, std::mem::size_of::<T>() as u32) };
    if ret < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn name16(name: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (o, b) in out.iter_mut().zip(name.bytes().take(15)) {
        *o = b;
    }
    out
}

/// A BPF map: its descriptor and shape.
pub struct Map {
    fd: OwnedFd,
    pub key_size: usize,
    pub value_size: usize,
    name: &'static str,
}

impl Map {
    pub fn create(kind: MapKind, name: &'static str, key_size: usize, value_size: usize, entries: u32) -> Result<Map> {
        let mut attr = MapCreate {
            map_type: kind as u32,
            key_size: key_size as u32,
            value_size: value_size as u32,
            max_entries: entries,
            map_name: name16(name),
            ..MapCreate::default()
        };
        let fd = bpf(MAP_CREATE, &mut attr).map_err(|e| anyhow!("creating the BPF map {name}: {e}{}", hint(&e)))?;
        // SAFETY: a new descriptor this process owns.
        Ok(Map { fd: unsafe { OwnedFd::from_raw_fd(fd as i32) }, key_size, value_size, name })
    }

    /// The descriptor, as programs refer to the map.
    pub fn fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    fn element(&self, key: &[u8], value: *mut u8, flags: u64) -> Element {
        assert_eq!(key.len(), self.key_size, "key of the BPF map {}", self.name);
        Element { map_fd: self.fd() as u32, _pad: 0, key: key.as_ptr() as u64, value: value as u64, flags }
    }

    /// The value at `key`, if there is one.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut value = vec![0u8; self.value_size];
        let mut attr = self.element(key, value.as_mut_ptr(), 0);
        match bpf(MAP_LOOKUP_ELEM, &mut attr) {
            Ok(_) => Ok(Some(value)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(anyhow!("reading the BPF map {}: {e}", self.name)),
        }
    }

    pub fn set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        assert_eq!(value.len(), self.value_size, "value of the BPF map {}", self.name);
        let mut attr = self.element(key, value.as_ptr().cast_mut(), 0);
        bpf(MAP_UPDATE_ELEM, &mut attr).map_err(|e| anyhow!("writing the BPF map {}: {e}", self.name))?;
        Ok(())
    }

    /// Every key, then every value (a hash map's entries, in its order).
    pub fn entries(&self) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut next = vec![0u8; self.key_size];
        loop {
            let previous = keys.last().cloned();
            let mut attr = Element {
                map_fd: self.fd() as u32,
                _pad: 0,
                // No key asks for the first.
                key: previous.as_ref().map_or(0, |k| k.as_ptr() as u64),
                value: next.as_mut_ptr() as u64,
                flags: 0,
            };
            match bpf(MAP_GET_NEXT_KEY, &mut attr) {
                Ok(_) => keys.push(next.clone()),
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => break,
                Err(e) => return Err(anyhow!("listing the BPF map {}: {e}", self.name)),
            }
        }
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            // An entry deleted meanwhile (a task's pending wait) is skipped.
            if let Some(value) = self.get(&key)? {
                out.push((key, value));
            }
        }
        Ok(out)
    }
}

/// A loaded program.
pub struct Program {
    fd: OwnedFd,
}

impl Program {
    /// Loads a tracepoint program; a refusal carries the verifier's last words.
    pub fn load(name: &str, insns: &[Insn]) -> Result<Program> {
        let code = encode(insns);
        let mut attr = ProgLoad {
            prog_type: PROG_TYPE_TRACEPOINT,
            insn_cnt: code.len() as u32,
            insns: code.as_ptr() as u64,
            license: LICENSE.as_ptr() as u64,
            prog_name: name16(name),
            ..ProgLoad::default()
        };
        match bpf(PROG_LOAD, &mut attr) {
            // SAFETY: a new descriptor this process owns.
            Ok(fd) => Ok(Program { fd: unsafe { OwnedFd::from_raw_fd(fd as i32) } }),
            Err(e) => {
                // Again with the verifier's log, which says which instruction it refused.
                let mut log = vec![0u8; 1 << 20];
                attr.log_level = 1;
                attr.log_size = log.len() as u32;
                attr.log_buf = log.as_mut_ptr() as u64;
                let _ = bpf(PROG_LOAD, &mut attr);
                let text = String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned();
                let last: Vec<&str> = text.lines().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect();
                Err(anyhow!(
                    "the kernel refused the BPF program {name}: {e}{}; verifier: {}",
                    hint(&e),
                    last.join(" | ")
                ))
            }
        }
    }

    /// `struct bpf_prog_info` as the kernel fills it for this program.
    fn info(&self) -> Result<Vec<u8>> {
        let mut info = vec![0u8; PROG_INFO_LEN];
        let mut attr = InfoByFd {
            bpf_fd: self.fd.as_raw_fd() as u32,
            info_len: PROG_INFO_LEN as u32,
            info: info.as_mut_ptr() as u64,
        };
        bpf(OBJ_GET_INFO_BY_FD, &mut attr).map_err(|e| anyhow!("reading a BPF program's information: {e}"))?;
        Ok(info)
    }

    /// How often it ran and for how long in all (ns), counted while a [`RunStats`] is held.
    pub fn runs(&self) -> Result<(u64, u64)> {
        let info = self.info()?;
        let at = |o: usize| u64::from_ne_bytes(info[o..o + 8].try_into().expect("8 bytes"));
        Ok((at(PROG_INFO_RUN_CNT), at(PROG_INFO_RUN_TIME_NS)))
    }

    /// Its name as the kernel keeps it (a check of the layout [`Program::runs`] reads).
    pub fn name(&self) -> Result<String> {
        let info = self.info()?;
        let name = &info[PROG_INFO_NAME..PROG_INFO_NAME + 16];
        Ok(String::from_utf8_lossy(&name[..name.iter().position(|&b| b == 0).unwrap_or(16)]).into_owned())
    }

    /// Runs it at every hit of tracepoint `id` (on every CPU), until the returned event is dropped.
    pub(crate) fn attach(&self, tracepoint_id: u16, what: &str) -> Result<PerfEvent> {
        let mut attr = attr(perf_event_open_sys::bindings::PERF_TYPE_TRACEPOINT, tracepoint_id as u64);
        // The program passes each event on (see `Asm::pass_on`), which
        // counts it on this event too: a period it never reaches keeps that a
        // counter increment, with no sample written anywhere.
        attr.__bindgen_anon_1.sample_period = 1 << 62;
        let event = PerfEvent::open(&mut attr, -1, 0, what)?;
        event.set_bpf(self.fd.as_raw_fd())?;
        event.enable()?;
        Ok(event)
    }
}

fn hint(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => " (BPF needs root, or CAP_BPF and CAP_PERFMON)",
        Some(libc::ENOSYS) => " (this kernel has no BPF)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instruments::bpf::asm::Asm;
    use crate::instruments::tracefs;

    #[test]
    fn a_loaded_program_is_named_and_its_runs_counted_by_the_kernel() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            assert!(std::env::var_os("CI").is_none(), "CI runs the tests as root");
            eprintln!("SKIPPED a_loaded_program_is_named_and_its_runs_counted_by_the_kernel: needs root");
            return;
        }
        let mut a = Asm::new();
        a.pass_on();
        let program = Program::load("fsscale_probe", &a.finish()).unwrap();
        // The name sits where `runs` reads the statistics from: the layout holds.
        assert_eq!(program.name().unwrap(), "fsscale_probe");
        tracefs::ensure_mounted().unwrap();
        let stats = RunStats::enable().unwrap();
        let id = tracefs::event_id("syscalls", "sys_enter_getppid").unwrap();
        let event = program.attach(id, "syscalls:sys_enter_getppid").unwrap();
        for _ in 0..5 {
            // SAFETY: getppid has no preconditions.
            unsafe { libc::getppid() };
        }
        let (runs, ns) = program.runs().unwrap();
        assert!(runs >= 5, "{runs} runs");
        assert!(ns > 0 && ns / runs < 1_000_000, "{ns} ns over {runs} runs");
        drop((event, stats));
    }

    #[test]
    fn a_program_the_verifier_refuses_is_named_with_its_reasons() {
        // SAFETY: as above.
        if unsafe { libc::geteuid() } != 0 {
            assert!(std::env::var_os("CI").is_none(), "CI runs the tests as root");
            eprintln!("SKIPPED a_program_the_verifier_refuses_is_named_with_its_reasons: needs root");
            return;
        }
        // Returns without setting r0.
        let mut a = Asm::new();
        a.exit();
        let error = Program::load("fsscale_bad", &a.finish()).err().unwrap().to_string();
        assert!(error.starts_with("the kernel refused the BPF program fsscale_bad: "), "{error}");
        assert!(error.contains("R0 !read_ok"), "the verifier's words: {error}");
    }
}
