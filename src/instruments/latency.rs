//! `--profile latency`: each system call the workers make in the window,
//! timed in the kernel by the programs of `bpf/latency.bpf.c` and kept as
//! per-CPU log2 histograms per call number. BPF only: through tracefs every
//! call would cost its task a trace record and fsscale a parse.

use anyhow::Result;

use super::bpf::shared::{CallLatency as Slots, LOG2_SLOTS};
use super::bpf::{objects, Loaded};
use crate::results::{CallLatency, KernelLatency};

pub(crate) struct BpfLatency {
    loaded: Loaded,
    /// The workers' ops just before and after the programs went on, and off.
    ops_at: [u64; 4],
}

impl BpfLatency {
    pub(crate) fn arm(tasks: &[i32]) -> Result<BpfLatency> {
        let events = [("raw_syscalls", "sys_enter"), ("raw_syscalls", "sys_exit")];
        let loaded = Loaded::load("--profile latency", objects::LATENCY, &[], &events, &["calls"], tasks)?;
        Ok(BpfLatency { loaded, ops_at: [0; 4] })
    }

    /// Turns the programs on (`on`) or off, reading `ops` (the workers' op
    /// counters) on both sides: a coordinator that waits for a CPU between
    /// the switch and the window's own count would otherwise make the
    /// calls look more than the ops.
    pub fn switch(&mut self, on: bool, ops: &dyn Fn() -> u64) -> Result<()> {
        let at = if on { 0 } else { 2 };
        self.ops_at[at] = ops();
        self.loaded.switch(on)?;
        self.ops_at[at + 1] = ops();
        Ok(())
    }

    pub fn finish(mut self) -> Result<KernelLatency> {
        self.loaded.switch(false)?;
        let entries: Vec<(u32, Vec<Slots>)> = self.loaded.per_cpu_entries("latency")?;
        let calls = entries.into_iter().map(|(nr, per_cpu)| summed(nr, &per_cpu)).collect();
        let [on_before, on_after, off_before, off_after] = self.ops_at;
        Ok(KernelLatency {
            // Fixed work counts no ops while it runs: no bracket.
            ops_counted: (off_after > 0)
                .then(|| [off_before.saturating_sub(on_after), off_after.saturating_sub(on_before)]),
            programs: self.loaded.cost(),
            lost_events: self.loaded.lost()?,
            calls: KernelLatency::ranked(calls),
        })
    }
}

/// One call number's per-CPU histograms as one, without trailing empty slots.
fn summed(nr: u32, per_cpu: &[Slots]) -> CallLatency {
    let mut log2_ns = vec![0u64; LOG2_SLOTS];
    let (mut count, mut total_ns) = (0u64, 0u64);
    for cpu in per_cpu {
        count += cpu.count;
        total_ns += cpu.total_ns;
        for (sum, n) in log2_ns.iter_mut().zip(cpu.slots) {
            *sum += n;
        }
    }
    let used = log2_ns.iter().rposition(|&n| n > 0).map_or(0, |i| i + 1);
    log2_ns.truncate(used);
    CallLatency { call: syscall_name(nr), count, total_s: total_ns as f64 / 1e9, log2_ns }
}

/// A system call's name on this architecture, from libc's numbers;
/// `syscall N` for one not listed.
pub(crate) fn syscall_name(nr: u32) -> String {
    let named = COMMON.iter().chain(LEGACY).find(|(n, _)| *n == i64::from(nr));
    named.map_or_else(|| format!("syscall {nr}"), |(_, constant)| constant.trim_start_matches("SYS_").to_string())
}

macro_rules! numbers {
    ($($constant:ident),* $(,)?) => {
        &[$((libc::$constant as i64, stringify!($constant))),*]
    };
}

/// Calls every architecture has: the filesystem's, and the common rest.
const COMMON: &[(i64, &str)] = numbers![
    SYS_read,
    SYS_write,
    SYS_close,
    SYS_fstat,
    SYS_lseek,
    SYS_mmap,
    SYS_munmap,
    SYS_brk,
    SYS_pread64,
    SYS_pwrite64,
    SYS_readv,
    SYS_writev,
    SYS_sched_yield,
    SYS_madvise,
    SYS_nanosleep,
    SYS_clock_nanosleep,
    SYS_getpid,
    SYS_gettid,
    SYS_clone,
    SYS_clone3,
    SYS_execve,
    SYS_exit,
    SYS_exit_group,
    SYS_wait4,
    SYS_kill,
    SYS_fcntl,
    SYS_flock,
    SYS_fsync,
    SYS_fdatasync,
    SYS_sync,
    SYS_syncfs,
    SYS_sync_file_range,
    SYS_truncate,
    SYS_ftruncate,
    SYS_fallocate,
    SYS_getdents64,
    SYS_getcwd,
    SYS_chdir,
    SYS_fchdir,
    SYS_fchmod,
    SYS_fchown,
    SYS_statfs,
    SYS_fstatfs,
    SYS_openat,
    SYS_openat2,
    SYS_mkdirat,
    SYS_mknodat,
    SYS_fchownat,
    SYS_newfstatat,
    SYS_unlinkat,
    SYS_renameat,
    SYS_renameat2,
    SYS_linkat,
    SYS_symlinkat,
    SYS_readlinkat,
    SYS_fchmodat,
    SYS_faccessat,
    SYS_faccessat2,
    SYS_utimensat,
    SYS_statx,
    SYS_futex,
    SYS_getxattr,
    SYS_setxattr,
    SYS_lgetxattr,
    SYS_fgetxattr,
    SYS_listxattr,
    SYS_rt_sigaction,
    SYS_rt_sigprocmask,
    SYS_rt_sigreturn,
    SYS_ioctl,
    SYS_pipe2,
    SYS_dup,
    SYS_dup3,
    SYS_ppoll,
    SYS_pselect6,
    SYS_epoll_pwait,
    SYS_mprotect,
    SYS_io_uring_enter,
    SYS_io_submit,
    SYS_io_getevents,
    SYS_copy_file_range,
    SYS_splice,
    SYS_sendfile,
    SYS_getrandom,
    SYS_prlimit64,
    SYS_set_robust_list,
    SYS_rseq,
    SYS_close_range,
    SYS_sched_getaffinity,
    SYS_sched_setaffinity,
    SYS_getrusage,
    SYS_perf_event_open,
    SYS_bpf,
    SYS_mount,
    SYS_umount2,
    SYS_readahead,
];

/// The older calls x86-64 keeps beside their `*at` forms.
#[cfg(target_arch = "x86_64")]
const LEGACY: &[(i64, &str)] = numbers![
    SYS_open,
    SYS_stat,
    SYS_lstat,
    SYS_creat,
    SYS_unlink,
    SYS_mkdir,
    SYS_rmdir,
    SYS_rename,
    SYS_link,
    SYS_symlink,
    SYS_readlink,
    SYS_chmod,
    SYS_chown,
    SYS_access,
    SYS_getdents,
    SYS_poll,
    SYS_select,
    SYS_pipe,
    SYS_dup2,
    SYS_fork,
    SYS_vfork,
    SYS_epoll_wait,
    SYS_utime,
    SYS_utimes,
    SYS_futimesat,
];
#[cfg(not(target_arch = "x86_64"))]
const LEGACY: &[(i64, &str)] = &[];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_named_as_the_kernel_numbers_them_here() {
        assert_eq!(syscall_name(libc::SYS_openat as u32), "openat");
        assert_eq!(syscall_name(libc::SYS_close as u32), "close");
        assert_eq!(syscall_name(100_000), "syscall 100000");
    }

    #[test]
    fn per_cpu_histograms_sum_into_one_without_empty_tail_slots() {
        let mut a = Slots { count: 2, total_ns: 3000, slots: [0; LOG2_SLOTS] };
        a.slots[10] = 2;
        let mut b = Slots { count: 1, total_ns: 5000, slots: [0; LOG2_SLOTS] };
        b.slots[12] = 1;
        let c = summed(libc::SYS_fsync as u32, &[a, b]);
        assert_eq!((c.call.as_str(), c.count, c.log2_ns.len()), ("fsync", 3, 13));
        assert_eq!((c.log2_ns[10], c.log2_ns[12]), (2, 1));
        assert!((c.total_s - 8e-6).abs() < 1e-15);
    }
}
