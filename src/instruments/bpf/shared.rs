//! What the BPF programs and their reader share: the constants and map
//! value layouts, defined once here. The same definitions are written out
//! as C in `bpf/fsscale.h`, which the programs include; a test fails when
//! that header is not what [`C_HEADER`] says, so the two cannot drift.
//! (aya also refuses a map whose value size differs from the Rust type's.)

/// Defines `#[repr(C)]` structs and constants, and [`C_HEADER`], their C text.
macro_rules! shared {
    (
        $( const $cname:ident : $cty:ty = $cval:literal ; )*
        $(
            $(#[doc = $doc:literal])*
            struct $rust:ident as $c:ident {
                $( $(#[doc = $fdoc:literal])* $field:ident : $ty:tt ),* $(,)?
            }
        )*
    ) => {
        // Some are for the programs only (map sizes).
        $( #[allow(dead_code)] pub(crate) const $cname: $cty = $cval; )*
        $(
            $(#[doc = $doc])*
            #[repr(C)]
            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            #[allow(dead_code)] // Some only the programs use (their open events).
            pub(crate) struct $rust { $( $(#[doc = $fdoc])* pub(crate) $field: $ty ),* }
            // SAFETY: plain integers (and arrays of them) with no padding, checked by `no_padding`.
            unsafe impl aya::Pod for $rust {}
        )*
        /// The header the programs include (`bpf/fsscale.h`), checked by a test.
        #[cfg_attr(not(test), allow(dead_code))]
        pub(crate) const C_HEADER: &str = concat!(
            "/* SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0 */\n",
            "/* Generated from the Rust definitions in fsscale's instruments::bpf::shared: do not edit.\n",
            " * Regenerate with FSSCALE_BLESS=1 cargo test the_c_header_is_the_rust_definition. */\n",
            "#ifndef FSSCALE_H\n#define FSSCALE_H\n\n",
            $( "#define ", stringify!($cname), " ", stringify!($cval), "\n", )*
            $(
                "\n", $( "/*", $doc, " */\n", )*
                "struct ", stringify!($c), " {\n",
                $( $( "\t/*", $fdoc, " */\n", )* "\t", c_type!($ty), " ", stringify!($field), c_extent!($ty), ";\n", )*
                "};\n",
            )*
            "\n#endif\n"
        );
        #[cfg(test)]
        const SIZES: &[(&str, usize, usize)] = &[
            $( (stringify!($rust), std::mem::size_of::<$rust>(), 0 $( + std::mem::size_of::<$ty>() )*), )*
        ];
    };
}

macro_rules! c_type {
    (u64) => {
        "__u64"
    };
    (u32) => {
        "__u32"
    };
    (i32) => {
        "__s32"
    };
    ([$t:tt; $n:ident]) => {
        c_type!($t)
    };
}

macro_rules! c_extent {
    ([$t:tt; $n:ident]) => {
        concat!("[", stringify!($n), "]")
    };
    ($t:tt) => {
        ""
    };
}

shared! {
    const STACK_DEPTH: usize = 64;
    const LOCK_STACK_DEPTH: usize = 16;
    const STACKS: u32 = 16384;
    const TASKS: u32 = 65536;
    const OPEN: u32 = 65536;
    const SITES: u32 = 16384;
    const LOCK_LEVELS: u32 = 2;
    const SYSCALLS: u32 = 128;
    const HIST_SUB_BITS: u32 = 4;
    const HIST_SUB: usize = 16;
    const HIST_MAX_EXPONENT: u32 = 39;
    const HIST_BUCKETS: u32 = 592;
    const CALL_GROUPS: u32 = 4736;
    const LCB_F_SPIN: u32 = 1;
    const LCB_F_READ: u32 = 2;
    const LCB_F_WRITE: u32 = 4;
    const LCB_F_RT: u32 = 8;
    const LCB_F_PERCPU: u32 = 16;
    const LCB_F_MUTEX: u32 = 32;
    const OBJECT_INODE: u32 = 1;
    const OBJECT_DENTRY: u32 = 2;
    const OBJECT_SUPER: u32 = 3;
    const STATE_INTERRUPTIBLE: u32 = 1;
    const STATE_UNINTERRUPTIBLE: u32 = 2;
    const STATE_STOPPED: u32 = 4;
    const STATE_TRACED: u32 = 8;
    const STATE_IDLE: u32 = 128;
    const HOLDER_READERS: u32 = 4294967295;
    const STACK_NOT_SAMPLED: i32 = -1000;

    /// Counts of what the programs could not record, per CPU.
    struct Lost as lost {
        /// Events dropped because a map was full.
        full: u64,
        /// Lock waits begun inside two others of the same task: not paired.
        nested: u64,
        /// Sleeps whose end no program saw (the kernel ran none for the
        /// switch that ended them): found when the task's next sleep began.
        missed: u64,
    }

    /// A task's open lock wait, per (task, nesting level).
    struct WaitKey as wait_key { tid: u32, level: u32 }

    struct Wait as wait {
        start_ns: u64,
        lock: u64,
        /// The kernel stack's id in the stack map; negative if it could not be kept.
        stack: i32,
        /// The tracepoint's `LCB_F_*` flags.
        flags: u32,
        /// A sleeping lock's holder when the wait began: its task id, 0
        /// where none is known, `HOLDER_READERS` for a rwsem readers hold.
        holder: u32,
        /// 1 where the holder was on a CPU then.
        holder_on_cpu: u32,
    }

    /// Lock waits are summed per (lock, stack, flags, holder).
    struct LockSiteKey as lock_site_key { lock: u64, stack: i32, flags: u32, holder: u32, holder_on_cpu: u32 }

    struct LockSite as lock_site {
        count: u64,
        wait_ns: u64,
        max_ns: u64,
        /// What the lock belongs to, where known: its inode's number, device and
        /// mode, with the object's kind (`OBJECT_*`) in the mode word's top half.
        ino: u64,
        dev: u32,
        mode_kind: u32,
    }

    /// A traced task asleep, from its switch-out.
    struct Sleep as sleep {
        start_ns: u64,
        /// Its first wakeup, 0 until then.
        woken_ns: u64,
        stack: i32,
        /// The sleep's `STATE_*` bit.
        state: u32,
        /// The window it began in (the `window` map's number then).
        window: u32,
        unused: u32,
    }

    /// Sleeps are summed per (stack, state).
    struct SleepKey as sleep_key { stack: i32, state: u32 }

    struct SleepSite as sleep_site { count: u64, asleep_ns: u64, wake_to_run_ns: u64, max_ns: u64 }

    /// A traced task inside a system call.
    struct Call as call { start_ns: u64, nr: u64 }

    /// One system call's calls in one group of `HIST_SUB` buckets of the
    /// log-linear histogram (the user-space one's layout: bucket
    /// `group * HIST_SUB + i`), per CPU: only the groups a call's times
    /// reach take memory, on every CPU.
    struct CallGroupKey as call_group_key { nr: u32, group: u32 }

    struct CallGroup as call_group { count: u64, total_ns: u64, min_ns: u64, max_ns: u64, slots: [u64; HIST_SUB] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_header_is_the_rust_definition() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bpf/fsscale.h");
        if std::env::var_os("FSSCALE_BLESS").is_some() {
            std::fs::write(&path, C_HEADER).unwrap();
        }
        let written = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            written == C_HEADER,
            "bpf/fsscale.h is not what instruments::bpf::shared defines; regenerate it with \
             FSSCALE_BLESS=1 cargo test the_c_header_is_the_rust_definition, then rebuild the programs with bpf/build"
        );
    }

    #[test]
    fn the_kernel_histograms_have_the_user_space_layout() {
        use crate::stats::histogram::{BUCKETS, MAX_EXPONENT, SUB_BITS};
        assert_eq!((HIST_SUB_BITS, HIST_SUB, HIST_MAX_EXPONENT), (SUB_BITS, 1 << SUB_BITS, MAX_EXPONENT));
        assert_eq!(HIST_BUCKETS as usize, BUCKETS);
        assert_eq!(CALL_GROUPS as usize, SYSCALLS as usize * BUCKETS / HIST_SUB);
    }

    #[test]
    fn no_padding() {
        // C and Rust agree on a layout without padding; with padding, the
        // kernel could leave bytes the reader takes for a field.
        for (name, size, fields) in SIZES {
            assert_eq!(size, fields, "{name} has padding");
        }
    }
}
