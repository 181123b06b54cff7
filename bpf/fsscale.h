/* SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0 */
/* Generated from the Rust definitions in fsscale's instruments::bpf::shared: do not edit.
 * Regenerate with FSSCALE_BLESS=1 cargo test the_c_header_is_the_rust_definition. */
#ifndef FSSCALE_H
#define FSSCALE_H

#define STACK_DEPTH 64
#define LOCK_STACK_DEPTH 16
#define STACKS 16384
#define TASKS 65536
#define OPEN 65536
#define SITES 16384
#define LOCK_LEVELS 2
#define SYSCALLS 128
#define HIST_SUB_BITS 4
#define HIST_SUB 16
#define HIST_MAX_EXPONENT 39
#define HIST_BUCKETS 592
#define CALL_GROUPS 4736
#define LCB_F_SPIN 1
#define LCB_F_READ 2
#define LCB_F_WRITE 4
#define LCB_F_RT 8
#define LCB_F_PERCPU 16
#define LCB_F_MUTEX 32
#define OBJECT_INODE 1
#define OBJECT_DENTRY 2
#define OBJECT_SUPER 3
#define STATE_INTERRUPTIBLE 1
#define STATE_UNINTERRUPTIBLE 2
#define STATE_STOPPED 4
#define STATE_TRACED 8
#define STATE_IDLE 128
#define HOLDER_READERS 4294967295
#define STACK_NOT_SAMPLED -1000

/* Counts of what the programs could not record, per CPU. */
struct lost {
	/* Events dropped because a map was full. */
	__u64 full;
	/* Lock waits begun inside two others of the same task: not paired. */
	__u64 nested;
	/* Sleeps whose end no program saw (the kernel ran none for the */
	/* switch that ended them): found when the task's next sleep began. */
	__u64 missed;
};

/* A task's open lock wait, per (task, nesting level). */
struct wait_key {
	__u32 tid;
	__u32 level;
};

struct wait {
	__u64 start_ns;
	__u64 lock;
	/* The kernel stack's id in the stack map; negative if it could not be kept. */
	__s32 stack;
	/* The tracepoint's `LCB_F_*` flags. */
	__u32 flags;
	/* A sleeping lock's holder when the wait began: its task id, 0 */
	/* where none is known, `HOLDER_READERS` for a rwsem readers hold. */
	__u32 holder;
	/* 1 where the holder was on a CPU then. */
	__u32 holder_on_cpu;
};

/* Lock waits are summed per (lock, stack, flags, holder). */
struct lock_site_key {
	__u64 lock;
	__s32 stack;
	__u32 flags;
	__u32 holder;
	__u32 holder_on_cpu;
};

struct lock_site {
	__u64 count;
	__u64 wait_ns;
	__u64 max_ns;
	/* What the lock belongs to, where known: its inode's number, device and */
	/* mode, with the object's kind (`OBJECT_*`) in the mode word's top half. */
	__u64 ino;
	__u32 dev;
	__u32 mode_kind;
};

/* A traced task asleep, from its switch-out. */
struct sleep {
	__u64 start_ns;
	/* Its first wakeup, 0 until then. */
	__u64 woken_ns;
	__s32 stack;
	/* The sleep's `STATE_*` bit. */
	__u32 state;
	/* The window it began in (the `window` map's number then). */
	__u32 window;
	__u32 unused;
};

/* Sleeps are summed per (stack, state). */
struct sleep_key {
	__s32 stack;
	__u32 state;
};

struct sleep_site {
	__u64 count;
	__u64 asleep_ns;
	__u64 wake_to_run_ns;
	__u64 max_ns;
};

/* A traced task inside a system call. */
struct call {
	__u64 start_ns;
	__u64 nr;
};

/* One system call's calls in one group of `HIST_SUB` buckets of the */
/* log-linear histogram (the user-space one's layout: bucket */
/* `group * HIST_SUB + i`), per CPU: only the groups a call's times */
/* reach take memory, on every CPU. */
struct call_group_key {
	__u32 nr;
	__u32 group;
};

struct call_group {
	__u64 count;
	__u64 total_ns;
	__u64 min_ns;
	__u64 max_ns;
	__u64 slots[HIST_SUB];
};

#endif
